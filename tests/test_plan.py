"""`irtool plan` (issue 39): configurations predicted from the dry-run Llama dp2 x mp2 x pp2, held against the
other dry-run compiles of the same network (their make.py sizes and their dry run's own peaks)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import reads

from irtool.cli import main
from irtool.parallel import plan as P
from irtool.parallel.hardware import load_profile
from irtool.plan import read_basis
from irtool.selection import Selection

FIX = Path(__file__).resolve().parents[1] / "fixtures/mindir"
BASE = FIX / "dryrun_llama_dp2mp2pp2"
# make.py's model: hidden 512, 8 heads of 64 (4 kv heads), FFN 1408, vocabulary 4096, 4 layers, float32 parameters
H, KV, F, V = 512, 4 * 64, 1408, 4096
LAYER_SPLIT = H * H * 2 + KV * H * 2 + 3 * F * H  # wq, wo, wk, wv, w1, w2, w3: split by mp
NORMS = 2 * H  # attention_norm, ffn_norm: whole on every rank


@pytest.fixture(scope="module")
def basis() -> P.Basis:
    return read_basis(Selection.of(str(BASE)), load_profile(None))


def _dry(folder: str, rank: int) -> int:
    return json.loads((FIX / folder / "dryrun.json").read_text())[str(rank)]["memory_block_csv_max_actual_used_B"]


def test_dp1mp4_parameters_exact(basis: P.Basis) -> None:
    """dp1 x mp4: nothing to shard the optimizer over; every split weight a quarter, by hand from make.py's sizes."""
    p = P.plan(basis, [P.Candidate(1, 4, 2, 4, True, True, 4)])[0]
    assert not p.refused
    stage0 = (V * H + 2 * LAYER_SPLIT) // 4 + 2 * NORMS  # embedding + layers 0-1
    f = p.stages[0].figures
    assert f["weight"].value == stage0 * 4 == 8_003_584
    assert f["accumulation"].value == stage0 * 4
    assert f["optimizer-state"].value == 2 * stage0 * 4  # AdamW's two moments, shaped as the weight
    assert f["weight"].how.startswith("re-derived")


