"""One peer for every Send/Receive in every command (issue 18 item 4, issue 17 "the same peer for the same
Send"): summarize (text, JSON), diff, check and the viewer's pipeline graph, on two real 8-rank folders
compiled with 2 stages x 2 segments and micro_size 4; stage s runs on ranks [4s, 4s + 4) (make.py).

By hand from the dump text (per rank_R/FILE, `xz -dc FILE | ...`):
  grep -cE '= Send\\('        -> 12 (validate); 8 on ranks 0-3, 4 on ranks 4-7 (step_parallel_end)
  grep -cE '= Receive\\('     -> 12 (validate); 4 on ranks 0-3, 8 on ranks 4-7 (step_parallel_end)
  pipeline_folded_8p (`pipeline_segments=2`): no `dst_global_rank`/`src_global_rank`;
    grep -oE '(dest|src)_rank: I64\\([0-9]\\)' on Send/Receive lines -> 1 on ranks 0-3, 0 on ranks 4-7,
    the peer's position in the 2-rank group; `group: "2-16453000547691086251"` on rank_0, a group named by
    MindSpore `2-<std::hash("0-4")>` (checked with g++: std::hash<std::string>{}("0-4") = 16453000547691086251);
    validate prints `group_rank_ids: (4, 0)` on rank_0 and `(0, 4)` on rank_4 for that group;
    step_parallel_end prints no member list.
  pipeline_segments_8p (interleaved): `dst_global_rank`/`src_global_rank` = R + 4 on ranks 0-3, R - 4 on 4-7.
So every Send/Receive of rank R has peer R + 4 (stage 1) on stage 0 and R - 4 (stage 0) on stage 1.
"""
from __future__ import annotations

import json
import lzma
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from test_view import pairs_drawn

import irtool
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.peer import group_members, std_hash
from irtool.selection import Selection
from irtool.view.models import models_for

FOLDERS = ("pipeline_folded_8p", "pipeline_segments_8p")
PASSES = {"validate": "19_validate", "step_parallel_end": "step_parallel_end"}
# Send/Receive lines per rank and pass, by stage (the greps above): (sends, receives)
COUNTS = {("validate", 0): (12, 12), ("validate", 1): (12, 12),
          ("step_parallel_end", 0): (8, 4), ("step_parallel_end", 1): (4, 8)}


def _peer(rank: int) -> int:
    return rank + 4 if rank < 4 else rank - 4


def _file(folder: str, rank: int, pass_name: str) -> Path:
    return next((FIXTURES / folder / f"rank_{rank}").glob(PASSES[pass_name] + "*.ir.xz"))


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_group_members_from_the_name() -> None:
    # g++: std::hash<std::string>{}("0-4") = 16453000547691086251, ("0-1") = 5004544844489628105,
    # ("0-1-2-3") = 6301172352641561019 (libstdc++, 64-bit)
    assert std_hash("0-4") == 16453000547691086251
    assert std_hash("0-1-2-3") == 6301172352641561019
    assert group_members("2-16453000547691086251", 0) == (0, 4)
    assert group_members("2-16453000547691086251", 4) == (0, 4)
    assert group_members("2-16453000547691086251", None) == (0, 4)  # no rank folder: pairs searched
    assert group_members("2-5004544844489628105", 1) == (0, 1)
    # pipeline_segments_8p (lazy_inline) rank_0: `group: "2-16453000547691086251Send"` on its 12 Send/Receive lines
    assert group_members("2-16453000547691086251Send", 0) == (0, 4)
    # the members are a fact of the name: asked by a rank outside it (3 is not in "0-4"), the pairs of
    # small ranks still find them
    assert group_members("2-5208665662337742843", 3) == (0, 2)  # g++: std::hash("0-2") = 5208665662337742843
    assert group_members("2-1", 3) is None  # no pair hashes to 1
    # larger groups are not searched; names not made by MindSpore say nothing
    assert group_members("4-6301172352641561019", 0) is None
    assert group_members("nccl_world_group", 0) is None
    assert group_members(None, 0) is None


@pytest.mark.parametrize("pass_name", list(PASSES))
@pytest.mark.parametrize("folder", FOLDERS)
def test_analysis_resolves_every_peer(folder: str, pass_name: str) -> None:
    for rank in range(8):
        facts = analyze(irtool.load(_file(folder, rank, pass_name)))
        stage = rank // 4
        p2p = [c for c in facts.comm if c.direction]
        assert facts.stage == stage
        assert Counter(c.op for c in p2p) == dict(zip(("Send", "Receive"), COUNTS[(pass_name, stage)]))
        assert {c.peer_rank for c in p2p} == {_peer(rank)}, (folder, rank)
        assert {c.peer_stage for c in p2p} == {1 - stage}
        if folder == "pipeline_folded_8p":  # members ascending, whatever order `group_rank_ids` prints
            assert {c.group_ranks for c in p2p} == {tuple(sorted((rank, _peer(rank))))}


