"""Peak memory from tensor lifetimes (docs/cost.md §2.1) held against MindSpore's own dry run: every figure
asserted here is the compiler's (`dryrun.json`: the largest `actual_used_memory` of its memory_block.csv, the
"Used peak memory usage" line in bytes; the pool's blocks at that peak) or counted by hand from the dump text."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, reads

from irtool.cli import main
from irtool.ir import load
from irtool.parallel.facts import node_facts
from irtool.parallel.lifetime import MARGIN, _pieces, block, walk

DRY = sorted(FIXTURES.glob("dryrun_*"))
CASES = [(d, int(r), f) for d in DRY for r in json.loads((d / "dryrun.json").read_text())
         for f in sorted((d / f"rank_{r}").glob("*.ir.xz"))]


def _dry(folder: Path, rank: int) -> dict:
    return json.loads((folder / "dryrun.json").read_text())[str(rank)]


@functools.cache
def _lifetimes(path: Path, rank: int):
    """The walk's record (kept: it holds no dump), read once per test process."""
    return node_facts(load(str(path)), rank).get("lifetimes")


@pytest.mark.parametrize("folder,rank,path", CASES, ids=lambda x: x.name if isinstance(x, Path) else str(x))
def test_peak_per_rank_within_the_stated_margin_of_the_dry_run(folder: Path, rank: int, path: Path) -> None:
    used = _dry(folder, rank)["memory_block_csv_max_actual_used_B"]
    lt = _lifetimes(path, rank)
    kernel = path.name.startswith(("graph_build", "hwopt"))
    assert lt.complete and lt.margin == MARGIN["kernel" if kernel else "front-end"]
    assert abs(lt.peak_bytes - used) <= lt.margin * used, (lt.peak_bytes, used)
    # the parameters are the pool's Weight blocks to the byte, with the step's input (a Kernel block there,
    # `kernel_graph_0_HostDSActor`, never freed before the peak: 16,896 B = (8, 513) int32 as a block)
    params = sum(v for k, v in lt.by_role.items() if k in ("weight", "optimizer-state", "accumulation",
                                                             "hyperparameter", "unused", "other"))
    weight = _dry(folder, rank)["memory_block_csv_at_used_peak"]["live_bytes_by_type"]["Weight"]
    assert params == weight


def _fuller(folder: Path) -> str | None:
    """The rank the dry run says peaks higher, where it has two ranks more than the walk's margin apart."""
    dry = json.loads((folder / "dryrun.json").read_text())
    used = sorted((v["memory_block_csv_max_actual_used_B"] for v in dry.values()), reverse=True)
    if len(dry) < 2 or used[0] - used[1] < MARGIN["kernel"] * used[0]:
        return None  # one rank, or two within the walk's margin (dryrun_llama_dp4mp1pp2: 0.07 % apart): no fuller one
    return max(dry, key=lambda r: dry[r]["memory_block_csv_max_actual_used_B"])


# one test per folder, in the folder's group (conftest.py): the lifetimes it compares are those the peak test walked
@pytest.mark.parametrize("folder", [d for d in DRY if _fuller(d)], ids=lambda d: d.name)
def test_the_fuller_stage_is_the_dry_runs(folder: Path) -> None:
    fuller = _fuller(folder)
    dry = json.loads((folder / "dryrun.json").read_text())
    for name in ("19_validate_*", "graph_build_0_*"):
        ours = {r: _lifetimes(next((folder / f"rank_{r}").glob(name)), int(r)).peak_bytes for r in dry}
        assert max(ours, key=ours.get) == fuller, (folder.name, name, ours)


def test_the_fuller_stages_of_the_dry_runs() -> None:
    # stage 0 (more micro batches in flight under 1F1B) is the fuller one but on the MoE and with flash attention
    assert {_fuller(folder) for folder in DRY} - {None} == {"0", "4"}


@reads("dryrun_llama_dp2mp2pp2")
def test_the_kernel_graph_peaks_where_the_dry_run_does() -> None:
    # rank 4 (last stage): the dry run's peak is the loss's Neg (memory_block.csv's row at the used peak), of micro
    # batch 1: 1F1B runs F0 B0 F1, and B0's pipeline buffers and F1's logits are live together
    folder = FIXTURES / "dryrun_llama_dp2mp2pp2"
    lt = _lifetimes(folder / "rank_4" / "graph_build_0_0154.ir.xz", 4)
    assert lt.at.scope == _dry(folder, 4)["memory_block_csv_at_used_peak"]["node_name"]
    assert (lt.at.unit, lt.at.micro) == ("F1", 1)


