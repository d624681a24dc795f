"""Compile failures (issue 41): `analyze_fail.ir`, the file MindSpore writes when type or shape inference fails.
Real files compiled here (fixtures/mindir/analyze_fail_*, MindSpore 2.7.1) and the ones MindSpore's own
documentation publishes for 2.1, 2.3 and later (fixtures/published, see its README). Every number is read
by hand from the file text (`grep -n '^#---' FILE`, `sed -n Lp FILE`), quoted in the comments."""
from __future__ import annotations

import json
import lzma
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, fixture
from hostile import assert_located_error, run_cli

import irtool
from irtool.parallel.failure import failure_record, strategy_misfits
from irtool.render.graph import render_graph

MATMUL = fixture("analyze_fail_matmul/rank_0/analyze_fail.ir.xz")
PIPELINE = fixture("analyze_fail_pipeline_type/rank_1/analyze_fail.ir.xz")
PUBLISHED = ROOT / "fixtures" / "published"


def test_the_failing_node_of_a_matmul_shape_mismatch() -> None:
    dump = irtool.load(MATMUL)
    # grep -n '^#---': 52 `> 0`, 93 `> 1`, 129 `> 2`; each marks the node printed on the next line
    assert [(m.depth, m.line, m.node.line) for m in dump.failure.markers] == [(0, 52, 53), (1, 93, 94), (2, 129, 130)]
    r = failure_record(dump)
    # line 130: `  %2(CNode_20) = %0(%para0_x, %1)` in `subgraph @__main___Block_construct_7(%para0_x)` (line 119)
    assert (r.graph, r.node, r.line, r.marker_line, r.depth) == ("__main___Block_construct_7", "%2", 130, 129, 2)
    assert r.statement == "%2(CNode_20) = %0(%para0_x, %1)"
    # line 8: "For 'MatMul' the input dimensions must be equal, but got 'x1_col': 32 and 'x2_row': 48."
    assert (r.operator, r.operator_from) == ("MatMul", "message")
    assert r.message == ("For 'MatMul' the input dimensions must be equal, but got 'x1_col': 32 and 'x2_row': 48.",)
    # line 133: `# In file /home/user/models/analyze_fail_matmul/make.py:21, 15~42/        return self.matmul(...)/`
    assert (r.source.path, r.source.line, r.source.code) == (
        "/home/user/models/analyze_fail_matmul/make.py", 21, "return self.matmul(x, self.weight)")
    assert r.scope == "Default/fc2-Block"  # line 132 `      #scope: (Default/fc2-Block)`
    # line 131: `: (<Tensor[Float32], (4, 32)>, <Ref[Tensor[Float32]], (48, 8)>) -> (<null>)`; %1 (line 124) is
    # `resolve(NameSpace[ClassMember: ...], weight)`
    assert [(i.text, i.what, i.dtype, i.shape) for i in r.inputs] == [
        ("%para0_x", "x", "Float32", (4, 32)), ("%1", "weight", "Float32", (48, 8))]
    assert r.output == "<null>"
    # the stack: %1 line 53 calls %0 = resolve(..., __main__.Net.construct); %5 line 94 calls %0 = resolve(..., fc2);
    # %2 line 130 calls %0 = resolve(..., matmul)
    assert [(c.depth, c.graph, c.node, c.line, c.calls) for c in r.stack] == [
        (0, "__main___Net_construct_6", "%1", 53, "__main__.Net.construct"),
        (1, "__main___Net_construct_6", "%5", 94, "fc2"), (2, "__main___Block_construct_7", "%2", 130, "matmul")]
    # lines 18-23: two frames of `- The Traceback of Net Construct Code:`; line 148: the stack's size
    assert [(t.index, t.line, t.code) for t in r.traceback] == [
        (0, 32, ("        return self.fc2(self.act(self.fc1(x)))",)),
        (1, 21, ("        return self.matmul(x, self.weight)",))]
    assert r.stack_note == "3/5 (Ignored 2 internal frames)" and r.form == "2.3"
    # the entry graph `__main___Net_construct_6` is printed twice (lines 47 and 71): both kept
    assert [g.name for g in dump.subgraphs] == ["__main___Net_construct_6", "__main___Net_construct_6",
                                                "__main___Block_construct_7"]
    assert dump.counts["cnodes"] == 14  # grep -cE '^  (%[0-9]+\(|Return\()'


