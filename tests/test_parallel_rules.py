r"""Rules of issue 10 ("every figure irtool prints survives a reviewer with grep") on the real fixtures.

Each test states a rule about the format (docs/parallel.md) and checks it on real dumps; the numbers
were worked out from the dump text with xzcat + grep/sed (command or line in the comment).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, fixture

import irtool
from irtool.cli import main
from irtool.diff.facts import comm_facts
from irtool.parallel import CommNode, analyze, type_bytes
from irtool.parallel.rules import PIPE_KEYS, classify
from irtool.parallel.stage import stage_of
from irtool.parallel.traffic import node_wire_bytes
from irtool.report.summary import summarize

SEMI_R0 = "semi_auto_8p/rank_0/19_validate_0078.ir.xz"


def _by_line(rel: str) -> dict[int, CommNode]:
    return {c.line: c for c in analyze(irtool.load(fixture(rel))).comm}


# --- 2. serves of a forward redistribution: the first consumer outside the chain, with its strategy

def test_forward_redistribution_serves_the_consumer_after_the_chain() -> None:
    comm = _by_line(SEMI_R0)
    # xzcat F | sed -n 101,146p: line 104 `%5 = AllGather(%4) {instance name: redistribution_op_...AllGather_}`
    # -> %6 `PrimFunc_Split {instance name: redistribution_op_...Split_}` -> %7..%10 TupleGetItem -> %11 MakeTuple
    # -> %12 Concat -> %13 Reshape -> %14 StridedSlice (all `redistribution_op_`) -> line 146
    # `%15 = PrimFunc_Split(%14, I64(1), I64(3)) {instance name: split} ... {in_strategy: ((8, 1))}`
    c = comm[104]
    assert (c.serves.rsplit("/", 1)[1], c.serves_op, c.serves_strategy) == ("%15", "Split", ((8, 1),))
    # line 437 `%55 = AllGather` -> Split/TupleGetItem/MakeTuple/Concat -> line 440.. `%61 = AllGather` (same chain)
    # -> Reshape, StridedSlice x2, Reshape %65 -> line 644 `%93 = PrimFunc_Add(%65, %92) {instance name: add_res2}
    # ... {in_strategy: ((2, 4), (2, 4))}`
    c = comm[437]
    assert (c.serves.rsplit("/", 1)[1], c.serves_op, c.serves_strategy) == ("%93", "Add", ((2, 4), (2, 4)))
    # lines 662, 686, 710 (`%95`, `%101`, `%107` AllGather, one chain) -> line 725
    # `%112 = PrimFunc_ReLU(%111) {instance name: relu} ... {in_strategy: ((1, 8))}`
    for line in (662, 686, 710):
        assert (comm[line].serves.rsplit("/", 1)[1], comm[line].serves_op, comm[line].serves_strategy) == \
            ("%112", "ReLU", ((1, 8),))


@pytest.mark.parametrize("rel", [SEMI_R0, "layout_8p/rank_5/19_validate_0078.ir.xz",
                                 "pipeline_2stage_8p/rank_4/19_validate_0078.ir.xz",
                                 "flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz",
                                 "semi_auto_8p/rank_5/step_parallel_end_0019.ir.xz"])
def test_no_forward_redistribution_serves_its_own_chain(rel: str) -> None:
    dump = irtool.load(fixture(rel))
    nodes = {n.uid: n for n in dump.nodes()}
    fwd = [c for c in analyze(dump).comm if c.category == "redistribution" and c.phase == "forward"]
    assert fwd
    for c in fwd:
        target = nodes[c.serves]
        assert "redistribution_op" not in (target.instance_name or ""), (c.line, target.line)
        assert target.op not in ("TupleGetItem", "MakeTuple", "Depend")


def test_receive_serves_the_user_of_its_value_not_a_depend_ordering_it() -> None:
    # lazyinline rank 0 validate line 6417 `%13(dx) = Receive(%12)`; `%14 = Depend(%11, %13)` only orders
    # (Receive is its 2nd input); `%20 = Depend(%13, %9)` -> `%21 = Depend(%20, %16)` -> `%22 = %19[@Partial(...)](%21, ...)`
    comm = _by_line("gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz")
    assert comm[6417].op == "Receive" and comm[6417].serves.endswith("/%22")


# --- 5. Send/Receive of sequence parallelism are operator-forward

def _real_send(rel: str = "pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz"):
    dump = irtool.load(fixture(rel))
    return next(n for n in dump.nodes() if n.op == "Send")


def test_send_with_ring_attention_attributes_is_operator_forward() -> None:
    # Built from the first real Send of pipeline_2stage_8p rank 0 validate (`grep -n '= Send(' F | head -1`),
    # whose cnode_primal_attrs carry the pipeline marks `dest_rank: I64(1)`, `micro: I64(0)` ...
    send = _real_send()
    pa, pr = send.primitive_attrs, send.primal_attrs
    assert PIPE_KEYS & set(pr)
    assert classify(send, send.instance_name or "", pa, pr) == ("pipeline", "R5")
    # the same Send inside a ring attention: FlashAttentionScore names why it exists; a node of a
    # pipeline stage keeps its `micro` mark, which does not make it a stage boundary
    for key in ("FLASH_SP_COMM_TYPE", "FLASH_INDEX", "RING_ATTENTION_INDEX"):
        sp_pa = {**pa, key: "0_0"}
        sp_pr = {"micro": pr.get("micro", 0)}
        assert classify(send, "", sp_pa, sp_pr) == ("context-parallel", "R9")
        assert classify(send, "", pa, {**sp_pr, key: "0_1"}) == ("context-parallel", "R9")
    # no pipeline marks and no reason: still `other`
    assert classify(send, "", {}, {}) == ("other", "R5b")
    # the stage stays unknown: only pipeline p2p vote (§7)
    c = CommNode(op="Send", category="operator-forward", phase="forward", node="g/%1", direction="send")
    assert stage_of("post", [c], {"g/%1": {"micro": 0, "FLASH_INDEX": "0_0"}}).stage is None


def test_flash_sp_send_receive_are_context_parallel_without_stage() -> None:
    # flash_sp_sendrecv_8p (FlashAttentionScore enable_flash_sp, dp2 x sp2 x mp2, no pipeline), rank 0 validate:
    # grep -nE '^  %[^ ]+ = (Send|Receive)\(' F -> 218 Send, 224 Receive, 287 Send, 755 Receive, 770 Send,
    # 776 Receive, 876 Send, 885 Receive; all group nccl_world_group, peer rank 2 (`dest_rank`/`src_rank: I64(2)`)
    facts = analyze(irtool.load(fixture("flash_sp_sendrecv_8p/rank_0/19_validate_0078.ir.xz")))
    p2p = {c.line: c for c in facts.comm if c.direction}
    assert sorted(p2p) == [218, 224, 287, 755, 770, 776, 876, 885]
    assert all(c.category == "context-parallel" and c.peer_stage is None and c.peer_rank == 2 for c in p2p.values())
    assert facts.stage is None and facts.stage_info.votes == {}
    # 218: `cnode_primal_attrs: {FLASH_INDEX: "0_0", ... FLASH_SP_COMM_TYPE: "FLASH_SP_COMM_QKV" ...}`
    assert p2p[218].rule == "R9" and p2p[218].phase == "forward"
    # 776 `Receive(%175) ... flash_tag: "True"} cnode_primal_attrs: {recv_type: I64(0)}` (no FLASH_* attribute)
    assert p2p[776].rule == "R9"
    # 770 `%174 = Send(%173) {instance name: Send} primitive_attrs: {shape: (2, 2, 32, 16), dest_rank: I64(2), ...}`
    # has no attribute of its own; `%175 = Depend(..., %174)` -> `%176 = Receive(%175)` (line 776): one exchange step
    assert p2p[770].rule == "R9-paired"
    # bytes from `shape: (2, 2, 32, 16)`, `dtype: F16`: 2*2*32*16*2 = 4096; 776 `shape: (2, 2, 32, 64)` = 16384
    assert (p2p[770].bytes, p2p[776].bytes) == (4096, 16384)


def test_flash_sp_exchange_inherits_the_backward_phase() -> None:
    comm = _by_line("flash_sp_sendrecv_8p/rank_2/19_validate_0078.ir.xz")
    # rank 2 line 1194 `%296 = Send(%295)` (no attribute, scope `Default/Send-op0`); `%295 = Depend(%294, %264)` where
    # line 1088 `%264 = Receive(%263) ... flash_tag: "True"` is printed under `.../Grad_Receive/Receive-op0` (backward);
    # `%297 = Depend(%292, %296)` -> line 1200 `%298(dx) = Receive(%297)` with `forward_unique_id: "4077"`
    assert (comm[1194].category, comm[1194].rule, comm[1194].phase) == ("context-parallel", "R9-paired", "backward")
    assert (comm[1088].rule, comm[1088].phase) == ("R9", "backward")


def test_a_gradient_reducers_work_is_the_optimizers_never_forward() -> None:
    """MindSpore's gradient reducers run between the backward and the update (`grads = self.pp_grad_reducer(grads)`,
    make.py:73), once per step: their work is filed with the optimizer's, never as forward work."""
    t = analyze(irtool.load(fixture("pipeline_4stage_8p/rank_4/19_validate_0078.ir.xz"))).table
    at = {n.line: n for n in t.dump.nodes()}
    # line 6860 `%615(new_grads) = PrimFunc_Mul(%612, %357)` scales the accumulated gradient (`%612 = Load` of
    # `accu_grads.layers.5.w2`) and 6874 `%617(new_grads) = PrimFunc_Mul(%612, Tensor(... value=0))` zeroes its
    # buffer, both `Default/pp_grad_reducer-PipelineGradReducer/Mul-op12` / `-op13`
    assert [(at[x].op, t("phase", at[x])) for x in (6860, 6874)] == [("Mul", "optimizer")] * 2
    t = analyze(irtool.load(fixture("data_parallel_8p/rank_0/19_validate_0072.ir.xz"))).table
    at = {n.line: n for n in t.dump.nodes()}
    # line 984 `%56(new_grad) = AllReduce(%55)` sums a gradient (backward by its category, R1); line 993
    # `%57(new_grad) = PrimFunc_Mul(%56, Tensor(shape=[], dtype=Float32, value=0.125))` takes the mean over 8 ranks
    assert (t("phase", at[984]), t("phase", at[993])) == ("backward", "optimizer")


