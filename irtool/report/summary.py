"""What `irtool summarize` reports: the summary of a dump (`file_summary`) or a dump folder
(`dir_summary`) as records from `irtool.parallel`, written as text or Markdown tables from those
records, or as JSON (`as_dict`, made once here).

The JSON form is what CI reads; its fields are documented in README.md ("JSON output") and its
`schema` string changes whenever a field changes meaning.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..dumpdir import RankFile, rank_order
from ..ir import Dump, DumpWarning, SymbolEngine, check
from ..parallel import ParallelFacts, analyze
from ..parallel.failure import FailureRecord, StrategyMisfit, failure_record, strategy_misfits
from ..parallel.job import Job, JobFold, RankJob, job_of
from ..parallel.layers import layer_comm
from ..parallel.optimizer import optimizer_shards
from ..parallel.pairs import P2P, Unpaired, UnpairedFold
from ..parallel.peer import rank_of
from ..parallel.records import LayerComm, OptimizerShard, RedistributionChain, Strategy
from ..parallel.totals import (
    CommTotals,
    GradientAggregation,
    ScopeTotal,
    SendReceive,
    StageLink,
    Tally,
    Traffic,
    TrafficRow,
    comm_totals,
    gradient_aggregation,
    scope_totals,
    send_receive,
    stage_matrix,
    traffic,
)
from ..present import DEFAULT_LIMIT, Block, Records, Table, bytes_text, cell, rank_list, strategy_text
from ..present.job import job_line, job_table
from ..spill import Spill
from .answers import answer_blocks, dir_answer_blocks, folder_answer_tables, strategies_table
from .headline import (
    communication_line,
    kernels_line,
    plural,
    redistributions_text,
    sharding_text,
    unknowns_line,
    unpaired_text,
)

if TYPE_CHECKING:  # the cost model is loaded only when asked for (`--cost`)
    from ..parallel.balance import StageCost
    from ..parallel.hardware import Profile

SCHEMA = "irtool.summary/3"
TOP_SCOPES = 10  # `top_scopes` keeps the cells that move the most bytes (the text title says of how many)


@dataclass
class FileSummary:
    """One dump's summary: the dump, its facts and the records computed from them."""

    dump: Dump
    facts: ParallelFacts
    warnings: list[DumpWarning]
    depth: int | None
    totals: CommTotals
    pairs: list[SendReceive]
    gradients: list[GradientAggregation]
    scopes: list[ScopeTotal]
    shards: list[OptimizerShard]
    layers: list[LayerComm]
    traffic: Traffic
    job: Job
    failure: FailureRecord | None = None  # analyze_fail.ir: what failed
    misfits: list[StrategyMisfit] = field(default_factory=list)  # strategies that do not divide a shape

    def as_dict(self, stream: bool = False) -> dict[str, Any]:
        """The JSON of schema `irtool.summary/3`; `stream`: its long lists (communication, strategies,
        redistributions) as `Records`, each record made as it is written (`json_pieces`), never all held."""
        d, f, info = self.dump, self.facts, self.facts.stage_info

        def listed(records: list[Any]) -> list[dict[str, Any]] | Records:
            return Records(len(records), lambda: (r.as_dict() for r in records)) if stream else \
                [r.as_dict() for r in records]

        hist = d.op_histogram()
        return {
            "schema": SCHEMA, "path": d.path, "entry": d.entry, "sorted_order": d.sorted_order, "bytes": d.size,
            "counts": d.counts, "header": dict(d.declared),
            "ops": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
            "subgraphs": [{"name": g.name, "nodes": len(g.nodes), "params": len(g.params)} for g in d.subgraphs],
            "warnings": [w.as_dict() for w in self.warnings],
            "job": self.job.as_dict(),
            "stage": info.stage,
            "stage_evidence": {"votes": {str(k): v for k, v in info.votes.items()}, "how": info.how,
                               "chunks": f.job.chunks, "peer_stages": info.peer_stages},
            "comm": listed(f.comm),
            "comm_totals": self.totals.as_dict(),
            "groups": [g.as_dict() for _, g in sorted(f.groups.items())],
            "send_receive": [e.as_dict() for e in self.pairs],
            "gradient_aggregation": [e.as_dict() for e in self.gradients],
            "strategies": listed(f.strategies),
            "top_scopes": [e.as_dict() for e in self.scopes[:TOP_SCOPES]],
            "no_op_gathers": [c.as_dict() for c in f.no_op_gathers],
            "redistributions": listed(f.chains),
            "optimizer_sharding": [o.as_dict() for o in self.shards],
            "layers": {"by_scope_depth": self.depth, "rows": [r.as_dict() for r in self.layers]},
            "traffic": self.traffic.as_dict(),
            # kernel graphs only: the device's execution order, streams and communication kernels
            **({"kernels": k.as_dict()} if (k := f.table.get("kernels")) is not None else {}),
            # dynamic-shape dumps only: their `symbol engine details:` blocks
            **({"symbol_engines": [_symbol_engine(e) for e in d.symbol_engines]} if d.symbol_engines else {}),
            # analyze_fail.ir only: the failing node (docs/failure.md)
            **({"failure": self.failure.as_dict()} if self.failure is not None else {}),
            **({"strategy_misfits": [m.as_dict() for m in self.misfits]} if self.misfits else {}),
        }


