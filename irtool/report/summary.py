"""What `irtool summarize` reports: the summary of a dump (`file_summary`) or a dump folder
(`dir_summary`) as records from `irtool.parallel`, written as text or Markdown tables from those
records, or as JSON (`as_dict`, made once here).

The JSON form is what CI reads; its fields are documented in README.md ("JSON output") and its
`schema` string changes whenever a field changes meaning.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from ..dumpdir import RankFacts
from ..ir import Dump, DumpWarning, SymbolEngine
from ..parallel import CommNode, ParallelFacts
from ..parallel.layers import layer_comm
from ..parallel.optimizer import optimizer_shards
from ..parallel.records import LayerComm, OptimizerShard
from ..parallel.totals import (
    CommTotals,
    GradientAggregation,
    ScopeTotal,
    SendReceive,
    StageLink,
    Tally,
    Traffic,
    comm_totals,
    gradient_aggregation,
    scope_totals,
    send_receive,
    stage_matrix,
    traffic,
)
from ..present import DEFAULT_LIMIT, Block, Table, bytes_text, cell, rank_list, strategy_text
from .answers import answer_blocks, dir_answer_blocks

SCHEMA = "irtool.summary/1"
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

    def as_dict(self) -> dict[str, Any]:
        """The JSON of schema `irtool.summary/1`."""
        d, f, info = self.dump, self.facts, self.facts.stage_info
        hist = d.op_histogram()
        return {
            "schema": SCHEMA, "path": d.path, "entry": d.entry, "sorted_order": d.sorted_order, "bytes": d.size,
            "counts": d.counts, "header": dict(d.declared),
            "ops": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
            "subgraphs": [{"name": g.name, "nodes": len(g.nodes), "params": len(g.params)} for g in d.subgraphs],
            "warnings": [w.as_dict() for w in self.warnings],
            "stage": info.stage,
            "stage_evidence": {"votes": {str(k): v for k, v in info.votes.items()}, "how": info.how,
                               "chunks": info.chunks, "peer_stages": info.peer_stages},
            "comm": [c.as_dict() for c in f.comm],
            "comm_totals": self.totals.as_dict(),
            "groups": [g.as_dict() for _, g in sorted(f.groups.items())],
            "send_receive": [e.as_dict() for e in self.pairs],
            "gradient_aggregation": [e.as_dict() for e in self.gradients],
            "strategies": [s.as_dict() for s in f.strategies],
            "top_scopes": [e.as_dict() for e in self.scopes[:TOP_SCOPES]],
            "no_op_gathers": [c.as_dict() for c in f.no_op_gathers],
            "redistributions": [c.as_dict() for c in f.chains],
            "optimizer_sharding": [o.as_dict() for o in self.shards],
            "layers": {"by_scope_depth": self.depth, "rows": [r.as_dict() for r in self.layers]},
            "traffic": self.traffic.as_dict(),
            # dynamic-shape dumps only: their `symbol engine details:` blocks
            **({"symbol_engines": [_symbol_engine(e) for e in d.symbol_engines]} if d.symbol_engines else {}),
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
                       layer_comm(c, g, depth), traffic(c, g))


def summarize(dump: Dump, facts: ParallelFacts, extra_warnings: Iterable[DumpWarning] = (),
              depth: int | None = None) -> dict[str, Any]:
    """The summary of one dump as JSON-ready data (schema `irtool.summary/1`)."""
    return file_summary(dump, facts, extra_warnings, depth).as_dict()


@dataclass
class RankRow:
    rank: RankFacts
    totals: CommTotals
    pairs: list[SendReceive]


@dataclass
class StageSum:
    """A stage's ranks and the sums over them."""

    stage: int | None
    ranks: list[int | None]
    totals: CommTotals
    traffic: Traffic
    groups: list[str]


@dataclass
class DirSummary:
    path: str
    stage: int | None
    rows: list[RankRow]
    stages: list[StageSum]
    matrix: list[StageLink]

    def as_dict(self) -> dict[str, Any]:
        ranks = [{"rank": r.rank.rank, "file": r.rank.path, "stage": r.rank.stage, "counts": r.rank.counts,
                  "comm_totals": r.totals.as_dict(), "send_receive": [e.as_dict() for e in r.pairs],
                  "groups": sorted(r.rank.facts.groups), "warnings": [w.as_dict() for w in r.rank.warnings]}
                 for r in self.rows]
        stages = [{"stage": s.stage, "ranks": s.ranks, "comm_totals": s.totals.as_dict(),
                   "traffic": s.traffic.as_dict(), "groups": s.groups} for s in self.stages]
        return {"schema": SCHEMA, "path": self.path, "stage": self.stage, "ranks": ranks, "stages": stages,
                "send_receive_matrix": [e.as_dict() for e in self.matrix]}


def dir_summary(path: str, ranks: list[RankFacts], stage: int | None = None) -> DirSummary:
    """The summary of a dump folder from per-rank facts: per rank and per stage."""
    chosen = [r for r in ranks if stage is None or r.stage == stage]
    by_stage: dict[int | None, list[RankFacts]] = {}
    for r in chosen:
        by_stage.setdefault(r.stage, []).append(r)
    stages = []
    for st in sorted(by_stage, key=lambda k: (k is None, k or 0)):
        comm: list[CommNode] = [c for r in by_stage[st] for c in r.facts.comm]
        table = {k: g for r in by_stage[st] for k, g in r.facts.groups.items()}
        stages.append(StageSum(st, [r.rank for r in by_stage[st]], comm_totals(comm), traffic(comm, table),
                               sorted({c.group for c in comm if c.group})))
    rows = [RankRow(r, comm_totals(r.facts.comm), send_receive(r.facts.comm)) for r in chosen]
    return DirSummary(path, stage, rows, stages, stage_matrix(r.facts for r in chosen))


