"""What `irtool diff` compares of one dump: its communication nodes and strategies, from
`irtool.parallel` records, with the keys that match them across compilations."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..parallel import STRATEGY_KEYS, CommNode, ParallelFacts, Strategy
from ..parallel.records import plain
from .match import freeze, normalise_scope, op_number

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
                "parameter": c.parameter}


@dataclass(frozen=True)
class StrategyFact:
    """An operator with a strategy or layout, with its stage and match keys."""

    strategy: Strategy
    stage: int | None
    scope: str  # normalised
    order: tuple

    @property
    def op(self) -> str:
        return self.strategy.op

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
    return [StrategyFact(s, facts.stage, normalise_scope(s.scope), _order(s.scope, s.line)) for s in facts.strategies]