def test_a_graph_called_only_from_backward_graphs_is_backward() -> None:
    # pipeline_4stage_lazy_8p rank_0 validate: the GPT cell's bprop graph @2537_..._◂742_..._GPT_construct_11503
    # (line 3791) runs only where its 8 closure calls print `is_bp: Bool(1)` (line 6511 for micro 0, 6565, ...); in it,
    # line 3948 `call @2538_..._DecoderLayer_construct_11472(...)`, that graph's one call (line 5367 defines it).
    # So the decoder layer's bprop graph runs in the backward, and so do its nodes that print no evidence of their own:
    # line 5371 `TensorMove(%0)`, 6101 `TensorMove(%48)`, 6123/6126 `TupleGetItem(%51, ...)`, 6328/6331 of `%3`.
    t = analyze(irtool.load(fixture("pipeline_4stage_lazy_8p/rank_0/19_validate_0087.ir.xz"))).table
    lines = (3948, 5371, 6101, 6123, 6126, 6328, 6331)
    nodes = {n.line: n for n in t.dump.nodes() if n.line in lines}
    assert {line: (n.op, t("phase", n)) for line, n in nodes.items()} == {
        3948: ("(call)", "backward"), 5371: ("TensorMove", "backward"), 6101: ("TensorMove", "backward"),
        6123: ("TupleGetItem", "backward"), 6126: ("TupleGetItem", "backward"), 6328: ("TupleGetItem", "backward"),
        6331: ("TupleGetItem", "backward")}


