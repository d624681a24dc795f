"""Write output files atomically: to a temporary file in the same folder, then `os.replace`.

A reader never sees a half-written file, an error leaves no partial file behind, and the input
dump is never overwritten.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import IO, Iterator, Union

from .errors import OutputError

PathLike = Union[str, "os.PathLike[str]"]


def _same_file(a: PathLike, b: PathLike) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(path: PathLike, mode: str = "w", protect: tuple[PathLike, ...] = (),
                encoding: str = "utf-8") -> Iterator[IO]:
    """Context manager yielding a file object; on success the file becomes `path`.

    `mode` is "w" (text) or "wb". If the body raises, the temporary file is removed and `path` is
    left as it was. Refuses (OutputError) to write over any file in `protect` (the input dumps).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open mode must be 'w' or 'wb', not {mode!r}")
    for src in protect:
        if _same_file(path, src):
            raise OutputError(f"refusing to overwrite the input file {os.fspath(src)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OutputError(f"{os.fspath(path)}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give what open() would have
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": encoding})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: PathLike, data: bytes | str, protect: tuple[PathLike, ...] = ()) -> None:
    """Write `data` (bytes, or str as UTF-8) to `path` atomically; see `atomic_open`."""
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w", protect=protect) as f:
        f.write(data)
