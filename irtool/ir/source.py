"""Open a dump (`.ir`, `.ir.gz`, `.ir.xz`) and yield its lines as text, one at a time.

Lines are decoded one by one so that a large dump is never held in memory. Bytes that are not
UTF-8 are an error, except inside `# In file` lines: those quote the user's own source files,
which may use any encoding, so there they are replaced.
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
from typing import IO, Iterator

from ..errors import DumpError

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
_BINARY_MAGIC = (b"\x89PNG", b"\x7fELF", b"PK\x03\x04", b"%PDF", b"\x08\x01\x12", b"GIF8", b"\xff\xd8\xff")


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open `path` for reading bytes, decompressing by suffix."""
    opener = _OPENERS.get(os.path.splitext(str(path))[1].lower(), open)
    return opener(path, "rb")


def read_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield `(line_number, text)` for every line of the dump, without its line break."""
    name = str(path)
    done = 0
    for reader in (_fast, _careful):
        try:
            stream = open_binary(path)
        except OSError as exc:
            raise DumpError(name, 0, 0, "a readable file", exc.strerror or str(exc)) from None
        with stream:
            try:
                for number, text in reader(name, stream):
                    if number > done:
                        done = number
                        yield number, text
                return
            except UnicodeDecodeError:
                continue  # bytes that are not UTF-8 somewhere ahead: read again line by line
            except (OSError, EOFError, lzma.LZMAError) as exc:  # corrupt or cut compressed data
                raise DumpError(name, 0, 0, "intact compressed data", str(exc) or type(exc).__name__) from None


def _fast(name: str, stream: IO[bytes]) -> Iterator[tuple[int, str]]:
    """Decode in large chunks (C speed); raises UnicodeDecodeError at the first bad byte."""
    first = stream.peek(4096)[:4096] if hasattr(stream, "peek") else b""
    if first.startswith(_BINARY_MAGIC) or b"\0" in first:
        yield from _careful(name, stream)  # reports binary data with its location
        return
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="strict", newline="\n")
    number, head = 0, ""  # lines up to `number` are out; `head` starts the next, not yet ended
    while chunk := text.read(_CHUNK):
        if "\n" not in chunk:  # inside a long line
            head += chunk
            continue
        block = head + chunk
        lines = block.split("\n")
        head = lines.pop()
        if "\r" in block:
            lines = [line.rstrip("\r") for line in lines]
        if "\0" in block:
            yield from _until_nul(name, number, lines)
        yield from enumerate(lines, number + 1)
        number += len(lines)
    if head:
        head = head.rstrip("\r")
        yield from _until_nul(name, number, [head])
        yield number + 1, head
    text.detach()


# Characters decoded at a time: lines are split in C, a chunk at a time.
_CHUNK = 1 << 20


def _until_nul(name: str, number: int, lines: list[str]) -> Iterator[tuple[int, str]]:
    """If one of `lines` (numbered from `number + 1`) holds a NUL byte: the lines before it, then
    the error locating it; else nothing."""
    for i, line in enumerate(lines):
        if "\0" in line:
            yield from enumerate(lines[:i], number + 1)
            raise DumpError(name, number + i + 1, line.index("\0") + 1, "text", "a NUL byte")


def _careful(name: str, stream: IO[bytes]) -> Iterator[tuple[int, str]]:
    """Decode line by line, tolerating bad bytes in `# In file` lines, locating any other."""
    number = 0
    for raw in stream:
        number += 1
        if number == 1:
            if raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if raw.startswith(_BINARY_MAGIC) or b"\0" in raw[:4096]:
                raise DumpError(name, 1, 1, "a MindIR text dump", "binary data")
        if b"\0" in raw:
            raise DumpError(name, number, raw.index(b"\0") + 1, "text", "a NUL byte")
        raw = raw.rstrip(b"\r\n")
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if raw.lstrip().startswith(b"# In file"):
                yield number, raw.decode("utf-8", errors="replace")
            else:
                col = len(raw[: exc.start].decode("utf-8", errors="replace")) + 1
                raise DumpError(name, number, col, "UTF-8 text", f"the byte 0x{raw[exc.start]:02x}") from None


def pass_name(path: str | os.PathLike) -> str:
    """The compiler pass of a dump from its file name: `19_validate_0078.ir.xz` -> `validate`."""
    base = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    for ext in (".xz", ".gz", ".bz2", ".ir"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    base = re.sub(r"^\d+_", "", base)
    return re.sub(r"_\d+$", "", base)
