"""One Send/Receive pairing (irtool/parallel/pairs.py: sender and receiver global ranks, `sr_tag` in order within a
tag), the same in every command: check, `render --pipeline`, the view's pipeline graph, the summary headline.

Counts by hand: `xzcat rank_N/*validate* | grep -cE '= (Send|Receive)\\('` per rank. pipeline_interleaved_4stage_8p:
ranks 0, 1, 6, 7 have 24 Send + 24 Receive, ranks 2-5 32 + 32 (224 Send in all); on rank 0 (`grep`
`dst_global_rank`/`src_global_rank`, `sr_tag`): 8 forward Sends of chunk 0 to rank 2 (tags 0-7), 8 of chunk 1 to rank 2
(2097152-2097159), 8 forward Receives of chunk 1 from rank 6 (the wrap, 1572864-1572871), 8 backward Receives from
rank 2 per chunk, 8 backward Sends of chunk 1 to rank 6. pipeline_4stage_lazy_8p: 8 + 8 on ranks 0, 1, 6, 7, 16 + 16
on ranks 2-5 (96 Send), over `group_rank_ids: (0, 2, 4, 6)` / `(1, 3, 5, 7)` with `src_rank` an index into them.
pipeline_folded_8p: 12 + 12 per rank (96). inference_pp_8p_m4: ranks 0-3 send 4 each, ranks 4-7 receive 4 each (16)."""
from __future__ import annotations

import functools
import json
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, fixture
from test_view import pairs_drawn

import irtool
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.job import job_of
from irtool.view.models import models_for

# folder, Send/Receive pairs of the folder, pairs among the lowest rank of each stage (what render and view draw)
FOLDERS = [("pipeline_interleaved_4stage_8p", 224, 24 + 32 + 32 + 24),
           ("pipeline_4stage_lazy_8p", 96, 8 + 16 + 16 + 8),
           ("pipeline_folded_8p", 96, 12 + 12),
           # 3 stages over a p2p group of all 24 ranks (`nccl_world_group`): 5 + 10 + 5 Send, to the next or previous stage
           ("pipeline_3stage_24p_m5", 20, 5 + 10 + 5),
           ("inference_pp_8p_m4", 16, 4)]


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize(("folder", "pairs", "drawn"), FOLDERS)
def test_check_pairs_every_send(folder: str, pairs: int, drawn: int) -> None:
    r = _cli("check", str(FIXTURES / folder), "--format", "json")
    data = json.loads(r.stdout)
    assert r.exit_code == 0 and data["consistent"] and data["findings"] == []
    assert data["coverage"]["pairs"] == {"compared": pairs, "present": pairs}


@pytest.mark.parametrize(("folder", "pairs", "drawn"), FOLDERS)
def test_summary_headline_pairs_as_check_does(folder: str, pairs: int, drawn: int) -> None:
    r = _cli("summarize", str(FIXTURES / folder))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[5] == "Unknown or unpaired: none"