def _symbol_engine(e: SymbolEngine) -> dict[str, Any]:
    hist = e.op_histogram()
    return {"name": e.name, "graph": e.graph, "line": e.line, "symbols": len(e.symbols),
            "ops": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))}


def file_summary(dump: Dump, facts: ParallelFacts, extra_warnings: Iterable[DumpWarning] = (),
                 depth: int | None = None) -> FileSummary:
    """The summary of one dump; `extra_warnings` are those of a deep check (`irtool.ir.check`);
    `depth` groups communication per layer by that many scope components instead of by repeated cell."""
    c, g = facts.comm, facts.groups
    return FileSummary(dump, facts, [*dump.warnings, *extra_warnings, *facts.warnings], depth, comm_totals(c),
                       send_receive(c), gradient_aggregation(c), scope_totals(c), optimizer_shards(c, g),
                       layer_comm(c, g, depth, facts.strategies, None if depth else comm_layers(facts)), traffic(c, g),
                       job_of([facts.job]), failure_record(dump),
                       strategy_misfits(dump, facts.kind))


def comm_layers(facts: ParallelFacts) -> dict[str, int]:
    """The layer (the `layer` fact) of each communication node that has one, by uid."""
    t = facts.table
    return {n.uid: i for n in t.get("comm_nodes") if (i := t("layer", n)) is not None}


def summarize(dump: Dump, facts: ParallelFacts, extra_warnings: Iterable[DumpWarning] = (),
              depth: int | None = None) -> dict[str, Any]:
    """The summary of one dump as JSON-ready data (schema `irtool.summary/3`)."""
    return file_summary(dump, facts, extra_warnings, depth).as_dict()


@dataclass
class RankDigest:
    """What a folder summary shows of one rank, computed where the rank is read (a worker process):
    sums and the per-stage answers, not the communication nodes, so the main process holds little
    per rank."""

    rank: int | None
    path: str
    stage: int | None
    counts: dict[str, int]
    warnings: list[DumpWarning]
    totals: CommTotals
    pairs: list[SendReceive]
    groups: list[str]
    traffic: Traffic
    links: list[StageLink]
    answer: str  # digest of the rank's folder tables: ranks of a stage with the same one are shown once
    job: RankJob  # what the rank shows of the job
    hops: list[P2P]  # its Send/Receive, for the folder's pairing (`parallel.pairs`, as check pairs them)
    cost: StageCost | None  # asked for (`--cost`) and the lowest rank of its stage as far as it can tell
    # the records of those tables, kept only when asked (`keep`): the main process asks again for
    # one rank per different answer, so it holds a few ranks' records, not every rank's
    strategies: list[Strategy] = field(default_factory=list)
    chains: list[RedistributionChain] = field(default_factory=list)
    shards: list[OptimizerShard] = field(default_factory=list)
    kept: bool = False
    failure: FailureRecord | None = None  # its file is an analyze_fail.ir: what failed
    misfits: list[StrategyMisfit] = field(default_factory=list)  # strategies that do not divide a shape

    @property
    def placed(self) -> int | None:
        return self.job.placed


def _first_of_stage(facts: ParallelFacts, rank: int | None) -> bool:
    """Whether no rank below `rank` shares a collective group of its stage with it (a stage's ranks hold
    the same work: one measures its cost). Only who does the work depends on it: the folder keeps the
    lowest rank's record of each stage, and measures a stage none of whose ranks said so afterwards."""
    if rank is None:
        return True
    # not pipeline or `other`: a collective a model writes itself may span stages (MindFormers' global norm
    # `PARALLEL_GLOBALNORM_BETWEEN_STAGES` on the first rank of each stage)
    return not any(r < rank for c in facts.comm if c.group_ranks and c.category not in ("pipeline", "other")
                   and not (c.group or "").endswith("_world_group") for r in c.group_ranks)


