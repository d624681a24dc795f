"""Hand-made hostile inputs derived from real fixtures (issue 2 "Errors", issue 6).

Each case goes through the CLI (`hostile.run_cli`): exit code 2, exactly one located line
`irtool: path:line:col: expected ..., found ...` on stderr, never a traceback. Most inputs are
built here from the real fixtures; the few kept as files live in fixtures/errors/ (see its README).
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hostile import MLP, ROOT, SEMI_AUTO, assert_located_error, raw_bytes, run_cli

import irtool
from irtool.errors import DumpError

ERRORS = ROOT / "fixtures" / "errors"


def _lines(path: Path = MLP) -> list[bytes]:
    return raw_bytes(path).splitlines(keepends=True)


def _node_index(lines: list[bytes], nth: int = 1) -> int:
    """Index of the nth node statement line (`  %N(...) = ...`)."""
    found = [i for i, line in enumerate(lines) if line.startswith(b"  %")]
    return found[nth]


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _counts(path: str) -> dict:
    proc = run_cli("summarize", "--format", "json", path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["counts"]


def png_bytes() -> bytes:
    """A real 1x1 grey PNG."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0\x80")) + chunk(b"IEND", b"")


def test_cut_in_the_middle_of_a_node(tmp_path: Path) -> None:
    lines = _lines()
    i = _node_index(lines)
    cut = b"".join(lines[:i]) + lines[i][: len(lines[i]) // 2]
    path = _write(tmp_path, "cut.ir", cut)
    line = assert_located_error(run_cli("summarize", path))
    # the parser sees the end of file before it reduces the cut node: it reports the open subgraph
    # (line 58 of mlp_cpu validate: `subgraph @214_121_1_..._construct_68(`); i = 71, the half of line 72
    assert i == 71
    assert line == f"irtool: {path}:73:1: expected '}}' closing the subgraph opened at line 58, found end of file"


def test_cut_after_a_node_leaves_the_subgraph_open(tmp_path: Path) -> None:
    lines = _lines()
    i = _node_index(lines, 3)
    path = _write(tmp_path, "open.ir", b"".join(lines[:i]))
    line = assert_located_error(run_cli("summarize", path))
    # the 4th node statement is line 102 (grep -n '^  %' | sed -n 4p): the file keeps lines 1-101, the subgraph
    # opened at line 58 never closes
    assert i == 101
    assert line == f"irtool: {path}:102:1: expected '}}' closing the subgraph opened at line 58, found end of file"


def test_garbage_in_an_attribute_block(tmp_path: Path) -> None:
    lines = _lines()
    i = _node_index(lines)
    assert b"cnode_attrs: {checkpoint: Bool(1)}" in lines[i]
    lines[i] = lines[i].replace(b"cnode_attrs: {checkpoint: Bool(1)}", b"cnode_attrs: {checkpoint: @@ !! ##}")
    path = _write(tmp_path, "garbage.ir", b"".join(lines))
    line = assert_located_error(run_cli("summarize", path))
    # line 72: `cnode_attrs: {checkpoint: @@ !! ##}`; `@@` reads as a name, the first `!` is column 102
    # (len('  %1(equiv_9_x) = PrimFunc_MatMul(%para1_inputs0, %0, Bool(0), Bool(1)) cnode_attrs: {checkpoint: @@ ') + 1)
    assert line == f"irtool: {path}:72:102: expected a value, name, reference or bracket, found '!'"


def test_garbage_committed_snippet() -> None:
    line = assert_located_error(run_cli("summarize", str(ERRORS / "garbage_attr.ir")))
    # its line 72 is the same `%1` line as in test_garbage_in_an_attribute_block (diff with mlp_cpu's line 72)
    assert line == f"irtool: {ERRORS / 'garbage_attr.ir'}:72:102: expected a value, name, reference or bracket, found '!'"


def test_empty_file(tmp_path: Path) -> None:
    line = assert_located_error(run_cli("summarize", _write(tmp_path, "empty.ir", b"")))
    assert line.endswith("found an empty file")


def test_blank_lines_only(tmp_path: Path) -> None:
    path = _write(tmp_path, "blank.ir", b"\n  \n\r\n")
    line = assert_located_error(run_cli("summarize", path))
    # three blank lines, then the end of file at line 4 where the header should have started
    assert line == (f"irtool: {path}:4:1: expected '# IR entry: @...' or an analyze_fail banner '# ====...', "
                    "found end of file")


def test_png_renamed_ir(tmp_path: Path) -> None:
    line = assert_located_error(run_cli("summarize", _write(tmp_path, "image.ir", png_bytes())))
    assert "image.ir:1:1: expected a MindIR text dump, found binary data" in line


def test_png_committed_snippet() -> None:
    assert (ERRORS / "not_a_dump.ir").read_bytes() == png_bytes()
    line = assert_located_error(run_cli("summarize", str(ERRORS / "not_a_dump.ir")))
    assert line == f"irtool: {ERRORS / 'not_a_dump.ir'}:1:1: expected a MindIR text dump, found binary data"


def test_non_utf8_in_a_node_line_is_an_error(tmp_path: Path) -> None:
    lines = _lines()
    i = _node_index(lines)
    lines[i] = lines[i].replace(b"(equiv_9_x)", b"(equiv_9_\xff\xfe)")
    path = _write(tmp_path, "latin.ir", b"".join(lines))
    line = assert_located_error(run_cli("summarize", path))
    # line 72 `  %1(equiv_9_\xff\xfe)`: 13 characters before the 0xff
    assert line == f"irtool: {path}:72:14: expected UTF-8 text, found the byte 0xff"


def test_non_utf8_in_a_source_comment_is_tolerated(tmp_path: Path) -> None:
    lines = _lines()
    i = next(k for k, line in enumerate(lines) if line.lstrip().startswith(b"# In file"))
    lines[i] = lines[i].rstrip(b"\n") + b"  # caf\xe9 \xff\xfe\n"
    path = _write(tmp_path, "source.ir", b"".join(lines))
    assert _counts(path) == _counts(str(MLP))
    irtool.check(irtool.load(path))


@pytest.mark.parametrize("fixture", [MLP, SEMI_AUTO], ids=["mlp_cpu", "semi_auto_8p"])
def test_crlf_and_bom_give_the_same_counts(tmp_path: Path, fixture: Path) -> None:
    data = raw_bytes(fixture)
    expected = _counts(str(fixture))
    crlf = _write(tmp_path, "crlf.ir", data.replace(b"\n", b"\r\n"))
    bom = _write(tmp_path, "bom.ir", b"\xef\xbb\xbf" + data)
    both = _write(tmp_path, "both.ir", b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"))
    for path in (crlf, bom, both):
        assert _counts(path) == expected
        assert not irtool.check(irtool.load(path))


def test_nul_byte_in_a_node_line(tmp_path: Path) -> None:
    lines = _lines()
    i = _node_index(lines)
    lines[i] = lines[i].replace(b"PrimFunc_MatMul", b"PrimFunc_Mat\0Mul")
    path = _write(tmp_path, "nul.ir", b"".join(lines))
    line = assert_located_error(run_cli("summarize", path))
    # line 72 `  %1(equiv_9_x) = PrimFunc_Mat\0Mul`: 30 characters before the NUL
    assert line == f"irtool: {path}:72:31: expected text, found a NUL byte"


def test_nul_bytes_at_the_start(tmp_path: Path) -> None:
    path = _write(tmp_path, "nul0.ir", b"\0" * 16 + raw_bytes(MLP))
    line = assert_located_error(run_cli("summarize", path))
    assert line == f"irtool: {path}:1:1: expected a MindIR text dump, found binary data"


def test_lenient_skips_a_bad_node_and_reports_it(tmp_path: Path) -> None:
    lines = _lines()
    i = _node_index(lines)
    lines[i] = lines[i].replace(b"cnode_attrs: {checkpoint: Bool(1)}", b"cnode_attrs: {checkpoint: @@ !! ##}")
    path = _write(tmp_path, "bad_node.ir", b"".join(lines))
    assert_located_error(run_cli("summarize", path))
    proc = run_cli("summarize", "--format", "json", "--lenient", path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    assert out["counts"]["cnodes"] == _counts(str(MLP))["cnodes"] - 1
    messages = [w["message"] if isinstance(w, dict) else str(w) for w in out["warnings"]]
    assert any(f":{i + 1}:" in m and "skipped" in m for m in messages), messages


def test_huge_count_in_header(tmp_path: Path) -> None:
    data = raw_bytes(MLP).replace(b"# Total subgraphs: 1", b"# Total subgraphs: " + b"1" * 5000, 1)
    path = _write(tmp_path, "count.ir", data)
    line = assert_located_error(run_cli("summarize", path))
    # line 2 `# Total subgraphs: 111...`: the number starts after the 19 characters of `# Total subgraphs: `
    assert line == f"irtool: {path}:2:20: expected a count of at most 18 digits, found 5000 digits"


def test_huge_node_number(tmp_path: Path) -> None:
    lines = _lines()
    i = _node_index(lines)
    lines[i] = lines[i].replace(b"  %1(", b"  %" + b"1" * 5000 + b"(", 1)
    path = _write(tmp_path, "nid.ir", b"".join(lines))
    line = assert_located_error(run_cli("summarize", path))
    # line 72 `  %111...(`: the number starts at column 4
    assert line == f"irtool: {path}:72:4: expected a node number of at most 18 digits, found 5000 digits"


def test_missing_file_is_a_located_error(tmp_path: Path) -> None:
    with pytest.raises(DumpError) as info:
        irtool.load(tmp_path / "nope.ir")
    assert str(info.value).startswith(str(tmp_path / "nope.ir") + ":0:0: expected a readable file")


def test_deep_nesting_via_cli_check(tmp_path: Path) -> None:
    lines = _lines()
    i = _node_index(lines)
    deep = b"cnode_attrs: {deep: " + b"(" * 10000 + b"1" + b")" * 10000 + b", checkpoint: Bool(1)}"
    lines[i] = lines[i].replace(b"cnode_attrs: {checkpoint: Bool(1)}", deep)
    proc = run_cli("summarize", "--check", "--format", "json", _write(tmp_path, "deep.ir", b"".join(lines)))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "nesting depth 10001 exceeds the limit" in proc.stdout


def test_an_internal_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    # The CLI's last-resort handler: a bug in irtool must not show a traceback either.
    from irtool.cli import _run

    def buggy() -> int:
        raise KeyError("something irtool did not expect")

    with pytest.raises(SystemExit) as exit_info:
        _run(buggy)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("irtool: internal error: KeyError:")


# --- a missing optional extra: one line naming what installs it ----------------------------------

def _without(module: str | None, code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where `import module` fails as if it were not installed."""
    hide = f"sys.modules[{module!r}] = None" if module else ""
    return subprocess.run([sys.executable, "-c", f"import sys; {hide}\n{code}"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)


@pytest.mark.parametrize("module,args,message", [
    ("model_explorer", ["view", str(MLP), "--no-browser"], "Model Explorer is not installed: pip install 'irtool[view]'"),
    ("distributed", ["check", str(SEMI_AUTO.parents[1]), "--scheduler", "tcp://127.0.0.1:1"],
     "--scheduler needs Dask distributed: pip install 'irtool[dask]'"),
    ("distributed", ["summarize", str(SEMI_AUTO.parents[1]), "--scheduler", "tcp://127.0.0.1:1"],
     "--scheduler needs Dask distributed: pip install 'irtool[dask]'")], ids=["view", "check", "summarize"])
def test_a_missing_extra_is_one_line_naming_its_install(module: str, args: list[str], message: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import module` fails as if it were not installed
    proc = run_cli(*args)
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, f"irtool: {message}\n", "")


def test_a_missing_extra_stops_the_test_run_with_one_line() -> None:
    # tests/conftest.py checks at start-up: no test that needs the extra skips or fails one by one
    run = "import pytest; sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'tests/test_errors.py']))"
    proc = _without("distributed", run)
    assert (proc.returncode, proc.stderr.strip()) == (4, "ERROR: distributed (irtool[dask]) not installed: run make install")
    # Graphviz and Chromium missing from PATH (only the venv's own programs left)
    proc = _without(None, run, env={**os.environ, "PATH": str(Path(sys.executable).parent)})
    assert (proc.returncode, proc.stderr.strip()) == (4, "ERROR: dot, chromium not installed: run make install")
