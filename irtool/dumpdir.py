"""Dump folders as MindSpore writes them (`rank_0/ ... rank_N/`): one file per rank, and work over
ranks in a process pool. `irtool.selection` is the front door commands use; this module is its
mechanics.

`select_files` names each rank's file of a pass from file names alone; `load_dir` wraps them to
load on demand; `iter_ranks` runs a per-rank function in worker processes and yields its
(picklable) results in rank order as they come (`map_ranks` keeps them all); `rank_facts` is the usual
such function: counts, operators and parallel facts of one rank.
"""
from __future__ import annotations

import os
import re
from collections import Counter, deque
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, TypeVar

from .errors import InputError, IrtoolError, SelectionError
from .ir import Dump, DumpWarning, check, load, pass_name
from .parallel import ParallelFacts, analyze
from .parallel.order import StageOrder, stage_order
from .parallel.peer import rank_of
from .parallel.rules import KERNEL_PASSES

if TYPE_CHECKING:
    from concurrent.futures import Future

_RANK_DIR = re.compile(r"^rank_(\d+)$")
_DUMP = re.compile(r"\.ir(\.(xz|gz|bz2))?$")
DEFAULT_PASS = "validate"  # the last frontend pass: what the compiled job runs
FAILED_PASS = "analyze_fail"  # what MindSpore writes when inference fails: the default where no validate is

T = TypeVar("T")
Progress = Callable[[int, int], None]  # (done, total)


def _sequence(name: str) -> int:
    """MindSpore numbers the files it writes: `19_validate_0078.ir` -> 78 (the later, the higher)."""
    m = re.search(r"_(\d+)\.ir", name)
    return int(m.group(1)) if m else -1


def _dumps(folder: str) -> dict[str, str]:
    """pass -> file of one rank folder: of several files of a pass the last written, a plain `.ir`
    before a compressed copy."""
    by: dict[str, list[str]] = {}
    for f in os.listdir(folder):
        if _DUMP.search(f) and os.path.isfile(os.path.join(folder, f)):
            by.setdefault(pass_name(f), []).append(f)
    return {p: os.path.join(folder, max(fs, key=lambda f: (_sequence(f), -len(f), f))) for p, fs in by.items()}


def resolve_pass(where: str, passes: Iterable[str], want: str | None) -> str:
    """The pass `--pass want` names among `passes`: the pass of that exact name, else the one pass whose
    name contains it (default `validate`, the last frontend pass; `analyze_fail` where no pass is validate:
    the compile failed). Several such passes, or none, is a
    SelectionError listing the candidates, or every pass that exists."""
    want = want or DEFAULT_PASS
    passes = sorted(set(passes))
    if want in passes:
        return want
    hits = [p for p in passes if want in p]
    if not hits and want == DEFAULT_PASS and FAILED_PASS in passes:  # the compile failed before validate
        return FAILED_PASS
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise SelectionError(f"{where}: --pass {want} matches {len(hits)} passes: {', '.join(hits)}; "
                             "give one of them")
    raise SelectionError(f"{where}: no pass matches --pass {want}; passes here: {', '.join(passes)}")


def rank_error(where: str, rank: int | None, pass_: str, passes: Iterable[str]) -> SelectionError:
    """A rank folder without a dump of the selected pass."""
    name = "the folder" if rank is None else f"rank {rank}"
    return SelectionError(f"{where}: {name} has no dump of pass {pass_} (it has: {', '.join(sorted(passes)) or 'none'})")


@dataclass(frozen=True)
class Unreadable:
    """A rank the folder holds (its `rank_N/` folder is there) that could not be read: no dump of the
    selected pass (`file` None), or the located error of its file. A record, so that a folder command
    answers for the other ranks. Unreadable is not missing: a rank without a `rank_N/` folder is not in
    the folder (`selection.not_read` says which, the same in every command)."""

    rank: int | None
    file: str | None
    error: str

    def as_dict(self) -> dict[str, int | str | None]:
        return {"rank": self.rank, "file": self.file, "error": self.error}


