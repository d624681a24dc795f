"""Group membership: a group name means the same ranks on every rank that uses it, and every rank
is a member of the groups it communicates in. Otherwise two ranks that believe they share a group
wait on different communicators."""
from __future__ import annotations

from ..parallel import CommNode
from ..present import cell, rank_list
from .folder import Folder, variants
from .records import Finding, Unchecked


def group_findings(folder: Folder) -> tuple[list[Finding], list[Unchecked]]:
    first: dict[str, dict[int, CommNode]] = {}  # group -> rank -> its first node on the group
    for rank, rf in folder.ranks.items():
        for c in rf.facts.comm:
            if c.group is not None:
                first.setdefault(c.group, {}).setdefault(rank, c)
    findings: list[Finding] = []
    unchecked: list[Unchecked] = []
    for group in sorted(first):
        nodes = first[group]
        for rank, c in sorted(nodes.items()):
            if c.group_ranks is None and not group.endswith("_world_group"):  # the world group is every rank
                unchecked.append(Unchecked("groups", rank, f"{folder.files[rank]}:{c.line}",
                                           f"group {group}: the dump names no member ranks"))
            elif c.group_ranks is not None and rank not in c.group_ranks:
                findings.append(Finding("groups", f"group {group}", "rank not in its own group", [
                    folder.node_side(rank, c, f" on group {group} = ranks {cell(c.group_ranks)}, "
                                              f"which does not hold rank {rank}")]))
        known = {r: c.group_ranks for r, c in nodes.items() if c.group_ranks is not None}
        if len(set(known.values())) < 2:
            continue
        ref, by = variants(known)
        findings.append(Finding("groups", f"group {group}", "means different ranks", [
            folder.node_side(ranks[0], nodes[ranks[0]], f": group {group} = ranks {cell(members)}"
                             + (f" (also on ranks {rank_list(ranks[1:])})" if ranks[1:] else ""))
            for members, ranks in sorted(by.items(), key=lambda kv: (kv[0] != ref, kv[1][0]))]))
    return findings, unchecked
