"""Parallel semantics of a dump: communication nodes, their category and cost, strategies, stage.

Rules are documented in docs/parallel.md. (Interface fixed; the rules are filled in by the
parallel-semantics work.)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .model import Dump, Node

# Collective and point-to-point primitives, and the virtual operators that become communication.
COMM_OPS = frozenset({
    "AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "AllToAll", "AlltoAllV", "AllToAllv",
    "AlltoAllVC", "AllGatherV", "ReduceScatterV", "Broadcast", "Send", "Receive", "NeighborExchange",
    "NeighborExchangeV2", "CollectivePermute", "BatchISendIRecv", "Reduce", "Barrier",
    "_MirrorOperator", "_MirrorMicroStepOperator", "_MirrorMiniStepOperator",
    "_MicroStepAllGather", "_MiniStepAllGather", "_HostAllGather", "_HostReduceScatter",
})

CATEGORIES = ("redistribution", "operator-forward", "gradient-aggregation", "optimizer-parallel",
              "pipeline", "other")


def is_comm(node: Node) -> bool:
    """True for a communication node (see COMM_OPS)."""
    return node.op in COMM_OPS


@dataclass
class CommNode:
    """One communication node with what irtool derived about it."""

    node: Node = field(repr=False)
    op: str
    category: str
    phase: str  # forward | backward | recompute | optimizer
    group: str | None = None
    group_ranks: list[int] | None = None
    shape: Any = None
    dtype: str | None = None
    bytes: int | None = None
    micro: int | None = None
    peer_stage: int | None = None
    scope: str = ""
    serves: str | None = None  # the operator (uid) or parameter the communication is for

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["node"]
        d["node"] = self.node.uid
        d["line"] = self.node.line
        return d


@dataclass
class Strategy:
    """An operator carrying a sharding strategy or layout."""

    node: Node = field(repr=False)
    op: str
    scope: str
    in_strategy: Any = None
    out_strategy: Any = None
    in_layout: Any = None
    out_layout: Any = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["node"]
        d["node"] = self.node.uid
        d["name"] = self.node.name
        return d


def comm_nodes(dump: Dump) -> list[CommNode]:
    """Every communication node of the dump, classified."""
    raise NotImplementedError


def strategies(dump: Dump) -> list[Strategy]:
    """Every operator with a strategy or layout."""
    raise NotImplementedError


def infer_stage(dump: Dump) -> int | None:
    """This rank's pipeline stage, or None when the dump has no pipeline communication."""
    raise NotImplementedError