def test_bytes_and_wire_bytes_of_collectives_by_hand() -> None:
    facts = analyze(irtool.load(fixture("flash_sp_sendrecv_8p/rank_0/19_validate_0078.ir.xz")))
    comm = {c.line: c for c in facts.comm}
    # line 86 `AllGather(%6)` on group_rank_ids (0, 2): `(<Tensor[Float16], (1, 64, 32)>) -> (<Tensor[Float16],
    # (2, 64, 32)>)`: a gather's size is what it gathers, 2*64*32*2 = 8,192 B, of which each rank receives the
    # other's half: (n-1)/n x 8,192 = 4,096
    # line 449 `AllReduce(%109)` on (0, 1) of (64, 64) Float16: 8,192 B, ring 2(n-1)/n x 8,192 = 8,192
    # line 959 `AllReduce(%224)` (grad_mirror) on (0, 2, 4, 6) of (64, 32) Float16: 4,096 B, 2 x 3/4 x 4,096 = 6,144
    assert {n: (comm[n].op, comm[n].bytes, node_wire_bytes(comm[n], facts.groups)) for n in (86, 449, 959)} == {
        86: ("AllGather", 8192, 4096), 449: ("AllReduce", 8192, 8192), 959: ("AllReduce", 4096, 6144)}


def test_ring_attention_neighbor_exchange_is_context_parallel_without_stage() -> None:
    comm = _by_line("flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz")
    # line 173 `%30 = NeighborExchange(%29) primitive_attrs: {... FLASH_INDEX: "0_0", ...}`
    # line 753 `%152 = NeighborExchange(%151) {instance name: grad} ... {forward_node_name: "NeighborExchange_3814", ...}`
    assert (comm[173].category, comm[173].phase, comm[173].rule) == ("context-parallel", "forward", "R9")
    assert (comm[753].category, comm[753].phase) == ("context-parallel", "backward")
    assert analyze(irtool.load(fixture("flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz"))).stage is None


# --- 6. one communication record: summary and diff read the same bytes; unknown is never 0

EARLY = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/rank_0/*")
               if any(k in p.name for k in ("pipeline_split", "merge_send_receive", "step_parallel_begin"))
               and "gpt_large" not in str(p))

# Communication node lines per (operator, category) in every early pass of rank 0, counted in the dump text:
#   xzcat F | grep -oE '^ +%[^ ]+ = (PrimFunc_)?(AllReduce|AllGather|ReduceScatter|AlltoAll|Send|Receive|Broadcast|
#     NeighborExchange|_MirrorOperator|_MicroStepAllGather|...every name of rules.COMM_OPS...)\(' | sort | uniq -c
# Every file below that the grep finds nothing in holds no communication at all (single-device runs, and the
# semi_auto/auto/layout/moe/opt_parallel/flash/micro_interleaved/bf16 runs before step_parallel_end inserts
# operators). The categories: every Send/Receive found carries `sr_tag` and `pipeline_end` or `micro: I64(m)`
# (pipeline); data_parallel's 10 AllReduce are `Default/grad_reducer-DistributedGradReducer/AllReduce-op0..9`
# (gradient aggregation).
EARLY_COMM: dict[str, dict[tuple[str, str], int]] = {
    "data_parallel_8p/rank_0/11_pipeline_split_0012.ir.xz": {("AllReduce", "gradient-aggregation"): 10},
    **{f"gpt_small_dp2mp2pp2/rank_0/{f}": {("Send", "pipeline"): 2}
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
    **{f"gpt_small_dp2mp2pp2_lazyinline/rank_0/{f}": {("Send", "pipeline"): 1, ("Receive", "pipeline"): 1}
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
    **{f"{s}/rank_0/{f}": {("Send", "pipeline"): n}
       for s, n in (("pipeline_2stage_8p", 4), ("pipeline_wrapper_api_8p", 4), ("pipeline_4stage_8p", 8))
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
    # MindFormers MoE, lazy_inline-like cell reuse: one Send, one Receive, and the loss-scale overflow flag
    # `%N(flag_reduce) = AllReduce(...) {instance name: allreduce}` on nccl_world_group, written by the wrapper (§4)
    **{f"mindformers_moe_dp2mp2pp2_ep2/rank_0/{f}": {("Send", "pipeline"): 1, ("Receive", "pipeline"): 1,
                                                     ("AllReduce", "other"): 1}
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
    # MindFormers Llama dp1 x mp2 x pp4 on a 4-rank p2p group: before the split a chain of scalar (`shape: [1]`)
    # Send/Receive through the stages, global ranks 0 -> 2 -> 4 -> 6 (11_pipeline_split lines 5268-5315), and the
    # same overflow flag
    **{f"mindformers_llama_pp4/rank_0/{f}": {("Send", "pipeline"): 3, ("Receive", "pipeline"): 3,
                                             ("AllReduce", "other"): 1}
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
    # dynamic shapes, lazy_inline: one Send, one Receive on 2-rank groups (primal `stage`, `chunk`, `order`)
    **{f"dynamic_shape_pp_4p/rank_0/{f}": {("Send", "pipeline"): 1, ("Receive", "pipeline"): 1}
       for f in ("11_pipeline_split_0014.ir.xz", "step_parallel_begin_0018.ir.xz")},
    # 4-stage lazy_inline on 4-rank p2p groups: three Send, three Receive before step_parallel_end
    **{f"pipeline_4stage_lazy_8p/rank_0/{f}": {("Send", "pipeline"): 3, ("Receive", "pipeline"): 3}
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
    # MindSpore's 2D tensor-parallel unit test (2 stages, 4 micro batches): the four forward Send of stage 0
    **{f"two_d_tp_8p/rank_0/{f}": {("Send", "pipeline"): 4}
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
    # gpt_small_dp2mp2pp2 as dp1 x mp4 (2 micro batches) and with 8 micro batches: one Send per micro batch
    **{f"{s}/rank_0/{f}": {("Send", "pipeline"): n}
       for s, n in (("gpt_small_dp1mp4pp2", 2), ("gpt_small_dp2mp2pp2_m8", 8))
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
    # 4 stages x 2 chunks, lazy_inline: seven Send, seven Receive before step_parallel_end
    **{f"pipeline_interleaved_4stage_8p/rank_0/{f}": {("Send", "pipeline"): 7, ("Receive", "pipeline"): 7}
       for f in ("11_pipeline_split_0014.ir.xz", "merge_send_receive_0017.ir.xz", "step_parallel_begin_0018.ir.xz")},
}


def test_early_pass_table_covers_every_early_file() -> None:
    # 71 early files at rank_0 (ls */rank_0/ | grep -E 'pipeline_split|merge_send_receive|step_parallel_begin',
    # gpt_large's left out): 39 with communication in the table, 32 without (issue 41 added mlp_cpu_ms290's
    # pipeline_split and strategy_misfit_8p's step_parallel_begin, a compile that failed before any was inserted)
    assert len(EARLY) == 71 and set(EARLY_COMM) <= set(EARLY) and len(EARLY_COMM) == 39


