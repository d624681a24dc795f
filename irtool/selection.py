"""The one front door for what a command reads: path -> ranks -> pass -> stage, decided once.

The CLI builds one `Selection` per input from its options and hands it to the command; no command
decides on its own which file, pass or stage it reads. What file names can tell (the ranks of a
folder, the pass of each file) is checked in `Selection.of`, before any dump is parsed; the stage
needs a parsed dump and is checked when ranks are read. Every selection error is a
`SelectionError` with one wording (docs/selection.md lists them).

One rule for a dump without pipeline: all of it is stage 0 (MindSpore's default of one stage), so
`--stage 0` selects all of it and any other stage is a selection error. A pipelined dump that does not
decide its stage (a pass before step_parallel_end, votes that disagree) is of unknown stage: no
`--stage` selects it, and it begins no stage (`records.placed_stage`, the one rule of every command).

How ranks are read is the selection's `Policy`: in this process with a loader (one that shows
progress), in a process pool of `jobs` workers, or on a Dask cluster (`scheduler`).

What a folder of `rank_N/` folders holds, decided here and said the same in every command:
- a rank is *read* when its dump of the selected pass was parsed;
- *unreadable* when its `rank_N/` folder is there but has no dump of the pass, or the dump does not
  parse (`dumpdir.Unreadable`, with the located error; `Selection.unreadable`): the command answers
  for the other ranks and exits 2;
- *not in the folder* when there is no `rank_N/` folder for it (a peer or group member the dumps
  name): said, never an error;
- dump files that no `rank_N/` folder holds are *ignored*, and listed (`Selection.ignored`).
`not_read` words the last three cases for a rank the dumps name.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from .dumpdir import Progress, RankFile, Unreadable, iter_ranks, rank_facts, rank_order, read_or_record, select_files
from .errors import InputError, IrtoolError, SelectionError
from .ir import Dump, load
from .parallel import ParallelFacts, analyze
from .parallel.job import Job, JobFold, RankJob
from .parallel.order import StageOrder
from .present import rank_list

if TYPE_CHECKING:
    from .parallel.logical import LogicalGraph

# --- the stage rule and the wording of every selection error ---------------------------------

def stages_text(stages: Iterable[int | None]) -> str:
    """The stages that exist among these (None: a rank of unknown stage), for a message: `stage 0`,
    `stages 0, 1`, `stage 1 and of unknown stage`, `of unknown stage`."""
    stages = set(stages)
    known = sorted(s for s in stages if s is not None)
    said = ("stage " if len(known) == 1 else "stages ") + ", ".join(map(str, known)) if known else ""
    return said if None not in stages else f"{said} and of unknown stage" if said else "of unknown stage"


def _on(stages: Iterable[int | None]) -> str:
    """`on stages 0, 1`, `on stage 1 and of unknown stage`, `of unknown stage` (`stages_text`)."""
    said = stages_text(stages)
    return said if said.startswith("of") else "on " + said


def stage_error(where: str, stage: int, stages: Iterable[int | None]) -> SelectionError:
    """`--stage` that no rank read is on."""
    stages = set(stages)
    said = stages_text(stages) if None not in stages else "the ranks are " + _on(stages)
    return SelectionError(f"{where}: no rank is on stage {stage} ({said}); try another --stage")


def require_stage(where: str, stage: int | None, stages: Iterable[int | None],
                  unreadable: Iterable[Unreadable] = ()) -> None:
    """A SelectionError (`stage_error`) when `stage` is given and none of `stages` (the ranks' placed stages,
    None unknown: `records.placed_stage`) is it; when some ranks were not read (`unreadable`), the error says
    the stage may be theirs."""
    stages = list(stages)
    if stage is None or stage in stages:
        return
    unread = [u.rank for u in unreadable if u.rank is not None]
    if not unread:
        raise stage_error(where, stage, stages)
    raise SelectionError(f"{where}: no rank read is on stage {stage} (the ranks read are {_on(stages)}; "
                         f"not read: {_ranks_text(unread)}); try another --stage")


def stage_word(stage: int | None) -> str:
    """`stage 3`, or `stage unknown` for a rank whose pipelined dump does not say (`records.placed_stage`)."""
    return "stage unknown" if stage is None else f"stage {stage}"


def _order(stage: int | None) -> int:
    """Stages in order, a rank of unknown stage after every stage (MindSpore's order of ranks cannot place it)."""
    return sys.maxsize if stage is None else stage


def _ranks_text(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + rank_list(ranks)


def not_read(rank: int, unreadable: Iterable[Unreadable]) -> str:
    """What every command says of a rank the dumps name that was not read: `unreadable (ERROR)` when
    the folder holds it (`dumpdir.Unreadable`, its located error), else `not in the folder`."""
    error = next((u.error for u in unreadable if u.rank == rank), None)
    return "not in the folder" if error is None else f"unreadable ({error})"


def not_in_folder(world: int | None, read: Iterable[int | None], unreadable: Iterable[Unreadable]) -> str:
    """`ranks 1-3, 5-7 of world 8 not in the folder`: the ranks of a known world size the folder holds no
    `rank_N` of (an unreadable rank is in the folder: said apart); '' when none, or the world is unknown."""
    if world is None:
        return ""
    held = {r for r in read if r is not None} | {u.rank for u in unreadable if u.rank is not None}
    absent = [r for r in range(world) if r not in held]
    return f"{_ranks_text(absent)} of world {world} not in the folder" if absent else ""


# --- reading ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Policy:
    """How ranks are read: `loader` in this process (e.g. with a progress bar); `jobs` worker
    processes or the Dask scheduler at `scheduler` when every rank is analysed; `lenient` skips bad
    nodes (reported); `deep` also runs `irtool.check` on each rank."""

    jobs: int | None = None
    scheduler: str | None = None
    lenient: bool = False
    deep: bool = False
    loader: Callable[..., Dump] = load


@dataclass
class Loaded:
    """One rank read in this process: its file, dump and facts."""

    rank: int | None
    file: str
    dump: Dump
    facts: ParallelFacts

    @property
    def stage(self) -> int | None:
        """The stage the rank is filed under (`StageInfo.placed`): None when its pipelined dump does not say."""
        return self.facts.stage_info.placed

    def order(self, lenient: bool = False) -> StageOrder:
        """The rank's order of work as every folder command shows it (`dumpdir.rank_order`)."""
        return rank_order(RankFile(self.rank, self.file), self.facts, lenient)


@dataclass
class Selection:
    """What one input of a command selects: `files` (rank -> dump file of the selected pass, by rank;
    rank None when the path does not tell), the `stage` asked for, and how to read (`policy`).
    `notes` say what was chosen on the user's behalf (which rank a folder command drew). With
    `partial`, a rank that cannot be read (no dump of the pass, or a located error) is recorded in
    `unreadable` and the command answers for the others (issue 18); without, it is an error. Dump
    files a folder of `rank_N/` folders holds outside them are listed in `ignored`. With the
    policy's `lenient`, each bad node or line skipped while reading is said in `skipped`."""

    path: str
    files: dict[int | None, str]
    pass_name: str
    stage: int | None = None
    policy: Policy = field(default_factory=Policy)
    notes: list[str] = field(default_factory=list)
    partial: bool = False
    unreadable: list[Unreadable] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # with lenient: each bad node or line skipped, located
    ignored: list[str] = field(default_factory=list)  # dump files outside the `rank_N/` folders
    # the job of every rank selected, folded once (`job`, or by a command that read every rank: `diff`)
    folded_job: Job | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, path: str, stage: int | None = None, pass_name_: str | None = None,
           policy: Policy | None = None, partial: bool = False) -> Selection:
        """The selection of a dump file, a rank folder, or a folder of `rank_N/` folders. Ranks and
        passes come from file names only: a bad `--pass` or a rank without that pass fails here,
        before anything is parsed. A file is read as it is (a `--pass` it is not is an error)."""
        missing: list[Unreadable] = []
        ignored: list[str] = []
        pass_, files = select_files(path, pass_name_, missing if partial else None, ignored)
        return cls(path, files, pass_, stage, policy or Policy(), partial=partial, unreadable=missing, ignored=ignored)

    @property
    def is_file(self) -> bool:
        return os.path.isfile(self.path)

    @property
    def rank_files(self) -> list[RankFile]:
        return [RankFile(rank, f) for rank, f in self.files.items()]

    def wants(self, stage: int | None) -> bool:
        """Whether a dump analysed as on `stage` is selected."""
        return self.stage is None or stage == self.stage

    def job(self, progress: Progress | None = None, have: Iterable[Loaded] = ()) -> Job:
        """The job of every rank selected (whatever `--stage`), each rank's read in the policy's workers and folded
        once (`JobFold`): every command reading this selection reads this one. `have`: ranks the command has read
        already (`per_stage`), whose job is not read again."""
        if self.folded_job is None:
            known = {p.rank: p.facts.job for p in have if p.rank in self.files}
            jobs = dict(known)
            for got in self.stream(progress, of=rank_job_of, every_stage=True,
                                   have={r: j.stage for r, j in known.items()}):
                jobs[got.rank] = got
            fold = JobFold()
            for rank in self.files:  # in rank order, as they stream
                if rank in jobs:
                    fold.add(jobs[rank])
            self.folded_job = fold.job()
        return self.folded_job

    def require(self, stages: Iterable[int | None], where: str | None = None) -> None:
        require_stage(where or self.path, self.stage, stages, self.unreadable)

    # -- every rank, in worker processes

    def stream(self, progress: Progress | None = None, of: Callable[..., Any] = rank_facts,
               every_stage: bool = False, have: dict[int | None, int | None] | None = None) -> Iterator[Any]:
        """Every rank analysed (`of`, by default `dumpdir.rank_facts`, with the policy's lenient and deep;
        its result has a `stage`), those on the selected stage (`every_stage`: all, the caller keeps those
        of the stage, as a folder's job is of every rank), each yielded as it is done, in rank order
        (`dumpdir.iter_ranks`): a command that folds them holds none per rank; a stage no rank is on is a
        SelectionError. The selection errors come once every rank is read. `have`: ranks the caller has (rank ->
        its stage), not read again."""
        from functools import partial as bind

        fn = bind(of, lenient=self.policy.lenient, deep=self.policy.deep)
        have = have or {}
        stages: set[int | None] = set(have.values())
        read = len(have)
        files = [f for f in self.rank_files if f.rank not in have]
        for got in iter_ranks(bind(read_or_record, fn) if self.partial else fn, files,
                              self.policy.jobs, progress, self.policy.scheduler):
            if isinstance(got, Unreadable):
                self.unreadable.append(got)
                continue
            read += 1
            self._skips(getattr(got, "warnings", ()))
            stages.add(got.placed)
            if every_stage or self.wants(got.placed):
                yield got
        self.unreadable.sort(key=lambda u: -1 if u.rank is None else u.rank)
        if not read and self.unreadable:  # nothing to answer for (partial): the first rank's error is the answer
            raise (SelectionError if self.unreadable[0].file is None else InputError)(self.unreadable[0].error)
        self.require(stages)

    # -- some ranks, in this process

    def read(self, rank: int | None) -> Loaded:
        file = self.files[rank]
        dump = self.policy.loader(file, self.policy.lenient) if self.policy.lenient else self.policy.loader(file)
        self._skips(dump.warnings)
        return Loaded(rank, file, dump, analyze(dump, rank))

    def _skips(self, warnings: Iterable[Any]) -> None:
        """Record the lenient reader's skips (`DumpWarning`s saying `skipped: ...`) among `warnings`."""
        self.skipped += [w.message for w in warnings if w.message.startswith("skipped") and w.message not in self.skipped]

    def read_or_drop(self, rank: int | None) -> Loaded | None:
        """`read`; with `partial` a rank that cannot be read is recorded, dropped from `files` and None
        returned (unless it was the last one: then its error is raised)."""
        if not self.partial:
            return self.read(rank)
        try:
            return self.read(rank)
        except (IrtoolError, OSError) as exc:
            if len(self.files) == 1:
                raise
            self.unreadable.append(Unreadable(rank, self.files.pop(rank), str(exc)))
            self.unreadable.sort(key=lambda u: -1 if u.rank is None else u.rank)
            return None

    def first(self) -> Loaded:
        """The lowest rank on the selected stage (without a stage, the lowest rank readable); for a
        folder the choice is said in `notes`."""
        if self.stage is None or len(self.files) == 1:
            got = None
            while got is None:
                got = self.read_or_drop(next(iter(self.files)))
            self.require([got.stage])
            if not self.is_file and self.stage is None:
                self.notes.append(f"{self.path}: using rank {got.rank} ({stage_word(got.stage)}), the lowest rank; "
                                  "--stage picks the rank of another stage")
            return got
        return self.per_stage()[0]

    def per_stage(self) -> list[Loaded]:
        """The lowest rank of each stage (only the selected stage's when there is one), by stage, read
        without reading every rank: MindSpore puts rank r on stage r // (device_num / pipeline_stages),
        so stages ascend with the rank and a bisection over the sorted ranks finds where each stage
        begins (about stages x log2(ranks) reads; a folder whose stages are seen out of that order is
        read rank by rank instead; while probing, the lowest rank read of each stage is held, the only
        one that can begin it: each rank is read once, and no more dumps are held than stages). With
        `partial`, a rank that cannot be read is dropped (recorded) and the bisection runs again over the
        others. The choice is said in `notes` for a folder."""
        stages: dict[int | None, int] = {}  # by rank: kept when the bisection runs again
        held: dict[int | None, Loaded] = {}
        while (starts := self._stage_starts(stages, held)) is None:
            pass  # a rank could not be read: again over the ranks left
        ranks = list(self.files)
        picked = sorted((held[ranks[i]] if ranks[i] in held else self.read(ranks[i]) for i in starts),
                        key=lambda p: _order(p.stage))
        self.require([p.stage for p in picked])
        # a rank of unknown stage begins no stage: shown only when no rank's stage is known
        picked = [p for p in picked if self.wants(p.stage) and (p.stage is not None or len(picked) == 1)]
        if not self.is_file and len(self.files) > 1:
            which = ", ".join(f"rank {p.rank} ({stage_word(p.stage)})" for p in picked)
            self.notes.append(f"{self.path}: using {which}, the lowest rank "
                              + ("read; no rank's stage is known" if picked[0].stage is None else
                                 "of its stage" if len(picked) == 1 else "of each stage"))
        return picked

    def _stage_starts(self, stages: dict[int | None, int], held: dict[int | None, Loaded]) -> list[int] | None:
        """Indexes into `files` where a stage begins (`per_stage`), or None when a rank could not be read
        (it is no longer in `files`: `ranks` here is stale, so nothing more is read)."""
        ranks = list(self.files)
        at = {r: i for i, r in enumerate(ranks)}
        dropped = [False]

        def stage(i: int) -> int:
            if dropped[0]:
                return -1
            if ranks[i] not in stages:
                got = self.read_or_drop(ranks[i])
                if got is None:
                    dropped[0] = True
                    return -1
                stages[ranks[i]] = _order(got.stage)
                same = next((k for k in held if stages[k] == stages[ranks[i]]), None)
                if same is None or at[same] > i:  # only the lowest rank of a stage can begin it
                    held.pop(same, None)
                    held[ranks[i]] = got
            return stages[ranks[i]]

        starts = [0]
        ordered = [stage(0) <= stage(len(ranks) - 1)]

        def walk(lo: int, hi: int) -> None:  # stage(lo) != stage(hi); find every start in (lo, hi]
            if dropped[0]:
                return
            if hi - lo == 1:
                starts.append(hi)
                return
            mid = (lo + hi) // 2
            if not stage(lo) <= stage(mid) <= stage(hi):
                ordered[0] = False  # not MindSpore's order: read every rank instead
                return
            if stage(lo) != stage(mid):
                walk(lo, mid)
            if stage(mid) != stage(hi):
                walk(mid, hi)

        if ordered[0] and stage(0) != stage(len(ranks) - 1):
            walk(0, len(ranks) - 1)
        if not ordered[0] and not dropped[0]:
            first: dict[int, int] = {}
            for i in range(len(ranks)):
                first.setdefault(stage(i), i)
            if dropped[0]:
                return None
            starts = sorted(first.values(), key=lambda i: stages[ranks[i]])
        return None if dropped[0] else starts


# --- the logical graph of a selection ------------------------------------------------------------

def rank_job_of(rank: RankFile, lenient: bool = False, deep: bool = False) -> RankJob:
    """What one rank shows of the job (runs in a worker process; `deep` is not used)."""
    dump = rank.load(lenient)
    return analyze(dump, rank.rank).job


def job_of(sel: Selection, progress: Progress | None = None) -> Job:
    """The job of what `sel` selects: every rank's, whatever `--stage` (`Selection.job`, folded once)."""
    return sel.job(progress)


def logical_of(sel: Selection, progress: Progress | None = None, job: Job | None = None) -> LogicalGraph:
    """The logical graph of what `sel` selects (docs/logical.md): the job of every rank (`job_of`, unless
    given), the graph from the lowest rank of each stage (every stage, whatever `--stage`: the network
    as the user wrote it is all of them)."""
    from .parallel.logical import logical_graph  # the cost records: only diff and view across configurations

    job = sel.job(progress) if job is None else job
    every = Selection(sel.path, dict(sel.files), sel.pass_name, None, sel.policy, partial=sel.partial)
    stages = every.per_stage()
    sel.unreadable += [u for u in every.unreadable if u not in sel.unreadable]
    return logical_graph([(p.rank, p.dump, p.facts) for p in stages], job, sel.path)