@reads("dryrun_llama_dp1mp4pp2")
def test_without_optimizer_sharding_the_peak_is_in_the_optimizer() -> None:
    # dp1 x mp4: nothing to shard; MindSpore clips every gradient before the first update, so the dry run peaks
    # at AdamW's first Div with every clipped gradient live; the print order (each gradient clipped right before
    # its update) would put the peak in the first backward, 13 % lower
    folder = FIXTURES / "dryrun_llama_dp1mp4pp2"
    for rank in (0, 4):
        node = _dry(folder, rank)["memory_block_csv_at_used_peak"]["node_name"]
        assert node == "Default/optimizer-AdamW/Div-op0"
        for path in sorted((folder / f"rank_{rank}").glob("*.ir.xz")):
            lt = _lifetimes(path, rank)
            assert (lt.at.scope, lt.at.unit) == (node, "optimizer")


@reads("dryrun_mlp_8p")
def test_blocks_and_the_mlp_by_hand() -> None:
    # dryrun_mlp_8p: w1, w2 sliced to (1024, 2048) fp32 = 8,388,608 B, each a pool block 512 B larger (its README)
    assert block(8_388_608) == 8_389_120 and block(4) == 512 and block(2048) == 2560 and block(16_416) == 16_896
    lt = _lifetimes(FIXTURES / "dryrun_mlp_8p/rank_0/graph_build_0_0115.ir.xz", 0)
    # at the peak: both weights and both momentum states, both weight gradients and both reduced gradients
    # (the gradient AllReduce writes a new buffer; its input lives until ApplyMomentum reads the result)
    assert lt.by_role["weight"] == lt.by_role["optimizer-state"] == 2 * 8_389_120
    assert lt.by_role["backward"] == lt.by_role["communication"] == 2 * 8_389_120
    assert lt.at.op == "AllReduce"


@reads("dryrun_mlp_8p")
def test_the_curve_is_the_walk() -> None:
    t = node_facts(load(str(FIXTURES / "dryrun_mlp_8p/rank_0/graph_build_0_0115.ir.xz")), 0)
    lt = walk(t, curve=True)
    assert len(lt.curve) >= lt.steps and max(sum(x) for x in lt.curve) == lt.peak_bytes
    assert sum(lt.curve[lt.at.step]) == lt.peak_bytes


@reads("dryrun_llama_dp2mp2pp2")
def test_summarize_cost_json_peak_beside_stage_and_fits() -> None:
    folder = FIXTURES / "dryrun_llama_dp2mp2pp2"
    dry = json.loads((folder / "dryrun.json").read_text())
    used = {int(r): v["memory_block_csv_max_actual_used_B"] for r, v in dry.items()}
    limit = (used[0] + used[4]) // 2  # between the dry run's two peaks: stage 0 does not fit
    r = CliRunner().invoke(main, ["summarize", str(folder), "--cost", "--format", "json", "--device-memory",
                                  str(limit)])
    assert r.exit_code == 0, r.output
    cost = json.loads(r.stdout)["cost"]
    assert cost["schema"] == "irtool.cost/4"
    rows = {s["stage"]: s for s in cost["stages"]}
    assert list(cost["stages"][0])[:2] == ["stage", "peak_bytes"]
    for stage, rank in ((0, 0), (1, 4)):
        assert abs(rows[stage]["peak_bytes"] - used[rank]) <= 0.03 * used[rank]
        assert cost["memory"][str(stage)]["peak"]["bytes"] == rows[stage]["peak_bytes"]
    # stage 1 is 2.7 % below: within validate's margin (3 %), so it may not fit (never "fits" on the edge)
    assert rows[0]["fits"] is False and rows[1]["fits"] is None
    r = CliRunner().invoke(main, ["summarize", str(folder), "--cost", "--format", "json", "--device-memory",
                                  str(2 * used[0])])
    assert [s["fits"] for s in json.loads(r.stdout)["cost"]["stages"]] == [True, True]
    # no "fits" where the dry run's peak exceeds the device: just below rank 0's peak, stage 0 is never said to fit
    r = CliRunner().invoke(main, ["summarize", str(folder), "--cost", "--format", "json", "--device-memory",
                                  str(used[0] - 4096)])
    assert json.loads(r.stdout)["cost"]["stages"][0]["fits"] is not True
    text = CliRunner().invoke(main, ["summarize", str(folder), "--cost", "--device-memory", str(limit)]).stdout
    memory = next(x for x in text.splitlines() if x.startswith("Memory: "))  # after the Step and Balance lines
    assert memory.startswith("Memory: stage 0 does NOT fit in ")


@reads("pipeline_unequal_8p")
def test_step_parallel_end_gives_no_peak() -> None:
    # before autodiff there is no backward to walk: the figure stays the estimate, said so
    lt = _lifetimes(FIXTURES / "pipeline_unequal_8p/rank_2/step_parallel_end_0019.ir.xz", 2)
    assert not lt.complete and "before autodiff" in lt.notes[0]


