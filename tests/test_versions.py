"""Version tolerance: constructs this grammar does not know are kept, reported, and do not spoil
the rest of the summary. The input is a real dump with two hand-made changes, made here."""
from __future__ import annotations

import json
import lzma
import re
from collections import Counter

import pytest
from conftest import fixture
from hostile import run_cli

import irtool
from irtool.ir.parse import parse_node
from irtool.ir.values import parse_type, parse_type_sig
from irtool.parallel.chains import user_source
from irtool.report.summary import summarize

REAL = fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz")


def _loaded(path):
    dump = irtool.load(path)
    return dump, irtool.analyze(dump)


def edited(tmp_path):
    """The real dump with (1) a value form no MindSpore we know prints, in the attributes of its
    first AllGather, and (2) an annotation line of a kind we do not know under that node."""
    lines = lzma.open(REAL, "rt", encoding="utf-8").read().split("\n")
    at = next(i for i, ln in enumerate(lines) if "= AllGather(" in ln)
    lines[at] = lines[at].replace("primitive_attrs: {", "primitive_attrs: {layout_v2: Layout<dp, mp>, ", 1)
    lines.insert(at + 1, "      # Fusion bucket: 3")
    path = tmp_path / "edited.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path, at + 1  # 1-based line of the edited node


def test_unknown_constructs_are_warnings_and_the_rest_is_right(tmp_path):
    path, line = edited(tmp_path)
    real, dump = summarize(*_loaded(REAL)), summarize(*_loaded(path))
    assert real["warnings"] == []
    messages = {w["line"]: w["message"] for w in dump["warnings"]}
    assert "Fusion bucket" in messages[line + 1] and "kept as raw text" in messages[line + 1]
    assert messages[line].startswith("attributes of %5 kept as raw text (primitive_attrs: expected ")
    assert "found '<dp,'" in messages[line] and "classification may be incomplete" in messages[line]
    assert dump["counts"] == real["counts"] and dump["ops"] == real["ops"]
    # every communication node is still found; only the edited one may lose its category
    assert len(dump["comm"]) == len(real["comm"])
    changed = [(a["node"], a["category"], b["category"]) for a, b in zip(real["comm"], dump["comm"])
               if a["category"] != b["category"]]
    assert len(changed) <= 1
    assert Counter(c["op"] for c in dump["comm"]) == Counter(c["op"] for c in real["comm"])


def test_unknown_header_lines_are_kept_and_the_counts_still_checked(tmp_path):
    # mlp_cpu_ms210 (MindSpore 2.10, with a `jit config {` block) with three lines a later version
    # might print: one inside the header, one in `jit config`, one after the node counts.
    lines = lzma.open(fixture("mlp_cpu_ms210/rank_0/21_validate_0076.ir.xz"), "rt", encoding="utf-8").read().split("\n")
    at = lines.index("jit config {")
    lines.insert(at, "# Dump format: 3")
    lines.insert(at + 2, "# new_option = on")
    cnodes = next(i for i, ln in enumerate(lines) if ln.startswith("Total number of cnodes:"))
    lines.insert(cnodes + 1, "Total number of value nodes: 92")
    path = tmp_path / "later.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    dump = irtool.load(path)
    assert [w.line for w in dump.warnings] == [at + 1, at + 3, cnodes + 2]
    assert all("unrecognised line kept as raw text" in w.message for w in dump.warnings)
    assert dump.counts == {k: dump.declared[k] for k in ("subgraphs", "params", "cnodes")}
    assert dump.jit_config["exc_mode"] == "auto"


def test_unknown_lines_between_nodes_are_kept(tmp_path):
    lines = open(fixture("mlp_cpu/rank_0/19_validate_0072.ir"), encoding="utf-8").read().split("\n")
    opener = next(i for i, ln in enumerate(lines) if ln.startswith("subgraph @"))
    lines.insert(opener + 1, "# Graph kind: training")
    lines.insert(opener + 2, "fusion_policy: auto")
    path = tmp_path / "notes.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    dump = irtool.load(path)
    assert [w.line for w in dump.warnings] == [opener + 2, opener + 3]
    assert dump.subgraphs[0].body_notes == ["# Graph kind: training", "fusion_policy: auto"]
    assert dump.counts["cnodes"] == dump.declared["cnodes"] == 68


# --- issue 41: the forms of older versions, as MindSpore's documentation publishes them (fixtures/published,
# extract.py names each page and commit) and as the bundled kernel graphs print them. Numbers by `grep -n`.
PUBLISHED = fixture("../published")


