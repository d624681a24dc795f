"""Render a `DiffResult` as text, markdown (a PR comment) or JSON (`irtool.diff/1`)."""
from __future__ import annotations

import json
from typing import Any, Iterable

from .compare import DEFAULT_FAIL_ON, DiffResult, RankDiff

MAX_ROWS = 200  # per table in text and markdown; JSON is never truncated


def to_json(result: DiffResult, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
            max_comm_bytes_increase: str | None = None) -> str:
    """The documented JSON document (docs/diff.md)."""
    return json.dumps(result.as_dict(fail_on, max_comm_bytes_increase), indent=2, sort_keys=False)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return "(" + ", ".join(_fmt(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def _stage(stage: int | None) -> str:
    return "-" if stage is None else str(stage)


def _pct(old: int, new: int) -> str:
    if old == new:
        return "="
    if not old:
        return "new"
    return f"{(new - old) * 100.0 / old:+.1f}%"


def _comm_row(e: dict[str, Any]) -> list[str]:
    side = e["new"] or e["old"]
    if e["change"] == "changed":
        what = "; ".join(f"{f}: {_fmt(e['old'][f])} -> {_fmt(e['new'][f])}" for f in e["fields"])
    else:
        what = f"group size {_fmt(side['group_size'])}, shape {_fmt(side['shape'])}, {_fmt(side['bytes'])} bytes"
    return [e["change"], _stage(e["stage"]), e["op"], e["category"], e["node_scope"] or e["scope"], what]


def _strategy_row(e: dict[str, Any]) -> list[str]:
    what = f"{e['field']}: {_fmt(e['old'])} -> {_fmt(e['new'])}" if e["field"] else _fmt(e["old"] or e["new"])
    return [e["change"], _stage(e["stage"]), e["op"], e["name"] or "-", e["node_scope"] or e["scope"], what]


def _param_row(e: dict[str, Any]) -> list[str]:
    return [e["change"], e["name"], f"{_fmt(e['old_shape'])} {e['old_dtype'] or ''}".strip(),
            f"{_fmt(e['new_shape'])} {e['new_dtype'] or ''}".strip()]


def _specific_row(e: dict[str, Any]) -> list[str]:
    what = "; ".join(f"{f}: {_fmt(e['old'][f])} -> {_fmt(e['new'][f])}" for f in e["fields"])
    return [_stage(e["stage"]), e["op"], e["node_scope"], what]


def _sections(r: RankDiff) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) for each non-empty section of one rank pair."""
    out = []
    if r.comm:
        out.append(("Communication nodes", ["change", "stage", "op", "category", "scope", "difference"],
                    [_comm_row(e) for e in r.comm]))
    if r.strategy:
        out.append(("Strategies", ["change", "stage", "op", "name", "scope", "difference"],
                    [_strategy_row(e) for e in r.strategy]))
    if r.ops:
        out.append(("Operator counts", ["op", "old", "new", "delta"],
                    [[e["op"], str(e["old"]), str(e["new"]), f"{e['delta']:+d}"] for e in r.ops]))
    if r.params:
        out.append(("Parameters", ["change", "name", "old", "new"], [_param_row(e) for e in r.params]))
    if r.comm_bytes:
        out.append(("Communication bytes per stage and category", ["stage", "category", "old", "new", "change"],
                    [[_stage(e["stage"]), e["category"], f"{e['old']:,} ({e['old_count']})",
                      f"{e['new']:,} ({e['new_count']})", _pct(e["old"], e["new"])] for e in r.comm_bytes]))
    if r.parameter_comm:
        out.append(("Gradient / optimizer communication per parameter", ["parameters", "old", "new", "names"],
                    [[f"{e['count']} parameter(s)", e["old"], e["new"], ", ".join(e["parameters"])]
                     for e in r.parameter_comm]))
    if r.renamed_scopes:
        out.append(("Scopes matched through renamed wrapper cells", ["old scopes", "note"],
                    [[str(r.renamed_scopes), "matched by their common suffix under the network (docs/diff.md)"]]))
    if r.rank_specific:
        out.append(("Rank-specific (expected between two ranks of one stage; not a failure)",
                    ["stage", "op", "scope", "difference"], [_specific_row(e) for e in r.rank_specific]))
    return out


def _title(r: RankDiff) -> str:
    def side(rank: int | None, stage: int | None) -> str:
        text = f"rank {rank}" if rank is not None else "dump"
        return text + (f" (stage {stage})" if stage is not None else "")

    return f"{side(r.old_rank, r.old_stage)} -> {side(r.new_rank, r.new_stage)}"


def _verdict(result: DiffResult, reasons: list[str]) -> str:
    if reasons:
        return "FAIL: " + "; ".join(reasons)
    return "identical" if result.identical else "differences found, none matching --fail-on"


def to_text(result: DiffResult, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
            max_comm_bytes_increase: str | None = None) -> str:
    """Plain text for a terminal or a CI log."""
    reasons = result.failures(fail_on, max_comm_bytes_increase)
    lines = []
    for r in result.ranks:
        lines.append(f"== {_title(r)}")
        lines.append(f"   old: {r.old_path}")
        lines.append(f"   new: {r.new_path}")
        for title, header, rows in _sections(r):
            lines.append(f"-- {title}")
            widths = [max(len(h), *(len(row[i]) for row in rows[:MAX_ROWS])) for i, h in enumerate(header)]
            widths[-1] = 0
            for row in [header] + rows[:MAX_ROWS]:
                lines.append("   " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
            if len(rows) > MAX_ROWS:
                lines.append(f"   ... {len(rows) - MAX_ROWS} more (see --format json)")
    if result.only_old or result.only_new:
        lines.append(f"ranks only in old: {result.only_old}; only in new: {result.only_new}")
    lines.append(_verdict(result, reasons))
    return "\n".join(lines) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(result: DiffResult, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
                max_comm_bytes_increase: str | None = None) -> str:
    """Markdown fit for a pull-request comment: verdict first, one collapsible block per rank."""
    reasons = result.failures(fail_on, max_comm_bytes_increase)
    icon = ":x:" if reasons else (":white_check_mark:" if result.identical else ":information_source:")
    headline = f"{len(reasons)} failing difference(s)" if reasons else _verdict(result, [])
    lines = [f"### {icon} irtool diff: {headline}", ""]
    for reason in reasons:
        lines.append(f"- **{_md_cell(reason)}**")
    if result.only_old or result.only_new:
        lines.append(f"- ranks only in old: {result.only_old}; only in new: {result.only_new}")
    if reasons or result.only_old or result.only_new:
        lines.append("")
    for r in result.ranks:
        counts = ", ".join(f"{v} {k}" for k, v in r.counts().items() if v) or "no differences"
        lines.append(f"<details{' open' if reasons else ''}><summary><b>{_title(r)}</b>: {counts}</summary>")
        lines.append("")
        for title, header, rows in _sections(r):
            lines.append(f"**{title}**")
            lines.append("")
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "---|" * len(header))
            for row in rows[:MAX_ROWS]:
                lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
            if len(rows) > MAX_ROWS:
                lines.append(f"\n_{len(rows) - MAX_ROWS} more rows: see `--format json`_")
            lines.append("")
        lines.append("</details>")
        lines.append("")
    return "\n".join(lines)
