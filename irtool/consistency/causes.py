"""Findings grouped by root cause (docs/check.md "Causes"); what the checks could compare
("Coverage") each check's fold tells at its end.

One rank compiled differently shows up in every check: its Send/Receive pairs, the collectives of
each group it is in, its stage's operator counts. The cause is the rank (or ranks) that differ from
the other ranks of their stage; every finding that involves such a rank goes under it. Findings
between stages whose ranks all agree within their stage (a whole stage compiled differently) go under
the pair of stages. What is left is a cause of its own.
"""
from __future__ import annotations

from array import array
from typing import Hashable

from ..present import rank_list
from ..spill import Spill
from .folder import Folder, reference
from .records import Cause, Finding
from .stage import Stages, strategy_differences, strategy_text_of

_BATCH = 12  # causes whose ranks' details are read in one batch


def _odd_ranks(stages: Stages) -> list[tuple[int | None, list[int], list[int]]]:
    """(stage, ranks that differ, the ranks most of the stage agree with) for every minority of a
    stage; the majority on a tie is the lowest rank's (as the checks pick their reference)."""
    out = []
    for stage, profiles in stages.stages():
        if sum(map(len, profiles.values())) < 2:
            continue
        ref, by = reference(profiles)
        out += [(stage, others, by[ref]) for variant, others in by.items() if variant != ref]
    return out


def _ends(f: Finding) -> tuple[int | None, int | None]:
    """Sender and receiver of a p2p finding: its first side is the sender's, its last the receiver's."""
    return f.sides[0].rank, f.sides[-1].rank


class _Group:
    """The findings of one cause that may hold several, as they are read."""

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.numbers = array("i")
        self.first: Finding | None = None
        self.p2p: Finding | None = None  # its first p2p finding
        self.ranks: set[int] = set()


def causes(folder: Folder, stages: Stages, findings: Spill[Finding]) -> Spill[Cause]:
    """Every finding under exactly one cause, causes in the order of their first finding. The
    findings are read twice: to group them (only a cause's number per finding is held, and the
    findings' numbers of causes that hold several), then to tell each cause."""
    odd = _odd_ranks(stages)
    odd_of = {r: i for i, (_, rs, _) in reversed(list(enumerate(odd))) for r in rs}
    cause_of = array("i")
    groups: dict[Hashable, int] = {}
    grouped: dict[int, _Group] = {}
    for n, f in enumerate(findings):
        ranks = {s.rank for s in f.sides if s.rank is not None}
        hits = [odd_of[r] for r in ranks if r in odd_of]
        key: tuple | None = ("ranks", min(hits)) if hits else None
        if key is None and f.check == "p2p":
            src, dst = _ends(f)
            if src in folder.stages and dst in folder.stages:
                # both directions between two stages: one cause (the backward pass mirrors the forward)
                key = ("stages", frozenset((folder.stages[src], folder.stages[dst])))
        if key is None:
            cause_of.append(-1)  # a cause of its own
            continue
        cid = groups.setdefault(key, len(groups))
        cause_of.append(cid)
        g = grouped.setdefault(cid, _Group(key))
        g.numbers.append(n)
        g.first = g.first or f
        if f.check == "p2p" and g.p2p is None:
            g.p2p = f
        if key[0] == "stages":
            g.ranks.update(ranks)
    headlines = _odd_headlines(folder, stages, odd, [g for g in grouped.values() if g.key[0] == "ranks"])
    out: Spill[Cause] = Spill()
    told: set[int] = set()
    for n, cid in enumerate(cause_of):
        if cid in told:
            continue
        if cid < 0:
            f = findings[n]
            out.append(Cause(f"{f.subject}: {f.problem}", "finding",
                             tuple(sorted({s.rank for s in f.sides if s.rank is not None})), (n,)))
            continue
        told.add(cid)
        g = grouped[cid]
        if g.key[0] == "ranks":
            out.append(Cause(headlines[g.key[1]], "ranks", tuple(odd[g.key[1]][1]), tuple(g.numbers)))
        else:
            assert g.p2p is not None
            out.append(Cause(_link_headline(folder, g.p2p, by_stage=True), "stages", tuple(sorted(g.ranks)),
                             tuple(g.numbers)))
    return out