@pytest.mark.parametrize("rel", ["dryrun_llama_dp2mp2pp2/rank_0/19_validate_0089.ir.xz",
                                 "pipeline_interleaved_4stage_8p/rank_0/19_validate_0087.ir.xz",
                                 "control_flow_cpu/rank_0/19_validate_0075.ir.xz",
                                 "inference_pp_8p_m4/rank_0/19_validate_0082.ir.xz"])
def test_the_walk_runs_each_node_as_often_as_the_runs_fact_says(rel: str) -> None:
    # one answer to "how often does a node run in a step": the walk (calls run in place, each lazy-inline layer
    # once per layer and micro batch, each bprop closure once per call) agrees with the `runs` pass node by node
    from collections import Counter

    from irtool.parallel import lifetime

    class Probe(lifetime._Walk):  # the lines of the calls walked because a collective still holds an argument
        def run_call(self, graph: str, args: tuple, top, depth: int):  # noqa: ANN001, ANN202
            if self.replay_calls and self.form(args) is None:
                self.held.append(top.line)
            return super().run_call(graph, args, top, depth)

    t = node_facts(load(str(FIXTURES / rel)), 0)
    walks = []
    for replay in (True, False):
        w = Probe(t, replay)
        w.held = []
        w.header_params()
        entry = t.dump.entry
        w.run_graph(entry, (), None, 0, lifetime._entry_order(t, entry)[0])
        walks.append(w)
    w = walks[0]
    ran = Counter(n for n, _ in w.where)
    assert ran and all(ran[n] == t("runs", n) for n in ran if t("runs", n) is not None)
    assert max(ran.values()) > 1 or "control_flow" in rel
    # a call replayed (its graph called before with arguments of the same form) makes the steps walking it makes
    assert w.replays > 0 or "control_flow" in rel
    fields = ("size", "role", "phase_of_block", "reads", "pieces", "elems", "starts", "use_at", "used", "where", "waits",
              "pending_send")
    assert all(getattr(w, f) == getattr(walks[1], f) for f in fields)
    if rel.startswith("dryrun_llama"):
        # line 15164, the first of the 4 calls of the model's graph (one per micro batch), passes it the results of
        # 15 optimizer-parallel AllGathers (lines 15054-15147, `parallel_optimizer_allgather_not_recompute`) no kernel
        # has read yet: they hold their inputs until one does, in the call. So it is walked, not replayed; the later
        # calls read the gathered weights the first one released: replayed, and still the steps walking them makes
        at = {n.line: n for n in t.dump.nodes()}
        assert w.held == [15164] and at[15164].op == "(call)"
        assert {at[x].op for x in (15054, 15060, 15147)} == {"AllGather"}


@reads("dryrun_llama_dp2mp2pp2")
def test_each_ranks_peak_beside_its_stage_in_the_folder_json() -> None:
    # the folder's `ranks` rows carry `peak_bytes` beside `stage` with --cost: the walked rank of each stage within
    # the walk's margin of dryrun.json's used peak; a rank not walked is null, never 0; no field without --cost
    folder = FIXTURES / "dryrun_llama_dp2mp2pp2"
    used = {int(r): v["memory_block_csv_max_actual_used_B"]
            for r, v in json.loads((folder / "dryrun.json").read_text()).items()}
    doc = json.loads(CliRunner().invoke(main, ["summarize", str(folder), "--cost", "--format", "json"]).stdout)
    rows = doc["ranks"]
    assert [list(r)[:4] for r in rows] == [["rank", "file", "stage", "peak_bytes"]] * 2
    for r in rows:
        assert abs(r["peak_bytes"] - used[r["rank"]]) <= 0.03 * used[r["rank"]]
    # and each stage's row says the same peak, of the rank it was walked on
    assert [(s["stage"], s["peak_rank"], s["peak_bytes"]) for s in doc["stages"]] == \
        [(r["stage"], r["rank"], r["peak_bytes"]) for r in rows]
    pipe = CliRunner().invoke(main, ["summarize", str(FIXTURES / "pipeline_2stage_8p"), "--cost", "--format", "json"])
    peaks = {r["rank"]: r["peak_bytes"] for r in json.loads(pipe.stdout)["ranks"]}
    assert [r for r, p in peaks.items() if p is not None] == [0, 4] and all(p is None or p > 0 for p in peaks.values())
    plain = CliRunner().invoke(main, ["summarize", str(folder), "--format", "json"])
    assert "peak_bytes" not in json.loads(plain.stdout)["ranks"][0]
    assert "peak_bytes" not in json.loads(plain.stdout)["stages"][0]
    # a folder of no pipeline (no Send/Receive in rank 0's dump): one stage, stage 0 (docs/parallel.md §7 rule 4) in
    # the rank's row, the stage's row, the cost's row and the job alike; its row names rank 0's peak, near dryrun.json's
    mlp = FIXTURES / "dryrun_mlp_8p"
    used = json.loads((mlp / "dryrun.json").read_text())["0"]["memory_block_csv_max_actual_used_B"]
    doc = json.loads(CliRunner().invoke(main, ["summarize", str(mlp), "--cost", "--format", "json"]).stdout)
    (row,), (rank,), (cost,) = doc["stages"], doc["ranks"], doc["cost"]["stages"]
    assert row["stage"] == rank["stage"] == cost["stage"] == 0 and doc["job"]["stage_ranks"] == {"0": [0]}
    assert row["peak_rank"] == 0 and abs(row["peak_bytes"] - used) <= 0.03 * used
    # the rank's file alone says its peak beside the same stage (`irtool.cost/4`: `0` without a pipeline, as the
    # folder's rows; it was `null`, the value of a stage unknown): "the peak of stage 0" is read alike in both
    alone = json.loads(CliRunner().invoke(main, ["summarize", rank["file"], "--cost", "--format", "json"]).stdout)["cost"]
    assert (alone["stage"], alone["peak_bytes"]) == (0, row["peak_bytes"])


