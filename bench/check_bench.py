#!/usr/bin/env python3
"""Speed and memory of `irtool check DIR` and `irtool summarize DIR` over 8, 64, 256 and 1024 ranks.

Each run is a fresh `irtool <command> --format json --jobs J DIR` process. The 8 real ranks of a
folder (default fixtures/mindir/gpt_small_dp2mp2pp2) are reused under other rank numbers for the
larger folders: `rank_N/` is a symlink to real `rank_{N % 8}/`, in a temporary folder. The reused
ranks do not agree with each other (rank 8 holds rank 0's groups), so check ends with findings
(exit 1); the time and memory are what matter. Reported per run: wall seconds, seconds per rank as
a ratio to the smallest run's (1.0 = linear), the main process's peak RSS as a ratio to the
smallest run's (1.0 = flat), and the largest worker's peak RSS. With `--dask`, the smallest and the
largest folders are also checked through `--scheduler` on a Dask `LocalCluster` (J worker processes)
started here, each JSON compared with the local run's, the ratios to the smallest Dask run's (the
Dask client adds about 37 MB to the main process).

Usage: python bench/check_bench.py [--source DIR] [--jobs J] [--ranks 8,64,256,1024] [--commands check,summarize] [--dask]
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
         "sys.argv = ['irtool'] + sys.argv[1:]\n"
         "main()\n")


def folder(source: Path, n: int, into: Path) -> Path:
    """`into/rank_0 .. rank_{n-1}`, each a link to a real rank folder of `source`."""
    real = sorted(int(p.name[5:]) for p in source.glob("rank_*") if p.name[5:].isdigit())
    for rank in range(n):
        os.symlink(source / f"rank_{real[rank % len(real)]}", into / f"rank_{rank}")
    return into


def measure(command: str, path: Path, *options: str) -> tuple[float, float, float, str]:
    """(seconds, main peak RSS MB, largest worker peak RSS MB, JSON output) of one run."""
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", CHILD, command, "--format", "json", *options, str(path)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    seconds = time.perf_counter() - start
    if run.returncode not in (0, 1):
        raise SystemExit(f"{command} failed: {run.stderr.strip()[-2000:]}")
    me, kids = (int(x) for x in run.stderr.rsplit("peak_kb=", 1)[1].split()[:2])
    return seconds, me / 1024, kids / 1024, run.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=ROOT / "fixtures/mindir/gpt_small_dp2mp2pp2")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ranks", default="8,64,256,1024")
    ap.add_argument("--commands", default="check,summarize")
    ap.add_argument("--dask", action="store_true", help="also run the largest folder on a Dask LocalCluster")
    args = ap.parse_args()
    sizes = [int(x) for x in args.ranks.split(",")]
    print(f"source {args.source} ({args.jobs} worker processes, {os.cpu_count()} CPUs)")
    print(f"{'command':>9} {'ranks':>5} {'s':>7} {'s/rank':>7} {'x linear':>8} {'main MB':>8} {'x flat':>7} "
          f"{'worker MB':>9}")
    with tempfile.TemporaryDirectory(prefix="irtool-check-bench-") as tmp:
        dirs = {}
        for n in sizes:
            (Path(tmp) / str(n)).mkdir()
            dirs[n] = folder(args.source.resolve(), n, Path(tmp) / str(n))
        for command in args.commands.split(","):
            first: tuple[float, float] | None = None
            out = ""
            for n in sizes:
                seconds, me, kids, out = measure(command, dirs[n], "--jobs", str(args.jobs))
                first = first or (seconds / n, me)
                print(f"{command:>9} {n:5d} {seconds:7.2f} {seconds / n:7.3f} {seconds / n / first[0]:8.2f} "
                      f"{me:8.0f} {me / first[1]:7.2f} {kids:9.0f}")
            if args.dask:  # the smallest and the largest folder, each ratio to the smallest's on Dask
                import distributed

                dask: tuple[float, float] | None = None
                for n in (sizes[0], sizes[-1]):
                    with distributed.LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True,
                                                  host="127.0.0.1", dashboard_address=":0") as cluster:
                        seconds, me, _, remote = measure(command, dirs[n], "--scheduler", cluster.scheduler_address)
                    dask = dask or (seconds / n, me)
                    local = measure(command, dirs[n], "--jobs", str(args.jobs))[3] if n != sizes[-1] else out
                    print(f"{command:>9} {n:5d} {seconds:7.2f} {seconds / n:7.3f} {seconds / n / dask[0]:8.2f} "
                          f"{me:8.0f} {me / dask[1]:7.2f} {'dask':>9}  same answer as local: {remote == local}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
