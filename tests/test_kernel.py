"""Kernel graphs (`graph_build_*`, `hwopt_*`: the `kernel` fact) read as what they are: the same job as the
front-end pass of the same compile, and what only they show. dryrun_llama_dp2mp2pp2: MindSpore's own dry run
of the MindFormers Llama (dp 2 x mp 2 x pp 2, 4 micro batches, full recompute, lazy inline), ranks 0 and 4."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from conftest import fixture, reads

from irtool import load
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.cost import compute_cost

DRY = "dryrun_llama_dp2mp2pp2"
KERNEL_PASSES = ["graph_build_0_0154", "hwopt_d_end_acl_graph_final_0_0150"]
pytestmark = reads(DRY)  # run beside the other tests reading its dumps (conftest.py)


def _summary(rank: int, name: str, *more: str) -> CliRunner:
    r = CliRunner().invoke(main, ["summarize", fixture(f"{DRY}/rank_{rank}/{name}.ir.xz"), *more])
    assert r.exit_code == 0, r.output
    return r


def _job_line(rank: int, name: str) -> str:
    return next(line for line in _summary(rank, name).stdout.splitlines() if line.startswith("Job:"))


@pytest.mark.parametrize("rank", [0, 4])
@pytest.mark.parametrize("kernel", KERNEL_PASSES)
def test_the_kernel_graph_tells_the_job_of_the_front_end(rank: int, kernel: str) -> None:
    # validate says dp 2 x mp 2, 4 micro batches, recompute of the stage's two layers (`duplicated` copies); the
    # kernel graph of the same process must say the same (it said dp 4 x mp 1 and recompute `layer 0`: its
    # tensor-parallel AllReduces print no `forward_op_*` name, its copies read weights through MakeTuple packing)
    line = _job_line(rank, kernel)
    assert line == _job_line(rank, "19_validate_0089")
    assert "dp 2 x mp 2" in line and "4 micro batches" in line
    assert ("layers 0-1" if rank == 0 else "layers 2-3") in line


@pytest.mark.parametrize("rank", [0, 4])
def test_kernel_graph_communication_per_step_equals_the_front_end(rank: int) -> None:
    # the kernel graph prints every micro batch's nodes (each runs once); validate prints the lazy-inline graphs once
    # and calls them 4 times: per step, category by category, the same bytes, and validate's runs are the
    # kernel graph's nodes (rank 0: 48 operator-forward AllReduces = 12 x 4; 92 in all)
    front = json.loads(_summary(rank, "19_validate_0089", "--format", "json").stdout)["comm_totals"]
    kernel = json.loads(_summary(rank, KERNEL_PASSES[0], "--format", "json").stdout)["comm_totals"]
    assert {k: (v["runs"], v["bytes"]) for k, v in front["by_category"].items()} == \
        {k: (v["count"], v["bytes"]) for k, v in kernel["by_category"].items()}
    assert kernel["total"]["count"] == kernel["total"]["runs"] == front["total"]["runs"]
    if rank == 0:
        assert kernel["by_category"]["operator-forward"]["count"] == 48
        assert front["by_category"]["operator-forward"]["count"] == 12
        assert kernel["total"]["bytes"] == front["total"]["bytes"] == 59_645_960


def test_a_kernel_graph_tensor_parallel_allreduce_by_its_forward_mark() -> None:
    # graph_build_0 line 183: `AllReduce(%12)` of the embedding, no instance name (validate line 164 names it
    # `5323172883814874878AllReduce11`), `forward_comm_node_unique_id: "137902"`: an operator's forward reduction
    t = analyze(load(fixture(f"{DRY}/rank_0/graph_build_0_0154.ir.xz"))).table
    assert t.get("kernel")
    node = next(n for n in t.dump.nodes() if n.line == 183)
    assert node.instance_name is None and t("category", node) == ("operator-forward", "R7k")
    assert t("runs", node) == 1
    front = analyze(load(fixture(f"{DRY}/rank_0/19_validate_0089.ir.xz"))).table
    assert not front.get("kernel")


def test_kernels_in_execution_order_on_their_streams() -> None:
    # `grep -c '^  %.*stream_id: ' graph_build_0`: 2,807 kernels, each printing its stream: I32(0) 2,715 (every
    # compute kernel), U64(2) 30 (the optimizer shards' AllGather/ReduceScatter), U64(3) 48 (tensor-parallel
    # AllReduce), U64(4) 8 (Send/Receive), U64(5) 5 and U64(6) 1 (AllReduce); the embedding's AllReduce at line 183 is
    # the 13th node line with a stream (`awk 'NR<=183 && /^  %/ && /stream_id: /'`)
    path = f"{DRY}/rank_0/graph_build_0_0154.ir.xz"
    t = analyze(load(fixture(path))).table
    k = t.get("kernels")
    assert len(k.order) == 2807 and k.no_stream == 0
    assert [(s.id, s.kind, s.kernels) for s in k.streams] == [
        (0, "compute", 2715), (2, "communication", 30), (3, "communication", 48), (4, "communication", 8),
        (5, "communication", 5), (6, "communication", 1)]
    embedding = next(c for c in k.communication if c.line == 183)
    assert (embedding.index, embedding.stream, embedding.micro, embedding.phase) == (13, 3, 0, "forward")
    assert embedding.scope.endswith("tok_embeddings-LlamaEmbedding/AllReduce-op0")
    text = _summary(0, "graph_build_0_0154").stdout
    assert "Kernels: 2,807 in execution order; compute stream 0 (2,715 kernels); communication streams 2 " \
           "(AllGather 15, ReduceScatter 15), 3 (AllReduce 48)" in text
    # a front-end pass has no kernels, and says nothing of them
    assert analyze(load(fixture(f"{DRY}/rank_0/19_validate_0089.ir.xz"))).table.get("kernels") is None
    assert "Kernels:" not in _summary(0, "19_validate_0089").stdout


@pytest.mark.parametrize("rank", [0, 4])
def test_flops_per_step_of_the_lazy_inline_graphs_equal_the_kernel_graphs(rank: int) -> None:
    # two rules that must agree: validate's operators times their graph's runs (the lazy-inline forward and
    # bprop graphs called once per micro batch, 4 times) and the kernel graph's, each printed once per micro batch
    # and run once. Rank 0 agrees phase by phase (a recomputed copy prints `is_bp: Bool(1)` in the kernel graph:
    # still recompute); rank 4's loss and accumulation (32,778,240 FLOPs) are forward in validate's entry graph,
    # which marks them nowhere, and `is_bp` backward in the kernel graph
    costs = [compute_cost(analyze(load(fixture(f"{DRY}/rank_{rank}/{p}.ir.xz"))).table)
             for p in ("19_validate_0089", KERNEL_PASSES[0])]
    assert costs[0].total == costs[1].total == {0: 54_305_191_967, 4: 67_261_443_125}[rank]
    assert costs[0].matmul_forward == costs[1].matmul_forward
    assert costs[0].flops["recompute"] == costs[1].flops["recompute"] > 0
    if rank == 0:
        assert costs[0].flops == costs[1].flops


@pytest.mark.parametrize("rank", [0, 4])
def test_the_kernel_print_order_is_the_dependency_order(rank: int) -> None:
    # the order pass takes a kernel graph's print order where the dependencies leave two units unordered; here
    # they order every unit, and the first kernels of the units are printed in that same order (rank 0: 1F1B,
    # F0 F1 B0 F2 B1 F3 B2 B3; rank 4, the last stage: F0 B0 F1 B1 ...), as validate's dependencies say
    t = analyze(load(fixture(f"{DRY}/rank_{rank}/{KERNEL_PASSES[0]}.ir.xz"))).table
    order = t.get("order")
    front = analyze(load(fixture(f"{DRY}/rank_{rank}/19_validate_0089.ir.xz"))).table.get("order")
    assert order.fixed and order.work == front.work
    assert [u.label for u in sorted(order.units, key=lambda u: u.line)] == order.work
    assert order.work[:3] == (["F0", "F1", "B0"] if rank == 0 else ["F0", "B0", "F1"])


def test_the_folder_tells_the_same_job_and_pairs_from_either_pass() -> None:
    # the folder read at its kernel graphs (`--pass graph_build_0`) and at validate: one job (dp 2 x mp 2 x pp 2,
    # recompute stage 0 layers 0-1, stage 1 layers 2-3) and the same Send/Receive per rank (4 each way, micro 0-3)
    out = {}
    for p in ("validate", "graph_build_0"):
        r = CliRunner().invoke(main, ["summarize", fixture(DRY), "--pass", p])
        assert r.exit_code == 0, r.output
        lines = r.stdout.splitlines()
        at = lines.index("Send/Receive per rank")
        out[p] = (next(x for x in lines if x.startswith("Job:")), lines[at:at + 7])
    assert out["validate"] == out["graph_build_0"]
    assert "dp 2 x mp 2 x pp 2" in out["validate"][0] and "stage 1: layers 2-3" in out["validate"][0]


def test_the_viewer_says_where_a_kernel_runs() -> None:
    # the viewer's side panel of the embedding's AllReduce (graph_build_0 line 183): the 13th of 2,807 kernels,
    # on stream 3 (`stream_id: U64(3)`), a communication stream; validate's node has no such rows
    from irtool.view.graphs import dump_graphs

    def rows(path: str, line: int) -> dict[str, str]:
        dump = load(fixture(path))
        graphs = dump_graphs(dump, analyze(dump), part_size=10 ** 6)
        node = next(n for g in graphs for n in g["nodes"] for a in n["attrs"]
                    if a["key"] == "file" and a["value"].endswith(f":{line}"))
        return {a["key"]: a["value"] for a in node["attrs"]}

    kernel = rows(f"{DRY}/rank_0/graph_build_0_0154.ir.xz", 183)
    assert kernel["execution order"] == "13 of 2,807" and kernel["stream"] == "3 (communication)"
    front = rows(f"{DRY}/rank_0/19_validate_0089.ir.xz", 164)
    assert "stream" not in front and "execution order" not in front


def test_recomputed_communication_keeps_its_layer_in_the_kernel_graph() -> None:
    # each layer recomputes its attention's `wo` AllReduce (Float16 (512, 512), 524,288 B) once per micro batch:
    # 4 x 524,288 B a step in layer 0 and in layer 1, in validate (a copy in the bprop graph, 4 calls) and in the
    # kernel graph (4 copies), whose copies read their weight through `Load(%563, %498)` — a Depend orders the
    # Load there, not a monad — and through backward-marked Depends
    from irtool.parallel.layers import layer_comm
    from irtool.report.summary import comm_layers

    for p in ("19_validate_0089", KERNEL_PASSES[0]):
        facts = analyze(load(fixture(f"{DRY}/rank_0/{p}.ir.xz")))
        rows = {r.index: r for r in layer_comm(facts.comm, facts.groups, strategies=facts.strategies,
                                               layers=comm_layers(facts))}
        assert (rows[0].by_phase["recompute"], rows[1].by_phase["recompute"]) == (4 * 524_288, 4 * 524_288), p


def test_diff_of_validate_and_its_kernel_graph_moves_the_same_bytes() -> None:
    # node by node the two passes differ (the kernel graph prints each micro batch's copy), but per step and
    # category diff reads the same bytes on both sides, as summarize does
    r = CliRunner().invoke(main, ["diff", fixture(f"{DRY}/rank_0/19_validate_0089.ir.xz"),
                                  fixture(f"{DRY}/rank_0/{KERNEL_PASSES[0]}.ir.xz"), "--format", "json"])
    rows = json.loads(r.stdout)["ranks"][0]["comm_bytes"]
    assert {x["category"]: (x["old"], x["new"]) for x in rows} == {
        "gradient-aggregation": (8192, 8192), "operator-forward": (29_360_128, 29_360_128),
        "optimizer-parallel": (26_083_328, 26_083_328), "other": (8, 8), "pipeline": (4_194_304, 4_194_304)}


def test_a_folder_with_kernel_graphs_reads_the_order_there() -> None:
    # the dry-run folder holds validate and the kernel graphs of each rank: `summarize DIR --cost` (at validate)
    # takes each stage's order from the rank's graph_build_0, the order the device runs: its units are placed
    # by the kernel graph's lines (F0 from line 108 of rank 0's graph_build_0, not validate's 15150), and says so
    r = CliRunner().invoke(main, ["summarize", fixture(DRY), "--cost", "--format", "json"])
    assert r.exit_code == 0, r.output
    stages = json.loads(r.stdout)["cost"]["stages"]
    for s, rank in zip(stages, (0, 4)):
        kernel = analyze(load(fixture(f"{DRY}/rank_{rank}/{KERNEL_PASSES[0]}.ir.xz"))).table.get("order")
        assert s["schedule"]["kernel_graph"].endswith(f"rank_{rank}/{KERNEL_PASSES[0]}.ir.xz")
        assert [u["line"] for u in s["schedule"]["units"]] == [u.line for u in kernel.units]
    assert stages[0]["schedule"]["units"][0]["line"] == 108
    text = CliRunner().invoke(main, ["summarize", fixture(DRY), "--cost"]).stdout
    assert "(the kernel graph's, " in text
    # a folder without kernel graphs reads the order in its own dumps
    r = CliRunner().invoke(main, ["summarize", fixture("pipeline_unequal_8p"), "--cost", "--format", "json"])
    assert all(s["schedule"]["kernel_graph"] is None for s in json.loads(r.stdout)["cost"]["stages"])


# Each stage's pipeline Send/Receive as the kernel graph prints them (`grep -nE '= (Send|Receive)\('` of
# rank_N/graph_build_0_0154.ir), its print order the device's launch order: rank 0 (stage 0) sends F0 (line 6767
# `%457 = Send`), receives B0's gradient (6823 `%474(dx) = Receive`), sends F1 (6840), ...; rank 4 (stage 1)
# receives F0 (261 `%32 = Receive`), sends B0's gradient (13979 `%859(send_out) = Send`), receives F1 (13990), ...
# validate prints them at other lines (rank 0: 15176, 15211, ...): a box at these lines was read in the kernel graph.
KERNEL_HOPS = {
    0: [("Send", 6767), ("Receive", 6823), ("Send", 6840), ("Receive", 19378), ("Send", 19395), ("Receive", 31922),
        ("Send", 31936), ("Receive", 41287)],
    4: [("Receive", 261), ("Send", 13979), ("Receive", 13990), ("Send", 27703), ("Receive", 27714), ("Send", 41427),
        ("Receive", 41438), ("Send", 55175)]}


def test_render_pipeline_of_a_folder_draws_the_kernel_graphs_order(tmp_path) -> None:
    # `render DIR --pipeline` at validate takes each stage's order where summarize --cost does (the kernel graph
    # beside the dump), draws that graph's Send/Receive in it, each column naming the file, each Send linked to
    # the Receive of the same micro batch and tag on the other stage
    out = tmp_path / "p.dot"
    r = CliRunner().invoke(main, ["render", fixture(DRY), "--pipeline", "-o", str(out)])
    assert r.exit_code == 0, r.output
    dot = out.read_text()
    for rank, hops in KERNEL_HOPS.items():
        kernel = f"order of the kernel graph {fixture(f'{DRY}/rank_{rank}/{KERNEL_PASSES[0]}.ir.xz')}"
        assert kernel in dot
        drawn = re.findall(rf'r{rank}_(\d+) \[label="\S+ (Send|Receive) .*tooltip="kernel_graph0/%\d+ line (\d+) ', dot)
        assert [(op, int(line)) for _, op, line in drawn] == hops
        chain = [f"r{rank}_{line}" for _, line in hops]  # top to bottom in that order
        assert all(f"{a} -> {b} " in dot for a, b in zip(chain, chain[1:]))
    # F0's activation: rank 0 line 6767 -> rank 4 line 261 (tag 0); B0's gradient: rank 4 13979 -> rank 0 6823
    assert "r0_6767 -> r4_261 " in dot and "r4_13979 -> r0_6823 " in dot
    assert "2 stages, 16 Send/Receive" in r.stderr


def _rows(graph: dict, rank: int) -> list[dict[str, str]]:
    return [{"label": n["label"], **{a["key"]: a["value"] for a in n["attrs"] if isinstance(a["value"], str)}}
            for n in graph["nodes"] if n["namespace"].endswith(f" rank {rank}")]


def test_the_view_draws_the_kernel_graphs_order() -> None:
    # the viewer of the folder at validate: its boxes open validate's nodes, in the order of the kernel graph (the
    # one `render --pipeline` and `summarize --cost` show), each saying where it is in that graph
    from irtool.view.models import models_for

    pipe, execution = models_for(fixture(DRY)).graphs[:2]
    for rank, hops in KERNEL_HOPS.items():
        kernel = fixture(f"{DRY}/rank_{rank}/{KERNEL_PASSES[0]}.ir.xz")
        assert pipe["groupNodeAttributes"][f"stage {rank // 4} rank {rank}"]["order read in"] == f"the kernel graph {kernel}"
        rows = _rows(pipe, rank)
        assert [(x["operator"], x["kernel graph"]) for x in rows] == [(op, f"{kernel}:{line}") for op, line in hops]
        assert all(x["file"].startswith(f"rank_{rank}/19_validate_0089.ir.xz:") for x in rows)
    # the execution-order graph: a row of units in the kernel graph's print order, each saying the Send after it
    # and the Receive it waits for. Rank 0 launches F1's forward (line 3536: `micro_inputs-CellList/1-_MicroBatch/
    # StridedSlice`, then its embedding and layers) before B0 (its first kernel at 6870), which waits for the
    # Receive of tag 0 (validate line 15211)
    rows = _rows(execution, 0)
    assert [(x["label"], int(x["kernel graph"].rsplit(":", 1)[1])) for x in rows][:4] == [
        ("F0", 108), ("F1", 3536), ("B0", 6870), ("F2", 16099)]
    assert rows[0]["then"] == "Send tag 0 -> rank 4 (rank_0/19_validate_0089.ir.xz:15176)"
    assert rows[2]["waits for"] == "Receive tag 0 <- rank 4 (rank_0/19_validate_0089.ir.xz:15211)"
    for rank in KERNEL_HOPS:
        rows = _rows(execution, rank)
        lines = [int(x["kernel graph"].rsplit(":", 1)[1]) for x in rows]
        assert lines == sorted(lines) and len(rows) == 8


def test_a_stage_sequence_in_a_kernel_graph_is_its_print_order() -> None:
    # `StageOrder.sequence` (the execution-order graph's row): in a kernel graph the print order (rank 0's F1 forward
    # from line 3536 before the Send of F0 at 6767); in validate, which prints nothing in launch order, each Send
    # right after the unit it sends from, each Receive right before the unit that reads it: both hold the units'
    # and the hops' own orders, and differ here
    def seq(name: str) -> list[str]:
        o = analyze(load(fixture(f"{DRY}/rank_0/{name}.ir.xz"))).table.get("order")
        out = [x.label if hasattr(x, "label") else f"{x.op} {'B' if x.phase == 'backward' else 'F'}{x.micro}"
               for x in o.sequence()]
        assert [x for x in out if " " not in x] == o.work and len(out) == len(o.units) + len(o.hops)
        return out

    assert seq(KERNEL_PASSES[0])[:6] == ["F0", "F1", "Send F0", "Receive B0", "Send F1", "B0"]
    assert seq("19_validate_0089")[:6] == ["F0", "Send F0", "F1", "Receive B0", "Send F1", "B0"]
