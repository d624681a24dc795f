"""Cost, memory and balance (docs/cost.md) against numbers worked out by hand from the dump text of
pipeline_unequal_8p: 4 stages x 2 ranks (mp 2), micro_size 4 (micro batch 64/4 = 16 rows), H 64,
F 256 (fc1 (64, 256) sliced to (64, 128) by mp), layers 0-4 on stage 0 and 5, 6, 7 on stages 1-3,
recompute on layers 1 and 3, Adam (make.py)."""
from __future__ import annotations

import json
import lzma
import re

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, fixture

from irtool import load
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.balance import StageCost, balance, bubble, ranges
from irtool.parallel.cost import compute_cost, op_flops
from irtool.parallel.memory import compute_memory

SCEN = FIXTURES / "pipeline_unequal_8p"
RANK_OF_STAGE = {0: 0, 1: 2, 2: 4, 3: 6}
_SHAPE = re.compile(r"<Tensor\[\w+\], \(([\d, ]+)\)>")
_FLAGS = re.compile(r"PrimFunc_(?:Batch)?MatMul\(%\w+, %\w+, Bool\((\d)\), Bool\((\d)\)\)")


def _text(stage: int, name: str = "19_validate_0078.ir.xz") -> str:
    return lzma.open(SCEN / f"rank_{RANK_OF_STAGE[stage]}" / name, "rt").read()


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


def test_forward_matmul_flops_per_stage_by_hand() -> None:
    # stage 0: 4 micro x (proj_in (16,32)x(32,32): 2*16*32*32 = 32768 + 5 layers x (fc1 (16,64)x(64,128) +
    # fc2 (16,128)x(128,64): 2 x 262144)) = 4 x (32768 + 2621440) = 10,616,832; stage 1: 4 x 524288 = 2,097,152;
    # stage 3: + proj_out (16,32)x(32,16): 4 x 16384 = 65536 -> 2,162,688
    expected = {0: 10_616_832, 1: 2_097_152, 2: 2_097_152, 3: 2_162_688}
    for stage, flops in expected.items():
        assert _forward_matmul_flops_by_grep(_text(stage)) == flops
        dump = load(str(SCEN / f"rank_{RANK_OF_STAGE[stage]}/19_validate_0078.ir.xz"))
        assert compute_cost(analyze(dump).table).matmul_forward == flops


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


def test_parameter_bytes_of_a_rank_by_hand() -> None:
    # rank 2 (stage 1) `# Params` lines, all Float32 (4 bytes):
    # weights layers.5.w1 (64, 128) 32768 + w2 (128, 64) 32768 + norm gamma/beta (64) 256 + 256 = 66,048;
    # Adam moment1.layers.5.* + moment2.layers.5.*: 2 x 66,048; accu_grads.layers.5.*: 66,048;
    # proj_in.w (32, 64) = 8192, held unsliced with its accu_grads/moment1/moment2 and read by no forward or
    # backward operator of this stage: 4 x 8192 = 32,768 held but unused
    m = compute_memory(analyze(load(str(SCEN / "rank_2/19_validate_0078.ir.xz"))).table, 1, 4)
    roles = m.as_dict()["bytes_by_role"]
    assert (roles["weight"], roles["optimizer-state"], roles["accumulation"], roles["unused"]) == \
        (66048, 2 * 66048, 66048, 32768)
    assert sorted(m.as_dict()["unused_params"]) == ["accu_grads.proj_in.w", "moment1.proj_in.w",
                                                    "moment2.proj_in.w", "proj_in.w"]
    assert {p.name for p in m.params if p.role == "optimizer-state"} == {
        f"{k}.layers.5.{w}" for k in ("moment1", "moment2") for w in ("w1", "w2", "norm.gamma", "norm.beta")}


def test_activations_of_one_micro_batch_by_hand() -> None:
    # stage 1, micro 0 (micro batch 16 rows): what backward reads from forward: the received input x (16, 64)
    # for LayerNormGrad = 4096, LayerNorm's outputs (16, 64) + mean (16, 1) + rstd (16, 1) = 4224, and the ReLU
    # output (16, 128) for ReluGrad and fc2's weight gradient = 8192: 16,512 bytes; 1F1B on stage 1 of 4 with
    # 4 micro batches holds min(4 - 1, 4) = 3 of them
    m = compute_memory(analyze(load(str(SCEN / "rank_2/19_validate_0078.ir.xz"))).table, 1, 4)
    assert (m.activations_micro, m.in_flight, m.activations) == (16512, 3, 3 * 16512)


def test_stage_layers_and_balance_sentence() -> None:
    stages = []
    for stage, rank in RANK_OF_STAGE.items():
        dump = load(str(SCEN / f"rank_{rank}/19_validate_0078.ir.xz"))
        facts = analyze(dump)
        assert facts.stage == stage
        table = analyze(dump).table
        stages.append(StageCost(stage, rank, compute_cost(table), compute_memory(table, stage, 4), 0))
    b = balance(stages)
    # layer_stage [0, 0, 0, 0, 0, 1, 2, 3] in make.py; `grep -o 'layers-CellList/[0-9]*-Block' | sort -u` per rank
    assert [s.layers for s in b.stages] == [[0, 1, 2, 3, 4], [5], [6], [7]]
    # forward MatMul FLOPs by hand: 10,616,832 / 2,097,152 = 5.06 -> 5.1x (stage 1 and 2 tie; the first is named)
    hand = 10_616_832 / 2_097_152
    assert b.sentence == (f"stage 0 does {hand:.1f}x the forward FLOPs of stage 1: it holds layers 0-4, "
                          "stage 1 holds layer 5")
    assert b.advice is not None and [len(g) for g in b.advice.layers_per_stage] == [2, 2, 2, 2]
    assert b.advice.offset == [0, 0, 0, 0]
    assert b.advice.ratio < b.compute_ratio


