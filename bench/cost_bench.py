#!/usr/bin/env python3
"""CPU seconds of `--cost` on one dump, as a ratio to reading it (`irtool.load`) in the same run:
load, parallel analysis, FLOPs (`compute_cost`), memory (`compute_memory`), order (`stage_order`).

Usage: python bench/cost_bench.py [DUMP]   (default: the 68 MB gpt_large_perf validate dump)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from irtool import load
from irtool.parallel import analyze
from irtool.parallel.cost import compute_cost
from irtool.parallel.memory import compute_memory
from irtool.parallel.order import stage_order

DEFAULT = Path(__file__).resolve().parents[1] / "fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz"


def main(path: str) -> int:
    marks = [("start", time.process_time())]
    dump = load(path)
    marks.append(("load", time.process_time()))
    facts = analyze(dump)
    marks.append(("analyze", time.process_time()))
    compute_cost(facts.table)
    marks.append(("cost", time.process_time()))
    compute_memory(facts.table, facts.stage, None)
    marks.append(("memory", time.process_time()))
    stage_order(facts.table)
    marks.append(("order", time.process_time()))
    base = marks[1][1] - marks[0][1]
    for (_, t0), (name, t1) in zip(marks, marks[1:]):
        print(f"{name:9s} {t1 - t0:6.2f} s CPU  {(t1 - t0) / base:4.2f}x load")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(DEFAULT)))
