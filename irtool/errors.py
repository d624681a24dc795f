"""Errors for bad input: `DumpError`, located as `path:line:col`, and `InputError`."""
from __future__ import annotations


class DumpError(Exception):
    """Input that is not a readable MindIR dump. `str()` is the one-line message users see."""

    def __init__(self, path: str, line: int, col: int, expected: str, found: str) -> None:
        self.path, self.line, self.col = str(path), line, col
        self.expected, self.found = expected, found
        super().__init__(f"{self.path}:{line}:{col}: expected {expected}, found {found}")


class InputError(Exception):
    """Input irtool cannot use that is not a located syntax problem: a missing dump, a folder with
    no rank files, a bad option value. `str()` is the one-line message; the CLI exits 2."""


def show(text: str, limit: int = 40) -> str:
    """Quote a piece of input for an error message, shortened and with control bytes escaped."""
    if not text:
        return "an empty line"
    short = text if len(text) <= limit else text[:limit] + "..."
    return repr(short)