@pytest.mark.parametrize("rel", EARLY)
def test_summary_and_diff_read_the_same_bytes(rel: str) -> None:
    dump = irtool.load(fixture(rel))
    facts = analyze(dump)
    summary = summarize(dump, facts)
    diff_side = [f.as_dict() for f in comm_facts(facts)]
    assert [c["bytes"] for c in summary["comm"]] == [d["bytes"] for d in diff_side]
    # before step_parallel_end types are logical or stale (§1): no byte count is known, and none is 0
    assert all(c["bytes"] is None for c in summary["comm"])
    found: dict[tuple[str, str], int] = {}
    for c in summary["comm"]:
        found[c["op"], c["category"]] = found.get((c["op"], c["category"]), 0) + 1
    assert found == EARLY_COMM.get(rel, {})
    n = sum(found.values())
    runs = sum(c["runs"] for c in summary["comm"])  # a reused cell's node runs once per call: each run unknown
    assert summary["comm_totals"]["total"] == {"count": n, "runs": runs, "bytes": 0, "bytes_unknown": runs}
    for row in summary["gradient_aggregation"] + summary["top_scopes"]:
        assert row["bytes_unknown"] == row["runs"] and row["bytes"] == 0


def test_unknown_bytes_print_as_unknown_in_text() -> None:
    rel = "pipeline_2stage_8p/rank_0/11_pipeline_split_0014.ir.xz"  # 4 `= Send(` lines, bytes unknown (§1)
    res = CliRunner().invoke(main, ["summarize", fixture(rel)])
    assert res.exit_code == 0, res.output
    # rows of the operator histogram, then the category, operator, category/phase, Send/Receive (op, phase,
    # peer stage, peer rank, bytes each, count, micros; no segment column: no hop has one) and top-scope tables
    tables = res.output[res.output.index("\nCounts\n"):]  # the tables after the job's
    rows = [ln.split() for ln in tables.splitlines()
            if ln.split()[:1] in (["pipeline"], ["Send"], ["pipeline/forward"], ["Default"])]
    assert rows == [["Send", "4"], ["pipeline", "4", "—"], ["Send", "4", "—"], ["pipeline/forward", "4", "—"],
                    ["Send", "forward", "—", "4", "—", "4", "0,1,2,3"], ["Default", "4", "—"],
                    # communication per layer (count, bytes, wire, forward, backward, recompute, by category) and
                    # traffic (count, tensor bytes, wire bytes, formula): unknown, never 0
                    ["Default", "4", "—", "—", "—", "—", "—", "—"], ["Send", "4", "—", "—", "S"]]
    # diff of the file against itself: the per-category bytes row says the 4 sizes are unknown
    res = CliRunner().invoke(main, ["diff", fixture(rel), fixture(rel), "--format", "json"])
    data = json.loads(res.output)
    row = data["ranks"][0]["comm_bytes"][0]
    assert (row["old"], row["old_count"], row["old_bytes_unknown"], row["new_bytes_unknown"]) == (0, 4, 4, 4)


def test_partly_unknown_bytes_are_counted_apart() -> None:
    # semi_auto rank 0 step_parallel_end: 6 `_MirrorOperator` (bytes from the sliced `# Params:`, 53888 in all)
    # and 17 AllGather/AllReduce whose types are stale -> unknown (docs/parallel_expected.md)
    dump = irtool.load(fixture("semi_auto_8p/rank_0/step_parallel_end_0019.ir.xz"))
    s = summarize(dump, analyze(dump))
    assert s["comm_totals"]["total"] == {"count": 23, "runs": 23, "bytes": 53888, "bytes_unknown": 17}
    assert sum(r["bytes_unknown"] for r in s["top_scopes"]) <= 17
    assert all(r["bytes_unknown"] == 0 for r in s["gradient_aggregation"])  # the mirrors' sizes are known