def test_bubble_formula() -> None:
    # equal stages: (S - 1) / (S + m - 1) = 3 / 7 for S 4, m 4
    assert bubble([1.0] * 4, 4) == pytest.approx(3 / 7)
    # one stage 5x the others: T = 8 + 3*5 = 23, busy 4*8 = 32 of 4*23 -> 1 - 32/92
    assert bubble([5.0, 1.0, 1.0, 1.0], 4) == pytest.approx(1 - 32 / 92)


def test_ranges() -> None:
    assert (ranges([0, 1, 2, 3, 4]), ranges([7]), ranges([0, 2, 3]), ranges([])) == \
        ("layers 0-4", "layer 7", "layers 0, 2-3", "no layer")


def test_cli_folder_cost_json_and_device_memory() -> None:
    r = CliRunner().invoke(main, ["summarize", str(SCEN), "--format", "json", "--device-memory", "1MiB"])
    assert r.exit_code == 0, r.output
    cost = json.loads(r.stdout)["cost"]
    assert cost["sentence"].startswith("stage 0 does 5.1x the forward FLOPs of stage 1")
    assert [s["fits"] for s in cost["stages"]] == [s["memory_bytes"] <= 2**20 for s in cost["stages"]]
    assert cost["stages"][0]["fits"] is False  # stage 0 holds 5 layers: weights alone 5 x 66,048 + more
    assert all(s["headroom_bytes"] == 2**20 - s["memory_bytes"] for s in cost["stages"])


def test_cli_file_cost_text() -> None:
    r = CliRunner().invoke(main, ["summarize", fixture("pipeline_unequal_8p/rank_2/19_validate_0078.ir.xz"),
                                  "--cost", "--device-memory", "64GiB"])
    assert r.exit_code == 0, r.output
    assert "held but unused: proj_in.w, accu_grads.proj_in.w, moment1.proj_in.w, moment2.proj_in.w" in r.stdout
    assert "this rank fits in 68,719,476,736 (64.00 GiB)" in r.stdout


def test_bad_device_memory_is_one_line() -> None:
    r = CliRunner().invoke(main, ["summarize", str(SCEN), "--device-memory", "lots"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "irtool: --device-memory: cannot read 'lots' (use e.g. 64GiB, 80GB or 1073741824)"


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


def test_diff_memory_gate(tmp_path) -> None:
    # the point of this test is to detect one change: rank 2's `%para4_layers.5.w1` printed (64, 256) instead of
    # (64, 128) in `# Params`: +64*128*4 = 32,768 bytes held on stage 1
    text = _text(1)
    line = "%para4_layers.5.w1: <Ref[Tensor[Float32]], (64, 128), "
    assert text.count(line) == 1
    old_dir, new_dir = tmp_path / "old" / "rank_2", tmp_path / "new" / "rank_2"
    for d, t in ((old_dir, text), (new_dir, text.replace(line, line.replace("(64, 128)", "(64, 256)")))):
        d.mkdir(parents=True)
        (d / "19_validate_0078.ir").write_text(t)
    same = CliRunner().invoke(main, ["diff", str(old_dir), str(old_dir), "--fail-on", "memory"])
    assert same.exit_code == 0, same.output
    r = CliRunner().invoke(main, ["diff", str(old_dir), str(new_dir), "--fail-on", "memory", "--format", "json"])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    (st,) = doc["cost"]["stages"]
    assert st["stage"] == 1 and st["new"]["memory_bytes"] - st["old"]["memory_bytes"] == 32768
    assert st["new"]["memory_by_role"]["weight"] == 66048 + 32768
    grow = 32768 / st["old"]["memory_bytes"]  # about 9.5%
    assert CliRunner().invoke(main, ["diff", str(old_dir), str(new_dir), "--fail-on", "comm",
                                     "--max-memory-increase", f"{grow * 100 + 0.5:.1f}%"]).exit_code == 0
    r = CliRunner().invoke(main, ["diff", str(old_dir), str(new_dir), "--fail-on", "comm", "--max-memory-increase", "5%"])
    assert r.exit_code == 1
    assert "exceeds +5%" in r.stdout


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
    roles = compute_memory(analyze(load(fixture(name))).table, 0, 2).as_dict()["bytes_by_role"]
    assert roles["weight"] == by_prefix["weight"] == 1_091_072
    assert roles["optimizer-state"] == by_prefix["optimizer-state"] == 2 * 1_091_072
    assert roles["accumulation"] == by_prefix["accumulation"] and roles["unused"] == 0


def test_reused_cell_flops_count_every_call_site() -> None:
    # lazy inline prints the decoder layer's subgraph once and calls it per layer and micro batch: counted per
    # call site, stage 0's forward MatMul FLOPs equal the plain compile's, which the grep of its MatMul lines gives
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
    assert file_cost["compute"]["flops"] == dir_cost["stages"][1]["flops"]
