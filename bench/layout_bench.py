#!/usr/bin/env python3
"""Graphviz layout time against boxes and edges: folds of real dumps, laid out with `dot -Tsvg`
(90 s timeout). The figures behind `irtool.render.export.MAX_LAYOUT_EDGES` / `MAX_LAYOUT_BOXES`.

Usage: python bench/layout_bench.py
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import irtool  # noqa: E402
from irtool.render import graph as render  # noqa: E402
from irtool.render.export import to_pydot  # noqa: E402

F = ROOT / "fixtures" / "mindir"
CASES = [("gpt_large_perf/rank_0/19_validate_0078.ir.xz", d) for d in (3, 4, 5, 6)] + [
    ("pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz", "all"),
    ("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz", "all"),
    ("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz", 4)]


def main() -> int:
    render.MAX_BOXES = 10**9  # measure past the limits
    print(f"{'dump':55} {'depth':>5} {'boxes':>6} {'edges':>6} {'seconds':>8}")
    for rel, depth in CASES:
        dump = irtool.load(F / rel)
        graph = render.render_graph(dump, irtool.analyze(dump), depth=depth)
        text = to_pydot(graph).to_string().encode()
        start = time.perf_counter()
        try:
            subprocess.run(["dot", "-Tsvg", "-o", "/dev/null"], input=text, timeout=90, check=True)
            took = f"{time.perf_counter() - start:.1f}"
        except subprocess.TimeoutExpired:
            took = ">90"
        print(f"{rel:55} {depth!s:>5} {graph.number_of_nodes():6} {graph.number_of_edges():6} {took:>8}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