def rank_digest(rank: RankFile, lenient: bool = False, deep: bool = False, keep: bool = False,
                cost: bool = False, hardware: Profile | None = None) -> RankDigest:
    """Load, analyze and sum one rank for `summarize DIR` (runs in a worker process); `keep` also
    returns the records of its strategy, redistribution and optimizer tables, and so does the first rank of
    its stage (`_first_of_stage`: the rank whose tables the folder shows, not read a second time for them);
    `cost` its cost record (`--cost`) when it is the first rank of its stage, timed on `hardware`."""
    if cost:
        from ..parallel.balance import stage_cost
    dump = rank.load(lenient)
    facts = analyze(dump, rank.rank)
    c, g = facts.comm, facts.groups
    chains, shards = facts.chains, optimizer_shards(c, g)
    key = repr([t.rows for t in folder_answer_tables(facts.strategies, chains, shards)])
    warnings = [*dump.warnings, *(check(dump) if deep else ()), *facts.warnings]
    job = facts.job
    first = _first_of_stage(facts, rank.rank)
    d = RankDigest(rank.rank, rank.path, facts.stage, dump.counts, warnings, comm_totals(c), send_receive(c),
                   sorted(g), traffic(c, g), stage_matrix([facts]), hashlib.sha256(key.encode()).hexdigest(),
                   job, [P2P.of(x) for x in c if x.direction],
                   stage_cost(facts, hardware=hardware, order=rank_order(rank, facts, lenient))
                   if cost and first else None)
    if keep or first:
        d.strategies, d.chains, d.shards, d.kept = facts.strategies, chains, shards, True
    d.failure, d.misfits = failure_record(dump), strategy_misfits(dump, facts.kind)
    return d


@dataclass
class StageAnswer:
    """The strategies, redistributions and optimizer sharding of a stage as its first rank `ranks[0]`
    has them; the other `ranks` have the same (their folder tables are identical)."""

    ranks: list[int | None]
    strategies: list[Strategy]
    chains: list[RedistributionChain]
    shards: list[OptimizerShard]

    def as_dict(self) -> dict[str, Any]:
        return {"ranks": self.ranks, "strategies": [x.as_dict() for x in self.strategies],
                "redistributions": [x.as_dict() for x in self.chains],
                "optimizer_sharding": [x.as_dict() for x in self.shards]}


@dataclass
class StageSum:
    """A stage's ranks, the sums over them, and its answers (ranks with the same answer once)."""

    stage: int | None
    ranks: list[int | None]
    totals: CommTotals
    traffic: Traffic
    groups: list[str]
    answers: list[StageAnswer]


@dataclass
class DirSummary:
    path: str
    stage: int | None
    rows: Spill[RankDigest]  # every rank's, in a temporary file: iterated, never held together
    stages: list[StageSum]
    matrix: list[StageLink]
    job: Job
    unpaired: Unpaired  # Send/Receive of the ranks shown the folder's pairing leaves without a partner
    costs: dict[int, StageCost]  # the cost record of the lowest rank of each stage measured (`--cost`)
    first_ranks: dict[int, RankFile]  # the lowest rank read of each stage, every stage whatever --stage
    measured: bool = False  # `--cost` asked: a rank of unknown stage measures no stage's, yet says its peak unknown

    def as_dict(self) -> dict[str, Any]:
        """The JSON `irtool.summary/3` of a folder; its `ranks` are made one at a time as they are written
        (`present.Records`)."""
        measured = self.measured  # `--cost`: each rank says its peak beside its stage

        def row(r: RankDigest) -> dict[str, Any]:
            # the rank's walk: its own, or its stage's measured on it afterwards (no rank below it was readable)
            c = r.cost or next((c for c in self.costs.values() if c.rank == r.rank and r.rank is not None), None)
            peak = {"peak_bytes": None if c is None else c.peak_bytes} if measured else {}
            return {"rank": r.rank, "file": r.path, "stage": self.job.folder_stage(r.stage), **peak, "counts": r.counts,
                    "comm_totals": r.totals.as_dict(), "send_receive": [e.as_dict() for e in r.pairs],
                    "groups": r.groups, "warnings": [w.as_dict() for w in r.warnings],
                    **({"failure": r.failure.as_dict()} if r.failure is not None else {}),
                    **({"strategy_misfits": [m.as_dict() for m in r.misfits]} if r.misfits else {})}

        ranks = Records(len(self.rows), lambda: map(row, self.rows))
        stages = [{"stage": self.job.folder_stage(s.stage), "ranks": s.ranks, **self._peak(s.stage),
                   "comm_totals": s.totals.as_dict(), "traffic": s.traffic.as_dict(), "groups": s.groups,
                   "answers": [a.as_dict() for a in s.answers]} for s in self.stages]
        return {"schema": SCHEMA, "path": self.path, "stage": self.stage, "job": self.job.as_dict(), "ranks": ranks,
                "stages": stages, "send_receive_matrix": [e.as_dict() for e in self.matrix],
                "unpaired": self.unpaired.as_dict()}


    def _peak(self, stage: int | None) -> dict[str, Any]:
        """`--cost`: the stage's peak, walked on its lowest rank measured (the `peak_bytes` of that rank's row)."""
        if not self.measured:
            return {}
        at = self.job.folder_stage(stage)  # a stage unknown is no stage's cost record
        c = None if at is None else self.costs.get(at)
        return {"peak_bytes": None if c is None else c.peak_bytes, "peak_rank": None if c is None else c.rank}


