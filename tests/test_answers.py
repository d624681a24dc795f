"""Issue 13: redistribution chains, optimizer sharding per parameter, communication per layer,
wire traffic, and a diff that sees through wrapper renames. Every number is read off the dump
text (the grep or the line is in the comment next to it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture, shared_fixture

from irtool import analyze, load
from irtool.cli import main
from irtool.diff import diff_dirs
from irtool.diff.match import align_scopes
from irtool.parallel.layers import ScopeIndex, layer_comm, layer_of
from irtool.parallel.optimizer import optimizer_shards
from irtool.parallel.rules import COMM_OPS
from irtool.parallel.traffic import COLLECTIVE, collective_of, formula, wire_bytes
from irtool.report.summary import comm_layers

SEMI = "semi_auto_8p/rank_0/19_validate_0078.ir.xz"
F = Path(__file__).resolve().parent.parent / "fixtures" / "mindir"


@pytest.fixture(scope="module")
def semi():
    return analyze(load(fixture(SEMI)))


def _chain_with(facts, line: int):
    """The chain holding the communication node printed at `line`."""
    uid = next(c.node for c in facts.comm if c.line == line)
    return next(ch for ch in facts.chains if uid in ch.comm)


def test_chain_qkv_to_split(semi) -> None:
    # xzcat .../19_validate_0078.ir.xz | grep -n redistribution_op: line 101 %4 Reshape(%3), 104 %5 AllGather(%4)
    # group "4-6301172352641561019", group_rank_ids (0, 1, 2, 3); 107 %6 Split(%5); 110-128 TupleGetItem(%6) x4;
    # 134 %11 MakeTuple; 137 %12 Concat; 140 %13 Reshape; 143 %14 StridedSlice -> 146 %15 Split {in_strategy: ((8, 1))}
    ch = _chain_with(semi, 104)
    assert ch.phase == "forward"
    assert [n.split()[1] for n in ch.nodes] == ["Reshape", "AllGather", "Split"] + ["TupleGetItem"] * 4 + [
        "MakeTuple", "Concat", "Reshape", "StridedSlice"]
    assert ch.nodes[0].startswith("%4 ") and ch.nodes[-1].startswith("%14 ")
    # line 86: %3(equiv_92_qkv) = PrimFunc_MatMul(%1, %2 ...) {instance name: qkv} ... in_strategy: ((2, 1), (1, 4)),
    # origin_output_shape: (512, 192); its type line: -> (<Tensor[Float32], (256, 48)>)
    p, q = ch.producer, ch.consumer
    assert (p.op, p.name, p.line, p.strategy) == ("MatMul", "qkv", 86, ((2, 1), (1, 4)))
    assert p.full_shape == (512, 192) and p.slice_shape == (256, 48) and p.split == (2, 4)
    assert (q.op, q.name, q.line, q.input_index, q.strategy) == ("Split", "split", 146, 0, (8, 1))
    assert q.slice_shape == (64, 192)  # line 143: StridedSlice -> (<Tensor[Float32], (64, 192)>)
    assert q.source == "/home/user/models/semi_auto_8p/make.py:59 q, k, v = self.split(qkv)"
    assert ch.groups == ["4-6301172352641561019"] and ch.group_ranks == [(0, 1, 2, 3)]
    # line 105: (<Tensor[Float32], (1, 256, 48)>) -> (<Tensor[Float32], (4, 256, 48)>): 4*256*48*4 bytes
    assert ch.bytes == 4 * 256 * 48 * 4 == 196608
    assert ch.wire_bytes == 196608 * 3 // 4  # AllGather (n-1)/n * S_full, n = 4
    assert ch.dtype == "Float32"


def test_chain_gelu_to_fc2_and_its_backward(semi) -> None:
    # line 602 %86 AllGather(%85) redistribution_op_16025487686660473763AllGather_, group nccl_world_group,
    # rank_list (0..7), unique_id "7678"; 603: (64, 256) -> (512, 256); 605 %87 StridedSlice -> 620 %89 fc2
    # {in_strategy: ((1, 8), (8, 1))}; producer 587 %85 gelu {in_strategy: ((8, 1))}
    ch = _chain_with(semi, 602)
    assert [n.split()[1] for n in ch.nodes] == ["AllGather", "StridedSlice"]
    assert (ch.producer.name, ch.producer.line, ch.producer.strategy) == ("gelu", 587, ((8, 1),))
    assert (ch.consumer.name, ch.consumer.line, ch.consumer.strategy) == ("fc2", 620, (1, 8))
    assert ch.bytes == 512 * 256 * 4 == 524288
    assert ch.wire_bytes == 524288 * 7 // 8 == 458752
    assert ch.consumer.source == "/home/user/models/semi_auto_8p/make.py:69 m = self.fc2(m, self.w2)"
    # line 1198 %193 ReduceScatter grad_redistribution_op_793936712843683154AllGather_, forward_unique_id "7678"
    # (the AllGather above); 1199: (512, 256) -> (64, 256); 1194 %192 StridedSliceGrad feeds it
    back = _chain_with(semi, 1198)
    assert back.phase == "backward" and back.of_chain == ch.id
    assert [n.split()[1] for n in back.nodes] == ["StridedSliceGrad", "ReduceScatter"]
    assert back.bytes == 524288 and back.consumer.name == "fc2"


def test_chain_with_two_gathers_norm_mul_to_add_res2(semi) -> None:
    # 434 %54 Reshape(%53 norm_mul) ... 437 %55 AllGather group 2-5004544844489628105 (0, 1): (1,128,1,32)->(2,128,1,32)
    # 461 %61 AllGather group 2-5208665662337742843 (0, 2): (1,128,2,32) -> (2,128,2,32); ... 473 %65 Reshape
    # -> 644 %93 add_res2 {in_strategy: ((2, 4), (2, 4))} input 0; norm_mul line 419 ((4, 2), (2))
    ch = _chain_with(semi, 437)
    assert _chain_with(semi, 461) is ch
    assert ch.comm_ops == ["AllGather", "AllGather"]
    assert ch.group_ranks == [(0, 1), (0, 2)]
    assert (ch.producer.name, ch.producer.line) == ("norm_mul", 419)
    assert (ch.consumer.name, ch.consumer.line, ch.consumer.input_index, ch.consumer.strategy) == \
        ("add_res2", 644, 0, (2, 4))
    assert ch.bytes == 2 * 128 * 32 * 4 + 2 * 128 * 2 * 32 * 4 == 98304
    assert ch.wire_bytes == 32768 // 2 + 65536 // 2


def test_every_redistribution_comm_node_is_in_one_chain() -> None:
    for rel in (SEMI, "pipeline_2stage_8p/rank_4/19_validate_0078.ir.xz", "moe_8p/rank_0/19_validate_0078.ir.xz",
                "layout_8p/rank_0/19_validate_0078.ir.xz"):
        facts = analyze(load(fixture(rel)))
        # a layout conversion whose purpose has a category of its own (moe_8p's expert all-to-alls, R11) too
        redist = [c.node for c in facts.comm if c.redistributes]
        in_chains = [u for ch in facts.chains for u in ch.comm]
        assert sorted(redist) == sorted(in_chains), rel


def test_pipeline_loss_chain() -> None:
    # pipeline_2stage_8p rank_4 validate: 1056 %42 Reshape(%41), 1059 %43 AllGather group 2-6541264347459079684
    # rank_list (4, 5), 1060: (1, 4, 8) -> (2, 4, 8); ... StridedSlice -> 1107 ce {in_strategy: ((4, 1), (4, 1))};
    # producer 1010 mm {in_strategy: ((2, 1), (1, 2))}, origin_output_shape (8, 16), type -> (4, 8)
    facts = analyze(load(fixture("pipeline_2stage_8p/rank_4/19_validate_0078.ir.xz")))
    ch = _chain_with(facts, 1059)
    assert (ch.producer.name, ch.producer.line, ch.producer.split) == ("mm", 1010, (2, 2))
    assert (ch.consumer.name, ch.consumer.line, ch.consumer.strategy) == ("ce", 1107, (4, 1))
    assert ch.group_ranks == [(4, 5)]
    assert ch.bytes == 2 * 4 * 8 * 4 == 256 and ch.wire_bytes == 128


def test_optimizer_sharding_rows() -> None:
    # opt_parallel_8p rank_0 validate: 73 %0 AllGather(%para3_l1.w) parallel_optimizer_allgather_not_recompute,
    # group_rank_ids (0..7); 74: (<Ref[Tensor[Float32]], (8, 256) ...>) -> (<Tensor[Float32], (64, 256)>);
    # 642 %55 ReduceScatter grad_parallel_optimizer_allgather_not_recompute, 643: (64, 256) -> (8, 256);
    # header line 23: %para3_l1.w: <Ref[Tensor[Float32]], (8, 256) ...>
    facts = analyze(load(fixture("opt_parallel_8p/rank_0/19_validate_0078.ir.xz")))
    rows = {r.parameter: r for r in optimizer_shards(facts.comm, facts.groups)}
    assert sorted(rows) == ["l1.b", "l1.w", "l2.b", "l2.w", "l3.b", "l3.w", "l4.b", "l4.w"]
    r = rows["l1.w"]
    assert r.forward_ops == ["AllGather"] and r.backward_ops == ["ReduceScatter"]
    assert r.group_ranks == (0, 1, 2, 3, 4, 5, 6, 7)
    assert r.full_shape == (64, 256) and r.slice_shape == (8, 256)
    assert r.forward_bytes == r.backward_bytes == 64 * 256 * 4
    assert r.wire_bytes == 2 * (65536 * 7 // 8)
    # l1.b: 103 AllGather -> (<Tensor[Float32], (256)>); header %para4_l1.b (32)
    assert rows["l1.b"].full_shape == (256,) and rows["l1.b"].slice_shape == (32,)


def _layer_rows(path: str) -> dict:
    facts = analyze(load(fixture(path)))
    return {r.layer: r for r in layer_comm(facts.comm, facts.groups, strategies=facts.strategies,
                                           layers=comm_layers(facts))}


def test_layers_gpt_small() -> None:
    # a node counts in its layer by data flow (the `layer` fact): each gradient AllReduce names its parameter
    # (`accu_grads.0.attention.wq.weight` ...): layer 0's 16 parameters `0.*` are 4 B x (3*64*128 + 128*64 + 256*128
    # + 128*256 + 128+128 + 3*64 + 128 + 128+128 + 256 + 128) = 4 x 99,520 = 398,080, layer 1 the same; the
    # embedding's (512, 128) + (64, 128) = 294,912 stay with the embedding's cell (no layer); 60 nodes in all
    rows = _layer_rows("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz")
    assert rows["layer 0"].by_category["gradient-aggregation"] == 398_080
    assert rows["layer 1"].by_category["gradient-aggregation"] == 398_080
    assert rows["Default/network-PipelineCell/network-GPT/embedding-Embedding"].by_category[
        "gradient-aggregation"] == 294_912
    assert sum(r.count for r in rows.values()) == 60
    # the stage's forward Sends carry layer 1's output: layer 1's
    assert rows["layer 1"].by_category["pipeline"] > 0 and rows["layer 0"].by_category["pipeline"] == 0
    # a node of no layer counts in its cell: forward, backward and recompute of one cell in one row, never cut at a
    # repeated cell's index (which layer a node is work of is the `layer` fact's to say, not its scope's)
    assert layer_of("Gradients/recompute_Default/n-GPT/layers-CellList/0-DecoderLayer/a-Attention/Grad_X/AllReduce-op0") \
        == "Default/n-GPT/layers-CellList/0-DecoderLayer/a-Attention"
    assert layer_of("Default/net/layers.3-Block/AllReduce-op1") == "Default/net/layers.3-Block"
    assert layer_of("Default/net/layers.3-Block/AllReduce-op1", depth=2) == "Default/net"


def test_layers_by_data_flow_lazy_inline() -> None:
    # lazy_inline prints all 34 gradient AllReduces of gpt_small_dp2mp2pp2_lazyinline rank 0 under
    # `Gradients/Default/Grad__MirrorMicroStepOperator/AllReduce` (19_validate_0087); the input line under each
    # (`ref_key=accu_grads.0.attention.wq.weight`) names its parameter, hence its layer: 398,080 B per layer as above;
    # embedding.tok (512, 128) + embedding.pos (64, 128) = 4 x 73,728 = 294,912 in the embedding's cell, the only
    # scope printing `embedding-Embedding`; the printed scope `Default` keeps the 4 pipeline Send/Receive
    rows = _layer_rows("gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz")
    assert rows["layer 0"].by_category["gradient-aggregation"] == 398_080
    assert rows["layer 1"].by_category["gradient-aggregation"] == 398_080
    assert rows["Default/network-PipelineCell/network-GPT/embedding-Embedding"].by_category[
        "gradient-aggregation"] == 294_912
    assert rows["Default"].by_category["pipeline"] == rows["Default"].bytes and rows["Default"].count == 4
    # without a layer they all counted under `Default` (their printed scope)
    assert layer_of("Gradients/Default/Grad__MirrorMicroStepOperator/AllReduce-op15") == "Default"


def test_layers_by_data_flow_issue_example() -> None:
    # xzcat pipeline_4stage_8p/rank_2/step_parallel_end_0019.ir.xz | sed -n 1117,1119p: `_MirrorMicroStepOperator(
    # ...para6_layers.2.norm.gamma ...)`, input `(64) Float32`, printed under `layers-CellList/0-Block/norm-LayerNorm`
    # (likewise lines 1137 layers.2.norm.beta, 1343 layers.3.norm.gamma, 1375 layers.3.norm.beta); this stage-2
    # rank holds layers 2 and 3, so each of the four 256-byte gradients goes to its own layer and nothing to layer 0
    rows = _layer_rows("pipeline_4stage_8p/rank_2/step_parallel_end_0019.ir.xz")
    assert sorted(rows) == ["layer 2", "layer 3"]
    assert rows["layer 2"].by_category["gradient-aggregation"] == 2 * 256
    assert rows["layer 3"].by_category["gradient-aggregation"] == 2 * 256
    assert (rows["layer 2"].index, rows["layer 3"].index) == (2, 3)


def test_llama_backward_model_parallel_allreduce_by_data_flow() -> None:
    # mindformers_llama_dp2mp2pp2 rank 0 validate: the four backward AllReduces of the feed-forward's w2 are all
    # printed under `layers-CellList/0-LLamaDecodeLayer/feed_forward-LlamaFeedForward/w2-Linear/Grad_AllReduce`
    # (lines 10159, 11055, 15244, 16140), but the first two are the gradients of layer 1 (their forward counterparts
    # are layer 1's w2 AllReduces, line 7981): 2 x 524,288 B each way. Per layer: forward wo and w2 (2 x 524,288),
    # the recomputed wo (524,288) and the two backward ones: 5 x 524,288 of operator-forward bytes a call of the
    # lazy-inline graphs, which run once per micro batch (4 calls each, lines 239-395 and 310-449): 4 x that a step
    facts = analyze(load(shared_fixture("mindformers_llama_dp2mp2pp2/rank_0/19_validate_0089.ir.xz")))
    layers = comm_layers(facts)
    backward = {c.line: layers.get(c.node) for c in facts.comm if c.category == "operator-forward"
                and c.phase == "backward" and "w2-Linear/Grad_AllReduce" in c.scope}
    assert backward == {10159: 1, 11055: 1, 15244: 0, 16140: 0}
    rows = {r.layer: r for r in layer_comm(facts.comm, facts.groups, strategies=facts.strategies, layers=layers)}
    assert rows["layer 1"].by_category["operator-forward"] == 4 * 5 * 524_288


def test_parameter_cell_rule() -> None:
    # scopes as the dumps print them (gpt_small_dp2mp2pp2_lazyinline rank_0: `micro_inputs-CellList/0-_MicroBatch`
    # and `layers-CellList/0-DecoderLayer` both have an index 0)
    index = ScopeIndex([
        "Default/network-PipelineCell/micro_inputs-CellList/0-_MicroBatch/StridedSlice-op0",
        "Default/network-PipelineCell/network-GPT/layers-CellList/0-DecoderLayer/attention_norm-LayerNorm/LayerNorm-op0",
        "Default/network-PipelineCell/network-GPT/layers-CellList/1-DecoderLayer/attention-Attention/AllReduce-op2",
        "Default/net/_backbone-Model/layers.3-Block/norm-LayerNorm/LayerNorm-op1",
    ])
    gpt = ("Default", "network-PipelineCell", "network-GPT", "layers-CellList")
    # `0.attention_norm` is printed once: the index and the cell name in a row
    assert index.cell_of("0.attention_norm.beta") == (*gpt, "0-DecoderLayer", "attention_norm-LayerNorm")
    assert index.cell_of("1.attention.wq.weight") == (*gpt, "1-DecoderLayer", "attention-Attention")
    # a bare index printed in two places is ambiguous: the printed scope is kept
    assert index.cell_of("0.feed_forward.w1.weight") is None
    # `layers.3` of a parameter named from another root cell; `norm` alone never picks a layer
    assert index.cell_of("backbone.layers.3.norm.beta") == ("Default", "net", "_backbone-Model", "layers.3-Block",
                                                           "norm-LayerNorm")
    assert index.cell_of("layers.7.norm.beta") is None


def test_wire_formula() -> None:
    # AllReduce 2(n-1)/n*S, AllGather / ReduceScatter (n-1)/n*S_full, AlltoAll (n-1)/n*S, Send/Receive S
    assert wire_bytes("AllReduce", 1024, 2) == 1024
    assert wire_bytes("AllReduce", 800, 8) == 1400
    assert wire_bytes("AllGather", 65536, 8) == 57344
    assert wire_bytes("ReduceScatter", 65536, 8) == 57344
    assert wire_bytes("AlltoAll", 128, 2) == 64
    assert wire_bytes("Send", 1024, None) == 1024
    assert wire_bytes("AllReduce", 1024, None) is None and wire_bytes("AllReduce", None, 2) is None
    # one table says which collective an operator performs, for the wire bytes, their formula and the time
    # model alike (timing read name fragments, the report's formula column its own spellings: `AllToAllV`,
    # `ReduceScatterV` had no formula there)
    assert COMM_OPS - COLLECTIVE.keys() == {"Broadcast", "Reduce", "Barrier", "CollectivePermute", "BatchISendIRecv"}
    assert {op: collective_of(op) for op in ("_MirrorMicroStepOperator", "_MiniStepAllGather", "AllToAllV",
                                             "_HostReduceScatter", "NeighborExchangeV2", "Broadcast")} == {
        "_MirrorMicroStepOperator": "AllReduce", "_MiniStepAllGather": "AllGather", "AllToAllV": "AlltoAll",
        "_HostReduceScatter": "ReduceScatter", "NeighborExchangeV2": "Send", "Broadcast": None}
    assert formula("AllToAllV") == "(n-1)/n * S" and formula("ReduceScatterV") == formula("ReduceScatter")
    assert formula("InnerCommIsend") == "S" and formula("Broadcast") is None
    assert wire_bytes("Broadcast", 1024, 8) is None and wire_bytes("NeighborExchange", 1024, 8) == 1024


def test_summary_json_and_text() -> None:
    res = CliRunner().invoke(main, ["summarize", fixture(SEMI), "--format", "json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    # 14 AllGather + 14 ReduceScatter redistribution, 11 AllReduce in semi_auto rank 0 validate
    assert s["traffic"]["by_op"]["AllGather"]["count"] == 14
    assert s["traffic"]["by_op"]["AllGather"]["bytes"] == s["comm_totals"]["by_op"]["AllGather"]["bytes"]
    assert {r["phase"] for r in s["redistributions"]} == {"forward", "backward"}
    text = CliRunner().invoke(main, ["summarize", fixture(SEMI), "--all"]).output
    assert "Redistributions (why each layout conversion)" in text
    assert "MatMul qkv (line 86) (2,1)(1,4)" in text and "Split split (line 146) input 0 (8,1)" in text
    # the AllGather printed at line 104 is named with its line in the chain column
    assert "Reshape AllGather@104 Split TupleGetItem x4 MakeTuple Concat Reshape StridedSlice" in text
    assert "4-6301172352641561019: 0-3" in text and "/home/user/models/semi_auto_8p/make.py:59" in text
    assert "None" not in text and "'" not in text
    res = CliRunner().invoke(main, ["summarize", fixture(SEMI), "--by-scope-depth", "3", "--format", "json"])
    assert {r["layer"] for r in json.loads(res.output)["layers"]["rows"]} == {"Default/network-WithLossCell/_backbone-Net",
                                                                          "Default/network-WithLossCell/_loss_fn-Loss"}


def test_folder_send_receive_matrix() -> None:
    # pipeline_2stage_8p: 8 ranks; every stage-0 rank has 4 forward Send ([4, 64] F32 = 1024 bytes) to stage 1,
    # every stage-1 rank 4 backward Send to stage 0 (NOTES: Send/Receive shape [4, 64], sr_tag 0..3)
    res = CliRunner().invoke(main, ["summarize", str(F / "pipeline_2stage_8p"), "--format", "json", "--jobs", "1"])
    m = {(e["from_stage"], e["to_stage"]): e for e in json.loads(res.output)["send_receive_matrix"]}
    assert sorted(m) == [(0, 1), (1, 0)]
    assert m[(0, 1)]["count"] == 16 and m[(0, 1)]["bytes"] == 16 * 4 * 64 * 4
    assert m[(1, 0)]["count"] == 16 and m[(1, 0)]["bytes"] == 16 * 1024


WRAPPER = F / "pipeline_wrapper_api_8p"


def test_wrapper_api_build_diffs_as_same_communication_and_strategies() -> None:
    # fixwork NOTES §5: the same network through AutoParallel + parallel.nn.Pipeline; scopes
    # Default/network-PipelineCell/network-WithLossCell/... vs Default/network-TrainStep/net_with_loss-Pipeline/...
    # rank with rank: the job takes the AlltoAll AutoParallel makes of the loss redistribution for expert
    # parallelism (ep 2), which would make the two builds two configurations
    result = diff_dirs(str(F / "pipeline_2stage_8p"), str(WRAPPER), by_rank=True)
    by_rank = {r.old_rank: r for r in result.ranks}
    r0 = by_rank[0]
    assert r0.comm == [] and r0.strategy == [] and r0.renamed_scopes > 0
    # rank 4: AutoParallel sets enable_alltoall: the loss redistribution is 4 AlltoAll forward + 4 backward
    # (wrapper rank_4 lines 1182 ...) where the baseline has AllGather 1059, 2015, 2985, 3937 and ReduceScatter
    # 1283, 2253, 3223, 4266: a real change, and the only one
    r4 = by_rank[4]
    assert r4.strategy == []
    assert sorted((e.change, e.op) for e in r4.comm) == sorted(
        [("removed", "AllGather")] * 4 + [("removed", "ReduceScatter")] * 4 + [("added", "AlltoAll")] * 8)
    assert all("_loss_fn-CELoss" in e.scope for e in r4.comm)


def test_align_scopes_keeps_layer_indices() -> None:
    old = ["Default/network-PipelineCell/net-Net/layers-CellList/0-Block", "Default/network-PipelineCell/net-Net/head"]
    new = ["Default/network-TrainStep/pipe-Pipeline/net-Net/layers-CellList/1-Block",
           "Default/network-TrainStep/pipe-Pipeline/net-Net/head"]
    got = align_scopes(old, new)
    assert got == {"Default/network-PipelineCell/net-Net/head": "Default/network-TrainStep/pipe-Pipeline/net-Net/head"}


def test_diff_parameter_summary() -> None:
    # data_parallel_8p rank_0 -> opt_parallel_8p rank_0: the 8 parameters l1.w ... l4.b get AllGather (forward) and
    # ReduceScatter (backward) (opt_parallel validate lines 73 ... 1028, mirror_user_id / parameter input)
    result = diff_dirs(str(F / "data_parallel_8p/rank_0"), str(F / "opt_parallel_8p/rank_0"), by_rank=True)
    rows = result.ranks[0].parameter_comm
    added = next(e for e in rows if e.new == "AllGather + ReduceScatter")
    assert added.count == 8 and added.parameters[:2] == ("l1.b", "l1.w")
    changed = [e for e in result.ranks[0].comm if e.op == "AllGather"]
    assert {e.parameter for e in changed} == {"l1.w", "l1.b", "l2.w", "l2.b", "l3.w", "l3.b", "l4.w", "l4.b"}


def test_gradient_nodes_pair_by_parameter_when_scopes_do_not_align() -> None:
    # Without the scope alignment every scope of the wrapper build differs; the 13 gradient-aggregation AllReduce of
    # rank 0 (comm_bytes row "0 gradient-aggregation 296,960 (13)") still pair by their parameter (mirror_user_id)
    from irtool.diff.compare import RankDiff, _diff_comm
    from irtool.diff.facts import comm_facts

    old = analyze(load(fixture("pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz")))
    new = analyze(load(str(WRAPPER / "rank_0" / "19_validate_0078.ir.xz")))
    r = RankDiff("old", "new", 0, 0, 0, 0)
    _diff_comm(r, comm_facts(old), comm_facts(new), False)
    grads = [e for e in r.comm if e.category == "gradient-aggregation"]
    assert grads == []
    assert sum(1 for c in old.comm if c.category == "gradient-aggregation") == 13
    assert {e.change for e in r.comm} == {"added", "removed"}  # the other nodes: their scopes differ


def test_optimizer_sharding_inside_pipeline_through_cast() -> None:
    # pipeline_opt_shard_8p rank_0 validate (fixwork NOTES §6): 34 AllGather parallel_optimizer_allgather_not_recompute,
    # 34 ReduceScatter. 324 %24 = PrimFunc_Cast(%para7_0.attention.wq.weight, I64(42)) -> (<Tensor[Float16], (32, 128)>),
    # 327 %25 = AllGather(%24) group 2-5208665662337742843 (0, 2): (64, 128) Float16 = 16384 bytes;
    # 5960 %544 ReduceScatter ... mirror_user_id: "0.attention.wq.weight",
    # 5961 (<Ref[Tensor[Float32]], (64, 128), ref_key=accu_grads.0.attention.wq.weight ...>) -> (32, 128): 32768 bytes
    facts = analyze(load(str(F / "pipeline_opt_shard_8p/rank_0/19_validate_0078.ir.xz")))
    rows = {r.parameter: r for r in optimizer_shards(facts.comm, facts.groups)}
    assert len(rows) == 34
    r = rows["0.attention.wq.weight"]
    assert (r.forward_ops, r.backward_ops, r.group_ranks) == (["AllGather"], ["ReduceScatter"], (0, 2))
    assert (r.full_shape, r.slice_shape, r.dtype, r.backward_dtype) == ((64, 128), (32, 128), "Float16", "Float32")
    assert (r.forward_bytes, r.backward_bytes) == (16384, 32768)
    assert r.wire_bytes == 16384 // 2 + 32768 // 2
    # 185 %0 = AllGather(%para3_embedding.tok) group (0, 2): the fp32 parameter read directly
    assert rows["embedding.tok"].forward_ops == ["AllGather"] and rows["embedding.tok"].dtype == "Float32"


def test_diff_gradient_allreduce_to_optimizer_sharding() -> None:
    # gpt_small_dp2mp2pp2 rank 0 (mirror AllReduce per parameter) -> pipeline_opt_shard_8p rank 0 (the same GPT with
    # enable_parallel_optimizer): every one of the 34 parameters of stage 0 goes from AllReduce to AllGather + ReduceScatter
    # optimizer sharding 1 -> 2 is another configuration: rank with rank on request
    result = diff_dirs(str(F / "gpt_small_dp2mp2pp2/rank_0"), str(F / "pipeline_opt_shard_8p/rank_0"), by_rank=True)
    rows = result.ranks[0].parameter_comm
    assert [(e.old, e.new, e.count) for e in rows] == [("AllReduce", "AllGather + ReduceScatter", 34)]
    text = CliRunner().invoke(main, ["diff", str(F / "gpt_small_dp2mp2pp2/rank_0"),
                                     str(F / "pipeline_opt_shard_8p/rank_0"), "--by-rank"]).output
    assert "34 parameter(s)  AllReduce  AllGather + ReduceScatter" in text


def test_folder_traffic_per_stage() -> None:
    # pipeline_2stage_8p stage 1 (ranks 4-7): per rank 4 AllGather (2, 4, 8) Float32 = 256 bytes over a 2-rank group
    # (rank_4 validate 1059, 2015, 2985, 3937): 16 over the stage, 4,096 tensor bytes, wire (2-1)/2 -> 2,048
    res = CliRunner().invoke(main, ["summarize", str(F / "pipeline_2stage_8p"), "--format", "json", "--jobs", "1",
                                    "--stage", "1"])
    st = json.loads(res.output)["stages"][0]
    ag = st["traffic"]["by_op"]["AllGather"]
    assert (ag["count"], ag["bytes"], ag["wire_bytes"]) == (16, 4096, 2048)


def test_step_parallel_end_chains_have_no_slice_shapes() -> None:
    # docs/parallel.md §1: at step_parallel_end inserted nodes print <null> and the other types are logical
    # (unsharded), so a chain there names its producer and consumer but no slice shape or split
    facts = analyze(load(fixture("semi_auto_8p/rank_5/step_parallel_end_0019.ir.xz")))
    assert facts.chains and all(c.consumer is not None for c in facts.chains)
    ends = [e for c in facts.chains for e in (c.producer, c.consumer) if e is not None]
    assert all(e.slice_shape is None and e.split is None for e in ends)


def test_folder_tables_from_each_stage_first_rank_without_a_second_read() -> None:
    # inference_pp_4p_m2: 2 stages of 2 ranks (manifest.json: device_num 4, pipeline_stages 2); ranks 0 and 2 are their
    # stages' lowest (rank 1 shares a group with 0, rank 3 with 2): their digests keep the tables the folder shows
    # (issue 42: an LLM folder of one rank per stage was read twice), the others' do not, and no rank is read again
    from irtool.dumpdir import RankFile
    from irtool.report.summary import dir_summary, rank_digest
    from irtool.selection import Selection

    path = str(F / "inference_pp_4p_m2")
    digests = [rank_digest(RankFile(r, f)) for r, f in sorted(Selection.of(path).files.items())]
    assert [(d.rank, d.kept) for d in digests] == [(0, True), (1, False), (2, True), (3, False)]
    read_again: list = []
    folder = dir_summary(path, digests, fetch=lambda files: read_again.extend(files) or [])
    assert read_again == []
    assert [[a.ranks for a in s.answers] for s in folder.stages] == [[[0, 1]], [[2, 3]]]
    assert folder.stages[0].answers[0].strategies == digests[0].strategies != []
    assert not any(r.kept or r.strategies for r in folder.rows)  # the rows spilled without the tables
