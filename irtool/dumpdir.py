"""Dump folders as MindSpore writes them (`rank_0/ ... rank_N/`): one file per rank, and work over
ranks in a process pool.

`load_dir` names each rank's file and loads it on demand; `map_ranks` runs a per-rank function in
worker processes and returns its (picklable) results in rank order; `rank_facts` is the usual
such function: counts, operators and parallel facts of one rank.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable, Iterable, TypeVar

from .errors import InputError, SelectionError
from .ir import Dump, DumpWarning, check, load, pass_name
from .parallel import ParallelFacts, analyze
from .parallel.peer import rank_of

_RANK_DIR = re.compile(r"^rank_(\d+)$")
_DUMP = re.compile(r"\.ir(\.(xz|gz|bz2))?$")

T = TypeVar("T")
Progress = Callable[[int, int], None]  # (done, total)


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


@dataclass(frozen=True)
class RankFile:
    """One rank's dump file; `load()` reads it (each call reads it again). `root` is the folder a
    relative `path` is relative to when it is read elsewhere (a Dask worker), `""` for here."""

    rank: int | None
    path: str
    root: str = ""

    def load(self, lenient: bool = False) -> Dump:
        return load(os.path.join(self.root, self.path), lenient=lenient)


def load_dir(path: str, pass_name: str | None = None) -> list[RankFile]:
    """The dump of each rank for a pass, sorted by rank, loaded on demand."""
    return [RankFile(rank, f) for rank, f in rank_files(path, pass_name).items()]


@dataclass
class RankFacts:
    """What one rank's dump says, small enough to send between processes."""

    rank: int | None
    path: str
    counts: dict[str, int]
    ops: Counter
    facts: ParallelFacts
    warnings: list[DumpWarning] = field(default_factory=list)  # reading, `check` (deep) and analysis

    @property
    def stage(self) -> int | None:
        return self.facts.stage


def rank_facts(rank: RankFile, lenient: bool = False, deep: bool = False) -> RankFacts:
    """Load and analyze one rank (runs in a worker process); `deep` also runs `check` on it. Its
    warnings are those of a single-file summary: reading, `check`, analysis."""
    dump = rank.load(lenient)
    facts = analyze(dump, rank.rank).release()  # a folder command keeps many ranks' facts, not their dumps
    warnings = [*dump.warnings, *(check(dump) if deep else ()), *facts.warnings]
    return RankFacts(rank.rank, rank.path, dump.counts, dump.op_histogram(), facts, warnings)


def stages_text(stages: Iterable[int | None]) -> str:
    """The pipeline stages that exist among these, for a message: `stages 0, 1` or `no pipeline`."""
    known = sorted({s for s in stages if s is not None})
    return "no pipeline" if not known else ("stage " if len(known) == 1 else "stages ") + ", ".join(map(str, known))


def require_stage(where: str, stage: int | None, stages: Iterable[int | None]) -> None:
    """SelectionError naming the stages that exist when `stage` is given and none of `stages` is it."""
    stages = list(stages)
    if stage is not None and stage not in stages:
        raise stage_error(where, stage, stages)


def stage_error(where: str, stage: int, stages: list[int | None]) -> SelectionError:
    return SelectionError(f"{where}: no rank is on stage {stage} ({stages_text(stages)}); try another --stage")


def map_ranks(fn: Callable[[RankFile], T], ranks: list[RankFile], jobs: int | None = None,
              progress: Progress | None = None, scheduler: str | None = None) -> list[T]:
    """`fn` of every rank, in the order of `ranks`: in worker processes on this machine (one per CPU
    at most), or on the Dask distributed cluster whose scheduler is at `scheduler` (`tcp://host:8786`;
    its workers read the files, so the paths must be visible to them; only `fn`'s results travel).
    `fn` must be a module-level function (or a partial of one); a worker's error is raised here as
    it was raised there."""
    if scheduler:
        return _map_dask(fn, ranks, scheduler, progress)
    jobs = jobs or min(len(ranks), os.cpu_count() or 1)
    results: dict[int, T] = {}
    if jobs <= 1:
        for i, r in enumerate(ranks):
            results[i] = fn(r)
            if progress:
                progress(i + 1, len(ranks))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(fn, r): i for i, r in enumerate(ranks)}
            for done, fut in enumerate(as_completed(futures), 1):
                results[futures[fut]] = fut.result()
                if progress:
                    progress(done, len(ranks))
    return [results[i] for i in range(len(ranks))]


def _map_dask(fn: Callable[[RankFile], T], ranks: list[RankFile], scheduler: str,
              progress: Progress | None) -> list[T]:
    """`map_ranks` on a Dask distributed cluster (the optional `irtool[dask]` dependency)."""
    try:
        import distributed
    except ImportError:
        raise InputError("--scheduler needs Dask distributed: pip install 'irtool[dask]'") from None
    # The workers' working folder is not ours; results keep the paths as given.
    ranks = [RankFile(r.rank, r.path, r.root or os.getcwd()) for r in ranks]
    from distributed.comm import get_address_host, parse_address
    from distributed.comm.registry import get_backend

    try:  # checked first: a Client that fails on a bad address leaves its event-loop thread running
        get_backend(parse_address(scheduler)[0])
        get_address_host(scheduler)
    except ValueError as exc:
        raise InputError(f"--scheduler {scheduler}: not a scheduler address ({exc})") from None
    try:
        client = distributed.Client(scheduler, timeout="30s", set_as_default=False)
    except OSError as exc:
        raise InputError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})") from None
    with client:
        futures = client.map(fn, ranks, pure=False)
        results: list[T] = []
        for fut in futures:  # in rank order; all ranks run meanwhile
            results.append(fut.result())
            if progress:
                progress(len(results), len(ranks))
        return results
