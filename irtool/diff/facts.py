"""What `irtool diff` compares of one dump: its communication nodes and strategies, from
`irtool.parallel` records, with the keys that match them across compilations."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..parallel import STRATEGY_KEYS, CommNode, ParallelFacts, Strategy
from ..parallel.records import plain
from ..parallel.scope import op_number
from .match import freeze, normalise_name, normalise_scope

STRATEGY_FIELDS = STRATEGY_KEYS  # the one list: a `gen_strategy` change is a change here as in `check`


@dataclass(frozen=True)
class CommFact:
    """A communication node as the diff sees it: the record, its stage and match keys."""

    comm: CommNode
    stage: int | None
    scope: str  # normalised
    order: tuple
    group_size: int | None

    @property
    def op(self) -> str:
        return self.comm.op

    @property
    def identity(self) -> tuple:
        """What matches the node across compilations: stage, normalised scope, operator, the
        operator's instance name and the micro batch (the copies of one cell per micro batch share
        a scope)."""
        return (self.stage, self.scope, self.comm.op, normalise_name(self.comm.instance), self.comm.micro)

    @property
    def category(self) -> str:
        return self.comm.category

    @property
    def uid(self) -> str:
        return self.comm.node

    def value(self, name: str) -> Any:
        """A compared field: `group_size` from here, the others from the record."""
        return self.group_size if name == "group_size" else getattr(self.comm, name)

    def signature(self) -> tuple:
        return (self.comm.category, self.group_size, freeze(self.comm.shape), self.comm.dtype)

    def as_dict(self) -> dict[str, Any]:
        c = self.comm
        return {"op": c.op, "category": c.category, "stage": self.stage, "scope": self.scope,
                "phase": c.phase, "group": c.group, "group_ranks": plain(c.group_ranks),
                "group_size": self.group_size, "shape": plain(c.shape), "dtype": c.dtype,
                "bytes": c.bytes, "line": c.line, "peer_rank": c.peer_rank, "peer_stage": c.peer_stage,
                "parameter": c.parameter, "micro": c.micro, "instance": c.instance}


@dataclass(frozen=True)
class StrategyFact:
    """An operator with a strategy or layout, with its stage and match keys."""

    strategy: Strategy
    stage: int | None
    scope: str  # normalised
    order: tuple
    micro: int | None = None  # the node's `micro` attribute (pipeline micro batch)

    @property
    def op(self) -> str:
        return self.strategy.op

    @property
    def identity(self) -> tuple:
        """Stage, normalised scope, operator, instance name (`fc1` and `fc2` share a cell's scope)
        and micro batch (once known)."""
        return (self.stage, self.scope, self.strategy.op, normalise_name(self.strategy.instance), self.micro)

    @property
    def uid(self) -> str:
        return self.strategy.node

    def value(self, name: str) -> Any:
        return getattr(self.strategy, name)

    def signature(self) -> str:
        return self.strategy.signature()


def _order(scope: str, line: int) -> tuple:
    return (op_number(scope), line)


def comm_facts(facts: ParallelFacts) -> list[CommFact]:
    out = []
    for c in facts.comm:
        group = facts.groups.get(c.group) if c.group else None
        size = len(c.group_ranks) if c.group_ranks else (group.size if group else None)
        out.append(CommFact(c, facts.stage, normalise_scope(c.scope), _order(c.scope, c.line), size))
    return out


def strategy_facts(facts: ParallelFacts) -> list[StrategyFact]:
    """The strategies, their micro batch unknown until `strategy_micro` is asked for it."""
    return [StrategyFact(s, facts.stage, normalise_scope(s.scope), _order(s.scope, s.line)) for s in facts.strategies]


def strategy_micro(table: Any, wanted: set[str]) -> dict[str, int]:
    """Node uid -> `micro` of the `wanted` nodes (the pipeline micro batch a copy of the operator
    runs; absent without pipeline). Reads those nodes' attributes: asked only for the nodes that
    did not all pair, it costs nothing when a diff finds no strategy change (on gpt_large_perf's
    7,232 strategies it would cost more than the analysis)."""
    out = {}
    for node in table.dump.nodes():
        if node.uid in wanted:
            m = table("micro", node)
            if m is not None:
                out[node.uid] = m
    return out
