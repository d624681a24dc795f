"""Every rank of the folded (pipeline_folded_8p: `pipeline_segments=2`) and the interleaved (pipeline_segments_8p:
`pipeline_interleave`, lazy_inline) 2-stage x 2-segment pipelines on 8 devices is on its configured stage, and the
Send/Receive attributes the peer rules read are what the dump text prints. By hand, per file:
  grep -cE '^  %[^ ]+ = (Send|Receive)\\(' FILE        -> 12 (step_parallel_end), 24 (validate)
  grep -E '= (Send|Receive)\\(' FILE | grep -o '(dest|src)_rank: I64(N)' in primitive_attrs
     folded: 1 on ranks 0-3, 0 on ranks 4-7 (the peer's position in the 2-rank group), no `_global_rank`
     interleaved: `dst_global_rank`/`src_global_rank` = rank + 4 on ranks 0-3, rank - 4 on ranks 4-7
Stage s runs on ranks [4s, 4s + 4) (placement; make.py of each folder)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

import irtool
from irtool.cli import main
from irtool.parallel import analyze

FILES = [(folder, r, p.name) for folder in ("pipeline_folded_8p", "pipeline_segments_8p") for r in range(8)
         for p in sorted((FIXTURES / folder / f"rank_{r}").glob("*.ir.xz"))
         if p.name.startswith(("step_parallel_end", "19_validate"))]


def test_every_rank_has_both_files() -> None:
    assert len(FILES) == 32


@pytest.mark.parametrize(("folder", "rank", "name"), FILES)
def test_stage_and_printed_peer(folder: str, rank: int, name: str) -> None:
    facts = analyze(irtool.load(FIXTURES / folder / f"rank_{rank}" / name))
    stage = rank // 4
    assert facts.stage_info.stage == stage
    assert set(facts.stage_info.votes) == {stage}
    p2p = [c for c in facts.comm if c.op in ("Send", "Receive")]
    assert len(p2p) == (12 if name.startswith("step_parallel_end") else 24)
    assert {c.category for c in p2p} == {"pipeline"}
    if folder == "pipeline_folded_8p":
        position = 1 if stage == 0 else 0  # the other member of the 2-rank group, in ascending order
        assert {v for c in p2p for k, v in c.rank_attrs.items()} == {position}
        assert not any(k.endswith("_global_rank") for c in p2p for k in c.rank_attrs)
        assert {c.segment for c in p2p} == {0, 1}
    else:
        peer = rank + 4 if stage == 0 else rank - 4
        assert {c.peer_rank for c in p2p} == {peer}


@pytest.mark.parametrize("folder", ["pipeline_folded_8p", "pipeline_segments_8p"])
def test_manifest_records_stage_and_peers(folder: str) -> None:
    m = json.loads((FIXTURES / folder / "manifest.json").read_text())
    assert m["stage_of_rank"] == {str(r): r // 4 for r in range(8)}
    assert {r: v["peer_global_ranks"] for r, v in m["peers_of_rank"].items()} == {
        str(r): [r + 4 if r < 4 else r - 4] for r in range(8)}


@pytest.mark.parametrize(("folder", "said"), [
    # rank 0 validate: `Send(...)` with `cnode_primal_attrs: {..., segment: I64(0), ..., dest_rank: I64(1), ...}` and
    # no `chunk` (make.py: pipeline_segments=2): a folded pipeline's segments
    ("pipeline_folded_8p", "2 segments (folded) per stage"),
    # `Send(...)` with `{..., chunk: I64(0), ...}` (the pipeline_interleave config, lazy_inline): interleaved chunks
    ("pipeline_segments_8p", "2 chunks per stage"),
])
def test_folded_segments_are_said_as_segments(folder: str, said: str) -> None:
    out = CliRunner().invoke(main, ["summarize", str(FIXTURES / folder)]).output
    assert said in out.splitlines()[1]
    # no node of either folder runs on a world group (`grep 'group: "[a-z]*_world_group"'` finds none: only
    # `group_back`); rank 0's first Send goes to rank 4 on stage 1 (folded: line 622 `group_rank_ids: (4, 0)`), so a
    # stage holds 4 ranks, and 2 stages: world 4 x 2 = 8, not unknown
    assert out.splitlines()[1].startswith("Job: world 8, dp 2 x mp 2 x pp 2, ")
    assert ("segments per stage" in out) == (folder == "pipeline_folded_8p")


def test_folded_micro_batches_in_flight_per_segment() -> None:
    # pipeline_folded_8p: 4 micro batches (make.py), each stage runs both its segments forward before any backward (the
    # order its validate's dependencies fix: F0.s0 .. F3.s0 F0.s1 .. F3.s1 B0.s1 ..): at the most, all 4 micro batches
    # are held on segment 0 and all 4 on segment 1. A folded pipeline's parts are segments (`segment: I64(1)` on its
    # Sends, no `chunk`), said so as the job line says them, never "chunk"
    out = CliRunner().invoke(main, ["summarize", "--cost", str(FIXTURES / "pipeline_folded_8p")]).output.splitlines()
    for s in (0, 1):
        line = next(x for x in out if x.startswith(f"  stage {s}: micro batches in flight: "))
        assert line.startswith(f"  stage {s}: micro batches in flight: 4 on segment 0, 4 on segment 1 (")
        assert "a micro batch on one segment holds 1/2 of its activations" in line and " chunk" not in line
        # its units labelled by segment (`.s1`), as the text says them, never as a chunk (`.c1`)
        assert "order this dump fixes (F0.s0 F1.s0 F2.s0 F3.s0 F0.s1 F1.s1 F2.s1 F3.s1 B0.s1 B1.s1 B2.s1 B3.s1 B0.s0" in line
        assert ".c0" not in line and ".c1" not in line
    assert "Advice: cannot advise: 2 segments per stage: a split per segment is not searched" in out
    # the schedule: all 8 units forward (4 micro batches on 2 segments) before any backward
    assert sum(x.startswith("every forward before any backward, 2 segments: GPipe", 9) for x in out) == 2
