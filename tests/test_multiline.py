"""Statements printed over several lines (issue 10.1): numpy wraps tensor constants, strings may
hold a line break. Real dumps: fixtures/mindir/const_wrap_cpu (CPU) and micro_interleaved_8p
(sharded constants after the parallel pass); `# Order:` entries holding such values, and order lines
of three digits (issue 26): order_list_cpu; line numbers from `xz -dc FILE | sed -n Np`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fixture
from hostile import ROOT, assert_located_error, raw_bytes, run_cli

import irtool
from irtool.errors import DumpError
from irtool.ir.values import parse_value

CONST = "const_wrap_cpu/rank_0/19_validate_0072.ir.xz"
ORDER = "order_list_cpu/rank_0/01_type_inference_0001.ir.xz"
MICRO = "micro_interleaved_8p"
ERRORS = ROOT / "fixtures" / "errors"


def _node_at(dump: irtool.Dump, line: int) -> irtool.Node:
    return next(n for n in dump.nodes() if n.line == line)


def test_wrapped_constants_keep_counts_and_lines() -> None:
    dump = irtool.load(fixture(CONST))
    # header: `Total number of cnodes: 62`, 13 `%para` lines under `# Params:`, one `subgraph @`
    assert dump.counts == {"subgraphs": 1, "params": 13, "cnodes": 62}
    assert dump.warnings == [] and irtool.check(dump) == []
    # line 48 `%0(equiv_34_x) = PrimFunc_Div(%para1_inputs0, Tensor(shape=[16], ... value=[ 8.00000000e+00 ...`
    # (12 numbers), line 49 `  8.00000000e+00 ...])) cnode_attrs: ...` (4 more); the next node `%1` is on line 61
    div = _node_at(dump, 48)
    assert (div.key, div.op) == ("%0", "Div")
    assert [i.text for i in div.inputs][0] == "%para1_inputs0"
    tensor = parse_value(div.inputs[1].text)
    assert tensor.name == "Tensor" and tensor.kwargs["shape"] == [16] and tensor.kwargs["value"] == [8.0] * 16
    assert div.cnode_attrs == {"checkpoint": True} and div.primal_attrs == {"unique_id": "8254"}
    assert div.scope == "Default/network-WithLossCell/_backbone-ConstNet/Div-op0"  # line 51
    assert _node_at(dump, 61).key == "%1"


def test_two_dimensional_constant_after_a_line_break() -> None:
    dump = irtool.load(fixture(CONST))
    # lines 106-110: `%4 ... PrimFunc_MaskedFill(%3, Tensor(shape=[4, 4], dtype=Bool, value=` then
    # `[[ True False False False]` ... ` [ True  True  True  True]]), Tensor(shape=[], dtype=Float32, value=0.5)) ...`
    fill = _node_at(dump, 106)
    assert (fill.key, fill.op, len(fill.inputs)) == ("%4", "MaskedFill", 3)
    mask = parse_value(fill.inputs[1].text)
    assert mask.kwargs["shape"] == [4, 4]
    assert mask.kwargs["value"] == [[True, False, False, False], [True, True, False, False],
                                    [True, True, True, False], [True, True, True, True]]
    assert fill.inputs[2].text == "Tensor(shape=[], dtype=Float32, value=0.5)"
    # lines 418-420: `%25 ... PrimFunc_Gather(%24, Tensor(shape=[2, 3], dtype=Int32, value=` / `[[ 0  5 10]` /
    # ` [15  3  7]]), I64(0), I64(0)) ...`
    gather = _node_at(dump, 418)
    assert [i.text for i in gather.inputs][2:] == ["I64(0)", "I64(0)"]
    assert parse_value(gather.inputs[1].text).kwargs["value"] == [[0, 5, 10], [15, 3, 7]]


def test_nan_inf_and_a_string_holding_a_line_break() -> None:
    dump = irtool.load(fixture(CONST))
    # line 230: `value=[-1.00000000e+00 ... nan ... inf ... -inf ` /
    # line 231 `  6.00000024e-01 ...]), F32(0), F32(2), F32(-2))`
    nan = _node_at(dump, 230)
    values = parse_value(nan.inputs[0].text).kwargs["value"]
    assert len(values) == 16 and values[3] == "nan" and values[7] == float("inf") and values[11] == float("-inf")
    assert [i.text for i in nan.inputs[1:]] == ["F32(0)", "F32(2)", "F32(-2)"]
    # lines 749-750: `%58 ... Print("a rather long string constant: xxx...` /
    # `second line after an escaped newline", %25, IOMonad[IO]) ...`
    show = _node_at(dump, 749)
    assert show.op == "Print" and [i.text for i in show.inputs][1:] == ["%25", "IOMonad[IO]"]
    assert parse_value(show.inputs[0].text).endswith("xxx\nsecond line after an escaped newline")
    assert show.primitive_attrs == {"side_effect_io": True}


def test_sharded_constants_after_the_parallel_pass() -> None:
    dump = irtool.load(fixture(f"{MICRO}/rank_1/19_validate_0078.ir.xz"))
    # header: `Total number of cnodes: 243`; lines 683-684: `%44(equiv_91_logits) = PrimFunc_Add(%43, Tensor(shape=[1, 4],
    # dtype=Float32, value=` / `[[-2.33333334e-01 -1.66666672e-01 -1.00000001e-01 -3.33333351e-02]])) ...`
    assert dump.counts["cnodes"] == 243
    add = _node_at(dump, 683)
    assert (add.key, add.op, add.inputs[0].text) == ("%44", "Add", "%43")
    assert parse_value(add.inputs[1].text).kwargs["value"] == [[-0.233333334, -0.166666672, -0.100000001, -0.0333333351]]
    # lines 1285-1289: the (4, 4) constant is the FIRST input of `%125(CNode_831) = PrimFunc_Mul(Tensor(...`
    mul = _node_at(dump, 1285)
    assert mul.key == "%125" and parse_value(mul.inputs[0].text).kwargs["shape"] == [4, 4] and len(mul.inputs) == 2


def test_folder_with_wrapped_constants_summarizes() -> None:
    proc = run_cli("summarize", "--format", "json", "--pass", "validate", str(ROOT / "fixtures" / "mindir" / MICRO))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [r["rank"] for r in out["ranks"]] == [0, 1]


def test_statement_cut_inside_a_wrapped_constant_at_end_of_file() -> None:
    line = assert_located_error(run_cli("summarize", str(ERRORS / "wrapped_constant_cut_at_eof.ir")))
    # `value=[` opens at column 89 of line 48, the last line of the snippet
    assert line.endswith("wrapped_constant_cut_at_eof.ir:48:89: expected ']' closing the '[' at line 48 column 89, "
                         "found end of file")


def test_brackets_that_never_close_stop_at_the_type_line() -> None:
    path = str(ERRORS / "wrapped_constant_never_closes.ir")
    line = assert_located_error(run_cli("summarize", path))
    # `Tensor(` opens at column 51 of line 61; line 62 of the snippet is %1's type line
    assert ("wrapped_constant_never_closes.ir:61:51: expected ')' closing the '(' at line 61 column 51, "
            "found a type line") in line
    assert line.endswith("at line 62")
    # lenient: that node is skipped with the same message, the others are read
    dump = irtool.load(path, lenient=True)
    assert [n.key for n in dump.nodes()] == ["%0"]
    assert dump.warnings[0].line == 61 and "closing the '(' at line 61 column 51" in dump.warnings[0].message


def test_an_error_inside_a_continuation_line_names_that_line(tmp_path: Path) -> None:
    lines = raw_bytes(Path(fixture(CONST))).split(b"\n")
    # line 62: `[[ 0.00000000e+00 ... 2.14285707e+00]])) cnode_attrs: ...`; make its `]]` a `]}`
    assert lines[61].startswith(b"[[ 0.00000000e+00") and lines[61].count(b"]]") == 1
    col = lines[61].index(b"]]") + 2
    lines[61] = lines[61].replace(b"]]", b"]}")
    bad = tmp_path / "mismatch.ir"
    bad.write_bytes(b"\n".join(lines))
    line = assert_located_error(run_cli("summarize", str(bad)))
    assert line.endswith(f"mismatch.ir:62:{col}: expected ']', found '}}'")


def test_an_open_string_stops_at_the_next_statement(tmp_path: Path) -> None:
    lines = raw_bytes(Path(fixture(CONST))).split(b"\n")
    # make %1's statement (line 61) open a string at `value="`: line 62 closes it at `unique_id: "` and opens
    # another at `8241"` (column 179); a type line (63) may be string text, the scope line (64) may not
    lines[60] = lines[60].replace(b"value=", b'value="')
    assert lines[61].endswith(b'{unique_id: "8241"}') and lines[61].rindex(b'"') + 1 == 179
    bad = tmp_path / "quote.ir"
    bad.write_bytes(b"\n".join(lines))
    with pytest.raises(DumpError) as err:
        irtool.load(bad)
    assert (err.value.line, err.value.expected) == (61, "'\"' closing the string at line 62 column 179")
    assert err.value.found.startswith("a scope line") and err.value.found.endswith("at line 64")


def _lines(rel: str, *numbers: int) -> str:
    lines = raw_bytes(Path(fixture(rel))).decode().split("\n")
    return "\n".join(lines[n - 1] for n in numbers)


@pytest.mark.parametrize("lenient", [False, True])
def test_order_entries_holding_wrapped_values_and_three_digit_numbers(lenient: bool) -> None:
    dump = irtool.load(fixture(ORDER), lenient=lenient)
    assert dump.warnings == []
    # header: `# Total subgraphs: 223`, `# Total params: 57`, `Total number of cnodes: 750`
    assert dump.counts == {"subgraphs": 223, "params": 57, "cnodes": 750}
    # grep -c '^# Order:' -> 223 sections; grep -c '^# *[0-9]*: ' -> 714 entries, each one item
    assert len(dump.order) == 714
    # lines 224-226 (6 entries before: head -223 | grep -c '^# *[0-9]*: '): the Gather's index constant
    # `value=` / `[[ 0  5 10]` / ` [15  3  7]]), [3]: ... 0}`
    assert dump.order[6] == _lines(ORDER, 224, 225, 226)
    assert dump.order[6].endswith("[3]: ValueNode<Int64Imm> 0, [4]: ValueNode<Int64Imm> 0}")
    assert dump.order[7].startswith("#   2: @180_gather_45:CNode_644{")  # line 227
    # grep -n '^# *[0-9]*: .*[^}]$' -> 6 entries go on over the following lines (224, 344, 386, 602, 609, 612)
    assert sum("\n" in e for e in dump.order) == 6
    # lines 612-613: a string printed without quotes, holding its line break
    (show,) = [e for e in dump.order if "ValueNode<PrimitivePy> Print" in e]
    assert show == _lines(ORDER, 612, 613) and show.endswith("a string constant\nwith a line break, [2]: g}")
    # grep -n '^# [0-9][0-9][0-9]: ' -> lines 10190-10196, `# 100: @191_hyper_map_500:success{...` to `# 106: ...`
    wide = [e for e in dump.order if e.startswith("# 1")]
    assert len(wide) == 7 and wide[0] == _lines(ORDER, 10190) and wide[-1] == _lines(ORDER, 10196)


def test_order_entry_whose_constant_never_closes(tmp_path: Path) -> None:
    lines = raw_bytes(Path(fixture(ORDER))).split(b"\n")
    # remove line 226 (` [15  3  7]]), [3]: ...}`): line 225 `[[ 0  5 10]` leaves the `[` of column 1 open,
    # and the next entry (`#   2: ...`, line 226 of the copy) cannot continue it
    assert lines[225].startswith(b" [15  3  7]])") and lines[226].startswith(b"#   2: ")
    del lines[225]
    bad = tmp_path / "cut_order.ir"
    bad.write_bytes(b"\n".join(lines))
    line = assert_located_error(run_cli("summarize", str(bad)))
    # reported at the entry's own line, at its innermost bracket still open there: the `(` of `Tensor(`
    # (sed -n 224p | awk '{print index($0, "Tensor(")}' -> 123, so column 129)
    assert "cut_order.ir:224:129: expected ']' closing the '[' at line 225 column 1, found an order line" in line
    assert line.endswith("at line 226")
    # lenient: that entry is skipped with the same message; the next one and the rest are read
    dump = irtool.load(bad, lenient=True)
    assert [w.line for w in dump.warnings] == [224] and "closing the '[' at line 225 column 1" in dump.warnings[0].message
    assert len(dump.order) == 713 and dump.order[6].startswith("#   2: @180_gather_45:CNode_644{")
    assert dump.counts == {"subgraphs": 223, "params": 57, "cnodes": 750}


def test_a_bracket_left_open_in_an_unquoted_string_is_kept_as_printed(tmp_path: Path) -> None:
    lines = raw_bytes(Path(fixture(ORDER))).split(b"\n")
    # line 5: `compile_phase: train.1795680800556099840.140672111744432.0...0`, an attribute value printed
    # without quotes; make it open a bracket that no line after it closes (line 6 is `training: 1`)
    assert lines[4].startswith(b"compile_phase: train.") and lines[5] == b"training: 1"
    lines[4] = lines[4].replace(b"train.", b"train(")
    odd = tmp_path / "open_attr.ir"
    odd.write_bytes(b"\n".join(lines))
    dump = irtool.load(odd)
    assert dump.warnings == [] and dump.attrs["compile_phase"] == lines[4].decode().split(": ", 1)[1]
    assert dump.attrs["training"] == "1" and len(dump.order) == 714
