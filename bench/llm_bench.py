#!/usr/bin/env python3
"""A real-size MindFormers Llama folder (issue 26 item 8): `summarize DIR --cost` and `check DIR`,
each as a ratio to the plain regex counter over the same files, measured in the same run.

The folder (default bench/fixtures/mindformers_llama_large_pp4: 32 layers, hidden 2048, dp1 x mp2 x
pp4, 8 micro batches, ranks 0, 2, 4, 6; its manifest.json) is kept out of fixtures/mindir so that
the tests do not read it. Each run is a fresh process (`--jobs J` worker processes; CPU is user +
system of the process and its waited-for workers); the yardstick is `../shared/tools/groundtruth.py`
over the validate file of every rank (what the commands read), one process; alternating, REPEAT
times; medians. The viewer at this size: `python bench/view_bench.py DIR`.

Usage: python bench/llm_bench.py [--repeat N] [--jobs J] [DIR]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "bench/fixtures/mindformers_llama_large_pp4"
GROUNDTRUTH = ROOT.parent / "shared/tools/groundtruth.py"


def run(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds of the process and its workers, wall seconds) of one fresh run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: check found something, summarize --cost a gate: still a full run
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("folder", nargs="?", default=str(DEFAULT))
    args = ap.parse_args(argv)
    files = sorted(str(p) for p in Path(args.folder).glob("rank_*/*validate*"))
    if not files:
        raise SystemExit(f"{args.folder}: no rank_N/*validate* file")
    irtool = [sys.executable, "-m", "irtool.cli"]
    runs = {"summarize --cost": irtool + ["summarize", "--cost", "--format", "json", "--jobs", str(args.jobs),
                                          args.folder],
            "check": irtool + ["check", "--format", "json", "--jobs", str(args.jobs), args.folder]}
    yardstick = [sys.executable, str(GROUNDTRUTH), *files]
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in [*runs, "regex"]}
    for _ in range(args.repeat):  # alternating: a busy moment of the machine hits all alike
        for name, cmd in runs.items():
            got[name].append(run(cmd))
        got["regex"].append(run(yardstick))
    med = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in got.items()}
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    print(f"{args.folder}: {len(files)} validate files ({mb:.1f} MB as stored), {args.jobs} worker processes, "
          f"{args.repeat} runs each, medians; load {os.getloadavg()[0]:.1f}")
    print(f"{'run':>18} {'CPU s':>7} {'wall s':>7} {'CPU / regex':>12}")
    for name, (cpu, wall) in med.items():
        print(f"{name:>18} {cpu:7.2f} {wall:7.2f} {cpu / med['regex'][0]:11.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
