"""Cost, memory, balance and advice (docs/cost.md) against numbers worked out by hand from the dump text.

pipeline_unequal_8p: 4 stages x 2 ranks (mp 2), micro_size 4 (micro batch 64/4 = 16 rows), H 64, F 256 (fc1 (64, 256)
sliced to (64, 128) by mp), layers 0-4 on stage 0 and 5, 6, 7 on stages 1-3, recompute on layers 1 and 3, Adam
(make.py). mindformers_llama_dp2mp2pp2 (shared fixtures): MindFormers' Llama, hidden 512, ffn 1408, 8 heads / 4 kv
heads, vocab 4096, 4 layers, dp2 x mp2 x pp2, 4 micro batches, AdamW written out, optimizer parallel (README)."""
from __future__ import annotations

import functools
import json
import lzma
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, fixture, shared_fixture

from irtool import load
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.balance import Advice, SplitEstimate, balance, bubble, in_flight, stage_cost
from irtool.parallel.cost import compute_cost, op_flops
from irtool.parallel.job import job_of
from irtool.parallel.memory import compute_memory
from irtool.parallel.records import Bytes
from irtool.present.cost import offset

SCEN = FIXTURES / "pipeline_unequal_8p"
LLAMA = Path(shared_fixture("mindformers_llama_dp2mp2pp2"))
RANK_OF_STAGE = {0: 0, 1: 2, 2: 4, 3: 6}
_SHAPE = re.compile(r"<Tensor\[\w+\], \(([\d, ]+)\)>")
_FLAGS = re.compile(r"PrimFunc_(?:Batch)?MatMul\(%\w+, %\w+, Bool\((\d)\), Bool\((\d)\)\)")
_PARAM = re.compile(r"^%para\d+_(\S+): <Ref\[Tensor\[(\w+)\]\], \(([\d, ]*)\).*has_default", re.M)
_DTYPE = {"Float32": 4, "Float16": 2, "Int32": 4}


def _text(stage: int, name: str = "19_validate_0078.ir.xz") -> str:
    return lzma.open(SCEN / f"rank_{RANK_OF_STAGE[stage]}" / name, "rt").read()


def _header_bytes(text: str) -> dict[str, int]:
    """`grep has_default` over the `# Params` lines: each parameter's elements x dtype size."""
    out = {}
    for name, dtype, shape in _PARAM.findall(text):
        n = 1
        for d in shape.split(","):
            n *= int(d) if d.strip() else 1
        out[name] = n * _DTYPE[dtype]
    return out


def _forward_matmul_flops_by_grep(text: str) -> int:
    """`grep -A2 -E '= PrimFunc_(Batch)?MatMul[(]'`: the node line (transposes `Bool(0), Bool(1)`), its type line
    (the two input shapes), its scope line; forward = scope not `Gradients/` and no `duplicated: Bool(1)`;
    2*M*N*K times the batch dimensions."""
    total = 0
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not re.search(r"= PrimFunc_(Batch)?MatMul\(", line) or "duplicated: Bool(1)" in line:
            continue
        if "Gradients/" in lines[i + 2]:
            continue
        a, b = ([int(x) for x in m.split(",")] for m in _SHAPE.findall(lines[i + 1])[:2])
        ta, tb = map(int, _FLAGS.search(line).groups())
        m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
        n = b[-2] if tb else b[-1]
        batch = 1
        for d in a[:-2]:
            batch *= d
        total += 2 * batch * m * n * k
    return total


@functools.cache
def _stage_costs(folder: Path = SCEN, ranks: tuple[int, ...] = (0, 2, 4, 6), name: str = "19_validate_0078.ir.xz"):
    """One `StageCost` per rank and the job of those ranks (read once per test process)."""
    costs, jobs = [], []
    for r in ranks:
        path = str(folder / f"rank_{r}" / name)
        dump = load(path)
        facts = analyze(dump, r)
        jobs.append(facts.job)
        costs.append(stage_cost(facts))
    return costs, job_of(jobs)


@functools.cache
def _summarize(*args: str) -> str:
    """`irtool summarize ARGS` (run once per test process): its stdout."""
    r = CliRunner().invoke(main, ["summarize", *args])
    assert r.exit_code == 0, r.output
    return r.stdout


def test_forward_matmul_flops_per_stage_by_hand() -> None:
    # stage 0: 4 micro x (proj_in (16,32)x(32,32): 2*16*32*32 = 32768 + 5 layers x (fc1 (16,64)x(64,128) +
    # fc2 (16,128)x(128,64): 2 x 262144)) = 4 x (32768 + 2621440) = 10,616,832; stage 1: 4 x 524288 = 2,097,152;
    # stage 3: + proj_out (16,32)x(32,16): 4 x 16384 = 65536 -> 2,162,688
    expected = {0: 10_616_832, 1: 2_097_152, 2: 2_097_152, 3: 2_162_688}
    for stage, flops in expected.items():
        assert _forward_matmul_flops_by_grep(_text(stage)) == flops
        dump = load(str(SCEN / f"rank_{RANK_OF_STAGE[stage]}/19_validate_0078.ir.xz"))
        c = compute_cost(analyze(dump).table)
        assert (c.matmul_forward, c.matmul_forward_unknown) == (flops, 0)


