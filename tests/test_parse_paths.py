"""The reader's paths give one answer (issue 17, speed). Node blocks of the usual form are matched
whole by one regex (`parse._block_regex`) and built at once, everything else goes line by line;
the text comes in chunks of whole lines; an `.xz` file is decompressed into a temporary file first.
Each test reads real dumps two ways and compares everything the model holds, or pins what a
changed copy of a real dump must give (numbers from `grep -n` on the file, in the comments)."""
from __future__ import annotations

import lzma
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import fixture
from hostile import MLP, raw_bytes

import irtool
from irtool.errors import DumpError
from irtool.ir import parse, source

FILES = ["mlp_cpu/rank_0/19_validate_0072.ir", "mlp_cpu_sorted/rank_0/19_validate_0072.ir.xz",
         "control_flow_cpu/rank_0/19_validate_0075.ir.xz", "const_wrap_cpu/rank_0/19_validate_0072.ir.xz",
         "dynamic_shape_pp_4p/rank_0/19_validate_0087.ir.xz", "semi_auto_8p/rank_0/step_parallel_begin_0018.ir.xz",
         "micro_interleaved_8p/rank_0/opt_pass_2_opt_a_0021.ir.xz",
         # issue 41: a compile failure's log and stack markers; the forms of 1.x-2.1 (published, fixtures/published)
         "analyze_fail_pipeline_type/rank_1/analyze_fail.ir.xz", "../published/ms110_default.ir",
         "../published/ms20_sorted.ir", "../published/ms21_analyze_fail.ir", "../published/ms2x_side_effect_unnamed.ir",
         "../published/ms20_analyze_fail.ir"]
NODE_SLOTS = ("graph", "id", "name", "callee", "op", "text", "args_start", "line", "type_lines", "scope",
              "sources", "notes")


def _model(d: irtool.Dump) -> list[Any]:
    """Everything a loaded dump holds, as plain values."""
    out: list[Any] = [d.entry, d.declared, d.attrs, d.jit_config, d.order, d.sorted_order, d.size,
                      [(w.line, w.message) for w in d.warnings],
                      [(p.ref, p.line, p.type_text, p.rest) for p in d.params],
                      [(e.name, e.line, [(s.line, s.text) for s in e.symbols], e.notes) for e in d.symbol_engines],
                      d.failure and (d.failure.form, d.failure.line, d.failure.message, d.failure.traceback,
                                     d.failure.stack_note, d.failure.log,
                                     [(m.depth, m.line, m.node and m.node.uid) for m in d.failure.markers])]
    for g in d.subgraphs:
        out.append((g.name, g.line, g.params, g.parent, g.attrs, g.instance, g.symbol_engine, g.preamble,
                    g.body_notes))
        out.extend(tuple(getattr(n, s) for s in NODE_SLOTS) for n in g.nodes)
    return out


@pytest.mark.parametrize("rel", FILES)
def test_line_by_line_reads_the_same_model(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture(rel)
    fast = irtool.load(path)
    monkeypatch.setattr(parse, "_block_regex", lambda: re.compile(r"(?!)"))  # a regex that never matches
    assert _model(irtool.load(path)) == _model(fast)


@pytest.mark.parametrize("rel", FILES)
def test_small_chunks_read_the_same_model(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 97 bytes: most lines and node blocks straddle a chunk boundary, many lines span several chunks
    path = fixture(rel)
    whole = _model(irtool.load(path))
    monkeypatch.setattr(source, "_CHUNK", 97)
    assert _model(irtool.load(path)) == whole


def test_the_fast_path_reads_most_node_blocks() -> None:
    # mlp_cpu/rank_0/19_validate_0072.ir: `grep -cE '^  %[0-9]+\(' ` -> 67 node lines (+ 1 Return);
    # a block is read line by line only where the next block's line starts a new chunk or it is the last
    data = parse._Lines(str(MLP), parse._Cursor(str(MLP), source.read_chunks(MLP)), lenient=False)
    tokens = list(parse.LineLexer(None).lex(data))
    fast = sum(len(t.nodes) for t in tokens if isinstance(t, parse.BuiltToken))
    slow = sum(1 for t in tokens if t.type == "NODE_BLOCK" and not isinstance(t, parse.BuiltToken))
    assert fast + slow == 67 and slow <= 1


def test_lenient_reports_every_node_of_a_graph_without_its_opener(tmp_path: Path) -> None:
    # mlp_cpu 19_validate_0072.ir without line 58 `subgraph @214_..._construct_683() {`: every node
    # block is then outside a subgraph. `grep -nE '^  (%[0-9]+\(|Return\()'` -> 68 lines (59, 72, 87,
    # ... 805), each one line earlier in the copy; each is skipped with a warning at its own line,
    # none lost (a refused run of blocks is reported block by block).
    lines = raw_bytes(MLP).split(b"\n")
    assert lines[57].startswith(b"subgraph @")
    del lines[57]
    path = tmp_path / "no_opener.ir"
    path.write_bytes(b"\n".join(lines))
    heads = [i + 1 for i, line in enumerate(lines) if re.match(rb"  (%\d+\(|Return\()", line)]
    assert len(heads) == 68 and heads[:3] == [58, 71, 86]
    dump = irtool.load(str(path), lenient=True)
    skipped = [w.line for w in dump.warnings if re.search(r"found (a node line|'  Return)", w.message)]
    assert skipped == heads
    with pytest.raises(DumpError) as err:
        irtool.load(str(path))
    assert str(err.value).startswith(f"{path}:58:1: expected ") and "found a node line" in str(err.value)


def test_a_cut_xz_file_is_a_located_error(tmp_path: Path) -> None:
    whole = Path(fixture("control_flow_cpu/rank_0/19_validate_0075.ir.xz")).read_bytes()
    path = tmp_path / "cut.ir.xz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DumpError) as err:
        irtool.load(str(path))
    assert str(err.value).startswith(f"{path}:0:0: expected intact compressed data, found ")


def test_a_nul_byte_in_an_xz_file_is_located_as_in_the_text(tmp_path: Path) -> None:
    # line 72 of mlp_cpu 19_validate_0072.ir `  %1(equiv_9_x) = PrimFunc_MatMul(`: 30 characters before `Mul`
    data = raw_bytes(MLP).replace(b"PrimFunc_MatMul", b"PrimFunc_Mat\0Mul", 1)
    path = tmp_path / "nul.ir.xz"
    path.write_bytes(lzma.compress(data))
    with pytest.raises(DumpError) as err:
        irtool.load(str(path))
    assert str(err.value) == f"{path}:72:31: expected text, found a NUL byte"


def test_an_xz_file_reads_the_same_where_no_temporary_file_can_be_written(monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture("control_flow_cpu/rank_0/19_validate_0075.ir.xz")
    spooled = _model(irtool.load(path))

    def refuse() -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(source.tempfile, "TemporaryFile", refuse)
    assert _model(irtool.load(path)) == spooled
