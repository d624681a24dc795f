"""Helpers shared by the hostile-input tests: real fixtures as bytes, and running the CLI."""
from __future__ import annotations

import lzma
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "mindir"
MLP = FIXTURES / "mlp_cpu" / "rank_0" / "19_validate_0072.ir"
CONTROL_FLOW = FIXTURES / "control_flow_cpu" / "rank_0" / "19_validate_0075.ir.xz"
SEMI_AUTO = FIXTURES / "semi_auto_8p" / "rank_0" / "step_parallel_begin_0018.ir.xz"
SEEDS = (MLP, CONTROL_FLOW, SEMI_AUTO)
ERROR_LINE = re.compile(r"^irtool: .+:\d+:\d+: expected .+, found .+$")


def raw_bytes(path: Path) -> bytes:
    """The decompressed bytes of a fixture."""
    return lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `irtool` in this process through click's runner (stdout and stderr apart, neither a terminal), as a
    shell would: exit code and text. A process of its own costs half a second of start-up; the tests whose point
    is a real process (a pipe, a test run that stops at start-up) start one themselves."""
    from click.testing import CliRunner

    from irtool.cli import main

    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return subprocess.CompletedProcess(["irtool", *args], result.exit_code, result.stdout, result.stderr)


def assert_located_error(proc: subprocess.CompletedProcess[str]) -> str:
    """Exit 2, exactly one located line on stderr, no traceback; returns that line."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert ERROR_LINE.match(lines[0]), lines[0]
    return lines[0]
