"""Parse time and peak RSS for 1x, 2x, 4x a real fixture: is parsing linear in input size?

The 2x/4x inputs repeat the fixture's subgraph blocks (everything after the header), renaming
every graph `@g` to `@g__copyK` in copy K so the result is still a valid dump with distinct
subgraphs (the header's declared counts then disagree; that only adds one warning). Each size is
parsed in its own subprocess (`load()` + `summarize`), so the peak RSS reported is that run's own.

    python bench/scale_bench.py [FIXTURE] [--sizes 1,2,4]
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import subprocess
import sys
import tempfile

DEFAULT = "fixtures/mindir/gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz"
CHILD = r"""
import json, resource, sys, time
import irtool
import irtool.errors
from irtool.report import summary
from irtool.ir.grammar import line_parser
line_parser()  # build the parsers outside the timed part: a fixed start-up cost, not parsing
try:
    irtool.load(sys.argv[2])
except irtool.errors.DumpError:
    pass
t = time.perf_counter()
d = irtool.load(sys.argv[1])
summary.summarize(d, irtool.analyze(d))
print(json.dumps({"seconds": time.perf_counter() - t, "cnodes": d.counts["cnodes"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def read(path: str) -> str:
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def scaled(text: str, k: int) -> str:
    """The header once, then k copies of the subgraph blocks with renamed graphs."""
    start = min(i for i in (text.find("\nsubgraph attr:"), text.find("\nsubgraph @")) if i >= 0) + 1
    header, body = text[:start], text[start:]
    names = sorted(set(re.findall(r"^subgraph @([^\s(]+)\(", body, flags=re.M)), key=len, reverse=True)
    pattern = re.compile("@(" + "|".join(map(re.escape, names)) + r")(?=[\s,()\[\]{}:]|$)")
    copies = [body] + [pattern.sub(lambda m, c=c: f"@{m.group(1)}__copy{c}", body) for c in range(1, k)]
    return header + "".join(copies)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fixture", nargs="?", default=DEFAULT)
    ap.add_argument("--sizes", default="1,2,4")
    args = ap.parse_args()
    text = read(args.fixture)
    print(f"{'size':>4} {'MB':>8} {'cnodes':>8} {'seconds':>8} {'MB/s':>7} {'peak RSS MB':>12}")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "warmup.ir")
        with open(small, "w", encoding="utf-8") as f:
            f.write(text[: text.find("\n", 200) + 1])
        for k in (int(s) for s in args.sizes.split(",")):
            path = os.path.join(tmp, f"x{k}.ir")
            with open(path, "w", encoding="utf-8") as f:
                f.write(scaled(text, k))
            mb = os.path.getsize(path) / 1e6
            out = subprocess.run([sys.executable, "-c", CHILD, path, small], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout)
            base = base or r["seconds"] / k
            print(f"{k:>3}x {mb:>8.1f} {r['cnodes']:>8} {r['seconds']:>8.2f} {mb / r['seconds']:>7.1f} "
                  f"{r['rss_mb']:>12.0f}   (time / linear prediction: {r['seconds'] / (base * k):.2f})")


if __name__ == "__main__":
    main()
