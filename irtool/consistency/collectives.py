"""Collectives per group: every member rank of a group issues the same sequence of collectives on it
(operator, reduce op, shape, dtype), compared in dump order. A rank that issues another collective,
or one more, waits for peers that never come."""
from __future__ import annotations

from collections import defaultdict

from ..parallel import CommNode
from ..parallel.rules import P2P
from ..present import rank_list
from .folder import Folder, variants
from .records import Finding, Side, Unchecked


def signature(c: CommNode) -> tuple:
    return (c.op, c.reduce_op, c.shape, c.dtype)


def collective_findings(folder: Folder) -> tuple[list[Finding], list[Unchecked]]:
    seqs: dict[str, dict[int, list[CommNode]]] = defaultdict(dict)
    members: dict[str, set[int]] = defaultdict(set)
    for rank, rf in folder.ranks.items():
        for c in rf.facts.comm:
            if c.group is None or c.op in P2P:
                continue
            seqs[c.group].setdefault(rank, []).append(c)
            members[c.group].update(c.group_ranks or ())
    findings: list[Finding] = []
    unchecked: list[Unchecked] = []
    for group in sorted(seqs):
        users = seqs[group]
        everyone = sorted(members[group] | set(users))
        subject = f"group {group} (ranks {rank_list(everyone)})"
        absent = [r for r in everyone if r not in folder.ranks]
        if absent:
            first = min(users)
            unchecked.append(Unchecked("collectives", first, folder.files[first],
                                       f"{subject}: {_ranks_are(absent)} not in the folder, "
                                       f"{'its' if len(absent) == 1 else 'their'} collectives are not compared"))
        present = {r: users.get(r, []) for r in everyone if r in folder.ranks}
        if len(present) < 2:
            continue
        ref, by = variants({r: tuple(signature(c) for c in seq) for r, seq in present.items()})
        base = by[ref][0]
        for variant, ranks in by.items():
            if variant == ref:
                continue
            for rank in ranks:
                findings.append(_divergence(folder, group, subject, base, present[base], rank, present[rank]))
    return findings, unchecked


def _divergence(folder: Folder, group: str, subject: str, a: int, seq_a: list[CommNode], b: int,
                seq_b: list[CommNode]) -> Finding:
    """The first place where rank b's collectives on `group` differ from rank a's."""
    i = next((k for k, (x, y) in enumerate(zip(seq_a, seq_b)) if signature(x) != signature(y)),
             min(len(seq_a), len(seq_b)))
    return Finding("collectives", subject, f"collective #{i + 1} differs",
                   [_nth(folder, group, a, seq_a, i), _nth(folder, group, b, seq_b, i)])


def _nth(folder: Folder, group: str, rank: int, seq: list[CommNode], i: int) -> Side:
    if i < len(seq):
        return folder.node_side(rank, seq[i], f" (#{i + 1} of {len(seq)} on the group)")
    if not seq:
        return folder.side(rank, None, f"no collective on group {group}")
    return folder.side(rank, None, f"no collective #{i + 1} on the group (it issues {len(seq)})")


def _ranks_are(ranks: list[int]) -> str:
    return f"rank {ranks[0]} is" if len(ranks) == 1 else f"ranks {rank_list(ranks)} are"