def test_step_parallel_end_derives_per_device_flops() -> None:
    # step_parallel_end prints fc1 as (16, 64) x <null> -> (16, 256) (logical); origin_input_shapes
    # ((16, 64), (64, 256)) sliced by in_strategy ((1, 1), (1, 2)) gives validate's (64, 128): same FLOPs
    for stage in (0, 1):
        path = SCEN / f"rank_{RANK_OF_STAGE[stage]}/step_parallel_end_0019.ir.xz"
        spe = compute_cost(analyze(load(str(path))).table)
        assert spe.matmul_forward == _forward_matmul_flops_by_grep(_text(stage))
        assert spe.flops["backward"] == 0  # not differentiated yet in this pass


def test_one_matmul_with_transpose() -> None:
    # a backward MatMul of stage 1 printed `PrimFunc_MatMul(%a, %b, Bool(0), Bool(1))` with inputs
    # (16, 64) and (128, 64): x @ w.T -> M 16, K 64, N 128: 2*16*128*64 = 262144
    dump = load(str(SCEN / "rank_2/19_validate_0078.ir.xz"))
    node = next(n for n in dump.nodes() if n.op == "MatMul" and "Bool(0), Bool(1))" in n.text
                and [t.shape for t in n.input_types[:2]] == [(16, 64), (128, 64)])
    assert op_flops(node, "post") == (262144, "matmul", True)


def _roles(path: str) -> dict[str, int]:
    m = compute_memory(analyze(load(path)).table)
    return {r: m.role_bytes(r).total for r in ("weight", "optimizer-state", "accumulation", "hyperparameter",
                                               "other", "unused")}


def test_parameter_bytes_of_a_rank_by_hand() -> None:
    # rank 2 (stage 1) `# Params` lines, all Float32 (4 bytes):
    # weights layers.5.w1 (64, 128) 32768 + w2 (128, 64) 32768 + norm gamma/beta (64) 256 + 256 = 66,048;
    # Adam moment1.layers.5.* + moment2.layers.5.* (Adam's inputs 1 and 2): 2 x 66,048; accu_grads.layers.5.*: 66,048;
    # proj_in.w (32, 64) = 8192, held unsliced with its accu_grads/moment1/moment2 and read by no forward or
    # backward operator of this stage: 4 x 8192 = 32,768 held but unused; learning_rate, beta1_power, beta2_power,
    # scale_sense (scalars read into every update) 4 x 4 = 16 hyperparameters; global_step 4 other
    path = str(SCEN / "rank_2/19_validate_0078.ir.xz")
    roles = _roles(path)
    assert roles == {"weight": 66048, "optimizer-state": 2 * 66048, "accumulation": 66048, "hyperparameter": 16,
                     "other": 4, "unused": 32768}
    m = compute_memory(analyze(load(path)).table)
    assert sorted(p.name for p in m.params if p.role == "unused") == [
        "accu_grads.proj_in.w", "moment1.proj_in.w", "moment2.proj_in.w", "proj_in.w"]
    assert {p.name for p in m.params if p.role == "optimizer-state"} == {
        f"{k}.layers.5.{w}" for k in ("moment1", "moment2") for w in ("w1", "w2", "norm.gamma", "norm.beta")}
    assert m.gradients == Bytes()  # every weight has its accumulation buffer: the gradient lives there


def test_roles_come_from_use_not_names(tmp_path: Path) -> None:
    # the same dump with the optimizer's and the buffers' parameters renamed (`moment1.` -> `aaa.`, `moment2.` ->
    # `zzz.`, `accu_grads.` -> `grads_of.`): the roles, read from what Adam and AssignAdd read, do not change
    text = (lzma.open(SCEN / "rank_2/19_validate_0078.ir.xz", "rt").read()
            .replace("moment1.", "aaa.").replace("moment2.", "zzz.").replace("accu_grads.", "grads_of."))
    renamed = tmp_path / "19_validate_0078.ir"
    renamed.write_text(text)
    assert _roles(str(renamed)) == _roles(str(SCEN / "rank_2/19_validate_0078.ir.xz"))