@pytest.mark.parametrize(("name", "entry", "counts", "params"), [
    # `#IR entry      : @1_construct_wrapper.21`, `#Total params  : 2` then the parameter lines (5-6, no `# Params:`),
    # `#Total subgraph : 3` after them (line 8); 3 graphs of 3 + 2 + 2 nodes with Return
    ("ms110_default.ir", "1_construct_wrapper.21", {"subgraphs": 3, "params": 2, "cnodes": 9},
     [("%para1_x", "<Tensor[Float32]x()>", ())]),
    # 2.0: `#IR entry      : @1_construct.Default_wrapper.22`, `#Total subgraph: 3`, `#attrs         :`
    ("ms20_sorted.ir", "1_construct.Default_wrapper.22", {"subgraphs": 3, "params": 2, "cnodes": 9},
     [("%para1_x", "<Tensor[Float32], ()>", ())]),
    # 2.1 sorted: the colon-aligned entry with `# Total params: 2` / `# Params:`
    ("ms21_sorted.ir", "1___main___Net_construct.12", {"subgraphs": 3, "params": 2, "cnodes": 6},
     [("%para1_x", "<Tensor[Float32], ()>", ())]),
])
def test_colon_aligned_headers_of_1x_to_2_1(name, entry, counts, params) -> None:
    dump = irtool.load(f"{PUBLISHED}/{name}")
    assert dump.warnings == []
    assert dump.entry == entry and dump.counts == counts
    assert {k: dump.declared[k] for k in ("subgraphs", "params")} == {k: counts[k] for k in ("subgraphs", "params")}
    assert [(p.ref, p.type_text, p.type.shape) for p in dump.params[:1]] == params


def test_older_scope_order_and_source_lines() -> None:
    d20 = irtool.load(f"{PUBLISHED}/ms20_sorted.ir")
    # line 16 `      # scope: (Default)`, line 22 `# order:`, line 28 `undeterminate : 0` (before a subgraph)
    assert {n.scope for n in d20.nodes()} == {"Default"}
    assert len(d20.order) == 2 + 5 + 2  # `#   N:` lines under the three `# order:` lines
    assert d20.subgraphs[1].attrs == {"undeterminate": "0"}
    # 1.x: line 15 `      # In file train.py(34)/        a = self.sub(x, 1)/`
    d110 = irtool.load(f"{PUBLISHED}/ms110_default.ir")
    first = d110.subgraphs[0].nodes[0]
    assert [(r.path, r.line, r.code) for r in first.source_refs] == [("train.py", 34, "a = self.sub(x, 1)")]


def test_nodes_printed_without_a_name_are_read() -> None:
    # 19 statement lines `  %0 = Assign(...)` ... `  %17 = Depend(%15, %16)` and `Return(%17)`
    dump = irtool.load(f"{PUBLISHED}/ms2x_side_effect_unnamed.ir")
    assert dump.warnings == [] and dump.counts["cnodes"] == 19
    assert dump.op_histogram() == Counter({"UpdateState": 6, "Assign": 3, "Load": 3, "MakeTuple": 3, "AddN": 2,
                                           "Depend": 1, "Return": 1})
    load = dump.subgraphs[0].nodes[2]  # line 11 `  %2 = Load(%para2_param, %1)`
    assert (load.key, load.name, load.line, load.node_refs, load.param_refs) == ("%2", "", 11, ("%1",), ("%para2_param",))


def test_an_unnamed_node_reads_the_same_both_ways(tmp_path) -> None:
    # the real mlp_cpu validate dump with every debug name removed (`  %1(equiv_9_x) = ` -> `  %1 = `)
    text = open(fixture("mlp_cpu/rank_0/19_validate_0072.ir"), encoding="utf-8").read()
    path = tmp_path / "unnamed.ir"
    path.write_text(re.sub(r"(?m)^(  %\d+)\([^\s()]+\) = ", r"\1 = ", text), encoding="utf-8")
    named, unnamed = irtool.load(fixture("mlp_cpu/rank_0/19_validate_0072.ir")), irtool.load(path)
    assert unnamed.warnings == [] and unnamed.counts == named.counts
    assert [(n.key, n.op, n.line, n.input_types) for n in unnamed.nodes()] == \
        [(n.key, n.op, n.line, n.input_types) for n in named.nodes()]