# --- 7. backward nodes printed under another cell's scope

def test_backward_collective_is_attributed_to_its_forward_cell() -> None:
    comm = _by_line(SEMI_R0)
    # line 1198 `%193(dx) = ReduceScatter(...)` `forward_unique_id: "7678"`, printed
    # `Gradients/Default/network-WithLossCell/_backbone-Net/head-Head/Grad_AllGather/ReduceScatter-op1`;
    # unique_id 7678 is line 602 `%86 = AllGather(%85)` in `.../body-ShardedAttentionMLP/AllGather-op9`
    c = comm[1198]
    assert c.scope == "Gradients/Default/network-WithLossCell/_backbone-Net/head-Head/Grad_AllGather/ReduceScatter-op1"
    assert c.cell_scope == ("Gradients/Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP/"
                            "Grad_AllGather/ReduceScatter-op1")
    # a backward node printed under its forward cell keeps its scope (line 1053, forward in body)
    assert comm[1053].cell_scope == comm[1053].scope


def test_top_scopes_count_gradients_under_the_forward_cell() -> None:
    dump = irtool.load(fixture(SEMI_R0))
    rows = {r["scope"]: r for r in summarize(dump, analyze(dump))["top_scopes"]}
    # `grep -n 'body-ShardedAttentionMLP/Grad_AllGather/ReduceScatter'`: 12 lines (1053 .. 1649) + line 1198
    # attributed by its forward node; input types (first type line): (512,2,2,16) (512,1,2,16) (512,1,1,16)
    # (2,128,2,32) (2,128,1,32) (2,128,128) (256,32) (128,64) 3x(8,32,4,16) (4,256,48) + (512,256) Float32
    # = 4 x (32768+16384+8192+16384+8192+32768+8192+8192+3*16384+49152+131072) = 1441792
    body = rows["Gradients/Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP/Grad_AllGather"]
    assert (body["count"], body["bytes"], body["bytes_unknown"]) == (13, 1441792, 0)
    # left under head: line 1015 ReduceScatter-op0, input (4096, 8) Float32 = 131072
    head = rows["Gradients/Default/network-WithLossCell/_backbone-Net/head-Head/Grad_AllGather"]
    assert (head["count"], head["bytes"]) == (1, 131072)


def test_picture_folds_the_gradient_with_its_forward_cell(tmp_path: Path) -> None:
    from irtool.render.graph import Semantics, fold_key
    dump = irtool.load(fixture(SEMI_R0))
    facts = analyze(dump)
    sem = Semantics.of(facts)
    node = next(n for n in dump.nodes() if n.line == 1198)
    assert fold_key(node, 4)[0] == "Gradients/Default/network-WithLossCell/_backbone-Net/head-Head"
    assert fold_key(node, 4, sem.scope)[0] == "Gradients/Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP"


# --- 3. parameters of optimizer-parallel gathers, through value-preserving operators

OPT_R0 = "pipeline_opt_shard_8p/rank_0/19_validate_0078.ir.xz"


def test_optimizer_gather_names_its_parameter_through_a_cast() -> None:
    comm = _by_line(OPT_R0)
    gathers = [c for c in comm.values() if c.op == "AllGather"]
    # grep -c '= AllGather(' F: 34, all `{instance name: parallel_optimizer_allgather_not_recompute}`
    assert len(gathers) == 34 and all(c.category == "optimizer-parallel" for c in gathers)
    # line 185 `%0 = AllGather(%para3_embedding.tok)`: the parameter is the input itself
    assert comm[185].parameter == "embedding.tok"
    # line 324 `%24 = PrimFunc_Cast(%para7_0.attention.wq.weight, I64(42))` -> line 327 `%25 = AllGather(%24)`
    assert comm[327].parameter == "0.attention.wq.weight"
    # line 1989 `%174 = PrimFunc_Cast(%para35_1.feed_forward.w2.weight, I64(42))` -> line 1992 `%175 = AllGather(%174)`
    assert comm[1992].parameter == "1.feed_forward.w2.weight"
    # line 2034 `%179 = PrimFunc_Cast(%para36_1.feed_forward.w2.bias, I64(42))` -> line 2037 `%180 = AllGather(%179)`
    assert comm[2037].parameter == "1.feed_forward.w2.bias"
    # every gather names a different parameter: %para3 .. %para36 (34 parameters, 24 of them through a Cast)
    assert len({c.parameter for c in gathers}) == 34 and None not in {c.parameter for c in gathers}


def test_optimizer_gather_parameter_on_the_last_stage() -> None:
    comm = _by_line("pipeline_opt_shard_8p/rank_4/19_validate_0078.ir.xz")
    gathers = [c for c in comm.values() if c.op == "AllGather"]
    # rank 4: 35 AllGather; line 363 `%58 = PrimFunc_Cast(%para37_loss.head.weight, ...)` -> line 366 `%59 = AllGather(%58)`
    assert len(gathers) == 35 and comm[366].parameter == "loss.head.weight"
    assert all(c.parameter for c in gathers)


# --- 4. optimizer gathers that move no data

SPE_OPT_R0 = "pipeline_opt_shard_8p/rank_0/step_parallel_end_0019.ir.xz"


