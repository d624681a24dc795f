"""Token rows behind dynamic (`-1`) dimensions: the `rows` fact (docs/cost.md §1, docs/parallel.md §5).

An expert-parallel dispatch (`AlltoAllV`) sends a tensor of known size and receives as many rows as
the router sent this rank: its output, and every tensor computed from it, prints that dimension as
`-1` (mindformers_moe_dp2mp2pp2_ep2: `AlltoAllV` (262144) -> (-1), then `GroupedMatmul` (-1, 512)).
The dump cannot say how many one rank gets, but it fixes the group's total: each rank sends
`input elements / block_size` rows (`block_size` = elements per row) and, dropless, every row sent is
received and computed by exactly one rank of the group. So averaged over the group's ranks a rank
receives the rows it sends (`mean`), and one rank receives at most the group size times that
(`bound`: every rank sends all its rows to it).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ir import Node, TypeInfo
from .groups import group_name
from .sizes import elements

if TYPE_CHECKING:
    from .table import NodeFacts

# All-to-all exchanges whose received size depends on the data (send/receive counts are inputs).
VARIABLE_ALL_TO_ALL = frozenset({"AlltoAllV", "AllToAllV", "AllToAllv", "AlltoAllVC"})
# Operators whose output size depends on the values they read: a `-1` they print is not the exchange's rows.
DATA_DEPENDENT = frozenset({"NonZero", "NonZeroExt", "MaskedSelect", "Unique", "UniqueConsecutive", "UniqueWithPad"})
_LIMIT = 400  # nodes visited looking for the exchange a dimension comes from


@dataclass(frozen=True)
class Rows:
    """The rows a `-1` dimension stands for, from the all-to-all that received them."""

    mean: int  # averaged over the group's ranks: the rows each rank sends
    bound: int  # at most: every rank of the group sends this rank all its rows
    group_size: int
    origin: str  # uid of the all-to-all
    line: int


def dynamic(t: TypeInfo | None) -> bool:
    """Whether a printed type has a `-1` dimension (a tuple's elements included)."""
    return t is not None and _has_minus_one(t.shape)


def _has_minus_one(shape: Any) -> bool:
    if isinstance(shape, tuple):
        return any(_has_minus_one(d) if isinstance(d, tuple) else d == -1 for d in shape)
    return False


def sent_elements(t: NodeFacts, n: Node) -> int | None:
    """Elements of `n`'s first input: as printed, else through the `Reshape` making it when that reads a
    tensor of known size (MindSpore prints `x.reshape(-1)` of a (512, 512) tensor as `(-1)`)."""
    ins = n.input_types
    if not ins or ins[0].kind == "Tuple":
        return None
    sent = elements(ins[0].shape)
    if sent is None and n.inputs and n.inputs[0].ref is not None:
        src = t.get("by_key")[n.graph].get(n.inputs[0].ref.name)
        if src is not None and src.op in ("Reshape", "Flatten") and src.input_types:
            sent = elements(src.input_types[0].shape)
    return sent


def _origin(t: NodeFacts, n: Node) -> Rows | None:
    """The rows an all-to-all of variable size receives when what it sends is of known size."""
    sent = sent_elements(t, n)
    block = n.scalar_attr("block_size")
    block = block if isinstance(block, int) and block > 0 else 1
    group = t.get("groups").get(group_name(n.primitive_attrs) or "")
    size = len(group.ranks) if group is not None and group.ranks else None
    if sent is None or size is None or sent % block:
        return None
    rows = sent // block
    return Rows(rows, rows * size, size, n.uid, n.line)


def rows(t: NodeFacts, n: Node) -> Rows | None:
    """The rows the `-1` dimensions of `n`'s inputs and output stand for: the variable all-to-all
    they come from, found through the producers of dynamic values in `n`'s subgraph; None when `n`
    has none, they come from no such exchange (a subgraph parameter) or from an operator whose output
    size depends on the values it reads (`NonZero`), or two exchanges disagree."""
    if n.op in VARIABLE_ALL_TO_ALL and sent_elements(t, n) is not None:
        return _origin(t, n)
    if not (dynamic(n.output_type) or any(dynamic(x) for x in n.input_types)):
        return None
    local = t.get("by_key")[n.graph]
    found: set[Rows] = set()
    seen = {n}
    todo = deque([n])
    while todo:
        cur = todo.popleft()
        if len(seen) > _LIMIT:
            return None
        if cur is not n and cur.op in VARIABLE_ALL_TO_ALL and sent_elements(t, cur) is not None:
            origin = _origin(t, cur)
            if origin is None:
                return None
            found.add(origin)
            continue
        if cur.op in DATA_DEPENDENT:
            return None  # rows of another count than the exchange's
        producers = [local[r] for r in cur.node_refs if r in local]
        carrying = [p for p in producers if dynamic(p.output_type)]
        for p in carrying:  # none: sized from scalars (`Range(0, n)` of a shape read off a dynamic tensor)
            if p not in seen:
                seen.add(p)
                todo.append(p)
    sizes = {(r.mean, r.bound) for r in found}
    return min(found, key=lambda r: r.line) if len(sizes) == 1 else None
