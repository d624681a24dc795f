"""Time rendering stage 0 of the large GPT fixture (automatic fold) and report peak RSS.

Usage: .venv/bin/python bench/render_bench.py [DUMP] [--format svg|dot]
"""
from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from irtool import analyze, load  # noqa: E402
from irtool.render.export import export  # noqa: E402
from irtool.render.graph import render_graph  # noqa: E402

CANDIDATES = [ROOT / "fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz",
              ROOT.parent / "shared/fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir"]


def main(argv: list[str]) -> int:
    fmt = argv[argv.index("--format") + 1] if "--format" in argv else "svg"
    paths = [a for a in argv if not a.startswith("--") and a != fmt]
    path = paths[0] if paths else next(str(p) for p in CANDIDATES if p.exists())
    t0 = time.perf_counter()
    dump = load(path)
    t1 = time.perf_counter()
    graph = render_graph(dump, analyze(dump), stage=0)  # depth None = automatic fold, bounded box count
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, f"stage0.{fmt}")
        export(graph, out)
        size = os.path.getsize(out)
    t3 = time.perf_counter()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{path}: {sum(1 for _ in dump.nodes())} nodes -> {graph.number_of_nodes()} boxes, "
          f"{graph.number_of_edges()} edges, depth {graph.graph['depth']}, {fmt} {size} bytes")
    print(f"load {t1 - t0:.2f}s  select+fold {t2 - t1:.2f}s  layout+write {t3 - t2:.2f}s  total {t3 - t0:.2f}s")
    print(f"peak RSS {rss_mb:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
