"""Diff two dumps (or two dump folders) for CI: the configuration first, then communication,
strategies, operators, parameters.

The two `Job`s are compared first (`parallel.job.job_changes`). When they are two parallel
configurations of one network (dp/mp/pp/ep/sp, micro batches, stages and their layers, recompute or
optimizer sharding differ) the two folders are compared as one logical graph
(`parallel.logical.compare_logical`): rank 0 of one holds other slices of other layers' work than
rank 0 of the other. Otherwise nodes are matched rank with rank by what survives a recompilation -
stage, normalised scope, operator, category, order of occurrence within (scope, operator) and
shapes - never by `%N`, `CNode_123` names, unique ids, addresses or paths (see `irtool.diff.match`).
Output formats live in `irtool.diff.report`; the JSON schema `irtool.diff/2` is documented in
docs/diff.md.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ..dumpdir import rank_of
from ..errors import InputError
from ..ir import Dump, pass_name
from ..parallel import ParallelFacts, analyze
from ..parallel.job import Job, JobChange, JobFold, job_changes
from ..parallel.logical import LogicalDiff, LogicalGraph, compare_logical, logical_graph
from ..parallel.records import Bytes, plain
from ..parallel.scope import op_number
from ..present import parse_bytes
from ..present.job import changes_line
from ..selection import Loaded, Selection, job_of, logical_of
from .facts import STRATEGY_FIELDS, CommFact, StrategyFact, comm_facts, strategy_facts, strategy_micro
from .match import align_scopes, match
from .records import Change, CommBytes, CommChange, OpCount, ParamChange, ParameterComm, RankSpecific, StrategyChange

SCHEMA = "irtool.diff/2"


FAIL_KINDS = ("config", "comm", "strategy", "ops", "params", "any")
DEFAULT_FAIL_ON = ("config", "comm", "strategy")
COMM_FIELDS = ("category", "group_size", "shape", "dtype", "bytes")


@dataclass
class RankDiff:
    """The differences between one old dump and one new dump (usually the same rank), as typed
    change records (`irtool.diff.records`)."""

    old_path: str
    new_path: str
    old_rank: int | None
    new_rank: int | None
    old_stage: int | None
    new_stage: int | None
    comm: list[CommChange] = field(default_factory=list)
    rank_specific: list[RankSpecific] = field(default_factory=list)
    strategy: list[StrategyChange] = field(default_factory=list)
    ops: list[OpCount] = field(default_factory=list)
    params: list[ParamChange] = field(default_factory=list)
    comm_bytes: list[CommBytes] = field(default_factory=list)
    parameter_comm: list[ParameterComm] = field(default_factory=list)
    renamed_scopes: int = 0  # old scopes matched to new ones through a wrapper-cell rename
    # node uid -> "added" / "removed" / "changed", per side, and why a changed one changed: its own "strategy" or
    # its "communication" (`parallel.logical.CAUSES`' words; a node with both, its strategy) (for viewers; not in the JSON)
    old_marks: dict[str, str] = field(default_factory=dict)
    new_marks: dict[str, str] = field(default_factory=dict)
    old_causes: dict[str, str] = field(default_factory=dict)
    new_causes: dict[str, str] = field(default_factory=dict)

    @property
    def old_pass(self) -> str | None:
        return pass_of(self.old_path)

    @property
    def new_pass(self) -> str | None:
        return pass_of(self.new_path)

    def mark(self, old: CommFact | StrategyFact | None, new: CommFact | StrategyFact | None, change: str) -> None:
        cause = "strategy" if isinstance(old or new, StrategyFact) else "communication"
        for marks, causes, fact in ((self.old_marks, self.old_causes, old), (self.new_marks, self.new_causes, new)):
            if fact is not None:
                marks.setdefault(fact.uid, change)
                if change == "changed" and causes.get(fact.uid) != "strategy":
                    causes[fact.uid] = cause

    @property
    def comm_bytes_total(self) -> tuple[int, int]:
        return (sum(r.old.total for r in self.comm_bytes), sum(r.new.total for r in self.comm_bytes))

    def counts(self) -> dict[str, int]:
        return {"comm": len(self.comm), "strategy": len(self.strategy), "ops": len(self.ops),
                "params": len(self.params), "rank_specific": len(self.rank_specific)}

    def as_dict(self) -> dict[str, Any]:
        old_total, new_total = self.comm_bytes_total
        return {"old": {"path": self.old_path, "rank": self.old_rank, "stage": self.old_stage, "pass": self.old_pass},
                "new": {"path": self.new_path, "rank": self.new_rank, "stage": self.new_stage, "pass": self.new_pass},
                "counts": self.counts(), "comm": [e.as_dict() for e in self.comm],
                "rank_specific": [e.as_dict() for e in self.rank_specific],
                "strategy": [e.as_dict() for e in self.strategy], "ops": [e.as_dict() for e in self.ops],
                "params": [e.as_dict() for e in self.params], "comm_bytes": [e.as_dict() for e in self.comm_bytes],
                "comm_bytes_total": {"old": old_total, "new": new_total},
                "parameter_comm": [e.as_dict() for e in self.parameter_comm], "renamed_scopes": self.renamed_scopes}


@dataclass(frozen=True)
class SideUnreadable:
    """A rank of one side (`old` or `new`) that could not be read: its located error, or no dump of
    the pass (`file` None). Its pair is not compared; the other ranks are."""

    side: str
    rank: int | None
    file: str | None
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {"side": self.side, "rank": self.rank, "file": self.file, "error": self.error}


@dataclass
class DiffResult:
    """The whole diff: each side's job and what changed in it (said first), then either one RankDiff
    per matched rank (one configuration) or the logical comparison (two configurations of one
    network), plus ranks and pipeline stages present on one side only (a folder that lost a rank or a
    stage is a change, never "identical")."""

    ranks: list[RankDiff] = field(default_factory=list)
    only_old: list[int] = field(default_factory=list)
    only_new: list[int] = field(default_factory=list)
    only_old_stages: list[int] = field(default_factory=list)
    only_new_stages: list[int] = field(default_factory=list)
    # passes dumped (files in the rank folders) on one side only, when both sides are folders
    only_old_passes: list[str] = field(default_factory=list)
    only_new_passes: list[str] = field(default_factory=list)
    # ranks that could not be read on either side (a located error, or no dump of the pass): not compared
    unreadable: list[SideUnreadable] = field(default_factory=list)
    old_job: Job | None = None
    new_job: Job | None = None
    config: list[JobChange] = field(default_factory=list)  # the jobs' differences, both values known
    logical: LogicalDiff | None = None  # across configurations: the logical graphs compared (then `ranks` is empty)

    @property
    def mode(self) -> str:
        """`logical` (two configurations compared as one logical graph) or `nodes` (rank with rank)."""
        return "logical" if self.logical is not None else "nodes"

    @property
    def one_sided(self) -> bool:
        return bool(self.only_old or self.only_new or self.only_old_stages or self.only_new_stages
                    or self.only_old_passes or self.only_new_passes)

    def logical_counts(self) -> dict[str, int]:
        """Across configurations, the user operators (`--fail-on` kinds): whose communication appeared,
        vanished or changed (`comm`), whose strategy changed, on one side only (`ops`), whose held
        weights changed (`params`)."""
        out = {"comm": 0, "strategy": 0, "ops": 0, "params": 0}
        for p in self.logical.ops if self.logical is not None else []:
            out["comm"] += bool(p.comm_changes())
            out["strategy"] += "strategy" in p.fields
            out["ops"] += p.change in ("added", "removed")
            out["params"] += "weights" in p.fields
        return out

    def failures(self, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
                 max_comm_bytes_increase: str | None = None) -> list[str]:
        """Reasons to fail, one line each, the configuration change first; empty when nothing relevant changed."""
        kinds = set(parse_fail_on(fail_on))
        if "any" in kinds:
            kinds = {"config", "comm", "strategy", "ops", "params"}
        reasons = []
        if "config" in kinds and self.config:
            reasons.append(f"configuration: {changes_line(self.config)}")
        # a rank or stage on one side only takes its communication with it: a `comm` failure
        if "comm" in kinds and (self.only_old or self.only_new):
            reasons.append(f"ranks only in old: {_ranks(self.only_old)}, only in new: {_ranks(self.only_new)}")
        if "comm" in kinds and (self.only_old_stages or self.only_new_stages):
            reasons.append(f"pipeline stages only in old: {_ranks(self.only_old_stages)}, "
                           f"only in new: {_ranks(self.only_new_stages)}")
        if "comm" in kinds and (self.only_old_passes or self.only_new_passes):
            reasons.append(f"passes only in old: {', '.join(self.only_old_passes) or 'none'}, "
                           f"only in new: {', '.join(self.only_new_passes) or 'none'}")
        limit = parse_threshold(max_comm_bytes_increase) if max_comm_bytes_increase else None
        if self.logical is not None:
            counts = self.logical_counts()
            what = {"comm": "user operator(s) whose communication changed", "strategy": "strategy change(s)",
                    "ops": "user operator(s) on one side only", "params": "user operator(s) whose weights changed"}
            for kind in ("comm", "strategy", "ops", "params"):
                if kind in kinds and counts[kind]:
                    reasons.append(f"logical graph: {counts[kind]} {what[kind]}")
            if limit is not None:
                old = {s.stage: s for s in self.logical.old.stages}
                for s in self.logical.new.stages:
                    if s.stage in old:
                        a = sum(u.bytes.total for u in old[s.stage].comm.values())
                        b = sum(u.bytes.total for u in s.comm.values())
                        if _exceeds(a, b, limit):
                            reasons.append(f"stage {s.stage}: communication bytes per device {a} -> {b} "
                                           f"exceed +{max_comm_bytes_increase}")
            return reasons
        for r in self.ranks:
            label = _label(r)
            counts = r.counts()
            for kind in ("comm", "strategy", "ops", "params"):
                if kind in kinds and counts[kind]:
                    reasons.append(f"{label}: {counts[kind]} {kind} difference(s)")
            if limit is not None:
                old, new = r.comm_bytes_total
                if _exceeds(old, new, limit):
                    reasons.append(f"{label}: communication bytes {old} -> {new} exceed +{max_comm_bytes_increase}")
        return reasons

    def as_dict(self, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
                max_comm_bytes_increase: str | None = None, verdict: str = "") -> dict[str, Any]:
        reasons = self.failures(fail_on, max_comm_bytes_increase)
        return {"schema": SCHEMA, "verdict": verdict, "failed": bool(reasons), "failures": reasons,
                "identical": self.identical, "mode": self.mode,
                "configuration": {"changes": [c.as_dict() for c in self.config],
                                  "old": self.old_job.as_dict() if self.old_job else None,
                                  "new": self.new_job.as_dict() if self.new_job else None},
                "fail_on": sorted(set(parse_fail_on(fail_on))), "max_comm_bytes_increase": max_comm_bytes_increase,
                "only_old_ranks": self.only_old, "only_new_ranks": self.only_new,
                "only_old_stages": self.only_old_stages, "only_new_stages": self.only_new_stages,
                "only_old_passes": self.only_old_passes, "only_new_passes": self.only_new_passes,
                "unreadable": [u.as_dict() for u in self.unreadable],
                "ranks": [r.as_dict() for r in self.ranks],
                "logical": self.logical.as_dict() if self.logical is not None else None}

    @property
    def identical(self) -> bool:
        """No difference at all, rank-specific ones aside, the same configuration, the same ranks and
        stages on both sides, and every rank read (a rank not compared is never called identical)."""
        if self.one_sided or self.unreadable or self.config or self.logical is not None:
            return False
        return all(not any(v for k, v in r.counts().items() if k != "rank_specific") for r in self.ranks)


_PASS = re.compile(r"^(?:\d+_)?.+?_\d+\.ir(?:\.(?:xz|gz|bz2))?$")  # MindSpore's `[N_]pass_SEQ.ir`


def pass_of(path: str) -> str | None:
    """The pass a dump file holds, from its name: `19_validate_0078.ir.xz` -> `validate`,
    `step_parallel_end_0019.ir` -> `step_parallel_end`; None for a name MindSpore did not give."""
    return pass_name(path) if _PASS.match(os.path.basename(path)) else None  # the name as every command reads it


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks)) or "none"


def _label(r: RankDiff) -> str:
    if r.old_rank == r.new_rank:
        return f"rank {r.old_rank}" if r.old_rank is not None else os.path.basename(r.new_path)
    def name(rank: int | None) -> str:
        return "dump" if rank is None else f"rank {rank}"

    return f"{name(r.old_rank)} vs {name(r.new_rank)}"


def parse_fail_on(values: Iterable[str] | str) -> list[str]:
    """`["comm,strategy", "ops"]` -> `["comm", "strategy", "ops"]`; unknown kinds are an error."""
    if isinstance(values, str):
        values = [values]
    out = []
    for value in values:
        for kind in value.split(","):
            kind = kind.strip()
            if not kind:
                continue
            if kind not in FAIL_KINDS:
                raise InputError(f"--fail-on: unknown kind {kind!r} (choose from {', '.join(FAIL_KINDS)})")
            out.append(kind)
    return out


def parse_threshold(text: str) -> tuple[str, float]:
    """`5%` -> ("relative", 0.05); `1048576`, `10MB`, `4MiB` -> ("absolute", bytes)."""
    s = text.strip().lower().replace(" ", "")
    if s.endswith("%"):
        try:
            return "relative", float(s[:-1]) / 100.0
        except ValueError:
            pass
    elif (size := parse_bytes(s)) is not None:
        return "absolute", size
    raise InputError(f"--max-comm-bytes-increase: cannot read {text!r} (use e.g. 5% or 1048576 or 10MB)")


def _exceeds(old: int, new: int, limit: tuple[str, float]) -> bool:
    kind, value = limit
    if kind == "relative":
        return new > old * (1.0 + value) if old else new > 0
    return new - old > value


# --- the diff itself

Side = tuple[Dump, ParallelFacts]


def diff(old: Dump, new: Dump, old_rank: int | None = None, new_rank: int | None = None,
         by_rank: bool = False) -> DiffResult:
    """Diff two loaded dumps. Ranks default to the `rank_N` folder of each path; when the two
    ranks differ, differences in group membership and peer ranks are reported as rank-specific.
    Two configurations (`by_rank` False) are compared as one logical graph of the two dumps' stages."""
    old_rank = rank_of(old.path) if old_rank is None else old_rank
    new_rank = rank_of(new.path) if new_rank is None else new_rank
    a, b = Loaded(old_rank, old.path, old, analyze(old)), Loaded(new_rank, new.path, new, analyze(new))
    result = DiffResult(ranks=[diff_rank((old, a.facts), (new, b.facts), old_rank, new_rank)])
    sides = _Side(old.path), _Side(new.path)
    sides[0].add(a)
    sides[1].add(b)
    _configure(result, *sides, by_rank)
    return result


