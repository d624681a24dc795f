"""LLM models read, costed and checked right (issue 26): MindFormers' MoE (GroupedMatmul experts behind an
expert-parallel all-to-all), flash attention and sequence parallelism, groups whose printed members contradict
their size, the borrowed instance name of 2D tensor parallelism, layers of code MindSpore prints under another
layer's scope. Every figure is worked out by hand from the dump lines quoted next to it."""
from __future__ import annotations

import json
import lzma
from collections import Counter

from click.testing import CliRunner
from conftest import FIXTURES, fixture

from irtool import load
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.balance import balance, stage_cost
from irtool.parallel.cost import bytes_moved, compute_cost, kept_scores
from irtool.parallel.job import job_of

MOE = "mindformers_moe_dp2mp2pp2_ep2"
MOE0 = f"{MOE}/rank_0/19_validate_0091.ir.xz"
SP0 = "mindformers_llama_sp_fa_dp2mp2pp2/rank_0/19_validate_0089.ir.xz"
RING0 = "flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz"


def _facts(rel: str):
    return analyze(load(fixture(rel)))


def _ops_by_line(rel: str) -> dict[int, object]:
    t = analyze(load(fixture(rel))).table
    lines = {n.uid: n.line for n in t.dump.nodes()}
    return {lines[o.node]: o for o in compute_cost(t, keep_ops=True).ops}


def _comm_by_line(rel: str) -> dict[int, object]:
    return {c.line: c for c in _facts(rel).comm}


# --- 1. cost of LLM operators -----------------------------------------------------------------------

def test_expert_grouped_matmul_flops_from_the_group_shapes() -> None:
    # MOE0 line 7154 `PrimFunc_GroupedMatmul(%142, %144, ..., %128, I64(3), I64(0), Bool(0), Bool(0))`, types
    # `TupleShape((-1, 512))` x `TupleShape((2, 512, 2816))` (2 local experts of 4, w1 and w3 fused): the rows are
    # the tokens the dispatch at line 7012 received: `AlltoAllV(%116, ...) {block_size: I64(512)}` sends
    # `(262144)` fp16 = 262144 / 512 = 512 rows on group (0, 1); averaged over the 2 ranks a rank gets the 512 it
    # sends, at most 2 x 512 = 1024. 2 * 512 * 512 * 2816 = 1,476,395,008 FLOPs, the forward graph is called for
    # 4 micro batches (`call @3921_..._15700` at lines 133, 180, ...): 5,905,580,032; bound 11,811,160,064
    ops = _ops_by_line(MOE0)
    gate = ops[7154]
    assert (gate.family, gate.phase, gate.flops, gate.flops_bound) == (
        "grouped-matmul", "forward", 4 * 2 * 512 * 512 * 2816, 4 * 2 * 1024 * 512 * 2816)
    # line 7213: w2, (-1, 1408) x (2, 1408, 512): 2 * 512 * 1408 * 512 per micro batch
    assert ops[7213].flops == 4 * 2 * 512 * 1408 * 512
    # line 14850, the weight gradient: `I64(3), I64(2)` (group_type 2), (1408, -1) x (-1, 512) -> (2, 1408, 512):
    # K is the rows, split over the experts: 2 * 1408 * 512 * 512, in the bprop graph run once per micro batch
    assert (ops[14850].phase, ops[14850].flops) == ("backward", 4 * 2 * 1408 * 512 * 512)


def test_moe_rank_has_no_operator_of_unknown_cost_but_shapes_it_cannot_fill() -> None:
    facts = _facts(MOE0)
    c = compute_cost(facts.table)
    # the Adds of `(-1, -1, -1)` shapes (which `-1` are the rows is not printed) stay unknown; every
    # GroupedMatmul, Swiglu, Sort, TopkExt, UnsortedSegmentSum is counted (they were all unknown before)
    assert dict(c.unknown) == {"Add": 4}
    assert c.dynamic == Counter({"GroupedMatmul": 16, "Swiglu": 4, "SwigluGrad": 2})
    assert c.dynamic_bound == 2 * c.dynamic_flops
    # the `micro` marks are on the call nodes of the reused forward and bprop graphs
    assert facts.job.micro.value == 4


