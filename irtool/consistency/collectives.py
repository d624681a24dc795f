"""Collectives per group: every member rank of a group issues the same sequence of collectives on it
(operator, reduce op, shape, dtype), compared in dump order. A rank that issues another collective,
or one more, waits for peers that never come."""
from __future__ import annotations

from collections import defaultdict

from ..present import rank_list
from .digest import Message, signature
from .folder import Folder, variants
from .records import Finding, Side, Unchecked


def collective_findings(folder: Folder) -> tuple[list[Finding], list[Unchecked]]:
    """Ranks are compared by the hash of their sequence on each group; the place where a rank's
    sequence departs from the reference's is found in the two ranks' details, read again."""
    seqs: dict[str, dict[int, tuple[bytes, int]]] = defaultdict(dict)  # group -> rank -> (hash, length)
    members: dict[str, set[int]] = defaultdict(set)
    for rank, rd in folder.ranks.items():
        for group, use in rd.groups.items():
            if use.collectives is not None:
                seqs[group][rank] = (use.collectives, use.count)
                members[group].update(use.collective_members or ())
    findings: list[Finding] = []
    unchecked: list[Unchecked] = []
    none = (b"", 0)  # a member rank with no collective on the group
    differ: list[tuple[str, str, int, int]] = []
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
        present = {r: users.get(r, none) for r in everyone if r in folder.ranks}
        if len(present) < 2:
            continue
        ref, by = variants(present)
        base = by[ref][0]
        differ += [(group, subject, base, rank) for variant, ranks in by.items() if variant != ref for rank in ranks]
    folder.fetch({r for _, _, a, b in differ for r in (a, b)})
    for group, subject, a, b in differ:
        findings.append(_divergence(folder, group, subject, a, folder.details(a).collectives.get(group, []), b,
                                    folder.details(b).collectives.get(group, [])))
    return findings, unchecked


def _divergence(folder: Folder, group: str, subject: str, a: int, seq_a: list[Message], b: int,
                seq_b: list[Message]) -> Finding:
    """The first place where rank b's collectives on `group` differ from rank a's."""
    i = next((k for k, (x, y) in enumerate(zip(seq_a, seq_b)) if signature(x) != signature(y)),
             min(len(seq_a), len(seq_b)))
    return Finding("collectives", subject, f"collective #{i + 1} differs",
                   [_nth(folder, group, a, seq_a, i), _nth(folder, group, b, seq_b, i)])


def _nth(folder: Folder, group: str, rank: int, seq: list[Message], i: int) -> Side:
    if i < len(seq):
        return folder.node_side(rank, seq[i], f" (#{i + 1} of {len(seq)} on the group)")
    if not seq:
        return folder.side(rank, None, f"no collective on group {group}")
    return folder.side(rank, None, f"no collective #{i + 1} on the group (it issues {len(seq)})")


def _ranks_are(ranks: list[int]) -> str:
    return f"rank {ranks[0]} is" if len(ranks) == 1 else f"ranks {rank_list(ranks)} are"