def test_step_gathers_on_a_real_group_are_communication() -> None:
    dump = irtool.load(fixture(SPE_OPT_R0))
    s = summarize(dump, analyze(dump))
    # grep -cE '^  %[^ ]+ = _MicroStepAllGather\(' F: 34; groups "2-5208665662337742843" (21) / "4-6301172352641561019" (13)
    assert s["comm_totals"]["by_op"]["_MicroStepAllGather"]["count"] == 34
    assert s["no_op_gathers"] == []
    assert {g["name"]: g["comm_nodes"] for g in s["groups"]
            if g["name"] in ("2-5208665662337742843", "4-6301172352641561019")} == \
        {"2-5208665662337742843": 21, "4-6301172352641561019": 13}
    assert all(g["name"] for g in s["groups"])  # no blank group name


def test_step_gather_on_an_empty_or_one_rank_group_moves_no_data() -> None:
    from irtool.parallel.rules import moves_no_data
    dump = irtool.load(fixture(SPE_OPT_R0))
    # line 4813 `%0(CNode_3205) = _MicroStepAllGather($(...:para3_embedding.tok), $(...:para119_accu_grads.embedding.tok))
    # {instance name: parallel_optimizer_allgather_not_recompute} primitive_attrs: {... group: "2-5208665662337742843",
    # group_ranks: "0-2", ... rank_size: I64(2) ...}`
    node = next(n for n in dump.nodes() if n.line == 4813)
    inst, pa = node.instance_name or "", node.primitive_attrs
    assert node.op == "_MicroStepAllGather" and not moves_no_data(node, inst, pa)
    # the same gather for an unsharded parameter: MindSpore gives it `group: ""` (its bprop skips the
    # reduction when `self.group == ""`), or a group of one rank
    assert moves_no_data(node, inst, {**pa, "group": ""})
    assert moves_no_data(node, inst, {k: v for k, v in pa.items() if k != "group"})
    assert moves_no_data(node, inst, {**pa, "group": "1-123", "group_ranks": "0", "rank_size": 1})


# --- 5b. folded pipelines (pipeline_segments_8p: 2 stages x 2 segments, lazy_inline, MindSpore 2.7.1)

SEG = "pipeline_segments_8p/rank_{}/{}"


def test_folded_pipeline_stage_zero_hops() -> None:
    facts = analyze(irtool.load(fixture(SEG.format(0, "19_validate_0087.ir.xz"))))
    p2p = {c.line: c for c in facts.comm if c.direction}
    # grep -cE '^  %[^ ]+ = (Send|Receive)\(' F: 24, every one `stage: I64(0)`, peer global rank 4
    assert len(p2p) == 24 and facts.stage == 0
    # 8 hops in segment 0 (`chunk: I64(0)`: Send 796 823 904 964, their gradients Receive 1003 1039 1135 1159),
    # 16 in segment 1 (`chunk: I64(1)`)
    assert sorted(line for line, c in p2p.items() if c.segment == 0) == [796, 823, 904, 964, 1003, 1039, 1135, 1159]
    assert sum(c.segment == 1 for c in p2p.values()) == 16
    # line 829 `Receive ... src_rank: I64(1), src_global_rank: I64(4), sr_tag: I64(524288) ... stage: I64(0),
    # micro: I64(0), chunk: I64(1)`: forward input of segment 1 on stage 0 = output of the last stage (1) in segment 0;
    # stage 0 has no upstream stage, so `stage - 1` = -1 is impossible
    assert (p2p[829].op, p2p[829].phase, p2p[829].peer_stage, p2p[829].segment) == ("Receive", "forward", 1, 1)
    # line 940 `Send ... sr_tag: I64(524288) ... forward_unique_id ... chunk: I64(1)`: the gradient of that hop,
    # back to stage 1
    assert (p2p[940].op, p2p[940].phase, p2p[940].peer_stage) == ("Send", "backward", 1)
    assert {c.peer_stage for c in p2p.values()} == {1} and facts.stage_info.peer_stages == [1]


def test_folded_pipeline_last_stage_hops() -> None:
    for name in ("19_validate_0089.ir.xz", "step_parallel_end_0019.ir.xz"):
        facts = analyze(irtool.load(fixture(SEG.format(4, name))))
        assert facts.stage == 1  # every Send/Receive: `stage: I64(1)`
        assert facts.stage_info.peer_stages == [0]  # the only other stage, never 2
    p2p = {c.line: c for c in analyze(irtool.load(fixture(SEG.format(4, "19_validate_0089.ir.xz")))).comm if c.direction}
    # line 871 `%7 = Send(%6) ... dest_rank: I64(0), dst_global_rank: I64(0) ... sr_tag: I64(524288) ... stage: I64(1),
    # micro: I64(0), chunk: I64(0)`: the last stage's output of segment 0 goes to stage 0 (segment 1)
    assert (p2p[871].op, p2p[871].phase, p2p[871].peer_stage, p2p[871].segment) == ("Send", "forward", 0, 0)
    # line 850 `%0 = Receive(...) ... src_global_rank: I64(0), sr_tag: I64(0) ... stage: I64(1), chunk: I64(0)`
    assert (p2p[850].op, p2p[850].peer_stage, p2p[850].segment) == ("Receive", 0, 0)
    # the Send/Receive table has one row per segment, each with micros 0..3 once. Rank 4 (`grep -nE '= (Send|Receive)\('`,
    # sr_tag / chunk): forward Receive chunk 0 (sr_tag 0..3) and chunk 1 (1048576..), forward Send chunk 0 (524288..,
    # the wrap); backward Send chunk 0 (0..3) and chunk 1 (1048576..), backward Receive chunk 0 (524288..). The last
    # segment of the last stage ends in the loss: no forward Send / backward Receive in segment 1.
    dump = irtool.load(fixture(SEG.format(4, "19_validate_0089.ir.xz")))
    rows = summarize(dump, analyze(dump))["send_receive"]
    assert all(r["micros"] == [0, 1, 2, 3] and r["peer_stage"] == 0 and r["bytes_each"] == 1024 for r in rows)
    res = CliRunner().invoke(main, ["summarize", fixture(SEG.format(4, "19_validate_0089.ir.xz"))])
    header = res.output.split("Send/Receive\n", 1)[1].splitlines()[0].split()
    # the dump prints `chunk` (no `segment` on Send/Receive): the column carries the attribute's own name
    assert header == ["op", "phase", "peer", "stage", "peer", "rank", "chunk", "bytes", "each", "count", "micros"]
    assert sorted((r["op"], r["phase"], r["segment"]) for r in rows) == [
        ("Receive", "backward", 0), ("Receive", "forward", 0), ("Receive", "forward", 1),
        ("Send", "backward", 0), ("Send", "backward", 1), ("Send", "forward", 0)]


