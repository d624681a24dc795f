"""`irtool check` output: the verdict and what was compared, then one table per root cause (its
headline, its findings one row per side), as text or Markdown tables, or the JSON `irtool.check/2`
(docs/check.md)."""
from __future__ import annotations

from typing import Iterator

from ..present import Block, Table
from .records import CHECK_TITLES, CHECKS, CheckResult


def headline(result: CheckResult) -> str:
    """`irtool check DIR: 8 ranks (pass validate): 11 findings from 1 cause`; `consistent` only when
    there is no finding, with `as far as compared` when something could not be compared, never when
    a rank was not read (`no findings in the ranks read`; the CLI says after it how many were not)."""
    n, ranks, k = len(result.findings), len(result.ranks), len(result.causes)
    if n:
        verdict = (f"{n} finding{'s' if n != 1 else ''} from {k} cause{'s' if k != 1 else ''}"
                   + ("" if result.complete or result.unreadable else ", not fully checked"))
    elif result.unreadable:
        verdict = "no findings in the ranks read"
    else:
        verdict = "consistent" if result.complete else "consistent as far as compared, not fully checked"
    return (f"irtool check {result.path}: {ranks} rank{'s' if ranks != 1 else ''} (pass {result.pass_name}): "
            + verdict + (f", {len(result.unchecked)} not checked" if result.unchecked else ""))


def blocks(result: CheckResult) -> Iterator[Block]:
    """The report's blocks, each made when it is written: one cause's table at a time."""
    counts = result.counts()
    yield headline(result)  # one line each in text, one paragraph each in Markdown
    yield "  " + result.coverage.text()
    if counts["total"]:
        yield "  findings: " + ", ".join(f"{CHECK_TITLES[c].lower()} {counts[c]}" for c in CHECKS)
    for i, cause in enumerate(result.causes, 1):
        n = len(cause.numbers)
        rows = [[str(k + 1), CHECK_TITLES[f.check], f.subject, f.problem, s.location, s.text]
                for k in cause.numbers for f in (result.findings[k],) for s in f.sides]
        yield Table(f"Cause {i} of {len(result.causes)} ({n} finding{'s' if n != 1 else ''}): {cause.headline}",
                    ["#", "check", "subject", "problem", "location", "what"], rows)
    if result.unchecked:
        yield Table(f"Not checked: {len(result.unchecked)}", ["check", "location", "what"],
                    [[CHECK_TITLES[u.check], u.file, u.text] for u in result.unchecked])
