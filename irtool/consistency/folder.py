"""What the checks share: the ranks of a folder as they arrive, how one rank's node is told, and
where findings are kept until they are shown.

The ranks' digests are folded one by one (`Folder.add`, in rank order): each check keeps only what
the comparison needs (per link, group or stage, and the rank numbers of each variant), never a
digest; findings and what could not be checked go to a temporary file (`spill.Staged`) with the key
they are shown in."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable, TypeVar

from ..dumpdir import Unreadable
from ..parallel import CommNode
from ..present import DASH, cell
from ..selection import not_read
from .digest import Message, RankDetails
from .records import Finding, Side, Unchecked
from .staged import Staged

K = TypeVar("K", bound=Hashable)

_HELD = 32  # ranks' details held at once (they are read again in batches of at most this many)


@dataclass
class Folder:
    """The ranks of one folder seen so far: `stages` (rank -> stage, the ranks that arrived) and
    `files` (relative to the folder, as findings show them). `load` reads the details of some ranks
    again (in workers), for the ranks whose hashes differ; at most `_HELD` are kept. `unreadable`:
    the ranks the folder holds that could not be read (the selection's list, complete once every
    rank has arrived)."""

    base: str
    load: Callable[[list[int]], list[RankDetails]]
    stages: dict[int, int | None] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)
    findings: Staged[Finding] = field(default_factory=Staged)
    unchecked: Staged[Unchecked] = field(default_factory=Staged)
    unreadable: list[Unreadable] = field(default_factory=list)
    _details: dict[int, RankDetails] = field(default_factory=dict)

    @classmethod
    def of(cls, path: str, load: Callable[[list[int]], list[RankDetails]],
           unreadable: list[Unreadable] | None = None) -> Folder:
        return cls(path if os.path.isdir(path) else os.path.dirname(path), load,
                   unreadable=unreadable if unreadable is not None else [])

    def not_read(self, rank: int) -> str:
        """Why a rank the dumps name did not arrive: `unreadable (ERROR)` or `not in the folder`."""
        return not_read(rank, self.unreadable)

    def arrive(self, rank: int, path: str, stage: int | None) -> None:
        self.stages[rank] = stage
        self.files[rank] = os.path.relpath(path, self.base)

    def fetch(self, ranks: Iterable[int]) -> None:
        """Read the details of these ranks in one batch (those not held); older ones are let go."""
        want = set(ranks)
        missing = sorted(want - set(self._details))
        if missing:
            if len(self._details) + len(missing) > _HELD:
                self._details = {r: d for r, d in self._details.items() if r in want}
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


def reference(by: dict[K, list[int]]) -> tuple[K, dict[K, list[int]]]:
    """The distinct values over ranks, each with its ranks (ascending), ordered by their lowest rank,
    and the reference: the value most ranks share, on a tie the one of the lowest rank."""
    by = dict(sorted(((v, sorted(ranks)) for v, ranks in by.items()), key=lambda kv: kv[1][0]))
    return max(by, key=lambda v: (len(by[v]), -by[v][0])), by