def summarize_dir(path: str, ranks: list[RankFacts], stage: int | None = None) -> dict[str, Any]:
    """The summary of a dump folder as JSON-ready data."""
    return dir_summary(path, ranks, stage).as_dict()


def json_pieces(summary: dict[str, Any]) -> Iterator[str]:
    """The JSON text, ending with a newline, in pieces of 8192 encoder tokens: the 68 MB dump's 10 MB
    of JSON is never one string (its peak RSS), nor a million writes (`json.dump`: 3x the CPU)."""
    pieces: list[str] = []
    for piece in json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(summary):
        pieces.append(piece)
        if len(pieces) >= 8192:
            yield "".join(pieces)
            pieces.clear()
    pieces.append("\n")
    yield "".join(pieces)


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
        hops = sum(c.category == "pipeline" and c.direction is not None for c in facts.comm)
        if not hops:
            return "Pipeline stage: none (no pipeline Send/Receive)"
        why = "stages are read from step_parallel_end or a later pass" if facts.kind == "pre" else \
            "none of them tells the stage"
        return f"Pipeline stage: unknown ({hops} pipeline Send/Receive; {why})"
    how = ", ".join(ev.how or [])
    return f"Pipeline stage: {ev.stage} ({sum(ev.votes.values())} votes" + (f", {how})" if how else ")")


SEND_RECEIVE_COLUMNS = ["op", "phase", "peer stage", "peer rank", "bytes each", "count", "micros"]


def _send_receive_row(p: SendReceive, segments: bool) -> list[str]:
    seg = [cell(p.segment)] if segments else []
    return [p.op, p.phase, cell(p.peer_stage), cell(p.peer_rank), *seg, cell(p.bytes_each), cell(p.count),
            ",".join(map(str, p.micros)) or cell(None)]


def _send_receive_columns(rows: list[SendReceive]) -> tuple[list[str], bool]:
    """The Send/Receive columns, with `segment` only when some hop has one (pipeline segments, §7)."""
    segments = any(p.segment is not None for p in rows)
    cols = list(SEND_RECEIVE_COLUMNS)
    return (cols[:4] + ["segment"] + cols[4:], True) if segments else (cols, False)


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
        Table("Operators with strategies", ["operator", "scope", "in_strategy / in_layout", "out_strategy / out_layout"],
              [[st.op, st.scope, strategy_text(st.in_strategy or st.in_layout),
                strategy_text(st.out_strategy or st.out_layout)] for st in f.strategies]),
        Table(_top_title(len(top), len(s.scopes)), ["scope", "count", "bytes"],
              [[x.scope, cell(x.tally.count), bytes_text(x.tally.bytes)] for x in top]),
        Table("Symbol engines (dynamic shapes)", ["engine of graph", "line", "symbol lines", "operations"],
              [[e["graph"], str(e["line"]), cell(e["symbols"]), ", ".join(f"{op} {n}" for op, n in e["ops"].items())]
               for e in engines]),
        Table("Optimizer gathers that move no data (empty or one-rank group; not counted above)",
              ["parameter", "op", "line", "scope"],
              [[cell(g.parameter), g.op, str(g.line), g.scope] for g in f.no_op_gathers]),
    ]
    head = f"{d.path}  entry @{d.entry}" + ("  (sorted print order)" if d.sorted_order else "")
    blocks: list[Block] = [head, _stage_line(f)]
    if s.warnings:
        blocks.append(f"{len(s.warnings)} warning(s)")
        blocks += [f"  line {w.line}: {w.message}" for w in s.warnings]
    return blocks + [t.limited(limit) for t in tables] + answer_blocks(f.chains, s.shards, s.layers, s.depth,
                                                                     s.traffic, limit)


def dir_blocks(d: DirSummary, limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """The report of a dump folder: the ranks, each stage's totals (sums over its ranks, said so in
    the title), and every rank's Send/Receive."""
    ranks = Table("Ranks", ["rank", "stage", "file", "comm nodes", "bytes"],
                  [[cell(r.rank.rank), cell(r.rank.stage), r.rank.path, cell(r.totals.total.count),
                    bytes_text(r.totals.total.bytes)] for r in d.rows])
    blocks: list[Block] = [d.path + (f"  stage {d.stage}" if d.stage is not None else ""), ranks.limited(limit)]
    for st in d.stages:
        n = len(st.ranks)
        name = "No pipeline stage" if st.stage is None else f"Stage {st.stage}"
        title = f"{name}: sum over {n} rank{'s' if n != 1 else ''} ({', '.join(map(str, st.ranks))})"
        blocks.append(Table(f"{title}, communication by category", ["category", "count", "bytes"],
                            _totals_rows(st.totals.by_category)).limited(limit))
        blocks.append(Table(f"{title}, communication by operator", ["operator", "count", "bytes"],
                            _totals_rows(st.totals.by_op)).limited(limit))
    sr_cols, seg = _send_receive_columns([p for r in d.rows for p in r.pairs])
    send_receive_table = Table("Send/Receive per rank", ["rank", "stage", *sr_cols],
                               [[cell(r.rank.rank), cell(r.rank.stage), *_send_receive_row(p, seg)]
                                for r in d.rows for p in r.pairs])
    return blocks + [send_receive_table.limited(limit)] + dir_answer_blocks(
        [(st.stage, st.traffic) for st in d.stages], d.matrix, limit)