@reads("dryrun_llama_dp2mp2pp2")
def test_what_splits_each_live_tensor() -> None:
    """Into how many pieces a tensor is split, read from the dump text (dp2 x mp2, rank 0's validate), and whether it
    is made from the step's data: what the plan scales a working set by (docs/plan.md)."""
    path = FIXTURES / "dryrun_llama_dp2mp2pp2/rank_0/19_validate_0089.ir.xz"
    t = node_facts(load(str(path)), 0)
    at = {n.line: n for n in t.dump.nodes()}
    # wq's MatMul prints origin_output_shape (1024, 512) and its own (512, 256): dp 2 x mp 2
    assert _pieces(at[600], t("strategy", at[600]), at[600].output_type) == 4
    # Softmax, in_strategy ((2, 2, 1, 1)): split as its input
    assert at[1691].op == "Softmax" and _pieces(at[1691], t("strategy", at[1691]), at[1691].output_type) == 4
    # a backward MatMul prints its forward's origin_output_shape (1024, 1408) beside its own (704, 512): not read
    assert at[7152].op == "MatMul" and _pieces(at[7152], t("strategy", at[7152]), at[7152].output_type) is None
    lt = _lifetimes(path, 0)
    # every recomputed copy is made from the data, split by dp (the norms' (1, 512, 512)) or dp x mp (the attention's
    # (1, 4, 512, 512), the FFN's (512, 704)); one Softmax output, float32 (1, 4, 512, 512), among the latter
    assert set(lt.recompute_shares) == {("recompute", True, 2), ("recompute", True, 4)}
    assert lt.recompute_shares[("recompute", True, 4)] >= block(4 * 512 * 512 * 4)
    assert sum(lt.recompute_shares.values()) == lt.most["recompute"]
    # the compute peak is the first of the points, and no point exceeds another in every share
    assert sum(lt.points[0].values()) == sum(lt.parts[0]) - lt.static
    assert not any(p is not q and all(p.get(k, 0) >= v for k, v in q.items()) for p in lt.points for q in lt.points)


def test_a_forward_tensor_a_recomputed_copy_reads_is_kept_as_an_activation() -> None:
    """gpt_small_dp2mp2pp2 rank_0 validate line 388: `%24 = PrimFunc_Cast(%23, I64(42))`, (64) Float16 (a bias, 128 B in
    a 512 B block), read by the forward Adds of lines 409 (micro 0) and 2582 (micro 1) and by the recomputed copies
    (`duplicated: Bool(1)`) of lines 4463 and 5870: held from the forward until the recompute, an activation, never a
    temporary freed after its forward readers' role (the lifetime-late mutant)."""
    from irtool.parallel import lifetime

    rel = "gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz"
    t = node_facts(load(str(FIXTURES / rel)), 0)
    at = {n.line: n for n in t.dump.nodes()}
    copies = t.get("copies")
    assert at[388].op == "Cast" and at[4463] in copies and at[5870] in copies
    w = lifetime._Walk(t, True)
    w.header_params()
    w.run_graph(t.dump.entry, (), None, 0, lifetime._entry_order(t, t.dump.entry)[0])
    bounds = [*w.starts, len(w.size)]
    made = [b for s, (n, _) in enumerate(w.where) if n is at[388] for b in range(bounds[s], bounds[s + 1])]
    lifetime._sweep(t, w, "", (True, 0.0), [], False)
    assert made and {(w.size[b], w.role[b]) for b in made} == {(512, "activation")}
