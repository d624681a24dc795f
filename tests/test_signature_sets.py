"""A callee printed with its signature set (issue 26): MindSpore's LazyAdam, with gradients of two kinds (a sparse
embedding's RowTensor and dense ones), prints its update before type inference resolves it to one signature as
`MultitypeFuncGraph_lazy_adam_opt{(Func, ...), (...), (...)}(args...)`. Real dump: fixtures/mindir/lazy_adam_cpu
(`make.py` there); line numbers from `xz -dc FILE | grep -n 'lazy_adam_opt{'`."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import fixture
from hostile import assert_located_error, raw_bytes, run_cli

import irtool
from irtool.ir.grammar import line_parser

LAZY = "lazy_adam_cpu/rank_0/01_type_inference_0001.ir.xz"
OP = "MultitypeFuncGraph_lazy_adam_opt"
# sed -n 1107p: the three signatures, 15 type names each
DENSE = ("Func", "Func", "Bool", "Bool", "Bool") + ("Tensor",) * 10
MAP = ("Func", "Func", "Bool", "Bool", "Bool") + ("Tensor",) * 6 + ("MapTensor",) * 4
SPARSE = ("Func", "Func", "Bool", "Bool", "Bool") + ("Tensor",) * 6 + ("RowTensor", "Tensor", "Tensor", "Tensor")


def test_callee_with_its_signature_set() -> None:
    dump = irtool.load(fixture(LAZY))
    assert dump.warnings == []
    # header: `# Total subgraphs: 67`, `# Total params: 15`, `Total number of cnodes: 209`
    assert dump.counts == {"subgraphs": 67, "params": 15, "cnodes": 209}
    updates = [n for n in dump.nodes() if n.op == OP]
    # grep -n 'lazy_adam_opt{' -> lines 1107, 1451, 1517, each `%0(success) = MultitypeFuncGraph_lazy_adam_opt{`
    assert [(n.line, n.key, n.name, n.callee) for n in updates] == [(1107, "%0", "success", OP), (1451, "%0", "success", OP),
                                                                   (1517, "%0", "success", OP)]
    assert all(n.signature_set == [DENSE, MAP, SPARSE] for n in updates)
    first = updates[0]
    # sed -n 1107p: after the set, `(Adam[...], FusedSparseLazyAdam[...], Bool(0), Bool(0), Bool(1), %para42_..., ...)`
    texts = [i.text for i in first.inputs]
    assert len(texts) == 15 and texts[0].startswith("Adam[") and texts[1].startswith("FusedSparseLazyAdam[")
    assert texts[2:5] == ["Bool(0)", "Bool(0)", "Bool(1)"]
    assert texts[5] == "%para42_Parameter_82" and texts[-1] == "%para51_Parameter_88"
    assert not first.is_call and dump.op_histogram()[OP] == 3
    # every other callee has none
    assert all(n.signature_set is None for n in dump.nodes() if n.op != OP)
    # the grammar's statement rule reads the same callee and set
    tree = line_parser().parse(first.text, start="node_stmt")
    callee = tree.children[2]
    assert callee.data == "overloaded_callee" and str(callee.children[0]) == OP
    assert len(callee.children[1].children) == 3  # signature_set: three signatures


def test_summary_counts_it_under_its_name() -> None:
    proc = run_cli("summarize", "--format", "json", fixture(LAZY))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["ops"][OP] == 3 and summary["warnings"] == []


def test_a_signature_set_not_followed_by_arguments(tmp_path: Path) -> None:
    lines = raw_bytes(Path(fixture(LAZY))).split(b"\n")
    # line 1107: the set ends `RowTensor, Tensor, Tensor, Tensor)}` and the arguments open `(Adam[` (sed -n 1107p |
    # awk '{print index($0, "}(Adam[")}' -> 399: the `(` is column 400); make the `(` a space
    assert lines[1106].count(b"Tensor)}(Adam[") == 1
    lines[1106] = lines[1106].replace(b"}(Adam[", b"} Adam[")
    bad = tmp_path / "no_args.ir"
    bad.write_bytes(b"\n".join(lines))
    line = assert_located_error(run_cli("summarize", str(bad)))
    assert "no_args.ir:1107:400: expected '(' opening the argument list, found ' Adam[" in line
