#!/usr/bin/env python3
"""How many rank files `irtool view DIR` / `export DIR` read to show the lowest rank of each stage,
and the seconds of `irtool export DIR`, as a ratio to `irtool export` of one rank's file (the
yardstick, measured in the same run).

Folders of 8, 64, 256 and 1024 ranks are made from a real pipeline folder (default
fixtures/mindir/pipeline_2stage_8p, stages 0 and 1): `rank_N/` links to real rank `N * 8 // ranks`,
so the ranks keep MindSpore's order (stage = rank // (ranks / stages)). Reading every rank would be
`ranks` reads; the bisection of `Selection.per_stage` reads about stages x log2(ranks).

Usage: python bench/pick_bench.py [--source DIR] [--ranks 8,64,256,1024]
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
sys.path.insert(0, str(ROOT))

import irtool  # noqa: E402
from irtool.selection import Policy, Selection  # noqa: E402


def folder(source: Path, n: int, into: Path) -> Path:
    real = sorted(int(p.name[5:]) for p in source.glob("rank_*") if p.name[5:].isdigit())
    for rank in range(n):
        os.symlink(source / f"rank_{real[rank * len(real) // n]}", into / f"rank_{rank}")
    return into


def export_seconds(path: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "irtool.cli", "export", str(path), "-o", str(out), "--no-node-data"],
                   check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default=str(ROOT / "fixtures/mindir/pipeline_2stage_8p"))
    ap.add_argument("--ranks", default="8,64,256,1024")
    args = ap.parse_args()
    source = Path(args.source)
    with tempfile.TemporaryDirectory() as tmp:
        one = next((source / "rank_0").glob("*_validate_*"))
        yard = export_seconds(one, Path(tmp) / "one.json")
        print(f"yardstick: export of one rank's file {yard:.2f} s")
        print(f"{'ranks':>6} {'reads':>6} {'stages':>7} {'export s':>9} {'x one file':>10}")
        for n in (int(x) for x in args.ranks.split(",")):
            (Path(tmp) / f"f{n}").mkdir()
            d = folder(source, n, Path(tmp) / f"f{n}")
            reads: list[str] = []
            picked = Selection.of(str(d), policy=Policy(loader=lambda p, r=reads: r.append(p) or irtool.load(p))).per_stage()
            secs = export_seconds(d, Path(tmp) / f"f{n}.json")
            print(f"{n:>6} {len(reads):>6} {len(picked):>7} {secs:>9.2f} {secs / yard:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
