"""The `symbol engine details:` block of dynamic-shape dumps (fixtures/mindir/dynamic_shape_pp_4p: a 2-stage
pipeline compiled with `Symbol(divisor=8)` batch dims): read by the grammar, kept as data on the Dump, counted by
`summarize`. Numbers are read off the dump text with the grep in each comment (`xzcat FILE | ...`)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, fixture
from hostile import assert_located_error, raw_bytes, run_cli

import irtool
from irtool.cli import main

DYN = FIXTURES / "dynamic_shape_pp_4p"
SPE0 = "dynamic_shape_pp_4p/rank_0/step_parallel_end_0019.ir.xz"
VAL2 = "dynamic_shape_pp_4p/rank_2/19_validate_0089.ir.xz"
MOE = "mindformers_moe_dp2mp2pp2_ep2/rank_0/19_validate_0091.ir.xz"
ENGINE0 = "SymbolEngine_268_254_1_mindspore_nn_wrap_cell_wrapper__TrainGradAccuStepCell_construct_1683"


def test_block_kept_with_its_graph_and_lines() -> None:
    dump = irtool.load(fixture(SPE0))
    assert dump.warnings == []
    # grep -n '^symbol engine details:\|^SymbolEngine_' -> 1567, 1568; the engine's `}` is line 1585
    (engine,) = dump.symbol_engines
    assert (engine.name, engine.line) == (ENGINE0, 1568)
    assert engine.graph == ENGINE0.removeprefix("SymbolEngine_") == dump.entry
    # awk '/^SymbolEngine_/{on=1;next} on&&/^}/{on=0} on' | grep -o ' = [A-Za-z]*(' | sort | uniq -c
    assert len(engine.symbols) == 16
    assert engine.op_histogram() == {"ScalarDiv": 8, "StridedSlice": 4, "ScalarMul": 2, "ScalarSub": 2}
    first, third = engine.symbols[0], engine.symbols[2]
    # sed -n 1569p; sed -n 1571p
    assert (first.line, first.target, first.op) == (1569, "s21<[4,inf]|4N|=s1/2>", "ScalarDiv")
    assert first.text == "s21<[4,inf]|4N|=s1/2> = ScalarDiv(s1<[8,inf]|8N>, 2)"
    assert (third.line, third.target, third.op) == (1571, "[s17<[4,inf]|4N|=s1/2>]", "StridedSlice")
    assert engine.notes == []
    # grep -n '^subgraph symbol engine' -> 206 (before `subgraph @268_...` at 209) and 1949 (before @269_... at 1953)
    using = {g.name: g.symbol_engine for g in dump.subgraphs if g.symbol_engine}
    assert using == {"268_254_1_mindspore_nn_wrap_cell_wrapper__TrainGradAccuStepCell_construct_1683": ENGINE0,
                     "269_255_13_mindspore_nn_wrap_cell_wrapper_PipelineCell_construct_1786": ENGINE0}
    assert all(not g.preamble or "symbol engine" not in " ".join(g.preamble) for g in dump.subgraphs)
    # grep -c '^subgraph @' -> 8; the header declares 8 subgraphs, 26 params, 286 cnodes
    assert dump.counts == {"subgraphs": 8, "params": 26, "cnodes": 286}
    assert dump.declared == {"subgraphs": 8, "params": 26, "nodes": 680, "cnodes": 286}


def test_nested_shapes_and_last_block_of_the_file() -> None:
    dump = irtool.load(fixture(VAL2))
    assert dump.warnings == []
    # grep -n '^symbol engine details:' -> 2879, the engine opens at 2880 and `}` (line 2900) ends the file
    (engine,) = dump.symbol_engines
    assert engine.line == 2880
    # awk ... | grep -o ' = [A-Za-z]*(' | sort | uniq -c: 19 lines
    assert engine.op_histogram() == {"ScalarDiv": 5, "ScalarMul": 3, "FunctorOperation": 2, "ScalarAdd": 2,
                                     "ScalarMax": 2, "ShapeCalcReduceSumGrad": 2, "StridedSlice": 2, "ScalarSub": 1}
    by_line = {s.line: s for s in engine.symbols}
    # sed -n 2890p: a shape of shapes
    assert by_line[2890].target == "[[1], [s42<[1,inf]>]]" and by_line[2890].op == "ShapeCalcReduceSumGrad"
    # grep -c '^subgraph symbol engine: ' -> 7, one per subgraph (grep -c '^subgraph @' -> 7)
    assert sum(g.symbol_engine is not None for g in dump.subgraphs) == len(dump.subgraphs) == 7


@pytest.mark.parametrize("rel", sorted(str(p.relative_to(FIXTURES)) for p in DYN.rglob("*.ir.xz")))
def test_every_pass_summarizes(rel: str) -> None:
    res = CliRunner().invoke(main, ["summarize", "--format", "json", fixture(rel)])
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["warnings"] == []
    assert s["counts"] == {k: s["header"][k] for k in ("subgraphs", "params", "cnodes")}
    (engine,) = s["symbol_engines"]
    # every pass prints one block: grep -c '^symbol engine details:' -> 1
    text = raw_bytes(FIXTURES / rel).decode()
    body = text.split("\nsymbol engine details:\n", 1)[1].split("\n}\n", 1)[0].splitlines()[1:]
    assert engine["symbols"] == len(body) > 0


def test_summarize_text_counts_symbol_lines() -> None:
    out = CliRunner().invoke(main, ["summarize", fixture(SPE0)]).output
    assert "symbol lines  16" in out
    assert "Symbol engines (dynamic shapes)" in out
    assert "ScalarDiv 8, StridedSlice 4, ScalarMul 2, ScalarSub 2" in out
    # a dump without dynamic shapes shows neither
    plain = CliRunner().invoke(main, ["summarize", fixture("pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz")])
    assert plain.exit_code == 0 and "symbol" not in plain.output.lower()


def test_unknown_line_in_block_is_kept_and_reported(tmp_path) -> None:
    # a copy of the real dump with one line inside the engine changed to a form the grammar does not know
    lines = raw_bytes(DYN / SPE0.split("/", 1)[1]).decode().split("\n")
    assert lines[1570 - 1].startswith("  s17<")
    lines[1570 - 1] = "  a new kind of symbol line"
    path = tmp_path / "changed.ir"
    path.write_text("\n".join(lines))
    dump = irtool.load(path)
    assert dump.symbol_engines[0].notes == ["  a new kind of symbol line"]  # kept raw
    assert len(dump.symbol_engines[0].symbols) == 15
    assert [w.line for w in dump.warnings] == [1570]


def test_block_cut_before_its_close_is_a_located_error(tmp_path) -> None:
    # the real validate dump cut just before the engine's `}` (its last line): one located line, exit 2
    text = raw_bytes(DYN / VAL2.split("/", 1)[1]).decode()
    path = tmp_path / "cut.ir"
    path.write_text(text[: text.rindex("\n}")])
    line = assert_located_error(run_cli("summarize", str(path)))
    assert ":2900:1: expected " in line and "end of file" in line


def test_symbolic_type_lines_and_functor_values_are_read() -> None:
    dump = irtool.load(fixture(VAL2))
    assert irtool.check(dump) == []  # no type line or attribute kept as raw text
    # sed -n 1153p: `... primitive_attrs: {output_names: (outputs), functor: Functor[ShapeCalc_ReduceShape]{false}, ...`
    (node,) = [n for n in dump.nodes() if n.line == 1153]
    assert str(node.primitive_attrs["functor"]) == "Functor[ShapeCalc_ReduceShape]{false}"  # kept as its text
    # its second type line is symbolic: `: (S:[s..<...>, ...], ...) -> (...)`
    assert len(node.type_lines) == 2 and node.type_lines[1].startswith(": (S:[")


def test_operations_printed_under_the_operation_that_built_them() -> None:
    # MindFormers MoE validate (issue 26): a Reshape whose result has a derived symbol prints the ScalarDiv or
    # ScalarMul deriving it on the next line, two spaces deeper
    dump = irtool.load(fixture(MOE))
    assert dump.warnings == []
    (engine,) = dump.symbol_engines
    # grep -n '^SymbolEngine_' -> 3855; its `}` is line 3925. Between them, grep -c '^  [s[]' -> 60 operations of
    # the engine and grep -c '^    s' -> 8 printed under one (lines 3857, 3863, 3865, 3871, 3873, 3879, 3899, 3905)
    assert engine.line == 3855 and engine.notes == []
    assert len(engine.symbols) == 68
    nested = [s for s in engine.symbols if s.depth == 1]
    assert [s.line for s in nested] == [3857, 3863, 3865, 3871, 3873, 3879, 3899, 3905]
    assert {s.depth for s in engine.symbols} == {0, 1}
    # sed -n 3856,3857p
    above = next(s for s in engine.symbols if s.line == 3856)
    assert (above.depth, above.target, above.op) == (0, "[1, s2<[1,inf]|=s1/512>, 512]", "Reshape")
    assert (nested[0].target, nested[0].op) == ("s2<[1,inf]|=s1/512>", "ScalarDiv")
    assert nested[0].text == "s2<[1,inf]|=s1/512> = ScalarDiv(s1<[1,inf]>, 512)"
    # of the 8: ScalarDiv at 3857, 3865, 3873, 3899; ScalarMul at 3863, 3871, 3879, 3905
    assert [s.op for s in nested] == ["ScalarDiv", "ScalarMul"] * 4
