#!/usr/bin/env python3
"""What `--cost` costs, as ratios to a yardstick measured in the same run.

Folder (default): CPU seconds (user + system, the irtool process and its worker processes) of
`irtool summarize DIR --cost --format json` against plain `irtool summarize DIR --format json` on the
same folder, fresh processes, alternating, REPEAT times each; the medians and their ratio (issue 25:
at most 1.5x). Wall seconds beside them.

`--dump FILE`: the phases of `--cost` on one dump, each a ratio to reading it (`irtool.load`) in the
same run: analysis, FLOPs (`compute_cost`), memory (`compute_memory`), order (`stage_order`), the peak of
live tensors (the `lifetimes` fact: the step walked in execution order), time on the default hardware profile
(`timing.stage_timing`, FLOPs kept per operator as it needs them).

Usage: python bench/cost_bench.py [--repeat N] [--jobs J] [DIR]
       python bench/cost_bench.py --dump [FILE]   (default: the 68 MB gpt_large_perf validate dump)
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
FOLDER = ROOT / "fixtures/mindir/gpt_small_dp2mp2pp2"
DUMP = ROOT / "fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz"


def run(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds of the process and its waited-for workers, wall seconds) of one fresh run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def folder(path: Path, repeat: int, jobs: int) -> int:
    base = [sys.executable, "-m", "irtool.cli", "summarize", "--format", "json", "--jobs", str(jobs), str(path)]
    plain, cost = [], []
    for _ in range(repeat):  # alternating: a load change on the machine hits both alike
        plain.append(run(base))
        cost.append(run(base + ["--cost"]))
    cpu_p, cpu_c = statistics.median(c for c, _ in plain), statistics.median(c for c, _ in cost)
    wall_p, wall_c = statistics.median(w for _, w in plain), statistics.median(w for _, w in cost)
    print(f"{path} ({jobs} worker processes, {repeat} runs each, medians; load {os.getloadavg()[0]:.1f})")
    print(f"{'run':>18} {'CPU s':>7} {'wall s':>7}")
    print(f"{'summarize':>18} {cpu_p:7.2f} {wall_p:7.2f}")
    print(f"{'summarize --cost':>18} {cpu_c:7.2f} {wall_c:7.2f}")
    print(f"{'ratio':>18} {cpu_c / cpu_p:6.2f}x {wall_c / wall_p:6.2f}x   (target: CPU <= 1.5x)")
    return 0


def dump(path: str) -> int:
    from irtool import load
    from irtool.parallel import analyze
    from irtool.parallel.cost import compute_cost
    from irtool.parallel.memory import compute_memory
    from irtool.parallel.order import stage_order

    marks = [("start", time.process_time())]
    d = load(path)
    marks.append(("load", time.process_time()))
    facts = analyze(d)
    facts.comm  # noqa: B018 - the analysis a plain summary does
    marks.append(("analyze", time.process_time()))
    compute_cost(facts.table)
    marks.append(("cost", time.process_time()))
    compute_memory(facts.table)
    marks.append(("memory", time.process_time()))
    order = stage_order(facts.table)
    marks.append(("order", time.process_time()))
    facts.table.get("lifetimes")
    marks.append(("lifetimes", time.process_time()))
    from irtool.parallel.hardware import load_profile
    from irtool.parallel.timing import stage_timing

    stage_timing(facts.table, compute_cost(facts.table, keep_ops=True), load_profile(None), facts.groups, order)
    marks.append(("time", time.process_time()))
    base = marks[1][1] - marks[0][1]
    for (_, t0), (name, t1) in zip(marks, marks[1:]):
        print(f"{name:9s} {t1 - t0:6.2f} s CPU  {(t1 - t0) / base:4.2f}x load")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=None)
    ap.add_argument("--dump", action="store_true", help="the phases of --cost on one dump instead")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if args.dump:
        return dump(args.path or str(DUMP))
    return folder(Path(args.path) if args.path else FOLDER, args.repeat, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
