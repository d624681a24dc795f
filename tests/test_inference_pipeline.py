"""Stage of each rank of a 2-stage inference pipeline (fixtures/mindir/inference_pp_4p_m2, inference_pp_8p_m4:
MindSpore's `PipelineCellInference` wrapper, set_train(False)). Its Sends print only `micro`, `pipeline_end` and
`freeze` as primal attributes, so the stage comes from the peer's global rank and the own rank's collective group
(docs/parallel.md §7 rule 6). Expected stages are worked out by hand in the comments from the dump text:
  grep '= Send(' FILE | grep -o 'dest_rank: I64(N)'; grep '= Receive(' FILE | grep -o 'src_rank: I64(N)';
  grep '= AllReduce(' FILE | grep -o 'group_ranks: "a-b"'."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, fixture

import irtool
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.job import job_of

# (folder, rank, stage, peer global rank, Send/Receive count). 4p: rank 0 sends 2x to rank 2 and its AllReduce group
# is "0-1": own rank 0 -> d = 2, stage [0, 2) holds 0 and 1 -> stage 0 (own rank 1 -> d = 1 would put 0 and 1 in two
# stages: impossible). Rank 3 receives 2x from rank 1, group "2-3": own rank 3 -> d = 2, stage [2, 4) -> stage 1.
# 8p: rank 2 sends 4x to rank 6, group "2-3": own 2 -> d = 4, stage [0, 4) -> 0 (own 3 -> d = 3, [3, 6) lacks 2).
# Rank 5 receives 4x from rank 1, group "4-5": own 5 -> d = 4, [4, 8) -> stage 1 (own 4 -> d = 3, [3, 6) -> 1 too).
CASES = [
    ("inference_pp_4p_m2", 0, 0, 2, 2), ("inference_pp_4p_m2", 1, 0, 3, 2),
    ("inference_pp_4p_m2", 2, 1, 0, 2), ("inference_pp_4p_m2", 3, 1, 1, 2),
    *[("inference_pp_8p_m4", r, 0, r + 4, 4) for r in range(4)],
    *[("inference_pp_8p_m4", r, 1, r - 4, 4) for r in range(4, 8)],
]


def _files(folder: str, rank: int) -> list[str]:
    return sorted(str(p.relative_to(FIXTURES)) for p in (FIXTURES / folder / f"rank_{rank}").glob("*.ir.xz"))


@pytest.mark.parametrize(("folder", "rank", "stage", "peer", "hops"), CASES)
def test_each_rank_on_its_configured_stage(folder: str, rank: int, stage: int, peer: int, hops: int) -> None:
    rels = _files(folder, rank)
    assert len(rels) == 2  # step_parallel_end and validate
    for rel in rels:
        facts = analyze(irtool.load(fixture(rel)))
        assert facts.stage_info.stage == stage, rel
        assert facts.stage_info.votes == {stage: hops}, rel
        p2p = [c for c in facts.comm if c.op in ("Send", "Receive")]
        assert len(p2p) == hops and {c.category for c in p2p} == {"pipeline"}
        assert {c.op for c in p2p} == {"Send" if stage == 0 else "Receive"}
        assert {c.peer_rank for c in p2p} == {peer}
        # a forward Send goes to the next stage, a forward Receive comes from the previous: with 2 stages, 1 - stage
        assert {c.peer_stage for c in p2p} == {1 - stage}
        assert sorted(c.micro for c in p2p) == list(range(hops))  # one hop per micro batch
        # the rank alone: MindSpore pairs rank r with r + d, d ranks per stage (the peer, not the largest group: its
        # AllReduce group of 2 is mp), 2 stages of the validate Send/Receive's world group of 2d ranks
        job = job_of([facts.job])
        d = abs(peer - rank)
        assert job.dp.value * job.mp.value == d and job.mp.value == 2, rel
        if "validate" in rel:
            assert (job.pipeline_stages.value, job.world_size.value) == (2, 2 * d), rel


def test_manifest_agrees_with_the_cases() -> None:
    for folder in ("inference_pp_4p_m2", "inference_pp_8p_m4"):
        m = json.loads((FIXTURES / folder / "manifest.json").read_text())
        want = {str(r): s for f, r, s, _p, _h in CASES if f == folder}
        assert {r: v["stage"] for r, v in m["peers_of_rank"].items()} == want == m["stage_of_rank"]


def test_summarize_names_the_stage() -> None:
    out = CliRunner().invoke(main, ["summarize", fixture("inference_pp_4p_m2/rank_3/step_parallel_end_0018.ir.xz")])
    assert out.exit_code == 0
    assert "Pipeline stage: 1 (2 votes, peer rank and own rank (inference))" in out.output
    folder = CliRunner().invoke(main, ["summarize", "--format", "json", "--jobs", "1",
                                       str(FIXTURES / "inference_pp_8p_m4")])
    assert folder.exit_code == 0, folder.output
    d = json.loads(folder.output)
    assert {r["rank"]: r["stage"] for r in d["ranks"]} == {r: int(r >= 4) for r in range(8)}


def test_a_training_pipeline_is_unchanged() -> None:
    # pipeline_2stage_8p rank 4 prints pr.dest_rank/src_rank: rule 2, not the inference rule
    facts = analyze(irtool.load(fixture("pipeline_2stage_8p/rank_4/19_validate_0078.ir.xz")))
    assert facts.stage_info.stage == 1
    assert not any("inference" in h for h in facts.stage_info.how)


def test_stage_line_says_why_pipeline_hops_give_no_stage() -> None:
    # pipeline_2stage_8p rank 0 step_parallel_begin: grep -cE '= (Send|Receive)\(' -> 4, but a pass before
    # step_parallel_end gives no stage (§1); semi_auto_8p has no Send/Receive at all (grep -c -> 0)
    pre = CliRunner().invoke(main, ["summarize", fixture("pipeline_2stage_8p/rank_0/step_parallel_begin_0018.ir.xz")])
    # line 8: after the six-line headline, a blank line and the file's line
    assert pre.output.splitlines()[8] == ("Pipeline stage: unknown (4 pipeline Send/Receive; stages are read from "
                                          "step_parallel_end or a later pass)")
    plain = CliRunner().invoke(main, ["summarize", fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz")])
    assert plain.output.splitlines()[8] == "Pipeline stage: none (no pipeline Send/Receive)"
    assert plain.output.splitlines()[0] == "Rank 0, pipeline stage: none (no pipeline Send/Receive)"


def test_an_inference_stage_holds_weights_not_hyperparameters() -> None:
    # inference_pp_8p_m4 rank_4 validate header (lines 22-25): `%para2_network.blocks.2.w1` ... `%para5_network.blocks.
    # 3.w2`, each `<Ref[Tensor[Float32]], (32, 32)>` with `has_default`: 4 x 32 x 32 x 4 B = 16,384 B. No node is
    # backward and nothing updates a parameter (`grep -c -E 'Assign|Adam|Momentum'` finds none), and the MatMuls the
    # two calls run read them: the model's weights, with no gradient and no optimizer state beside them.
    rel = "inference_pp_8p_m4/rank_4/19_validate_0082.ir.xz"
    import lzma

    text = lzma.open(fixture(rel), "rt").read()
    header = text.split("\n")[21:25]
    assert [h.split(":")[0] for h in header] == ["%para2_network.blocks.2.w1", "%para3_network.blocks.2.w2",
                                                 "%para4_network.blocks.3.w1", "%para5_network.blocks.3.w2"]
    assert all("(32, 32)" in h and "Float32" in h and "has_default" in h for h in header)
    assert not any(op in text for op in ("Assign", "Adam", "Momentum"))
    facts = analyze(irtool.load(fixture(rel)))
    roles = facts.table.get("param_roles")
    assert {name: r.role for name, r in roles.items()} == dict.fromkeys(
        ["network.blocks.2.w1", "network.blocks.2.w2", "network.blocks.3.w1", "network.blocks.3.w2"], "weight")
    r = CliRunner().invoke(main, ["summarize", "--cost", str(FIXTURES / rel)])
    lines = r.stdout.splitlines()
    assert "  parameters (weights)                              16,384 (16.00 KiB)" in lines
    assert "  other parameters (hyperparameters, counters)      0" in lines
    assert "  gradients without a buffer *                      0" in lines


def test_an_inference_stage_keeps_no_micro_batch_for_a_backward() -> None:
    # inference_pp_4p_m2: no node of either stage's validate is backward (`grep -c -E 'Gradients|forward_unique_id'`
    # finds none on rank 0 or rank 2): each stage runs its two calls forward only. Nothing is held for a backward, so
    # no micro batch is in flight, whether the dependencies order the calls (stage 0) or not (stage 1); a 1F1B guess
    # of stage s holding min(2 - s, 2) is a training schedule's.
    import lzma

    for r in (0, 2):
        text = lzma.open(fixture(f"inference_pp_4p_m2/rank_{r}/19_validate_0082.ir.xz"), "rt").read()
        assert "Gradients" not in text and "forward_unique_id" not in text
    out = CliRunner().invoke(main, ["summarize", "--cost", str(FIXTURES / "inference_pp_4p_m2")]).stdout
    for s in (0, 1):
        assert f"  stage {s}: micro batches in flight: 0 (no backward work: no activations are kept for one " \
               "(inference))" in out.splitlines()
    # the viewer's execution-order graph says what the cost says (one decider, `balance.in_flight`): it said `—` on
    # both stages, from the order alone
    from irtool.view.models import models_for

    groups = models_for(str(FIXTURES / "inference_pp_4p_m2")).graphs[1]["groupNodeAttributes"]
    assert [g["micro batches in flight"] for k, g in groups.items() if k.startswith("stage")] == ["0", "0"]


def test_stages_that_tie_are_two_stages_in_the_balance() -> None:
    # inference_pp_4p_m2 (make.py: 16 rows, 2 micro batches of 8, H 32, F 64, mp 2): a block's fc1 (8, 32) x (32, 32)
    # = 2*8*32*32 = 16,384 FLOPs, its ReLU 8*32 = 256, fc2 (8, 32) x (32, 32) = 16,384: 33,024; two blocks per stage,
    # each run for 2 micro batches: 132,096 on either stage. A tie compares stage 0 with stage 1, not with itself.
    r = CliRunner().invoke(main, ["summarize", "--cost", str(FIXTURES / "inference_pp_4p_m2"), "--format", "json"])
    cost = json.loads(r.stdout)["cost"]
    assert [s["compute_flops"] for s in cost["stages"]] == [132_096, 132_096]
    assert {cost["heaviest_stage"], cost["lightest_stage"]} == {0, 1} and cost["compute_ratio"] == 1.0
    assert "FLOPs: stage 0 does 1.00x stage 1's" in cost["sentence"]


def test_the_advice_refuses_to_move_layers_that_carry_none_of_the_work() -> None:
    # inference_pp_4p_m2 as read: each stage's two layers carry all of its work (test above: a block 33,024 FLOPs x 2
    # micro batches = 66,048 per layer), so moving a layer moves known work and the split is advised. Issue 37's
    # inference folder put every layer's cost at 0 and the work in "(no layer)": the advice claimed 1.14x for a split
    # that gave 3.3x, since a moved layer took none of its work with it. No compile here reproduces that attribution,
    # so the same two stages with each layer's FLOPs booked to no layer stand for it: the advice must refuse, saying why.
    from dataclasses import replace

    from irtool.parallel.balance import balance, stage_cost
    from irtool.parallel.job import job_of

    costs, jobs = [], []
    for r in (0, 2):
        facts = analyze(irtool.load(fixture(f"inference_pp_4p_m2/rank_{r}/19_validate_0082.ir.xz")), r)
        jobs.append(facts.job)
        costs.append(stage_cost(facts))
    job = job_of(jobs)
    assert [{k: v[0] for k, v in c.cost.layer_compute().items()} for c in costs] == [{0: 66_048, 1: 66_048},
                                                                                      {2: 66_048, 3: 66_048}]
    advice = balance(costs, job).advice
    assert advice.cannot is None and advice.advised is not None
    unplaced = [replace(c, cost=replace(c.cost, by_layer={None: {p: sum(v.get(p, 0) for v in c.cost.by_layer.values())
                                                                   for p in c.cost.flops}})) for c in costs]
    refused = balance(unplaced, job).advice
    assert refused.advised is None
    assert refused.cannot == ("the layers carry none of the work (stage 0: layers 0, 1 carry 0 of its 132,096 FLOPs; "
                              "stage 1: layers 2, 3 carry 0 of its 132,096 FLOPs; all of it work of no layer): a moved "
                              "layer's cost is unknown")



KV = "mindformers_llama_pp2_infer_kv"


def test_a_mindformers_kv_cache_inference_pipeline_is_advised_by_its_layers_work() -> None:
    # MindFormers' Llama predicting with a KV cache on 2 stages (make.py: dp 1 x mp 2 x pp 2, hidden 512, 8 heads of 64,
    # 4 kv heads, FFN 1408, seq 512, 4 micro batches of 1 row). rank_0 validate header lines 25-47: the model's weights,
    # each `Ref[Tensor[Float32]]` as split for mp 2: the embedding (2048, 512) 4,194,304 B; per layer the two norms (512)
    # 4,096, wq (256, 512) 524,288, wk and wv (128, 512) 262,144 each, wo (512, 256) 524,288, w1 and w3 (704, 512) and
    # w2 (512, 704) 1,441,792 each: 5,902,336 per layer, 15,998,976 B on the rank. No node is backward and no optimizer
    # updates any: they are weights, not hyperparameters (issue 37's inference folder called them so).
    import lzma

    from irtool.parallel.balance import stage_cost
    from irtool.parallel.timing import MATRIX

    path = fixture(f"{KV}/rank_0/19_validate_0082.ir.xz")
    text = lzma.open(path, "rt").read()
    assert "Gradients" not in text and "forward_unique_id" not in text and "Adam" not in text
    facts = analyze(irtool.load(path), 0)
    sc = stage_cost(facts, keep_ops=True)
    model = [p for p in sc.memory.params if "_cache" not in p.name]  # the KV caches: (512, 16, 2, 64) fp16, 4 of them
    assert len(model) == 19 and {p.role for p in model} == {"weight"} and sum(p.bytes for p in model) == 15_998_976
    assert not any(p.role == "hyperparameter" for p in sc.memory.params)
    # line 900 `PrimFunc_ReshapeAndCache(%43, %48, %para43_..key_cache, %para42_..value_cache, ...)` (and 2728 for layer
    # 1): the KV cache's write scatters the step's keys and values into the cache, no arithmetic: 0 FLOPs, not an
    # operator of unknown cost (which refused the advice: "operators of unknown cost in the layers")
    t = facts.table
    flops = {o.node: o.flops for o in sc.cost.ops}
    assert [(n.line, flops[n.uid]) for n in t.dump.nodes() if n.op == "ReshapeAndCache"] == [(900, 0), (2728, 0)]
    assert sc.cost.compute_unknown == 0
    # each layer's matrix work per micro batch (512 tokens; mp 2 halves the heads and FFN): wq 2*512*512*256 =
    # 134,217,728, wk and wv 2*512*512*128 = 67,108,864 each, wo 2*512*256*512 = 134,217,728, w1, w3 and w2
    # 2*512*512*704 = 369,098,752 each, the scores and weighted values of 4 heads 2*4*512*512*64 = 134,217,728 each
    # (BatchMatMul, lines 1035 and 1241): 1,778,384,896; x 4 micro batches = 7,113,539,584 per layer
    by_layer: dict[int | None, int] = {}
    for n in t.dump.nodes():
        if n.op in MATRIX and n.uid in flops:
            by_layer[t("layer", n)] = by_layer.get(t("layer", n), 0) + flops[n.uid]
    assert by_layer == {0: 7_113_539_584, 1: 7_113_539_584}
    # the layers carry the stage's work (what moves with a layer is known): the advice is given, the current split best
    r = CliRunner().invoke(main, ["summarize", "--cost", str(FIXTURES / KV), "--format", "json"])
    advice = json.loads(r.stdout)["cost"]["advice"]
    assert advice["cannot"] is None and advice["advised"]["layers_per_stage"] == [[0, 1], [2, 3]]


def test_the_result_broadcast_is_pipeline_traffic() -> None:
    # inference_pp_4p_m2_broadcast (pipeline_result_broadcast=True): rank 0 line 235 `AllReduce(%10) {instance name:
    # PARALLEL_RESULT_BROADCAST}` on `group_ranks: "0-2"` (one rank per stage), (16, 32) Float32 = 2,048 B: the last
    # stage's output returned on every stage. With the 2 Sends of 1,024 B (rank 0) and 2 Receives (rank 2): 8,192 B
    out = CliRunner().invoke(main, ["summarize", str(FIXTURES / "inference_pp_4p_m2_broadcast")]).stdout
    assert "Communication: 10 nodes run 14 times a step, 16,384 B: pipeline 8,192 B (6), operator-forward 8,192 B (4)" \
        in out and "Unknown or unpaired: none" in out