def test_peer_without_a_rank_folder(tmp_path: Path) -> None:
    # a file copied out of its rank_N folder: the group's name still gives its two members, and the
    # printed index (1 on rank 1, a stage-0 rank) names the upper one, rank 5
    src = _file("pipeline_folded_8p", 1, "step_parallel_end")
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    facts = analyze(irtool.load(dst))
    assert {c.peer_rank for c in facts.comm if c.direction} == {5}


def test_unknown_group_members_give_an_unknown_peer(tmp_path: Path) -> None:
    # the only change: rank_0's p2p group renamed to one whose members no name hash gives
    # (grep -c '2-16453000547691086251' -> 12 lines, all Send/Receive, no `group_rank_ids` in this pass)
    text = lzma.open(_file("pipeline_folded_8p", 0, "step_parallel_end"), "rt").read()
    assert text.count('group: "2-16453000547691086251"') == 12
    edited = tmp_path / "rank_0" / "step_parallel_end_0019.ir"
    edited.parent.mkdir()
    edited.write_text(text.replace("2-16453000547691086251", "2-1"))
    p2p = [c for c in analyze(irtool.load(edited)).comm if c.direction]
    assert len(p2p) == 12 and {c.peer_rank for c in p2p} == {None}  # unknown, not rank 1 (the index)
    assert {c.peer_stage for c in p2p} == {1}  # the stage comes from the primal attributes, still known
    code, out = _run("summarize", str(edited))
    assert code == 0
    table = out[out.index("Send/Receive\n"):].split("\n\n")[0].splitlines()[3:]
    rows = [line.split() for line in table]
    # op, phase, peer stage, peer rank, ...: the peer rank is unknown, the peer stage known
    assert len(rows) == 3 and {(r[2], r[3]) for r in rows} == {("1", "—")}