def _odd_headlines(folder: Folder, stages: Stages, odd: list[tuple[int | None, list[int], list[int]]],
                   groups: list[_Group]) -> dict[int, str]:
    """The headline of each cause of odd ranks; the strategies of those without a Send/Receive
    finding tell theirs: read in batches."""
    out = {}
    for i in range(0, len(groups), _BATCH):
        batch = groups[i:i + _BATCH]
        folder.fetch(r for g in batch if g.p2p is None for r in (odd[g.key[1]][1][0], odd[g.key[1]][2][0]))
        for g in batch:
            stage, ranks, alike = odd[g.key[1]]
            assert g.first is not None
            out[g.key[1]] = _odd_headline(folder, stages, stage, ranks, alike, g.first, g.p2p)
    return out


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {rank_list(ranks)}"


def _of_stage(stage: int | None) -> str:
    return f" of stage {stage}" if stage is not None else ""


def _odd_headline(folder: Folder, stages: Stages, stage: int | None, ranks: list[int], alike: list[int],
                  first: Finding, p2p: Finding | None) -> str:
    """What the odd ranks do differently, said once: the Send/Receive they disagree on with a peer
    (`p2p`, their first such finding), else the strategy they build differently, else their
    micro-batch count, else their `first` finding."""
    who = f"{_ranks(ranks)}{_of_stage(stage)}"
    # two ranks of a stage that disagree: nothing says which one is odd, so neither is called so
    tie = len(ranks) >= len(alike)
    if p2p is not None:
        relation = (f"disagree{'s' if len(ranks) == 1 else ''} with" if tie
                    else f"differ{'s' if len(ranks) == 1 else ''} from")
        return f"{_link_headline(folder, p2p)} ({who} {relation} {_ranks(alike)})"
    diffs = strategy_differences(folder.details(ranks[0]).strategies, folder.details(alike[0]).strategies)
    if diffs:
        (scope, op), mine, theirs = diffs[0]
        name = next((s.instance for s in (*mine.values(), *theirs.values()) if s.instance), None) or op
        subject = f"{name} ({op})" if name != op else op
        more = f" and {len(diffs) - 1} more operator(s)" if len(diffs) > 1 else ""
        alone = " alone" if len(ranks) == 1 and not tie else ""
        where = f" (stage {stage})" if stage is not None else ""
        return (f"{_ranks(ranks)}{alone} build{'s' if len(ranks) == 1 else ''} {subject} with "
                f"{strategy_text_of(mine) or 'no strategy'}; {_ranks(alike)} with "
                f"{strategy_text_of(theirs) or 'no strategy'}{more}{where}")
    mine, theirs = stages.micros(ranks[0]), stages.micros(alike[0])
    if mine != theirs:
        return (f"{who} build{'s' if len(ranks) == 1 else ''} {mine} micro batches; {_ranks(alike)} "
                f"build{'s' if len(alike) == 1 else ''} {theirs}")
    return f"{who} differ{'s' if len(ranks) == 1 else ''} from {_ranks(alike)}: {first.problem}"


def _link_headline(folder: Folder, f: Finding, by_stage: bool = False) -> str:
    """`rank 1 (stage 0) sends 4 micro batches of (4, 64); rank 5 (stage 1) expects 2 of (8, 64)`: what
    the link of a p2p finding carries (`Finding.carried`)."""
    def name(rank: int) -> str:
        stage = folder.stages[rank]
        if by_stage and stage is not None:
            return f"stage {stage}"
        return f"rank {rank}" + (f" (stage {stage})" if stage is not None else "")

    src, dst = _ends(f)
    assert src is not None and dst is not None and f.carried is not None
    sends, receives = f.carried
    sent = f"sends {sends.count} {sends.unit} of {sends.shapes}" if sends else "sends nothing"
    expected = f"expects {receives.count} of {receives.shapes}" if receives else "expects nothing"
    return f"{name(src)} {sent}; {name(dst)} {expected}"
