"""Open a dump (`.ir`, `.ir.gz`, `.ir.xz`) and hand its text over in chunks of whole lines.

The text is decoded a chunk (about 1 MiB) at a time, so that a large dump is never held in memory
and the reader can match whole node blocks in one regex call (`irtool.ir.parse`). Bytes that are
not UTF-8 are an error, except inside `# In file` lines: those quote the user's own source files,
which may use any encoding, so there they are replaced.

An `.xz` file is first decompressed into an unnamed temporary file (in `tempfile.gettempdir()`,
removed when closed), which is then read: the LZMA decoder holds its whole dictionary (64 MiB for
`xz -9`) while it runs, and reading the dump while decoding it would keep that dictionary alive
while the model grows, a third more peak memory for a large dump. Where no temporary file can be
written, the file is decoded as it is read.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import tempfile
from typing import IO, Iterator

from ..errors import DumpError

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
_BINARY_MAGIC = (b"\x89PNG", b"\x7fELF", b"PK\x03\x04", b"%PDF", b"\x08\x01\x12", b"GIF8", b"\xff\xd8\xff")
_BOM = b"\xef\xbb\xbf"
# Bytes read at a time: lines are split, decoded and matched in C, a chunk at a time.
_CHUNK = 1 << 20
_CR = re.compile(r"\r+\n")


class NulAt(int):
    """The last item of `read_chunks` where a NUL byte is: its column in the line after the
    chunks handed over (the reader does not count lines: its consumer knows the line number)."""


def nul_error(path: str, line: int, col: int) -> DumpError:
    return DumpError(path, line, col, "text", "a NUL byte")


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open `path` for reading bytes, decompressing by suffix."""
    opener = _OPENERS.get(os.path.splitext(str(path))[1].lower(), open)
    return opener(path, "rb")


def read_chunks(path: str | os.PathLike) -> Iterator[tuple[int, str | NulAt]]:
    """Yield the text of the dump in chunks of whole lines, each line ended by `\\n` (one is
    added to a last line without it), without a BOM, `\\r` before line breaks removed, each with
    the number of bytes of the (decompressed) file it was decoded from: a dump's size is its bytes,
    which its text, holding `▸` and other multi-byte characters, does not count. A NUL byte: the
    lines before its line, then `NulAt` (to be raised with `nul_error`). Any other bad input:
    `DumpError`."""
    name = str(path)
    try:
        source = _Source(path)
    except OSError as exc:
        raise DumpError(name, 0, 0, "a readable file", exc.strerror or str(exc)) from None
    with source:
        done = 0  # bytes handed over, as whole lines
        for fast in (True, False):
            try:
                stream = source.open()
            except OSError as exc:
                raise DumpError(name, 0, 0, "a readable file", exc.strerror or str(exc)) from None
            try:
                for raw_size, chunk in (_fast(name, stream) if fast else _careful(name, stream, done)):
                    done += raw_size
                    yield raw_size, chunk
                    if isinstance(chunk, NulAt):
                        return
                if source.failure is not None:
                    raise source.failure
                return
            except UnicodeDecodeError:
                continue  # bytes that are not UTF-8 somewhere ahead: read again line by line
            except (OSError, EOFError, lzma.LZMAError) as exc:  # corrupt or cut compressed data
                raise DumpError(name, 0, 0, "intact compressed data", str(exc) or type(exc).__name__) from None
            finally:
                if stream is not source.spool:
                    stream.close()


def read_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield `(line_number, text)` for every line of the dump, without its line break."""
    number = 0
    for _, chunk in read_chunks(path):
        if isinstance(chunk, NulAt):
            raise nul_error(str(path), number + 1, chunk)
        lines = chunk.split("\n")
        lines.pop()
        yield from enumerate(lines, number + 1)
        number += len(lines)


class _Source:
    """The bytes of a dump, openable twice (once more when a bad byte needs a careful read).
    `.xz`: decompressed once into `spool`; a decoding error is kept in `failure` and raised
    after the text decoded before it (as when decoding while reading)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = path
        self.spool: IO[bytes] | None = None
        self.failure: BaseException | None = None
        if os.path.splitext(str(path))[1].lower() == ".xz":
            with open(path, "rb") as raw:
                self.spool, self.failure = _spool(raw)

    def open(self) -> IO[bytes]:
        if self.spool is None:
            return open_binary(self.path)
        self.spool.seek(0)
        return self.spool

    def __enter__(self) -> _Source:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.spool is not None:
            self.spool.close()