def _outside_ranks(path: str, rank_dirs: Iterable[str]) -> list[str]:
    """The dump files under a folder of `rank_N/` folders that no rank folder holds (beside them, or in
    a folder of another name), sorted: ignored, and said so."""
    skip = set(rank_dirs)
    out: list[str] = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
        out += [os.path.join(root, f) for f in files if _DUMP.search(f)]
    return sorted(out)


def select_files(path: str, want: str | None = None, missing: list[Unreadable] | None = None,
                 ignored: list[str] | None = None) -> tuple[str, dict[int | None, str]]:
    """The pass and rank -> dump file, by file names only, for a dump file (its own pass), a rank
    folder, or a folder of `rank_N/` folders (rank None when the path does not tell). A pass no rank
    has or several passes matching `want` is a SelectionError; so is a rank without the pass, unless
    `missing` is given: then it is recorded there and left out. `ignored` (when given) receives the
    dump files of a folder of `rank_N/` folders that no rank folder holds."""
    if os.path.isfile(path):  # read as it is; a `want` it is not is the same error as in a folder
        return (pass_name(path) if want is None else resolve_pass(path, [pass_name(path)], want)), {rank_of(path): path}
    if not os.path.isdir(path):
        raise InputError(f"{path}: no such file or folder")
    folders = {int(m.group(1)): os.path.join(path, e) for e in os.listdir(path)
               if (m := _RANK_DIR.match(e)) and os.path.isdir(os.path.join(path, e))}
    if not folders:
        folders = {rank_of(os.path.join(path, "x")): path}  # one rank's folder
    elif ignored is not None:
        ignored += _outside_ranks(path, folders.values())
    dumps = {r: _dumps(f) for r, f in folders.items()}
    passes = {p for d in dumps.values() for p in d}
    if not passes:
        raise InputError(f"{path}: no .ir dump here and no rank_N folder holding one")
    chosen = resolve_pass(path, passes, want)
    files: dict[int | None, str] = {}
    for rank in sorted(dumps, key=lambda r: -1 if r is None else r):
        if chosen in dumps[rank]:
            files[rank] = dumps[rank][chosen]
        elif missing is None:
            raise rank_error(path, rank, chosen, dumps[rank])
        else:
            missing.append(Unreadable(rank, None, str(rank_error(path, rank, chosen, dumps[rank]))))
    return chosen, files


def rank_files(path: str, pass_name_: str | None = None) -> dict[int | None, str]:
    """rank -> dump file of the pass (`select_files`)."""
    return select_files(path, pass_name_)[1]


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


def kernel_file(rank: RankFile) -> RankFile | None:
    """The kernel graph beside a rank's front-end dump in its folder (`graph_build_*` first): the order the
    device runs the rank's work in; None when the rank was read at a kernel graph or has none."""
    if pass_name(rank.path).startswith(KERNEL_PASSES):
        return None
    folder = os.path.dirname(os.path.join(rank.root, rank.path))
    dumps = _dumps(folder)
    for prefix in KERNEL_PASSES:
        found = sorted(p for p in dumps if p.startswith(prefix))
        if found:
            path = dumps[found[0]]
            return RankFile(rank.rank, os.path.relpath(path, rank.root) if rank.root else path, rank.root)
    return None


def kernel_order(rank: RankFile, lenient: bool = False) -> StageOrder | None:
    """A folder's order of one rank's work: its kernel graph's (`kernel_file`, the order the device runs),
    which says where the file came from (`kernel_graph`); None without a kernel graph beside the dump."""
    kernel = kernel_file(rank)
    if kernel is None:
        return None
    order = analyze(kernel.load(lenient), rank.rank).table.get("order")
    return replace(order, kernel_graph=kernel.path)


def rank_order(rank: RankFile, facts: ParallelFacts, lenient: bool = False) -> StageOrder:
    """The one order of a rank's work every folder command shows (cost, summary, diff, the pipeline picture,
    the view): its kernel graph's where the rank's folder holds one (`kernel_order`: the order the device runs,
    naming the file in `kernel_graph`), else the `order` fact of its dump (`facts`)."""
    return kernel_order(rank, lenient) or stage_order(facts.table)


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

    @property
    def placed(self) -> int | None:
        return self.facts.stage_info.placed