def test_the_deepest_marker_fails_not_the_last_printed_in_a_pipeline_stage() -> None:
    dump = irtool.load(PIPELINE)
    markers = dump.failure.markers
    # grep -n '^#---': 20 markers; `> 20` at line 787 is printed before `> 19` at line 841 (16-18 not printed)
    assert len(markers) == 20 and [m.depth for m in markers][-4:] == [20, 19, 21, 22]
    assert [m.depth for m in dump.failure.stack][-5:] == [15, 19, 20, 21, 22]
    r = failure_record(dump)
    # line 905 `#------------------------> 22`, line 906 `  %2(CNode_184) = %0(%para0_x, %1)`
    assert (r.graph, r.node, r.line, r.depth) == ("__main___Head_construct_51", "%2", 906, 22)
    assert r.operator == "MatMul" and "Tensor[Int32]" in r.message[0]
    assert r.scope == "Default/network-PipelineCell/network-WithLossCell/_backbone-Net/head-Head"
    assert (r.source.line, r.source.code) == (48, "return self.mm(x, self.w)")
    # line 907: `: (<Tensor[Float32], (4, 32)>, <Ref[Tensor[Int32]], (32, 16)>) -> (<null>)`
    assert [(i.what, i.dtype, i.shape) for i in r.inputs] == [("x", "Float32", (4, 32)), ("w", "Int32", (32, 16))]
    assert r.stack_note == "20/29 (Ignored 9 internal frames)" and len(r.traceback) == 13
    # type inference failed before the pipeline split (no communication in the file: grep -cE 'AllReduce|Send|
    # Receive' 0): the 2 stages and 2 micro batches of make.py are not in it, neither "pp 1" nor "1 micro batch"
    job = irtool.analyze(dump).job
    assert (job.split, job.micro.known, job.stage) == (False, False, None)


def test_a_marker_takes_the_next_node_whichever_way_the_block_is_read(tmp_path: Path) -> None:
    # the marked node read through the fast block regex or line by line: the same node either way
    text = lzma.open(MATMUL, "rt", encoding="utf-8").read()
    lines = text.split("\n")
    lines.insert(129, "")  # a blank line between the marker (line 129) and its node: the node goes line by line
    path = tmp_path / "analyze_fail.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    r = failure_record(irtool.load(path))
    assert (r.node, r.line, r.marker_line) == ("%2", 131, 129)


def test_summarize_says_first_what_failed() -> None:
    proc = run_cli("summarize", str(MATMUL))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == f"Compile failed at MatMul (%2 of @__main___Block_construct_7), {MATMUL}:130"
    assert out[1] == "  For 'MatMul' the input dimensions must be equal, but got 'x1_col': 32 and 'x2_row': 48."
    assert out[2] == "  source: /home/user/models/analyze_fail_matmul/make.py:21  return self.matmul(x, self.weight)"
    row = next(line for line in out if line.split()[:2] == ["%1", "weight"])  # the inputs table, first
    assert row.split()[2:] == ["<Ref[Tensor[Float32]],", "(48,", "8)>", "Float32", "(48,", "8)", "—"]
    assert out.index(row) < out.index(next(line for line in out if line.startswith("Rank ")))
    doc = json.loads(run_cli("summarize", "--format", "json", str(MATMUL)).stdout)
    assert doc["failure"]["line"] == 130 and doc["failure"]["operator"] == "MatMul"
    assert doc["failure"]["inputs"][1]["shape"] == [48, 8]


def test_a_folder_holding_only_analyze_fail_is_summarized_as_the_failure() -> None:
    # MindSpore writes rank_N/om/analyze_fail.ir and no validate pass: the folder's default pass is analyze_fail
    folder = str(Path(PIPELINE).parents[1])
    proc = run_cli("summarize", folder)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first == f"Rank 1: Compile failed at MatMul (%2 of @__main___Head_construct_51), {PIPELINE}:906"
    doc = json.loads(run_cli("summarize", "--format", "json", folder).stdout)
    assert [r["failure"]["line"] for r in doc["ranks"]] == [906]