def _spool(raw: IO[bytes]) -> tuple[IO[bytes] | None, BaseException | None]:
    """The decompressed bytes in a temporary file, and the decoding error that ended them."""
    try:
        tmp = tempfile.TemporaryFile()
    except OSError:
        return None, None
    failure = None
    with lzma.LZMAFile(raw) as src:
        try:
            while data := src.read(_CHUNK):
                try:
                    tmp.write(data)
                except OSError:  # no room for it: decode while reading
                    tmp.close()
                    return None, None
        except (OSError, EOFError, lzma.LZMAError) as exc:
            failure = exc
    tmp.flush()
    return tmp, failure


def _fast(name: str, stream: IO[bytes]) -> Iterator[tuple[int, str | NulAt]]:
    """(bytes, text) of chunks decoded at C speed; raises UnicodeDecodeError at the first bad
    byte; ends with `NulAt` after the lines before a NUL byte."""
    first = stream.peek(4096)[:4096] if hasattr(stream, "peek") else b""
    if first.startswith(_BINARY_MAGIC) or b"\0" in first:
        yield from _careful(name, stream, 0)  # reports binary data with its location
        return
    head: list[bytes] = []  # a line not yet ended
    start = True
    while data := stream.read(_CHUNK):
        end = data.rfind(b"\n") + 1
        if not end:  # inside a long line
            head.append(data)
            continue
        raw = b"".join((*head, data[:end])) if head else (data[:end] if end < len(data) else data)
        head = [data[end:]] if end < len(data) else []
        items = _text(raw, start)
        yield from items
        if isinstance(items[-1][1], NulAt):
            return
        start = False
    if head:  # a last line without its line break: one is added, not counted
        last = b"".join(head)
        yield from _text(last + b"\n", start, len(last))


def _text(raw: bytes, start: bool, size: int | None = None) -> list[tuple[int, str | NulAt]]:
    """(bytes, text) of whole lines; up to the line of a NUL byte and its `NulAt` if one is there.
    `size`: the bytes of the file `raw` stands for, when not all of it."""
    size = len(raw) if size is None else size
    if start and raw.startswith(_BOM):
        raw = raw[3:]
    text = raw.decode("utf-8")
    if "\r" in text:
        text = _CR.sub("\n", text)
    if "\0" not in text:
        return [(size, text)]
    at = text.index("\0")
    begin = text.rfind("\n", 0, at) + 1
    before = [(size, text[:begin])] if begin else []
    return [*before, (0, NulAt(at - begin + 1))]


def _careful(name: str, stream: IO[bytes], skip: int) -> Iterator[tuple[int, str]]:
    """Decode line by line, tolerating bad bytes in `# In file` lines, locating any other; the
    first `skip` bytes were handed over already."""
    number = offset = size = 0
    lines: list[str] = []
    try:
        for raw in stream:
            number += 1
            offset += len(raw)
            if number == 1:
                if raw.startswith(_BOM):
                    raw = raw[3:]
                if raw.startswith(_BINARY_MAGIC) or b"\0" in raw[:4096]:
                    raise DumpError(name, 1, 1, "a MindIR text dump", "binary data")
            if offset <= skip:
                continue
            size += len(raw)
            if b"\0" in raw:
                raise nul_error(name, number, raw.index(b"\0") + 1)
            raw = raw.rstrip(b"\r\n")
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                if raw.lstrip().startswith(b"# In file"):
                    lines.append(raw.decode("utf-8", errors="replace"))
                else:
                    col = len(raw[: exc.start].decode("utf-8", errors="replace")) + 1
                    raise DumpError(name, number, col, "UTF-8 text", f"the byte 0x{raw[exc.start]:02x}") from None
            if size >= _CHUNK:
                yield size, "\n".join(lines) + "\n"
                lines, size = [], 0
    except DumpError:
        if lines:  # the lines before the error are read first, as they come
            yield size, "\n".join(lines) + "\n"
        raise
    if lines:
        yield size, "\n".join(lines) + "\n"


def pass_name(path: str | os.PathLike) -> str:
    """The compiler pass of a dump from its file name: `19_validate_0078.ir.xz` -> `validate`. A pass named
    after the graph it ran on keeps the graph's name without the ids one compilation numbers it by
    (`after_lift_1232_158_mindspore_..._VirtualDatasetCell_construct_7992_0024` -> `after_lift_mindspore_...
    _VirtualDatasetCell_construct`): the same pass of another compilation of the network has the same name."""
    base = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    for ext in (".xz", ".gz", ".bz2", ".ir"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    base = re.sub(r"_\d+$", "", re.sub(r"^\d+_", "", base))
    graph = _GRAPH_IDS.sub("_", base)  # a graph's name opens with two or more ids: `1232_158_mindspore_...`
    return re.sub(r"_\d+$", "", graph) if graph != base else base


_GRAPH_IDS = re.compile(r"_\d+(?:_\d+)+_(?=[A-Za-z_])")
