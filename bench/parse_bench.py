#!/usr/bin/env python3
"""Parse speed and memory against a yardstick measured in the same run.

For each PATH: the CPU time (user + system) of `irtool summarize --format json PATH`, the
end-to-end job CI runs, and of the plain regex counter `../shared/tools/groundtruth.py` over the
same file, each in fresh processes, alternating, REPEAT times; the medians and their ratio; and the
peak RSS of the irtool process against the file's size (decompressed).

Usage: python bench/parse_bench.py [--repeat N] [--raw] [PATH...]
       (default: ../shared/fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz, 5 repeats)
An `.xz` file is measured as a decompressed copy first (the raw `.ir`: the figure that holds, issue 42), then
as it is (`--no-xz` leaves it out): decompression adds the same seconds to both sides and hides the
ratio (irtool decompresses an `.xz` into a temporary file before reading it, so that the decoder's 64 MiB
dictionary is gone when the model grows).
Targets (issue 42): the raw `.ir` within 3x the regex counter's CPU (2x the aim), peak RSS within 1.5x the file.
"""
from __future__ import annotations

import argparse
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT = SHARED / "fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz"
GROUNDTRUTH = SHARED / "tools/groundtruth.py"


def raw_size(path: str) -> int:
    if path.endswith(".xz"):
        with lzma.open(path) as f:
            return sum(len(chunk) for chunk in iter(lambda: f.read(1 << 20), b""))
    return os.path.getsize(path)


def run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(CPU seconds, peak RSS in bytes) of one fresh process, from its own rusage."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err.strip()[-500:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def bytecode_env(cache: str) -> dict[str, str]:
    """Bytecode kept (in `cache`), as in an installed irtool: with PYTHONDONTWRITEBYTECODE a source tree's
    every module is compiled again in each process (0.1-0.2 s of a summary's CPU)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": cache}


def measure(path: str, repeat: int, env: dict[str, str]) -> dict[str, float]:
    irtool = [sys.executable, "-m", "irtool.cli", "summarize", "--format", "json", path]
    yardstick = [sys.executable, str(GROUNDTRUTH), path]
    run(irtool, env)  # the bytecode cached, not measured
    ours, theirs, peaks = [], [], []
    for _ in range(repeat):  # alternating, so that a busy moment of the machine hits both
        cpu, peak = run(irtool, env)
        ours.append(cpu)
        peaks.append(peak)
        theirs.append(run(yardstick, env)[0])
    size = raw_size(path)
    return {"mb": size / 1e6, "irtool_s": statistics.median(ours), "regex_s": statistics.median(theirs),
            "ratio": statistics.median(ours) / statistics.median(theirs), "peak_mb": max(peaks) / 1e6,
            "peak_ratio": max(peaks) / size}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--raw", action="store_true", help="(the default now) a decompressed copy of each .xz file first")
    ap.add_argument("--no-xz", action="store_true", help="only the decompressed copy of an .xz file")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args(argv)
    paths = args.paths or [str(DEFAULT.resolve())]
    print(f"{'file':40} {'MB':>7} {'irtool s':>9} {'regex s':>8} {'CPU ratio':>9} {'peak MB':>8} {'peak/file':>9}")
    tmp = tempfile.mkdtemp(prefix="irtool-parse-bench-")
    order: list[str] = []
    for path in paths:  # the raw `.ir` first: the ratio that holds
        if path.endswith(".xz"):
            raw = os.path.join(tmp, os.path.basename(path)[: -len(".xz")])
            with lzma.open(path) as src, open(raw, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            order.append(raw)
        if not (args.no_xz and path.endswith(".xz")):
            order.append(path)
    env = bytecode_env(os.path.join(tmp, "pycache"))
    for path in order:
        m = measure(path, args.repeat, env)
        print(f"{os.path.basename(path)[:40]:40} {m['mb']:7.1f} {m['irtool_s']:9.2f} {m['regex_s']:8.2f} "
              f"{m['ratio']:8.1f}x {m['peak_mb']:8.0f} {m['peak_ratio']:8.2f}x")
    shutil.rmtree(tmp)
    load = os.getloadavg()
    print(f"(CPU: median of {args.repeat} fresh processes each, alternating, bytecode cached; yardstick "
          f"{GROUNDTRUTH.name}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} over 1 / 5 / 15 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
