"""Communication groups: name -> member ranks (docs/parallel.md §6)."""
from __future__ import annotations

import re
from typing import Any, Iterable

from .records import Group


def ranks_of(pa: dict[str, Any]) -> tuple[int, ...] | None:
    """Member ranks a node's primitive attributes give (`group_rank_ids`, `rank_list`, `group_ranks`)."""
    for key in ("group_rank_ids", "rank_list"):
        v = pa.get(key)
        if isinstance(v, (tuple, list)) and all(isinstance(x, int) for x in v):
            return tuple(v)
        if isinstance(v, int):
            return (v,)
    v = pa.get("group_ranks")
    if isinstance(v, str) and re.fullmatch(r"\d+(-\d+)*", v):
        return tuple(int(x) for x in v.split("-"))
    return None


def group_name(pa: dict[str, Any]) -> str | None:
    """The group a node names; None for none or an empty name (never a blank group)."""
    name = pa.get("group")
    return name if isinstance(name, str) and name else None


def group_table(prim_attrs: Iterable[dict[str, Any]]) -> dict[str, Group]:
    """Groups named by the communication nodes' primitive attributes, with the first member list
    any node gives; the size from the members, else from the `N-` prefix of the group name."""
    counts: dict[str, int] = {}
    members: dict[str, tuple[int, ...] | None] = {}
    for pa in prim_attrs:
        name = group_name(pa)
        if name is None:
            continue
        counts[name] = counts.get(name, 0) + 1
        if members.get(name) is None:
            members[name] = ranks_of(pa)
    table = {}
    for name, count in counts.items():
        ranks = members[name]
        m = re.match(r"^(\d+)-", name)
        size = len(ranks) if ranks else (int(m.group(1)) if m else None)
        table[name] = Group(name=name, ranks=ranks, size=size, comm_nodes=count)
    return table
