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

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..ir import Dump, Node, TypeInfo
from .records import PHASES, Phase
from .rules import COMM_OPS
from .sizes import elements

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
    "ScalarCast", "RefToEmbed", "resolve", "DoUnpackCall", "DtypeToEnum", "InplaceScatterSrc",
    "TupleGetItemV2", "ListGetItem", "MakeList", "Range", "ZerosLikeTensor", "Padding", "Pad",
}) | COMM_OPS
# One FLOP per output element: arithmetic applied element by element (and their gradients), and the
# normalisations/softmax counted the same way (a lower bound for them: docs/cost.md §1).
ELEMENTWISE = frozenset({
    "Add", "AddN", "Sub", "Mul", "Div", "RealDiv", "Neg", "Abs", "Square", "Sqrt", "Rsqrt", "Exp", "Log",
    "Pow", "Maximum", "Minimum", "Reciprocal", "ReLU", "ReLU6", "GeLU", "FastGeLU", "SiLU", "Sigmoid", "Tanh",
    "Erf", "Softplus", "LeakyReLU", "Select", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
    "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot", "FloorDiv", "Floor", "Ceil", "Round", "Sign",
    "ReluGrad", "ReLU6Grad", "GeLUGrad", "FastGeLUGrad", "SiLUGrad", "SigmoidGrad", "TanhGrad", "SqrtGrad",
    "RsqrtGrad", "BiasAdd", "BiasAddGrad", "Dropout", "DropoutGrad", "DropoutDoMask", "DropoutGenMask",
    "MaskedFill", "AssignAdd", "AssignSub", "Addcmul", "Addcdiv", "Softmax", "LogSoftmax", "SoftmaxGrad",
    "LogSoftmaxGrad", "SoftmaxBackward",
    "LayerNorm", "LayerNormGrad", "LayerNormV3", "LayerNormGradV3", "RmsNorm", "RmsNormGrad",
    "BatchNorm", "BatchNormGrad", "AddLayerNorm", "SquaredDifference", "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits", "Clip", "ClipByValue", "Mod", "FloorMod", "IsFinite", "IsNan",
    "Swiglu", "SwigluGrad", "CumSum", "RotaryPositionEmbedding", "Einsum", "OneHot", "Cos", "Sin", "ArgMaxWithValue",
})
# One FLOP per input element: reductions.
REDUCTIONS = frozenset({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceAll",
                        "ReduceAny", "UnsortedSegmentSum", "SumExt", "MeanExt",
                        "Argmax", "Argmin", "SquareSumAll", "L2Loss"})
# Optimizer updates: FLOPs per element of the updated weight (counted from the formulas of each
# update rule; docs/cost.md §1).
OPTIMIZER_UPDATES = {"SGD": 4, "ApplyMomentum": 3, "Momentum": 3, "Adam": 10, "ApplyAdam": 10, "FusedAdam": 10,
                     "AdamWeightDecay": 12, "FusedAdamWeightDecay": 12, "AdamW": 12, "Lamb": 15, "LAMB": 15,
                     "ApplyAdagrad": 5, "ApplyRMSProp": 7, "ApplyCenteredRMSProp": 9, "ApplyAdaMax": 8,
                     "ApplyAdagradV2": 5, "ApplyFtrl": 10, "ApplyProximalAdagrad": 8, "FusedCastAdamWeightDecay": 12}
MATMULS = frozenset({"MatMul", "BatchMatMul", "MatMulExt", "BatchMatMulExt", "Dense", "GroupedMatmul", "Bmm"})
CONVS = frozenset({"Conv2D", "Conv3D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3DBackpropInput",
                   "Conv3DBackpropFilter", "Conv2DTranspose", "DepthwiseConv2dNative", "Convolution"})
ATTENTION = {"FlashAttentionScore": 4, "FlashAttentionScoreGrad": 10, "PromptFlashAttention": 4,
             "IncreFlashAttention": 4, "FusedInferAttentionScore": 4}



@dataclass
class OpCost:
    """One operator's FLOPs on this device; `family` says by which formula."""

    node: str  # uid
    op: str
    phase: Phase
    layer: str
    micro: int | None
    flops: int | None  # None: unknown (op of no known family, or a shape the dump did not print)
    family: str  # matmul, conv, attention, elementwise, reduction, optimizer, none, unknown
    per_device: bool  # False: step_parallel_end shapes without a strategy to slice them by


@dataclass
class CostFacts:
    """FLOPs of one rank split by phase and layer, and what could not be counted."""

    kind: str  # file kind: spe (logical operator types) or post (per device)
    flops: dict[str, int]  # phase -> FLOPs (known)
    by_layer: dict[str, dict[str, int]]  # layer -> phase -> FLOPs
    by_family: dict[str, int]
    matmul_forward: int  # FLOPs of forward MatMul-family operators (the figure easiest to check by hand)
    unknown: Counter  # op -> count of operators whose FLOPs are unknown
    logical_ops: int  # operators counted with logical (not per-device) shapes
    micros: int  # micro batches seen (`micro` attributes), 1 when none
    ops: list[OpCost] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.flops.values())

    def as_dict(self) -> dict[str, Any]:
        return {"flops": dict(self.flops), "total_flops": self.total, "flops_by_layer": self.by_layer,
                "flops_by_family": dict(self.by_family), "matmul_forward_flops": self.matmul_forward,
                "unknown_ops": dict(sorted(self.unknown.items(), key=lambda kv: (-kv[1], kv[0]))),
                "unknown_count": sum(self.unknown.values()), "logical_ops": self.logical_ops,
                "micro_batches": self.micros,
                "shapes": "per device (printed sliced)" if self.kind != "spe" else
                          "step_parallel_end: logical per micro batch, sliced here by in_strategy"}


