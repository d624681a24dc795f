"""Per-rank wire bytes of a communication node under the standard algorithms (docs/parallel.md §14).

`bytes` (§5) is the size of the tensor a collective hands over or produces; what crosses the
network depends on the algorithm and the group size. These are the textbook ring / pairwise
figures, an estimate: the library may pick a tree, a hierarchical or an in-node algorithm.
"""
from __future__ import annotations

from .flowrules import ALL_TO_ALL
from .records import CommNode, Group
from .rules import GATHERS, MIRRORS

# The collective each communication operator performs (`hardware.COLLECTIVES`; `Send` for point to point): one
# table for the wire bytes, their formula and the time model; an operator not here has no formula (Broadcast, ...).
COLLECTIVE: dict[str, str] = {
    **dict.fromkeys(("AllReduce", "InnerCommAllReduce", *sorted(MIRRORS)), "AllReduce"),
    **dict.fromkeys(sorted(GATHERS), "AllGather"),
    **dict.fromkeys(("ReduceScatter", "ReduceScatterV", "InnerCommReduceScatter", "_HostReduceScatter"),
                    "ReduceScatter"),
    **dict.fromkeys(sorted(ALL_TO_ALL), "AlltoAll"),
    **dict.fromkeys(("Send", "Receive", "InnerCommIsend", "InnerCommIrecv", "NeighborExchange", "NeighborExchangeV2"),
                    "Send"),
}
# collective -> numerator factor of the ring: wire = factor * (n-1)/n * bytes (`Send`: bytes itself)
_RING = {"AllReduce": 2, "AllGather": 1, "ReduceScatter": 1, "AlltoAll": 1}

FORMULAS = {
    "AllReduce": "2(n-1)/n * S",
    "AllGather": "(n-1)/n * S_full (S_full = gathered output)",
    "ReduceScatter": "(n-1)/n * S_full (S_full = input before scattering)",
    "AlltoAll": "(n-1)/n * S",
    "Send/Receive": "S",
}


def collective_of(op: str) -> str | None:
    """The collective `op` performs (`_MirrorOperator` -> AllReduce, `Receive` -> Send), None when none here."""
    return COLLECTIVE.get(op)


def formula(op: str) -> str | None:
    """The wire-bytes formula of `op` (`FORMULAS`), None when it has none."""
    kind = COLLECTIVE.get(op)
    return FORMULAS["Send/Receive" if kind == "Send" else kind] if kind is not None else None


def group_size(c: CommNode, groups: dict[str, Group]) -> int | None:
    """Members of the node's group: its rank list, else the group table's size."""
    if c.group_ranks:
        return len(c.group_ranks)
    g = groups.get(c.group) if c.group else None
    return g.size if g else None


def wire_bytes(op: str, nbytes: int | None, n: int | None) -> int | None:
    """Bytes one rank sends (= receives, for the collectives) for `op` moving a tensor of `nbytes`
    (docs/parallel.md §5) in a group of `n`; None when unknown or the op has no formula here."""
    kind = COLLECTIVE.get(op)
    if nbytes is None or kind is None:
        return None
    if kind == "Send":
        return nbytes
    if n is None or n <= 0:
        return None
    return _RING[kind] * (n - 1) * nbytes // n


def node_wire_bytes(c: CommNode, groups: dict[str, Group]) -> int | None:
    return wire_bytes(c.op, c.bytes, group_size(c, groups))
