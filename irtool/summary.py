"""What `irtool summarize` reports, as data (`summarize`) and as text, Markdown or JSON.

The JSON form is what CI reads; its fields are documented in README.md ("JSON output") and its
`schema` string changes whenever a field changes meaning.
"""
from __future__ import annotations

import json
from typing import Any

from .model import Dump
from .parallel_render import markdown_parallel, print_parallel
from .parallel_summary import comm_totals, parallel_summary

SCHEMA = "irtool.summary/1"


def summarize(dump: Dump) -> dict[str, Any]:
    """The summary of one dump as a JSON-ready dict (schema `irtool.summary/1`)."""
    hist = dump.op_histogram()
    parallel = parallel_summary(dump)  # first: it may add warnings
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
        "warnings": [w.as_dict() for w in dump.warnings],
        **parallel,
    }


def summarize_dir(path: str, ranks: list[dict[str, Any]], stage: int | None = None) -> dict[str, Any]:
    """The summary of a dump folder from `irtool.dumpdir.load_dir` results: per rank and per stage."""
    rows, stages = [], {}
    for r in ranks:
        s = r["summary"]
        rows.append({"rank": r["rank"], "file": r["file"], "stage": r["stage"], "counts": s["counts"],
                     "comm_totals": s["comm_totals"], "send_receive": s["send_receive"],
                     "groups": [g["name"] for g in s["groups"]]})
        key = "none" if r["stage"] is None else str(r["stage"])
        e = stages.setdefault(key, {"stage": r["stage"], "ranks": [], "comm": []})
        e["ranks"].append(r["rank"])
        e["comm"].extend(s["comm"])
    for e in stages.values():
        comm = e.pop("comm")
        e["comm_totals"] = comm_totals(comm)
        e["groups"] = sorted({c["group"] for c in comm if c["group"]})
    return {"schema": SCHEMA, "path": path, "stage": stage, "ranks": rows,
            "stages": [stages[k] for k in sorted(stages, key=lambda k: (k == "none", k.zfill(6)))]}


def to_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2, ensure_ascii=False)


def to_markdown(summary: dict[str, Any]) -> str:
    """A Markdown report, fit for a pull-request comment."""
    out = [f"## `{summary['path']}`", "", f"Entry graph: `@{summary['entry']}`", "",
           "| | parsed | declared |", "|---|---:|---:|"]
    for key in ("subgraphs", "params", "cnodes"):
        out.append(f"| {key} | {summary['counts'][key]} | {summary['header'].get(key, '')} |")
    out += ["", "| operator | count |", "|---|---:|"]
    out += [f"| `{op}` | {n} |" for op, n in summary["ops"].items()]
    if summary["warnings"]:
        out += ["", "**Warnings**", ""] + [f"- line {w['line']}: {w['message']}" for w in summary["warnings"]]
    if "comm" in summary:
        out += markdown_parallel(summary)
    return "\n".join(out) + "\n"


def print_text(summary: dict[str, Any], console: Any, top: int = 25) -> None:
    """Rich tables on `console`."""
    from rich.table import Table

    console.print(f"[bold]{summary['path']}[/bold]  entry [cyan]@{summary['entry']}[/cyan]"
                  + ("  (sorted print order)" if summary["sorted_order"] else ""))
    counts = Table("", "parsed", "declared", title="Counts", title_justify="left")
    for key in ("subgraphs", "params", "cnodes"):
        declared = summary["header"].get(key)
        mark = "" if declared in (None, summary["counts"][key]) else " [red]![/red]"
        counts.add_row(key, str(summary["counts"][key]) + mark, "" if declared is None else str(declared))
    console.print(counts)
    ops = Table("operator", "count", title=f"Operators (top {top} of {len(summary['ops'])})",
                title_justify="left")
    for op, n in list(summary["ops"].items())[:top]:
        ops.add_row(op, str(n))
    console.print(ops)
    if summary["warnings"]:
        console.print(f"[yellow]{len(summary['warnings'])} warning(s)[/yellow]")
        for w in summary["warnings"][:20]:
            console.print(f"  line {w['line']}: {w['message']}", markup=False)
    if "comm" in summary:
        print_parallel(summary, console, top)
