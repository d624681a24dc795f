"""The parser against every bundled real dump: counts, references, warnings, both print orders; and every
communication node of each classified."""
from __future__ import annotations

import json
import lzma
import re
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
from conftest import LARGE, LARGE_GROUP, all_dumps, fixture, large_dump
from hostile import run_cli

import irtool
from irtool.parallel import CATEGORIES
from irtool.parallel.failure import strategy_misfits
from irtool.report.summary import summarize

DUMPS = all_dumps()
# gpt_large_perf's passes: counts and graph only; LARGE (68 MB raw) parsed once per test process (conftest)


def _loaded(path):
    dump = irtool.load(path)
    return dump, irtool.analyze(dump)


def test_every_fixture_is_bundled():
    # 18 shared scenarios with 191 dumps (the shared folder's 192 less gpt_large's 11.6 MB
    # pipeline_split, which the benchmark reads from ../shared), and 15 compiled for this project
    # with 153 dumps (their manifest.json files list them; pipeline_unequal_8p: 4 ranks x 2 passes; issue 18
    # added dynamic_shape_pp_4p 16, inference_pp_4p_m2 8, inference_pp_8p_m4 16, pipeline_folded_8p 16,
    # pipeline_segments_8p ranks 1-3, 5-7 12; issue 25 pipeline_2stage_2p 4). Issues 25-27 added 16 scenarios
    # with 144 dumps (manifest.json of each): pipeline_4stage_lazy_8p 24, pipeline_interleaved_4stage_8p 32,
    # pipeline_unequal_sgd_8p 8, pipeline_even_adamw_8p 8, gpt_small_dp1mp4pp2 8, gpt_small_dp2mp2pp2_m8 8,
    # two_d_tp_8p 8, lazy_adam_8p 6, lazy_adam_cpu 1, order_list_cpu 1, user_group_8p 6, mindformers_llama_pp4 12,
    # mindformers_llama_sp_fa_dp2mp2pp2 4, mindformers_llama_dp1mp4pp2 4 (ranks 0, 4 x validate, step_parallel_end);
    # copied from the shared fixtures: mindformers_llama_dp2mp2pp2 2, mindformers_moe_dp2mp2pp2_ep2 12; then
    # pipeline_3stage_24p_m5 6 (ranks 0, 8, 16 x validate, step_parallel_end). Issue 28 added semi_auto_8p_changed 1
    # (rank 0's validate). Issue 36 added the dry runs: dryrun_llama_dp2mp2pp2 6 (ranks 0, 4 x validate, the kernel
    # graphs graph_build_0 and hwopt_d_end_acl_graph_final_0), dryrun_llama_recompute_off 4 (ranks 0, 4 x validate,
    # graph_build_0), dryrun_mlp_8p 2 (rank 0), dryrun_llama_micro8 4, dryrun_llama_dp1mp4pp2 4; and
    # mindformers_llama_dp2mp2pp2_m8 1 (rank 0's validate); then dryrun_llama_pp4 8 (ranks 0, 2, 4, 6),
    # dryrun_llama_moe_ep2 4, dryrun_llama_fa 4. Issue 38 added mindformers_llama_pp4_uneven 4 and
    # mindformers_llama_pp4_interleaved 4 (ranks 0, 2, 4, 6 x validate). Issue 37 added mindformers_llama_dp2mp2pp2_l8,
    # _h1024 and _b2, 2 each (ranks 0, 4 x validate), ut_pipeline_split_32p and ut_pipeline_split_shared_32p 2 each
    # (ranks 0, 16 x validate).
    # Issue 41 added two compile failures, one analyze_fail.ir each (analyze_fail_matmul, analyze_fail_pipeline_type),
    # two compiles with MindSpore 2.9.0 (mlp_cpu_ms290 4, pipeline_2stage_2p_ms290 4) and one with 2.8.0 (mlp_cpu_ms280
    # 2); a strategy that fails the parallel pass (strategy_misfit_8p 1); MindFormers 1.9.0 on 2.9.0
    # (mindformers_llama_dp2mp2pp2_mf190 2). Issue 39 added the dry runs dryrun_llama_dp4mp1pp2 4,
    # dryrun_llama_dp2mp2pp2_l8 4, dryrun_llama_opt_shard_off 4 and dryrun_llama_dp2mp2pp2_b2 4 (ranks 0, 4 x
    # validate, graph_build_0); then dryrun_llama_dp2mp2pp2_l6 4, dryrun_llama_dp1mp4pp2_b2 4 and
    # dryrun_llama_dp4mp2pp1 2 (rank 0 x validate, graph_build_0). Issue 37 then added the MindFormers DeepSeek-V3
    # compiles mindformers_deepseek3_dp2pp4 (ranks 0, 2) and mindformers_deepseek3_sp_dp2mp2pp2 (ranks 0, 4), 2 each,
    # and pipeline_4stage_32p_loss 4 (ranks 0, 8, 16, 24 x validate); then mindformers_llama_pp2_infer_kv 2 (ranks 0, 2 x
    # validate). Issue 39 then added dryrun_llama_dp2mp1pp4_m6 8 (ranks 0, 2, 4, 6 x validate, graph_build_0),
    # dryrun_llama_dp2mp2pp2_rc1 4 and dryrun_llama_dp1mp4pp2_m8_rc1 4 (ranks 0, 4), dryrun_llama_dp1mp2pp4_l8 8 (ranks
    # 0, 2, 4, 6). Issue 37 then added a compile that fails before the pipeline split, zbv_stage_order_fail_8p 1, and
    # optimizer level 2 under gradient accumulation without a pipeline, grad_accu_opt_level2_8p 1, and the GPipe
    # scheduler of the interleaved pipeline, pipeline_interleaved_gpipe_8p 1, and the sharded accumulation under a
    # pipeline, mindformers_llama_dp2mp2pp2_gas 1, and the inference result broadcast, inference_pp_4p_m2_broadcast 2.
    assert len(DUMPS) == 191 + 153 + 144 + 6 + 1 + 6 + 14 + 1 + 8 + 4 + 4 + 4 + 4 + 6 + 2 + 8 + 2 + 1 + 2 + 4 + 4 + 4 \
        + 2 + 2 + 4 + 4 + 4 + 2 + 2 + 2 + 4 + 2 + 8 + 4 + 4 + 8 + 1 + 1 + 1 + 1 + 2
    assert len({p.relative_to(p.parents[2]).parts[0] for p in DUMPS}) == \
        18 + 15 + 16 + 1 + 1 + 1 + 4 + 1 + 3 + 2 + 3 + 2 + 2 + 1 + 1 + 1 + 3 + 2 + 1 + 3 + 3 + 1 + 4 + 1 + 1 + 1 + 1 + 1


