#!/usr/bin/env python3
"""LLM folders (issues 26 and 42): `summarize`, `summarize --cost`, `check`, `export` of a real-size MindFormers
Llama folder and `diff` of it against a second LLM folder, each as a ratio to the plain regex counter over the
same files, measured in the same run; `diff` also against the two summaries it compares.

The folder (default bench/fixtures/mindformers_llama_large_pp4: 32 layers, hidden 2048, dp1 x mp2 x
pp4, 8 micro batches, ranks 0, 2, 4, 6; its manifest.json) is kept out of fixtures/mindir so that
the tests do not read it; the second folder (`--other`, default fixtures/mindir/mindformers_llama_pp4: 4 ranks of
another Llama) is what `diff` compares it with. Each run is a fresh process (`--jobs J` worker processes;
CPU is user + system of the process and its waited-for workers; peak RSS the largest of them); the yardstick
is `../shared/tools/groundtruth.py` over the validate file of every rank the command reads, one process;
alternating, REPEAT times; medians. Python's bytecode is cached (in a temporary folder, a first run of each
command not counted), as in an installed irtool: a source tree run with PYTHONDONTWRITEBYTECODE compiles every
module again in each process. The viewer at this size: `python bench/view_bench.py DIR`.

Usage: python bench/llm_bench.py [--repeat N] [--jobs J] [--other DIR2] [--only NAME,...] [DIR]
"""
from __future__ import annotations

import argparse
import lzma
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "bench/fixtures/mindformers_llama_large_pp4"
OTHER = ROOT / "fixtures/mindir/mindformers_llama_pp4"
GROUNDTRUTH = ROOT.parent / "shared/tools/groundtruth.py"


def bytecode_env(cache: str) -> dict[str, str]:
    """The environment of every run: this tree first on the path, bytecode kept in `cache`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": cache}


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds of the process and its workers, peak RSS in MB) of one fresh run."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # 1: check or diff found something, summarize --cost a gate: still a full run
        raise SystemExit(f"{' '.join(argv)} failed ({code}): {err.strip()[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def validate_files(folder: str) -> list[str]:
    files = sorted(str(p) for p in Path(folder).glob("rank_*/*validate*"))
    if not files:
        raise SystemExit(f"{folder}: no rank_N/*validate* file")
    return files


def text_mb(files: list[str]) -> float:
    """The decompressed size of `files` in MB (what is read)."""
    total = 0
    for f in files:
        if f.endswith(".xz"):
            with lzma.open(f) as src:
                total += sum(len(chunk) for chunk in iter(lambda: src.read(1 << 20), b""))
        else:
            total += os.path.getsize(f)
    return total / 1e6


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--other", default=str(OTHER), help="the second LLM folder `diff` compares with")
    ap.add_argument("--only", default="", help="comma-separated run names (default: all)")
    ap.add_argument("folder", nargs="?", default=str(DEFAULT))
    args = ap.parse_args(argv)
    mine, other = validate_files(args.folder), validate_files(args.other)
    py, jobs = sys.executable, ["--jobs", str(args.jobs)]
    irtool = [py, "-m", "irtool.cli"]
    out = tempfile.mkdtemp(prefix="irtool-llm-bench-")
    # name -> (command, the files it reads: its yardstick's)
    runs = {
        "summarize": (irtool + ["summarize", "--format", "json", *jobs, args.folder], mine),
        "summarize --cost": (irtool + ["summarize", "--cost", "--format", "json", *jobs, args.folder], mine),
        "check": (irtool + ["check", "--format", "json", *jobs, args.folder], mine),
        "export": (irtool + ["export", "-o", os.path.join(out, "graph.json"), args.folder], mine),
        "summarize other": (irtool + ["summarize", "--format", "json", *jobs, args.other], other),
        "diff": (irtool + ["diff", "--format", "json", args.folder, args.other], mine + other),
    }
    if args.only:
        keep = set(args.only.split(","))
        runs = {k: v for k, v in runs.items() if k in keep or (k == "summarize other" and "diff" in keep)
                or (k == "summarize" and "diff" in keep)}
    yardsticks = {name: [py, str(GROUNDTRUTH), *files] for name, (_, files) in runs.items()}
    env = bytecode_env(os.path.join(out, "pycache"))
    for cmd, _ in runs.values():  # bytecode cached before anything is measured
        run(cmd, env)
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    regex: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeat):  # alternating, each run beside its yardstick: a busy moment hits both
        for name, (cmd, _) in runs.items():
            regex[name].append(run(yardsticks[name], env)[0])
            got[name].append(run(cmd, env))
    load = os.getloadavg()
    print(f"{args.folder} ({len(mine)} validate files, {text_mb(mine):.1f} MB of text) and {args.other} "
          f"({len(other)}, {text_mb(other):.1f} MB): {args.jobs} worker processes, {args.repeat} runs each, "
          f"medians; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min)")
    print(f"{'run':>17} {'CPU s':>7} {'regex s':>8} {'x regex':>8} {'peak MB':>8} {'x text':>7}")
    med = {name: statistics.median(c for c, _ in v) for name, v in got.items()}
    for name, v in got.items():
        cpu, base, peak = med[name], statistics.median(regex[name]), max(p for _, p in v)
        print(f"{name:>17} {cpu:7.2f} {base:8.2f} {cpu / base:7.2f}x {peak:8.0f} {peak / text_mb(runs[name][1]):6.2f}x")
    if "diff" in med and "summarize" in med and "summarize other" in med:
        both = med["summarize"] + med["summarize other"]
        print(f"diff against the two summaries it compares ({both:.2f} s): {med['diff'] / both:.2f}x (goal 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
