"""Communication groups: name -> member ranks (docs/parallel.md §6)."""
from __future__ import annotations

import re
from typing import Any, Iterable

from ..ir import Node
from .peer import hashed_members
from .records import Group

# the gathers (rules.py reads these: it imports this module, so they are stated here)
STEP_GATHERS = frozenset({"_MicroStepAllGather", "_MiniStepAllGather"})
GATHERS = frozenset({"AllGather", "AllGatherV", "_HostAllGather", "InnerCommAllGather"}) | STEP_GATHERS


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


def _said_sizes(n: Node) -> dict[str, int]:
    """The group sizes one node states apart from its member list: `rank_size` (the communicator the
    kernel is built for), `split_count` (an all-to-all's pieces), and the ratio of its tensors (an
    AllGather's output over its input, a ReduceScatter's input over its output, first dimension)."""
    pa = n.primitive_attrs
    out: dict[str, int] = {}
    for key in ("rank_size", "split_count"):
        v = pa.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            out[key] = v
    ins, o = n.input_types, n.output_type
    a = ins[0].shape if ins else None
    b = o.shape if o is not None else None
    if n.op in ("ReduceScatter", "ReduceScatterV"):
        a, b = b, a
    if n.op in GATHERS | {"ReduceScatter", "ReduceScatterV"} and isinstance(a, tuple) and isinstance(b, tuple) \
            and a and b and len(a) == len(b) and isinstance(a[0], int) and isinstance(b[0], int) and a[0] > 0 \
            and b[0] % a[0] == 0 and a[1:] == b[1:]:
        out["shapes"] = b[0] // a[0]
    return out


def _decide(name: str, listed: tuple[int, ...] | None, said: list[tuple[Node, dict[str, int]]],
            rank: int | None) -> tuple[tuple[int, ...] | None, int | None, str | None]:
    """(members, size, which evidence won) of one group. The printed list wins unless the sizes the
    nodes state otherwise (`rank_size`, `split_count`, tensor shapes) agree on another: MindSpore
    prints the world's ranks as `group_rank_ids` for a group it did not create itself (a name
    `create_group` made: DeviceManager::FindRankListByHashName falls back to the world group). Then
    the size is theirs and the members are the ranks the name is the hash of (`peer.hashed_members`),
    else unknown."""
    sizes = {v for _, d in said for v in d.values()}
    if listed is None or not sizes or len(listed) in sizes:
        return listed, len(listed) if listed else None, None
    if len(sizes) > 1:
        return None, None, (f"{len(listed)} ranks listed; the nodes state sizes "
                            f"{', '.join(map(str, sorted(sizes)))}: members and size unknown")
    size = sizes.pop()
    node, d = next((n, d) for n, d in said if d)
    why = ", ".join(f"{k} {v}" if k != "shapes" else f"{node.op} {_shape_text(node)}" for k, v in d.items())
    members = hashed_members(name, size, rank, listed)
    told = f"members {', '.join(map(str, members))} from the name" if members else "members unknown"
    return members, size, (f"{len(listed)} ranks listed (group_rank_ids), but line {node.line} says {size} ({why}): "
                           f"size {size}, {told}")


def _shape_text(n: Node) -> str:
    ins, o = n.input_types, n.output_type
    a = ins[0].shape if ins else None
    return f"{a} -> {o.shape if o is not None else None}".replace(",)", ")")


def group_table(nodes: Iterable[Node], rank: int | None = None, silent: Iterable[Node] = ()) -> dict[str, Group]:
    """Groups named by the communication nodes, with the first member list any node gives, the size
    from the members, else from the `N-` prefix of the group name; where the list contradicts the
    sizes the nodes state, decided by `_decide` (docs/parallel.md §6). The `silent` nodes (moving no
    data) are not the group's nodes, but the size one states is its group's when none of those does
    (MindFormers' one-rank expert group: its AlltoAll says `rank_size: I64(1)`, its AlltoAllV nothing)."""
    counts: dict[str, int] = {}
    members: dict[str, tuple[int, ...] | None] = {}
    said: dict[str, list[tuple[Node, dict[str, int]]]] = {}
    for n in nodes:
        pa = n.primitive_attrs
        name = group_name(pa)
        if name is None:
            continue
        counts[name] = counts.get(name, 0) + 1
        if members.get(name) is None:
            members[name] = ranks_of(pa)
        said.setdefault(name, []).append((n, _said_sizes(n)))
    for n in silent:
        name = group_name(n.primitive_attrs)
        if name in said and not any(d for _, d in said[name]) and (d := _said_sizes(n)):
            said[name].append((n, d))
    table = {}
    for name, count in counts.items():
        ranks, size, note = _decide(name, members[name], said[name], rank)
        m = re.match(r"^(\d+)-", name)
        size = size if size is not None else (len(ranks) if ranks else (int(m.group(1)) if m and not note else None))
        table[name] = Group(name=name, ranks=ranks, size=size, comm_nodes=count, evidence=note)
    return table