def _slice(shape: Any, strategy: Any) -> Any:
    """A logical shape divided by its strategy (one split per dimension)."""
    if not isinstance(shape, tuple) or not isinstance(strategy, (tuple, list)) or len(strategy) != len(shape):
        return shape
    return tuple(d // s if isinstance(d, int) and isinstance(s, int) and s > 0 else d for d, s in zip(shape, strategy))


def _shapes(node: Node, kind: str) -> tuple[list[Any], Any, bool]:
    """(input shapes, output shape, per device) as this device computes them."""
    ins = [t.shape if isinstance(t, TypeInfo) else None for t in node.input_types]
    out_t = node.output_type
    out = out_t.shape if out_t is not None else None
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


def _attention(node: Node, ins: list[Any], factor: int) -> int | None:
    """`factor` * B * N * Sq * Skv * D from the query/key layouts: 2 matmuls of 2 FLOPs per
    multiply-add forward (factor 4), 5 backward (factor 10); masks not subtracted."""
    if len(ins) < 2 or not isinstance(ins[0], tuple) or not isinstance(ins[1], tuple):
        return None
    q, k = ins[0], ins[1]
    layout = str(node.attr("input_layout", "BSH")).strip('"')
    if len(q) == 4 and layout == "BNSD":
        return factor * q[0] * q[1] * q[2] * k[2] * q[3]
    if len(q) == 4 and layout == "BSND":
        return factor * q[0] * q[2] * q[1] * k[1] * q[3]
    if len(q) == 3 and layout == "SBH":
        return factor * q[1] * q[0] * k[0] * q[2]
    if len(q) == 3:  # BSH: H = N*D
        return factor * q[0] * q[1] * k[1] * q[2]
    if len(q) == 2 and layout == "TND":
        return None  # variable lengths: the dump does not print them
    return None


def op_flops(node: Node, kind: str) -> tuple[int | None, str, bool]:
    """(FLOPs on this device, family, per device) of one operator."""
    op = node.op
    if op in NO_ARITHMETIC:
        return 0, "none", True
    ins, out, per_device = _shapes(node, kind)
    if op in MATMULS:
        return _matmul(node, ins), "matmul", per_device
    if op in CONVS:
        return _conv(node, ins, out), "conv", per_device
    if op in ATTENTION:
        return _attention(node, ins, ATTENTION[op]), "attention", per_device
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


def call_counts(dump: Dump) -> dict[str, int]:
    """How many times each subgraph runs per step: the entry graph once, any other graph the sum
    of its callers' counts over its call sites (`call @g`, `@g(...)`, `Partial(@g, ...)`); a graph
    no printed node calls (or one in a call cycle) once."""
    sites: dict[str, list[str]] = {}
    for g in dump.subgraphs:
        for n in g.nodes:
            if n.callee.startswith("@"):
                sites.setdefault(n.callee[1:], []).append(g.name)
            elif n.op == "Partial" and n.inputs and n.inputs[0].ref is not None and n.inputs[0].ref.kind == "graph":
                sites.setdefault(n.inputs[0].ref.name[1:], []).append(g.name)
    memo: dict[str, int] = {}

    def count(name: str, path: frozenset[str]) -> int:
        if name in memo:
            return memo[name]
        callers = sites.get(name)
        if name == dump.entry or not callers or name in path:
            return 1
        memo[name] = total = sum(count(c, path | {name}) for c in callers)
        return total

    return {g.name: count(g.name, frozenset()) for g in dump.subgraphs}


def layer_key(layer: int | None) -> str:
    """The key of a layer in per-layer figures: its index, `(no layer)` for work of no layer."""
    return "(no layer)" if layer is None else str(layer)


def compute_cost(t: NodeFacts, keep_ops: bool = False) -> CostFacts:
    """The FLOPs of every operator of the dump of fact table `t`, summed by phase, layer and family
    (docs/cost.md §1); phase, micro batch and layer are the table's."""
    dump = t.dump
    kind = t.get("file_kind")
    flops = {p: 0 for p in PHASES}
    by_layer: dict[str, dict[str, int]] = {}
    by_family: Counter = Counter()
    unknown: Counter = Counter()
    ops: list[OpCost] = []
    logical = 0
    matmul_fwd = 0
    micros: set[int] = set()
    nodes = [n for n in dump.nodes() if n.op not in NO_ARITHMETIC]
    times = call_counts(dump)
    for node in nodes:
        f, family, per_device = op_flops(node, kind)
        if f is not None:
            f *= times.get(node.graph, 1)  # a reused cell's subgraph runs once per call site
        ph = t("phase", node)
        micro = t("micro", node)
        if micro is not None:
            micros.add(micro)
        layer = layer_key(t("layer", node))
        if f is None:
            unknown[node.op] += 1
        else:
            if not per_device:
                logical += 1
            flops[ph] += f
            row = by_layer.setdefault(layer, {p: 0 for p in PHASES})
            row[ph] += f
            by_family[family] += f
            if family == "matmul" and ph == "forward":
                matmul_fwd += f
        if keep_ops:
            ops.append(OpCost(node.uid, node.op, ph, layer, micro, f, family, per_device))
    return CostFacts(kind=kind, flops=flops, by_layer=by_layer, by_family=dict(by_family), matmul_forward=matmul_fwd,
                     unknown=unknown, logical_ops=logical, micros=max(1, len(micros)), ops=ops)
