"""Text (rich) and Markdown rendering of the parallel parts of `irtool summarize`."""
from __future__ import annotations

from typing import Any

from .parallel import format_strategy


def _b(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def _totals_rows(totals: dict[str, Any], key: str) -> list[tuple[str, str, str]]:
    return [(k, str(v["count"]), _b(v["bytes"]) + (f" (+{v['bytes_unknown']} unknown)" if v["bytes_unknown"] else ""))
            for k, v in totals[key].items()]


def _strategy_cell(v: Any) -> str:
    return format_strategy(v)


def _sections(s: dict[str, Any], top: int) -> list[tuple[str, list[str], list[tuple]]]:
    """(title, headers, rows) of each parallel table of one file summary."""
    t = s["comm_totals"]
    out = [
        ("Communication by category", ["category", "count", "bytes"], _totals_rows(t, "by_category")),
        ("Communication by operator", ["operator", "count", "bytes"], _totals_rows(t, "by_op")),
        ("Communication by category/phase", ["category/phase", "count", "bytes"], _totals_rows(t, "by_category_phase")),
        ("Device groups", ["group", "ranks", "comm nodes"],
         [(g["name"], "-".join(map(str, g["ranks"])) if g["ranks"] else f"? (size {g['size']})", str(g["comm_nodes"]))
          for g in s["groups"]]),
        ("Send/Receive", ["op", "phase", "peer stage", "peer rank", "bytes each", "micros"],
         [(p["op"], p["phase"], str(p["peer_stage"]), str(p["peer_rank"]), _b(p["bytes_each"]),
           ",".join(map(str, p["micros"]))) for p in s["send_receive"]]),
        ("Gradient aggregation per parameter", ["parameter", "ops", "groups", "count", "bytes"],
         [(g["parameter"], ",".join(g["ops"]), ",".join(x or "?" for x in g["groups"]), str(g["count"]), _b(g["bytes"]))
          for g in s["gradient_aggregation"][:top]]),
        ("Operators with strategies", ["operator", "scope", "in_strategy", "out_strategy / layout"],
         [(st["op"], st["scope"], _strategy_cell(st["in_strategy"] or st["in_layout"]),
           _strategy_cell(st["out_strategy"] or st["out_layout"])) for st in s["strategies"][:top]]),
        ("Top scopes by communication bytes", ["scope", "count", "bytes"],
         [(x["scope"], str(x["count"]), _b(x["bytes"])) for x in s["top_scopes"]]),
    ]
    return [sec for sec in out if sec[2]]


def _stage_line(s: dict[str, Any]) -> str:
    ev = s.get("stage_evidence") or {}
    if s["stage"] is None:
        return "Pipeline stage: none (no pipeline Send/Receive)" if not ev.get("votes") else \
            f"Pipeline stage: unknown (votes {ev['votes']})"
    return f"Pipeline stage: {s['stage']} ({sum(ev['votes'].values())} votes, {', '.join(ev['how'])})"


def markdown_parallel(s: dict[str, Any], top: int = 25) -> list[str]:
    """Markdown lines for the parallel part of one file summary."""
    out = ["", _stage_line(s)]
    for title, headers, rows in _sections(s, top):
        out += ["", f"**{title}**", "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def print_parallel(s: dict[str, Any], console: Any, top: int = 25) -> None:
    """Rich tables for the parallel part of one file summary."""
    from rich.table import Table

    console.print(_stage_line(s), markup=False)
    for title, headers, rows in _sections(s, top):
        table = Table(*headers, title=title, title_justify="left")
        for row in rows:
            table.add_row(*row)
        console.print(table)


def _dir_sections(d: dict[str, Any]) -> list[tuple[str, list[str], list[tuple]]]:
    ranks = [(str(r["rank"]), str(r["stage"]), r["file"], str(r["comm_totals"]["total"]["count"]),
              _b(r["comm_totals"]["total"]["bytes"])) for r in d["ranks"]]
    out = [("Ranks", ["rank", "stage", "file", "comm nodes", "bytes"], ranks)]
    for st in d["stages"]:
        rows = _totals_rows(st["comm_totals"], "by_category") + _totals_rows(st["comm_totals"], "by_op")
        out.append((f"Stage {st['stage']} (ranks {','.join(map(str, st['ranks']))})", ["category / op", "count", "bytes"],
                    rows))
    return out


def markdown_dir(d: dict[str, Any]) -> str:
    """Markdown report of a dump folder."""
    out = [f"## `{d['path']}`"] + (["", f"Stage filter: {d['stage']}"] if d["stage"] is not None else [])
    for title, headers, rows in _dir_sections(d):
        out += ["", f"**{title}**", "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def print_dir(d: dict[str, Any], console: Any) -> None:
    """Rich tables of a dump folder."""
    from rich.table import Table

    console.print(f"[bold]{d['path']}[/bold]" + (f"  stage {d['stage']}" if d["stage"] is not None else ""))
    for title, headers, rows in _dir_sections(d):
        table = Table(*headers, title=title, title_justify="left")
        for row in rows:
            table.add_row(*row)
        console.print(table)