class _Side:
    """One side's job, folded from every rank read, and the first rank read on each stage (for its
    logical graph)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.job = JobFold()
        self.stages: dict[int, Loaded] = {}

    def add(self, got: Loaded) -> None:
        self.job.add(got.facts.job)
        self.stages.setdefault(got.stage, got)

    def graph(self, job: Job) -> LogicalGraph:
        return logical_graph([(x.rank, x.dump, x.facts) for _, x in sorted(self.stages.items())], job, self.path)


def _configure(result: DiffResult, old: _Side, new: _Side, by_rank: bool) -> None:
    """The jobs and their differences; across configurations (a structural change, unless `by_rank`)
    the logical comparison replaces the rank pairs, whose ranks and stages no longer correspond."""
    result.old_job, result.new_job = old.job.job(), new.job.job()
    result.config = job_changes(result.old_job, result.new_job)
    if by_rank or not across_configurations(result.config) or not old.stages or not new.stages:
        return
    result.logical = compare_logical(old.graph(result.old_job), new.graph(result.new_job))
    result.ranks = []
    result.only_old, result.only_new, result.only_old_stages, result.only_new_stages = [], [], [], []


def across_configurations(changes: Iterable[JobChange]) -> bool:
    """Two jobs are two parallel configurations of one network (a structural change: dp/mp/pp/ep/sp,
    micro batches, stages and their layers, recompute, optimizer sharding): compared as one logical
    graph, by `diff` and by `view`."""
    return any(c.structural for c in changes)


def logical_diff(old: Selection, new: Selection) -> LogicalDiff | None:
    """Two selections' logical graphs compared when they are two configurations (`across_configurations`
    of the jobs of every rank of each); None for one configuration (`irtool view A B` then shows them
    rank with rank)."""
    jobs = job_of(old), job_of(new)
    if not across_configurations(job_changes(*jobs)):
        return None
    return compare_logical(logical_of(old, job=jobs[0]), logical_of(new, job=jobs[1]))


def diff_rank(old_side: Side, new_side: Side, old_rank: int | None, new_rank: int | None) -> RankDiff:
    """The RankDiff of two analysed dumps."""
    (old, old_facts), (new, new_facts) = old_side, new_side
    r = RankDiff(old.path, new.path, old_rank, new_rank, old_facts.stage, new_facts.stage)
    cross_rank = old_rank is not None and new_rank is not None and old_rank != new_rank
    old_comm, new_comm = comm_facts(old_facts), comm_facts(new_facts)
    old_strat, new_strat = strategy_facts(old_facts), strategy_facts(new_facts)
    if (old_facts.stage is None) != (new_facts.stage is None):
        # an early pass does not know the stage yet (docs/parallel.md §7): unknown -> known is no change
        known = old_facts.stage if old_facts.stage is not None else new_facts.stage
        old_comm, new_comm = [replace(f, stage=known) for f in old_comm], [replace(f, stage=known) for f in new_comm]
        old_strat, new_strat = [replace(f, stage=known) for f in old_strat], [replace(f, stage=known) for f in new_strat]
    renames = align_scopes([f.scope for f in old_comm + old_strat], [f.scope for f in new_comm + new_strat])
    old_comm = [replace(f, scope=renames.get(f.scope, f.scope)) for f in old_comm]
    old_strat = [replace(f, scope=renames.get(f.scope, f.scope)) for f in old_strat]
    r.renamed_scopes = len(renames)
    _diff_comm(r, old_comm, new_comm, cross_rank)
    _diff_strategies(r, (old_facts.table, old_strat), (new_facts.table, new_strat))
    r.parameter_comm = parameter_comm(old_comm, new_comm)
    r.ops = _diff_ops(old, new)
    r.params = _diff_params(old, new)
    r.comm_bytes = _comm_bytes(old_comm, new_comm)
    return r


def _known_differ(a: Any, b: Any) -> bool:
    """A value that one side does not know (a pass before step_parallel_end has no shapes or group
    members yet) is not a change: only two known values that differ are."""
    return a is not None and b is not None and a != b


def _diff_comm(r: RankDiff, old: list[CommFact], new: list[CommFact], cross_rank: bool) -> None:
    same, changed, removed, added = match(old, new, lambda c: c.identity, CommFact.signature, lambda c: c.order)
    # Nodes that carry a parameter (gradient aggregation, optimizer parallel) pair by it when their
    # scopes did not line up (a wrapper that moved the gradient reducer, CSE'd backward scopes).
    lone_old = [c for c in removed if c.comm.parameter]
    lone_new = [c for c in added if c.comm.parameter]
    if lone_old and lone_new:
        s2, c2, r2, a2 = match(lone_old, lone_new, lambda c: (c.stage, c.op, c.category, c.comm.parameter,
                                                              c.comm.micro),
                               CommFact.signature, lambda c: c.order)
        same, changed = same + s2, changed + c2
        removed = [c for c in removed if not c.comm.parameter] + r2
        added = [c for c in added if not c.comm.parameter] + a2
    for c in removed:
        r.comm.append(_comm_change("removed", c, (), c, None))
        r.mark(c, None, "removed")
    for c in added:
        r.comm.append(_comm_change("added", c, (), None, c))
        r.mark(None, c, "added")
    for a, b in changed + same:
        fields = [f for f in COMM_FIELDS if _known_differ(a.value(f), b.value(f))]
        specific = _rank_fields(a, b)
        if specific and not cross_rank:
            fields.extend(f for f in specific if f == "group_ranks")
        if fields:
            r.comm.append(_comm_change("changed", b, tuple(fields), a, b))
            r.mark(a, b, "changed")
        if specific and cross_rank:
            r.rank_specific.append(RankSpecific(
                b.stage, b.scope, b.op, b.category, b.comm.scope, b.comm.parameter, tuple(specific),
                {f: plain(_rank_value(a, f)) for f in specific}, {f: plain(_rank_value(b, f)) for f in specific}))
    # by identity, then in the order the nodes were created (`-opN`), then printed
    r.comm.sort(key=lambda e: (_sort_stage(e.stage), e.scope, e.op, e.change, e.side.order))
    r.rank_specific.sort(key=lambda e: (_sort_stage(e.stage), e.scope, e.op, op_number(e.node_scope)))


def _comm_change(change: Change, c: CommFact, fields: tuple[str, ...], old: CommFact | None,
                 new: CommFact | None) -> CommChange:
    return CommChange(change, c.stage, c.scope, c.op, c.category, c.comm.scope, c.comm.parameter, fields, old, new)


def _sort_stage(stage: int | None) -> int:
    return -1 if stage is None else stage


def _param_ops(facts: list[CommFact]) -> dict[str, str]:
    """Parameter -> its gradient / optimizer communication as `AllGather + ReduceScatter`."""
    ops: dict[str, set[str]] = defaultdict(set)
    for f in facts:
        if f.comm.parameter and f.category in ("gradient-aggregation", "optimizer-parallel"):
            ops[f.comm.parameter].add(f.op)
    return {p: " + ".join(sorted(v)) for p, v in ops.items()}


def parameter_comm(old: list[CommFact], new: list[CommFact]) -> list[ParameterComm]:
    """Parameters whose gradient or optimizer communication changed, grouped by the change
    (`AllReduce` -> `AllGather + ReduceScatter` for 13 parameters); `—` for none."""
    a, b = _param_ops(old), _param_ops(new)
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for p in sorted(set(a) | set(b)):
        if a.get(p) != b.get(p):
            groups[(a.get(p, "—"), b.get(p, "—"))].append(p)
    return [ParameterComm(o, n, tuple(ps)) for (o, n), ps in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def _rank_fields(a: CommFact, b: CommFact) -> list[str]:
    out = [f for f in ("group", "group_ranks") if _known_differ(a.value(f), b.value(f))]
    pa, pb = a.comm.rank_attrs, b.comm.rank_attrs
    out.extend(k for k in sorted(set(pa) | set(pb)) if _known_differ(pa.get(k), pb.get(k)))
    return out


def _rank_value(c: CommFact, name: str) -> Any:
    return c.value(name) if name in ("group", "group_ranks") else c.comm.rank_attrs.get(name)


def _diff_strategies(r: RankDiff, old_side: tuple[Any, list[StrategyFact]],
                     new_side: tuple[Any, list[StrategyFact]]) -> None:
    """`old_side`/`new_side`: (fact table, strategies) of each dump."""
    (old_table, old), (new_table, new) = old_side, new_side
    same, changed, removed, added = _match_strategies(old, new)
    # A group whose nodes did not all pair the same is matched again with each node's micro batch:
    # paired by order alone, a change in micro 0 would be reported on the last micro batch's copy.
    dirty = {s.identity for s in removed + added} | {a.identity for a, _ in changed}
    if dirty:
        old_micro = strategy_micro(old_table, {s.uid for s in old if s.identity in dirty})
        new_micro = strategy_micro(new_table, {s.uid for s in new if s.identity in dirty})
        old_dirty = [replace(s, micro=old_micro.get(s.uid)) for s in old if s.identity in dirty]
        new_dirty = [replace(s, micro=new_micro.get(s.uid)) for s in new if s.identity in dirty]
        same = [(a, b) for a, b in same if a.identity not in dirty]
        s2, changed, removed, added = _match_strategies(old_dirty, new_dirty)
        same += s2
    for s in removed:
        r.strategy.append(_strategy_change("removed", s, None, _values(s), None))
        r.mark(s, None, "removed")
    for s in added:
        r.strategy.append(_strategy_change("added", s, None, None, _values(s)))
        r.mark(None, s, "added")
    for a, b in changed:
        for f in STRATEGY_FIELDS:
            if a.value(f) != b.value(f):
                r.mark(a, b, "changed")
                r.strategy.append(_strategy_change("changed", b, f, a.value(f), b.value(f)))
    r.strategy.sort(key=lambda e: (_sort_stage(e.stage), e.scope, e.op, e.change, e.field or ""))


def _match_strategies(old: list[StrategyFact], new: list[StrategyFact]) -> tuple[
        list[tuple[StrategyFact, StrategyFact]], list[tuple[StrategyFact, StrategyFact]], list[StrategyFact],
        list[StrategyFact]]:
    return match(old, new, lambda s: s.identity, StrategyFact.signature, lambda s: s.order)


def _values(s: StrategyFact) -> dict[str, Any]:
    return {k: s.value(k) for k in STRATEGY_FIELDS}


def _strategy_change(change: Change, s: StrategyFact, name: str | None, old: Any, new: Any) -> StrategyChange:
    return StrategyChange(change, s.stage, s.scope, s.op, s.strategy.instance, s.strategy.scope, name, old, new, s.micro)


def _diff_ops(old: Dump, new: Dump) -> list[OpCount]:
    a, b = old.op_histogram(), new.op_histogram()
    return [OpCount(op, a.get(op, 0), b.get(op, 0)) for op in sorted(set(a) | set(b)) if a.get(op, 0) != b.get(op, 0)]


def _diff_params(old: Dump, new: Dump) -> list[ParamChange]:
    a = {p.name: p for p in old.params}
    b = {p.name: p for p in new.params}
    out = []
    for name in sorted(set(a) | set(b)):
        pa, pb = a.get(name), b.get(name)
        ta = pa.type if pa else None
        tb = pb.type if pb else None
        old_shape, new_shape = plain(ta.shape) if ta else None, plain(tb.shape) if tb else None
        old_dtype, new_dtype = (ta.dtype if ta else None), (tb.dtype if tb else None)
        if pa is None or pb is None:
            change: Change = "added" if pa is None else "removed"
        elif old_shape != new_shape or old_dtype != new_dtype:
            change = "changed"
        else:
            continue
        out.append(ParamChange(change, name, old_shape, new_shape, old_dtype, new_dtype))
    return out


def _comm_bytes(old: list[CommFact], new: list[CommFact]) -> list[CommBytes]:
    table: dict[tuple, list[Bytes]] = defaultdict(lambda: [Bytes(), Bytes()])
    for side, facts in ((0, old), (1, new)):
        for c in facts:
            table[(c.stage, c.category)][side] += c.comm.step_bytes
    return [CommBytes(s, cat, a, b)
            for (s, cat), (a, b) in sorted(table.items(), key=lambda kv: (_sort_stage(kv[0][0]), kv[0][1]))]


# --- files and folders

def diff_dirs(old: str | Selection, new: str | Selection, pass_name: str | None = None,
              stage: int | None = None, by_rank: bool = False) -> DiffResult:
    """Diff two dumps or dump folders (paths, or the CLI's selections): the jobs first (of every rank
    read); across configurations (unless `by_rank`) the logical graphs of both; else ranks matched
    by rank number (a lone rank on each side is compared with the other even when the numbers
    differ). With a stage, only ranks whose dump is on that pipeline stage on either side are
    compared rank with rank (a logical comparison is of the whole job)."""
    a_sel, b_sel = (s if isinstance(s, Selection) else Selection.of(s, stage, pass_name) for s in (old, new))
    old_files, new_files = a_sel.files, b_sel.files
    if len(old_files) == 1 and len(new_files) == 1:
        pairs = [(next(iter(old_files)), next(iter(new_files)))]
    else:
        pairs = [(r, r) for r in sorted(set(old_files) & set(new_files), key=lambda r: -1 if r is None else r)]
    result = DiffResult()
    sides = _Side(a_sel.path), _Side(b_sel.path)
    seen: list[int | None] = []
    old_stages: set[int] = set()
    new_stages: set[int] = set()
    # a rank unreadable on either side (partial selections) is reported, not compared and not one-sided
    gone = {u.rank for sel in (a_sel, b_sel) for u in sel.unreadable}
    pairs = [p for p in pairs if not {*p} & gone]
    compared: list[tuple[int | None, int | None]] = []
    for old_rank, new_rank in pairs:
        a, b = a_sel.read_or_drop(old_rank), b_sel.read_or_drop(new_rank)
        if a is None or b is None:
            continue
        compared.append((old_rank, new_rank))
        sides[0].add(a)
        sides[1].add(b)
        seen += (a.stage, b.stage)  # placed: a rank of unknown stage is on no stage (`Loaded.stage`)
        if a_sel.wants(a.stage) or b_sel.wants(b.stage):
            result.ranks.append(diff_rank((a.dump, a.facts), (b.dump, b.facts), old_rank, new_rank))
            old_stages.add(a.stage)
            new_stages.add(b.stage)
    where = f"{a_sel.path} and {b_sel.path}"
    if not a_sel.is_file and not b_sel.is_file:
        # a pass one rank dumped on one side only (a compilation that stopped early), per rank number
        only_old: set[str] = set()
        only_new: set[str] = set()
        for old_rank, new_rank in compared:
            if old_rank == new_rank:
                a_passes, b_passes = _passes(old_files[old_rank]), _passes(new_files[new_rank])
                only_old |= a_passes - b_passes
                only_new |= b_passes - a_passes
        result.only_old_passes, result.only_new_passes = sorted(only_old), sorted(only_new)
    if len(pairs) == 1 and len(old_files) == 1 and len(new_files) == 1 and not (a_sel.unreadable or b_sel.unreadable):
        # a stage no rank is on compares nothing: an error, not a clean diff that would pass CI
        a_sel.require(seen, where)
        _configure(result, *sides, by_rank)
        a_sel.folded_job, b_sel.folded_job = result.old_job, result.new_job  # every rank read: the selections' jobs
        return result
    # A rank on one side only is a change (its stage may be gone with it): read it for its stage.
    gone = {u.rank for sel in (a_sel, b_sel) for u in sel.unreadable}  # again: reading may have dropped some
    for sel, others, only, stages, side in ((a_sel, new_files, result.only_old, old_stages, sides[0]),
                                            (b_sel, old_files, result.only_new, new_stages, sides[1])):
        for rank in sorted(r for r in sel.files if r not in others and r not in gone and r is not None):
            got = sel.read_or_drop(rank)
            if got is None:
                continue
            side.add(got)
            rank_stage = got.stage
            seen.append(rank_stage)
            if sel.wants(rank_stage):
                only.append(rank)
                stages.add(rank_stage)
    # a stage no rank is on compares nothing: an error, not a clean diff that would pass CI
    a_sel.require(seen, where)
    result.only_old_stages = sorted(s for s in old_stages - new_stages if s is not None)  # unknown is no stage
    result.only_new_stages = sorted(s for s in new_stages - old_stages if s is not None)
    _unreadable(result, a_sel, b_sel)
    _configure(result, *sides, by_rank)
    a_sel.folded_job, b_sel.folded_job = result.old_job, result.new_job
    return result


def _unreadable(result: DiffResult, old: Selection, new: Selection) -> None:
    result.unreadable = [SideUnreadable(side, u.rank, u.file, u.error)
                         for side, sel in (("old", old), ("new", new)) for u in sel.unreadable]


def _passes(file: str) -> set[str]:
    """The passes dumped in the rank folder holding `file`."""
    return {p for name in os.listdir(os.path.dirname(file) or ".") if (p := pass_of(name)) is not None}
