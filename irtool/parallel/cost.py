"""Compute cost of one rank: FLOPs per operator from its slice shapes (docs/cost.md §1).

Computed only when asked for (`compute_cost(table)`): it reads every node's types, which a plain
summary does not. Each operator family has one formula; an operator of no known family is counted
and named, never taken as 0 FLOPs.

Per-device shapes: validate (and later passes) print every operator's types sliced, as this device
computes them. step_parallel_end prints operator types still logical, per micro batch; there an
operator's inputs are sliced here by its `in_strategy` (dimension / split) before the formula, and
an operator without a strategy is counted with its printed, logical shapes (`logical_ops`).
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..ir import Node, TypeInfo
from .records import PHASES, Phase
from .rules import COMM_OPS
from .sizes import DTYPE_SIZE, elements

if TYPE_CHECKING:
    from .table import NodeFacts

# Operators that move or label data and do no arithmetic (0 FLOPs by definition, not unknown).
NO_ARITHMETIC = frozenset({
    "Return", "(call)", "Load", "Depend", "UpdateState", "MakeTuple", "TupleGetItem", "Reshape", "ExpandDims",
    "Squeeze", "Transpose", "Flatten", "Identity", "StridedSlice", "Slice", "Split", "Concat", "Stack", "Tile",
    "Gather", "GatherV2", "GatherD", "Assign", "TensorMove", "ZerosLike", "OnesLike", "Zeros", "Ones", "Fill",
    "Shape", "TensorShape", "ScalarToTensor", "TupleToTensor", "StopGradient", "make_tuple", "tuple_getitem",
    "BroadcastTo", "Cast", "StridedSliceGrad", "Mirror", "MakeRange", "Partial", "Switch", "DType",
    "_VirtualDataset", "_VirtualDiv", "_VirtualAssignAdd", "_VirtualAccuGrad", "_VirtualAdd", "_VirtualPipelineEnd",
    "_VirtualOutput", "_GetTensorSlice", "_MirrorMicroStepOperator", "Print", "TensorDump", "J", "env_setitem",
    "env_getitem", "EnvironCreate", "EnvironSet", "EnvironGet", "ConcatOffset", "SplitV", "ReverseV2",
    "ScalarCast", "RefToEmbed", "resolve", "DoUnpackCall", "DtypeToEnum",
    "TupleGetItemV2", "ListGetItem", "MakeList", "Range", "ZerosLikeTensor", "Padding", "Pad",
    "ZerosLikeExt", "OnesLikeExt", "TransposeExtView", "TransposeView", "ReshapeView", "MoveTo", "ShapeCalc",
    "SplitWithSize", "SplitTensor", "Contiguous", "InplaceCopy",
}) | COMM_OPS
# One FLOP per output element: arithmetic applied element by element (and their gradients).
ELEMENTWISE = frozenset({
    "Add", "AddN", "Sub", "Mul", "Div", "RealDiv", "Neg", "Abs", "Square", "Sqrt", "Rsqrt", "Exp", "Log",
    "Pow", "Maximum", "Minimum", "Reciprocal", "ReLU", "ReLU6", "GeLU", "FastGeLU", "SiLU", "Sigmoid", "Tanh",
    "Erf", "Softplus", "LeakyReLU", "Select", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
    "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot", "FloorDiv", "Floor", "Ceil", "Round", "Sign",
    "ReluGrad", "ReLU6Grad", "GeLUGrad", "FastGeLUGrad", "SiLUGrad", "SigmoidGrad", "TanhGrad", "SqrtGrad",
    "RsqrtGrad", "BiasAdd", "BiasAddGrad", "Dropout", "DropoutGrad", "DropoutDoMask", "DropoutGenMask",
    "MaskedFill", "AssignAdd", "AssignSub", "Addcmul", "Addcdiv",
    "BatchNorm", "BatchNormGrad", "SquaredDifference", "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits", "Clip", "ClipByValue", "Mod", "FloorMod", "IsFinite", "IsNan",
    "CumSum", "Einsum", "OneHot", "Cos", "Sin", "ArgMaxWithValue",
    "AddExt", "SubExt", "MulExt", "Muls", "Adds", "DivMod", "InplaceAddExt", "InplaceMul",
})
# FLOPs per element of the normalised or activated tensor (docs/cost.md §1): the operations each
# element goes through, counted once; a per-row rsqrt, max or sum is one more per element.
PER_ELEMENT = {
    # softmax: max, subtract, exp, sum, divide; its gradient: y*dy, row sum, subtract, multiply
    "Softmax": ("softmax", 5), "LogSoftmax": ("softmax", 5), "SoftmaxGrad": ("softmax", 4),
    "LogSoftmaxGrad": ("softmax", 4), "SoftmaxBackward": ("softmax", 4),
    # RMSNorm: square, sum, scale by rsqrt, times gamma; LayerNorm adds the mean, the subtraction and beta;
    # gradients: dgamma (2 + sum) and dx (dy*gamma, *x, sum, scale, two more)
    "RmsNorm": ("norm", 4), "RmsNormGrad": ("norm", 9), "AddRmsNorm": ("norm", 5),
    "LayerNorm": ("norm", 7), "LayerNormV3": ("norm", 7), "AddLayerNorm": ("norm", 8),
    "LayerNormGrad": ("norm", 12), "LayerNormGradV3": ("norm", 12), "LayerNormGradGrad": ("norm", 12),
    # rotary embedding: x*cos + rotate_half(x)*sin, per element of its output (q and k both, when a tuple)
    "RotaryPositionEmbedding": ("rotary", 3), "RotaryPositionEmbeddingGrad": ("rotary", 3),
    "ApplyRotaryPosEmb": ("rotary", 3), "ApplyRotaryPosEmbExt": ("rotary", 3),
    # SwiGLU, per element of its output: sigmoid (4), times the gate, times the other half; its gradient's
    # output has both halves (2x the elements), 6 each
    "Swiglu": ("swiglu", 6), "SwigluGrad": ("swiglu", 6),
}
# Operators that sort, select or scatter: their time is the bytes they read and write, not arithmetic;
# counted with 0 FLOPs and their bytes moved (inputs + outputs) on their own (docs/cost.md §1).
MEMORY_BOUND = frozenset({
    "TopK", "TopkExt", "Sort", "ArgSort", "SortExt", "UnsortedSegmentSum", "UnsortedSegmentMax",
    "ScatterNd", "ScatterNdAdd", "ScatterNdUpdate", "TensorScatterUpdate", "TensorScatterAdd",
    "TensorScatterElements", "ScatterAdd", "ScatterUpdate", "ScatterElements", "Scatter", "ScatterAddExt",
    "InplaceScatterSrc", "InplaceScatterAdd", "InplaceIndexAdd", "IndexAdd", "MaskedSelect", "NonZero", "Unique",
    "MoeTokenPermute", "MoeTokenPermuteGrad", "MoeTokenUnpermute", "MoeTokenUnpermuteGrad", "MoeInitRouting",
    "MoeInitRoutingV2", "MoeFinalizeRouting", "MoeGatingTopKSoftmax", "GatherNd",
    # a KV cache's write: the step's keys and values scattered into the cache's slots (`slot_mapping`)
    "ReshapeAndCache",
})
# One FLOP per input element: reductions.
REDUCTIONS = frozenset({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceAll",
                        "ReduceAny", "SumExt", "MeanExt", "Argmax", "Argmin", "SquareSumAll", "L2Loss",
                        "FloatStatus"})
# Optimizer updates: FLOPs per element of the updated weight (counted from the formulas of each
# update rule; docs/cost.md §1).
OPTIMIZER_UPDATES = {"SGD": 4, "ApplyMomentum": 3, "Momentum": 3, "Adam": 10, "ApplyAdam": 10, "FusedAdam": 10,
                     "AdamWeightDecay": 12, "FusedAdamWeightDecay": 12, "AdamW": 12, "Lamb": 15, "LAMB": 15,
                     "ApplyAdagrad": 5, "ApplyRMSProp": 7, "ApplyCenteredRMSProp": 9, "ApplyAdaMax": 8,
                     "ApplyAdagradV2": 5, "ApplyFtrl": 10, "ApplyProximalAdagrad": 8, "FusedCastAdamWeightDecay": 12}
MATMULS = frozenset({"MatMul", "BatchMatMul", "MatMulExt", "BatchMatMulExt", "Dense", "Bmm"})
GROUPED_MATMULS = frozenset({"GroupedMatmul", "GroupedMatmulV2", "GroupedMatmulV4"})
CONVS = frozenset({"Conv2D", "Conv3D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3DBackpropInput",
                   "Conv3DBackpropFilter", "Conv2DTranspose", "DepthwiseConv2dNative", "Convolution"})
ATTENTION = frozenset({"FlashAttentionScore", "FlashAttentionScoreGrad", "PromptFlashAttention",
                       "IncreFlashAttention", "FusedInferAttentionScore"})
# FlashAttentionScore's `input_layout` when printed as its enum (MindSpore's FASInputLayoutMode).
_LAYOUTS = {0: "BSH", 1: "BNSD", 2: "SBH", 3: "BSND", 4: "TND", 5: "TH", 6: "NSD", 7: "SH", 8: "BNSD_BSND"}
_NO_LIMIT = 2147483647  # pre_tokens / next_tokens meaning "no band"



@dataclass
class OpCost:
    """One operator's FLOPs on this device; `family` says by which formula."""

    node: str  # uid
    op: str
    phase: Phase
    layer: int | None
    micro: int | None
    flops: int | None  # None: unknown (op of no known family, or a shape the dump did not print)
    family: str  # matmul, grouped-matmul, attention, softmax, norm, rotary, swiglu, conv, elementwise, ...
    per_device: bool  # False: step_parallel_end shapes without a strategy to slice them by
    flops_bound: int | None = None  # dynamic token rows (`flops` at their group mean): FLOPs at their bound


