"""Runs per step (the `runs` pass, irtool/parallel/runs.py): how many times a node runs in one
training step, and the per-step figures that read it (communication bytes in summarize and diff,
activations kept per lazy-inline call). Every number is counted from the dump text by hand (line
numbers given), or is the same job compiled another way."""
from __future__ import annotations

import json

from click.testing import CliRunner
from conftest import fixture

from irtool import load
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.memory import compute_memory

LLAMA = "mindformers_llama_dp2mp2pp2/rank_0/19_validate_0089.ir.xz"
LAZY = "gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz"


def _at(path: str, line: int):
    """The node printed at `line` of a fixture, and its fact table."""
    t = analyze(load(fixture(path))).table
    return next(n for n in t.dump.nodes() if n.line == line), t


def test_lazy_inline_forward_and_bprop_graphs_run_once_per_micro_batch() -> None:
    # mindformers_llama_dp2mp2pp2 rank 0 validate: the forward graph @3001_..._▸1234 (line 3248) is called by
    # four `call @3001_...` nodes of the entry graph (lines 239, 277, 336, 395: micro 0-3), its bprop graph
    # @3002_..._◂1234 (line 8060) by four `%N[@Partial(@3002_...)]` closures (lines 310, 369, 428, 449)
    node, t = _at(LLAMA, 8346)  # a MatMul of the bprop graph
    runs = t.get("graph_runs")
    assert runs[node.graph].count == 4 and "4 calls" in runs[node.graph].how
    assert t("runs", node) == 4
    entry, _ = _at(LLAMA, 239)
    assert t("runs", entry) == 1 and runs[entry.graph].how.startswith("the entry graph")


def test_interleaved_chunk_graphs_run_once_per_micro_batch() -> None:
    # pipeline_interleaved_4stage_8p rank 0 validate: chunk 1's Net graph @1011_..._▸444 is called at lines 549,
    # 567, 585, 603, 780, 831, 882, 933 (micro 0-7, `chunk: I64(1)`); it calls FFNBlock @1013_..._▸446 once
    # (line 356): 8 x 1 runs of FFNBlock's nodes (its first node, line 64)
    path = "pipeline_interleaved_4stage_8p/rank_0/19_validate_0087.ir.xz"
    node, t = _at(path, 64)
    assert node.graph.startswith("1013_1004_639_▸446") and t("runs", node) == 8
    call, _ = _at(path, 356)
    assert t("runs", call) == 8 and t("chunk", call) is None


def test_a_recomputed_copy_runs_as_its_graph() -> None:
    # the llama recomputes every layer: the `duplicated` MatMul at line 8346 sits in the bprop graph, called once
    # per micro batch (4), and runs 4 times, not once, and not once more for being a copy
    node, t = _at(LLAMA, 8346)
    assert t("copy", node) and t("phase", node) == "recompute" and t("runs", node) == 4
    # the plain (not lazy-inline) gpt_small prints each micro batch's copy apart: every node runs once
    t = analyze(load(fixture("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz"))).table
    copies = t.get("copies")
    assert copies and {t("runs", n) for n in copies} == {1}


def test_kept_tensors_of_one_lazy_inline_call_from_its_partial() -> None:
    # line 8039 of the forward graph binds the bprop graph: `Partial(@3002_..., ..., %5, %9, %20, ..., %12, ...,
    # %37, %45, %110)`; the seven forward outputs it holds (lines 3276-5767): Int32 (1, 512) 2,048 B, Float32
    # (1, 512, 1) 2,048, Float16 (1, 1, 512, 512) 524,288, Float16 (1, 512, 512) 524,288, Float32 (1, 1, 512, 64)
    # 131,072 twice, Float16 (1, 512, 512) 524,288. One call per micro batch: one micro batch keeps them once
    acts = compute_memory(analyze(load(fixture(LLAMA))).table, 4).activations
    assert acts is not None
    assert acts.per_micro.total == 2048 + 2048 + 524288 + 524288 + 131072 + 131072 + 524288 == 1_839_104
    assert acts.per_micro.known == 7 and acts.per_micro.unknown == 0


