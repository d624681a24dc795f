"""The records of `irtool check`: a finding is one inconsistency between ranks, told by its sides
(one located line per rank involved); what could not be checked is kept apart, never dropped."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

from ..dumpdir import Unreadable
from ..present import Records
from ..spill import Spill

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


class Amount(NamedTuple):
    """What one side of a Send/Receive link carries, as a cause headline says it."""

    count: int
    unit: str  # micro batches when the nodes carry `micro`, else messages
    shapes: str


class Carried(NamedTuple):
    """What a link's Sends and what its Receives carry (None: there are none)."""

    sends: Amount | None
    receives: Amount | None


@dataclass
class Finding:
    """An inconsistency between ranks that can make the job hang or compute different things."""

    check: Check
    subject: str  # what is compared: `rank 1 -> rank 5`, `group 2-654... (ranks 4, 5)`, `stage 1`
    problem: str  # what is wrong, in a few words
    sides: list[Side]
    # p2p: what its link carries, kept for the cause headline (the link's nodes are let go); not output
    carried: Carried | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "subject": self.subject, "problem": self.problem,
                "sides": [s.as_dict() for s in self.sides]}


@dataclass
class Cause:
    """One root cause: a headline people read first, the ranks it is about, and the findings it
    explains (their numbers in `CheckResult.findings`, from 0; each finding under exactly one cause)."""

    headline: str
    kind: Literal["ranks", "stages", "finding"]  # odd ranks of a stage, two stages, or one finding alone
    ranks: tuple[int, ...]
    numbers: tuple[int, ...]


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
        """Every Send/Receive paired and every group compared: what needs a counterpart has it. A rank
        alone on its stage is not incomplete (a single-device job, one rank per stage): a stage peer
        missing from the folder is a member missing from the stage's groups (docs/check.md "--strict")."""
        return self.pairs.complete and self.groups.complete

    def text(self) -> str:
        return (f"compared {self.pairs.compared} of {self.pairs.present} Send/Receive pairs, "
                f"{self.groups.compared} of {self.groups.present} groups, "
                f"{self.stage_peers.compared} of {self.stage_peers.present} ranks with a rank of their stage")

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
    """All findings over one dump folder. The records there are one or more of per rank are kept in
    temporary files (`Spill`: sequences read back record by record, equal to lists of the same records)."""

    path: str
    pass_name: str
    ranks: Spill[RankEntry] = field(default_factory=Spill)
    findings: Spill[Finding] = field(default_factory=Spill)
    unchecked: Spill[Unchecked] = field(default_factory=Spill)
    causes: Spill[Cause] = field(default_factory=Spill)
    coverage: Coverage = field(default_factory=lambda: Coverage(Compared(0, 0), Compared(0, 0), Compared(0, 0)))
    unreadable: list[Unreadable] = field(default_factory=list)  # ranks the folder holds that were not read
    ignored: list[str] = field(default_factory=list)  # dump files outside the `rank_N/` folders

    @property
    def consistent(self) -> bool | None:
        """False with a finding; True without, every rank read; None (unknown) without a finding in
        the ranks read when some were not: a rank not read may be the one that disagrees."""
        if self.findings:
            return False
        return None if self.unreadable else True

    @property
    def complete(self) -> bool:
        """Everything that needs a counterpart was compared: every rank read, nothing under "Not
        checked", every Send/Receive paired and every group compared (`Coverage.complete`)."""
        return not self.unreadable and not self.unchecked and self.coverage.complete

    def exit_code(self, strict: bool = False) -> int:
        """2 when a rank was not read, else 0 consistent (with `strict`: and complete), else 1."""
        if self.unreadable:
            return 2
        return 0 if self.consistent and (self.complete or not strict) else 1

    def findings_of(self, cause: Cause) -> list[Finding]:
        return [self.findings[n] for n in cause.numbers]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(CHECKS, 0)
        for f in self.findings:
            out[f.check] += 1
        out["total"] = len(self.findings)
        return out

    def as_dict(self, lazy: bool = False) -> dict[str, Any]:
        """The JSON `irtool.check/2`; with `lazy`, its lists of records are `Records`, made as they are
        written (`present.json_pieces`)."""
        def records(seq: Spill, fn: Any) -> list | Records:
            return Records(len(seq), lambda: map(fn, seq)) if lazy else [fn(x) for x in seq]

        return {"schema": "irtool.check/2", "path": self.path, "pass": self.pass_name,
                "consistent": self.consistent,
                "ranks": records(self.ranks, lambda r: {"rank": r.rank, "file": r.file, "stage": r.stage}),
                "complete": self.complete, "coverage": self.coverage.as_dict(),
                "counts": self.counts(), "findings": records(self.findings, Finding.as_dict),
                "causes": records(self.causes, lambda c: {"headline": c.headline, "kind": c.kind,
                                                         "ranks": list(c.ranks), "findings": list(c.numbers)}),
                "unchecked": records(self.unchecked, Unchecked.as_dict),
                "unreadable": [u.as_dict() for u in self.unreadable], "ignored": self.ignored}
