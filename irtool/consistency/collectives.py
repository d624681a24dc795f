"""Collectives per group: every member rank of a group issues the same sequence of collectives on it
(operator, reduce op, shape, dtype), compared in dump order. A rank that issues another collective,
or one more, waits for peers that never come."""
from __future__ import annotations

from collections import defaultdict

from ..present import rank_list
from .digest import Message, RankDigest, signature
from .folder import Folder, reference
from .records import Compared, Finding, Side, Unchecked

_BATCH = 12  # findings whose ranks' details are read in one batch


class Collectives:
    """The collectives check, folded: per group the ranks of each distinct sequence (its hash and
    length) and the member ranks its collectives name."""

    def __init__(self) -> None:
        self.seqs: dict[str, dict[tuple[bytes, int], list[int]]] = defaultdict(dict)
        self.members: dict[str, set[int]] = defaultdict(set)
        self.users: dict[str, set[int]] = defaultdict(set)

    def add(self, rank: int, d: RankDigest) -> None:
        for group, use in d.groups.items():
            if use.collectives is not None:
                self.seqs[group].setdefault((use.collectives, use.count), []).append(rank)
                self.members[group].update(use.collective_members or ())
                self.users[group].add(rank)

    def finish(self, folder: Folder) -> Compared:
        """The findings and what was not compared; the coverage of groups: groups with collectives
        whose every member rank is in the folder (at least two) out of all such groups. Ranks are
        compared by the hash of their sequence on each group; the place where a rank's sequence
        departs from the reference's is found in the two ranks' details, read again."""
        none = (b"", 0)  # a member rank with no collective on the group
        differ: list[tuple[str, str, int, int]] = []
        for group in sorted(self.seqs):
            users = self.users[group]
            everyone = sorted(self.members[group] | users)
            subject = f"group {group} (ranks {rank_list(everyone)})"
            absent = [r for r in everyone if r not in folder.stages]
            if absent:
                first = min(users)
                why: dict[str, list[int]] = {}  # not in the folder, or unreadable (with its error)
                for r in absent:
                    why.setdefault(folder.not_read(r), []).append(r)
                folder.unchecked.add((2, group), Unchecked(
                    "collectives", first, folder.files[first],
                    f"{subject}: {'; '.join(f'{_ranks_are(rs)} {w}' for w, rs in why.items())}, "
                    f"{'its' if len(absent) == 1 else 'their'} collectives are not compared"))
            idle = [r for r in everyone if r in folder.stages and r not in users]
            if len(everyone) - len(absent) < 2:
                continue
            ref, by = reference({**self.seqs[group], **({none: idle} if idle else {})})
            base = by[ref][0]
            differ += [(group, subject, base, rank) for variant, ranks in by.items() if variant != ref for rank in ranks]
        for i in range(0, len(differ), _BATCH):  # the details of a batch of ranks at a time
            batch = differ[i:i + _BATCH]
            folder.fetch({r for _, _, a, b in batch for r in (a, b)})
            for k, (group, subject, a, b) in enumerate(batch, i):
                folder.findings.add((1, k), _divergence(folder, group, subject, a,
                                                        folder.details(a).collectives.get(group, []), b,
                                                        folder.details(b).collectives.get(group, [])))
        members = {g: self.members[g] | self.users[g] for g in self.seqs}
        return Compared(sum(1 for m in members.values() if len(m) > 1 and all(r in folder.stages for r in m)),
                        len(members))


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
