"""Diff two compilations: facts of each side (`facts`), node matching (`match`), the comparison
(`compare`) and its text, Markdown and JSON forms (`report`)."""
from __future__ import annotations

from .compare import DEFAULT_FAIL_ON, DiffResult, RankDiff, Side, diff, diff_dirs, diff_rank, parse_fail_on, parse_threshold

__all__ = ["DEFAULT_FAIL_ON", "DiffResult", "RankDiff", "diff", "diff_dirs", "diff_marks", "parse_fail_on",
           "parse_threshold"]


def diff_marks(old: Side, new: Side, old_rank: int | None, new_rank: int | None) -> tuple[dict[str, str], dict[str, str]]:
    """The nodes `irtool diff` reports added, removed or changed on each side (uid -> change), for
    `irtool view` to colour."""
    r = diff_rank(old, new, old_rank, new_rank)
    return r.old_marks, r.new_marks