def _comm_lines(path: Path) -> int:
    """Communication operators of a dump by a plain regex over its text, independent of the parser."""
    opener = lzma.open if path.name.endswith(".xz") else open
    with opener(path, "rt", errors="replace") as fh:
        # after a line break, not at `^` with re.M: the regex engine then skips to each `\n` (ten times faster); a
        # dump's first line is its header, never a node
        ops = re.findall(r"\n  %[^ ]+ = (?:PrimFunc_)?(\w+)\(", fh.read())
    return sum(1 for op in ops if op in irtool.parallel.COMM_OPS)


# `other` only where docs/parallel.md §4 allows it: pre-step_parallel_end Send/Receive of the pipeline_split/
# bootstrap files never lack pipeline attrs; the collectives a MindFormers model writes itself (the loss-scale
# overflow flag, `{instance name: allreduce}` on the world group; the gradient clip's global norm,
# `PARALLEL_GLOBALNORM_*`) and MindSpore's `recompute_slice_allgather` are the only ones (and user_group_8p's
# collectives written in the network, no instance name)
OTHER = {"allreduce", "PARALLEL_GLOBALNORM_IN_STAGES", "PARALLEL_GLOBALNORM_BETWEEN_STAGES"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=LARGE_GROUP) if str(p).endswith(LARGE) else p for p in DUMPS],
                         ids=lambda p: "/".join(p.parts[-3:]))
