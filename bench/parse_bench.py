#!/usr/bin/env python3
"""Parse speed and memory: for each PATH, size, seconds, MB/s and peak RSS of
`irtool summarize --format json PATH`, the end-to-end job CI runs. Each file is measured in a
fresh process, so the peak RSS is that file's alone.

Usage: python bench/parse_bench.py [PATH...]
       (default: ../shared/fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz)
"""
from __future__ import annotations

import lzma
import os
import subprocess
import sys
import time
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1] / ".." / "shared/fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz"


def raw_size(path: str) -> int:
    if path.endswith(".xz"):
        with lzma.open(path) as f:
            return sum(len(chunk) for chunk in iter(lambda: f.read(1 << 20), b""))
    return os.path.getsize(path)


# The child reports its own peak RSS on exit (RUSAGE_CHILDREN would give the largest child so far).
CHILD = ("import atexit, resource, sys\n"
         "atexit.register(lambda: sys.stderr.write('peak_kb=%d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
         "from irtool.cli import main\n"
         "sys.argv = ['irtool', 'summarize', '--format', 'json', sys.argv[1]]\n"
         "main()\n")


def measure(path: str) -> tuple[int, float, float]:
    """(raw bytes, seconds, peak RSS in MB) of one `irtool summarize --format json` in a child."""
    size = raw_size(path)
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", CHILD, path], check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    peak_kb = int(run.stderr.rsplit("peak_kb=", 1)[1].split()[0])
    return size, seconds, peak_kb / 1024


def main(paths: list[str]) -> int:
    paths = paths or [str(DEFAULT.resolve())]
    print(f"{'file':60} {'MB':>8} {'s':>7} {'MB/s':>7} {'peak RSS MB':>12}")
    for path in paths:
        size, seconds, peak = measure(path)
        print(f"{os.path.basename(path)[:60]:60} {size / 1e6:8.1f} {seconds:7.2f} {size / 1e6 / seconds:7.1f} {peak:12.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
