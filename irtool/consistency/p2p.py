"""Point-to-point pairing: every Send on rank r to rank p has a Receive on p from r with the same
tag (`sr_tag`), micro batch, shape and dtype, in the same relative order, and the other way round.
A Send whose Receive is missing (or that waits on a different shape) hangs both ranks."""
from __future__ import annotations

from collections import defaultdict

from .digest import Message
from .folder import Folder, describe
from .records import Finding, Unchecked

Link = tuple[int, int]  # (sender, receiver)


def p2p_findings(folder: Folder) -> tuple[list[Finding], list[Unchecked]]:
    sends: dict[Link, list[Message]] = defaultdict(list)
    receives: dict[Link, list[Message]] = defaultdict(list)
    unchecked: list[Unchecked] = []
    outside: dict[tuple[int, str, int], int] = defaultdict(int)
    for rank, rd in folder.ranks.items():
        for c in rd.messages:
            if c.peer_rank is None:
                unchecked.append(Unchecked("p2p", rank, f"{folder.files[rank]}:{c.line}",
                                           f"{describe(c)}: the dump names no peer rank"))
            elif c.peer_rank not in folder.ranks:
                outside[(rank, c.direction, c.peer_rank)] += 1
            elif c.direction == "send":
                sends[(rank, c.peer_rank)].append(c)
            else:
                receives[(c.peer_rank, rank)].append(c)
    for (rank, direction, peer), n in sorted(outside.items()):
        verb = "sends to" if direction == "send" else "receives from"
        what = "Send" if direction == "send" else "Receive"
        unchecked.append(Unchecked("p2p", rank, folder.files[rank],
                                   f"rank {rank} {verb} rank {peer}, which is not in the folder ({n} {what})"))
    ordered = all(rd.ordered for rd in folder.ranks.values())
    if not ordered and (sends or receives):
        unchecked.append(Unchecked("p2p", None, "every rank", "the order of Sends and Receives is not compared: this pass "
                                                    "prints them before MindSpore fixes the execution order"))
    findings: list[Finding] = []
    for link in sorted(set(sends) | set(receives)):
        findings += _link(folder, link, sends[link], receives[link], ordered)
    return findings, unchecked


def _link(folder: Folder, link: Link, sends: list[Message], receives: list[Message], ordered: bool) -> list[Finding]:
    """Pairs a link's Sends and Receives by tag (in dump order within a tag), then compares them."""
    src, dst = link
    subject = f"rank {src} -> rank {dst}"
    by_tag: dict[int | None, list[Message]] = defaultdict(list)
    for r in receives:
        by_tag[r.sr_tag].append(r)
    taken: dict[int | None, int] = defaultdict(int)
    pairs: list[tuple[Message, Message]] = []
    out: list[Finding] = []
    for s in sends:
        k = taken[s.sr_tag]
        if k < len(by_tag[s.sr_tag]):
            pairs.append((s, by_tag[s.sr_tag][k]))
            taken[s.sr_tag] += 1
        else:
            out.append(Finding("p2p", subject, "Send without Receive", [
                folder.node_side(src, s),
                folder.side(dst, None, f"no Receive from rank {src}{_tag_micro(s)}")]))
    for s, r in pairs:
        differ = [name for name in ("micro", "shape", "dtype") if getattr(s, name) != getattr(r, name)]
        if differ:
            out.append(Finding("p2p", subject, f"{' and '.join(differ)} differ{'s' if len(differ) == 1 else ''}",
                               [folder.node_side(src, s), folder.node_side(dst, r)]))
    for tag, rs in by_tag.items():
        for r in rs[taken[tag]:]:
            out.append(Finding("p2p", subject, "Receive without Send", [
                folder.side(src, None, f"no Send to rank {dst}{_tag_micro(r)}"),
                folder.node_side(dst, r)]))
    # Relative order: Receives taken in the order of their Sends must also be in dump order.
    at = {id(r): i for i, r in enumerate(receives)}
    for (s0, r0), (s1, r1) in zip(pairs, pairs[1:]) if ordered else ():
        if at[id(r1)] < at[id(r0)]:
            out.append(Finding("p2p", subject, "order differs", [
                folder.node_side(src, s0, " before"), folder.node_side(src, s1),
                folder.node_side(dst, r1, " before"), folder.node_side(dst, r0)]))
            break
    return out


def _tag_micro(c: Message) -> str:
    parts = ([f" with tag {c.sr_tag}"] if c.sr_tag is not None else []) + \
            ([f" for micro {c.micro}"] if c.micro is not None else [])
    return "".join(parts)
