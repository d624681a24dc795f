"""Progress on stderr for long work, shown only when stderr is a terminal (quiet in CI and pipes)."""
from __future__ import annotations

import os
import sys
from typing import Any

from .model import Dump
from .parse import load


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
    """A counting bar (`ranks 3/8`) on a terminal; does nothing otherwise."""

    def __init__(self, label: str, total: int) -> None:
        self.bar: Any = None
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self.bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=_console(), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(label, total=total)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