def test_folded_pipeline_stage_from_peer_stage_ids() -> None:
    # Without `pr.stage`, `pr.dest_rank`/`pr.src_rank` name the peer's stage (§7.2). Built from the real forward
    # Sends of pipeline_2stage_8p rank 0 (`cnode_primal_attrs: {... dest_rank: I64(1) ...}`, 4 micros), plus the
    # hops a fold adds on stage 0: the Receive of segment 1 from the last stage (`src_rank` 1) -> vote 2 unless
    # recognised as the wrap; on the last stage, a Send of segment 0 to stage 0 (`dest_rank` 0) -> no vote.
    dump = irtool.load(fixture("pipeline_2stage_8p/rank_0/step_parallel_end_0019.ir.xz"))
    sends = [n for n in dump.nodes() if n.op == "Send"]
    assert len(sends) == 4 and all(n.primal_attrs.get("dest_rank") == 1 for n in sends)
    comm = [CommNode(op="Send", category="pipeline", phase="forward", node=n.uid, direction="send", segment=0)
            for n in sends]
    primal = {n.uid: dict(n.primal_attrs) for n in sends}
    wrap = CommNode(op="Receive", category="pipeline", phase="forward", node="g/%99", direction="receive", segment=1)
    primal["g/%99"] = {"src_rank": 1, "micro": 0, "segment": 1}
    info = stage_of("spe", [*comm, wrap], primal)
    assert info.stage == 0 and "wrap from the last stage" in info.how
    last = CommNode(op="Send", category="pipeline", phase="forward", node="g/%98", direction="send", segment=0)
    up = CommNode(op="Receive", category="pipeline", phase="forward", node="g/%97", direction="receive", segment=0)
    info = stage_of("spe", [last, up], {"g/%98": {"dest_rank": 0, "segment": 0}, "g/%97": {"src_rank": 0}})
    assert info.stage == 1 and "wrap to stage 0" in info.how


# --- BFloat16: 2 bytes per element (bf16_semi_auto_8p, parameters and input cast to BFloat16 by make.py)

BF16 = "bf16_semi_auto_8p/rank_0"


def _loaded(rel: str) -> tuple[irtool.Dump, object]:
    dump = irtool.load(fixture(rel))
    return dump, analyze(dump)


def test_bfloat16_communication_is_two_bytes_per_element() -> None:
    # xzcat 19_validate_0078.ir.xz | grep -nE '= AllReduce\(' -A3: the 7 AllReduce and their output types
    #   98 `%6`  (<Tensor[BFloat16], (16, 64)>)  fc2 row-parallel forward   16*64*2 = 2,048
    #  116 `%9`  (<Tensor[BFloat16], ()>)        backbone ReduceMean          1*2 =     2
    #  164 `%15` (<Tensor[Float32], ()>)         loss ReduceMean              1*4 =     4
    #  241 `%26` (<Tensor[BFloat16], ()>)        Gradients/.../Grad_AllReduce     2
    #  291 `%31` (<Tensor[BFloat16], (16, 64)>)  Gradients/.../Grad_AllReduce 2,048
    #  337 `%35` (<Tensor[BFloat16], (64, 32)>)  Grad__MirrorOperator of w1   64*32*2 = 4,096
    #  369 `%39` (<Tensor[BFloat16], (32, 64)>)  Grad__MirrorOperator of w2   4,096
    s = summarize(*_loaded(f"{BF16}/19_validate_0078.ir.xz"))
    assert [(c["line"], c["dtype"], c["shape"], c["bytes"]) for c in s["comm"]] == [
        (98, "BFloat16", [16, 64], 2048), (116, "BFloat16", [], 2), (164, "Float32", [], 4),
        (241, "BFloat16", [], 2), (291, "BFloat16", [16, 64], 2048),
        (337, "BFloat16", [64, 32], 4096), (369, "BFloat16", [32, 64], 4096)]
    assert s["comm_totals"]["total"] == {"count": 7, "runs": 7, "bytes": 2048 + 2 + 4 + 2 + 2048 + 4096 + 4096,
                                         "bytes_unknown": 0}
    # `mirror_user_id: "w1"` / "w2" on the two Grad__MirrorOperator AllReduces
    assert [(r["parameter"], r["bytes"]) for r in s["gradient_aggregation"]] == [("w1", 4096), ("w2", 4096)]


def test_bfloat16_mirror_bytes_from_the_sliced_params() -> None:
    # step_parallel_end: lines 52 and 83 `= _MirrorOperator(%3)` / `(%7)` of the Loads of
    # `%para3_w1: <Ref[Tensor[BFloat16]], (64, 32)` and `%para4_w2: <Ref[Tensor[BFloat16]], (32, 64)` (# Params:):
    # 2,048 elements x 2 bytes each. The three forward AllReduce (lines 99, 117, 171) have stale types: unknown.
    s = summarize(*_loaded(f"{BF16}/step_parallel_end_0019.ir.xz"))
    assert [(c["line"], c["op"], c["dtype"], c["bytes"]) for c in s["comm"]] == [
        (52, "_MirrorOperator", "BFloat16", 4096), (83, "_MirrorOperator", "BFloat16", 4096),
        (99, "AllReduce", None, None), (117, "AllReduce", None, None), (171, "AllReduce", None, None)]
    assert s["comm_totals"]["total"] == {"count": 5, "runs": 5, "bytes": 8192, "bytes_unknown": 3}