def test_every_dump_reads_resolves_and_classifies(path: Path) -> None:
    """Each bundled dump read once for the parser's and the analysis' checks (a dump is most of a test's time)."""
    large = "gpt_large_perf" in str(path)
    dump = large_dump() if str(path).endswith(LARGE) else irtool.load(path)
    declared = dump.declared
    # Sorted-order dumps print no `Node counting information`; every other dump declares all three. An
    # analyze_fail.ir (issue 41) declares `# Total subgraphs: 0` above the graphs of its stack and no node counts.
    assert {"subgraphs", "params"} <= declared.keys()
    if dump.failure is not None:
        assert declared == {"subgraphs": 0, "params": dump.counts["params"]} and dump.failure.failing is not None
        declared = {"params": declared["params"]}
    elif not dump.sorted_order:
        assert "cnodes" in declared
    for key in ("subgraphs", "params", "cnodes"):
        if key in declared:
            assert dump.counts[key] == declared[key], key
    if large:  # 32-68 MB each, gpt_small_dp2mp2pp2 scaled up (make.py), whose passes are checked deeply: references
        assert irtool.build_graph(dump).graph["unresolved"] == []
    else:  # every attribute and type parsed, and every reference resolved as the graph resolves it
        said = irtool.check(dump)
        if dump.failure is not None:  # analyze_fail.ir prints the graphs of the stack, not the branches they name
            said = [w for w in said if not w.message.startswith("unresolved reference @")]
        assert said == []
    assert dump.warnings == []
    if large:  # communication counted by hand in test_parallel.test_gpt_large_perf
        return
    facts = irtool.analyze(dump)
    # every bundled compile but strategy_misfit_8p's succeeded: no strategy may split a shape it does not divide
    assert strategy_misfits(dump, facts.kind) == [] or "strategy_misfit_8p" in str(path)
    comms = facts.comm
    assert all(c.category in CATEGORIES and c.phase for c in comms)
    allowed = OTHER | ({None} if "user_group_8p" in str(path) else set())
    assert [c for c in comms if c.category == "other" and c.instance not in allowed] == []
    # same nodes as a line-level grep of the op names: those that move data, and the gathers that move none (§2 R2)
    assert len(comms) + len(facts.no_op_gathers) == _comm_lines(path)


def test_a_reference_that_names_nothing_is_said_where_it_is(tmp_path: Path) -> None:
    # mlp_cpu validate with two references changed to name nothing: line 72's MatMul reads `%para99_inputs0` (the
    # dump has 24 parameters) and line 146's MatMul `%500` (its nodes are %0..%66)
    lines = Path(fixture("mlp_cpu/rank_0/19_validate_0072.ir")).read_text(encoding="utf-8").split("\n")
    assert lines[71].startswith("  %1(equiv_9_x) = PrimFunc_MatMul(%para1_inputs0, %0,")
    assert lines[145].startswith("  %6(equiv_7_x) = PrimFunc_MatMul(%4, %5,")
    lines[71] = lines[71].replace("%para1_inputs0", "%para99_inputs0")
    lines[145] = lines[145].replace("(%4, %5,", "(%4, %500,")
    path = tmp_path / "19_validate_0072.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    dump = irtool.load(path)
    said = [(w.line, w.message) for w in irtool.check(dump)]
    assert said == [(72, "unresolved reference %para99_inputs0 in %1"), (146, "unresolved reference %500 in %6")]
    graph = irtool.build_graph(dump)  # the graph resolves as `check` does: the two inputs are not edges
    uids = [uid for uid, _ in graph.graph["unresolved"]]
    assert [(graph.nodes[u]["line"], ref) for u, ref in graph.graph["unresolved"]] == [
        (72, "%para99_inputs0"), (146, "%500")]
    assert [graph.in_degree(u) for u in uids] == [1, 1]  # %0 and %4 only


def test_return_counts_as_a_cnode():
    # mlp_cpu validate: one subgraph, nodes %0..%66 plus its Return = 68, as the header declares.
    dump = irtool.load(fixture("mlp_cpu/rank_0/19_validate_0072.ir"))
    (graph,) = dump.subgraphs
    assert [n.id for n in graph.nodes[:-1]] == list(range(67))
    assert graph.nodes[-1].op == "Return"
    assert dump.counts == {"subgraphs": 1, "params": 24, "cnodes": 68} == {
        k: dump.declared[k] for k in ("subgraphs", "params", "cnodes")}