def test_memory_bound_operators_count_bytes_moved() -> None:
    ops = _ops_by_line(MOE0)
    # line 6593 `PrimFunc_TopkExt(%105, I64(2), ...)`: 0 FLOPs, its own family
    assert (ops[6593].family, ops[6593].flops) == ("memory-bound", 0)
    # line 14629 `UnsortedSegmentSum((1, 256, 2, 512) fp16, (1, 256, 2) int64, I64(512)) -> (512, 512) fp16`:
    # bytes moved = 262144 * 2 + 512 * 8 + 262144 * 2 = 1,052,672, 4 micro batches
    node = next(n for n in load(fixture(MOE0)).nodes() if n.line == 14629)
    assert bytes_moved(node, "post") == 262144 * 2 + 512 * 8 + 262144 * 2


def test_flash_attention_causal_flops_from_heads_sequence_and_head_dim() -> None:
    # SP0 line 4733 `PrimFunc_FlashAttentionScore(%43, %57, %61, ..., I64(4), F32(1), F32(0.125), I64(2147483647),
    # I64(0), I64(0), I64(1), I64(0))`: head_num 4 (8 heads / mp 2), keep_prob 1, pre_tokens unlimited, next_tokens 0,
    # input_layout 1 = BNSD, sparse_mode 0; q (1, 4, 512, 64), k and v (1, 2, 512, 64) (GQA). Kept scores: row i
    # keeps j <= i: 512 * 513 / 2 = 131,328 per head; forward 4 * 131,328 * (2*64 + 2*64 + 5) = 137,106,432
    # per micro batch (4 calls); its gradient (line 4733's FlashAttentionScoreGrad) 4 * 131,328 * (6*64 + 4*64 + 5)
    assert kept_scores(512, 512, 0, 2147483647, 0) == 512 * 513 // 2
    ops = _ops_by_line(SP0)
    fa = [o for o in ops.values() if o.op == "FlashAttentionScore" and o.phase == "forward"]
    grads = [o for o in ops.values() if o.op == "FlashAttentionScoreGrad"]
    assert {o.flops for o in fa} == {4 * 4 * 131_328 * 261} and len(fa) == 2  # layers 0 and 1
    assert {o.flops for o in grads} == {4 * 4 * 131_328 * 645}
    assert ops[4733].flops == 548_425_728


def test_ring_attention_sparse_modes() -> None:
    # RING0 line 158: BSH (I64(0)) q, k, v (2, 32, 32), head_num 2 (D = 32 / 2 = 16), sparse_mode 3 (causal from the
    # bottom right), pre/next 2147483647: 32 * 33 / 2 = 528 kept; 2 * 2 * 528 * (2*16 + 2*16 + 5) = 145,728
    # line 194: the next ring step, sparse_mode 4 (band) with pre_tokens 0 and next_tokens 0: the diagonal, 32 kept
    ops = _ops_by_line(RING0)
    assert ops[158].flops == 2 * 2 * 528 * 69
    assert ops[194].flops == 2 * 2 * 32 * 69
    # line 594, the gradient of 158: 2 * 2 * 528 * (6*16 + 4*16 + 5)
    assert ops[594].flops == 2 * 2 * 528 * 165


def test_moe_balance_includes_experts_and_attention() -> None:
    dumps = {r: load(fixture(f"{MOE}/rank_{r}/19_validate_0091.ir.xz")) for r in (0, 4)}
    facts = {r: analyze(d, r) for r, d in dumps.items()}
    jobs = [f.job for f in facts.values()]
    costs = [stage_cost(facts[j.rank]) for j in jobs]
    b = balance(costs, job_of(jobs))
    # both stages run the same two MoE layers' experts (2 x 2 GroupedMatmul forward per micro batch); stage 1
    # adds the lm head and loss: 1.2x the forward FLOPs, not the 1.8x of MatMuls alone
    assert [s.layers for s in b.stages] == [[0, 1], [2, 3]]
    assert (b.heaviest, b.lightest) == (1, 0) and round(b.forward_ratio, 1) == 1.2
    assert all(s.cost.by_family["grouped-matmul"] == costs[0].cost.by_family["grouped-matmul"] for s in costs)


# --- 2. expert, sequence and context parallel ---------------------------------------------------------

