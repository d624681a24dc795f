"""`irtool check` output: findings grouped by check and counted, one row per side, as text or Markdown
tables, or the JSON `irtool.check/1` (docs/check.md)."""
from __future__ import annotations

import json

from ..present import Block, Table, to_markdown, to_text
from .records import CHECK_TITLES, CHECKS, CheckResult


def blocks(result: CheckResult) -> list[Block]:
    counts = result.counts()
    n = counts["total"]
    ranks = len(result.ranks)
    head = (f"irtool check {result.path}: {ranks} rank{'s' if ranks != 1 else ''} (pass {result.pass_name}): "
            + ("consistent, no findings" if not n else f"{n} finding{'s' if n != 1 else ''}")
            + (f", {len(result.unchecked)} not checked" if result.unchecked else ""))
    out: list[Block] = [head]
    if n:
        out.append("  " + ", ".join(f"{CHECK_TITLES[c].lower()} {counts[c]}" for c in CHECKS))
    for check in CHECKS:
        found = [f for f in result.findings if f.check == check]
        if not found:
            continue
        rows = [[str(i), f.subject, f.problem, s.location, s.text]
                for i, f in enumerate(found, 1) for s in f.sides]
        out.append(Table(f"{CHECK_TITLES[check]}: {len(found)} finding{'s' if len(found) != 1 else ''}",
                         ["#", "subject", "problem", "location", "what"], rows))
    if result.unchecked:
        out.append(Table(f"Not checked: {len(result.unchecked)}", ["check", "location", "what"],
                         [[CHECK_TITLES[u.check], u.file, u.text] for u in result.unchecked]))
    return out


def to_json(result: CheckResult) -> str:
    return json.dumps(result.as_dict(), indent=2)


def render(result: CheckResult, fmt: str) -> str:
    if fmt == "json":
        return to_json(result) + "\n"
    return (to_markdown if fmt == "markdown" else to_text)(blocks(result))