@dataclass
class CostFacts:
    """FLOPs of one rank by phase and layer (known FLOPs, and how many operators are of unknown cost
    beside them: an unknown is never added as 0)."""

    kind: str  # file kind: spe (logical operator types) or post (per device)
    flops: dict[str, int]  # phase -> known FLOPs
    unknown_by_phase: dict[str, int]  # phase -> operators of unknown cost
    by_layer: dict[int | None, dict[str, int]]  # layer (None: work of no layer) -> phase -> known FLOPs
    unknown_by_layer: dict[int | None, dict[str, int]]  # layer -> phase -> operators of unknown cost
    by_family: dict[str, int]
    matmul_forward: int  # known FLOPs of forward MatMul-family operators (the figure easiest to check by hand)
    matmul_forward_unknown: int  # forward MatMul-family operators whose shapes the dump does not print
    unknown: Counter  # op -> count of operators whose FLOPs are unknown
    logical_ops: int  # operators counted with logical (not per-device) shapes
    ops: list[OpCost] = field(default_factory=list)
    dynamic: Counter = field(default_factory=Counter)  # op -> operators counted at the mean of their token rows
    dynamic_flops: int = 0  # their FLOPs at the mean (in `flops`)
    dynamic_bound: int = 0  # their FLOPs if every row of the group came to this rank
    moved: int = 0  # bytes read and written by memory-bound operators (known sizes)
    moved_unknown: int = 0  # memory-bound operators of unknown size
    branch_ops: int = 0  # operators of a Switch branch, counted as if taken (`runs.Runs.branch`: at most these FLOPs)
    unknown_runs: int = 0  # operators whose runs per step are unknown (a loop body): in `unknown`, never counted once
    known_by_phase: dict[str, int] = field(default_factory=dict)  # phase -> operators of known cost

    @property
    def total(self) -> int:
        return sum(self.flops.values())

    @property
    def compute(self) -> int:
        """Known FLOPs of forward, backward and recompute (what the pipeline's critical path runs)."""
        return sum(self.flops[p] for p in COMPUTE_PHASES)

    @property
    def compute_unknown(self) -> int:
        return sum(self.unknown_by_phase[p] for p in COMPUTE_PHASES)

    @property
    def compute_known(self) -> int:
        """Forward, backward and recompute operators of known cost."""
        return sum(self.known_by_phase.get(p, 0) for p in COMPUTE_PHASES)

    def layer_compute(self) -> dict[int | None, tuple[int, int]]:
        """Per layer: (known forward+backward+recompute FLOPs, operators of unknown cost among them)."""
        keys = set(self.by_layer) | set(self.unknown_by_layer)
        zero = dict.fromkeys(PHASES, 0)
        return {k: (sum(self.by_layer.get(k, zero)[p] for p in COMPUTE_PHASES),
                    sum(self.unknown_by_layer.get(k, zero)[p] for p in COMPUTE_PHASES)) for k in keys}


