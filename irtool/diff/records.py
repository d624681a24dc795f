"""The typed change records of `irtool diff` (one dataclass per kind of change, like sqlglot's diff
edits). The comparison builds them; text and Markdown read their attributes; `as_dict` makes the
`irtool.diff/2` JSON (docs/diff.md) once, at output."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..parallel.records import Bytes, plain
from .facts import CommFact

Change = Literal["added", "removed", "changed"]


@dataclass(frozen=True)
class CommChange:
    """A communication node added, removed, or changed in `fields` (its match identity first)."""

    change: Change
    stage: int | None
    scope: str  # normalised; the new side's for a matched pair
    op: str
    category: str
    node_scope: str  # as printed
    parameter: str | None
    fields: tuple[str, ...]
    old: CommFact | None
    new: CommFact | None

    @property
    def side(self) -> CommFact:
        """The side that exists (the new one for a matched pair)."""
        side = self.new or self.old
        assert side is not None
        return side

    def as_dict(self) -> dict[str, Any]:
        return {"change": self.change, "stage": self.stage, "scope": self.scope, "op": self.op,
                "category": self.category, "node_scope": self.node_scope, "parameter": self.parameter,
                "old": self.old.as_dict() if self.old else None, "new": self.new.as_dict() if self.new else None,
                "fields": list(self.fields)}


@dataclass(frozen=True)
class RankSpecific:
    """Group names, members and peer ranks that differ only because two different ranks are compared."""

    stage: int | None
    scope: str
    op: str
    category: str
    node_scope: str
    parameter: str | None
    fields: tuple[str, ...]
    old: dict[str, Any]  # field -> value (plain)
    new: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "scope": self.scope, "op": self.op, "category": self.category,
                "node_scope": self.node_scope, "parameter": self.parameter, "fields": list(self.fields),
                "old": self.old, "new": self.new}


@dataclass(frozen=True)
class StrategyChange:
    """An operator's strategy or layout: added / removed (`field` None, `old`/`new` all values) or
    one `field` changed."""

    change: Change
    stage: int | None
    scope: str
    op: str
    name: str | None  # instance name
    node_scope: str
    field: str | None
    old: Any
    new: Any
    micro: int | None = None  # the pipeline micro batch of the node

    def as_dict(self) -> dict[str, Any]:
        return {"change": self.change, "stage": self.stage, "scope": self.scope, "op": self.op, "name": self.name,
                "node_scope": self.node_scope, "field": self.field, "old": plain(self.old), "new": plain(self.new),
                "micro": self.micro}


@dataclass(frozen=True)
class OpCount:
    """An operator whose number of nodes changed."""

    op: str
    old: int
    new: int

    @property
    def delta(self) -> int:
        return self.new - self.old

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "old": self.old, "new": self.new, "delta": self.delta}


@dataclass(frozen=True)
class ParamChange:
    """A graph parameter (`# Params:`) added, removed, or with another shape or dtype."""

    change: Change
    name: str
    old_shape: Any
    new_shape: Any
    old_dtype: str | None
    new_dtype: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"change": self.change, "name": self.name, "old_shape": self.old_shape, "new_shape": self.new_shape,
                "old_dtype": self.old_dtype, "new_dtype": self.new_dtype}


@dataclass(frozen=True)
class CommBytes:
    """Communication bytes of one (stage, category) on both sides, as the one `Bytes` value (known
    sum, nodes of known and of unknown size: an unknown size is never added as 0)."""

    stage: int | None
    category: str
    old: Bytes
    new: Bytes

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "category": self.category, "old": self.old.total, "new": self.new.total,
                "old_count": self.old.known + self.old.unknown, "new_count": self.new.known + self.new.unknown,
                "old_bytes_unknown": self.old.unknown, "new_bytes_unknown": self.new.unknown}


@dataclass(frozen=True)
class ParameterComm:
    """Parameters whose gradient / optimizer communication changed the same way."""

    old: str  # `AllReduce`, `AllGather + ReduceScatter`, `—` for none
    new: str
    parameters: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.parameters)

    def as_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "count": self.count, "parameters": list(self.parameters)}
