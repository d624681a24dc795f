"""Group membership: a group name means the same ranks on every rank that uses it, and every rank
is a member of the groups it communicates in. Otherwise two ranks that believe they share a group
wait on different communicators."""
from __future__ import annotations

from collections import defaultdict

from ..present import cell, rank_list
from .digest import RankDigest
from .folder import Folder, reference
from .records import Finding, Unchecked


class Membership:
    """The membership check, folded: a rank's own groups are checked as it arrives; per group, the
    ranks of each member list (and the first node of the first of them) wait for the end."""

    def __init__(self) -> None:
        # group -> member ranks as a node names them -> [the ranks naming them, the lowest, its node]
        self.meanings: dict[str, dict[tuple[int, ...], list]] = defaultdict(dict)

    def add(self, folder: Folder, rank: int, d: RankDigest) -> None:
        for group, use in d.groups.items():
            c, members = use.first, use.members
            if members is None and not group.endswith("_world_group"):  # the world group is every rank
                folder.unchecked.add((3, group, rank), Unchecked("groups", rank, f"{folder.files[rank]}:{c.line}",
                                                                 f"group {group}: the dump names no member ranks"))
            elif members is not None and rank not in members:
                folder.findings.add((2, group, 0, rank), Finding("groups", f"group {group}", "rank not in its own group", [
                    folder.node_side(rank, c, f" on group {group} = ranks {cell(members)}, "
                                              f"which does not hold rank {rank}")]))
            if members is not None:
                meaning = self.meanings[group].setdefault(members, [[], rank, c])
                meaning[0].append(rank)
                if rank < meaning[1]:
                    meaning[1:] = [rank, c]

    def finish(self, folder: Folder) -> None:
        for group, meanings in self.meanings.items():
            if len(meanings) < 2:
                continue
            ref, by = reference({members: ranks for members, (ranks, *_) in meanings.items()})
            folder.findings.add((2, group, 1), Finding("groups", f"group {group}", "means different ranks", [
                folder.node_side(ranks[0], meanings[members][2], f": group {group} = ranks {cell(members)}"
                                 + (f" (also on ranks {rank_list(ranks[1:])})" if ranks[1:] else ""))
                for members, ranks in sorted(by.items(), key=lambda kv: (kv[0] != ref, kv[1][0]))]))
        self.meanings.clear()