def test_expert_parallel_dispatch_and_combine_with_their_group_and_sizes() -> None:
    comm = _comm_by_line(MOE0)
    # 6949 `AlltoAll` of the per-expert counts (1, 4) fp32 = 16 B, feeding the group_list of GroupedMatmul 7154
    # 7012 `AlltoAllV` (262144) fp16 = 524,288 B; 7062 the expert ids (512) fp32 = 2,048 B; both reach 7154
    # 7279 `AlltoAllV` of the expert outputs: input `(-1)` = the 512..1024 rows received x 512: bytes unknown,
    # at most 1024 * 512 * 2 = 1,048,576; 14657 `dx = AlltoAllV(Reshape((512, 512) -> (-1)))` = 524,288 B, the
    # backward of the combine (`forward_unique_id: "185006"`): its category and rule inherited
    rows = {line: (comm[line].category, comm[line].rule, comm[line].bytes, comm[line].bytes_bound)
            for line in (6949, 7012, 7062, 7279, 14657)}
    assert rows == {6949: ("expert-parallel", "R11-dispatch", 16, None),
                    7012: ("expert-parallel", "R11-dispatch", 524_288, None),
                    7062: ("expert-parallel", "R11-dispatch", 2_048, None),
                    7279: ("expert-parallel", "R11-combine", None, 1_048_576),
                    14657: ("expert-parallel", "R11-combine-inherited", 524_288, None)}
    assert {comm[line].group_ranks for line in rows} == {(0, 1)}
    assert not [c for c in comm.values() if c.op.startswith("AlltoAll") and c.category != "expert-parallel"]


def test_job_and_headline_show_ep_sp_cp() -> None:
    r = CliRunner().invoke(main, ["summarize", str(FIXTURES / MOE)])
    assert r.exit_code == 0, r.output
    job = r.output.splitlines()[1]
    assert job.startswith("Job: world 8, dp 2 x mp 2 x pp 2 x ep 2,") and "sp" not in job.split(",")[1]
    # 8 unknown AlltoAllV each bounded: the headline says by how much
    assert "expert-parallel" in r.output.splitlines()[2] and "at most" in r.output
    r = CliRunner().invoke(main, ["summarize", fixture(SP0)])
    assert r.output.splitlines()[1].startswith("Job: world 8, dp 2 x mp 2 x pp 2 x sp 2,")
    r = CliRunner().invoke(main, ["summarize", fixture(RING0)])
    assert " x cp 2," in r.output.splitlines()[1]


def test_dp_under_context_parallelism_by_hand() -> None:
    # flash_sp_sendrecv_8p rank 0 validate (`xzcat | grep -n`): line 218 `Send` on nccl_world_group with
    # group_rank_ids (0, 1, ..., 7): world 8; line 449 `AllReduce` forward_op on (0, 1): mp 2; line 230
    # `FlashAttentionScore` (layout BSH) in_strategy ((2, 2, 2), ...): the sequence split 2 ways over the ring of lines
    # 218/224 (Send to / Receive from rank 2, FLASH_SP_COMM_TYPE): cp 2. The weights' gradients are
    # reduced over (0, 2, 4, 6) (line 959, grad_mirror): dp x cp = 4 ranks hold each weight. So dp = 8 / (2 x 2) = 2,
    # not 8 / mp 2 = 4.
    job = json.loads(CliRunner().invoke(main, ["summarize", "--format", "json",
                                               fixture("flash_sp_sendrecv_8p/rank_0/19_validate_0078.ir.xz")]).output)["job"]
    assert [job[k]["value"] for k in ("world_size", "mp", "cp", "dp")] == [8, 2, 2, 2]