def test_mindformers_adamw_written_out_roles_by_hand_and_megatron() -> None:
    # MindFormers writes AdamW out: `Assign(%para218_adam_m...wq.weight, %63)`, `Assign(%para217_model.layers.0
    # .attention.wq.weight, %86)` where %86 = Sub(w, lr * m / (sqrt(v) + eps)) reads w, m and v (rank 0 validate,
    # lines 18749-18888). By `grep has_default` on rank 0's `# Params` (Float32): model.* 8,003,584 B of weights,
    # adam_m.* and adam_v.* 8,003,584 B each (= 2 x the weights), accu_grads.* 15,998,976 B
    path = str(LLAMA / "rank_0/19_validate_0089.ir.xz")
    header = _header_bytes(lzma.open(path, "rt").read())
    m = _stage_costs(LLAMA, (0, 4), "19_validate_0089.ir.xz")[0][0].memory
    weights = sum(b for n, b in header.items() if n.startswith("model."))
    states = sum(b for n, b in header.items() if n.startswith(("adam_m.", "adam_v.")))
    buffers = sum(b for n, b in header.items() if n.startswith("accu_grads."))
    assert (weights, states, buffers) == (8_003_584, 16_007_168, 15_998_976)
    roles = {r: m.role_bytes(r).total for r in ("weight", "optimizer-state", "accumulation")}
    assert (roles["weight"], roles["optimizer-state"], roles["accumulation"]) == (weights, states, buffers)
    # Megatron's memory per parameter (distributed optimizer, fp32 params and grads: "8 + 8/d" bytes): 4 B of fp32
    # gradient kept whole, 8/d B of Adam states sharded over d = dp; MindSpore's optimizer parallel shards the fp32
    # weight too (4/d). Stage 0 holds the embedding (4096 x 512) and layers 0-1; per layer wq (512, 512), wk, wv
    # (512, 256) (4 kv heads x 64), wo (512, 512), w1, w3 (1408, 512), w2 (512, 1408): 2,949,120 sharded by
    # t = mp 2 (and d = dp 2 where optimizer parallel applies), plus two norms (512) kept whole on every rank.
    t, d = 2, 2
    per_layer = 512 * 512 * 2 + 512 * 256 * 2 + 1408 * 512 * 3
    sharded = 4096 * 512 + 2 * per_layer
    norms = 2 * 2 * 512
    assert roles["weight"] == 4 * (sharded // (t * d) + norms)
    assert roles["optimizer-state"] == 8 * (sharded // (t * d) + norms)
    assert roles["accumulation"] == 4 * (sharded // t + norms)  # Megatron's fp32 gradient buffer
    assert m.gradients == Bytes()  # each weight has its accumulation buffer
    assert {p.role for p in m.params if p.name in ("global_step", "scale_sense")} <= {"hyperparameter", "other"}


def test_activations_of_one_micro_batch_by_hand() -> None:
    # stage 1, micro 0 (micro batch 16 rows): what backward reads from forward: the received input x (16, 64)
    # for LayerNormGrad = 4096, LayerNorm's outputs (16, 64) + mean (16, 1) + rstd (16, 1) = 4224, and the ReLU
    # output (16, 128) for ReluGrad and fc2's weight gradient = 8192: 16,512 bytes; its order F0 F1 F2 B0 F3 B1 B2 B3
    # (validate's Depend edges) holds 3 at once
    dump = load(str(SCEN / "rank_2/19_validate_0078.ir.xz"))
    facts = analyze(dump, 2)
    sc = stage_cost(facts)
    assert sc.memory.activations.per_micro == Bytes(16512, 3, 0)
    f = in_flight(sc.order, 1, job_of([facts.job]))
    assert f.count == 3 and "F0 F1 F2 B0 F3 B1 B2 B3" in f.how
    assert sc.memory.total(3) == sc.memory.static() + Bytes(3 * 16512, 9, 0)


def test_recomputed_segments_keep_their_input() -> None:
    # stage 0 recomputes layers 1 and 3 (`duplicated: Bool(1)`): the copy of layer 1's LayerNorm reads
    # `Depend(x, ...)` with x = layer 0's residual Add (16, 64) -> kept until the copy runs; likewise layer 3's
    # input; with layers 0, 2, 4 each keeping LayerNorm's outputs 4224 + ReLU 8192 (+ their Add 4096 read by the next
    # LayerNormGrad, but layer 4's goes to stage 1), layers 1 and 3 their Add output only, and the embedding side
    # (proj_in's input slice (16, 32) 2048 + the gathered (16, 64) 4096): 3 x 12416 + 2 x 4096 + 2 x 4096 + 6144
    m = compute_memory(analyze(load(str(SCEN / "rank_0/19_validate_0078.ir.xz"))).table)
    a = m.activations
    assert a.for_recompute == 2
    assert {k: v.total for k, v in a.by_layer.items()} == {0: 16512, 1: 4096, 2: 16512, 3: 4096, 4: 12416, None: 6144}
    assert a.per_micro.total == 3 * 12416 + 2 * 4096 + 2 * 4096 + 6144


def test_a_recomputed_layer_would_keep_what_its_copies_give_the_backward() -> None:
    # the backward of layers 1 and 3 reads their recomputed copies' LayerNorm tuple (layer 1's at line 3722: (16, 64)
    # + 2 x (16, 1) F32 = 4224 B) and ReLU (line 3731: (16, 128) F32 = 8192 B; layer 3's at lines 3450, 3459), micro
    # batch 0's: what layers 0 and 2, not recomputed, keep of the same operators (test above) and what layers 1 and 3
    # would keep were they not recomputed
    a = compute_memory(analyze(load(str(SCEN / "rank_0/19_validate_0078.ir.xz"))).table).activations
    assert {k: v.total for k, v in a.recomputed_by_layer.items()} == {1: 4224 + 8192, 3: 4224 + 8192}
    # two compiles of one Llama: what the recompute-on compile's copies give the backward of layers 0 and 1 is what
    # the recompute-off compile keeps of them, tensor for tensor
    on, off = (compute_memory(analyze(load(str(FIXTURES / f / "rank_0/19_validate_0089.ir.xz"))).table, 4).activations
               for f in ("dryrun_llama_dp2mp2pp2", "dryrun_llama_recompute_off"))
    assert {i: on.recomputed_by_layer[i].total for i in (0, 1)} == {i: off.by_layer[i].total for i in (0, 1)}
    assert off.recomputed_by_layer == {}


def test_balance_on_total_compute_with_forward_beside() -> None:
    costs, job = _stage_costs()
    b = balance(costs, job)
    # layers per stage from the job (parameters the work reads), the heaviest and lightest by forward+backward+
    # recompute FLOPs; forward alone beside it (forward MatMul by grep 10,616,832 / 2,097,152 = 5.06, with the
    # elementwise work 5.06x: PipelineGradReducer's Muls, 42 on rank 0 and 10 on rank 2, are the optimizer's)
    assert [f.layers for f in b.stages] == [[0, 1, 2, 3, 4], [5], [6], [7]]
    assert (b.heaviest, b.lightest) == (0, 1)
    compute = [c.cost.flops["forward"] + c.cost.flops["backward"] + c.cost.flops["recompute"] for c in costs]
    assert b.compute_ratio == compute[0] / compute[1]
    assert b.forward_ratio == costs[0].cost.flops["forward"] / costs[1].cost.flops["forward"]
    assert b.compute_ratio > b.forward_ratio  # stage 0's recompute counts in its work
    # the bubble with the job's 4 micro batches and 4 stages: 1 - m*sum(t)/(S*(sum(t) + (m-1)*max(t)))
    t = [c / 4 for c in compute]
    assert b.bubble == pytest.approx(1 - 4 * sum(t) / (4 * (sum(t) + 3 * max(t))))


def test_advice_against_a_hand_evaluation() -> None:
    costs, job = _stage_costs()
    a = balance(costs, job).advice
    layer = {}  # each layer's compute where it runs now; each stage's work of no layer stays
    fixed = []
    for c in costs:
        per = c.cost.layer_compute()
        layer.update({k: v[0] for k, v in per.items() if k is not None})
        fixed.append(c.cost.compute - sum(v[0] for k, v in per.items() if k is not None))
    assert a.current.loads == [c.cost.compute for c in costs]  # one estimate: the current split is what was measured
    # the advised split 2/2/2/2 (MindFormers offset [0, 0, 0, 0]) by hand
    assert a.advised.groups == [[0, 1], [2, 3], [4, 5], [6, 7]] and offset(a, a.advised) == [0, 0, 0, 0]
    loads = [fixed[k] + layer[2 * k] + layer[2 * k + 1] for k in range(4)]
    assert a.advised.loads == loads
    assert a.advised.ratio == max(loads) / min(loads)
    assert a.advised.bubble == pytest.approx(bubble([x / 4 for x in loads], 4))
    # never worse than the even split by the same estimate (here it is the even split)
    assert a.advised.heaviest <= a.even.heaviest
    # memory by hand: stage 3 gains layer 6: its # Params (w1 (64,128), w2 (128,64), norm (64) x2, Float32) 66,048 B
    # x 4 (weight, Adam's two moments, accu_grads) = 264,192, and one micro batch in flight (its order F0 B0 F1 B1 ...)
    # of layer 6's kept tensors, 16,512 (as layer 5's, test_activations_of_one_micro_batch_by_hand)
    now = [x.total for x in a.current.memory]
    static = 4 * (64 * 128 * 4 * 2 + 64 * 4 * 2)
    assert static == 264_192
    assert a.advised.memory[3].total == now[3] + static + 1 * 16512
    # stage 2 (2 in flight: F0 F1 B0 ...) loses layer 6 and gains layers 4 (LayerNorm 4224 + ReLU 8192 kept; its Add
    # output is sent on) and 5 (16,512)
    assert a.advised.memory[2].total == now[2] - static - 2 * 16512 + 2 * static + 2 * (12416 + 16512)


def test_advice_of_three_stages_against_a_hand_evaluation() -> None:
    # pipeline_3stage_24p_m5 (make.py: 7 alike Blocks split 3/2/2 by STAGE_OF_LAYER, 5 micro batches of 3 rows per
    # rank). Work outside the layers (`xzcat rank_N/*validate* | grep MatMul`): stage 0 runs proj_in, x (3, 32) @ w_in
    # (32, 32) (mp 2 of (32, 64)): 2*3*32*32 = 6,144 FLOPs forward and as many for its weight's gradient (the input
    # has none), x 5 micro batches = 61,440; stage 2 runs proj_out (3, 32) @ (32, 10): 1,920 forward + 3,840 backward,
    # x 5 = 28,800, and the loss; stage 1 runs no MatMul outside its layers.
    costs, job = _stage_costs(FIXTURES / "pipeline_3stage_24p_m5", (0, 8, 16))
    a = balance(costs, job).advice
    layer, fixed = {}, []
    for c in costs:
        per = c.cost.layer_compute()
        layer.update({k: v[0] for k, v in per.items() if k is not None})
        fixed.append(c.cost.compute - sum(v[0] for k, v in per.items() if k is not None))
    assert fixed[0] >= 61_440 > fixed[2] - 28_800 >= 0 and fixed[1] < 28_800 < fixed[2] < fixed[0]
    assert a.current.groups == [[0, 1, 2], [3, 4], [5, 6]]
    # any split of 7 layers over 3 stages puts 3 layers on one stage, and the Blocks cost alike (within far less than
    # the stages' fixed work differs): the lightest heaviest stage is the 3 layers on stage 1, which runs no
    # work of its own: 2/3/2, not the compiled 3/2/2 (proj_in beside 3 layers) nor 2/2/3 (proj_out and the loss)
    assert max(layer.values()) - min(layer.values()) < (fixed[2] - fixed[1]) / 10
    assert a.advised.groups == [[0, 1], [2, 3, 4], [5, 6]] and offset(a, a.advised) == [0, 1, 0]
    loads = [fixed[0] + layer[0] + layer[1], fixed[1] + layer[2] + layer[3] + layer[4], fixed[2] + layer[5] + layer[6]]
    assert a.advised.loads == loads and a.advised.heaviest == loads[1]
    assert max(loads) < fixed[0] + layer[0] + layer[1] + layer[2] == a.current.loads[0]


def test_mindformers_offset_semantics() -> None:
    # MindFormers: a stage's layers = num_layers // pipeline_stage + offset[stage] (LayerSetting), the offsets
    # summing to num_layers % pipeline_stage; per chunk with pp_interleave_num
    def split(groups: list[list[int]], stage_of: list[int]) -> SplitEstimate:
        n = max(stage_of) + 1
        return SplitEstimate(groups, stage_of, [1] * n, [Bytes()] * n, [False] * n, None, None)

    four = split([[0, 1, 2], [3, 4], [5, 6], [7]], [0, 1, 2, 3])
    assert offset(Advice(None, None, four, None, 8, 1, []), four) == [1, 0, 0, -1]
    nine = split([[0, 1, 2], [3, 4], [5, 6], [7, 8]], [0, 1, 2, 3])
    assert offset(Advice(None, None, nine, None, 9, 1, []), nine) == [1, 0, 0, 0]  # sums to 9 % 4
    chunks = split([[0, 1], [2, 3], [4, 5, 6], [7]], [0, 1, 0, 1])
    assert offset(Advice(None, None, chunks, None, 8, 2, []), chunks) == [[0, 0], [1, -1]]


def test_cli_folder_cost_json_device_memory_and_yaml() -> None:
    # FLOPs only (`--hardware none`): the split balances FLOPs (test_timing.py: by time)
    cost = json.loads(_summarize(str(SCEN), "--format", "json", "--device-memory", "1MiB", "--hardware", "none"))["cost"]
    assert cost["schema"] == "irtool.cost/4" and cost["step"] is None
    # 5.38x: PipelineGradReducer's Muls (167,168 elements on rank 0, 37,120 on rank 2, 1 FLOP each) are the optimizer's
    # work, not compute; counted as forward they made it (34,736,661 + 167,168) / (6,459,908 + 37,120) = 5.37x
    assert cost["sentence"].startswith("stage 0 does 5.38x the compute (forward+backward+recompute FLOPs) of stage 1")
    # fits reads the peak of live tensors where the dump fixes the order of the step (validate: every stage)
    assert [s["fits"] for s in cost["stages"]] == [s["peak_bytes"] <= 2**20 for s in cost["stages"]]
    assert cost["stages"][0]["fits"] is False  # stage 0 holds 5 layers: 5 x 264,192 of parameters alone
    assert all(s["headroom_bytes"] == 2**20 - s["peak_bytes"] for s in cost["stages"])
    # the orders validate's dependencies fix: stage s of 4 runs min(4 - s, 4) forward before its first backward
    # (stage 0: F0 F1 F2 F3 B0 ..., its B0 Receive reads F3's output), so holds 4, 3, 2, 1 micro batches
    assert [s["micro_batches_in_flight"] for s in cost["stages"]] == [4, 3, 2, 1]
    assert (cost["micro_batches"]["value"], cost["stage_count"]["value"]) == (4, 4)
    yaml = cost["advice"]["mindformers_yaml"]
    assert "  pipeline_stage: 4\n  micro_batch_num: 4\n" in yaml and "    offset: [0, 0, 0, 0]\n" in yaml
    # layers 1 and 3 recomputed now go to stages 0 and 1 (one each, each the second of its stage)
    assert "  recompute: [1, 1, 0, 0]  # recomputed now: layers 1, 3" in yaml


def test_cli_cost_headline_first() -> None:
    out = _summarize(str(SCEN), "--cost", "--device-memory", "1MiB", "--hardware", "none")
    lines = out.splitlines()
    assert lines[0].startswith("Balance: stage 0 does 5.38x the compute")
    assert lines[1].startswith("Memory: stage 0 does NOT fit in 1,048,576 (1.00 MiB)")
    assert lines[2].startswith("Advice (estimate from this compilation): layers 0-1 | layers 2-3 | layers 4-5 | "
                               "layers 6-7 (offset [0, 0, 0, 0])")
    assert "    parallel_config:\n      pipeline_stage: 4\n" in out  # the YAML, indented as a block


def test_stage_selection_keeps_the_jobs_stage_count() -> None:
    # --stage 2 on step_parallel_end (whose order no Depend chain fixes): 1F1B with the job's 4 stages and 4 micro
    # batches, stage 2 holds min(4 - 2, 4) = 2 (once `stage 2 of 1 holds min(1 - 2, 8) = -1`)
    r = CliRunner().invoke(main, ["summarize", str(SCEN), "--cost", "--stage", "2", "--pass", "step_parallel_end",
                                  "--format", "json"])
    assert r.exit_code == 0, r.output
    cost = json.loads(r.stdout)["cost"]
    (row,) = cost["stages"]
    assert row["stage"] == 2 and row["micro_batches_in_flight"] == 2
    assert row["in_flight_how"].startswith("1F1B assumed") and "min(4 - 2, 4) = 2" in row["in_flight_how"]


def test_absent_stages_are_named_not_renumbered(tmp_path: Path) -> None:
    # ranks 0 and 6 only (stages 0 and 3 of 4): rank 6 sends no forward work on, so the job has 4 stages; the
    # balance names stages 0 and 3, says 1 and 2 were not read, and neither bubbles nor advises
    for r in (0, 6):
        shutil.copytree(SCEN / f"rank_{r}", tmp_path / f"rank_{r}")
    r = CliRunner().invoke(main, ["summarize", str(tmp_path), "--cost", "--format", "json"])
    assert r.exit_code == 0, r.output
    cost = json.loads(r.stdout)["cost"]
    assert [s["stage"] for s in cost["stages"]] == [0, 3] and cost["stages_absent"] == [1, 2]
    assert cost["stages"][1]["layers"] == [7]
    assert cost["bubble"] is None and cost["advice"]["cannot"] == "stages 1, 2 not read"
    assert cost["sentence"].endswith("; stages 1, 2 not read")


def test_folded_pipeline_is_not_advised_a_contiguous_split() -> None:
    costs, job = _stage_costs(FIXTURES / "pipeline_folded_8p", (0, 4), "19_validate_0078.ir.xz")
    a = balance(costs, job).advice
    # its Sends print `segment`, no `chunk` (make.py: pipeline_segments=2): its parts are said as segments
    assert a.advised is None and a.cannot == "2 segments per stage: a split per segment is not searched"
    # stage 0 holds layers 0-1 and 4-5 (two segments), stage 1 layers 2-3 and 6-7
    assert a.current.groups == [[0, 1], [2, 3], [4, 5], [6, 7]] and a.current.stage_of == [0, 1, 0, 1]


def test_dynamic_shapes_count_unknowns_never_zero() -> None:
    # dynamic_shape_pp_4p: the batch dimension is a symbol; validate prints `(-1, 64)` for the layers' MatMul
    # inputs, so their FLOPs and the kept tensors' sizes are unknown: counted, never added as 0
    path = next((FIXTURES / "dynamic_shape_pp_4p" / "rank_0").glob("19_validate_*.ir.xz"))
    text = lzma.open(path, "rt").read()
    forward_matmuls_unknown = sum(1 for i, ln in enumerate(text.splitlines())
                                  if re.search(r"= PrimFunc_MatMul\(", ln) and "forward_unique_id" not in ln
                                  and "duplicated: Bool(1)" not in ln and "(-1, " in text.splitlines()[i + 1])
    dump = load(str(path))
    facts = analyze(dump, 0)
    sc = stage_cost(facts)
    assert sc.cost.matmul_forward_unknown == forward_matmuls_unknown > 0 and sc.cost.matmul_forward == 0
    acts = sc.memory.activations.per_micro
    assert acts.unknown > 0
    r = CliRunner().invoke(main, ["summarize", str(FIXTURES / "dynamic_shape_pp_4p"), "--cost", "--device-memory",
                                  "64GiB"])
    assert r.exit_code == 0, r.output
    step, *lines = r.stdout.splitlines()
    # the operators FLOPs cannot count are not timed either: the step is a lower bound and says so
    assert step.startswith("Step: ≥ ") and "operators of unknown cost not timed" in step
    assert lines[0].startswith("Balance: no ratio: most forward")  # test_balance_refuses_a_ratio_when_unknown_...
    assert lines[1].startswith("Memory: stage 0 may not fit in 68,719,476,736 (64.00 GiB): ≥ ")
    assert "tensors of unknown size" in lines[1] and "fits in" not in lines[1].replace("may not fit in", "")
    assert lines[2].startswith("Advice: cannot advise: operators of unknown cost in the layers")


def test_micro_batches_from_the_job() -> None:
    # the Llama prints `micro` on Send/Receive, StridedSlice and call nodes only: the job reads 4 (make.py:
    # PipelineCell(model, 4)); the bubble uses them, not 1
    costs, job = _stage_costs(LLAMA, (0, 4), "19_validate_0089.ir.xz")
    b = balance(costs, job)
    assert b.micro_batches.value == 4 and b.stage_count.value == 2
    t = [c.cost.compute / 4 for c in costs]
    assert b.bubble == pytest.approx(1 - 4 * sum(t) / (2 * (sum(t) + 3 * max(t))))


def test_cli_file_cost_text() -> None:
    r = CliRunner().invoke(main, ["summarize", fixture("pipeline_unequal_8p/rank_2/19_validate_0078.ir.xz"),
                                  "--cost", "--device-memory", "64GiB"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].startswith("Cost: ")
    assert "held but unused: proj_in.w, accu_grads.proj_in.w, moment1.proj_in.w, moment2.proj_in.w" in r.stdout
    assert "this rank fits in 68,719,476,736 (64.00 GiB)" in r.stdout


def test_bad_device_memory_is_one_line() -> None:
    r = CliRunner().invoke(main, ["summarize", str(SCEN), "--device-memory", "lots"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "irtool: --device-memory: cannot read 'lots' (use e.g. 64GiB, 80GB or 1073741824)"


def test_bubble_formula() -> None:
    # equal stages: (S - 1) / (S + m - 1) = 3 / 7 for S 4, m 4
    assert bubble([1.0] * 4, 4) == pytest.approx(3 / 7)
    # one stage 5x the others: T = 8 + 3*5 = 23, busy 4*8 = 32 of 4*23 -> 1 - 32/92
    assert bubble([5.0, 1.0, 1.0, 1.0], 4) == pytest.approx(1 - 32 / 92)


def test_pipeline_order_and_schedule() -> None:
    from irtool.parallel.order import stage_order

    # validate orders each stage's work by data and Depend edges (pipeline_parallel_scheduler pass): stage 3 (last)
    # alternates F0 B0 F1 B1 ...; stage 2 begins two micro batches before its first backward (tests/test_order.py)
    orders = {}
    for stage, rank in RANK_OF_STAGE.items():
        s = stage_order(analyze(load(str(SCEN / f"rank_{rank}/19_validate_0078.ir.xz"))).table)
        assert s.fixed and s.schedule.startswith("1F1B" if stage else "every forward before any backward")
        orders[stage] = " ".join(s.work)
    assert orders[3] == "F0 B0 F1 B1 F2 B2 F3 B3"
    assert orders[2] == "F0 F1 B0 F2 B1 F3 B2 B3"
    assert orders[0] == "F0 F1 F2 F3 B0 B1 B2 B3"  # 4 stages, 4 micro batches: stage 0's warm-up is all of them
    # step_parallel_end has no backward yet and its forward micro batches are not chained: the order is not fixed
    s = stage_order(analyze(load(str(SCEN / "rank_2/step_parallel_end_0019.ir.xz"))).table)
    assert not s.fixed and s.schedule.startswith("this pass does not fix the order")


def test_render_pipeline_links_every_send(tmp_path) -> None:
    out = tmp_path / "pipeline.dot"
    r = CliRunner().invoke(main, ["render", str(SCEN), "--pipeline", "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    # `grep -c '= Send('` in the validate files of ranks 0, 2, 4, 6: 4 + 8 + 8 + 4 = 24 Sends, each with an edge
    # to its Receive on the peer stage (coloured by direction), inside one cluster per stage
    links = re.findall(r"r(\d)_\d+ -> r(\d)_\d+ \[[^\]]*color=\"#(1f5fbf|bf1f1f)\"", text)
    assert len(links) == 24
    assert all(abs(int(a) - int(b)) == 2 for a, b, _ in links)  # ranks 0, 2, 4, 6: one stage apart
    assert text.count("subgraph cluster_stage") == 4


def test_render_pipeline_needs_stages(tmp_path) -> None:
    r = CliRunner().invoke(main, ["render", str(FIXTURES / "semi_auto_8p"), "--pipeline", "-o", str(tmp_path / "x.svg")])
    assert r.exit_code == 2
    assert "--pipeline needs a folder of ranks on two or more pipeline stages (found 0)" in r.stderr


def test_a_memory_gate_is_the_verdict_in_every_format() -> None:
    # pipeline_unequal_sgd_8p (5/1/1/1 layers, SGD) against pipeline_even_adamw_8p (2/2/2/2, AdamWeightDecay): stage 0
    # holds 3 layers fewer (their weights, SGD's two buffers each), the others one layer and Adam's moments more
    old, new = str(FIXTURES / "pipeline_unequal_sgd_8p"), str(FIXTURES / "pipeline_even_adamw_8p")
    res = CliRunner().invoke(main, ["diff", old, new, "--fail-on", "memory", "--format", "json"])
    assert res.exit_code == 1
    d = json.loads(res.stdout)
    assert d["failed"] and d["verdict"].startswith("FAIL: stage 0: memory ") and d["failures"] == d["cost"]["failures"]
    text = CliRunner().invoke(main, ["diff", old, new, "--fail-on", "memory"]).stdout.splitlines()
    assert text[0] == d["verdict"] and text[-1] == d["verdict"]


def test_advice_with_a_stage_not_read_names_it(tmp_path: Path) -> None:
    # pipeline_2stage_8p with rank_0 (stage 0) only: its Sends go to stage 1 (`dest_rank` 4), which no rank here is on
    rank = tmp_path / "rank_0"
    rank.mkdir()
    shutil.copy(FIXTURES / "pipeline_2stage_8p" / "rank_0" / "19_validate_0078.ir.xz", rank)
    r = CliRunner().invoke(main, ["summarize", str(tmp_path), "--cost"])
    assert r.exit_code == 0, r.output
    assert "Advice: cannot advise: stage 1 not read" in r.stdout.splitlines()  # not "one stage"


_PARAM = re.compile(r"^%para\d+_(\S+): <Ref\[Tensor\[(\w+)\]\], \(([\d, ]*)\).*has_default", re.M)
_SIZE = {"Float32": 4, "Float16": 2, "Int32": 4}


@pytest.mark.parametrize("name", ["gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz",
                                  "gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz"])
def test_parameter_roles_through_cell_reuse(name: str) -> None:
    # `grep has_default` on the `# Params` lines, by their names (the tool goes by the operators instead): weights
    # `0.*`, `1.*`, `embedding.*`; AdamWeightDecay's `adam_m.*`/`adam_v.*`; `accu_grads.*`. The lazy-inline
    # compile passes them into reused cells (`call @g(%para7_...)`, `Partial(@g, ...)`): same answer.
    text = lzma.open(fixture(name), "rt").read()
    by_prefix: dict[str, int] = {}
    for pname, dtype, dims in _PARAM.findall(text):
        n = 1
        for d in (int(x) for x in dims.split(",") if x.strip()):
            n *= d
        prefix = pname.split(".")[0]
        key = {"accu_grads": "accumulation", "adam_m": "optimizer-state", "adam_v": "optimizer-state"}.get(
            prefix, "weight" if prefix in ("0", "1", "embedding") else "other")
        by_prefix[key] = by_prefix.get(key, 0) + n * _SIZE[dtype]
    m = compute_memory(analyze(load(fixture(name))).table, 2)
    assert m.role_bytes("weight").total == by_prefix["weight"] == 1_091_072
    assert m.role_bytes("optimizer-state").total == by_prefix["optimizer-state"] == 2 * 1_091_072
    assert m.role_bytes("accumulation").total == by_prefix["accumulation"] and not m.role_bytes("unused").known


def test_reused_cell_flops_count_every_call_site() -> None:
    # lazy inline prints the decoder layer's subgraph once and calls it per layer and micro batch: counted per
    # call (the `runs` fact), stage 0's forward MatMul FLOPs equal the plain compile's, which the grep of its
    # MatMul lines gives
    plain = lzma.open(fixture("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz"), "rt").read()
    by_grep = _forward_matmul_flops_by_grep(plain)
    lazy = compute_cost(analyze(load(fixture("gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz"))).table)
    assert lazy.matmul_forward == by_grep


def test_file_and_folder_give_the_same_stage_memory() -> None:
    # one question, one answer: rank 2's file alone and stage 1's row of the folder summary (its order
    # `F0 F1 F2 B0 ...` holds 3 micro batches: 3 x 16,512 activation bytes in both)
    f = CliRunner().invoke(main, ["summarize", fixture("pipeline_unequal_8p/rank_2/19_validate_0078.ir.xz"),
                                  "--cost", "--format", "json"])
    d = CliRunner().invoke(main, ["summarize", str(SCEN), "--cost", "--format", "json"])
    file_cost, dir_cost = json.loads(f.stdout)["cost"], json.loads(d.stdout)["cost"]
    assert file_cost["memory"]["activations_bytes"] == 3 * 16512
    assert file_cost["memory"]["total_bytes"] == dir_cost["stages"][1]["memory_bytes"]
    assert file_cost["compute"]["compute_flops"] == dir_cost["stages"][1]["compute_flops"]


def test_balance_refuses_a_ratio_when_unknown_cost_dominates() -> None:
    # dynamic_shape_pp_4p rank 0 validate (stage 0): all 12 `= PrimFunc_MatMul(` print a -1 dimension (dynamic batch),
    # and so do its 4 Add, 2 GeLU, 2 GeLUGrad, 2 SumExt and 2 of its 3 AddN (`TupleShape((-1, 64), (-1, 64))`), with a
    # ScalarFloorDiv and a ScalarMul of a dynamic dimension: 26 forward/backward operators of unknown cost, against 16
    # known (7 Mul, 7 AssignAdd of the accumulation, 1 UnsortedSegmentSum, the AddN of `TupleShape((), ())`). The
    # known ones gave "stage 0 does 1.23x stage 1's": a ratio of the small operators, the MatMuls left out.
    text = lzma.open(fixture("dynamic_shape_pp_4p/rank_0/19_validate_0087.ir.xz"), "rt").read().split("\n")
    matmuls = [i for i, line in enumerate(text) if "= PrimFunc_MatMul(" in line]
    assert len(matmuls) == 12 and all("-1" in text[i + 1] for i in matmuls)
    r = CliRunner().invoke(main, ["summarize", "--cost", str(FIXTURES / "dynamic_shape_pp_4p"), "--format", "json"])
    assert r.exit_code == 0, r.output
    b = json.loads(r.stdout)["cost"]
    assert b["compute_ratio"] is None and b["forward_ratio"] is None
    assert b["unknown_dominates"][0] == {"stage": 0, "unknown_ops": 26, "ops": 42}
    assert b["sentence"].startswith("no ratio: most forward, backward and recompute operators are of unknown cost on "
                                    "stage 0 (26 of 42)")