@functools.cache
def _dot(folder: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, str]]]:
    """`render --pipeline` of a folder as Graphviz reads it back (`dot -Tjson0`): its boxes inside a cluster
    by name, with their attributes, and its edges (source, target, colour)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pipeline.dot"
        r = _cli("render", str(FIXTURES / folder), "--pipeline", "-o", str(out))
        assert r.exit_code == 0, r.output
        graph = json.loads(subprocess.run(["dot", "-Tjson0", str(out)], check=True, capture_output=True).stdout)
    objects = graph["objects"]
    clustered = {i for o in objects if "nodes" in o for i in o["nodes"]}
    nodes = {o["name"]: {k: str(v) for k, v in o.items()} for o in objects if o["_gvid"] in clustered}
    edges = [(objects[e["tail"]]["name"], objects[e["head"]]["name"], e["color"]) for e in graph["edges"]]
    return nodes, edges


def _tag(node: dict[str, str]) -> str:
    return node["tooltip"].rsplit(" tag ", 1)[1]


@pytest.mark.parametrize(("folder", "pairs", "drawn"), FOLDERS)
def test_render_draws_one_arrow_per_pair_to_its_receive(folder: str, pairs: int, drawn: int) -> None:
    nodes, edges = _dot(folder)
    arrows = [(a, b) for a, b, color in edges if color in ("#1f5fbf", "#bf1f1f")]
    assert len(arrows) == drawn
    assert len({b for _, b in arrows}) == drawn  # no Receive with two arrows
    # `.c1` on an interleaved stage's chunk 1, `.s1` on a folded stage's segment 1 (pipeline_folded_8p alone)
    unit = re.compile(r"([FB])(\d+)(?:\.([cs])\d)? (Send|Receive) (?:to|from) stage (\d+) \(rank (\d+)\)")
    for a, b in arrows:
        send, receive = unit.fullmatch(nodes[a]["label"]), unit.fullmatch(nodes[b]["label"])
        assert send and receive and send[4] == "Send" and receive[4] == "Receive"
        assert _tag(nodes[a]) == _tag(nodes[b])  # the same sr_tag ...
        assert send.group(1, 2) == receive.group(1, 2)  # ... forward or backward, micro batch ...
        assert {send[3], receive[3]} <= ({None, "s"} if folder == "pipeline_folded_8p" else {None, "c"})
        assert (a.split("_")[0], b.split("_")[0]) == (f"r{receive[6]}", f"r{send[6]}")  # ... and each other's peer
    if folder == "pipeline_4stage_lazy_8p":
        # every Send/Receive prints `chunk: I64(0)` (rank_0 validate), and each stage runs that one chunk: a box says
        # its unit as every command does (`F0`, its node's `unit` fact), not `F0.c0`
        assert not any(".c" in n["label"] for n in nodes.values()) and "F0 Send to stage 1 (rank 2)" in {
            n["label"] for n in nodes.values()}


def test_render_interleaved_boxes_say_the_chunk() -> None:
    nodes, edges = _dot("pipeline_interleaved_4stage_8p")
    rank0 = [n["label"] for name, n in nodes.items() if name.startswith("r0_")]
    # rank 0 (stage 0): 48 Send/Receive, each unit once: two boxes `F0 ... Send to stage 1` (chunks 0 and 1), told apart
    assert len(rank0) == 48 and len(set(rank0)) == 48
    assert {"F0.c0 Send to stage 1 (rank 2)", "F0.c1 Send to stage 1 (rank 2)",
            "F0.c1 Receive from stage 3 (rank 6)", "B0.c1 Send to stage 3 (rank 6)"} <= set(rank0)
    # the wrap: rank 6's chunk-0 forward Sends (tags 1572864-1572871) reach rank 0's chunk-1 Receives
    label = {a: nodes[a]["label"] for a in nodes}
    wrap = [(label[a], label[b]) for a, b, c in edges if a.startswith("r6_") and b.startswith("r0_") and c == "#1f5fbf"]
    assert len(wrap) == 8 and all(s.startswith(f"F{m}.c0 Send") and r.startswith(f"F{m}.c1 Receive")
                                  for m, (s, r) in enumerate(wrap))


@pytest.mark.parametrize(("folder", "pairs", "drawn"), FOLDERS)
def test_view_pipeline_graph_pairs_as_check_does(folder: str, pairs: int, drawn: int) -> None:
    graph = models_for(str(FIXTURES / folder)).graphs[0]
    nodes = {n["id"]: n for n in graph["nodes"]}
    edges = pairs_drawn(graph)
    assert len(edges) == drawn == int(graph["groupNodeAttributes"][""]["pairs"])
    assert len({b for _, b in edges}) == drawn
    for a, b in edges:  # `r0 #1 Send m0 c0 tag 0 -> r2`: micro, chunk and tag of the Send's box on the Receive's
        # (`#1`, the place in its rank's order, only where the pass fixes it: not on an inference last stage)
        send, receive = nodes[a]["label"].split(), nodes[b]["label"].split()
        s, r = send.index("Send"), receive.index("Receive")
        assert send[s + 1] == receive[r + 1] and send[send.index("tag") + 1] == receive[receive.index("tag") + 1]


def test_four_rank_group_keeps_the_upstream_peer_stage() -> None:
    # pipeline_4stage_lazy_8p rank_4 validate line 6247: `Receive(...) ... group_rank_ids: (0, 2, 4, 6), src_rank:
    # I64(1), ... src_global_rank: I64(2)`: index 1 of the group is rank 2, stage 1 (rank 4 is stage 2). A rule that
    # took the index for a position in a 2-rank group (index 1 = the higher rank) called it a wrap, peer stage unknown.
    rel = "pipeline_4stage_lazy_8p/rank_4/19_validate_0087.ir.xz"
    facts = analyze(irtool.load(fixture(rel)))
    c = next(c for c in facts.comm if c.line == 6247)
    assert (c.op, c.phase, c.peer_rank, c.rank_attrs["src_rank"], c.peer_stage) == ("Receive", "forward", 2, 1, 1)
    assert facts.stage == 2 and {c.peer_stage for c in facts.comm if c.direction} == {1, 3}
    # the group holds one rank per stage (rank 4 at index 2 on stage 2, rank 2 at index 1 on stage 1): 4 stages, so the
    # rank alone says pp 4 and world 8 (2 ranks per stage: rank 2 is one stage up), where it said `—`
    job = job_of([facts.job])
    assert (job.pipeline_stages.value, job.world_size.value) == (4, 8) and "(0, 2, 4, 6)" in job.pipeline_stages.where


def test_inference_hops_have_a_peer_stage() -> None:
    # inference_pp_8p_m4 rank 2 sends 4x to rank 6 (`dest_rank: I64(6)` on nccl_world_group), its stage 0 from its
    # AllReduce group "2-3" (tests/test_inference_pipeline.py): the Sends go to stage 1
    facts = analyze(irtool.load(fixture("inference_pp_8p_m4/rank_2/19_validate_0082.ir.xz")))
    assert [(c.op, c.peer_rank, c.peer_stage) for c in facts.comm if c.direction] == [("Send", 6, 1)] * 4


def test_a_partial_folder_pairs_what_it_has(tmp_path: Path) -> None:
    # pipeline_interleaved_4stage_8p without stage 1 (ranks 2, 3): rank 0 sends 16 to rank 2 and receives 16 from it,
    # rank 4 the same with rank 2 (the hand counts above); ranks 1 and 5 with rank 3 likewise: 4 x 32 = 128 hops whose
    # peer is not read; the other links pair whole: 224 - 2 x 64 = 96 Send
    for r in (0, 1, 4, 5, 6, 7):
        (tmp_path / f"rank_{r}").symlink_to(FIXTURES / "pipeline_interleaved_4stage_8p" / f"rank_{r}")
    r = _cli("summarize", str(tmp_path))
    assert r.stdout.splitlines()[5] == "Unknown or unpaired: 128 Send/Receive whose peer rank was not read"
    data = json.loads(_cli("check", str(tmp_path), "--format", "json").stdout)
    assert data["findings"] == [] and data["coverage"]["pairs"] == {"compared": 96, "present": 96 + 128}
    out = tmp_path / "p.dot"
    r = _cli("render", str(tmp_path), "--pipeline", "-o", str(out))
    assert r.exit_code == 0, r.output
    # drawn: ranks 0, 4, 6; arrows 4 <-> 6 (16 + 16) and the wrap 6 <-> 0 (8 + 8)
    arrows = re.findall(r"(r\d)_\d+ -> (r\d)_\d+ \[[^\]]*color=\"#(?:1f5fbf|bf1f1f)\"", out.read_text())
    assert sorted(set(arrows)) == [("r0", "r6"), ("r4", "r6"), ("r6", "r0"), ("r6", "r4")] and len(arrows) == 48


def test_the_headline_counts_what_check_finds_unpaired() -> None:
    # check_micro_mismatch_8p: rank 5 compiled with 2 micro batches, rank 1 with 4: rank 1 sends 4 to rank 5, which
    # receives 2 (tags 0, 1), and receives 4 from rank 5, which sends 2: check's 2 `Send without Receive` and 2
    # `Receive without Send` (tests/test_check.py), stage 0 -> 1 and 1 -> 0
    data = json.loads(_cli("check", str(FIXTURES / "check_micro_mismatch_8p"), "--format", "json").stdout)
    problems = [f["problem"] for f in data["findings"] if f["check"] == "p2p"]
    assert problems.count("Send without Receive") == 2 and problems.count("Receive without Send") == 2
    for extra in ((), ("--stage", "1")):  # with rank 5's stage shown as with the folder
        r = _cli("summarize", str(FIXTURES / "check_micro_mismatch_8p"), *extra)
        assert r.stdout.splitlines()[5] == ("Unknown or unpaired: stage 0->1: 2 Sends without Receive; "
                                            "stage 1->0: 2 Receives without Send")


def test_pairing_follows_tags_where_tag_order_is_not_print_order(tmp_path: Path) -> None:
    # tests/permuted_tags.py: pipeline_2stage_2p with rank 1's forward Receives (lines 89, 873, 1447, 2017, printed
    # with sr_tag and micro 0, 1, 2, 3) relabelled 2, 0, 3, 1; rank 0's Sends to rank 1 stay tags 0-3 at lines 576,
    # 863, 1309, 1755 (`xzcat rank_0/*validate* | grep -n '= Send('`). By tag, Send k takes the Receive now tagged k;
    # in print order the k-th Send would take the k-th Receive (micro 0 with micro 2: four `micro differs`).
    import lzma

    from permuted_tags import permuted_folder

    from irtool.parallel.pairs import pair_link

    folder = permuted_folder(FIXTURES, tmp_path / "permuted")
    [r1] = (folder / "rank_1").glob("*_validate_*.ir.xz")
    lines = lzma.open(r1, "rt").read().split("\n")
    assert [re.findall(r"sr_tag: I64\((\d)\)", lines[n - 1]) for n in (89, 873, 1447, 2017)] == [["2"], ["0"], ["3"],
                                                                                                   ["1"]]
    [r0] = (folder / "rank_0").glob("*_validate_*.ir.xz")
    sends = [c for c in analyze(irtool.load(str(r0))).comm if c.op == "Send" and c.peer_rank == 1]
    receives = [c for c in analyze(irtool.load(str(r1))).comm if c.op == "Receive" and c.peer_rank == 0]
    assert [(c.line, c.sr_tag) for c in sends] == [(576, 0), (863, 1), (1309, 2), (1755, 3)]
    pairs = pair_link((0, 1), sends, receives).pairs
    assert [(s.line, r.line) for s, r in pairs] == [(576, 873), (863, 2017), (1309, 89), (1755, 1447)]
    assert all(s.micro == r.micro for s, r in pairs)
    # check pairs the same way: every pair agrees in micro batch and shape; the one finding is that rank 1 waits
    # for micro 2 first while rank 0 sends micro 0 first
    data = json.loads(_cli("check", str(folder), "--format", "json").stdout)
    assert data["coverage"]["pairs"] == {"compared": 8, "present": 8}
    assert [(f["problem"], [s["line"] for s in f["sides"]]) for f in data["findings"]] == [
        ("order differs", [863, 1309, 89, 2017])]