def _add_tallies(into: dict[str, Tally], rows: dict[str, Tally]) -> None:
    for k, v in rows.items():
        into.setdefault(k, Tally()).merge(v)


def _add_totals(out: CommTotals, p: CommTotals) -> None:
    _add_tallies(out.by_category, p.by_category)
    _add_tallies(out.by_op, p.by_op)
    _add_tallies(out.by_category_phase, p.by_category_phase)
    out.total.merge(p.total)


def _sorted_totals(out: CommTotals) -> CommTotals:
    out.by_category, out.by_op = dict(sorted(out.by_category.items())), dict(sorted(out.by_op.items()))
    out.by_category_phase = dict(sorted(out.by_category_phase.items()))
    return out


def _add_rows(into: dict[str, TrafficRow], rows: dict[str, TrafficRow]) -> None:
    for k, v in rows.items():
        t = into.setdefault(k, TrafficRow())
        t.count += v.count
        t.bytes += v.bytes
        t.wire += v.wire


def _add_traffic(out: Traffic, p: Traffic) -> None:
    _add_rows(out.by_op, p.by_op)
    _add_rows(out.by_category, p.by_category)
    _add_rows({"": out.total}, {"": p.total})


def _sorted_traffic(out: Traffic) -> Traffic:
    out.by_op, out.by_category = dict(sorted(out.by_op.items())), dict(sorted(out.by_category.items()))
    return out


def _add_links(cells: dict[tuple[int, int], StageLink], links: list[StageLink]) -> None:
    for e in links:
        cells.setdefault((e.from_stage, e.to_stage), StageLink(e.from_stage, e.to_stage)).tally.merge(e.tally)


Fetch = Callable[[list[RankFile]], list[RankDigest]]  # the kept digests of some ranks (`rank_digest(keep=True)`)


def dir_summary(path: str, ranks: Iterable[RankDigest], stage: int | None = None, fetch: Fetch | None = None) -> DirSummary:
    """The summary of a dump folder from per-rank digests, folded as they come (`ranks` may be a
    stream): per stage the sums, and the first rank of each different answer; the rows of every
    rank go to a temporary file (`Spill`), so a thousand ranks are not held. The records of each
    different answer are those of its first rank, read again through `fetch` when the digests did
    not keep them."""
    rows: Spill[RankDigest] = Spill()
    folds: dict[int | None, _StageFold] = {}
    links: dict[tuple[int, int], StageLink] = {}
    job = JobFold()
    pairing = UnpairedFold()
    costs: dict[int, StageCost] = {}
    first: dict[int, RankFile] = {}
    measured = False
    for r in ranks:
        job.add(r.job)  # the job is the folder's, whichever stage the tables show
        at = r.placed  # a rank of unknown stage is no stage's first rank or cost record
        if at is not None:
            first.setdefault(at, RankFile(r.rank, r.path))
        measured |= r.cost is not None
        if r.cost is not None and at is not None:
            costs.setdefault(at, r.cost)
        shown = stage is None or at == stage
        if r.rank is not None:  # the peers of the stage shown are on other stages: every rank is paired
            pairing.add(r.rank, r.stage, r.hops, shown)
        if not shown:
            continue
        rows.append(replace(r, strategies=[], chains=[], shards=[], kept=False) if r.kept else r)  # rows: no tables
        folds.setdefault(r.stage, _StageFold()).add(r)
        _add_links(links, r.links)
    missing = [a for f in folds.values() for a in f.firsts.values() if not a.kept]
    kept: dict[int | None, RankDigest] = {}
    if missing and fetch is not None:
        kept = {k.rank: k for k in fetch([RankFile(r.rank, r.path) for r in missing])}
    stages = [folds[st].stage_sum(st, kept) for st in sorted(folds, key=lambda k: (k is None, k or 0))]
    return DirSummary(path, stage, rows, stages, [links[k] for k in sorted(links)], job.job(), pairing.result(),
                      costs, first, measured)