def rank_facts(rank: RankFile, lenient: bool = False, deep: bool = False) -> RankFacts:
    """Load and analyze one rank (runs in a worker process); `deep` also runs `check` on it. Its
    warnings are those of a single-file summary: reading, `check`, analysis."""
    dump = rank.load(lenient)
    facts = analyze(dump, rank.rank).release()  # a folder command keeps many ranks' facts, not their dumps
    warnings = [*dump.warnings, *(check(dump) if deep else ()), *facts.warnings]
    return RankFacts(rank.rank, rank.path, dump.counts, dump.op_histogram(), facts, warnings)


def read_or_record(fn: Callable[[RankFile], T], rank: RankFile) -> T | Unreadable:
    """`fn(rank)`, or the rank's error as a record (runs in a worker: the error travels as data)."""
    try:
        return fn(rank)
    except (IrtoolError, OSError, MemoryError, RecursionError) as exc:
        return Unreadable(rank.rank, rank.path, str(exc) if isinstance(exc, IrtoolError) else
                          f"{rank.path}: {type(exc).__name__}: {exc}")


def default_jobs(n_ranks: int) -> int:
    """Worker processes when none are asked for: `IRTOOL_JOBS` if set (a machine already busy with other
    work, such as a parallel test run, reads ranks in its own process with `IRTOOL_JOBS=1`), else one per
    rank up to the CPUs."""
    env = os.environ.get("IRTOOL_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return min(n_ranks, os.cpu_count() or 1)


def map_ranks(fn: Callable[[RankFile], T], ranks: list[RankFile], jobs: int | None = None,
              progress: Progress | None = None, scheduler: str | None = None) -> list[T]:
    """`fn` of every rank, in the order of `ranks` (`iter_ranks`, all kept)."""
    return list(iter_ranks(fn, ranks, jobs, progress, scheduler))


def iter_ranks(fn: Callable[[RankFile], T], ranks: list[RankFile], jobs: int | None = None,
               progress: Progress | None = None, scheduler: str | None = None) -> Iterator[T]:
    """`fn` of every rank, yielded in the order of `ranks` as they are done: in worker processes on
    this machine (one per CPU at most), or on the Dask distributed cluster whose scheduler is at
    `scheduler` (`tcp://host:8786`; its workers read the files, so the paths must be visible to them;
    only `fn`'s results travel). Only a few results are held here at a time (a window of ranks in
    flight), so a caller that folds each result as it comes holds none per rank. `fn` must be a
    module-level function (or a partial of one); a worker's error is raised here as it was raised there."""
    if scheduler:
        yield from _iter_dask(fn, ranks, scheduler, progress)
        return
    jobs = jobs or default_jobs(len(ranks))
    if jobs <= 1:
        for i, r in enumerate(ranks):
            result = fn(r)
            if progress:
                progress(i + 1, len(ranks))
            yield result
        return
    # imported here: the pool's modules (multiprocessing, sockets, ...) cost a one-file command ~10 ms
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        todo = iter(ranks)
        window: deque[Future[T]] = deque(pool.submit(fn, r) for r in islice(todo, 4 * jobs))
        done = 0
        while window:
            result = window.popleft().result()  # in order; the later ranks in the window run meanwhile
            window.extend(pool.submit(fn, r) for r in islice(todo, 1))
            done += 1
            if progress:
                progress(done, len(ranks))
            yield result


def _iter_dask(fn: Callable[[RankFile], T], ranks: list[RankFile], scheduler: str,
               progress: Progress | None) -> Iterator[T]:
    """`iter_ranks` on a Dask distributed cluster (the optional `irtool[dask]` dependency)."""
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
        futures = deque(client.map(fn, ranks, pure=False))  # all ranks run on the cluster
        done = 0
        while futures:  # in rank order; a result is let go (here and on the cluster) once yielded
            result = futures.popleft().result()
            done += 1
            if progress:
                progress(done, len(ranks))
            yield result
