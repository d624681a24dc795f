"""What the checks share: the ranks of a folder by number, and how one rank's node is told."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable, TypeVar

from ..parallel import CommNode
from ..present import DASH, cell
from .digest import Message, RankDetails, RankDigest
from .records import Side

K = TypeVar("K", bound=Hashable)


@dataclass
class Folder:
    """The digests of the ranks of one folder; `files` are relative to the folder, as findings show
    them. `load` reads the details of some ranks again (in workers), for the ranks whose hashes differ."""

    ranks: dict[int, RankDigest]
    files: dict[int, str]
    load: Callable[[list[int]], list[RankDetails]]
    _details: dict[int, RankDetails] = field(default_factory=dict)

    @classmethod
    def of(cls, path: str, digests: list[RankDigest], load: Callable[[list[int]], list[RankDetails]]) -> Folder:
        base = path if os.path.isdir(path) else os.path.dirname(path)
        known = [d for d in digests if d.rank is not None]
        return cls({d.rank: d for d in known}, {d.rank: os.path.relpath(d.path, base) for d in known}, load)

    def fetch(self, ranks: Iterable[int]) -> None:
        """Read the details of these ranks in one batch (those not read yet)."""
        missing = sorted(set(ranks) - set(self._details))
        if missing:
            self._details.update(zip(missing, self.load(missing)))

    def details(self, rank: int) -> RankDetails:
        self.fetch([rank])
        return self._details[rank]

    def side(self, rank: int, line: int | None, text: str) -> Side:
        return Side(rank, self.files[rank], line, text)

    def node_side(self, rank: int, c: CommNode | Message, extra: str = "") -> Side:
        return self.side(rank, c.line, describe(c) + extra)


def describe(c: CommNode | Message) -> str:
    """A communication node as one line: `Send micro 3 tag 3 (16, 64) Float16 to rank 4`."""
    parts = [c.op]
    if c.reduce_op:
        parts.append(c.reduce_op)
    if c.micro is not None:
        parts.append(f"micro {c.micro}")
    if c.sr_tag is not None:
        parts.append(f"tag {c.sr_tag}")
    parts += [cell(v) for v in (c.shape, c.dtype) if v is not None]  # unknown before step_parallel_end
    if c.direction == "send":
        parts.append(f"to rank {_rank(c.peer_rank)}")
    elif c.direction == "receive":
        parts.append(f"from rank {_rank(c.peer_rank)}")
    return " ".join(parts)


def _rank(rank: int | None) -> str:
    return DASH if rank is None else str(rank)  # a rank is a name: `1024`, not `1,024`


def variants(values: dict[int, K]) -> tuple[K, dict[K, list[int]]]:
    """The distinct values over ranks, each with its ranks, and the reference: the value most
    ranks share, on a tie the one of the lowest rank."""
    by: dict[K, list[int]] = {}
    for rank in sorted(values):
        by.setdefault(values[rank], []).append(rank)
    return max(by, key=lambda v: (len(by[v]), -by[v][0])), by