def test_render_marks_the_failing_node_and_its_inputs() -> None:
    dump = irtool.load(MATMUL)
    g = render_graph(dump, irtool.analyze(dump), depth="all")
    marked = {a["uid"]: (a["failure"], a["label"].split("\n")[0]) for _, a in g.nodes(data=True) if a.get("failure")}
    # %2 fails; its input %1 (line 124, `resolve(..., weight)`) is a node; %para0_x is a parameter (not a box)
    assert marked == {"__main___Block_construct_7/%2": ("failed", "FAILED HERE: MatMul"),
                      "__main___Block_construct_7/%1": ("input", "input of the failing node")}


@pytest.mark.parametrize(("name", "failing", "markers", "source"), [
    # before 2.1 (the r2.0 page): lines 14 and 44; line 45 `%3([CNode]5) = call @func.20(%1, %1, %2)`; signatures one
    # parameter a line (lines 9-12), `DoSignaturePrimitive::S-Prim-Sub{prim_type=1}[...]`, `Primitive::Return{...}(%4)`
    ("ms20_analyze_fail.ir", ("%3", 45, "@func.20", "callee"), [(0, 14), (1, 44)], ("testir1.py", 25)),
    # 2.1: `# 1.This file shows ...` banner, no `# IR entry`; line 19 marker, line 20 `%3([CNode]7) = call @func.21(...)`
    ("ms21_analyze_fail.ir", ("%3", 20, "@func.21", "callee"), [(0, 19)], ("t2.py", 18)),
    # 2.3: lines 23 and 71; line 72 `%7(CNode_19) = %6(%4, %4, %5)`, %6 (line 67) = resolve(..., func)
    ("ms23_analyze_fail.ir", ("%7", 72, "func", "callee"), [(0, 23), (1, 71)], ("t2.py", 18)),
    # master: lines 24, 68, 140; line 141 `%11(CNode_22) = %10(%para0_input_x, %para0_bias)`
    ("ms2x_analyze_fail_bias_add.ir", ("%11", 141, None, "callee"), [(0, 24), (1, 68), (2, 140)],
     ("/workspace/mindspore/build/package/mindspore/ops/function/nn_func.py", 6280)),
])
def test_published_analyze_fail_files_of_older_versions(name, failing, markers, source) -> None:
    dump = irtool.load(PUBLISHED / name)
    assert [(m.depth, m.line) for m in dump.failure.markers] == markers
    r = failure_record(dump)
    node, line, operator, how = failing
    assert (r.node, r.line, r.operator_from) == (node, line, how)
    assert operator is None or r.operator == operator
    assert (r.source.path, r.source.line) == source
    assert dump.warnings == []  # `# Total subgraphs: 0` above the graphs is what analyze_fail.ir declares


def test_the_ir_before_2_1() -> None:
    # ms20_analyze_fail.ir: `subgraph @Default.7(` / `        %para3_x : <Tensor[Float32], ()>` / `        , %para4_y
    # : <...>` / `    ) {` (lines 31-34); line 35 `%1(a) = DoSignaturePrimitive::S-Prim-Sub{prim_type=1}[output_names=
    # ["output"], input_names=["x", "y"]](%para3_x, I64(1))`, `Add` (39), `Mul` (49); `Primitive::Return{prim_type=1}(%1)`
    dump = irtool.load(PUBLISHED / "ms20_analyze_fail.ir")
    assert [(g.name, g.line, g.params) for g in dump.subgraphs] == [
        ("Default_wrapper.8", 9, ["%para1_x", "%para2_y"]), ("Default.7", 31, ["%para3_x", "%para4_y"])]
    assert dump.op_histogram() == Counter({"(call)": 2, "Return": 2, "Sub": 1, "Add": 1, "Mul": 1})
    sub = dump.subgraphs[1].nodes[0]
    assert (sub.line, sub.op, [i.text for i in sub.inputs], sub.scope) == (35, "Sub", ["%para3_x", "I64(1)"], "Default")
    assert [n.line for n in dump.subgraphs[0].nodes] == [15, 18]  # the node and `Primitive::Return{prim_type=1}(%1)`
    assert dump.subgraphs[0].nodes[1].inputs[0].text == "%1"


def test_the_stack_note_of_2_1() -> None:
    # lines 48-49: `#====...` / `# num of function graphs in stack: 1`
    f = irtool.load(PUBLISHED / "ms21_analyze_fail.ir").failure
    assert (f.form, f.stack_note, f.message) == ("2.0", "1", ())


