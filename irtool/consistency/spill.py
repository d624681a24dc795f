"""Records a thousand-rank check has one or more of per rank (findings, what was not checked, the
ranks' list) kept in a temporary file instead of memory: the main process holds an offset per
record, and reads a record again when it is shown. Small results never leave memory (the file is
spooled: it is written to disk past 64 kB)."""
from __future__ import annotations

import pickle
import sqlite3
from array import array
from tempfile import SpooledTemporaryFile
from typing import Any, Generic, Iterable, Iterator, TypeVar, overload

T = TypeVar("T")


class Spill(Generic[T]):
    """An append-only sequence of picklable records. Equal to a list of equal records (tests compare
    `result.findings == []`)."""

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._file: Any = SpooledTemporaryFile(max_size=64 * 1024)
        self._at = array("q")  # offset of each record; the end of the last is the file's end
        self._end = 0
        for item in items:
            self.append(item)

    def append(self, item: T) -> None:
        self.append_raw(pickle.dumps(item, pickle.HIGHEST_PROTOCOL))

    def append_raw(self, data: bytes) -> None:
        self._file.seek(self._end)
        self._file.write(data)
        self._at.append(self._end)
        self._end += len(data)

    def raw(self, i: int) -> bytes:
        end = self._at[i + 1] if i + 1 < len(self._at) else self._end
        self._file.seek(self._at[i])
        return self._file.read(end - self._at[i])

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return pickle.loads(self.raw(range(len(self))[i]))  # a negative index counts from the end

    def __iter__(self) -> Iterator[T]:
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Spill, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Spill({len(self)} records)"


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
