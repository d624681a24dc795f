"""What `irtool.diff` compares, extracted from one dump: communication, strategies, stage.

Classification, bytes and strategies come from `irtool.parallel`; this module only reshapes them
into comparable facts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import parallel
from .diff_match import freeze, normalise_scope, op_number
from .model import Dump, Node

# Attributes that name ranks: they differ between two ranks of one stage by construction.
PEER_ATTRS = ("dest_rank", "src_rank", "dst_global_rank", "src_global_rank", "send_rank_ids", "recv_rank_ids")


@dataclass
class CommFact:
    """One communication node, reduced to what is stable across compilations."""

    op: str
    category: str
    stage: int | None
    scope: str  # normalised
    raw_scope: str
    line: int
    order: tuple
    phase: str | None = None
    group: str | None = None
    group_ranks: tuple | None = None
    group_size: int | None = None
    shape: Any = None
    dtype: str | None = None
    bytes: int | None = None
    peers: dict[str, Any] = field(default_factory=dict)

    def signature(self) -> tuple:
        return (self.category, self.group_size, freeze(self.shape), self.dtype)

    def as_dict(self) -> dict[str, Any]:
        from .diff_match import plain

        return {"op": self.op, "category": self.category, "stage": self.stage, "scope": self.scope,
                "phase": self.phase, "group": self.group, "group_ranks": plain(self.group_ranks),
                "group_size": self.group_size, "shape": plain(self.shape), "dtype": self.dtype,
                "bytes": self.bytes, "line": self.line}


@dataclass
class StrategyFact:
    """One operator with a strategy or layout."""

    op: str
    stage: int | None
    scope: str
    raw_scope: str
    name: str | None
    line: int
    order: tuple
    values: dict[str, Any]  # in_strategy, out_strategy, in_layout, out_layout (parsed)

    def signature(self) -> tuple:
        return tuple(freeze(self.values.get(k)) for k in STRATEGY_FIELDS)


STRATEGY_FIELDS = ("in_strategy", "out_strategy", "in_layout", "out_layout")


def stage_of(dump: Dump) -> int | None:
    """The dump's pipeline stage, None when unknown or without pipeline."""
    return dump.stage


def _order(node: Node) -> tuple:
    return (op_number(node.scope), node.line)


def comm_facts(dump: Dump, stage: int | None) -> list[CommFact]:
    """Communication nodes of `dump` as CommFacts."""
    out = []
    groups = parallel.group_table(dump)
    for c in parallel.comm_nodes(dump):
        node = c.node
        shape, dtype, nbytes = parallel.type_bytes(node.output_type, tuple_sum=True)
        category, phase = c.category, c.phase
        group = c.group if c.group is not None else node.attr("group")
        ranks = c.group_ranks
        shape = c.shape if c.shape is not None else shape
        dtype = c.dtype or dtype
        nbytes = c.bytes if c.bytes is not None else nbytes
        if ranks is None:
            value = node.primitive_attrs.get("group_rank_ids") or node.primitive_attrs.get("rank_list")
            ranks = tuple(value) if isinstance(value, (list, tuple)) else None
        size = len(ranks) if ranks else groups.get(group, {}).get("size")
        peers = {k: node.primitive_attrs[k] for k in PEER_ATTRS if k in node.primitive_attrs}
        out.append(CommFact(op=node.op, category=category, stage=stage, scope=normalise_scope(node.scope),
                            raw_scope=node.scope or "", line=node.line, order=_order(node), phase=phase,
                            group=str(group) if group is not None else None,
                            group_ranks=tuple(ranks) if ranks is not None else None,
                            group_size=size, shape=shape, dtype=dtype, bytes=nbytes,
                            peers=peers))
    return out


def strategy_facts(dump: Dump, stage: int | None) -> list[StrategyFact]:
    """Operators with a strategy or layout."""
    return [_strategy(s.node, stage, {k: getattr(s, k) for k in STRATEGY_FIELDS}) for s in parallel.strategies(dump)]


def _strategy(node: Node, stage: int | None, values: dict[str, Any]) -> StrategyFact:
    return StrategyFact(op=node.op, stage=stage, scope=normalise_scope(node.scope),
                         raw_scope=node.scope or "", name=node.instance_name,
                        line=node.line, order=_order(node), values=values)
