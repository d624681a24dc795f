"""Which Receive takes which Send (docs/check.md, "Pairing rules"): the one pairing of point-to-point
Send/Receive that every command uses (check, `render --pipeline`, the view's pipeline graph, the
summary headline).

A Send on rank s to peer rank r and a Receive on r from s are one link (s, r). Within a link, Sends
and Receives are paired by `sr_tag` (MindSpore gives a Send and its Receive the same tag), in dump
order within a tag. The peer is a global rank (parallel/peer.py), so groups of any size pair alike:
a 2-rank p2p group, a lazy-inline group of one rank per stage (pipeline_4stage_lazy_8p: `src_rank`
an index into (0, 2, 4, 6)), the world group of an inference pipeline. Micro batch and chunk/segment
are not part of the key: they ride on the records paired (labels, mismatch findings). A wrap of an
interleaved pipeline pairs chunk 0 of the last stage with chunk 1 of stage 0 under one tag.

`PairFold` pairs ranks as they arrive (in any order): a link is paired once both its ends are there,
then let go, so a thousand ranks hold only the links still waiting for their other end.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Generic, Iterable, NamedTuple, Protocol, TypeVar

from .records import CommNode

Link = tuple[int, int]  # (sender rank, receiver rank)


class Hop(Protocol):
    """What the pairing reads of a Send/Receive record (`CommNode`, check's `Message`, ...)."""

    @property
    def direction(self) -> str | None: ...
    @property
    def peer_rank(self) -> int | None: ...
    @property
    def sr_tag(self) -> int | None: ...


H = TypeVar("H", bound=Hop)


class P2P(NamedTuple):
    """A Send/Receive as the pairing reads it, small enough to travel between processes (a folder's
    ranks are read in workers)."""

    direction: str | None
    peer_rank: int | None
    sr_tag: int | None

    @classmethod
    def of(cls, c: CommNode) -> P2P:
        return cls(c.direction, c.peer_rank, c.sr_tag)


@dataclass
class LinkPairs(Generic[H]):
    """One link's Sends and Receives (each in dump order), paired: `pairs` (send, receive) in the
    Sends' order, and those left without a partner."""

    link: Link
    sends: list[H]
    receives: list[H]
    pairs: list[tuple[H, H]]
    lone_sends: list[H]
    lone_receives: list[H]


def link_of(rank: int, h: Hop) -> Link | None:
    """(sender, receiver) of a Send/Receive on `rank`; None when the dump names no peer rank."""
    if h.peer_rank is None or h.direction is None:
        return None
    return (rank, h.peer_rank) if h.direction == "send" else (h.peer_rank, rank)


def pair_link(link: Link, sends: list[H], receives: list[H]) -> LinkPairs[H]:
    """Pair one link's Sends and Receives (each in dump order) by `sr_tag`, in order within a tag."""
    by_tag: dict[int | None, list[H]] = defaultdict(list)
    for r in receives:
        by_tag[r.sr_tag].append(r)
    taken: dict[int | None, int] = defaultdict(int)
    pairs: list[tuple[H, H]] = []
    lone: list[H] = []
    for s in sends:
        k = taken[s.sr_tag]
        if k < len(by_tag[s.sr_tag]):
            pairs.append((s, by_tag[s.sr_tag][k]))
            taken[s.sr_tag] += 1
        else:
            lone.append(s)
    return LinkPairs(link, sends, receives, pairs, lone, [r for tag, rs in by_tag.items() for r in rs[taken[tag]:]])


@dataclass
class PairFold(Generic[H]):
    """Pair the Send/Receive of ranks added one by one (`add`, any rank order, each rank once): each
    link is paired (`pair_link`) as soon as both its ends have been added, and returned then."""

    arrived: set[int] = field(default_factory=set)
    no_peer: list[tuple[int, H]] = field(default_factory=list)  # (rank, hop) naming no peer rank
    _pending: dict[Link, tuple[list[H], list[H]]] = field(default_factory=dict)  # an end not added yet
    _waiting: dict[int, set[Link]] = field(default_factory=lambda: defaultdict(set))  # rank -> its links

    def add(self, rank: int, hops: Iterable[H]) -> list[LinkPairs[H]]:
        """Add one rank's Send/Receive (in dump order); the links now complete, paired, by link."""
        self.arrived.add(rank)
        complete: set[Link] = set(self._waiting.pop(rank, ()))
        for h in hops:
            link = link_of(rank, h)
            if link is None:
                self.no_peer.append((rank, h))
                continue
            self._pending.setdefault(link, ([], []))[0 if h.direction == "send" else 1].append(h)
            peer = link[1] if link[0] == rank else link[0]
            if peer in self.arrived:
                complete.add(link)
            else:
                self._waiting[peer].add(link)
        out = []
        for link in sorted(complete):
            sends, receives = self._pending.pop(link, ([], []))
            if sends or receives:
                out.append(pair_link(link, sends, receives))
        return out

    def pending(self) -> dict[Link, tuple[list[H], list[H]]]:
        """The links one end of which was never added: (sends, receives) of the end that was."""
        return dict(self._pending)


@dataclass
class Pairs(Generic[H]):
    """The pairing of some ranks' Send/Receive (`pair_ranks`): each link whose ends are both among them."""

    links: list[LinkPairs[H]]

    def partner(self) -> dict[int, H]:
        """`id` of each paired record -> its partner."""
        out: dict[int, H] = {}
        for lp in self.links:
            for s, r in lp.pairs:
                out[id(s)], out[id(r)] = r, s
        return out

    @property
    def paired(self) -> int:
        return sum(len(lp.pairs) for lp in self.links)


def pair_ranks(hops: dict[int, list[H]]) -> Pairs[H]:
    """Pair the Send/Receive of these ranks (rank -> its Send/Receive in dump order)."""
    fold: PairFold[H] = PairFold()
    return Pairs(sorted((lp for rank in sorted(hops) for lp in fold.add(rank, hops[rank])), key=lambda lp: lp.link))


@dataclass
class Unpaired:
    """What a folder's pairing leaves without a partner, counted by (sender stage, receiver stage), and
    the Send/Receive whose peer rank was not read (not in the folder, or unreadable)."""

    sends: dict[tuple[int | None, int | None], int] = field(default_factory=dict)  # Sends without Receive
    receives: dict[tuple[int | None, int | None], int] = field(default_factory=dict)  # Receives without Send
    peer_not_read: int = 0

    def as_dict(self) -> dict[str, Any]:
        def rows(counts: dict[tuple[int | None, int | None], int]) -> list[dict[str, Any]]:
            return [{"from_stage": a, "to_stage": b, "count": n} for (a, b), n in sorted(counts.items(), key=str)]

        return {"sends_without_receive": rows(self.sends), "receives_without_send": rows(self.receives),
                "peer_not_read": self.peer_not_read}


class UnpairedFold:
    """`Unpaired` of a folder's ranks added one by one (`add`), the pairing folded (`PairFold`): a
    thousand ranks hold only the links waiting for their other end, and each rank's stage."""

    def __init__(self) -> None:
        self.fold: PairFold[P2P] = PairFold()
        self.stages: dict[int, int | None] = {}
        self.counted: set[int] = set()  # the ranks shown: a link is counted when one of its ends is
        self.out = Unpaired()

    def add(self, rank: int, stage: int | None, hops: list[P2P], counted: bool = True) -> None:
        self.stages[rank] = stage
        if counted:
            self.counted.add(rank)
        for lp in self.fold.add(rank, hops):
            src, dst = lp.link
            key = (self.stages.get(src), self.stages.get(dst))
            if src not in self.counted and dst not in self.counted:
                continue
            if lp.lone_sends:
                self.out.sends[key] = self.out.sends.get(key, 0) + len(lp.lone_sends)
            if lp.lone_receives:
                self.out.receives[key] = self.out.receives.get(key, 0) + len(lp.lone_receives)

    def result(self) -> Unpaired:
        self.out.peer_not_read = sum(len(sends) * (src in self.counted) + len(receives) * (dst in self.counted)
                                     for (src, dst), (sends, receives) in self.fold.pending().items())
        return self.out
