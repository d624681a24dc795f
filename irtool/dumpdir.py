"""Dump folders as MindSpore writes them (`rank_0/ ... rank_N/`): one file per rank, summarized in parallel."""
from __future__ import annotations

import os
import re
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from .errors import InputError
from .parallel import pass_name
from .progress import Steps

_RANK_DIR = re.compile(r"^rank_(\d+)$")
_RANK_IN_PATH = re.compile(r"(?:^|[/\\])rank_(\d+)(?:[/\\]|$)")
_DUMP = re.compile(r"\.ir(\.(xz|gz|bz2))?$")


def rank_of(path: str) -> int | None:
    """The rank from a `rank_N` folder in the path, else None."""
    found = _RANK_IN_PATH.findall(os.path.abspath(path))
    return int(found[-1]) if found else None


def _sequence(name: str) -> int:
    """MindSpore numbers the files it writes: `19_validate_0078.ir` -> 78 (the later, the higher)."""
    m = re.search(r"_(\d+)\.ir", name)
    return int(m.group(1)) if m else -1


def pick_file(folder: str, pass_name_: str | None = None) -> str:
    """A rank folder's dump for a pass: the files whose pass part contains `pass_name_` (default
    `validate`, the last frontend pass); of those the last written, a plain `.ir` before a
    compressed copy."""
    want = pass_name_ or "validate"
    hits = [f for f in os.listdir(folder) if _DUMP.search(f) and want in pass_name(f)]
    if not hits:
        raise InputError(f"{folder}: no dump of pass {want!r} (*_{want}_*.ir)")
    return os.path.join(folder, max(hits, key=lambda f: (_sequence(f), -len(f), f)))


def rank_files(path: str, pass_name_: str | None = None) -> dict[int | None, str]:
    """rank -> dump file, for a dump file, a rank folder, or a folder of `rank_N/` folders
    (rank None when the path does not tell)."""
    if os.path.isfile(path):
        return {rank_of(path): path}
    if not os.path.isdir(path):
        raise InputError(f"{path}: no such file or folder")
    ranks = {}
    for entry in os.listdir(path):
        m = _RANK_DIR.match(entry)
        if m and os.path.isdir(os.path.join(path, entry)):
            ranks[int(m.group(1))] = pick_file(os.path.join(path, entry), pass_name_)
    if ranks:
        return dict(sorted(ranks.items()))
    return {rank_of(os.path.join(path, "x")): pick_file(path, pass_name_)}


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
    files = list(rank_files(path, pass_name).items())
    jobs = jobs or min(len(files), os.cpu_count() or 1)
    results: dict[int, dict[str, Any]] = {}
    progress = Steps("ranks", len(files))
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