def test_sequence_parallel_gather_and_scatter_pair() -> None:
    comm = _comm_by_line(SP0)
    # 3559 `AllGather` (256, 512) -> (512, 512) {redistribution_op_...} on (0, 1) after `mul2` of the attention norm,
    # `in_strategy: ((2, 2, 1), (1))`: the sequence (dim 1) split over mp 2 gathered before wq
    # 4955 `ReduceScatter` {forward_op_2811096921968765914} (512, 512) -> (256, 512) after wo, whose user (the
    # residual add) holds (2, 2, 1)
    assert (comm[3559].category, comm[3559].rule) == ("sequence-parallel", "R12-gather")
    assert (comm[4955].category, comm[4955].rule) == ("sequence-parallel", "R12-scatter")
    counts = Counter((c.category, c.phase) for c in comm.values() if c.category == "sequence-parallel")
    # 2 layers x (attention + FFN) gathers and scatters, forward; the recomputed ones; their gradients inherit
    assert counts == {("sequence-parallel", "forward"): 8, ("sequence-parallel", "recompute"): 6,
                      ("sequence-parallel", "backward"): 8}
    # the gathers stay in their redistribution chains
    facts = _facts(SP0)
    assert comm[3559].node in {u for ch in facts.chains for u in ch.comm}


def test_a_collective_on_a_one_rank_group_moves_nothing() -> None:
    # SP0 line 7619 `AllGather(%3) {instance name: recompute_slice_allgather} primitive_attrs: {..., group:
    # "1-2297668033614959926", ..., rank_list: (0), group_ranks: "0", group_rank_ids: (0), rank_size: I64(1), ...}`
    # of (1, 256, 512) fp16 (262,144 B): a group of one rank gathers nothing, so it is no communication node and
    # its bytes are counted nowhere; it is listed apart with the gathers of an empty group.
    facts = _facts(SP0)
    assert 7619 not in {c.line for c in facts.comm}
    assert [(c.line, c.op) for c in facts.no_op_gathers] == [(7619, "AllGather")]
    assert "1-2297668033614959926" not in facts.groups
    r = CliRunner().invoke(main, ["summarize", fixture(SP0), "--all"])
    assert r.exit_code == 0, r.output
    assert "Communication that moves no data" in r.output


def test_borrowed_instance_name_of_2d_tensor_parallel() -> None:
    # two_d_tp_8p rank 4 validate line 59 `AllGather(%0) {instance name: grad5466641153713975880ReduceScatter8}
    # primitive_attrs: {comm_reuse: Bool(1), ...} cnode_primal_attrs: {unique_id: "15809", ...}`, scope
    # `Default/.../1-TwoDTPCell/AllGather-op0`: the name is the backward ReduceScatter's it shares a primitive with;
    # step_parallel_end line 424 prints the node as `forward_op15607056035106375252AllGather1`. Before: other, backward
    comm = _comm_by_line("two_d_tp_8p/rank_4/19_validate_0078.ir.xz")
    assert (comm[59].category, comm[59].phase) == ("operator-forward", "forward")
    spe = _comm_by_line("two_d_tp_8p/rank_4/step_parallel_end_0019.ir.xz")
    assert (spe[424].category, spe[424].phase) == ("operator-forward", "forward")
    # line 417 `dx = AllGather` with the same borrowed name and `forward_node_name`: backward
    assert comm[417].phase == "backward"


# --- 3. memory roles by use, whatever the optimizer ----------------------------------------------------

def test_lazy_adam_is_named_by_its_cell_and_its_states_found_by_use() -> None:
    rel = "lazy_adam_8p/rank_0/19_validate_0078.ir.xz"
    facts = _facts(rel)
    # line 702 `%78(success) = Adam(%para6_w_down, %para14_moment1.w_down, %para18_moment2.w_down, ...)`, scope
    # `Default/optimizer-LazyAdam/Adam-op0`: nn.LazyAdam updates its dense parameters with `Adam` (line 738 the
    # sparse one with FusedSparseLazyAdam); the optimizer the user chose is LazyAdam
    opt = facts.job.optimizer
    assert opt.value == "LazyAdam" and opt.where.endswith(":702 (Adam in LazyAdam)")
    # `# Params` lines 23-26, 31-38 (Float32): weight1 (8, 32) 1,024 + weight2 (32) 128 + w_up (32, 16) 2,048 +
    # w_down (16, 32) 2,048 = 5,248 B of weights; moment1.* and moment2.* (the update's inputs 2 and 3) twice that
    sc = stage_cost(facts)
    assert (sc.memory.role_bytes("weight").total, sc.memory.role_bytes("optimizer-state").total) == (5_248, 10_496)


# --- 4. groups that contradict themselves ----------------------------------------------------------------

