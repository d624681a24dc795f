"""Progress on stderr for long work, shown only when stderr is a terminal (quiet in CI and pipes).

Only the CLI uses this module: the library reports progress through callbacks.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

from .ir import Dump, load


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def load_with_progress(path: str, lenient: bool = False) -> Dump:
    """`irtool.load` with a bytes-read bar on a terminal."""
    if not sys.stderr.isatty():
        return load(path, lenient=lenient)
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    # compressed: the decompressed size is not known up front
    total = None if str(path).endswith((".xz", ".gz", ".bz2")) else os.path.getsize(path)
    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), transient=True, console=_console()) as bar:
        task = bar.add_task(os.path.basename(str(path)), total=total)
        return load(path, lenient=lenient, progress=lambda done: bar.update(task, completed=done))


class Steps:
    """A counting bar (`ranks 3/8`) on a terminal, fed by `(done, total)` callbacks; silent otherwise.
    Use as a context manager; the instance is the callback."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Callable[[int, int], None]:
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self.bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=_console(), transient=True)
            self.bar.start()
        return self.update

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            return
        if self.task is None:
            self.task = self.bar.add_task(self.label, total=total)
        self.bar.update(self.task, completed=done)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