def test_a_marker_followed_by_no_node_is_a_located_warning(tmp_path: Path) -> None:
    # the real file without lines 130-137 (the marked node and the Return block, 4 lines each): the marker
    # (line 129) meets the graph's `}`
    lines = lzma.open(MATMUL, "rt", encoding="utf-8").read().split("\n")
    assert lines[137] == "}"
    del lines[129:137]
    path = tmp_path / "analyze_fail.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    dump = irtool.load(path)
    assert [(w.line, w.message) for w in dump.warnings if "marker" in w.message] == [
        (129, "marker of stack frame 2 is followed by no node")]
    r = failure_record(dump)
    assert (r.node, r.depth) == ("%5", 1)  # the deepest marked node left: line 94


def test_a_huge_marker_depth_is_a_located_error(tmp_path: Path) -> None:
    lines = lzma.open(MATMUL, "rt", encoding="utf-8").read().split("\n")
    lines[128] = "#------------------------> " + "9" * 30
    path = tmp_path / "analyze_fail.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    line = assert_located_error(run_cli("summarize", str(path)))
    assert line == f"irtool: {path}:129:28: expected a depth of at most 18 digits, found 30 digits"


def test_a_failing_primitive_node_gives_its_operator_and_its_inputs_strategies(tmp_path: Path) -> None:
    # Inference failing in a pass that prints primitives (the form of semi_auto_8p's validate: `PrimFunc_MatMul(%1,
    # %2, Bool(0), Bool(0)) {instance name: qkv} primitive_attrs: {in_strategy: ((2, 1), (1, 4)), ...}`): the real
    # matmul file with its failing statement (line 130) printed so, and without the compiler's message (line 8)
    lines = lzma.open(MATMUL, "rt", encoding="utf-8").read().split("\n")
    assert lines[129] == "  %2(CNode_20) = %0(%para0_x, %1)" and lines[7].startswith("For 'MatMul'")
    lines[129] = ("  %2(CNode_20) = PrimFunc_MatMul(%para0_x, %1, Bool(0), Bool(0)) {instance name: matmul} "
                  "primitive_attrs: {in_strategy: ((2, 1), (1, 4))}")
    lines[7] = "The input dimensions must be equal."
    path = tmp_path / "analyze_fail.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    r = failure_record(irtool.load(path))
    assert (r.operator, r.operator_from) == ("MatMul", "node")
    assert [(i.text, i.strategy) for i in r.inputs] == [("%para0_x", (2, 1)), ("%1", (1, 4)), ("Bool(0)", None),
                                                        ("Bool(0)", None)]
    out = run_cli("summarize", str(path)).stdout.splitlines()
    assert out[0] == f"Compile failed at MatMul (%2 of @__main___Block_construct_7), {path}:130"
    assert "  operator: the primitive the node applies" in out[:8]
    assert next(line for line in out if line.split()[:2] == ["%1", "weight"]).split()[-1] == "(1,4)"


def test_a_signature_one_parameter_a_line_left_open_is_a_located_error(tmp_path: Path) -> None:
    # ms20_analyze_fail.ir without line 12 `    ) {`: the signature opened at line 9 meets the marker (line 14)
    lines = (PUBLISHED / "ms20_analyze_fail.ir").read_text(encoding="utf-8").split("\n")
    assert lines[11] == "    ) {"
    del lines[11]
    path = tmp_path / "analyze_fail.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    line = assert_located_error(run_cli("summarize", str(path)))
    assert line.startswith(f"irtool: {path}:9:1: expected 'subgraph @name(%para...) {{', "
                           "found 'subgraph @Default_wrapper.8(")