def test_kernel_graph_device_types_give_their_shape() -> None:
    # mlp_cpu_sorted graph_build_0_0090.ir line 48: `: (<Float32xDefaultFormat[const vector]{16, 32}>, <Float32x
    # DefaultFormat[const vector]{64, 32}>, <BoolxDefaultFormat[const vector]{}>, ...`
    dump = irtool.load(fixture("mlp_cpu_sorted/rank_0/graph_build_0_0090.ir.xz"))
    mm = next(n for n in dump.nodes() if n.line == 46)
    device = parse_type_sig(mm.type_lines[1])[0]
    assert [(t.dtype, t.shape) for t in device] == [("Float32", (16, 32)), ("Float32", (64, 32)), ("Bool", ()), ("Bool", ())]
    # 1.x, as MindSpore's dump docs of r1.2 print them (tutorials/training/source_en/advanced_use/dump_in_graph_mode.md)
    assert parse_type("<Tensor[Float16]x[const vector][32, 192, 13, 13]>").shape == (32, 192, 13, 13)
    assert parse_type("<Float16xNC1HWC0[const vector][32, 12, 13, 13, 16]>").shape == (32, 12, 13, 13, 16)
    # a parameter's device type, `<UnknownxDefaultFormat[const vector]{64, 32}>` (line 36): no data type
    assert (parse_type("<UnknownxDefaultFormat[const vector]{64, 32}>").dtype,
            parse_type("<UnknownxDefaultFormat[const vector]{64, 32}>").shape) == (None, (64, 32))


def test_a_1x_kernel_graph_full_name_line_is_the_scope() -> None:
    # r1.2 dump_in_graph_mode.md (mindspore-ai/docs): a node of `ms_output_trace_code_graph_{graph_id}.ir` with its
    # two type lines, its full name `: (Default/.../Conv2D-op107)` and its source line; the statement's attribute
    # groups (wrapped by the page) left out
    node = parse_node("\n".join([
        "  %24(equivoutput) = Conv2D(%23, %21) {instance name: conv2d}",
        "       : (<Tensor[Float32]x[const vector][32, 128, 13, 13]>, <Tensor[Float16]x[const vector][192, 128, 3, 3]>)"
        " -> (<Tensor[Float16]x[const vector][32, 192, 13, 13]>)",
        "       : (<Float16xNC1HWC0[const vector][32, 8, 13, 13, 16]>, <Float16xFracZ[const vector][72, 12, 16, 16]>)"
        " -> (<Float16xNC1HWC0[const vector][32, 12, 13, 13, 16]>)",
        "       : (Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op107)",
        "       # In file {Absolute path of model_zoo}/official/cv/alexnet/src/alexnet.py(58)/        x = self.conv3(x)/"]))
    assert node.scope == "Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op107"
    assert len(node.type_lines) == 2 and node.notes == ()
    assert [t.shape for t in node.input_types] == [(32, 128, 13, 13), (192, 128, 3, 3)]
    assert node.output_type.shape == (32, 192, 13, 13)
    assert [(r.line, r.code) for r in node.source_refs] == [(58, "x = self.conv3(x)")]


def test_a_primitive_printing_its_attributes_in_brackets_applies_it() -> None:
    # 2.1 (ms21_analyze_fail.ir line 31): `  %6([CNode]9) = Depend[side_effect_propagate: I64(1)](None, %5)` applies
    # Depend; `call @sub.19`, `@add.20`, `@func.21`, `@mul.22` (lines 10, 14, 20, 24) call graphs
    dump = irtool.load(f"{PUBLISHED}/ms21_analyze_fail.ir")
    assert dump.op_histogram() == Counter({"(call)": 4, "StopGradient": 1, "Depend": 1, "Return": 1})
    depend = next(n for n in dump.nodes() if n.line == 31)
    assert (depend.op, [i.text for i in depend.inputs]) == ("Depend", ["None", "%5"])
    # a callee holding a value is still called as one (control_flow_cpu: `Parameter_9[@FuncUnion(@a, @b)](...)`)
    assert parse_node("  %6(x) = Parameter_9[@FuncUnion(@a, @b)](%1)").op == "(call)"


@pytest.mark.parametrize("rel", ["mlp_cpu_ms290/rank_0/20_validate_0075.ir.xz",
                                 "mlp_cpu_ms280/rank_0/20_validate_0074.ir.xz"])
