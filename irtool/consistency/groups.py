"""Group membership: a group name means the same ranks on every rank that uses it, and every rank
is a member of the groups it communicates in. Otherwise two ranks that believe they share a group
wait on different communicators."""
from __future__ import annotations

from ..present import cell, rank_list
from .digest import Message
from .folder import Folder, variants
from .records import Finding, Unchecked


def group_findings(folder: Folder) -> tuple[list[Finding], list[Unchecked]]:
    first: dict[str, dict[int, tuple[Message, tuple[int, ...] | None]]] = {}  # group -> rank -> its first node there
    for rank, rd in folder.ranks.items():
        for group, use in rd.groups.items():
            first.setdefault(group, {})[rank] = (use.first, use.members)
    findings: list[Finding] = []
    unchecked: list[Unchecked] = []
    for group in sorted(first):
        nodes = first[group]
        for rank, (c, members) in sorted(nodes.items()):
            if members is None and not group.endswith("_world_group"):  # the world group is every rank
                unchecked.append(Unchecked("groups", rank, f"{folder.files[rank]}:{c.line}",
                                           f"group {group}: the dump names no member ranks"))
            elif members is not None and rank not in members:
                findings.append(Finding("groups", f"group {group}", "rank not in its own group", [
                    folder.node_side(rank, c, f" on group {group} = ranks {cell(members)}, "
                                              f"which does not hold rank {rank}")]))
        known = {r: m for r, (_, m) in nodes.items() if m is not None}
        if len(set(known.values())) < 2:
            continue
        ref, by = variants(known)
        findings.append(Finding("groups", f"group {group}", "means different ranks", [
            folder.node_side(ranks[0], nodes[ranks[0]][0], f": group {group} = ranks {cell(members)}"
                             + (f" (also on ranks {rank_list(ranks[1:])})" if ranks[1:] else ""))
            for members, ranks in sorted(by.items(), key=lambda kv: (kv[0] != ref, kv[1][0]))]))
    return findings, unchecked
