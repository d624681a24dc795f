"""Diff two compilations: facts of each side (`facts`), node matching (`match`), the comparison
(`compare`) and its text, Markdown and JSON forms (`report`)."""
from __future__ import annotations

from .compare import (
    DEFAULT_FAIL_ON,
    DiffResult,
    RankDiff,
    diff,
    diff_dirs,
    diff_rank,
    logical_diff,
    parse_fail_on,
    parse_threshold,
)

__all__ = ["DEFAULT_FAIL_ON", "DiffResult", "RankDiff", "diff", "diff_dirs", "diff_rank", "logical_diff", "parse_fail_on",
           "parse_threshold"]
