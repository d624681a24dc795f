"""Dump folders as MindSpore writes them (`rank_0/ ... rank_N/`): one file per rank, summarized in parallel."""
from __future__ import annotations

import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from .errors import DumpError
from .parallel import pass_name

_RANK_DIR = re.compile(r"^rank_(\d+)$")


def _order(name: str) -> int:
    m = re.match(r"^(\d+)_", name)
    return int(m.group(1)) if m else -1


def _seq(name: str) -> int:
    m = re.search(r"_(\d+)\.ir", name)
    return int(m.group(1)) if m else -1


def pick_file(rank_dir: str, pass_name_: str | None = None) -> str | None:
    """The rank's file for a pass: by substring of the file's pass part; default the last `*_validate_*`."""
    files = [f for f in os.listdir(rank_dir) if re.search(r"\.ir(\.(xz|gz|bz2))?$", f)]
    want = pass_name_ or "validate"
    hits = [f for f in files if want in pass_name(f)]
    if not hits:
        return None
    return os.path.join(rank_dir, max(hits, key=lambda f: (_seq(f), _order(f), f)))


def rank_files(path: str, pass_name_: str | None = None) -> list[tuple[int, str]]:
    """(rank, file) for every `rank_*` folder of `path` that has a file for the pass."""
    out = []
    for entry in os.listdir(path):
        m = _RANK_DIR.match(entry)
        full = os.path.join(path, entry)
        if m and os.path.isdir(full):
            f = pick_file(full, pass_name_)
            if f is not None:
                out.append((int(m.group(1)), f))
    if not out:
        raise DumpError(f"{path}: no rank_*/ folder with a {pass_name_ or 'validate'} file")
    return sorted(out)


def summarize_file(path: str) -> dict[str, Any]:
    """Load one file and return its summary (runs in a worker process; returns plain data only)."""
    from .parse import load
    from .summary import summarize

    return summarize(load(path))


def load_dir(path: str, pass_name: str | None = None, stage: int | None = None,
             jobs: int | None = None) -> list[dict[str, Any]]:
    """Summaries of each rank's file for a pass, loaded in parallel.

    Returns one dict per rank, sorted by rank: `rank`, `file`, `stage`, `summary` (the summarize dict).
    `stage` keeps only the ranks of that pipeline stage. Progress goes to stderr when it is a terminal.
    """
    files = rank_files(path, pass_name)
    jobs = jobs or min(len(files), os.cpu_count() or 1)
    results: dict[int, dict[str, Any]] = {}
    progress = _progress(len(files))
    try:
        if jobs <= 1:
            for rank, f in files:
                results[rank] = summarize_file(f)
                progress.advance()
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = {pool.submit(summarize_file, f): rank for rank, f in files}
                for fut in as_completed(futures):
                    results[futures[fut]] = fut.result()
                    progress.advance()
    finally:
        progress.close()
    out = [{"rank": rank, "file": f, "stage": results[rank].get("stage"), "summary": results[rank]}
           for rank, f in files]
    if stage is not None:
        out = [r for r in out if r["stage"] == stage]
    return out


class _progress:
    """A rich progress bar on stderr when stderr is a terminal; silent otherwise."""

    def __init__(self, total: int) -> None:
        self.bar: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self.bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("ranks", total=total)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
