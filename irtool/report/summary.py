"""What `irtool summarize` reports, as data (`summarize`, `summarize_dir`) and as text, Markdown or JSON.

The JSON form is what CI reads; its fields are documented in README.md ("JSON output") and its
`schema` string changes whenever a field changes meaning.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from ..dumpdir import RankFacts
from ..ir import Dump, DumpWarning, SymbolEngine
from ..parallel import ParallelFacts
from .answers import answer_blocks, dir_answer_blocks
from .parallel_summary import cell_scope, comm_totals, parallel_summary, send_receive_matrix, traffic
from .tables import DEFAULT_LIMIT, Block, Table, cell, rank_list, strategy_text

SCHEMA = "irtool.summary/1"


def summarize(dump: Dump, facts: ParallelFacts, extra_warnings: Iterable[DumpWarning] = (),
              depth: int | None = None) -> dict[str, Any]:
    """The summary of one dump as a JSON-ready dict (schema `irtool.summary/1`); `extra_warnings`
    are those of a deep check (`irtool.ir.check`); `depth` groups communication per layer by that
    many scope components instead of by repeated cell."""
    hist = dump.op_histogram()
    warnings = [*dump.warnings, *extra_warnings, *facts.warnings]
    return {
        "schema": SCHEMA,
        "path": dump.path,
        "entry": dump.entry,
        "sorted_order": dump.sorted_order,
        "bytes": dump.size,
        "counts": dump.counts,
        "header": dict(dump.declared),
        "ops": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "subgraphs": [{"name": g.name, "nodes": len(g.nodes), "params": len(g.params)}
                      for g in dump.subgraphs],
        "warnings": [w.as_dict() for w in warnings],
        **parallel_summary(facts, depth=depth),
        # dynamic-shape dumps only: their `symbol engine details:` blocks
        **({"symbol_engines": [_symbol_engine(e) for e in dump.symbol_engines]} if dump.symbol_engines else {}),
    }


def _symbol_engine(e: SymbolEngine) -> dict[str, Any]:
    hist = e.op_histogram()
    return {"name": e.name, "graph": e.graph, "line": e.line, "symbols": len(e.symbols),
            "ops": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))}


def summarize_dir(path: str, ranks: list[RankFacts], stage: int | None = None) -> dict[str, Any]:
    """The summary of a dump folder from per-rank facts: per rank and per stage."""
    rows, stages = [], {}
    for r in ranks:
        if stage is not None and r.stage != stage:
            continue
        rows.append({"rank": r.rank, "file": r.path, "stage": r.stage, "counts": r.counts,
                     "comm_totals": comm_totals(r.facts.comm),
                     "send_receive": parallel_summary(r.facts)["send_receive"],
                     "groups": sorted(r.facts.groups), "warnings": [w.as_dict() for w in r.warnings]})
        key = "none" if r.stage is None else str(r.stage)
        e = stages.setdefault(key, {"stage": r.stage, "ranks": [], "comm": [], "group_table": {}})
        e["ranks"].append(r.rank)
        e["comm"].extend(r.facts.comm)
        e["group_table"].update(r.facts.groups)
    for e in stages.values():
        comm, table = e.pop("comm"), e.pop("group_table")
        e["comm_totals"] = comm_totals(comm)
        e["traffic"] = traffic(comm, table)
        e["groups"] = sorted({c.group for c in comm if c.group})
    chosen = [(r.rank, r.facts) for r in ranks if stage is None or r.stage == stage]
    return {"schema": SCHEMA, "path": path, "stage": stage, "ranks": rows,
            "stages": [stages[k] for k in sorted(stages, key=lambda k: (k == "none", k.zfill(6)))],
            "send_receive_matrix": send_receive_matrix(chosen)}


def to_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, ensure_ascii=False)


# --- text and Markdown -------------------------------------------------------------------------

def _bytes(n: int | None) -> str:
    return cell(n)


def _bytes_known(e: dict[str, Any]) -> str:
    """Bytes of a row that counts nodes: `—` when none is known, `N (+k unknown)` when some are not."""
    unknown = e.get("bytes_unknown", 0)
    if unknown and unknown == e["count"]:
        return cell(None)
    return _bytes(e["bytes"]) + (f" (+{unknown} unknown)" if unknown else "")


def _totals_rows(totals: dict[str, Any], key: str) -> list[list[str]]:
    return [[k, cell(v["count"]), _bytes_known(v)] for k, v in totals[key].items()]


def _votes(votes: dict[str, int]) -> str:
    """`{"0": 16, "1": 2}` -> `16 for stage 0, 2 for stage 1`."""
    return ", ".join(f"{n} for stage {k}" for k, n in sorted(votes.items(), key=lambda kv: kv[0].zfill(6)))


def _stage_line(s: dict[str, Any]) -> str:
    ev = s.get("stage_evidence") or {}
    if s["stage"] is None:
        return "Pipeline stage: none (no pipeline Send/Receive)" if not ev.get("votes") else \
            f"Pipeline stage: unknown (votes disagree: {_votes(ev['votes'])})"
    how = ", ".join(ev.get("how") or [])
    return f"Pipeline stage: {s['stage']} ({sum(ev['votes'].values())} votes" + (f", {how})" if how else ")")


def _send_receive_row(p: dict[str, Any], segments: bool) -> list[str]:
    seg = [cell(p.get("segment"))] if segments else []
    return [p["op"], p["phase"], cell(p["peer_stage"]), cell(p["peer_rank"]), *seg,
            _bytes(p["bytes_each"]), cell(p["count"]), ",".join(map(str, p["micros"])) or cell(None)]


def _send_receive_columns(rows: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """The Send/Receive columns, with `segment` only when some hop has one (pipeline segments, §7)."""
    segments = any(p.get("segment") is not None for p in rows)
    cols = list(SEND_RECEIVE_COLUMNS)
    return (cols[:4] + ["segment"] + cols[4:], True) if segments else (cols, False)


def _top_title(s: dict[str, Any]) -> str:
    """`top_scopes` keeps the first few (JSON too): the title says of how many."""
    n = len({cell_scope(c.get("cell_scope") or c["scope"]) for c in s["comm"]})
    shown = len(s["top_scopes"])
    return "Top scopes by communication bytes" + (f" ({shown} of {n} scopes)" if shown < n else "")


SEND_RECEIVE_COLUMNS = ["op", "phase", "peer stage", "peer rank", "bytes each", "count", "micros"]


def summary_blocks(s: dict[str, Any], limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """The report of one file summary: lines and tables (each at most `limit` rows; None = all)."""
    counts = Table("Counts", ["", "parsed", "declared"])
    for key in ("subgraphs", "params", "cnodes"):
        declared = s["header"].get(key)
        mark = "" if declared in (None, s["counts"][key]) else " (differs from the header)"
        counts.rows.append([key, cell(s["counts"][key]) + mark, cell(declared)])
    engines = s.get("symbol_engines", [])
    if engines:  # the header declares no count of them
        counts.rows.append(["symbol lines", cell(sum(e["symbols"] for e in engines)), cell(None)])
    t = s["comm_totals"]
    sr_cols, seg = _send_receive_columns(s["send_receive"])
    tables = [
        counts,
        Table("Operators", ["operator", "count"], [[op, cell(n)] for op, n in s["ops"].items()]),
        Table("Communication by category", ["category", "count", "bytes"], _totals_rows(t, "by_category")),
        Table("Communication by operator", ["operator", "count", "bytes"], _totals_rows(t, "by_op")),
        Table("Communication by category/phase", ["category/phase", "count", "bytes"],
              _totals_rows(t, "by_category_phase")),
        Table("Device groups", ["group", "ranks", "comm nodes"],
              [[g["name"], rank_list(g["ranks"]) if g["ranks"] else f"{cell(None)} (size {cell(g['size'])})",
                cell(g["comm_nodes"])] for g in s["groups"]]),
        Table("Send/Receive", sr_cols, [_send_receive_row(p, seg) for p in s["send_receive"]]),
        Table("Gradient aggregation per parameter", ["parameter", "ops", "groups", "count", "bytes"],
              [[g["parameter"], ",".join(g["ops"]), ",".join(x or cell(None) for x in g["groups"]), cell(g["count"]),
                _bytes_known(g)] for g in s["gradient_aggregation"]]),
        Table("Operators with strategies", ["operator", "scope", "in_strategy / in_layout", "out_strategy / out_layout"],
              [[st["op"], st["scope"], strategy_text(st["in_strategy"] or st["in_layout"]),
                strategy_text(st["out_strategy"] or st["out_layout"])] for st in s["strategies"]]),
        Table(_top_title(s), ["scope", "count", "bytes"],
              [[x["scope"], cell(x["count"]), _bytes_known(x)] for x in s["top_scopes"]]),
        Table("Symbol engines (dynamic shapes)", ["engine of graph", "line", "symbol lines", "operations"],
              [[e["graph"], str(e["line"]), cell(e["symbols"]), ", ".join(f"{op} {n}" for op, n in e["ops"].items())]
               for e in engines]),
        Table("Optimizer gathers that move no data (empty or one-rank group; not counted above)",
              ["parameter", "op", "line", "scope"],
              [[cell(g["parameter"]), g["op"], str(g["line"]), g["scope"]] for g in s.get("no_op_gathers", [])]),
    ]
    head = f"{s['path']}  entry @{s['entry']}" + ("  (sorted print order)" if s["sorted_order"] else "")
    blocks: list[Block] = [head, _stage_line(s)]
    if s["warnings"]:
        blocks.append(f"{len(s['warnings'])} warning(s)")
        blocks += [f"  line {w['line']}: {w['message']}" for w in s["warnings"]]
    return blocks + [t.limited(limit) for t in tables] + answer_blocks(s, limit)


def dir_blocks(d: dict[str, Any], limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """The report of a dump folder: the ranks, each stage's totals (sums over its ranks, said so in
    the title), and every rank's Send/Receive."""
    ranks = Table("Ranks", ["rank", "stage", "file", "comm nodes", "bytes"],
                  [[cell(r["rank"]), cell(r["stage"]), r["file"], cell(r["comm_totals"]["total"]["count"]),
                    _bytes_known(r["comm_totals"]["total"])] for r in d["ranks"]])
    blocks: list[Block] = [d["path"] + (f"  stage {d['stage']}" if d["stage"] is not None else ""), ranks.limited(limit)]
    for st in d["stages"]:
        n = len(st["ranks"])
        name = "No pipeline stage" if st["stage"] is None else f"Stage {st['stage']}"
        title = f"{name}: sum over {n} rank{'s' if n != 1 else ''} ({', '.join(map(str, st['ranks']))})"
        blocks.append(Table(f"{title}, communication by category", ["category", "count", "bytes"],
                            _totals_rows(st["comm_totals"], "by_category")).limited(limit))
        blocks.append(Table(f"{title}, communication by operator", ["operator", "count", "bytes"],
                            _totals_rows(st["comm_totals"], "by_op")).limited(limit))
    sr_cols, seg = _send_receive_columns([p for r in d["ranks"] for p in r["send_receive"]])
    send_receive = Table("Send/Receive per rank", ["rank", "stage", *sr_cols],
                         [[cell(r["rank"]), cell(r["stage"]), *_send_receive_row(p, seg)]
                          for r in d["ranks"] for p in r["send_receive"]])
    return blocks + [send_receive.limited(limit)] + dir_answer_blocks(d, limit)