class _StageFold:
    """A stage's sums over its ranks as they arrive, and the first rank of each different answer."""

    def __init__(self) -> None:
        self.ranks: list[int | None] = []
        self.totals, self.traffic, self.groups = CommTotals(), Traffic(), set[str]()
        self.firsts: dict[str, RankDigest] = {}  # answer -> its first rank's digest
        self.same: dict[str, list[int | None]] = {}  # answer -> its ranks

    def add(self, r: RankDigest) -> None:
        self.ranks.append(r.rank)
        _add_totals(self.totals, r.totals)
        _add_traffic(self.traffic, r.traffic)
        self.groups.update(r.groups)
        self.firsts.setdefault(r.answer, r)
        self.same.setdefault(r.answer, []).append(r.rank)

    def stage_sum(self, stage: int | None, kept: dict[int | None, RankDigest]) -> StageSum:
        answers = []
        for answer, first in self.firsts.items():
            k = kept.get(first.rank, first)
            answers.append(StageAnswer(self.same[answer], k.strategies, k.chains, k.shards))
        return StageSum(stage, self.ranks, _sorted_totals(self.totals), _sorted_traffic(self.traffic),
                        sorted(self.groups), answers)


# --- text and Markdown -------------------------------------------------------------------------

def _totals_rows(rows: dict[str, Tally]) -> list[list[str]]:
    return [[k, cell(v.count), bytes_text(v.bytes)] for k, v in rows.items()]


def _votes(votes: dict[int, int]) -> str:
    """`{0: 16, 1: 2}` -> `16 for stage 0, 2 for stage 1`."""
    return ", ".join(f"{n} for stage {k}" for k, n in sorted(votes.items()))


def _stage_line(facts: ParallelFacts) -> str:
    ev = facts.stage_info
    if ev.stage is None:
        if ev.votes:
            return f"Pipeline stage: unknown (votes disagree: {_votes(ev.votes)})"
        hops = ev.hops
        if not hops:
            return "Pipeline stage: none (no pipeline Send/Receive)" if facts.table.get("split_done") else \
                "Pipeline stage: unknown (a pass before the pipeline split: no Send/Receive inserted yet)"
        why = "stages are read from step_parallel_end or a later pass" if facts.kind == "pre" else \
            "none of them tells the stage"
        return f"Pipeline stage: unknown ({hops} pipeline Send/Receive; {why})"
    how = ", ".join(ev.how or [])
    return f"Pipeline stage: {ev.stage} ({sum(ev.votes.values())} votes" + (f", {how})" if how else ")")


SEND_RECEIVE_COLUMNS = ["op", "phase", "peer stage", "peer rank", "bytes each", "count", "micros"]


_POSITION = {"chunk": lambda p: p.chunk, "segment": lambda p: p.segment}


def _send_receive_row(p: SendReceive, extra: list[str]) -> list[str]:
    pos = [cell(_POSITION[k](p)) for k in extra]
    return [p.op, p.phase, cell(p.peer_stage), cell(p.peer_rank), *pos, cell(p.bytes_each), cell(p.count),
            ",".join(map(str, p.micros)) or cell(None)]


def _send_receive_columns(rows: list[SendReceive]) -> tuple[list[str], list[str]]:
    """The Send/Receive columns, each hop's position under the attribute's own name (§7): `chunk`
    when the dump prints `chunk` (the segment of a folded pipeline, the chunk of an interleaved one),
    `segment` when it prints `segment` itself."""
    extra = [k for k, has in (("chunk", any(p.chunk is not None for p in rows)),
                              ("segment", any(p.segment is not None and p.chunk is None for p in rows))) if has]
    cols = list(SEND_RECEIVE_COLUMNS)
    return cols[:4] + extra + cols[4:], extra