@pytest.mark.parametrize("folder", FOLDERS)
def test_summarize_names_the_peer_and_stage_of_every_rank(folder: str) -> None:
    code, out = _run("summarize", str(FIXTURES / folder), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [(r["rank"], r["stage"]) for r in data["ranks"]] == [(r, r // 4) for r in range(8)]
    for r in data["ranks"]:
        rows = r["send_receive"]
        assert {e["peer_rank"] for e in rows} == {_peer(r["rank"])}
        assert {e["peer_stage"] for e in rows} == {1 - r["rank"] // 4}
        assert sum(e["count"] for e in rows) == 24  # 12 Send + 12 Receive (validate)
    code, text = _run("summarize", str(FIXTURES / folder), "--all")
    assert code == 0
    table = text[text.index("Send/Receive per rank"):].split("\n\n")[0].splitlines()[3:]
    # rank, stage, op, phase, peer stage, peer rank, ...
    cells = [line.split() for line in table]
    assert len(cells) == 48 and all(c[5] == str(_peer(int(c[0]))) and c[4] == str(1 - int(c[0]) // 4) for c in cells)


def test_diff_rows_name_the_peer_rank_and_stage() -> None:
    # step_parallel_end -> validate of rank 5 (stage 1): validate adds the backward Send/Receive
    # (grep -c: 12 + 12 in validate against 4 + 8 in step_parallel_end), each to or from rank 1, stage 0
    old, new = _file("pipeline_folded_8p", 5, "step_parallel_end"), _file("pipeline_folded_8p", 5, "validate")
    code, out = _run("diff", str(old), str(new), "--format", "json")
    data = json.loads(out)
    p2p = [e for r in data["ranks"] for e in r["comm"] if e["op"] in ("Send", "Receive")]
    assert p2p and all(e["change"] == "added" for e in p2p)
    sides = [e.get("new") or e.get("old") or e for e in p2p]
    assert {(s["peer_rank"], s["peer_stage"]) for s in sides} == {(1, 0)}
    code, text = _run("diff", str(old), str(new))
    rows = [line for line in text.splitlines() if line.split()[:1] == ["added"] and line.split()[2] in ("Send", "Receive")]
    assert len(rows) == 12  # 8 Send + 4 Receive more in validate
    assert rows and all(line.rstrip().endswith("peer rank 1 (stage 0)") for line in rows)


@pytest.mark.parametrize("folder", FOLDERS)
def test_check_of_a_folder_that_runs(folder: str) -> None:
    # every Send pairs with the Receive of its peer by global peer, tag and micro: 8 ranks x 12 Sends
    code, out = _run("check", str(FIXTURES / folder), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["consistent"] and data["findings"] == []
    assert data["coverage"]["pairs"] == {"compared": 96, "present": 96}
    assert [(r["rank"], r["stage"]) for r in data["ranks"]] == [(r, r // 4) for r in range(8)]
    code, text = _run("check", str(FIXTURES / folder))
    assert code == 0 and text.splitlines()[0].endswith(": consistent")
    assert "rank 0 -> rank 0" not in text


@pytest.mark.parametrize("pass_name", list(PASSES))
@pytest.mark.parametrize("folder", FOLDERS)
def test_viewer_pipeline_graph_one_edge_per_pair(folder: str, pass_name: str) -> None:
    # the graph shows rank 0 (stage 0) and rank 4 (stage 1); every Send of one reaches a Receive of the other
    graph = models_for(Selection.of(str(FIXTURES / folder), pass_name_=pass_name)).graphs[0]
    assert graph["id"] == "pipeline"
    nodes = {n["id"]: n for n in graph["nodes"]}
    # each Send's line to its Receive (the graph's edge overlay of pairs)
    edges = pairs_drawn(graph)
    sends = {stage: COUNTS[(pass_name, stage)][0] for stage in (0, 1)}
    assert len(nodes) == 2 * sum(COUNTS[(pass_name, 0)])
    assert Counter((a.split("/")[0], b.split("/")[0]) for a, b in edges) == {
        ("rank0", "rank4"): sends[0], ("rank4", "rank0"): sends[1]}  # no rank0 -> rank0
    op = {i: next(a["value"] for a in n["attrs"] if a["key"] == "operator") for i, n in nodes.items()}
    assert all(op[a] == "Send" and op[b] == "Receive" for a, b in edges)
    assert len({a for a, _ in edges}) == len(edges) == len({b for _, b in edges})  # one edge per pair
    peers = {n["id"].split("/")[0]: set() for n in nodes.values()}
    for n in nodes.values():
        peers[n["id"].split("/")[0]].update(a["value"] for a in n["attrs"] if a["key"] == "peer")
    assert peers == {"rank0": {"to rank 4", "from rank 4"}, "rank4": {"to rank 0", "from rank 0"}}


@pytest.mark.parametrize("rank", range(8))
def test_members_from_the_name_are_the_members_validate_prints(rank: int) -> None:
    # step_parallel_end lists no members (grep -c 'group_rank_ids' -> 0 on Send/Receive/AllReduce lines);
    # validate prints them for the same group names, e.g. rank_5: `group: "2-6541264347459079684",
    # group_rank_ids: (4, 5)` (40 lines) and `2-12944936785892925600` = (5, 1) / (1, 5) (std::hash("1-5"))
    early = analyze(irtool.load(_file("pipeline_folded_8p", rank, "step_parallel_end")))
    late = analyze(irtool.load(_file("pipeline_folded_8p", rank, "validate")))
    printed = {c.group: tuple(sorted(c.group_ranks)) for c in late.comm if c.group_ranks}
    named = {name: g.ranks for name, g in early.groups.items() if g.size == 2}
    assert len(named) == 3 and all(ranks is not None for ranks in named.values())
    assert named == {name: printed[name] for name in named}
    assert all(rank in ranks for ranks in named.values())



def test_a_middle_stage_sends_both_ways_by_phase() -> None:
    # pipeline_4stage_lazy_8p rank_4, validate: stage 2 (`stage: I64(2)` on each of its 32 Send/Receive), all on the
    # lazy-inline group of one rank per stage, group_rank_ids (0, 2, 4, 6), whose `dest_rank`/`src_rank` index it.
    # `grep '= Send('` / `'= Receive('`, with or without `forward_unique_id` (backward): 8 of each kind; forward
    # Receives `src_rank: I64(1)` (rank 2) e.g. line 6247, forward Sends `dest_rank: I64(3)` (rank 6) e.g. 6271,
    # backward Receives (of those Sends) `src_rank: I64(3)` e.g. 6292, backward Sends (of those Receives)
    # `dest_rank: I64(1)` e.g. 6337. A backward hop runs the other way of its forward one: from stage 3, to stage 1
    # (a Send to a lower rank is no wrap into stage 0 when it is backward).
    comm = [c for c in analyze(irtool.load(str(_file("pipeline_4stage_lazy_8p", 4, "validate")))).comm if c.direction]
    assert Counter((c.phase, c.op, c.peer_rank, c.peer_stage) for c in comm) == {
        ("forward", "Receive", 2, 1): 8, ("forward", "Send", 6, 3): 8,
        ("backward", "Receive", 6, 3): 8, ("backward", "Send", 2, 1): 8}
    assert {c.line: (c.phase, c.op) for c in comm if c.line in (6247, 6271, 6292, 6337)} == {
        6247: ("forward", "Receive"), 6271: ("forward", "Send"), 6292: ("backward", "Receive"), 6337: ("backward", "Send")}
