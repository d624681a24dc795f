"""Parallel semantics of one dump, on top of the format layer: `analyze(dump) -> ParallelFacts`.

Rules in docs/parallel.md. Nothing here writes into a `Dump`, prints, or knows about reports.
"""
from __future__ import annotations

from .analyze import analyze
from .records import (
                      CATEGORIES,
                      PHASES,
                      STRATEGY_KEYS,
                      Bytes,
                      Category,
                      CommNode,
                      FileKind,
                      Group,
                      ParallelFacts,
                      Phase,
                      StageInfo,
                      Strategy,
)
from .rules import COMM_OPS
from .sizes import type_bytes

__all__ = ["analyze", "CATEGORIES", "PHASES", "Category", "CommNode", "FileKind", "Group", "ParallelFacts",
           "Phase", "StageInfo", "Strategy", "COMM_OPS", "type_bytes", "Bytes", "STRATEGY_KEYS"]
