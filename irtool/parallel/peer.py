"""The peer of a Send/Receive as a global rank (docs/parallel.md §7), decided here for every command.

MindSpore prints the peer as `dst_global_rank` / `src_global_rank` when it knows it. Without them
(older versions, folded pipelines) `dest_rank` / `src_rank` is an index into the communicator's
members: on the world group the global rank itself, on a smaller group (a p2p group of two) the
position of the peer in the group's ascending member list. When the dump prints no member list,
the members of a 2-rank group come from its name (`group_members`); when they cannot be known, the
peer is unknown (None), never the index read as a rank.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import replace

from .records import CommNode

_RANK_IN_PATH = re.compile(r"(?:^|[/\\])rank_(\d+)(?:[/\\]|$)")
# `2-16453000547691086251`; lazy-inline pipelines add `Send` to the name of the p2p group (§6)
_HASHED = re.compile(r"(\d+)-(\d+)(?:Send)?")

_MASK = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_SEED = 0xC70F6907
# How far the other member of a 2-rank group is looked for: global ranks below this, given the own
# rank (each try is one hash of a few bytes, ~5 µs); without the own rank, pairs of ranks below
# _PAIR_LIMIT. A group not found within these is left unknown.
_RANK_LIMIT = 1 << 14
_PAIR_LIMIT = 128


def rank_of(path: str) -> int | None:
    """The rank from a `rank_N` folder in the path, else None."""
    found = _RANK_IN_PATH.findall(os.path.abspath(path))
    return int(found[-1]) if found else None


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def std_hash(text: str) -> int:
    """libstdc++'s `std::hash<std::string>` on 64 bits (`_Hash_bytes`, seed 0xc70f6907)."""
    data = text.encode()
    n = len(data)
    aligned = n & ~7
    h = (_SEED ^ (n * _MUL)) & _MASK
    for i in range(0, aligned, 8):
        word = (_shift_mix((int.from_bytes(data[i:i + 8], "little") * _MUL) & _MASK) * _MUL) & _MASK
        h = ((h ^ word) * _MUL) & _MASK
    if n & 7:
        h = ((h ^ int.from_bytes(data[aligned:], "little")) * _MUL) & _MASK
    return _shift_mix((_shift_mix(h) * _MUL) & _MASK)


# Members found per group name (a fact of the name, whichever rank asked), and how often a name was
# searched in vain: a name not found twice is not searched again (a benchmark reusing one rank's file under
# many rank numbers would search it once per rank otherwise).
_FOUND: dict[str, tuple[int, int]] = {}
_MISSES: dict[str, int] = {}


def group_members(name: str | None, rank: int | None) -> tuple[int, ...] | None:
    """The ascending members of a 2-rank group MindSpore created, from its name alone.

    MindSpore names a group it creates `<size>-<std::hash of its ascending ranks joined by '-'>`
    (`DeviceManager::GenerateGroupNameByRanks`; pipeline_folded_8p rank_0 sends on
    `2-16453000547691086251`, which is the hash of "0-4"). A 64-bit hash match is the pair; the other
    member is looked for next to `rank` (the own rank, when known), then among pairs of small ranks.
    None when the name is not of that form, the group is larger than 2, or no candidate matches."""
    m = _HASHED.fullmatch(name or "")
    if name is None or m is None or m.group(1) != "2":
        return None
    if name in _FOUND:
        return _FOUND[name]
    if _MISSES.get(name, 0) >= 2:
        return None
    want = int(m.group(2))
    found = None
    if rank is not None:
        found = next(((min(rank, q), max(rank, q)) for q in range(_RANK_LIMIT)
                      if q != rank and std_hash(f"{min(rank, q)}-{max(rank, q)}") == want), None)
    if found is None:
        found = next(((a, b) for b in range(1, _PAIR_LIMIT) for a in range(b) if std_hash(f"{a}-{b}") == want), None)
    if found is None:
        _MISSES[name] = _MISSES.get(name, 0) + 1
        return None
    _FOUND[name] = found
    return found


_SHA = re.compile(r"[0-9a-f]{48}")
_STRIDES = 256  # strides tried for a group's arithmetic progression of ranks


def hashed_members(name: str, size: int, rank: int | None, within: tuple[int, ...] = ()) -> tuple[int, ...] | None:
    """The ranks a group name is the hash of, for a group of `size` ranks holding `rank` (or, without
    it, ranks among `within`): MindSpore's `<size>-<std::hash of "a-b-...">` and MindFormers' first 48
    hex digits of the sha256 of "a-b-..." (moev3.py `_get_ep_group_name`; mindformers_moe_dp2mp2pp2_ep2
    rank 0's expert group `389f7fbc...` is that of "0-1"). Tried: the arithmetic progressions of
    `size` ranks holding the rank (MindFormers' and MindSpore's groups are blocks or strides of the
    device matrix); None when none matches."""
    m = _HASHED.fullmatch(name)
    std = int(m.group(2)) if m and int(m.group(1)) == size else None
    if std is None and not _SHA.fullmatch(name):
        return None
    anchors = [rank] if rank is not None else sorted(set(within))
    for r in anchors:
        for stride in range(1, _STRIDES + 1):
            for j in range(size):
                start = r - j * stride
                if start < 0:
                    break
                ranks = tuple(range(start, start + size * stride, stride))
                text = "-".join(map(str, ranks))
                if (std is not None and std_hash(text) == std) or \
                        (std is None and hashlib.sha256(text.encode()).hexdigest()[:48] == name):
                    return ranks
    return None


def global_peer(c: CommNode, rank: int | None) -> CommNode:
    """`c` with its peer as a global rank, on rank `rank` (None when unknown), and the members of a
    2-rank group the dump does not list (`group_members`).

    A p2p group's members are taken in ascending order, the order its index counts in: a folded
    pipeline prints `group_rank_ids: (4, 0)` on rank 0 and `(0, 4)` on rank 4 for one group, and
    `dest_rank: I64(1)` on rank 0 names rank 4. A `dest_rank` / `src_rank` on a group smaller than
    the world is global only if it names another member; a peer outside the group, or the rank
    itself, is read as the index. A group whose members are neither printed nor known from its name
    leaves the peer unknown. Applying it twice changes nothing."""
    members, peer = c.group_ranks, c.peer_rank
    named = None if members else group_members(c.group, rank)
    if named:
        c = replace(c, group_ranks=named)
    if (peer is None or (c.group or "").endswith("_world_group")
            or any(k.endswith("_global_rank") for k in c.rank_attrs)):
        return c
    if named:  # the members come from the name: the printed peer is an index, never a global rank
        return replace(c, peer_rank=named[peer] if 0 <= peer < len(named) else None)
    if not members:
        # a group without members printed or named: the index names nobody we know (a group with no name
        # is the world, where the index is the global rank)
        return c if c.group is None else replace(c, peer_rank=None)
    members = tuple(sorted(members))
    if (peer not in members or peer == rank) and 0 <= peer < len(members):
        peer = members[peer]
    return replace(c, group_ranks=members, peer_rank=peer)