def test_group_members_from_rank_size_shapes_and_name() -> None:
    # user_group_8p rank 0 validate line 79 `AllGather(%3) ... group: "389f7fbc8e058d61efa91d591e1dc5c5ad418fec3fb2d4aa",
    # rank_list: (0, 1, 2, 3, 4, 5, 6, 7), group_rank_ids: (0, 1, 2, 3, 4, 5, 6, 7), rank_size: I64(2)`, types
    # (2, 64) -> (4, 64); the name is the first 48 hex digits of sha256("0-1")
    groups = _facts("user_group_8p/rank_0/19_validate_0078.ir.xz").groups
    g = groups["389f7fbc8e058d61efa91d591e1dc5c5ad418fec3fb2d4aa"]
    assert (g.ranks, g.size) == ((0, 1), 2)
    assert g.evidence == ("8 ranks listed (group_rank_ids), but line 79 says 2 (rank_size 2, AllGather (2, 64) -> "
                          "(4, 64)): size 2, members 0, 1 from the name")
    assert groups["nccl_world_group"].evidence is None


def test_check_finds_nothing_where_the_list_was_the_world() -> None:
    # ranks 0, 1 on sha256("0-1"), rank 2 on sha256("2-3"), each printing all 8 ranks: trusting the list, rank 2
    # was a member that 'had no collective' on the first group (and the other way round): two false findings
    r = CliRunner().invoke(main, ["check", str(FIXTURES / "user_group_8p")])
    assert r.exit_code == 0, r.output
    assert "consistent" in r.output.splitlines()[0]


def test_group_name_that_tells_nothing_leaves_members_unknown(tmp_path) -> None:
    # the same dump with the group renamed `user_pair_0_1` (what make.py's UG_PLAIN=1 names it): the size is still
    # 2 by rank_size and the shapes, the members unknown, never the 8 printed
    raw = lzma.open(fixture("user_group_8p/rank_0/19_validate_0078.ir.xz"), "rt").read()
    path = tmp_path / "19_validate_0078.ir"
    path.write_text(raw.replace("389f7fbc8e058d61efa91d591e1dc5c5ad418fec3fb2d4aa", "user_pair_0_1"))
    g = analyze(load(str(path))).groups["user_pair_0_1"]
    assert (g.ranks, g.size) == (None, 2) and g.evidence.endswith("size 2, members unknown")


# --- 6. layers by data flow --------------------------------------------------------------------------

def test_shared_moe_code_belongs_to_the_layer_whose_values_it_reads() -> None:
    t = _facts(MOE0).table
    by_line = {n.line: n for n in t.dump.nodes()}
    # line 10082 `SumExt(%270, ...)` (the expert counts), printed under `layers-CellList/0-LLamaDecodeLayer/
    # feed_forward-MoEV3`: %270 = OneHot of layer 1's expert ids: TopkExt %259 <- Softmax %258 <- MatMul %256
    # (line 9716) reading `Load(%para99_▸CR_model.layers.1.feed_forward.router_dense.weight)`: layer 1
    assert "layers-CellList/0-" in by_line[10082].scope and t("layer", by_line[10082]) == 1
    assert t("layer", by_line[9716]) == 1
    # line 13134 `ZerosLikeExt` under `Gradients/.../layers-CellList/0-.../Grad_TopkExt/`, `forward_unique_id:
    # "184897"` = TopkExt %259 of layer 1 (line 9779)
    assert "layers-CellList/0-" in by_line[13134].scope and t("layer", by_line[13134]) == 1
    # line 13167 the recomputed `Cast(%para163_Parameter_15213)`: %para163 is the bprop graph's 43rd parameter,
    # bound by the forward graph's `Partial(@..._15698, ...)` (line 10892) to %260 = TupleGetItem(TopkExt %259, 1):
    # layer 1's expert indices
    assert t("layer", by_line[13167]) == 1


def test_moe_stages_hold_their_own_layers() -> None:
    # rank 4 (stage 1) reads model.layers.2.* and model.layers.3.* only: no node of it counts in layer 0 or 1
    t = _facts(f"{MOE}/rank_4/19_validate_0091.ir.xz").table
    layers = {t("layer", n) for n in t.dump.nodes()} - {None}
    assert layers == {2, 3}