def _top_title(shown: int, n: int) -> str:
    return "Top scopes by communication bytes" + (f" ({shown} of {n} scopes)" if shown < n else "")


def summary_blocks(s: FileSummary, limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """The report of one file summary: lines and tables (each at most `limit` rows; None = all)."""
    d, f = s.dump, s.facts
    counts = Table("Counts", ["", "parsed", "declared"])
    for key in ("subgraphs", "params", "cnodes"):
        declared = d.declared.get(key)
        mark = "" if declared in (None, d.counts[key]) else " (differs from the header)"
        counts.rows.append([key, cell(d.counts[key]) + mark, cell(declared)])
    engines = [_symbol_engine(e) for e in d.symbol_engines]
    if engines:  # the header declares no count of them
        counts.rows.append(["symbol lines", cell(sum(e["symbols"] for e in engines)), cell(None)])
    sr_cols, seg = _send_receive_columns(s.pairs)
    top = s.scopes[:TOP_SCOPES]
    tables = [
        counts,
        Table("Operators", ["operator", "count"],
              [[op, cell(n)] for op, n in sorted(d.op_histogram().items(), key=lambda kv: (-kv[1], kv[0]))]),
        Table("Communication by category", ["category", "count", "bytes"], _totals_rows(s.totals.by_category)),
        Table("Communication by operator", ["operator", "count", "bytes"], _totals_rows(s.totals.by_op)),
        Table("Communication by category/phase", ["category/phase", "count", "bytes"],
              _totals_rows(s.totals.by_category_phase)),
        Table("Device groups", ["group", "ranks", "comm nodes"],
              [[g.name, rank_list(g.ranks) if g.ranks else f"{cell(None)} (size {cell(g.size)})", cell(g.comm_nodes)]
               for _, g in sorted(f.groups.items())]),
        Table("Send/Receive", sr_cols, [_send_receive_row(p, seg) for p in s.pairs]),
        Table("Gradient aggregation per parameter", ["parameter", "ops", "groups", "count", "bytes"],
              [[g.parameter, ",".join(g.ops), ",".join(x or cell(None) for x in g.groups), cell(g.tally.count),
                bytes_text(g.tally.bytes)] for g in s.gradients]),
        strategies_table(f.strategies),
        Table(_top_title(len(top), len(s.scopes)), ["scope", "count", "bytes"],
              [[x.scope, cell(x.tally.count), bytes_text(x.tally.bytes)] for x in top]),
        Table("Symbol engines (dynamic shapes)", ["engine of graph", "line", "symbol lines", "operations"],
              [[e["graph"], str(e["line"]), cell(e["symbols"]), ", ".join(f"{op} {n}" for op, n in e["ops"].items())]
               for e in engines]),
        Table("Communication that moves no data (an empty or one-rank group; not counted above)",
              ["parameter", "op", "line", "scope"],
              [[cell(g.parameter), g.op, str(g.line), g.scope] for g in f.no_op_gathers]),
    ]
    head = f"{d.path}  entry @{d.entry}" + ("  (sorted print order)" if d.sorted_order else "")
    failed = failure_blocks(s.failure) if s.failure is not None or d.failure is None else [
        "Compile failed: no node is marked (no `#------------------------> N` line before a node)",
        *[f"  {m}" for m in d.failure.message], ""]
    blocks: list[Block] = [*failed, *misfit_lines(s.misfits), *file_headline(s, rank_of(d.path or "")), "", head,
                           _stage_line(f), job_table(s.job)]
    if s.warnings:
        blocks.append(f"{len(s.warnings)} warning(s)")
        blocks += [f"  line {w.line}: {w.message}" for w in s.warnings]
    return blocks + [t.limited(limit) for t in tables] + answer_blocks(f.chains, s.shards, s.layers, s.depth,
                                                                     s.traffic, limit)


def dir_blocks(d: DirSummary, limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """The report of a dump folder: the ranks, their warnings, each stage's totals (sums over its
    ranks, said so in the title), its strategies, redistributions and optimizer sharding (ranks with
    the same tables shown once: `ranks 1-3: same as rank 0`), and every rank's Send/Receive."""
    ranks = Table("Ranks", ["rank", "stage", "file", "comm nodes", "bytes"],
                  [[cell(r.rank), cell(d.job.folder_stage(r.stage)), r.path, cell(r.totals.total.count),
                    bytes_text(r.totals.total.bytes)] for r in d.rows])
    failed = [b for r in d.rows for b in [*failure_blocks(r.failure, f"Rank {cell(r.rank)}: "),
                                          *misfit_lines(r.misfits, f"Rank {cell(r.rank)}: ")]]
    blocks: list[Block] = [*failed, *dir_headline(d), "", d.path + (f"  stage {d.stage}" if d.stage is not None else ""),
                           job_table(d.job), ranks.limited(limit)]
    # every warning the headline counts, whatever the row limit (a single file's summary prints them all too)
    warnings = [[cell(r.rank), f"{r.path}:{w.line}" if w.line else r.path, w.message] for r in d.rows for w in r.warnings]
    if warnings:
        blocks.append(Table(f"Warnings: {len(warnings)}", ["rank", "location", "warning"], warnings))
    for st in d.stages:
        n = len(st.ranks)
        name = _stage_name(d, st.stage)
        title = f"{name}: sum over {n} rank{'s' if n != 1 else ''} ({rank_list(r for r in st.ranks if r is not None)})"
        blocks.append(Table(f"{title}, communication by category", ["category", "count", "bytes"],
                            _totals_rows(st.totals.by_category)).limited(limit))
        blocks.append(Table(f"{title}, communication by operator", ["operator", "count", "bytes"],
                            _totals_rows(st.totals.by_op)).limited(limit))
        for a in st.answers:
            who = f"{name}, rank {cell(a.ranks[0])}"
            tables = folder_answer_tables(a.strategies, a.chains, a.shards)
            blocks += [Table(f"{who}: {t.title[0].lower()}{t.title[1:]}", t.columns, t.rows).limited(limit)
                       for t in tables]
            same = [r for r in a.ranks[1:] if r is not None]
            if same and any(t.rows for t in tables):
                blocks.append(f"{'rank' if len(same) == 1 else 'ranks'} {rank_list(same)}: same as rank {a.ranks[0]}")
    sr_cols, seg = _send_receive_columns([p for r in d.rows for p in r.pairs])
    send_receive_table = Table("Send/Receive per rank", ["rank", "stage", *sr_cols],
                               [[cell(r.rank), cell(r.stage), *_send_receive_row(p, seg)]
                                for r in d.rows for p in r.pairs])
    return blocks + [send_receive_table.limited(limit)] + dir_answer_blocks(
        [(_stage_name(d, st.stage), st.traffic) for st in d.stages], d.matrix, limit)


def _stage_name(d: DirSummary, stage: int | None) -> str:
    """The job's stage: a stage no dump decides in a pipelined job is unknown, without a pipeline it is 0."""
    at = d.job.folder_stage(stage)
    return "Stage unknown" if at is None else f"Stage {at}" + (" (no pipeline)" if stage is None else "")


# --- a failed compile (analyze_fail.ir): what failed, before anything else -------------------

def failure_blocks(r: FailureRecord | None, who: str = "") -> list[Block]:
    """The failing node, its message, source line, inputs and the calls that led to it; nothing when
    the dump is not a failure's."""
    if r is None:
        return []
    src = r.source
    lines: list[Block] = [
        f"{who}Compile failed at {r.operator} ({r.node} of @{r.graph}), {r.where}",
        *[f"  {m}" for m in r.message],
        f"  source: {src.where}  {src.code}" if src is not None else f"  source: {cell(None)} (no `# In file` line)",
        f"  scope: {cell(r.scope)}",
        f"  statement: {r.statement}",
    ]
    if r.operator_from != "message":  # the compiler's message names no primitive
        lines.append("  operator: the name its callee resolves" if r.operator_from == "callee"
                     else "  operator: the primitive the node applies")
    inputs = Table("Inputs of the failing node", ["input", "is", "abstract value", "type", "shape", "strategy"],
                   [[i.text, cell(i.what), cell(i.abstract), cell(i.dtype), cell(i.shape),
                     strategy_text(i.strategy) if i.strategy is not None else cell(None)] for i in r.inputs])
    stack = Table(f"Evaluation stack ({len(r.stack)} frames marked" + (f"; MindSpore counts {r.stack_note}" if
                  r.stack_note else "") + ")", ["depth", "graph", "node", "line", "calls", "source"],
                  [[str(c.depth), c.graph, c.node, str(c.line), c.calls, cell(c.source)] for c in r.stack])
    extra = [f"  marker at {u} is followed by no node" for u in r.unreached]
    return [*lines, *extra, inputs, stack, ""]


def misfit_lines(misfits: list[StrategyMisfit], who: str = "") -> list[Block]:
    """One line per input whose shape its operator's strategy does not divide (MindSpore refuses the strategy
    in its parallel pass); nothing when every strategy fits."""
    lines: list[Block] = [
        f"{who}Strategy does not divide its input: {m.op} {m.name} (line {m.line}), input {m.input} {cell(m.shape)} split "
        f"{cell(m.strategy)}: " + "; ".join(f"dimension {d} of {size} into {n}" for d, size, n in m.dims)
        for m in misfits]
    return [*lines, ""] if lines else []


# --- the headline (six lines before the tables) ----------------------------------------------

def file_headline(s: FileSummary, rank: int | None) -> list[str]:
    f, info = s.facts, s.facts.stage_info
    # a known stage in short (its votes follow below); else why there is none, as the stage line says it
    count = s.job.pipeline_stages
    of = f" of {count.value}" if count.known and count.value > 1 else ""
    stage = f"pipeline stage {info.stage}{of}" if info.stage is not None else "p" + _stage_line(f)[1:]
    top = s.layers[0] if s.layers and s.layers[0].bytes else None
    biggest = f"{top.layer if top.index is not None else 'scope ' + top.layer} ({cell(top.bytes)} B)" if top else ""
    other = s.totals.by_category.get("other", Tally()).count
    return [f"Rank {cell(rank)}, {stage}",
            job_line(s.job),
            communication_line(s.totals, biggest),
            f"Redistributions: {redistributions_text(f.chains)}",
            f"Optimizer sharding: {sharding_text(s.shards)}",
            *([kernels_line(k)] if (k := f.table.get("kernels")) is not None else []),
            unknowns_line(s.totals.total.bytes.unknown, other, sum(1 for c in f.comm if c.direction and c.peer_rank is None),
                      "", len(s.warnings), "stage votes disagree" if info.stage is None and info.votes else "")]


def dir_headline(d: DirSummary) -> list[str]:
    stages = [f"stage {cell(s.stage)}: {'rank' if len(s.ranks) == 1 else 'ranks'} "
              f"{rank_list(r for r in s.ranks if r is not None)}" for s in d.stages if s.stage is not None]
    if d.job.stage_unknown:
        n = d.job.stage_unknown
        stages.append(f"stage unknown: {'rank' if len(n) == 1 else 'ranks'} {rank_list(r for r in n if r is not None)}")
    count = d.job.pipeline_stages  # the job's stages, not those selected or read
    staged = (f"{count.value} pipeline stage{'s' if count.value != 1 else ''}" if count.known else
              f"{cell(None)} pipeline stages ({count.where})")
    who = plural(len(d.rows), "rank") + ", " + (staged + " (" + "; ".join(stages) + ")" if stages else "no pipeline stage")
    total = CommTotals()
    for r in d.rows:
        _add_tallies(total.by_category, r.totals.by_category)
        total.total.merge(r.totals.total)
    top = max(d.rows, key=lambda r: (r.totals.total.bytes.total, -(r.rank or 0)), default=None)
    biggest = f"rank {cell(top.rank)} ({bytes_text(top.totals.total.bytes)} B)" if top and top.totals.total.count else ""

    def where(s: StageSum) -> str:
        who = "all ranks" if s.stage is None else f"stage {s.stage}"
        many = len(s.answers)
        return who + (f" (rank {cell(s.answers[0].ranks[0])}; {many} different answers below)" if many > 1 else "")

    redis = "; ".join(f"{where(s)}: {redistributions_text(s.answers[0].chains)}" for s in d.stages if s.answers)
    shards = "; ".join(f"{where(s)}: {sharding_text(s.answers[0].shards)}" for s in d.stages if s.answers)
    if len({sharding_text(s.answers[0].shards) for s in d.stages if s.answers}) == 1 and len(d.stages) > 1:
        shards = sharding_text(d.stages[0].answers[0].shards) + " on every stage"
    other = total.by_category.get("other", Tally()).count
    no_peer = sum(p.count for r in d.rows for p in r.pairs if p.peer_rank is None)
    unknown_stage = [r.rank for r in d.rows if r.stage is None] if stages else []
    return [f"{who}",
            job_line(d.job),
            communication_line(total, biggest),
            f"Redistributions: {redis or 'none'}",
            f"Optimizer sharding: {shards or 'none'}",
            unknowns_line(total.total.bytes.unknown, other, no_peer,
                      unpaired_text(d.unpaired),
                      sum(len(r.warnings) for r in d.rows),
                      f"stage unknown on rank(s) {rank_list(unknown_stage)}" if unknown_stage else "")]
