"""Atomic writes: all or nothing, never over the input."""
from __future__ import annotations

from pathlib import Path

import pytest

from irtool.atomic import atomic_open, atomic_write
from irtool.errors import OutputError


def test_writes_bytes_and_text(tmp_path: Path) -> None:
    atomic_write(tmp_path / "a.bin", b"\x00\x01")
    atomic_write(tmp_path / "a.txt", "héllo")
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.txt"]


def test_failing_writer_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "out.svg"
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write("<svg>half")
            raise RuntimeError("renderer crashed")
    assert list(tmp_path.iterdir()) == []


def test_failing_writer_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.svg"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(target) as f:
            f.write("new but cut")
            raise KeyboardInterrupt
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]


def test_refuses_to_overwrite_the_input(tmp_path: Path) -> None:
    dump = tmp_path / "x.ir"
    dump.write_text("# IR entry: @g\n")
    with pytest.raises(OutputError, match="refusing to overwrite the input"):
        atomic_write(dump, "oops", protect=(dump,))
    with pytest.raises(OutputError):
        atomic_write(tmp_path / "." / "x.ir", "oops", protect=(str(dump),))
    assert dump.read_text() == "# IR entry: @g\n"
