"""Findings of a thousand-rank check sorted on disk (`Staged`), into a `Spill`."""
from __future__ import annotations

import pickle
import sqlite3
from typing import Any, Generic, TypeVar

from ..spill import Spill

T = TypeVar("T")


class Staged(Generic[T]):
    """Records made in one order (as ranks arrive) and shown in another (by link, group, rank): each
    is kept with its sort key (a tuple of ints and strs) in a temporary SQLite table, which sorts them
    on disk; `drain` copies them, sorted, into a `Spill`. Shorter keys sort first, as tuples do."""

    WIDTH = 5  # the longest key

    def __init__(self) -> None:
        self._open()

    def _open(self) -> None:
        self._db = sqlite3.connect("")  # a private temporary database, deleted when closed
        self._db.execute("PRAGMA cache_size = -256")  # KiB: its pages beyond that are on disk
        cols = ", ".join(f"k{i}" for i in range(self.WIDTH))
        self._db.execute(f"CREATE TABLE staged ({cols}, item BLOB)")
        self._insert = f"INSERT INTO staged VALUES ({', '.join('?' * (self.WIDTH + 1))})"
        self._n = 0

    def add(self, key: tuple, item: T) -> None:
        assert len(key) <= self.WIDTH
        pad = (None,) * (self.WIDTH - len(key))  # NULL sorts before any value
        self._db.execute(self._insert, (*map(_column, key), *pad, pickle.dumps(item, pickle.HIGHEST_PROTOCOL)))
        self._n += 1

    def __len__(self) -> int:
        return self._n

    def drain(self, keep: Any = None) -> Spill[T]:
        """The records by key (only those whose key `keep` accepts, when given); this staging is emptied."""
        out: Spill[T] = Spill()
        cols = ", ".join(f"k{i}" for i in range(self.WIDTH))
        for *key, data in self._db.execute(f"SELECT {cols}, item FROM staged ORDER BY {cols}, rowid"):
            if keep is None or keep(tuple(k for k in key if k is not None)):
                out.append_raw(data)
        self._db.close()  # and with it what the module holds of the rows read
        self._open()
        return out


def _column(value: Any) -> Any:
    """A key's value as SQLite orders it like Python: ints (bools as ints) and strs (by code point)."""
    if isinstance(value, bool):
        return int(value)
    assert isinstance(value, (int, str)), value
    return value
