"""What the checks share: the ranks of a folder by number, and how one rank's node is told."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Hashable, TypeVar

from ..dumpdir import RankFacts
from ..parallel import CommNode
from ..present import DASH, cell
from .records import Side

K = TypeVar("K", bound=Hashable)


@dataclass
class Folder:
    """The analysed ranks of one folder; `files` are relative to the folder, as findings show them."""

    ranks: dict[int, RankFacts]
    files: dict[int, str]

    @classmethod
    def of(cls, path: str, facts: list[RankFacts]) -> Folder:
        base = path if os.path.isdir(path) else os.path.dirname(path)
        known = [f for f in facts if f.rank is not None]
        return cls({f.rank: f for f in known}, {f.rank: os.path.relpath(f.path, base) for f in known})

    def side(self, rank: int, line: int | None, text: str) -> Side:
        return Side(rank, self.files[rank], line, text)

    def node_side(self, rank: int, c: CommNode, extra: str = "") -> Side:
        return self.side(rank, c.line, describe(c) + extra)


def describe(c: CommNode) -> str:
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