COMPUTE_PHASES = ("forward", "backward", "recompute")


def _slice(shape: Any, strategy: Any) -> Any:
    """A logical shape divided by its strategy (one split per dimension)."""
    if not isinstance(shape, tuple) or not isinstance(strategy, (tuple, list)) or len(strategy) != len(shape):
        return shape
    return tuple(d // s if isinstance(d, int) and isinstance(s, int) and s > 0 else d for d, s in zip(shape, strategy))


def _fill(shape: Any, rows: int | None) -> Any:
    """A shape with its one `-1` dimension (token rows, `dynamic.Rows`) set to `rows`. Left unknown: a
    one-dimensional shape (a flattened tensor: rows times a row width) and a shape with several `-1`
    (which of them are rows is not printed)."""
    if rows is None or not isinstance(shape, tuple):
        return shape
    if shape and all(isinstance(d, tuple) for d in shape):
        return tuple(_fill(d, rows) for d in shape)
    if len(shape) < 2 or shape.count(-1) != 1:
        return shape
    return tuple(rows if d == -1 else d for d in shape)


def _shapes(node: Node, kind: str, rows: int | None = None) -> tuple[list[Any], Any, bool]:
    """(input shapes, output shape, per device) as this device computes them; `-1` dimensions set to
    `rows` when given."""
    ins = [_fill(t.shape, rows) if isinstance(t, TypeInfo) else None for t in node.input_types]
    out_t = node.output_type
    out = _fill(out_t.shape, rows) if out_t is not None else None
    if out_t is not None and out_t.kind == "Tuple" and isinstance(out, tuple) and out:
        out = out[0]  # LayerNorm and the like: the first output is the result
    if kind != "spe":
        return ins, out, True
    strat = node.attr("in_strategy")
    if not isinstance(strat, (tuple, list)):
        return ins, out, False
    origin = node.primal_attrs.get("origin_input_shapes")
    if isinstance(origin, (tuple, list)):
        ins = [tuple(s) if isinstance(s, (tuple, list)) else None for s in origin] + ins[len(origin):]
    sliced = [_slice(s, strat[i]) if i < len(strat) else s for i, s in enumerate(ins)]
    if isinstance(out, tuple) and ins and isinstance(ins[0], tuple) and len(out) == len(ins[0]) and strat:
        out = _slice(out, strat[0])  # element-wise: the output is split as its first input
    return sliced, out, True


def _matmul(node: Node, ins: list[Any]) -> int | None:
    """2*M*N*K (times the batch dimensions) with the transposes (inputs 2-3 or attributes)."""
    if len(ins) < 2 or not isinstance(ins[0], tuple) or not isinstance(ins[1], tuple):
        return None
    a, b = ins[0], ins[1]
    if len(a) < 2 or len(b) < 2:
        return None
    args = node.inputs
    ta = node.input_value(2) is True if len(args) > 2 else bool(node.attr("transpose_a", node.attr("transpose_x1", False)))
    tb = node.input_value(3) is True if len(args) > 3 else bool(node.attr("transpose_b", node.attr("transpose_x2", False)))
    if node.op == "Dense":
        ta, tb = False, True  # Dense(x, w): x @ w.T
    m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    n = b[-2] if tb else b[-1]
    batch = elements(a[:-2]) if len(a) > 2 else (elements(b[:-2]) if len(b) > 2 else 1)
    if batch is None or min(m, n, k) < 0:
        return None
    return 2 * batch * m * n * k


def _tensors(shape: Any) -> list[Any]:
    """The tensor shapes of a `TupleShape` input (GroupedMatmul takes lists of tensors), or the one shape."""
    if isinstance(shape, tuple) and shape and all(isinstance(d, tuple) for d in shape):
        return list(shape)
    return [shape]


def _grouped_matmul(node: Node, ins: list[Any]) -> int | None:
    """GroupedMatmul(x, weight, ..., group_list, split_item, group_type, transpose_a, transpose_b):
    2*M*K*N for each pair of x and weight. One x and one weight of E groups: x's rows (group_type 0,
    `(M, K) x (E, K, N)`) or its K (group_type 2, the weight gradient `(M, K) x (K, N) -> (E, M, N)`)
    are split over the groups by `group_list`, each row meeting one expert: 2*M*K*N, however they split."""
    if len(ins) < 2:
        return None
    xs, ws = _tensors(ins[0]), _tensors(ins[1])
    args = node.inputs
    ta = node.input_value(10) is True if len(args) > 11 else bool(node.attr("transpose_a", False))
    tb = node.input_value(11) is True if len(args) > 11 else bool(node.attr("transpose_b", False))
    if len(xs) != len(ws) and len(xs) != 1:
        return None
    total = 0
    for x, w in zip(xs, ws) if len(xs) == len(ws) else ((xs[0], ws[0]),):
        if not (isinstance(x, tuple) and isinstance(w, tuple) and len(x) >= 2 and len(w) >= 2):
            return None
        m, k = (x[-1], x[-2]) if ta else (x[-2], x[-1])
        n = w[-2] if tb else w[-1]
        batch = elements(x[:-2]) if len(x) > 2 else 1
        if batch is None or min(m, n, k) < 0:
            return None
        total += 2 * batch * m * k * n
    return total


def _conv(node: Node, ins: list[Any], out: Any) -> int | None:
    """2 * output elements * Cin/group * kernel elements; for the backprops the gradient's elements
    of the forward output times the same per-output work."""
    weight = next((s for s in ins[1:2] if isinstance(s, tuple) and len(s) >= 3), None)
    if node.op.endswith("BackpropFilter"):
        dout, weight = ins[0] if ins else None, out
    else:
        dout = ins[0] if node.op.endswith("BackpropInput") else out
    n = elements(dout) if isinstance(dout, tuple) else None
    if n is None or not isinstance(weight, tuple) or len(weight) < 3:
        return None
    per_out = elements(weight[1:])
    return None if per_out is None else 2 * n * per_out


@functools.lru_cache(maxsize=1024)
def kept_scores(sq: int, skv: int, mode: int, pre: int, nxt: int) -> int:
    """How many of the Sq x Skv attention scores FlashAttentionScore's `sparse_mode` keeps (the
    kernel skips the rest): 0 band [i - pre, i + next] (no limit = full), 1 all (a full mask given:
    its values are not printed), 2 causal from the top left (j <= i), 3 causal from the bottom right
    (j <= i + Skv - Sq), 4 band around that diagonal; prefix modes (5, 6) as 3, a lower bound."""
    if mode == 1:
        return sq * skv
    if mode in (2, 3, 5, 6, 7, 8):
        pre, nxt = _NO_LIMIT, 0
    shift = skv - sq if mode in (3, 4, 5, 6, 7) else 0
    if mode == 0 and pre >= _NO_LIMIT and nxt >= _NO_LIMIT:
        return sq * skv
    total = 0
    for i in range(sq):
        lo = max(0, i + shift - pre) if pre < _NO_LIMIT else 0
        hi = min(skv - 1, i + shift + nxt) if nxt < _NO_LIMIT else skv - 1
        total += max(0, hi - lo + 1)
    return total


def _fa_scalar(node: Node, back: int, attr: str) -> Any:
    """A FlashAttentionScore(Grad) scalar: one of its 8 last arguments (`PrimFunc_` form: head_num, keep_prob,
    scale_value, pre_tokens, next_tokens, inner_precise, input_layout, sparse_mode), else its attribute."""
    n = len(node.inputs)
    if n >= 18:
        value = node.input_value(n - back)
        return value if isinstance(value, (int, float, str)) else None
    return node.attr(attr)


def attention_layout(node: Node) -> str:
    """FlashAttentionScore's `input_layout` (`BSH`, `BNSD`, ...), printed as an argument (MindSpore's enum) or
    an attribute; `BSH` when it prints none."""
    layout = _fa_scalar(node, 2, "input_layout")
    return _LAYOUTS.get(layout, str(layout)) if isinstance(layout, int) else str(layout or "BSH").strip('"')


# the sequence dimension of the query in each layout
SEQUENCE_DIM = {"BSH": 1, "BSND": 1, "BNSD": 2, "SBH": 0}


def _attention(node: Node, ins: list[Any], raw: list[Any], kind: str) -> int | None:
    """FLOPs of FlashAttentionScore (and its gradient) from q, k and v by `input_layout`, per kept
    score (`kept_scores`, by `sparse_mode`) of each batch and query head: forward 2*Dqk (Q K^T) +
    2*Dv (P V) + 5 (softmax); gradient 6*Dqk (S again, dQ, dK) + 4*Dv (dV, dP) + 5 (softmax and
    its gradient); keep_prob < 1 adds one per score each way (dropout). `raw` are the printed shapes:
    head_num is per device after the parallel pass, logical in step_parallel_end."""
    if len(ins) < 3 or not all(isinstance(s, tuple) for s in ins[:3]):
        return None
    q, k, v = ins[0], ins[1], ins[2]
    layout = attention_layout(node)
    heads = _fa_scalar(node, 8, "head_num")
    mode = _fa_scalar(node, 1, "sparse_mode")
    pre = _fa_scalar(node, 5, "pre_tokens")
    nxt = _fa_scalar(node, 4, "next_tokens")
    keep = _fa_scalar(node, 7, "keep_prob")
    mode = mode if isinstance(mode, int) else 0
    pre = pre if isinstance(pre, int) else _NO_LIMIT
    nxt = nxt if isinstance(nxt, int) else _NO_LIMIT
    if layout in ("BSH", "SBH") and len(q) == 3 and len(k) == 3 and len(v) == 3 and isinstance(heads, int) and heads:
        b, sq, skv = (q[0], q[1], k[1]) if layout == "BSH" else (q[1], q[0], k[0])
        full = raw[0][2] if kind == "spe" and isinstance(raw[0], tuple) and len(raw[0]) == 3 else q[2]
        if full % heads:
            return None
        dqk = full // heads
        n = q[2] // dqk
        if k[2] % dqk:
            return None
        nkv = k[2] // dqk
        dv = v[2] // nkv if nkv and v[2] % nkv == 0 else None
    elif layout == "BNSD" and len(q) == 4 and len(v) == 4:
        b, n, sq, dqk, skv, dv = q[0], q[1], q[2], q[3], k[2], v[3]
    elif layout == "BSND" and len(q) == 4 and len(v) == 4:
        b, sq, n, dqk, skv, dv = q[0], q[1], q[2], q[3], k[1], v[3]
    else:
        return None  # TND/TH (variable sequence lengths) and other layouts: lengths not printed
    if dv is None or min(b, n, sq, skv, dqk, dv) < 0:
        return None
    scores = b * n * kept_scores(sq, skv, mode, pre, nxt)
    dropout = 1 if isinstance(keep, (int, float)) and keep < 1 else 0
    if node.op.endswith("Grad"):
        return scores * (6 * dqk + 4 * dv + 5 + dropout)
    return scores * (2 * dqk + 2 * dv + 5 + dropout)


def _per_element(node: Node, family: str, count: int, ins: list[Any], out: Any) -> int | None:
    """`count` per element: of the normalised tensor (input 0) for norms and their gradients, of both
    outputs for a rotary pair (q, k), of the (first) output otherwise."""
    out_t = node.output_type
    if family == "norm":
        shapes = [ins[0] if ins else None]
    elif family == "rotary" and out_t is not None and out_t.kind == "Tuple":
        shapes = _tensors(out_t.shape)
    else:
        shapes = [out]
    sizes = [elements(s) if isinstance(s, tuple) else None for s in shapes]
    return None if any(n is None for n in sizes) else count * sum(sizes)  # type: ignore[misc]


def op_flops(node: Node, kind: str, rows: int | None = None) -> tuple[int | None, str, bool]:
    """(FLOPs on this device, family, per device) of one operator; `rows`: the token rows its `-1`
    dimensions stand for (`dynamic.Rows`), when known."""
    op = node.op
    if op in NO_ARITHMETIC:
        return 0, "none", True
    if op in MEMORY_BOUND:
        return 0, "memory-bound", True
    ins, out, per_device = _shapes(node, kind, rows)
    if op in MATMULS:
        return _matmul(node, ins), "matmul", per_device
    if op in GROUPED_MATMULS:
        return _grouped_matmul(node, ins), "grouped-matmul", per_device
    if op in CONVS:
        return _conv(node, ins, out), "conv", per_device
    if op in ATTENTION:
        raw = [t.shape if isinstance(t, TypeInfo) else None for t in node.input_types]
        return _attention(node, ins, raw, kind), "attention", per_device
    if op in PER_ELEMENT:
        family, count = PER_ELEMENT[op]
        return _per_element(node, family, count, ins, out), family, per_device
    if op in ELEMENTWISE or (op.endswith("Grad") and op[:-4] in ELEMENTWISE):
        n = elements(out) if isinstance(out, tuple) else None
        return n, "elementwise", per_device
    if op in REDUCTIONS:
        n = elements(ins[0]) if ins and isinstance(ins[0], tuple) else None
        return n, "reduction", per_device
    if op in OPTIMIZER_UPDATES:
        n = elements(ins[0]) if ins and isinstance(ins[0], tuple) else None
        return (None if n is None else n * OPTIMIZER_UPDATES[op]), "optimizer", per_device
    return None, "unknown", per_device


def bytes_moved(node: Node, kind: str, rows: int | None = None) -> int | None:
    """Bytes a memory-bound operator reads and writes: its tensor inputs and outputs (a tuple's
    elements summed), as printed; None when one is of unknown size. Read from the node's type line only: worked
    out once per distinct line (a layer's operators print the same types in every layer)."""
    if rows is not None or not node.type_lines:
        return _moved(node, rows)
    line = node.type_lines[0]
    moved = _MOVED.get(line, _UNSEEN)
    if moved is _UNSEEN:
        if len(_MOVED) >= 1 << 16:  # a long-lived process (the view server) reading dump after dump
            _MOVED.clear()
        moved = _MOVED[line] = _moved(node, None)
    return moved  # type: ignore[return-value]


_MOVED: dict[str, int | None] = {}
_UNSEEN = object()


def _moved(node: Node, rows: int | None) -> int | None:
    total = 0
    for t in [*node.input_types, node.output_type]:
        if t is None or t.kind not in ("Tensor", "Ref", "Tuple") or t.shape is None:
            continue
        size = DTYPE_SIZE.get(t.dtype or "")
        counts = [elements(_fill(s, rows)) for s in _tensors(t.shape)] if t.kind == "Tuple" else \
            [elements(_fill(t.shape, rows))]
        if size is None or any(c is None for c in counts):
            return None
        total += size * sum(counts)  # type: ignore[misc]
    return total


# families whose FLOPs read a node's attributes or inputs besides its types (transposes, kernel sizes, heads)
_READS_ATTRS = frozenset({"matmul", "grouped-matmul", "conv", "attention"})


def compute_cost(t: NodeFacts, keep_ops: bool = False) -> CostFacts:
    """The FLOPs of every operator of the dump of fact table `t` over one step (each operator's FLOPs
    times its runs, the `runs` fact: a reused cell's operators once per call; unknown runs make its
    FLOPs unknown), summed by phase, layer and family (docs/cost.md §1); phase, micro batch, layer and
    the rows behind `-1` dimensions are the table's.
    An operator whose shapes hold token rows the dump leaves open (`-1` after an expert-parallel
    all-to-all) counts at the rows of the group's mean, and its FLOPs at their bound are kept apart."""
    dump = t.dump
    kind = t.get("file_kind")
    flops = dict.fromkeys(PHASES, 0)
    unknown_phase = dict.fromkeys(PHASES, 0)
    known_phase = dict.fromkeys(PHASES, 0)
    by_layer: dict[int | None, dict[str, int]] = {}
    unknown_layer: dict[int | None, dict[str, int]] = {}
    by_family: Counter = Counter()
    unknown: Counter = Counter()
    dynamic: Counter = Counter()
    ops: list[OpCost] = []
    logical = matmul_fwd = matmul_unknown = dynamic_flops = dynamic_bound = moved_known = moved_unknown = 0
    branch_ops = unknown_runs = 0
    graphs = t.get("graph_runs")
    typed: dict[tuple[str, str | None], tuple[int | None, str, bool]] = {}  # (op, type line) -> `op_flops`
    for node in dump.nodes():
        if node.op in NO_ARITHMETIC:
            continue
        key = (node.op, node.type_lines[0] if node.type_lines else None)
        found = typed.get(key)
        if found is None:
            found = op_flops(node, kind)
            if kind != "spe" and found[1] not in _READS_ATTRS:  # its FLOPs are its type line's: layers repeat them
                typed[key] = found
        f, family, per_device = found
        bound = None
        rows = t("rows", node) if f is None and family not in ("unknown", "none") else None
        if rows is not None:
            f, _, per_device = op_flops(node, kind, rows.mean)
            bound = op_flops(node, kind, rows.bound)[0] if f is not None else None
        ph = t("phase", node)
        layer = t("layer", node)
        runs = t("runs", node)  # a reused cell's operators run once per call of it; None: unknown
        unknown_runs += runs is None
        branch_ops += graphs[node.graph].branch
        if family == "memory-bound":
            moved = bytes_moved(node, kind)
            if moved is None:
                rows = t("rows", node)
                moved = bytes_moved(node, kind, rows.mean) if rows is not None else None
            if moved is None or runs is None:
                moved_unknown += 1
            else:
                moved_known += moved * runs
        if f is None or runs is None:
            f = None
            unknown[node.op] += 1
            unknown_phase[ph] += 1
            unknown_layer.setdefault(layer, dict.fromkeys(PHASES, 0))[ph] += 1
            matmul_unknown += family == "matmul" and ph == "forward"
        else:
            f *= runs
            if not per_device:
                logical += 1
            if bound is not None:
                dynamic[node.op] += 1
                dynamic_flops += f
                dynamic_bound += bound * runs
            flops[ph] += f
            known_phase[ph] += 1
            by_layer.setdefault(layer, dict.fromkeys(PHASES, 0))[ph] += f
            by_family[family] += f
            if family == "matmul" and ph == "forward":
                matmul_fwd += f
        if keep_ops:
            ops.append(OpCost(node.uid, node.op, ph, layer, t("micro", node), f, family, per_device,
                              None if bound is None or runs is None else bound * runs))
    return CostFacts(kind=kind, flops=flops, unknown_by_phase=unknown_phase, by_layer=by_layer,
                     unknown_by_layer=unknown_layer, by_family=dict(by_family), matmul_forward=matmul_fwd,
                     matmul_forward_unknown=matmul_unknown, unknown=unknown, logical_ops=logical, ops=ops,
                     dynamic=dynamic, dynamic_flops=dynamic_flops, dynamic_bound=dynamic_bound,
                     moved=moved_known, moved_unknown=moved_unknown, branch_ops=branch_ops, unknown_runs=unknown_runs,
                     known_by_phase=known_phase)
