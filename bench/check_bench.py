#!/usr/bin/env python3
"""Speed and memory of `irtool check DIR` over 8, 16 and 64 ranks.

Each run is a fresh `irtool check --format json --jobs J DIR` process. The 8 real ranks of a folder
(default fixtures/mindir/gpt_small_dp2mp2pp2) are reused under other rank numbers for the larger
folders: `rank_N/` is a symlink to real `rank_{N % 8}/`, in a temporary folder. The reused ranks do
not agree with each other (rank 8 holds rank 0's groups), so those runs end with findings (exit 1);
the time is what matters. Peak RSS is the main process's, and the largest worker's.

Usage: python bench/check_bench.py [--source DIR] [--jobs J] [--ranks 8,16,64]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The child reports its own peak RSS and its largest (waited-for) worker's on exit.
CHILD = ("import atexit, resource, sys\n"
         "def report():\n"
         "    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
         "    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
         "    sys.stderr.write('peak_kb=%d %d\\n' % (me, kids))\n"
         "atexit.register(report)\n"
         "from irtool.cli import main\n"
         "sys.argv = ['irtool', 'check', '--format', 'json'] + sys.argv[1:]\n"
         "main()\n")


def folder(source: Path, n: int, into: Path) -> Path:
    """`into/rank_0 .. rank_{n-1}`, each a link to a real rank folder of `source`."""
    real = sorted(int(p.name[5:]) for p in source.glob("rank_*") if p.name[5:].isdigit())
    for rank in range(n):
        os.symlink(source / f"rank_{real[rank % len(real)]}", into / f"rank_{rank}")
    return into


def measure(path: Path, jobs: int) -> tuple[float, float, float, int]:
    """(seconds, main peak RSS MB, largest worker peak RSS MB, exit code) of one check."""
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", CHILD, "--jobs", str(jobs), str(path)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    seconds = time.perf_counter() - start
    if run.returncode not in (0, 1):
        raise SystemExit(f"check failed: {run.stderr.strip()}")
    me, kids = (int(x) for x in run.stderr.rsplit("peak_kb=", 1)[1].split()[:2])
    return seconds, me / 1024, kids / 1024, run.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=ROOT / "fixtures/mindir/gpt_small_dp2mp2pp2")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ranks", default="8,16,64")
    args = ap.parse_args()
    print(f"source {args.source} ({args.jobs} worker processes, {os.cpu_count()} CPUs)")
    print(f"{'ranks':>5} {'s':>7} {'s/rank':>7} {'main RSS MB':>12} {'worker RSS MB':>14} {'exit':>5}")
    for n in (int(x) for x in args.ranks.split(",")):
        with tempfile.TemporaryDirectory(prefix="irtool-check-bench-") as tmp:
            seconds, me, kids, code = measure(folder(args.source.resolve(), n, Path(tmp)), args.jobs)
        print(f"{n:5d} {seconds:7.2f} {seconds / n:7.3f} {me:12.0f} {kids:14.0f} {code:5d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
