"""Category rules that read a communication node's neighbourhood, not only its own attributes
(docs/parallel.md §2, R11-R13): what an all-to-all feeds or is fed by, and how the activation a
gather or scatter of tensor parallelism carries is split.

- R11 expert parallel: an all-to-all no name rule placed (user-written) whose values reach a grouped
  or expert matrix multiplication (`GroupedMatmul`, a `BatchMatMul` of a 3-D weight, MoE routing
  operators) before any other matrix multiplication: a dispatch when the experts are downstream, a
  combine when they are upstream. One whose values reach `FlashAttentionScore` so is the sequence
  exchange of Ulysses context parallelism (R13).
- R12 sequence parallel: a forward tensor-parallel `ReduceScatter` (R7, or a user-written one no name
  rule placed, R10) whose result feeds an operator holding a (batch, sequence, hidden) activation
  split along the sequence over the scatter's group, and an `AllGather` (R6, R10) of such an
  activation back to whole sequences: Megatron's sequence-parallel pair around a tensor-parallel
  block. The split is read from the operator's `in_strategy` (batch, sequence, hidden: `(b, s, 1)`)
  or its `in_layout`: a dimension other than the hidden (last, whole) one split over the device-matrix
  axis the collective's group runs along (MindFormers' mcore layers hold (sequence, batch, hidden),
  the sequence on the tensor-parallel axis, the batch on the data-parallel one).
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Iterable

from ..ir import Node
from .groups import ranks_of
from .links import NodeIndex, has_strategy
from .stage import as_int

EXPERT_OPS = frozenset({"GroupedMatmul", "GroupedMatmulV2", "GroupedMatmulV4", "MoeTokenPermute",
                        "MoeTokenUnpermute", "MoeInitRouting", "MoeInitRoutingV2", "MoeFinalizeRouting",
                        "MoeDistributeDispatch", "MoeDistributeCombine", "MoeGatingTopKSoftmax"})
ATTENTION_OPS = frozenset({"FlashAttentionScore", "FlashAttentionScoreGrad", "RingAttentionUpdate"})
# A matrix multiplication ends the walk: an all-to-all is for the first one its values meet.
BARRIERS = frozenset({"MatMul", "BatchMatMul", "MatMulExt", "BatchMatMulExt", "Dense", "Bmm"}) | EXPERT_OPS \
    | ATTENTION_OPS
ALL_TO_ALL = frozenset({"AlltoAll", "AllToAll", "AlltoAllV", "AllToAllV", "AllToAllv", "AlltoAllVC"})
_STEPS = 200


def _expert_bmm(n: Node, three_d: Callable[[Node], bool]) -> bool:
    """A BatchMatMul of expert weights: its second input a 3-D (experts, in, out) parameter."""
    return n.op in ("BatchMatMul", "BatchMatMulExt", "Bmm") and three_d(n)


def _first_reached(start: Node, step: Callable[[Node], Iterable[Node]]) -> Node | None:
    """The first barrier (matrix multiplication, attention, MoE operator) reached from `start`."""
    seen = {start}
    queue = deque(step(start))
    while queue and len(seen) < _STEPS:
        cur = queue.popleft()
        if cur in seen:
            continue
        seen.add(cur)
        if cur.op in BARRIERS:
            return cur
        queue.extend(step(cur))
    return None


def _users(index: NodeIndex) -> Callable[[Node], list[Node]]:
    def users(n: Node) -> list[Node]:
        out = []
        for u in index.users(n):
            if u.op == "UpdateState":
                continue
            if u.op == "Depend":  # only the first input goes on; the others order execution
                ins = u.inputs
                if not ins or ins[0].ref is None or ins[0].ref.name != n.key:
                    continue
            out.append(u)
        return out
    return users


def _producers(index: NodeIndex) -> Callable[[Node], list[Node]]:
    def producers(n: Node) -> list[Node]:
        graph = index.nodes[n.graph]
        if n.op == "UpdateState":
            return []
        refs = n.node_refs[:1] if n.op == "Depend" else n.node_refs
        return [graph[r] for r in refs if r in graph]
    return producers


def all_to_all_purpose(n: Node, index: NodeIndex, three_d: Callable[[Node], bool]) -> tuple[str, str] | None:
    """(category, rule) of an all-to-all by the first matrix multiplication its values meet: R11
    dispatch / combine (experts downstream / upstream), R13 Ulysses (attention either way); None
    when neither is reached."""
    down = _first_reached(n, _users(index))
    up = _first_reached(n, _producers(index))
    if down is not None and (down.op in EXPERT_OPS or _expert_bmm(down, three_d)):
        return "expert-parallel", "R11-dispatch"
    if up is not None and (up.op in EXPERT_OPS or _expert_bmm(up, three_d)):
        return "expert-parallel", "R11-combine"
    if (down is not None and down.op in ATTENTION_OPS) or (up is not None and up.op in ATTENTION_OPS):
        return "context-parallel", "R13-ulysses"
    return None


def _split_sequence(n: Node, group_size: int, ranks: tuple[int, ...] | None) -> bool:
    """`n` holds a (batch, sequence, hidden) activation split along the sequence over the collective's group of
    `group_size` ranks `ranks`: its first input's strategy is (b, s, 1) with s a multiple of the group size, or its
    first input's layout splits a dimension other than the last (hidden, whole) over the group's device axis."""
    strategy = n.attr("in_strategy")
    first = strategy[0] if isinstance(strategy, (tuple, list)) and strategy else None
    if first is None:
        layouts = n.attr("in_layout")
        layout = layouts[0] if isinstance(layouts, (tuple, list)) and layouts else None
        return isinstance(layout, dict) and _layout_splits_sequence(layout, ranks)
    if not isinstance(first, (tuple, list)) or len(first) != 3:
        return False
    seq, hidden = first[1], first[2]
    return isinstance(seq, int) and isinstance(hidden, int) and hidden == 1 and seq % group_size == 0 and seq > 1


def _layout_splits_sequence(layout: dict, ranks: tuple[int, ...] | None) -> bool:
    """A 3-D layout whose last dimension is whole and another is split over the device-matrix axis `ranks` run
    along (`_axis_of`)."""
    matrix, tmap = layout.get("device_matrix"), layout.get("tensor_map")
    if not isinstance(matrix, (tuple, list)) or not isinstance(tmap, (tuple, list)) or len(tmap) != 3 \
            or tmap[-1] != -1:
        return False
    axis = _axis_of(matrix, ranks)
    return axis is not None and any(axis in (m if isinstance(m, (tuple, list)) else (m,)) for m in tmap[:-1])


def _axis_of(matrix: tuple | list, ranks: tuple[int, ...] | None) -> int | None:
    """The device-matrix axis (numbered from the right, as a tensor map names it) a group of `ranks` runs along:
    the axis of as many devices whose stride (the product of the axes to its right) the ranks step by; None for a
    group of no single axis."""
    if not ranks or len(ranks) < 2 or not all(isinstance(x, int) and x > 0 for x in matrix):
        return None
    step = ranks[1] - ranks[0]
    if any(b - a != step for a, b in zip(ranks, ranks[1:])):
        return None
    stride = 1
    for axis, size in enumerate(reversed(matrix)):
        if size == len(ranks) and stride == step:
            return axis
        stride *= size
    return None


_GLUE = frozenset({"Reshape", "TupleGetItem", "MakeTuple", "Depend", "Load", "Cast", "StridedSlice", "Split",
                   "Concat"})


def _near_strategy(n: Node, step: Callable[[Node], list[Node]]) -> Node | None:
    """The first operator with a strategy next to `n` through glue (reshapes, tuples, casts)."""
    seen = {n}
    queue = deque(step(n))
    while queue and len(seen) < 32:
        cur = queue.popleft()
        if cur in seen:
            continue
        seen.add(cur)
        if has_strategy(cur) and not cur.op.startswith("_Virtual"):
            return cur
        if cur.op in _GLUE or "redistribution_op" in (cur.instance_name or ""):
            queue.extend(step(cur))
    return None


def sequence_parallel(n: Node, rule: str, index: NodeIndex) -> str | None:
    """R12 (module docstring): `R12-scatter` for the forward ReduceScatter, `R12-gather` for the
    redistribution AllGather; None when the activation's split says nothing of a sequence."""
    size = as_int(n.primitive_attrs.get("rank_size"))
    if size is None or size < 2:
        return None
    ranks = ranks_of(n.primitive_attrs)
    if n.op == "ReduceScatter" and (rule.startswith("R7") or rule == "R10"):
        consumer = _near_strategy(n, _users(index))
        return "R12-scatter" if consumer is not None and _split_sequence(consumer, size, ranks) else None
    if n.op == "AllGather" and rule in ("R6", "R6k", "R10"):
        producer = _near_strategy(n, _producers(index))
        return "R12-gather" if producer is not None and _split_sequence(producer, size, ranks) else None
    return None
