"""Per-rank wire bytes of a communication node under the standard algorithms (docs/parallel.md §14).

`bytes` (§5) is the size of the tensor a collective hands over or produces; what crosses the
network depends on the algorithm and the group size. These are the textbook ring / pairwise
figures, an estimate: the library may pick a tree, a hierarchical or an in-node algorithm.
"""
from __future__ import annotations

from .records import CommNode, Group

# op -> (numerator factor, uses n-1 over n): wire = factor * (n-1)/n * bytes, or bytes itself
_RING = {"AllReduce": 2, "InnerCommAllReduce": 2, "_MirrorOperator": 2, "_MirrorMicroStepOperator": 2,
         "_MirrorMiniStepOperator": 2,
         "AllGather": 1, "AllGatherV": 1, "InnerCommAllGather": 1, "_MicroStepAllGather": 1,
         "_MiniStepAllGather": 1, "_HostAllGather": 1,
         "ReduceScatter": 1, "ReduceScatterV": 1, "InnerCommReduceScatter": 1, "_HostReduceScatter": 1,
         "AlltoAll": 1, "AllToAll": 1, "AlltoAllV": 1, "AllToAllV": 1, "AllToAllv": 1, "AlltoAllVC": 1}
_WHOLE = frozenset({"Send", "Receive", "InnerCommIsend", "InnerCommIrecv", "NeighborExchange", "NeighborExchangeV2"})

FORMULAS = {
    "AllReduce": "2(n-1)/n * S",
    "AllGather": "(n-1)/n * S_full (S_full = gathered output)",
    "ReduceScatter": "(n-1)/n * S_full (S_full = input before scattering)",
    "AlltoAll": "(n-1)/n * S",
    "Send/Receive": "S",
}


def group_size(c: CommNode, groups: dict[str, Group]) -> int | None:
    """Members of the node's group: its rank list, else the group table's size."""
    if c.group_ranks:
        return len(c.group_ranks)
    g = groups.get(c.group) if c.group else None
    return g.size if g else None


def wire_bytes(op: str, nbytes: int | None, n: int | None) -> int | None:
    """Bytes one rank sends (= receives, for the collectives) for `op` moving a tensor of `nbytes`
    (docs/parallel.md §5) in a group of `n`; None when unknown or the op has no formula here."""
    if nbytes is None:
        return None
    if op in _WHOLE:
        return nbytes
    factor = _RING.get(op)
    if factor is None or n is None or n <= 0:
        return None
    return factor * (n - 1) * nbytes // n


def node_wire_bytes(c: CommNode, groups: dict[str, Group]) -> int | None:
    return wire_bytes(c.op, c.bytes, group_size(c, groups))