def _summary_total(path: str) -> dict:
    r = CliRunner().invoke(main, ["summarize", fixture(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["comm_totals"]["total"]


def test_lazy_inline_per_step_bytes_equal_the_plain_compile() -> None:
    # the same job compiled plainly prints each micro batch's nodes apart (60 nodes, each run once); lazy inline
    # prints 49, the layers' forward and bprop graphs called twice (2 micro batches): per step the same 60 runs
    plain = _summary_total("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz")
    lazy = _summary_total(LAZY)
    assert plain["count"] == plain["runs"] == 60 and lazy["count"] == 49
    assert lazy["runs"] == 60 and lazy["bytes"] == plain["bytes"] == 2_205_184


def test_summarize_and_diff_give_the_same_per_step_bytes() -> None:
    # one question, one answer: the lazy-inline rank's communication per step in summarize and in diff's
    # logical comparison (against 8 micro batches, which grows: 2,205,184 -> 3,319,296 B)
    lazy = _summary_total(LAZY)
    r = CliRunner().invoke(main, ["diff", fixture(LAZY), fixture("gpt_small_dp2mp2pp2_m8/rank_0/19_validate_0078.ir.xz"),
                                  "--format", "json"])
    logical = json.loads(r.stdout)["logical"]
    per_stage = [sum(c["bytes"] for c in logical[side]["stages"][0]["comm_by_category"].values())
                 for side in ("old", "new")]
    assert per_stage[0] == lazy["bytes"] == 2_205_184
    assert per_stage[1] == _summary_total("gpt_small_dp2mp2pp2_m8/rank_0/19_validate_0078.ir.xz")["bytes"] > per_stage[0]
    text = CliRunner().invoke(main, ["summarize", fixture(LAZY)]).stdout
    assert "49 nodes run 60 times a step, 2,205,184 B" in text


M8 = "mindformers_llama_dp2mp2pp2_m8/rank_0/19_validate_0089.ir.xz"


def test_more_micro_batches_on_lazy_inline_move_more_per_step() -> None:
    # the same MindFormers Llama with 8 micro batches instead of 4 (MFL_MICRO=8): the forward graph @3314_..._▸1335
    # is called 8 times (lines 239, 277, 336, 395, 454, 513, 572, 631), its bprop graph by 8 closures. Its 12
    # tensor-parallel AllReduces (lines 3687-18646: two Float32 (1, 512, 512) of 1,048,576 B and ten Float16
    # (512, 512) of 524,288 B, 7,340,032 B a call) move 8 x 7,340,032 B a step, twice the 4-micro-batch job's; the
    # optimizer's 30 gathers and reduce-scatters of the entry graph run once either way
    four, eight = (_summary_total(p) for p in (LLAMA, M8))
    cats = [json.loads(CliRunner().invoke(main, ["summarize", fixture(p), "--format", "json"]).stdout)["comm_totals"]
            ["by_category"] for p in (LLAMA, M8)]
    assert cats[0]["operator-forward"]["bytes"] == 4 * 7_340_032 and cats[1]["operator-forward"]["bytes"] == 8 * 7_340_032
    assert cats[0]["operator-forward"]["count"] == cats[1]["operator-forward"]["count"] == 12
    assert cats[0]["optimizer-parallel"]["bytes"] == cats[1]["optimizer-parallel"]["bytes"] == 26_083_328
    assert eight["bytes"] > four["bytes"]
    # and diff says the same per-step bytes as summarize on both sides
    r = CliRunner().invoke(main, ["diff", fixture(LLAMA), fixture(M8), "--format", "json"])
    logical = json.loads(r.stdout)["logical"]
    per_stage = [sum(c["bytes"] for c in logical[side]["stages"][0]["comm_by_category"].values())
                 for side in ("old", "new")]
    assert per_stage == [four["bytes"], eight["bytes"]]


def test_a_loop_runs_an_unknown_number_of_times_and_a_branch_at_most_once() -> None:
    # control_flow_cpu validate: the while loop's header @471_..._↵ (line 67) is called by the entry (line 797) and by
    # its body @473_..._↻ (line 266), which the header's Switch picks (line 101): a call cycle, whose trip count
    # (`n_iter`) is a runtime value. Its graphs (lines 67-652) hold 18 arithmetic operators (`awk 'NR>=67 &&
    # NR<653'`: MatMul 6, AddN 3, Add 2, BiasAdd 2, BiasAddGrad 2, Less, Tanh, TanhGrad): their FLOPs per step are
    # unknown, never counted once. The `if` at line 769 picks @477_..._✓ or @483_..._✗: each counted as taken
    t = analyze(load(fixture("control_flow_cpu/rank_0/19_validate_0075.ir.xz"))).table
    runs = t.get("graph_runs")
    header = next(g for g in runs if g.startswith("471_"))
    body = next(g for g in runs if g.startswith("473_"))
    assert runs[header].count is None and runs[body].count is None
    assert "cycle" in runs[body].how or "cycle" in runs[header].how
    taken = next(g for g in runs if g.startswith("477_"))
    assert (runs[taken].count, runs[taken].branch) == (1, True)
    from irtool.parallel.cost import compute_cost
    cost = compute_cost(t)
    assert cost.unknown_runs == 18 and sum(cost.unknown.values()) == 18
    assert dict(cost.unknown) == {"MatMul": 6, "AddN": 3, "Add": 2, "BiasAdd": 2, "BiasAddGrad": 2, "Less": 1,
                                  "Tanh": 1, "TanhGrad": 1}
    assert cost.branch_ops > 0
    # MindSpore names a bprop graph `◂`, a forward one `▸`: each graph but the entry (@470_..._TrainOneStepCell) has the
    # phase its name says. The loop's bprops call one another: ◂24 (line 607) calls ◂41 or ◂25 (line 608,
    # `Parameter_1129[@FuncUnion(...)]`), ◂25 calls ◂24 back (line 314, `Parameter_1126[@@...◂24...]`); the backward
    # enters ◂24 at line 937 (`%22[@@...◂24...]`): a call from inside the recursion says nothing of its phase
    phases = t.get("graph_phases")
    assert {g.name: phases.get(g.name) for g in t.dump.subgraphs if g.name != t.dump.entry} == {
        g.name: "backward" if "◂" in g.name else "forward" for g in t.dump.subgraphs if g.name != t.dump.entry}
