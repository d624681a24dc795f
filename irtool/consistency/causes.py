"""Findings grouped by root cause, and what the checks could compare (docs/check.md "Causes",
"Coverage").

One rank compiled differently shows up in every check: its Send/Receive pairs, the collectives of
each group it is in, its stage's operator counts. The cause is the rank (or ranks) that differ from
the other ranks of their stage; every finding that involves such a rank goes under it. Findings
between stages whose ranks all agree within their stage (a whole stage compiled differently) go under
the pair of stages. What is left is a cause of its own.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Hashable

from ..present import cell, rank_list
from .digest import Message
from .folder import Folder, variants
from .records import Cause, Compared, Coverage, Finding
from .stage import stage_ranks, strategy_differences, strategy_text_of


def _odd_ranks(folder: Folder) -> list[tuple[int | None, list[int], list[int]]]:
    """(stage, ranks that differ, the ranks most of the stage agree with) for every minority of a
    stage; the majority on a tie is the lowest rank's (as the checks pick their reference)."""
    stages, _ = stage_ranks(folder)
    out = []
    for stage, ranks in sorted(stages.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        if len(ranks) < 2:
            continue
        ref, by = variants({r: folder.ranks[r].profile for r in ranks})
        out += [(stage, others, by[ref]) for variant, others in by.items() if variant != ref]
    return out


def _ends(f: Finding) -> tuple[int | None, int | None]:
    """Sender and receiver of a p2p finding: its first side is the sender's, its last the receiver's."""
    return f.sides[0].rank, f.sides[-1].rank


def causes(folder: Folder, findings: list[Finding]) -> list[Cause]:
    """Every finding under exactly one cause, causes in the order of their first finding."""
    odd = _odd_ranks(folder)
    grouped: dict[Hashable, list[Finding]] = defaultdict(list)
    for f in findings:
        ranks = {s.rank for s in f.sides if s.rank is not None}
        key: Hashable = next((("ranks", i) for i, (_, rs, _) in enumerate(odd) if ranks & set(rs)), None)
        if key is None and f.check == "p2p":
            src, dst = _ends(f)
            if src in folder.ranks and dst in folder.ranks:
                # both directions between two stages: one cause (the backward pass mirrors the forward)
                key = ("stages", frozenset((folder.ranks[src].stage, folder.ranks[dst].stage)))
        grouped[key if key is not None else ("finding", id(f))].append(f)
    # the strategies of odd ranks without a Send/Receive finding tell their headline: read in one batch
    folder.fetch(r for key, found in grouped.items() if key[0] == "ranks" and not any(f.check == "p2p" for f in found)
                 for r in (odd[key[1]][1][0], odd[key[1]][2][0]))
    out = []
    for key, found in grouped.items():
        if key[0] == "ranks":
            stage, ranks, alike = odd[key[1]]
            out.append(Cause(_odd_headline(folder, stage, ranks, alike, found), "ranks", tuple(ranks), found))
        elif key[0] == "stages":
            src, dst = _ends(next(f for f in found if f.check == "p2p"))
            assert src is not None and dst is not None
            involved = sorted({s.rank for f in found for s in f.sides if s.rank is not None})
            out.append(Cause(_link_headline(folder, src, dst, by_stage=True), "stages", tuple(involved), found))
        else:
            f = found[0]
            out.append(Cause(f"{f.subject}: {f.problem}", "finding",
                             tuple(sorted({s.rank for s in f.sides if s.rank is not None})), found))
    return out


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {rank_list(ranks)}"


def _of_stage(stage: int | None) -> str:
    return f" of stage {stage}" if stage is not None else ""


def _odd_headline(folder: Folder, stage: int | None, ranks: list[int], alike: list[int],
                  found: list[Finding]) -> str:
    """What the odd ranks do differently, said once: the Send/Receive they disagree on with a peer,
    else the strategy they build differently, else their micro-batch count."""
    who = f"{_ranks(ranks)}{_of_stage(stage)}"
    # two ranks of a stage that disagree: nothing says which one is odd, so neither is called so
    tie = len(ranks) >= len(alike)
    p2p = [f for f in found if f.check == "p2p"]
    if p2p:
        src, dst = _ends(p2p[0])
        assert src is not None and dst is not None
        relation = (f"disagree{'s' if len(ranks) == 1 else ''} with" if tie
                    else f"differ{'s' if len(ranks) == 1 else ''} from")
        return f"{_link_headline(folder, src, dst)} ({who} {relation} {_ranks(alike)})"
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
    mine, theirs = _micros(folder, ranks[0]), _micros(folder, alike[0])
    if mine != theirs:
        return f"{who} build{'s' if len(ranks) == 1 else ''} {mine} micro batches; {_ranks(alike)} build {theirs}"
    return f"{who} differ{'s' if len(ranks) == 1 else ''} from {_ranks(alike)}: {found[0].problem}"


def _micros(folder: Folder, rank: int) -> int:
    return len({c.micro for c in folder.ranks[rank].messages if c.micro is not None})


def _link_nodes(folder: Folder, src: int, dst: int) -> tuple[list[Message], list[Message]]:
    """The Sends of `src` to `dst` and the Receives of `dst` from `src` (peers are global ranks, as
    analysis resolves them)."""
    sends = [c for c in folder.ranks[src].messages if c.direction == "send" and c.peer_rank == dst]
    receives = [c for c in folder.ranks[dst].messages if c.direction == "receive" and c.peer_rank == src]
    return sends, receives


def _amount(nodes: list[Message]) -> tuple[int, str, str]:
    """(count, unit, shapes): micro batches when the nodes carry `micro`, else nodes."""
    micros = {c.micro for c in nodes if c.micro is not None}
    shapes = ", ".join(dict.fromkeys(cell(c.shape) for c in nodes)) or cell(None)
    return (len(micros), "micro batches", shapes) if micros else (len(nodes), "messages", shapes)


def _link_headline(folder: Folder, src: int, dst: int, by_stage: bool = False) -> str:
    """`rank 1 (stage 0) sends 4 micro batches of (4, 64); rank 5 (stage 1) expects 2 of (8, 64)`."""
    def name(rank: int) -> str:
        stage = folder.ranks[rank].stage
        if by_stage and stage is not None:
            return f"stage {stage}"
        return f"rank {rank}" + (f" (stage {stage})" if stage is not None else "")

    sends, receives = _link_nodes(folder, src, dst)
    n, unit, shapes = _amount(sends)
    m, _, rshapes = _amount(receives)
    sent = f"sends {n} {unit} of {shapes}" if sends else "sends nothing"
    expected = f"expects {m} of {rshapes}" if receives else "expects nothing"
    return f"{name(src)} {sent}; {name(dst)} {expected}"


def coverage(folder: Folder) -> Coverage:
    """Send/Receive pairs with both ends in the folder (per direction between two ranks, the larger
    of the Send and Receive counts) out of those plus every Send/Receive whose peer is not there or
    unknown; groups with collectives whose every member rank is in the folder (at least two) out of
    all such groups; ranks with another rank of their stage out of all ranks."""
    links: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    outside = 0
    members: dict[str, set[int]] = defaultdict(set)
    for rank, rd in folder.ranks.items():
        for c in rd.messages:
            if c.peer_rank is None or c.peer_rank not in folder.ranks:
                outside += 1
            elif c.direction == "send":
                links[(rank, c.peer_rank)][0] += 1
            else:
                links[(c.peer_rank, rank)][1] += 1
        for group, use in rd.groups.items():
            if use.collectives is not None:
                members[group].update(use.collective_members or ())
                members[group].add(rank)
    paired = sum(max(pair) for pair in links.values())
    groups = Compared(sum(1 for m in members.values() if len(m) > 1 and m <= set(folder.ranks)), len(members))
    stages, _ = stage_ranks(folder)
    peers = Compared(sum(len(r) for r in stages.values() if len(r) > 1), len(folder.ranks))
    return Coverage(Compared(paired, paired + outside), groups, peers)
