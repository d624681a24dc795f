"""Every error irtool raises: one root, `IrtoolError`, whose `str()` is the one line users see.

The CLI turns any of them into `irtool: <message>` on stderr and exit code 2.
"""
from __future__ import annotations


class IrtoolError(Exception):
    """Root of irtool's errors; `str()` is a complete one-line message."""


class DumpError(IrtoolError):
    """Input that is not a readable MindIR dump, located as `path:line:col: expected ..., found ...`."""

    def __init__(self, path: str, line: int, col: int, expected: str, found: str) -> None:
        self.path, self.line, self.col = str(path), line, col
        self.expected, self.found = expected, found
        super().__init__(f"{self.path}:{line}:{col}: expected {expected}, found {found}")

    def __reduce__(self) -> tuple:
        # A worker process (pool or Dask) sends the error back pickled; the default rebuilds it from `args`.
        return type(self), (self.path, self.line, self.col, self.expected, self.found)


class InputError(IrtoolError):
    """Input irtool cannot use that is not a located syntax problem: a missing dump, a folder with
    no rank files, a bad option value."""


class SelectionError(InputError):
    """A selection (stage, scope, subgraph, depth) that matches nothing or cannot be drawn; the
    message says what exists instead."""


class OutputError(InputError):
    """An output that cannot be written: a missing folder, or the path of an input dump."""


def show(text: str, limit: int = 40) -> str:
    """Quote a piece of input for an error message, shortened and with control bytes escaped."""
    if not text:
        return "an empty line"
    short = text if len(text) <= limit else text[:limit] + "..."
    return repr(short)
