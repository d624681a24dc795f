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


@dataclass
class Cause:
    """One root cause: a headline people read first, the ranks it is about, and the findings it
    explains (each finding under exactly one cause)."""

    headline: str
    kind: Literal["ranks", "stages", "finding"]  # odd ranks of a stage, two stages, or one finding alone
    ranks: tuple[int, ...]
    findings: list[Finding]


@dataclass(frozen=True)
class Compared:
    """How many of the things present one kind of comparison could compare."""

    compared: int
    present: int

    @property
    def complete(self) -> bool:
        return self.compared == self.present

    def as_dict(self) -> dict[str, int]:
        return {"compared": self.compared, "present": self.present}


@dataclass(frozen=True)
class Coverage:
    """What was compared (docs/check.md "Coverage"): Send/Receive pairs whose both ends are in the
    folder, groups with collectives whose every member is, ranks with another rank of their stage."""

    pairs: Compared
    groups: Compared
    stage_peers: Compared

    @property
    def complete(self) -> bool:
        return self.pairs.complete and self.groups.complete and self.stage_peers.complete

    def text(self) -> str:
        return (f"compared {self.pairs.compared} of {self.pairs.present} Send/Receive pairs, "
                f"{self.groups.compared} of {self.groups.present} groups, "
                f"{self.stage_peers.compared} of {self.stage_peers.present} ranks with their stage peers")

    def as_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs.as_dict(), "groups": self.groups.as_dict(),
                "stage_peers": self.stage_peers.as_dict()}


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
    causes: list[Cause] = field(default_factory=list)
    coverage: Coverage = field(default_factory=lambda: Coverage(Compared(0, 0), Compared(0, 0), Compared(0, 0)))

    @property
    def consistent(self) -> bool:
        return not self.findings

    @property
    def complete(self) -> bool:
        """Everything present was compared: nothing under "Not checked", every pair, group and stage peer."""
        return not self.unchecked and self.coverage.complete

    def exit_code(self, strict: bool = False) -> int:
        """0 consistent (with `strict`: and complete), else 1."""
        return 0 if self.consistent and (self.complete or not strict) else 1

    def counts(self) -> dict[str, int]:
        out = {c: sum(1 for f in self.findings if f.check == c) for c in CHECKS}
        out["total"] = len(self.findings)
        return out

    def as_dict(self) -> dict[str, Any]:
        index = {id(f): i for i, f in enumerate(self.findings)}
        return {"schema": "irtool.check/1", "path": self.path, "pass": self.pass_name,
                "consistent": self.consistent,
                "ranks": [{"rank": r.rank, "file": r.file, "stage": r.stage} for r in self.ranks],
                "complete": self.complete, "coverage": self.coverage.as_dict(),
                "counts": self.counts(), "findings": [f.as_dict() for f in self.findings],
                "causes": [{"headline": c.headline, "kind": c.kind, "ranks": list(c.ranks),
                            "findings": [index[id(f)] for f in c.findings]} for c in self.causes],
                "unchecked": [u.as_dict() for u in self.unchecked]}