def test_base_parameters_exact(basis: P.Basis) -> None:
    """dp2 x mp2 with optimizer sharding over dp: the split weights halved again; the norms (2 KB, under the 64 KB
    threshold) and the accumulation buffers (the mp slice) are not sharded."""
    p = P.plan(basis, [P.current(basis)])[0]
    assert p.current
    split = (V * H + 2 * LAYER_SPLIT) // 2
    f = p.stages[0].figures
    assert f["weight"].value == (split // 2 + 2 * NORMS) * 4
    assert f["accumulation"].value == (split + 2 * NORMS) * 4


def test_pp4_with_8_layers_parameters_exact(basis: P.Basis) -> None:
    """dp1 x mp2 x pp4 with 8 layers (mindformers_llama_pp4's configuration), from the 4-layer pp2 compile: two
    layers a stage, the embedding on the first, the final norm and the head on the last; no optimizer shard at dp 1."""
    p = P.plan(basis, [P.Candidate(1, 2, 4, 8, True, True, 8, num_layers=8)])[0]
    assert not p.refused and [s.layers for s in p.stages] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    two = 2 * (LAYER_SPLIT // 2 + NORMS)
    assert [s.figures["weight"].value for s in p.stages] == \
        [(V * H // 2 + two) * 4, two * 4, two * 4, (two + H + V * H // 2) * 4] == \
        [15_998_976, 11_804_672, 11_804_672, 16_001_024]
    assert all(s.figures["accumulation"].value == s.figures["weight"].value for s in p.stages)


def test_pipeline_traffic_per_boundary(basis: P.Basis) -> None:
    """A middle stage of pp4 sends and receives at two boundaries: twice an end stage's pipeline bytes; each
    boundary one (1, 512, 512) float16 activation per micro batch each way (8 micro batches)."""
    p = P.plan(basis, [P.Candidate(1, 2, 4, 8, True, True, 8, num_layers=8)])[0]
    pipe = [s.comm_by_category["pipeline"] for s in p.stages]
    assert pipe == [2 * 8 * 524_288, 4 * 8 * 524_288, 4 * 8 * 524_288, 2 * 8 * 524_288]


@pytest.mark.parametrize("folder,cand", [
    ("dryrun_llama_dp2mp2pp2", P.Candidate(2, 2, 2, 4, True, True, 8)),
    ("dryrun_llama_dp1mp4pp2", P.Candidate(1, 4, 2, 4, True, True, 4)),
    ("dryrun_llama_micro8", P.Candidate(2, 2, 2, 8, True, True, 16)),
    ("dryrun_llama_recompute_off", P.Candidate(2, 2, 2, 4, False, True, 8)),
    ("dryrun_llama_pp4", P.Candidate(1, 2, 4, 4, True, True, 4)),
    ("dryrun_llama_dp4mp1pp2", P.Candidate(4, 1, 2, 4, True, True, 16)),
    ("dryrun_llama_dp2mp2pp2_l8", P.Candidate(2, 2, 2, 4, True, True, 8, num_layers=8)),
    ("dryrun_llama_opt_shard_off", P.Candidate(2, 2, 2, 4, True, False, 8)),
    ("dryrun_llama_dp2mp2pp2_b2", P.Candidate(2, 2, 2, 4, True, True, 16)),
    ("dryrun_llama_dp2mp2pp2_l6", P.Candidate(2, 2, 2, 4, True, True, 8, num_layers=6)),
    # its working sets' tensors split by dp only grow with the batch and do not shrink with mp; it peaks in a backward
    # of the last stage where the compile peaks in the loss; unsharded, the weights' compute copies stay all step
    ("dryrun_llama_dp1mp4pp2_b2", P.Candidate(1, 4, 2, 4, True, True, 8)),
    # two middle stages scaled from the first (no embedding), no tensor parallelism, 6 micro batches over 4 stages
    ("dryrun_llama_dp2mp1pp4_m6", P.Candidate(2, 1, 4, 6, True, True, 12)),
    # the first layer of each stage recomputed (MindFormers' list form): stage 0 peaks in the kept layer's backward
    ("dryrun_llama_dp2mp2pp2_rc1", P.Candidate(2, 2, 2, 4, True, True, 8, recompute_counts=(1, 1))),
    ("dryrun_llama_dp1mp4pp2_m8_rc1", P.Candidate(1, 4, 2, 8, True, True, 8, recompute_counts=(1, 1))),
    ("dryrun_llama_dp1mp2pp4_l8", P.Candidate(1, 2, 4, 8, True, True, 8, num_layers=8))])
def test_peak_within_5_percent_of_the_dry_run(basis: P.Basis, folder: str, cand: P.Candidate) -> None:
    p = P.plan(basis, [cand])[0]
    ranks = sorted(int(r) for r in json.loads((FIX / folder / "dryrun.json").read_text()))
    for stage, rank in enumerate(ranks):
        ours, theirs = p.stages[stage].figures["peak_bytes"].value, _dry(folder, rank)
        assert abs(ours / theirs - 1) <= 0.05, (folder, rank, ours, theirs)


def test_peak_order_as_the_dry_run(basis: P.Basis) -> None:
    """Ordered by the fullest rank's peak: dp1mp4 (56M) < dp2mp2 (69M) ~ micro8 (69M) < recompute off (107M)."""
    off = P.plan(basis, [P.Candidate(2, 2, 2, 4, False, True, 8)])[0].peak_bytes
    now = P.plan(basis, [P.current(basis)])[0].peak_bytes
    mp4 = P.plan(basis, [P.Candidate(1, 4, 2, 4, True, True, 4)])[0].peak_bytes
    assert mp4 < now < off


def test_recompute_off_drops_recomputed_collectives(basis: P.Basis) -> None:
    """mp_comm_recompute: a recomputed copy runs a tensor-parallel AllReduce again; without recompute it does not.
    The two compiles' rank 0 differ by one AllReduce of (1, 512, 512) float16 (524,288 B) per layer and micro batch:
    the recompute-off validate has 8 fewer runs of it (2 layers x 4 micro batches)."""
    on = P.plan(basis, [P.current(basis)])[0].stages[0].comm_by_category["operator-forward"]
    off = P.plan(basis, [P.Candidate(2, 2, 2, 4, False, True, 8)])[0].stages[0].comm_by_category["operator-forward"]
    assert on - off == 2 * 4 * 524_288


def test_micro_batch_size_2_gathers_the_sliced_layer_output(basis: P.Basis) -> None:
    """recompute_slice_activation: the output of layer 0 (stage 0; layer 2 on stage 1), read by the recomputed next
    layer, is kept sliced over the mp 2 ranks holding it when its dimension 0 (the micro-batch size per dp rank)
    divides by 2, and gathered back once per micro batch: at batch 2, 4 x (2, 512, 512) float16 = 4,194,304 B a step
    (the AllGather mindformers_llama_dp2mp2pp2_b2 has and the batch-1 compile has not); at batch 1, with recompute
    off (nothing recomputed reads it) or over mp 4 (2 rows do not split 4 ways), none. The b2 compile's own
    communication per rank is then predicted to a few bytes (the 12 B of `other` scaled by 2 rounds)."""
    from irtool.parallel.balance import stage_cost

    def other(c: P.Candidate) -> list[int]:  # R6s: redistribution
        return [s.comm_by_category.get("redistribution", 0) for s in P.plan(basis, [c])[0].stages]

    one = other(P.current(basis))
    assert [a - 2 * b for a, b in zip(other(P.Candidate(2, 2, 2, 4, True, True, 16)), one)] == [4 * 2 * 512 * 512 * 2] * 2
    assert other(P.Candidate(2, 2, 2, 4, False, True, 16)) == [2 * b for b in one]
    assert other(P.Candidate(1, 4, 2, 4, True, True, 8)) == [2 * b for b in one]
    p = P.plan(basis, [P.Candidate(2, 2, 2, 4, True, True, 16)])[0]
    sel = Selection.of(str(FIX / "mindformers_llama_dp2mp2pp2_b2"))
    for rank in sel.files:
        got = sel.read(rank)
        real = stage_cost(got.facts).comm.total
        assert abs(p.stages[got.stage].figures["comm_bytes"].value - real) <= 12
        # each layer's output Add prints `slice_activation`; the compile slices the one a recomputed layer reads
        first = 2 * got.stage
        assert [(m.layer, m.sliced, m.dim0, m.nbytes, m.split, m.runs)
                for m in got.facts.table.get("marked_outputs")] == \
            [(first, True, 2, 2 * 512 * 512 * 2, (2, 1, 1), 4), (first + 1, False, 2, 2 * 512 * 512 * 2, (2, 1, 1), 4)]
    # the other way: from the batch-2 compile (its gathers taken out of its layer rows), batch 1 has none
    back = P.plan(read_basis(sel, None), [P.Candidate(2, 2, 2, 4, True, True, 8)])[0]
    one_sel = Selection.of(str(FIX / "mindformers_llama_dp2mp2pp2"))
    for rank in one_sel.files:
        got = one_sel.read(rank)
        assert abs(back.stages[got.stage].figures["comm_bytes"].value - stage_cost(got.facts).comm.total) <= 12


def test_the_compiled_configuration_gives_back_the_compile(basis: P.Basis) -> None:
    """Planned as compiled, every figure is the compile's own: its peak of live tensors (docs/cost.md §2.1, the walk
    the other predictions scale) and its communication per step."""
    from irtool.parallel.balance import stage_cost

    p = P.plan(basis, [P.current(basis)])[0]
    # one step, one answer: the plan's step and bubble of the compiled configuration are summarize's played ones
    from irtool.parallel.timing import simulate

    played = simulate([s.timing for s in basis.stages])
    assert p.step_seconds == pytest.approx(played.seconds, rel=1e-9)
    assert p.bubble == pytest.approx(played.bubble, rel=1e-9)
    sel = Selection.of(str(BASE))
    for stage, rank in ((0, 0), (1, 4)):
        got = sel.read(rank)
        cost = stage_cost(got.facts)
        assert p.stages[stage].figures["peak_bytes"].value == cost.lifetimes.peak_bytes
        assert p.stages[stage].figures["comm_bytes"].value == cost.comm.total


def test_a_candidate_step_is_played_in_the_order_the_compiler_fixes(basis: P.Basis) -> None:
    """A candidate of other micro batches or stages is played out (1F1B: stage s of pp begins min(pp - s, m) forwards,
    then one backward, one forward): its units run in the order the compiler fixed for that configuration, read from
    the dry-run compiles of it (micro8: 8 micro batches over 2 stages; pp4: stage 1 of 4 begins 3 forwards)."""
    def units(step: Any, stage: int) -> list[Any]:
        return [b.unit for b in sorted((b for b in step.boxes if b.stage == stage), key=lambda b: b.start)]

    for folder, cand, ranks in (("dryrun_llama_micro8", P.Candidate(2, 2, 2, 8, True, True, 16), {0: 0, 1: 4}),
                                ("dryrun_llama_pp4", P.Candidate(1, 2, 4, 4, True, True, 4), {1: 2})):
        p = P.plan(basis, [cand])[0]
        assert p.played is not None and p.step_seconds == p.played.seconds
        sel = Selection.of(str(FIX / folder))
        for stage, rank in ranks.items():
            fixed = sel.read(rank).facts.table.get("order")
            assert fixed.fixed and units(p.played, stage) == [u.key for u in fixed.units]
    assert units(p.played, 1)[:5] == [("F", 0, None), ("F", 1, None), ("F", 2, None), ("B", 0, None), ("F", 3, None)]


def test_a_layout_it_does_not_plan_is_refused_in_one_line() -> None:
    """An interleaved pipeline (2 chunks a stage): its chunks' layout is not re-derived, so no plan is made."""
    r = CliRunner().invoke(main, ["plan", str(FIX / "pipeline_interleaved_4stage_8p")])
    assert r.exit_code == 2 and "cannot plan: model chunks per stage 2" in r.output


@reads("auto_parallel_8p")
def test_a_weight_split_by_more_than_mp_is_refused_not_divided_by_zero() -> None:
    """auto_parallel_8p (mp 4, from the search): `head.w` is (64, 5) on a rank (line 40) of (64, 10)
    (`origin_input_shapes`, line 1015), split 2 on dimension 1. Under mp 1 that split would be 2 x 1 / 4: no
    whole number, so such a candidate is refused with its reason (it raised ZeroDivisionError), the others
    planned; and the headline says "1 micro batch", not "1 micro batches"."""
    r = CliRunner().invoke(main, ["plan", str(FIX / "auto_parallel_8p")])
    assert r.exit_code == 0, r.output
    assert "compiled dp 2 x mp 4 x pp 1, 1 micro batch, " in r.output
    refused = [line for line in r.output.splitlines() if line.lstrip().startswith("dp8 mp1 pp1 m1 ")]
    assert refused and "head.w (64, 10): dimension 1 split 2 under mp 4, which does not scale to mp 1" in refused[0]


def test_refusals(basis: P.Basis) -> None:
    why = {c: P.refusals(basis, c, 8) for c in (
        P.Candidate(2, 2, 2, 4, True, True, 8, offset=None),
        P.Candidate(1, 1, 8, 8, True, False, 8),
        P.Candidate(2, 2, 2, 1, True, True, 8),
        P.Candidate(1, 3, 2, 4, True, False, 4),
        P.Candidate(2, 2, 2, 4, True, True, 12))}
    texts = list(why.values())
    assert texts[0] == []
    assert "4 layers, fewer than 8 stages" in texts[1]
    assert "1 micro batch, fewer than 2 stages" in texts[2]
    assert any("attention heads 8 not divisible by mp 3" in w for w in texts[3])
    assert any("FFN size 1408 not divisible by mp 3" in w for w in texts[3])
    assert any("not the 8 devices" in w for w in texts[3])
    assert any("global batch 12 not divisible" in w for w in texts[4])


def test_mp_must_divide_the_key_value_heads(basis: P.Basis) -> None:
    """MindFormers refuses `n_kv_heads % mp`: the dry-run Llama's 4 key-value heads (the job's, tests/test_logical.py
    works them out from the key's `tile_kv` repeat) take mp 1, 2 or 4, never 8 (its 8 heads, vocabulary 4096 and the
    wk weight's 256 rows would)."""
    assert basis.job.kv_heads.value == 4
    mp8 = P.refusals(basis, P.Candidate(1, 8, 1, 1, True, False, 8), 8)
    assert mp8[0] == "key-value heads 4 not divisible by mp 8"
    assert P.refusals(basis, P.Candidate(1, 4, 2, 4, True, True, 8), 8) == []
    r = CliRunner().invoke(main, ["plan", str(BASE), "--device-memory", "100MiB"])
    assert r.exit_code == 0, r.output
    first = r.output.splitlines()[0]
    assert first.startswith("Fastest that fits: dp") and " mp8 " not in first and "mp8" not in first
    assert "key-value heads 4 not divisible by mp 8" in r.output


def test_cli_json_fields() -> None:
    r = CliRunner().invoke(main, ["plan", str(BASE), "--format", "json", "--device-memory", "80MiB"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["schema"] == "irtool.plan/1"
    cur = [c for c in doc["candidates"] if c["current"]]
    assert len(cur) == 1 and (cur[0]["dp"], cur[0]["mp"], cur[0]["pp"], cur[0]["micro_batches"]) == (2, 2, 2, 4)
    st = cur[0]["stages"][0]
    for k in ("stage", "weight", "optimizer-state", "accumulation", "peak_bytes", "activations_bytes",
              "activations_per_micro_bytes", "micro_batches_in_flight", "flops", "compute_flops", "comm_bytes"):
        assert k in st
    assert set(st["bytes_by_role"]) == {"weight", "optimizer-state", "accumulation", "hyperparameter", "unused",
                                        "other"} and st["bytes_by_role"]["weight"] == st["weight"]
    assert "pipeline_stage: 2" in cur[0]["mindformers_yaml"] and "offset: [0, 0]" in cur[0]["mindformers_yaml"]
    fit = [c for c in doc["candidates"] if not c["refused"] and c["fits"]]
    assert [c["step_seconds"] for c in fit] == sorted(c["step_seconds"] for c in fit)
    assert all(c["refused"] for c in doc["candidates"][len([c for c in doc["candidates"] if not c["refused"]]):])


def test_only_one_configuration_against_its_dry_run(basis: P.Basis) -> None:
    """`--only` predicts the one configuration a checker compiles: the 8-layer dp2 x mp2 x pp2 from the 4-layer compile.
    Its stage 0 weights by hand (the embedding and four layers split by mp 2 and sharded over dp 2, the norms whole)
    and its peaks within 5 % of dryrun_llama_dp2mp2pp2_l8's own; a name it does not know or a configuration the
    network cannot take is one line and exit 2."""
    r = CliRunner().invoke(main, ["plan", str(BASE), "--only", "dp=2,mp=2,pp=2,micro=4,layers=8", "--format", "json"])
    assert r.exit_code == 0, r.output
    (c,) = json.loads(r.output)["candidates"]
    assert (c["dp"], c["mp"], c["pp"], c["micro_batches"], c["num_layers"], c["global_batch"]) == (2, 2, 2, 4, 8, 8)
    assert c["stages"][0]["weight"] == ((V * H + 4 * LAYER_SPLIT) // 4 + 4 * NORMS) * 4 == 13_910_016
    for stage, rank in ((0, 0), (1, 4)):
        assert abs(c["stages"][stage]["peak_bytes"] / _dry("dryrun_llama_dp2mp2pp2_l8", rank) - 1) <= 0.05
    from irtool.plan import only

    assert only("recompute=1:1, offset=1:-1, batch=2, opt_shard=off", basis) == \
        P.Candidate(2, 2, 2, 4, True, False, 2 * 2 * 4, offset=(1, -1), recompute_counts=(1, 1))
    r = CliRunner().invoke(main, ["plan", str(BASE), "--only", "layers=8", "--device-memory", "100MiB"])
    assert r.exit_code == 0 and r.output.startswith("dp2 mp2 pp2 m4 recompute opt-shard 8 layers: step ")
    assert r.output.splitlines()[0].endswith(", does not fit (estimates)")  # 110 MiB, the dry run's 109.77 MiB
    r = CliRunner().invoke(main, ["plan", str(BASE), "--only", "dp=2,tp=2"])
    assert r.exit_code == 2 and "expected KEY=VALUE with KEY one of dp, mp, pp" in r.output and "'tp=2'" in r.output
    r = CliRunner().invoke(main, ["plan", str(BASE), "--only", "dp=1,mp=8,pp=2"])
    assert r.exit_code == 2 and r.output.strip().endswith("key-value heads 4 not divisible by mp 8")
    # dryrun_llama_dp4mp2pp1's dry run used 203,410,432 B where scaling the pipelined stages would say about half
    r = CliRunner().invoke(main, ["plan", str(BASE), "--only", "dp=4,mp=2,pp=1"])
    assert r.exit_code == 2 and "no pipeline from a pipelined compile" in r.output
    assert _dry("dryrun_llama_dp4mp2pp1", 0) == 203_410_432


def test_cli_text_and_bad_input(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["plan", str(BASE)])
    assert r.exit_code == 0 and "Candidates, fastest first" in r.output and "parallel_config:" in r.output
    r = CliRunner().invoke(main, ["plan", str(BASE), "--hardware", "h100"])  # its 80 GB: every candidate fits
    assert r.exit_code == 0 and "Candidates that fit, fastest first" in r.output
    assert r.output.startswith("Fastest that fits: ")  # the answer first
    r = CliRunner().invoke(main, ["plan", str(BASE), "--device-memory", "1MiB"])
    assert r.exit_code == 0 and r.output.startswith("No candidate fits (the compiled configuration: ")
    r = CliRunner().invoke(main, ["plan", str(tmp_path)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["plan", str(BASE / "rank_0")])  # one stage of two: nothing to plan from
    assert r.exit_code == 2 and "cannot plan" in r.output and "Traceback" not in r.output


@reads("mindformers_llama_pp4_uneven")
def test_an_uneven_pp4_compile_planned_as_compiled_gives_it_back() -> None:
    """mindformers_llama_pp4_uneven (offset [1, 0, 0, -1]): its own configuration is the current one (offset and
    recompute read from the job), each stage scaled from itself; peaks, communication and weights are the compile's
    (the memory records' and the walk's figures of each stage, read here independently)."""
    from irtool.parallel.balance import stage_cost

    folder = FIX / "mindformers_llama_pp4_uneven"
    b = read_basis(Selection.of(str(folder)), None)
    now = P.plan(b, P.candidates(b))[0:]
    cur = [p for p in now if p.current]
    assert len(cur) == 1 and cur[0].offset == [1, 0, 0, -1]
    sel = Selection.of(str(folder))
    for rank in sel.files:
        got = sel.read(rank)
        cost = stage_cost(got.facts)
        st = cur[0].stages[got.stage]
        assert st.figures["peak_bytes"].value == cost.lifetimes.peak_bytes
        assert st.figures["comm_bytes"].value == cost.comm.total
        assert st.figures["weight"].value == cost.memory.role_bytes("weight").total


def test_recompute_per_stage(basis: P.Basis) -> None:
    """MindFormers' list form: the first layer of each stage recomputed. Its layers are the same network's, so the
    recompute work is half the full recompute's, the step between none and all, and the YAML says the list."""
    from irtool.plan.report import mindformers_yaml

    cands = [P.current(basis), P.Candidate(2, 2, 2, 4, True, True, 8, recompute_counts=(1, 1)),
             P.Candidate(2, 2, 2, 4, False, True, 8)]
    full, half, none = (P.plan(basis, [c])[0] for c in cands)
    for s in range(2):
        assert half.stages[s].flops["recompute"] * 2 == pytest.approx(full.stages[s].flops["recompute"], rel=0.01)
        assert "recompute" not in none.stages[s].flops
        assert none.stages[s].figures["peak_bytes"].value > half.stages[s].figures["peak_bytes"].value \
            > full.stages[s].figures["peak_bytes"].value
    assert none.step_seconds < half.step_seconds < full.step_seconds
    assert "  recompute: [1, 1]" in mindformers_yaml(half, 4)


def test_a_rank_that_cannot_be_read_is_said_beside_the_plan(tmp_path: Path) -> None:
    """A folder whose rank_5 is cut short (rank 4's validate, truncated): the plan is made from ranks 0 and 4, the
    cut rank's located error is said, exit 2 (as every folder command, issue 18)."""
    import lzma
    import shutil

    for r in (0, 4):
        shutil.copytree(BASE / f"rank_{r}", tmp_path / f"rank_{r}")
    (tmp_path / "rank_5").mkdir()
    text = lzma.open(BASE / "rank_4" / "19_validate_0089.ir.xz", "rt").read()
    (tmp_path / "rank_5" / "19_validate_0089.ir").write_text(text[:200_000])
    r = CliRunner().invoke(main, ["plan", str(tmp_path), "--hardware", "none"])
    assert r.exit_code == 2
    assert "Smallest peak" in r.output and "rank_5/19_validate_0089.ir:" in r.output and "expected '}'" in r.output


def test_offsets_moving_several_layers_are_ranked(basis: P.Basis) -> None:
    """With 8 layers over 2 stages (4 each) the table holds the splits moving 1 and 2 layers between the stages (up
    to half a stage's; never emptying one), the 2-layer moves with all or no layers recomputed; each predicted as
    `--only offset=` predicts it, its weights by hand from make.py's sizes (dp1 x mp4: no optimizer shard)."""
    cands = P.candidates(basis, num_layers=8)
    offs = {c.offset for c in cands}
    assert {(1, -1), (-1, 1), (2, -2), (-2, 2)} <= offs and (3, -3) not in offs
    assert all(c.recompute_counts is None for c in cands if c.offset in ((2, -2), (-2, 2)))
    c = next(c for c in cands if (c.dp, c.mp, c.micro, c.offset, c.recompute) == (1, 4, 4, (2, -2), True))
    got = P.plan(basis, [c])[0]
    assert got.offset == [2, -2] and [s.layers for s in got.stages] == [list(range(6)), [6, 7]]
    alone = P.plan(basis, [P.Candidate(1, 4, 2, 4, True, True, c.global_batch, (2, -2), None, 8)])[0]
    assert [s.figures["peak_bytes"].value for s in got.stages] == [s.figures["peak_bytes"].value for s in alone.stages]
    assert [s.figures["weight"].value for s in got.stages] == \
        [((V * H + 6 * LAYER_SPLIT) // 4 + 6 * NORMS) * 4, ((2 * LAYER_SPLIT + V * H) // 4 + 2 * NORMS + H) * 4]
