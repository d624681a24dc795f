"""Coverage-guided fuzzing of `irtool.load()` + `check()` with atheris (issue 6).

Seeded from real fixtures (small mlp_cpu, control_flow_cpu, semi_auto_8p dumps, written to a
corpus folder on first run). Each input is written to a temp file and parsed strictly and
leniently; `DumpError` is the expected outcome for bad input, anything else is a crash.

    python fuzz/fuzz_parse.py -max_total_time=60      # (`make fuzz`)

libFuzzer prints the executions ("Done N runs in S second(s)") and, on a crash, the uncaught
exception and a crash-* file, exiting non-zero.
"""
from __future__ import annotations

import atexit
import lzma
import os
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    import irtool
    from irtool.errors import DumpError

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [
    "fixtures/mindir/mlp_cpu/rank_0/19_validate_0072.ir",
    "fixtures/mindir/mlp_cpu/rank_0/00_bootstrap_0000.ir",
    "fixtures/mindir/control_flow_cpu/rank_0/19_validate_0075.ir.xz",
    "fixtures/mindir/semi_auto_8p/rank_0/step_parallel_begin_0018.ir.xz",
]
CORPUS = ROOT / "fuzz" / "corpus"
_TMP = Path(tempfile.mkdtemp(prefix="irtool_atheris_")) / "case.ir"
STATS = {"executions": 0, "dump_errors": 0}


def write_corpus() -> None:
    """Decompress the seed fixtures into the corpus folder (once)."""
    CORPUS.mkdir(exist_ok=True)
    for rel in SEEDS:
        src = ROOT / rel
        name = src.name.removesuffix(".xz")
        dst = CORPUS / f"{src.parent.parent.parent.name}_{name}"
        if not dst.exists():
            dst.write_bytes(lzma.decompress(src.read_bytes()) if src.suffix == ".xz" else src.read_bytes())


def test_one_input(data: bytes) -> None:
    """One fuzz case: parse strictly and leniently; only DumpError may escape."""
    STATS["executions"] += 1
    _TMP.write_bytes(data)
    for lenient in (False, True):
        try:
            irtool.check(irtool.load(_TMP, lenient=lenient))
        except DumpError:
            STATS["dump_errors"] += 1


def report() -> None:
    print(f"fuzz_parse: {STATS['executions']} executions, {STATS['dump_errors']} DumpErrors (expected), "
          "crashes: see libFuzzer output above (0 if it ended with 'Done')", file=sys.stderr)


def main() -> None:
    write_corpus()
    atexit.register(report)
    args = list(sys.argv)
    if not any(not a.startswith("-") for a in args[1:]):
        args.append(str(CORPUS))
    if not any(a.startswith("-max_len") for a in args):
        args.append("-max_len=200000")
    os.chdir(ROOT)
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
