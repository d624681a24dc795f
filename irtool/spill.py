"""Records a command has one or more of per rank kept in a temporary file instead of memory (a
thousand-rank folder's findings in `check`, its per-rank rows in `summarize DIR`): the main process
holds an offset per record, and reads a record again when it is shown. Small results never leave
memory (the file is spooled: it is written to disk past 64 kB)."""
from __future__ import annotations

import pickle
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