def test_node_fields_of_a_sharded_matmul():
    # semi_auto_8p rank 0 step_parallel_end, the `qkv` MatMul (line 6 of the node block):
    #   %6(qkv) = PrimFunc_MatMul(%3, %5, Bool(0), Bool(0)) {instance name: qkv}
    #   primitive_attrs: {in_strategy: ((2, 1), (1, 4)), mirror_user_id: "body.w_in"} ...
    dump = irtool.load(fixture("semi_auto_8p/rank_0/step_parallel_end_0019.ir.xz"))
    node = next(n for n in dump.nodes() if n.name == "qkv")
    assert node.op == "MatMul" and node.callee == "PrimFunc_MatMul"
    assert [i.text for i in node.inputs] == ["%3", "%5", "Bool(0)", "Bool(0)"]
    assert node.inputs[0].ref == irtool.Ref("node", "%3")
    assert node.instance_name == "qkv"
    assert node.primitive_attrs["in_strategy"] == ((2, 1), (1, 4))
    assert node.primitive_attrs["mirror_user_id"] == "body.w_in"
    assert node.attrs["extra"]["in_strategy"] == ((2, 1), (1, 4))
    assert node.primal_attrs["origin_input_shapes"] == ((512, 64), (64, 192))
    # passes around step_parallel print `# Scope:` (the cell), later ones `# Fullname with scope:`
    assert node.scope == "Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP"


def test_types_and_shapes():
    dump = irtool.load(fixture("mlp_cpu/rank_0/19_validate_0072.ir"))
    matmul = next(n for n in dump.nodes() if n.op == "MatMul")
    assert [t.shape for t in matmul.input_types[:2]] == [(16, 32), (64, 32)]
    assert matmul.output_type.dtype == "Float32" and matmul.output_type.shape == (16, 64)
    weight = dump.params[2]
    assert weight.name == "fc1.weight" and weight.type.shape == (64, 32) and weight.has_default


def test_backend_graph_has_several_type_lines():
    dump = irtool.load(fixture("cnn_cpu/rank_0/graph_build_0_0090.ir.xz"))
    conv = next(n for n in dump.nodes() if n.op == "Conv2D")
    assert len(conv.type_lines) == 3
    assert conv.output_type.shape == (8, 6, 28, 28)


def test_control_flow_calls_and_free_variables():
    dump = irtool.load(fixture("control_flow_cpu/rank_0/19_validate_0075.ir.xz"))
    hist = dump.op_histogram()
    # 15 subgraphs; `call @g`, `%3[@FuncUnion(..)]()` and `Parameter_N[@..](..)` are calls.
    assert dump.counts["subgraphs"] == 15
    assert hist["(call)"] == 10 and hist["Switch"] > 0
    g = irtool.build_graph(dump)
    assert any(d["kind"] == "call" for _, _, d in g.edges(data=True))


def test_sorted_and_default_order_give_the_same_graph():
    # Only passes that print the same nodes in both modes: in mlp_cpu's 11_pipeline_split the
    # sorted printer writes 512 node lines against the default's 465 (its header agrees with
    # neither count being wrong: each matches its own file), so that pass is not comparable.
    for rel in ("rank_0/19_validate_0072.ir", "rank_0/graph_build_0_0090.ir"):
        a = irtool.load(fixture(f"mlp_cpu/{rel}"))
        b = irtool.load(fixture(f"mlp_cpu_sorted/{rel}.xz"))
        # the backend printer (graph_build) ignores the sort mode
        assert b.sorted_order == ("graph_build" not in rel) and not a.sorted_order
        assert a.op_histogram() == b.op_histogram()
        ga, gb = irtool.build_graph(a), irtool.build_graph(b)
        assert ga.number_of_nodes() == gb.number_of_nodes() and ga.number_of_edges() == gb.number_of_edges()

        def same(x, y):
            return x["kind"] == y["kind"] and x.get("op") == y.get("op")

        def same_edges(x, y):
            return Counter((d["kind"], d["index"]) for d in x.values()) == Counter(
                (d["kind"], d["index"]) for d in y.values())

        if ga.number_of_nodes() < 400:  # isomorphism search is exponential in the worst case
            assert nx.is_isomorphic(ga, gb, node_match=same, edge_match=same_edges)


