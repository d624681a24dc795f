"""What `irtool summarize` reports, as data (`summarize`, `summarize_dir`) and as text, Markdown or JSON.

The JSON form is what CI reads; its fields are documented in README.md ("JSON output") and its
`schema` string changes whenever a field changes meaning.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from ..dumpdir import RankFacts
from ..ir import Dump, DumpWarning
from ..parallel import ParallelFacts, format_strategy
from .parallel_summary import comm_totals, parallel_summary
from .tables import Block, Table, cell

SCHEMA = "irtool.summary/1"


def summarize(dump: Dump, facts: ParallelFacts, extra_warnings: Iterable[DumpWarning] = ()) -> dict[str, Any]:
    """The summary of one dump as a JSON-ready dict (schema `irtool.summary/1`); `extra_warnings`
    are those of a deep check (`irtool.ir.check`)."""
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
        **parallel_summary(facts),
    }


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
        e = stages.setdefault(key, {"stage": r.stage, "ranks": [], "comm": []})
        e["ranks"].append(r.rank)
        e["comm"].extend(r.facts.comm)
    for e in stages.values():
        comm = e.pop("comm")
        e["comm_totals"] = comm_totals(comm)
        e["groups"] = sorted({c.group for c in comm if c.group})
    return {"schema": SCHEMA, "path": path, "stage": stage, "ranks": rows,
            "stages": [stages[k] for k in sorted(stages, key=lambda k: (k == "none", k.zfill(6)))]}


def to_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, ensure_ascii=False)


# --- text and Markdown -------------------------------------------------------------------------

def _bytes(n: int | None) -> str:
    return cell(n)


def _totals_rows(totals: dict[str, Any], key: str) -> list[list[str]]:
    return [[k, cell(v["count"]), _bytes(v["bytes"]) + (f" (+{v['bytes_unknown']} unknown)" if v["bytes_unknown"] else "")]
            for k, v in totals[key].items()]


def _stage_line(s: dict[str, Any]) -> str:
    ev = s.get("stage_evidence") or {}
    if s["stage"] is None:
        return "Pipeline stage: none (no pipeline Send/Receive)" if not ev.get("votes") else \
            f"Pipeline stage: unknown (votes {ev['votes']})"
    return f"Pipeline stage: {s['stage']} ({sum(ev['votes'].values())} votes, {', '.join(ev['how'])})"


def summary_blocks(s: dict[str, Any], limit: int | None = 25) -> list[Block]:
    """The report of one file summary: lines and tables (each at most `limit` rows; None = all)."""
    counts = Table("Counts", ["", "parsed", "declared"])
    for key in ("subgraphs", "params", "cnodes"):
        declared = s["header"].get(key)
        mark = "" if declared in (None, s["counts"][key]) else " (differs from the header)"
        counts.rows.append([key, cell(s["counts"][key]) + mark, cell(declared)])
    t = s["comm_totals"]
    tables = [
        counts,
        Table("Operators", ["operator", "count"], [[op, cell(n)] for op, n in s["ops"].items()]),
        Table("Communication by category", ["category", "count", "bytes"], _totals_rows(t, "by_category")),
        Table("Communication by operator", ["operator", "count", "bytes"], _totals_rows(t, "by_op")),
        Table("Communication by category/phase", ["category/phase", "count", "bytes"],
              _totals_rows(t, "by_category_phase")),
        Table("Device groups", ["group", "ranks", "comm nodes"],
              [[g["name"], "-".join(map(str, g["ranks"])) if g["ranks"] else f"{cell(None)} (size {cell(g['size'])})",
                cell(g["comm_nodes"])] for g in s["groups"]]),
        Table("Send/Receive", ["op", "phase", "peer stage", "peer rank", "bytes each", "micros"],
              [[p["op"], p["phase"], cell(p["peer_stage"]), cell(p["peer_rank"]), _bytes(p["bytes_each"]),
                ",".join(map(str, p["micros"])) or cell(None)] for p in s["send_receive"]]),
        Table("Gradient aggregation per parameter", ["parameter", "ops", "groups", "count", "bytes"],
              [[g["parameter"], ",".join(g["ops"]), ",".join(x or cell(None) for x in g["groups"]), cell(g["count"]),
                _bytes(g["bytes"])] for g in s["gradient_aggregation"]]),
        Table("Operators with strategies", ["operator", "scope", "in_strategy", "out_strategy / layout"],
              [[st["op"], st["scope"], format_strategy(st["in_strategy"] or st["in_layout"]) or cell(None),
                format_strategy(st["out_strategy"] or st["out_layout"]) or cell(None)] for st in s["strategies"]]),
        Table("Top scopes by communication bytes", ["scope", "count", "bytes"],
              [[x["scope"], cell(x["count"]), _bytes(x["bytes"])] for x in s["top_scopes"]]),
    ]
    head = f"{s['path']}  entry @{s['entry']}" + ("  (sorted print order)" if s["sorted_order"] else "")
    blocks: list[Block] = [head, _stage_line(s)]
    if s["warnings"]:
        blocks.append(f"{len(s['warnings'])} warning(s)")
        blocks += [f"  line {w['line']}: {w['message']}" for w in s["warnings"]]
    return blocks + [t.limited(limit) for t in tables]


def dir_blocks(d: dict[str, Any], limit: int | None = 25) -> list[Block]:
    """The report of a dump folder."""
    ranks = Table("Ranks", ["rank", "stage", "file", "comm nodes", "bytes"],
                  [[cell(r["rank"]), cell(r["stage"]), r["file"], cell(r["comm_totals"]["total"]["count"]),
                    _bytes(r["comm_totals"]["total"]["bytes"])] for r in d["ranks"]])
    blocks: list[Block] = [d["path"] + (f"  stage {d['stage']}" if d["stage"] is not None else ""), ranks.limited(limit)]
    for st in d["stages"]:
        rows = _totals_rows(st["comm_totals"], "by_category") + _totals_rows(st["comm_totals"], "by_op")
        title = f"Stage {cell(st['stage'])} (ranks {','.join(map(str, st['ranks']))})"
        blocks.append(Table(title, ["category / op", "count", "bytes"], rows).limited(limit))
    return blocks