def test_bfloat16_parameters_are_read() -> None:
    # validate `# Params:`: %para1_inputs0 <Tensor[BFloat16], (32, 64)>, %para3_w1 <Ref[Tensor[BFloat16]], (64, 32)>,
    # %para4_w2 (32, 64), and the Adam moments adam_m.* / adam_v.* in BFloat16: 7 of the 10 parameters
    # (grep -cE '^%para[0-9]+_[^:]*: <(Ref\[)?Tensor\[BFloat16\]' = 7)
    dump = irtool.load(fixture(f"{BF16}/19_validate_0078.ir.xz"))
    bf16 = {p.name: p.type.shape for p in dump.params if p.type is not None and p.type.dtype == "BFloat16"}
    assert len(bf16) == 7 and len(dump.params) == 10
    assert (bf16["w1"], bf16["w2"], bf16["inputs0"]) == ((64, 32), (32, 64), (32, 64))
    w1 = next(p for p in dump.params if p.name == "w1")
    assert type_bytes(w1.type) == ((64, 32), "BFloat16", 64 * 32 * 2)


def test_optimizer_level2_reduce_scatters_into_the_sharded_accumulation() -> None:
    # grad_accu_opt_level2_8p (optimizer_level "level2", GradAccumulationCell of 4 micro steps, no pipeline): 16
    # ReduceScatter `{instance name: _grad_accumulation_shard_grad_VirtualAssignAdd}` (grep -c 16), the bprop of
    # `_VirtualAssignAdd` (grad_comm_ops.py), naming no parameter (no mirror_user_id): line 1570 reduce-scatters
    # (16, 128) -> (2, 128) over nccl_world_group and line 1577 `PrimFunc_AssignAdd(%para35_accu_grads.embed.w, %293,
    # ...)` adds it; line 3197 (256, 128) -> (64, 128) over (0, 2, 4, 6), read by line 3204 `PrimFunc_AssignAdd(
    # %para59_▸accu_grads.blocks.2.w2, %2, ...)`. 10 trainable parameters, all sharded (threshold 0)
    rel = "grad_accu_opt_level2_8p/rank_0/19_validate_0093.ir.xz"
    facts = analyze(irtool.load(fixture(rel)))
    level2 = [c for c in facts.comm if c.op == "ReduceScatter" and c.phase == "backward"
              and c.category == "optimizer-parallel"]
    assert len(level2) == 16 and {c.rule for c in level2} == {"R3a"}
    by_line = {c.line: c for c in level2}
    assert (by_line[1570].parameter, by_line[1570].bytes) == ("embed.w", 16 * 128 * 4)
    assert (by_line[3197].parameter, by_line[3197].group_ranks) == ("blocks.2.w2", (0, 2, 4, 6))
    assert not [c for c in facts.comm if c.category == "other"]
    # a kernel graph drops the instance name and keeps the primal attributes: `forward_node_name: "_VirtualAssignAdd_
    # 25319"` still says it (line 1570)
    node = next(n for n, c in facts.table.column("comm").items() if c.line == 1570)
    assert node.primal_attrs["forward_node_name"] == "_VirtualAssignAdd_25319"
    assert classify(node, "", node.primitive_attrs, node.primal_attrs) == ("optimizer-parallel", "R3a")
    out = CliRunner().invoke(main, ["summarize", "--cost", str(fixture("grad_accu_opt_level2_8p"))]).output
    # nothing orders the micro steps (no Depend between them; was "cannot play the step out: the dump does not fix
    # the order of stage None"), yet one stage waits for no other: any order takes the same time
    assert out.startswith("Step: ") and "None" not in out.splitlines()[0]
    assert "Optimizer sharding: all ranks: 10 parameters over groups of 4, 8 ranks" in out
    # the traffic table names the stage as the folder's other tables do (it said "Stage — traffic")
    assert "\nStage 0 (no pipeline) traffic: " in out and "Stage 0 (no pipeline): sum over 1 rank (0)" in out


def test_level2_accumulation_under_a_pipeline_names_its_parameter_through_a_depend() -> None:
    # mindformers_llama_dp2mp2pp2_gas rank_0 (gradient_accumulation_shard True): 15 `_grad_accumulation_shard_grad_
    # VirtualAssignAdd` ReduceScatters (grep -c 15) where mindformers_llama_dp2mp2pp2 has 15 `Grad__MicroStepAllGather`
    # ones; line 10383 `%112(dout) = ReduceScatter(%111)`, read by line 10390 `PrimFunc_AssignAdd(%103, %112, ...)`,
    # `%103` = line 10232 `Depend(%para141_▸accu_grads.model.layers.1.feed_forward.w2.weight, %0)`
    facts = analyze(irtool.load(fixture("mindformers_llama_dp2mp2pp2_gas/rank_0/19_validate_0089.ir.xz")))
    level2 = {c.line: c for c in facts.comm if c.rule == "R3a"}
    assert len(level2) == 15 and {c.category for c in level2.values()} == {"optimizer-parallel"}
    assert level2[10383].parameter == "model.layers.1.feed_forward.w2.weight"
    # each parameter once: its AllGather and its reduce-scatter (15 parameters, as without the sharded accumulation)
    assert len({c.parameter for c in facts.comm if c.category == "optimizer-parallel"}) == 15
