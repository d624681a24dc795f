"""Benchmark: `irtool diff` of the large fixture against itself vs two plain parses.

Target: the diff (two loads plus the comparison) takes at most twice the time of two parses.
Run: `.venv/bin/python bench/diff_bench.py [PATH]`. Prints seconds and peak RSS; exit 1 if over.
"""
from __future__ import annotations

import gc
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from irtool import load  # noqa: E402
from irtool.diff import diff  # noqa: E402

DEFAULT = ROOT / "fixtures" / "mindir" / "gpt_large_perf" / "rank_0" / "19_validate_0078.ir.xz"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports kB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def time_parses(path: str) -> float:
    start = time.perf_counter()
    a = load(path)
    b = load(path)
    elapsed = time.perf_counter() - start
    del a, b
    gc.collect()
    return elapsed


def time_diff(path: str) -> tuple[float, float]:
    """(total seconds including both loads, seconds of the comparison alone)."""
    start = time.perf_counter()
    a = load(path)
    b = load(path)
    mid = time.perf_counter()
    result = diff(a, b)
    end = time.perf_counter()
    assert result.identical, "a dump diffed against itself must be identical"
    return end - start, end - mid


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else str(DEFAULT)
    parses = time_parses(path)
    print(f"two parses:            {parses:8.2f} s   peak RSS {peak_rss_mb():8.1f} MB")
    total, compare = time_diff(path)
    print(f"diff (2 loads + diff): {total:8.2f} s   peak RSS {peak_rss_mb():8.1f} MB   (comparison {compare:.2f} s)")
    ratio = total / parses if parses else float("inf")
    ok = ratio <= 2.0
    print(f"ratio {ratio:.2f} (target <= 2.0): {'ok' if ok else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
