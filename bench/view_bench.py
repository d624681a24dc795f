#!/usr/bin/env python3
"""Seconds from `irtool view DUMP --no-browser` to the graph JSON served, and the server's peak RSS.

Usage: python bench/view_bench.py [DUMP]   (default: the 68 MB gpt_large_perf validate dump)
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1] / "fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz"


def main(path: str) -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "irtool.cli", "view", path, "--no-browser", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in proc.stderr:  # type: ignore[union-attr]
            if re.search(r"Model Explorer at ", line):
                break
        ready = time.perf_counter()
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/load_graphs_json?graph_index=0",
                                            timeout=600) as r:
                    size = len(r.read())
                break
            except OSError:
                time.sleep(0.1)
        served = time.perf_counter()
        status = Path(f"/proc/{proc.pid}/status").read_text()
        peak = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    print(f"{os.path.basename(path)}: graphs built {ready - start:.2f} s, graph JSON ({size / 1e6:.1f} MB) served "
          f"{served - start:.2f} s after the command, server peak RSS {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(DEFAULT)))