def test_mindspore_2_8_and_2_9_read_as_2_7(rel: str) -> None:
    # mlp_cpu compiled with MindSpore 2.9.0 and 2.8.0: a `jit config` block, `Total number of cnodes: 67`,
    # `# Total params: 24`; the same operators as 2.7.1's validate but one UpdateState fewer
    # (`grep -c '= UpdateState('`: 12 against 13 in mlp_cpu/rank_0/19_validate_0072.ir)
    new = irtool.load(fixture(rel))
    old = irtool.load(fixture("mlp_cpu/rank_0/19_validate_0072.ir"))
    assert new.warnings == [] and new.jit_config["exc_mode"] == "auto"
    assert new.counts == {"subgraphs": 1, "params": 24, "cnodes": 67} == {k: new.declared[k] for k in new.counts}
    assert new.op_histogram() == old.op_histogram() - Counter({"UpdateState": 1})


def test_a_pipeline_compiled_with_mindspore_2_9_is_the_same_job() -> None:
    # pipeline_2stage_2p_ms290: make.py of pipeline_2stage_2p (2 stages, one device each, micro_size 4) compiled with
    # MindSpore 2.9.0; each rank's validate prints 4 Send and 4 Receive (`grep -c '= Send('`), each one micro batch of
    # activations: 32 / 4 = 8 rows x 64 Float32 = 2,048 B
    new, old = (json.loads(run_cli("summarize", "--format", "json", fixture(d)).stdout)
                for d in ("pipeline_2stage_2p_ms290", "pipeline_2stage_2p"))
    assert [(r["rank"], r["stage"], r["comm_totals"]["total"]) for r in new["ranks"]] == [
        (0, 0, {"count": 8, "runs": 8, "bytes": 8 * 2048, "bytes_unknown": 0}),
        (1, 1, {"count": 8, "runs": 8, "bytes": 8 * 2048, "bytes_unknown": 0})]
    fields = ("world_size", "pipeline_stages", "dp", "mp", "micro_batches", "optimizer", "gradient_accumulation")
    assert {k: new["job"][k]["value"] for k in fields} == {k: old["job"][k]["value"] for k in fields} == {
        "world_size": 2, "pipeline_stages": 2, "dp": 1, "mp": 1, "micro_batches": 4, "optimizer": "Momentum",
        "gradient_accumulation": True}


def test_the_user_line_of_a_node_in_every_source_form() -> None:
    # the one reading of `# In file` lines (ir.source_ref) serves the analysis too: 2.0 `kldtest.py:20/...` (line 35 of
    # ms20_sorted.ir), 1.x `train.py(34)/...` (line 15 of ms110_default.ir)
    d20, d110 = irtool.load(f"{PUBLISHED}/ms20_sorted.ir"), irtool.load(f"{PUBLISHED}/ms110_default.ir")
    assert user_source(next(n for n in d20.nodes() if n.line == 32)) == "kldtest.py:20 a = self.sub(x, 1)"
    assert user_source(d110.subgraphs[0].nodes[0]) == "train.py:34 a = self.sub(x, 1)"


def test_mindformers_1_9_on_mindspore_2_9_compiles_the_same_job() -> None:
    # mindformers_llama_dp2mp2pp2's make.py compiled with MindFormers 1.9.0 on MindSpore 2.9.0 (fixture _mf190): each
    # rank's validate prints 4 Send and 4 Receive (`grep -c '= Send('`), 19 / 21 AllReduce, 15 / 17 AllGather, 15 / 16
    # ReduceScatter (ranks 0 / 4), as the 1.7.0 compile does; the job and every category's bytes are the same
    new, old = (json.loads(run_cli("summarize", "--format", "json", fixture(d)).stdout)
                for d in ("mindformers_llama_dp2mp2pp2_mf190", "mindformers_llama_dp2mp2pp2"))
    fields = ("world_size", "pipeline_stages", "dp", "mp", "micro_batches", "optimizer", "optimizer_shard",
              "gradient_accumulation", "recompute_layers")
    assert {k: new["job"][k]["value"] for k in fields} == {k: old["job"][k]["value"] for k in fields}
    assert (new["job"]["dp"]["value"], new["job"]["mp"]["value"], new["job"]["pipeline_stages"]["value"]) == (2, 2, 2)
    for a, b in zip(new["ranks"], old["ranks"]):
        assert (a["rank"], a["stage"], a["comm_totals"]) == (b["rank"], b["stage"], b["comm_totals"])
    ops = [{k: v for k, v in r["comm_totals"]["by_op"].items() if k in ("Send", "Receive")} for r in new["ranks"]]
    assert [{k: v["count"] for k, v in o.items()} for o in ops] == [{"Send": 4, "Receive": 4}] * 2