def test_summary_json_schema_fields():
    dump = irtool.load(fixture("mlp_cpu/rank_0/19_validate_0072.ir"))
    s = summarize(dump, irtool.analyze(dump))
    assert s["schema"] == "irtool.summary/3"
    assert s["counts"] == {"subgraphs": 1, "params": 24, "cnodes": 68}
    assert s["header"]["cnodes"] == 68 and s["header"]["nodes"] == 160
    # mlp_cpu validate histogram, counted by hand with grep: 13 UpdateState, 8 MatMul, 1 Return
    assert s["ops"]["UpdateState"] == 13 and s["ops"]["MatMul"] == 8 and s["ops"]["Return"] == 1
    assert sum(s["ops"].values()) == 68
    assert all(not k.startswith("PrimFunc_") for k in s["ops"])


def test_cli_summarize_json_on_compressed_dump():
    out = run_cli("summarize", "--format", "json", fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz"))
    assert out.returncode == 0
    data = json.loads(out.stdout)
    assert data["counts"] == {k: data["header"][k] for k in ("subgraphs", "params", "cnodes")}
    assert out.stderr == ""  # not a terminal: no progress output


def test_one_element_tuples_stay_tuples():
    # MindIR prints a 1-tuple as `(2)`: semi_auto_8p's Mul has `in_strategy: ((4, 2), (2))`.
    dump = irtool.load(fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz"))
    muls = [s.in_strategy for s in irtool.analyze(dump).strategies if s.op == "Mul"]
    assert ((4, 2), (2,)) in muls
    uid = next(s.node for s in irtool.analyze(dump).strategies if s.in_strategy == ((4, 2), (2,)))
    node = next(n for n in dump.nodes() if n.uid == uid)
    assert node.attr("in_strategy") == ((4, 2), (2,))  # the full attribute parse agrees


def test_gzip_dump_reads_like_the_plain_one(tmp_path):
    import gzip

    plain = fixture("mlp_cpu/rank_0/19_validate_0072.ir")
    packed = tmp_path / "19_validate_0072.ir.gz"
    with open(plain, "rb") as src, gzip.open(packed, "wb") as dst:
        dst.write(src.read())
    a, b = summarize(*_loaded(plain)), summarize(*_loaded(packed))
    assert a["counts"] == b["counts"] and a["ops"] == b["ops"] and a["bytes"] == b["bytes"] == 108262


def test_bytes_are_bytes_not_characters():
    # control_flow_cpu validate names graphs with `▸`, `◂`, `✓`, `✗`, `↓` (3 bytes each in UTF-8) and `ф` (2):
    # `xz -dc FILE | wc -c` -> 241151 bytes, `wc -m` -> 240624 characters
    assert summarize(*_loaded(fixture("control_flow_cpu/rank_0/19_validate_0075.ir.xz")))["bytes"] == 241151


@pytest.mark.parametrize("rel", ["mlp_cpu/rank_0/19_validate_0072.ir", "control_flow_cpu/rank_0/19_validate_0075.ir.xz",
                                 "control_flow_cpu/rank_0/11_pipeline_split_0012.ir.xz",
                                 "semi_auto_8p/rank_0/step_parallel_end_0019.ir.xz",
                                 "layout_8p/rank_0/19_validate_0078.ir.xz", "cnn_cpu/rank_0/graph_build_0_0090.ir.xz",
                                 # statements over several lines (numpy-wrapped constants, a string with a line break)
                                 "const_wrap_cpu/rank_0/11_pipeline_split_0012.ir.xz",
                                 "const_wrap_cpu/rank_0/19_validate_0072.ir.xz",
                                 "micro_interleaved_8p/rank_0/opt_pass_2_opt_a_0021.ir.xz",
                                 # a callee with its signature set (LazyAdam's update); wrapped order entries
                                 "lazy_adam_cpu/rank_0/01_type_inference_0001.ir.xz",
                                 "order_list_cpu/rank_0/01_type_inference_0001.ir.xz"])
def test_full_statement_rule_agrees_with_the_fast_path(rel):
    # The grammar's `node_stmt` rule parses every statement whole; its argument count must be
    # what the fast path (`Node.inputs`, a regex over the grammar's terminals) found.
    from irtool.ir.grammar import line_parser

    parser = line_parser()
    for node in irtool.load(fixture(rel)).nodes():
        tree = parser.parse(node.text, start="node_stmt")
        args = next((c for c in tree.children if getattr(c, "data", None) == "args"), None)
        assert (len(args.children) if args is not None else 0) == len(node.inputs), node
