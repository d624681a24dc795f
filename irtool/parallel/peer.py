"""The peer of a Send/Receive as a global rank (docs/parallel.md §7), decided here for every command.

MindSpore prints the peer as `dst_global_rank` / `src_global_rank` when it knows it. Without them
(older versions, folded pipelines) `dest_rank` / `src_rank` is an index into the communicator's
members: on the world group the global rank itself, on a smaller group (a p2p group of two) the
position of the peer in the group's ascending member list.
"""
from __future__ import annotations

import os
import re
from dataclasses import replace

from .records import CommNode

_RANK_IN_PATH = re.compile(r"(?:^|[/\\])rank_(\d+)(?:[/\\]|$)")


def rank_of(path: str) -> int | None:
    """The rank from a `rank_N` folder in the path, else None."""
    found = _RANK_IN_PATH.findall(os.path.abspath(path))
    return int(found[-1]) if found else None


def global_peer(c: CommNode, rank: int | None) -> CommNode:
    """`c` with its peer as a global rank, on rank `rank` (None when unknown). A `dest_rank` /
    `src_rank` on a group smaller than the world is global only if it names another member; a peer
    outside the group, or the rank itself, is read as the index. Applying it twice changes nothing."""
    members, peer = c.group_ranks, c.peer_rank
    if (peer is None or not members or (c.group or "").endswith("_world_group")
            or any(k.endswith("_global_rank") for k in c.rank_attrs)):
        return c
    if (peer not in members or peer == rank) and 0 <= peer < len(members):
        return replace(c, peer_rank=members[peer])
    return c