def test_a_strategy_that_does_not_divide_a_shape_is_said_first() -> None:
    # strategy_misfit_8p: MindSpore failed in its parallel pass (`... shape value 12 at dim index 0 cannot be divisible
    # by strategy value 8`) and wrote no analyze_fail.ir; its last dump, step_parallel_begin: line 54 `%6(CNode_9) =
    # PrimFunc_MatMul(%4, %5, ...) {instance name: fc2} primitive_attrs: {in_strategy: ((8, 1), (1, 1))}`, line 55
    # `: (<Tensor[Float32], (12, 64)>, <Tensor[Float32], (64, 32)>, ...`; fc1 ((2, 1), (1, 4)) on (12, 64) and (64, 64)
    # (line 40) and relu ((2, 4)) on (12, 64) (line 46) fit
    path = fixture("strategy_misfit_8p/rank_0/step_parallel_begin_0017.ir.xz")
    dump = irtool.load(path)
    misfits = strategy_misfits(dump, irtool.analyze(dump).kind)
    assert [(m.op, m.name, m.line, m.input, m.shape, m.strategy, m.dims) for m in misfits] == [
        ("MatMul", "fc2", 54, 0, (12, 64), (8, 1), ((0, 12, 8),))]
    out = run_cli("summarize", path).stdout.splitlines()
    assert out[0] == ("Strategy does not divide its input: MatMul fc2 (line 54), input 0 (12, 64) split (8, 1): "
                      "dimension 0 of 12 into 8")
    doc = json.loads(run_cli("summarize", "--format", "json", path).stdout)
    assert doc["strategy_misfits"][0]["dims"] == [[0, 12, 8]]


def test_after_the_parallel_pass_a_misfit_is_read_from_the_origin_shapes(tmp_path: Path) -> None:
    # semi_auto_8p's validate prints slices; line 86, `%3(equiv_92_qkv) = PrimFunc_MatMul(%1, %2, ...)` with
    # `in_strategy: ((2, 1), (1, 4))` and `origin_input_shapes: ((512, 64), (64, 192))`: it fits. The same file with
    # that origin shape's 192 columns made 190 (not divisible by 4): the misfit is found from the origin shapes
    lines = lzma.open(fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz"), "rt", encoding="utf-8").read().split("\n")
    assert "origin_input_shapes: ((512, 64), (64, 192))" in lines[85]
    lines[85] = lines[85].replace("origin_input_shapes: ((512, 64), (64, 192))",
                                  "origin_input_shapes: ((512, 64), (64, 190))")
    path = tmp_path / "19_validate_0078.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    dump = irtool.load(path)
    assert [(m.line, m.name, m.input, m.shape, m.strategy, m.dims) for m in strategy_misfits(dump, "post")] == [
        (86, "qkv", 1, (64, 190), (1, 4), ((1, 190, 4),))]


def test_a_compile_that_stops_before_the_pipeline_split_leaves_the_pipeline_unknown(tmp_path: Path) -> None:
    # zbv_stage_order_fail_8p: MindSpore refused the zero_bubble_v stage order in its parallel pass (manifest) and its
    # last dump is 10_dataset_repeat_opt, a pass before the pipeline split and the parallel pass: no `Send`, `Receive`
    # or `micro: I64` anywhere (grep -c: 0), shapes whole: line 15 `%para4_blocks.0.w1: <Ref[Tensor[Float32]], (64,
    # 256), ...` (make.py: F = 256) while line 1569's fc1 prints `in_strategy: ((1, 1), (1, 2))`, not applied yet;
    # line 3847 `ApplyMomentum`. The job has 4 stages and 8 micro batches (make.py), which this pass cannot show
    path = fixture("zbv_stage_order_fail_8p/rank_0/10_dataset_repeat_opt_0013.ir.xz")
    job = json.loads(run_cli("summarize", "--format", "json", path).stdout)["job"]
    assert job["ffn_size"]["value"] == 256  # the whole width, not 256 x the split 2
    assert [job[k]["value"] for k in ("world_size", "pipeline_stages", "micro_batches", "chunks")] == [None] * 4
    assert (job["optimizer"]["value"], job["stage_unknown"], job["stage_ranks"]) == ("Momentum", [0], {})
    # every command files the rank under no stage (render said "using rank 0 (stage 0)")
    drawn = run_cli("render", "--pass", "dataset_repeat", str(Path(path).parents[1]), "-o", str(tmp_path / "g.svg"))
    assert "using rank 0 (stage unknown)" in drawn.stderr
    # bootstrap of a 2-stage pipeline with 4 micro batches (pipeline_2stage_8p: no Send/Receive until its
    # 11_pipeline_split, which has 4) and no optimizer inlined yet: neither one stage nor inference
    boot = run_cli("summarize", fixture("pipeline_2stage_8p/rank_0/00_bootstrap_0000.ir.xz")).stdout.splitlines()
    assert boot[1] == ("Job: world —, dp — x mp — x pp —, — micro batches, training or inference — (a pass before "
                       "the pipeline split), rank 0 of unknown stage")
