"""Property-based fuzzing over mutations of real fixtures (issue 6).

Property: `load()` + `check()` either succeed or raise `DumpError`; no other exception escapes,
whatever the mutation. The CLI is also run once per mutation class: exit code 0 or 2, no traceback.
"""
from __future__ import annotations

import functools
import os
import random
import re
import tempfile
from pathlib import Path
from typing import Callable

import pytest
from hostile import ERROR_LINE, MLP, SEEDS, raw_bytes, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irtool
from irtool.errors import DumpError
from irtool.ir import parse, values

# 30 derandomized examples per property in the suite; `make fuzz` explores further, coverage-guided.
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
_TMP = tempfile.mkdtemp(prefix="irtool_fuzz_")


@functools.cache
def seed(i: int) -> bytes:
    return raw_bytes(SEEDS[i])


def _path(data: bytes, name: str = "case.ir") -> str:
    path = os.path.join(_TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def load_or_dump_error(data: bytes, lenient: bool = False) -> str:
    """The property: parse+check succeeds ("ok") or raises DumpError ("error"); nothing else."""
    try:
        irtool.check(irtool.load(_path(data), lenient=lenient))
        return "ok"
    except DumpError as exc:
        assert "\n" not in str(exc)
        return "error"


def both_modes(data: bytes) -> None:
    load_or_dump_error(data)
    load_or_dump_error(data, lenient=True)


seeds = st.integers(0, len(SEEDS) - 1)


# --- mutations -----------------------------------------------------------------------------

def truncate(data: bytes, frac: float) -> bytes:
    return data[: int(len(data) * frac)]


def truncate_at_line(data: bytes, frac: float) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join(lines[: int(len(lines) * frac)])


def delete_lines(data: bytes, picks: list[float]) -> bytes:
    lines = data.splitlines(keepends=True)
    drop = {int(p * len(lines)) for p in picks}
    return b"".join(line for i, line in enumerate(lines) if i not in drop)


def duplicate_lines(data: bytes, picks: list[float]) -> bytes:
    lines = data.splitlines(keepends=True)
    for p in sorted(picks, reverse=True):
        i = int(p * len(lines))
        lines.insert(i, lines[i])
    return b"".join(lines)


def _node_lines(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.startswith(b"  %") and b"attrs: {" in line]


def bytes_in_attrs(data: bytes, pick: float, at: float, junk: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    nodes = _node_lines(lines)
    i = nodes[int(pick * len(nodes))]
    start = lines[i].index(b"attrs: {") + 8
    pos = start + int(at * (len(lines[i]) - 1 - start))
    lines[i] = lines[i][:pos] + junk + lines[i][pos:]
    return b"".join(lines)


def unbalance(data: bytes, pick: float, at: float, bracket: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    nodes = _node_lines(lines)
    i = nodes[int(pick * len(nodes))]
    pos = 3 + int(at * (len(lines[i]) - 4))
    lines[i] = lines[i][:pos] + bracket + lines[i][pos:]
    return b"".join(lines)


def huge_number(data: bytes, pick: float, digits: int) -> bytes:
    runs = list(re.finditer(rb"\d+", data))
    m = runs[int(pick * len(runs))]
    return data[: m.start()] + b"9" * digits + data[m.end() :]


def bad_source_comment(data: bytes, pick: float, junk: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    src = [i for i, line in enumerate(lines) if line.lstrip().startswith(b"# In file")] or [0]
    i = src[int(pick * len(src))]
    lines[i] = lines[i].rstrip(b"\r\n") + b" # " + junk + b"\n"
    return b"".join(lines)


def nul_byte(data: bytes, at: float) -> bytes:
    pos = int(at * len(data))
    return data[:pos] + b"\0" + data[pos:]


def crlf_bom(data: bytes, crlf: bool, bom: bool) -> bytes:
    return (b"\xef\xbb\xbf" if bom else b"") + (data.replace(b"\n", b"\r\n") if crlf else data)


fracs = st.floats(0, 1, exclude_max=True)
picks = st.lists(fracs, min_size=1, max_size=8)
junk = st.binary(min_size=1, max_size=12)


# --- properties ----------------------------------------------------------------------------

@SETTINGS
@given(seeds, st.floats(0, 1))
def test_truncated_anywhere(s: int, frac: float) -> None:
    both_modes(truncate(seed(s), frac))


@SETTINGS
@given(seeds, st.floats(0, 1))
def test_truncated_at_a_line_boundary(s: int, frac: float) -> None:
    both_modes(truncate_at_line(seed(s), frac))


@SETTINGS
@given(seeds, picks)
def test_deleted_lines(s: int, p: list[float]) -> None:
    both_modes(delete_lines(seed(s), p))


@SETTINGS
@given(seeds, picks)
def test_duplicated_lines(s: int, p: list[float]) -> None:
    both_modes(duplicate_lines(seed(s), p))


@SETTINGS
@given(seeds, fracs, fracs, junk)
def test_random_bytes_in_attribute_blocks(s: int, pick: float, at: float, j: bytes) -> None:
    both_modes(bytes_in_attrs(seed(s), pick, at, j))


@SETTINGS
@given(seeds, fracs, fracs, st.sampled_from([b"(", b")", b"[", b"]", b"{", b"}", b"<", b">", b'"', b"'"]))
def test_unbalanced_brackets(s: int, pick: float, at: float, bracket: bytes) -> None:
    both_modes(unbalance(seed(s), pick, at, bracket))


@SETTINGS
@given(seeds, fracs, st.sampled_from([19, 400, 4301, 20000]))
def test_huge_numbers(s: int, pick: float, digits: int) -> None:
    both_modes(huge_number(seed(s), pick, digits))


@SETTINGS
@given(seeds, fracs, junk)
def test_non_utf8_in_source_comments_is_tolerated(s: int, pick: float, j: bytes) -> None:
    data = bad_source_comment(seed(s), pick, j.replace(b"\n", b"").replace(b"\r", b"").replace(b"\0", b"") or b"\xff")
    assert load_or_dump_error(data) == "ok"


@SETTINGS
@given(seeds, fracs)
def test_nul_bytes(s: int, at: float) -> None:
    assert load_or_dump_error(nul_byte(seed(s), at)) == "error"


@SETTINGS
@given(seeds, st.booleans(), st.booleans())
def test_crlf_and_bom_parse_the_same(s: int, crlf: bool, bom: bool) -> None:
    plain = irtool.load(_path(seed(s), "plain.ir"))
    other = irtool.load(_path(crlf_bom(seed(s), crlf, bom), "other.ir"))
    assert other.counts == plain.counts and not irtool.check(other)


# --- deep nesting and long lines -----------------------------------------------------------

DEPTH = 10_000


def _first_node(data: bytes) -> tuple[list[bytes], int]:
    lines = data.splitlines(keepends=True)
    return lines, _node_lines(lines)[0]


def deep_attr(data: bytes) -> bytes:
    lines, i = _first_node(data)
    pos = lines[i].index(b"attrs: {") + 8
    lines[i] = lines[i][:pos] + b"deep: " + b"(" * DEPTH + b"1" + b")" * DEPTH + b", " + lines[i][pos:]
    return b"".join(lines)


def deep_arg(data: bytes) -> bytes:
    lines, i = _first_node(data)
    pos = lines[i].index(b") = ") + 4
    pos = lines[i].index(b"(", pos) + 1
    lines[i] = lines[i][:pos] + b"[" * DEPTH + b"1" + b"]" * DEPTH + b", " + lines[i][pos:]
    return b"".join(lines)


def deep_type(data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if line.lstrip().startswith(b": ("))
    lines[i] = lines[i].replace(b": (", b": (<" + b"(" * DEPTH + b"1" + b")" * DEPTH + b">, ", 1)
    return b"".join(lines)


def deep_unbalanced(data: bytes) -> bytes:
    lines, i = _first_node(data)
    pos = lines[i].index(b"attrs: {") + 8
    lines[i] = lines[i][:pos] + b"deep: " + b"{" * DEPTH + lines[i][pos:]
    return b"".join(lines)


@pytest.mark.parametrize("mutate", [deep_attr, deep_arg, deep_type, deep_unbalanced])
def test_deep_nesting_never_overflows(mutate: Callable[[bytes], bytes]) -> None:
    data = mutate(seed(0))
    path = _path(data)
    try:
        dump = irtool.load(path)
    except DumpError:
        assert mutate is deep_unbalanced
        return
    found = irtool.check(dump)  # must not raise RecursionError
    for n in dump.subgraphs[0].nodes:
        n.attrs, n.inputs, n.signature  # noqa: B018
    if mutate in (deep_attr, deep_type):
        assert found and ("nesting depth" in found[0].message or "kept as raw text" in found[0].message)


def test_depth_limit_is_exact() -> None:
    ok = "primitive_attrs: {a: " + "(" * (values.MAX_DEPTH - 1) + "1" + ")" * (values.MAX_DEPTH - 1) + "}"
    too = "primitive_attrs: {a: " + "(" * values.MAX_DEPTH + "1" + ")" * values.MAX_DEPTH + "}"
    assert values.nesting_depth(ok) == values.MAX_DEPTH and values._too_deep(ok) is None
    assert values.nesting_depth(too) == values.MAX_DEPTH + 1 and values._too_deep(too)


def test_very_long_line_20mb() -> None:
    """A 20 MB attribute on one node line parses (streaming keeps one line at a time)."""
    lines, i = _first_node(seed(0))
    pos = lines[i].index(b"attrs: {") + 8
    lines[i] = lines[i][:pos] + b'blob: "' + b"x" * (20 * 1024 * 1024) + b'", ' + lines[i][pos:]
    dump = irtool.load(_path(b"".join(lines)))
    assert dump.counts == irtool.load(str(MLP)).counts
    assert len(dump.subgraphs[0].nodes[0].attrs["cnode_attrs"]["blob"]) == 20 * 1024 * 1024


def test_line_over_max_line_is_a_located_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "MAX_LINE", 1000)
    lines, i = _first_node(seed(0))
    lines[i] = lines[i].rstrip(b"\n") + b" " * 2000 + b"\n"
    with pytest.raises(DumpError, match=rf":{i + 1}:1: expected a line shorter than 1000 characters"):
        irtool.load(_path(b"".join(lines)))


# --- the CLI, once per mutation class ------------------------------------------------------

_RNG = random.Random(6)
CLI_CASES = {
    "truncate": lambda d: truncate(d, 0.37),
    "truncate_line": lambda d: truncate_at_line(d, 0.5),
    "delete": lambda d: delete_lines(d, [0.3, 0.6]),
    "duplicate": lambda d: duplicate_lines(d, [0.2, 0.5]),
    "attr_bytes": lambda d: bytes_in_attrs(d, 0.4, 0.5, bytes(_RNG.randrange(256) for _ in range(8))),
    "unbalanced": lambda d: unbalance(d, 0.4, 0.5, b"("),
    "huge_number": lambda d: huge_number(d, 0.5, 20000),
    "deep_attr": deep_attr,
    "deep_type": deep_type,
    "source_comment": lambda d: bad_source_comment(d, 0.5, b"\xff\xfe\xe9"),
    "nul": lambda d: nul_byte(d, 0.5),
    "crlf_bom": lambda d: crlf_bom(d, True, True),
}


@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_cli_per_mutation_class(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.ir"
    path.write_bytes(CLI_CASES[name](seed(0)))
    proc = run_cli("summarize", "--check", "--format", "json", str(path))
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    if proc.returncode == 2:
        assert len(proc.stderr.splitlines()) == 1 and ERROR_LINE.match(proc.stderr.strip())
