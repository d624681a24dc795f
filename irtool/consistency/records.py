"""The records of `irtool check`: a finding is one inconsistency between ranks, told by its sides
(one located line per rank involved); what could not be checked is kept apart, never dropped."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Check = Literal["p2p", "collectives", "groups", "stage"]
CHECKS: tuple[str, ...] = get_args(Check)
CHECK_TITLES = {"p2p": "Point-to-point pairing", "collectives": "Collectives per group",
                "groups": "Group membership", "stage": "Ranks of one stage alike"}


@dataclass(frozen=True)
class Side:
    """One rank's part of a finding: its file, the line when one node is meant, and what is there."""

    rank: int | None
    file: str  # relative to the checked folder
    line: int | None
    text: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "file": self.file, "line": self.line, "text": self.text}


@dataclass
class Finding:
    """An inconsistency between ranks that can make the job hang or compute different things."""

    check: Check
    subject: str  # what is compared: `rank 1 -> rank 5`, `group 2-654... (ranks 4, 5)`, `stage 1`
    problem: str  # what is wrong, in a few words
    sides: list[Side]

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "subject": self.subject, "problem": self.problem,
                "sides": [s.as_dict() for s in self.sides]}


@dataclass(frozen=True)
class Unchecked:
    """Something a check could not compare, e.g. a peer rank missing from the folder."""

    check: Check
    rank: int | None
    file: str
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "rank": self.rank, "file": self.file, "text": self.text}


@dataclass(frozen=True)
class RankEntry:
    rank: int | None
    file: str
    stage: int | None


@dataclass
class CheckResult:
    """All findings over one dump folder."""

    path: str
    pass_name: str
    ranks: list[RankEntry]
    findings: list[Finding] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.findings

    def counts(self) -> dict[str, int]:
        out = {c: sum(1 for f in self.findings if f.check == c) for c in CHECKS}
        out["total"] = len(self.findings)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"schema": "irtool.check/1", "path": self.path, "pass": self.pass_name,
                "consistent": self.consistent,
                "ranks": [{"rank": r.rank, "file": r.file, "stage": r.stage} for r in self.ranks],
                "counts": self.counts(), "findings": [f.as_dict() for f in self.findings],
                "unchecked": [u.as_dict() for u in self.unchecked]}
