"""`irtool check DIR`: cross-rank consistency on real dump folders.

The consistent folders are the bundled 8-rank compilations; the inconsistent ones were compiled
on purpose (fixtures/mindir/check_*_8p/make.py): `check_micro_mismatch_8p` (rank 5 compiled with
micro_size 2, the others 4) and `check_strategy_mismatch_8p` (rank 3 shards `out_proj` differently).
Every expected line below was read off the dump text (xzcat + grep, command in the comment).
"""
from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT

from irtool.cli import main
from irtool.consistency import check_dir, check_ranks
from irtool.dumpdir import load_dir, map_ranks, rank_facts

V = "19_validate_0078.ir.xz"
S = "step_parallel_end_0019.ir.xz"


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["check", *map(str, args)])
    return res.exit_code, res.output


def found(result) -> list[tuple[str, str, list[str]]]:
    """(check, problem, [location per side]) of every finding, in output order."""
    return [(f.check, f.problem, [s.location for s in f.sides]) for f in result.findings]


@pytest.fixture(scope="module")
def micro_validate():
    return check_dir(str(FIXTURES / "check_micro_mismatch_8p"))


@pytest.fixture(scope="module")
def strategy_validate():
    return check_dir(str(FIXTURES / "check_strategy_mismatch_8p"))


@pytest.mark.parametrize("folder", ["pipeline_2stage_8p", "gpt_small_dp2mp2pp2"])
def test_consistent_folders_have_no_findings(folder: str) -> None:
    code, out = run(FIXTURES / folder, "--format", "json")
    assert code == 0, out
    d = json.loads(out)
    assert d["schema"] == "irtool.check/2" and d["consistent"] is True
    assert d["findings"] == [] and d["unchecked"] == []  # all 8 ranks are there: nothing left unchecked
    assert [r["rank"] for r in d["ranks"]] == list(range(8))
    assert d["counts"] == {"p2p": 0, "collectives": 0, "groups": 0, "stage": 0, "total": 0}


def test_sequence_parallel_ring_is_consistent() -> None:
    # flash_sp_sendrecv_8p, ranks 0 and 2 (sequence-parallel peers): 4 Sends and 4 Receives each way, every Send with
    # exactly one partner of the same sr_tag and shape, but rank 2 -> 0 uses sr_tag 210 twice (rank_2:224 (2, 2, 32, 16)
    # pairs with rank_0:224, rank_2:1194 (2, 2, 32, 64) with rank_0:776), so a tag pairs in dump order. The ranks run
    # the same plan (same communication and sharded nodes) but 292 and 378 cnodes: causal masking depends on the place
    # in the ring, and that local computation is not compared.
    r = check_dir(str(FIXTURES / "flash_sp_sendrecv_8p"))
    assert r.findings == []
    assert all(u.check == "collectives" for u in r.unchecked)  # the other members of their groups are not there


def test_micro_mismatch_p2p_validate(micro_validate) -> None:
    # xzcat rank_{1,5}/19_validate_0078.ir.xz | grep -nE "= (Send|Receive)\(" (shape, dest/src_rank, sr_tag, micro):
    # rank 1: Send 1060 [4,64] t0 m0, Receive 1501 t0, Send 1510 t1, Receive 2248 t1, Send 2257 t2, Receive 2995 t2,
    #         Send 3004 t3, Receive 3347 t3 (all [4, 64], peer 5); rank 5: Receive 89 [8,64] t0, Send 1250 [8,64] t0,
    #         Receive 1259 t1, Send 2295 t1 (peer 1). Tags 2 and 3 have no partner on rank 5; the pairs differ in shape.
    p2p = [f for f in found(micro_validate) if f[0] == "p2p"]
    r1, r5 = f"rank_1/{V}", f"rank_5/{V}"
    assert p2p == [
        ("p2p", "Send without Receive", [f"{r1}:2257", r5]),
        ("p2p", "Send without Receive", [f"{r1}:3004", r5]),
        ("p2p", "shape differs", [f"{r1}:1060", f"{r5}:89"]),
        ("p2p", "shape differs", [f"{r1}:1510", f"{r5}:1259"]),
        ("p2p", "shape differs", [f"{r5}:1250", f"{r1}:1501"]),
        ("p2p", "shape differs", [f"{r5}:2295", f"{r1}:2248"]),
        ("p2p", "Receive without Send", [r5, f"{r1}:2995"]),
        ("p2p", "Receive without Send", [r5, f"{r1}:3347"]),
    ]
    texts = [s.text for f in micro_validate.findings if f.check == "p2p" for s in f.sides]
    assert texts[:2] == ["Send micro 2 tag 2 (4, 64) Float32 to rank 5", "no Receive from rank 1 with tag 2 for micro 2"]
    assert texts[4:6] == ["Send micro 0 tag 0 (4, 64) Float32 to rank 5",
                          "Receive micro 0 tag 0 (8, 64) Float32 from rank 1"]


def test_micro_mismatch_collectives_and_stage_validate(micro_validate) -> None:
    # group 2-6541264347459079684 (ranks 4, 5): the first collective already differs:
    #   rank_4 line 290 AllReduce, type line 291 (4, 64); rank_5 line 212 AllReduce, line 213 (8, 64);
    #   40 collectives on rank 4 (32 AllReduce + 4 AllGather + 4 ReduceScatter), 20 on rank 5.
    # group 4-15700679239691767905 (ranks 4-7): grep -n 'group: "4-15700679239691767905"':
    #   rank 4: 1149 1174 2105 2144 3075 3114 4027 4157; rank 5: 807 832 1745 1821 -> the 5th (3075) has no counterpart.
    coll = [f for f in micro_validate.findings if f.check == "collectives"]
    assert [(f.subject, f.problem, [s.location for s in f.sides]) for f in coll] == [
        ("group 2-6541264347459079684 (ranks 4, 5)", "collective #1 differs", [f"rank_4/{V}:290", f"rank_5/{V}:212"]),
        ("group 4-15700679239691767905 (ranks 4-7)", "collective #5 differs", [f"rank_4/{V}:3075", f"rank_5/{V}"]),
    ]
    assert coll[0].sides[0].text == "AllReduce sum micro 0 (4, 64) Float32 (#1 of 40 on the group)"
    assert coll[0].sides[1].text == "AllReduce sum micro 0 (8, 64) Float32 (#1 of 20 on the group)"
    assert coll[1].sides[1].text == "no collective #5 on the group (it issues 4)"
    # Stage 1 = ranks 4-7; cnodes 815 on ranks 4, 6, 7 and 553 on rank 5 (header `Total number of cnodes`);
    # micro-batch copies of the same strategies are not reported, only the operator counts.
    stage = [f for f in micro_validate.findings if f.check == "stage"]
    assert [(f.subject, f.problem) for f in stage] == [("stage 1", "operator counts differ")]
    a, b = stage[0].sides
    assert a.text.startswith("815 nodes (also ranks 6, 7), communicating or sharded: ")
    assert b.text.startswith("553 nodes, communicating or sharded: ")
    # the notes' communication counts: AllReduce 53 / 33, Send 4 / 2
    assert "AllReduce 53" in a.text and "Send 4" in a.text and "AllReduce 33" in b.text and "Send 2" in b.text
    assert micro_validate.counts()["total"] == 11 and micro_validate.unchecked == []


def test_micro_mismatch_step_parallel_end() -> None:
    # step_parallel_end has only the forward Sends (rank 1: 2889 m0, 3556 m1, 4223 m2, 4903 m3, [4, 64] -> 5) and
    # rank 5's Receives (2114 m0, 2981 m1, [8, 64] <- 1). grep -n 'group: "2-6541264347459079684"': rank 4 has 20
    # (the 11th, micro 2, at 3924), rank 5 has 10; group 4-157...: rank 4 2956 3775 4592 5388, rank 5 2969 3754.
    r = check_dir(str(FIXTURES / "check_micro_mismatch_8p"), "step_parallel_end")
    r1, r4, r5 = f"rank_1/{S}", f"rank_4/{S}", f"rank_5/{S}"
    assert found(r)[:6] == [
        ("p2p", "Send without Receive", [f"{r1}:4223", r5]),
        ("p2p", "Send without Receive", [f"{r1}:4903", r5]),
        ("p2p", "shape differs", [f"{r1}:2889", f"{r5}:2114"]),
        ("p2p", "shape differs", [f"{r1}:3556", f"{r5}:2981"]),
        ("collectives", "collective #11 differs", [f"{r4}:3924", r5]),
        ("collectives", "collective #3 differs", [f"{r4}:4592", r5]),
    ]
    assert [f[:2] for f in found(r)[6:]] == [("stage", "operator counts differ")]


def test_strategy_mismatch_validate(strategy_validate) -> None:
    # grep -n 'group: "4-6301172352641561019"' (ranks 0-3): rank 0: AllGather 104 170 206 287, AllReduce 374, ...
    #   (10 in all); rank 3: AllGather 104 170 206 287 344 413, ReduceScatter ... (12) -> #5: 374 vs 344.
    # group 2-5488101015797526856 (ranks 3, 7): 4th gradient AllReduce: rank_3:1852 (64, 16) vs rank_7:1710 (16, 64).
    # out_proj: rank_0:359 `in_strategy: ((2, 4), (4, 1))`, rank_3:395 `in_strategy: ((2, 1), (1, 4))`,
    #   both `# Fullname with scope: (.../body-ShardedAttentionMLP/MatMul-op1)`.
    # cnodes: 290 on ranks 0-2, 4-7; 324 on rank 3 (AllGather 14/16, AllReduce 11/9, ReduceScatter 14/16).
    assert found(strategy_validate) == [
        ("collectives", "collective #4 differs", [f"rank_3/{V}:1852", f"rank_7/{V}:1710"]),
        ("collectives", "collective #5 differs", [f"rank_0/{V}:374", f"rank_3/{V}:344"]),
        ("stage", "operator counts differ", [f"rank_0/{V}", f"rank_3/{V}"]),
        ("stage", "strategy differs", [f"rank_0/{V}:359", f"rank_3/{V}:395"]),
    ]
    coll = strategy_validate.findings[1]
    assert coll.sides[0].text == "AllReduce sum (256, 64) Float32 (#5 of 10 on the group)"
    assert coll.sides[1].text.startswith("AllGather ") and coll.sides[1].text.endswith("(#5 of 12 on the group)")
    counts = strategy_validate.findings[2].sides
    assert counts[0].text.startswith("290 nodes (also ranks 1, 2, 4-7), communicating or sharded: ")
    assert "AllReduce 11" in counts[0].text
    assert counts[1].text.startswith("324 nodes, communicating or sharded: ") and "AllReduce 9" in counts[1].text
    strat = strategy_validate.findings[3].sides
    assert strat[0].text.startswith("MatMul out_proj in_strategy (2,4)(4,1) at ")
    assert strat[1].text.startswith("MatMul out_proj in_strategy (2,1)(1,4) at ")


MICRO_CAUSE = ("rank 1 (stage 0) sends 4 micro batches of (4, 64); rank 5 (stage 1) expects 2 of (8, 64) "
               "(rank 5 of stage 1 differs from ranks 4, 6, 7)")


def test_text_and_markdown_output() -> None:
    code, text = run(FIXTURES / "check_micro_mismatch_8p")
    assert code == 1
    assert text.startswith("irtool check ") and ": 8 ranks (pass validate): 11 findings from 1 cause\n" in text
    assert "\n  compared 32 of 32 Send/Receive pairs, 10 of 10 groups, 8 of 8 ranks with a rank of their stage\n" in text
    assert ("findings: point-to-point pairing 8, collectives per group 2, group membership 0, "
            "ranks of one stage alike 1") in text
    assert f"\nCause 1 of 1 (11 findings): {MICRO_CAUSE}\n" in text
    line = next(x for x in text.splitlines() if f"rank_1/{V}:2257" in x)
    assert line.rstrip().endswith(f"rank_1/{V}:2257  Send micro 2 tag 2 (4, 64) Float32 to rank 5")
    for bad in ("None", "'", "{"):
        assert bad not in text
    code, md = run(FIXTURES / "check_micro_mismatch_8p", "--format", "markdown")
    assert code == 1
    assert f"**Cause 1 of 1 (11 findings): {MICRO_CAUSE}**" in md
    assert f"| rank_1/{V}:2257 | Send micro 2 tag 2 (4, 64) Float32 to rank 5 |" in md


def test_the_summary_of_disagreeing_ranks_takes_the_compiled_micro_batches() -> None:
    # `xzcat rank_R/19_validate_0078.ir.xz | grep -o 'micro: I64([0-9]*)' | sort -u`: ranks 0-4, 6, 7 print micro
    # 0-3 (4 micro batches, make.py's micro_size), rank 5 only 0-1 (compiled with 2 on purpose). The job's count is
    # the 4 the other seven ranks show, rank 5's 2 said beside it.
    r = CliRunner().invoke(main, ["summarize", "--format", "json", str(FIXTURES / "check_micro_mismatch_8p")])
    job = json.loads(r.output)["job"]
    assert job["micro_batches"]["value"] == 4 and "/rank_0/" in job["micro_batches"]["evidence"]
    [note] = [n for n in job["notes"] if n.startswith("ranks disagree on the number of micro batches: 2 (")]
    assert "/rank_5/" in note.split(";")[0] and "; 4 (" in note
    # and the text says both counts where it says the job's; ranks that disagree run no one step: no bubble or advice
    # is estimated for a count the measured ranks (0 and 4, of 4) did not run
    text = CliRunner().invoke(main, ["summarize", "--cost", str(FIXTURES / "check_micro_mismatch_8p")]).output
    assert [x for x in text.splitlines() if x.startswith("Job: ")][0].startswith(
        "Job: world 8, dp 2 x mp 2 x pp 2, micro batches: ranks disagree (2 or 4), ")
    assert "Advice: cannot advise: ranks disagree on the number of micro batches (2 or 4)" in text
    assert "  estimated bubble: unknown (ranks disagree on the number of micro batches (2 or 4))" in text
    assert not text.startswith("Step: ")
    # diff says the new side's counts, never its most alone: pipeline_2stage_8p (the same network, every rank micro
    # 0-3) against it was "no configuration change", 4 and 4
    sides = (str(FIXTURES / "pipeline_2stage_8p"), str(FIXTURES / "check_micro_mismatch_8p"))
    diff = CliRunner().invoke(main, ["diff", *sides])
    assert diff.output.startswith("FAIL: configuration: micro batches 4 → 2 or 4 (ranks disagree); ")


# --- causes and coverage (issue 18, item 3)

def test_micro_mismatch_is_one_cause(micro_validate) -> None:
    # rank 5 alone was compiled with micro_size 2 (make.py, manifest `mismatch_rank: 5`). By hand, from
    # xzcat rank_{1,5}/19_validate_0078.ir.xz | grep -nE "= (Send|Receive)\(" (see test_micro_mismatch_p2p_validate):
    # rank 1 sends micro 0-3 to rank 5, all (4, 64); rank 5 receives micro 0, 1 from rank 1, (8, 64).
    # Every one of the 11 findings involves rank 5; ranks 4, 6, 7 (stage 1) agree with each other.
    (cause,) = micro_validate.causes
    assert (cause.kind, cause.ranks, cause.headline) == ("ranks", (5,), MICRO_CAUSE)
    assert micro_validate.findings_of(cause) == micro_validate.findings
    d = micro_validate.as_dict()
    assert d["causes"] == [{"headline": MICRO_CAUSE, "kind": "ranks", "ranks": [5], "findings": list(range(11))}]


def test_strategy_mismatch_is_one_cause(strategy_validate) -> None:
    # rank_3:395 `{instance name: out_proj} ... in_strategy: ((2, 1), (1, 4))`, rank_0:359 and the other ranks
    # `in_strategy: ((2, 4), (4, 1))` (grep -n 'instance name: out_proj' rank_*/19_validate_0078.ir.xz)
    (cause,) = strategy_validate.causes
    assert cause.headline == ("rank 3 alone builds out_proj (MatMul) with in_strategy (2,1)(1,4); "
                              "ranks 0-2, 4-7 with in_strategy (2,4)(4,1)")
    assert (cause.kind, cause.ranks, len(cause.numbers)) == ("ranks", (3,), 4)


@pytest.mark.parametrize("name,ranks,pairs", [
    # one device, no communication: `grep -cE '= (Send|Receive|AllReduce|AllGather|ReduceScatter)\('` -> 0
    ("mlp_cpu", 1, 0),
    # one rank per stage (manifest: device_num 2, pipeline_stages 2): rank 0 sends 4 to rank 1 (`dest_rank: I64(1)`
    # in the primitive_attrs of its 4 `= Send(` lines) and receives 4 from it, rank 1 the mirror; no collective
    # (the same grep of AllReduce/AllGather/ReduceScatter -> 0): 4 pairs each way, no group, no stage peer
    ("pipeline_2stage_2p", 2, 8)])
def test_strict_passes_where_nothing_needs_pairing(name: str, ranks: int, pairs: int) -> None:
    folder = FIXTURES / name
    code, text = run(folder, "--strict")
    assert code == 0, text
    assert text.splitlines()[:2] == [
        f"irtool check {folder}: {ranks} rank{'s' if ranks != 1 else ''} (pass validate): consistent",
        f"  compared {pairs} of {pairs} Send/Receive pairs, 0 of 0 groups, 0 of {ranks} ranks with a rank of their stage"]
    d = json.loads(run(folder, "--format", "json")[1])
    assert (d["consistent"], d["complete"], d["unchecked"]) == (True, True, [])


def test_one_rank_per_stage_stage_pair_cause(tmp_path) -> None:
    # ranks 1 (stage 0) and 5 (stage 1) of check_micro_mismatch_8p alone: no stage peer to tell which rank is odd,
    # so the 8 Send/Receive findings (both directions) are one cause between the two stages. 6 groups have
    # collectives (grep -c distinct `group: "..."` of AllReduce/AllGather/ReduceScatter on ranks 1 and 5), none with
    # all its members here.
    d = _folder(tmp_path, "check_micro_mismatch_8p", {1: 1, 5: 5})
    r = check_dir(str(d))
    (cause,) = r.causes
    assert cause.headline == "stage 0 sends 4 micro batches of (4, 64); stage 1 expects 2 of (8, 64)"
    assert (cause.kind, cause.ranks, len(cause.numbers)) == ("stages", (1, 5), 8)
    assert r.coverage.text() == ("compared 8 of 8 Send/Receive pairs, 0 of 6 groups, "
                                 "0 of 2 ranks with a rank of their stage")
    assert not r.complete


def test_coverage_of_one_rank_per_stage_and_strict() -> None:
    # pipeline_4stage_8p holds ranks 0, 2, 4, 6: one per stage. Sends/Receives between them (grep -cE
    # "= (Send|Receive)\(": 16 on ranks 0 and 6, 32 on ranks 2 and 4 = 96 nodes = 48 pairs, each peer in the
    # folder); 4 tensor-parallel groups of two (2-..., ranks (0, 1), (2, 3), (4, 5), (6, 7)) with one member
    # each here; no rank has a stage peer.
    folder = FIXTURES / "pipeline_4stage_8p"
    r = check_dir(str(folder))
    assert r.consistent and not r.complete
    assert r.coverage.text() == ("compared 48 of 48 Send/Receive pairs, 0 of 4 groups, "
                                 "0 of 4 ranks with a rank of their stage")
    code, text = run(folder)
    assert code == 0
    assert text.startswith(f"irtool check {folder}: 4 ranks (pass validate): consistent as far as compared, "
                           "not fully checked, 4 not checked\n")
    assert run(folder, "--strict")[0] == 1
    d = json.loads(run(folder, "--format", "json")[1])
    assert (d["consistent"], d["complete"]) == (True, False)
    assert d["coverage"] == {"pairs": {"compared": 48, "present": 48}, "groups": {"compared": 0, "present": 4},
                             "stage_peers": {"compared": 0, "present": 4}}
    full = FIXTURES / "pipeline_2stage_8p"
    assert run(full, "--strict")[0] == 0
    code, text = run(full)
    assert text.startswith(f"irtool check {full}: 8 ranks (pass validate): consistent\n")


def test_json_of_a_finding(strategy_validate) -> None:
    d = json.loads(json.dumps(strategy_validate.as_dict()))
    assert d["consistent"] is False and d["counts"]["total"] == 4 and d["counts"]["stage"] == 2
    assert d["findings"][0]["sides"][0] == {"rank": 3, "file": f"rank_3/{V}", "line": 1852,
                                            "text": "AllReduce sum (64, 16) Float32 (#4 of 4 on the group)"}
    assert {r["stage"] for r in d["ranks"]} == {None}  # no pipeline: one set of alike ranks


def _folder(tmp_path, source: str, ranks: dict[int, int]):
    """A folder of `rank_N` links to real rank folders (a partial or mislabelled collection)."""
    for rank, real in ranks.items():
        os.symlink(FIXTURES / source / f"rank_{real}", tmp_path / f"rank_{rank}")
    return tmp_path


def test_missing_ranks_are_said(tmp_path) -> None:
    # pipeline_2stage_8p stage 0 only: grep -c "= Send(" rank_0/19_validate_0078.ir -> 4 (dest_rank 4), Receive 4.
    d = _folder(tmp_path, "pipeline_2stage_8p", {0: 0, 1: 1})
    code, out = run(d, "--format", "json")
    assert code == 0, out  # nothing inconsistent among the ranks there; what could not be checked is listed
    notes = [u["text"] for u in json.loads(out)["unchecked"]]
    assert "rank 0 sends to rank 4, which is not in the folder (4 Send)" in notes
    assert "rank 0 receives from rank 4, which is not in the folder (4 Receive)" in notes
    assert "rank 1 sends to rank 5, which is not in the folder (4 Send)" in notes
    # group 4-6301172352641561019 = (0, 1, 2, 3) (`group_rank_ids` in rank_0's dump)
    assert ("group 4-6301172352641561019 (ranks 0-3): ranks 2, 3 are not in the folder, "
            "their collectives are not compared") in notes


def test_rank_not_in_its_own_group(tmp_path) -> None:
    # rank_2 holds rank 0's files (copied into the wrong folder): its first AllReduce, line 358, is on group
    # 2-5004544844489628105 with `group_rank_ids: (0, 1)`, which does not hold rank 2.
    d = _folder(tmp_path, "pipeline_2stage_8p", {0: 0, 1: 1, 2: 0})
    r = check_dir(str(d))
    assert found(r) == [("groups", "rank not in its own group", [f"rank_2/{V}:358"])]


def test_group_meaning_different_ranks() -> None:
    # Group names are hashes of their member lists, so no real compilation gives one name two meanings; the
    # pure check is fed the real facts of ranks 0 and 1 with rank 1's view of its group rewritten.
    ranks = load_dir(str(FIXTURES / "pipeline_2stage_8p"))[:2]
    facts = map_ranks(rank_facts, ranks, jobs=2)
    for c in facts[1].facts.comm:
        if c.group == "2-5004544844489628105":
            c.group_ranks = (1, 0, 2)
    r = check_ranks(str(FIXTURES / "pipeline_2stage_8p"), facts)
    groups = [f for f in r.findings if f.check == "groups"]
    assert [(f.problem, [s.location for s in f.sides]) for f in groups] == [
        ("means different ranks", [f"rank_0/{V}:358", f"rank_1/{V}:358"])]
    assert groups[0].sides[1].text.endswith(": group 2-5004544844489628105 = ranks (1, 0, 2)")


def test_unreadable_rank_is_exit_2(tmp_path) -> None:
    # fixtures/errors/not_a_dump.ir (hand-made, see its README) as one rank's validate file, read in a worker process
    os.symlink(FIXTURES / "pipeline_2stage_8p" / "rank_0", tmp_path / "rank_0")
    (tmp_path / "rank_1").mkdir()
    shutil.copy(ROOT / "fixtures" / "errors" / "not_a_dump.ir", tmp_path / "rank_1" / "19_validate_0078.ir")
    res = CliRunner().invoke(main, ["check", str(tmp_path), "--jobs", "2"])
    # issue 18: the other ranks are still checked; the unreadable one is on stderr and in its own section
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"irtool: {tmp_path}/rank_1/19_validate_0078.ir:1:")
    assert res.stdout.splitlines()[0].endswith("; 1 rank not read (below): the folder was not fully checked")
    code, out = run(FIXTURES / "pipeline_2stage_8p", "--pass", "no_such_pass")
    # the pass list is that of the file names: `ls fixtures/mindir/pipeline_2stage_8p/rank_*`
    assert code == 2 and "no pass matches --pass no_such_pass; passes here: bootstrap, merge_send_receive, " \
        "pipeline_split, step_parallel_begin, step_parallel_end, validate" in out


def test_dask_cluster_gives_the_same_result(tmp_path) -> None:
    import distributed  # the optional irtool[dask]; `make test` installs it

    folder = str(FIXTURES / "check_micro_mismatch_8p")
    os.symlink(FIXTURES / "pipeline_2stage_8p" / "rank_0", tmp_path / "rank_0")
    (tmp_path / "rank_1").mkdir()
    shutil.copy(ROOT / "fixtures" / "errors" / "not_a_dump.ir", tmp_path / "rank_1" / "19_validate_0078.ir")
    # the scheduler and a worker in this process, but reached over TCP as a cluster's are: each task and its result
    # (a rank's facts, or its DumpError) cross a socket in Dask's own serialisation (worker processes would cost
    # seconds of start-up and show nothing more)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://",
                                  host="127.0.0.1", dashboard_address=":0") as cluster:  # a free port
        seen: list[tuple[int, int]] = []
        remote = check_dir(folder, scheduler=cluster.scheduler_address, progress=lambda d, t: seen.append((d, t)))
        res = CliRunner().invoke(main, ["summarize", str(FIXTURES / "pipeline_2stage_8p"), "--format", "json",
                                        "--scheduler", cluster.scheduler_address])
        bad = CliRunner().invoke(main, ["check", str(tmp_path), "--scheduler", cluster.scheduler_address])
    # a worker's DumpError comes back as the same one line, exit 2
    assert bad.exit_code == 2 and bad.output.startswith(f"irtool: {tmp_path}/rank_1/19_validate_0078.ir:1:")
    assert remote.as_dict() == check_dir(folder, jobs=1).as_dict()
    assert seen[-1] == (8, 8) and len(seen) == 8
    assert res.exit_code == 0, res.output
    local = CliRunner().invoke(main, ["summarize", str(FIXTURES / "pipeline_2stage_8p"), "--format", "json"])
    assert res.output == local.output
    d = json.loads(res.output)
    assert [r["rank"] for r in d["ranks"]] == list(range(8)) and [s["stage"] for s in d["stages"]] == [0, 1]


def test_bad_scheduler_address_is_exit_2() -> None:
    code, out = run(FIXTURES / "pipeline_2stage_8p", "--scheduler", "foo://x")
    assert code == 2 and out.startswith("irtool: --scheduler foo://x: not a scheduler address (unknown address scheme")


def test_group_local_peer_index() -> None:
    # gpt_small_dp2mp2pp2_lazyinline rank_0 validate: `Send(...) primitive_attrs: {shape: [128, 128], dest_rank: I64(1),
    # dst_global_rank: I64(4), group: "2-16453000547691086251Send", group_rank_ids: (0, 4), ...}`: `dest_rank` is the
    # index in the two-rank group. Without `dst_global_rank` (as other versions print) the index still gives rank 4.
    from dataclasses import replace

    from irtool.parallel.peer import global_peer

    (rank0,) = load_dir(str(FIXTURES / "gpt_small_dp2mp2pp2_lazyinline" / "rank_0"))
    send = next(c for c in rank_facts(rank0).facts.comm if c.op == "Send")
    assert (send.group_ranks, send.rank_attrs, send.peer_rank) == ((0, 4), {"dest_rank": 1, "dst_global_rank": 4}, 4)
    local = replace(send, peer_rank=1, rank_attrs={"dest_rank": 1})
    assert global_peer(local, 0).peer_rank == 4
    assert global_peer(replace(local, peer_rank=0, rank_attrs={"src_rank": 0}), 4).peer_rank == 0  # index 0 = rank 0
    assert global_peer(send, 0) is send  # a global peer is left as it is


def test_order_differs() -> None:
    # No compilation reorders one side only, so the pure check is fed the real facts of ranks 0 and 4 of
    # pipeline_2stage_8p with rank 4's nodes listed backwards. rank_0: Sends to 4 at 1060 (tag 0), 1510 (tag 1), ...;
    # rank_4: grep -nE "= (Send|Receive)\(" -> Receive from 0 tag 0 first, tag 1 next (in the real order).
    ranks = [r for r in load_dir(str(FIXTURES / "pipeline_2stage_8p")) if r.rank in (0, 4)]
    facts = map_ranks(rank_facts, ranks)
    r = check_ranks(str(FIXTURES / "pipeline_2stage_8p"), facts)
    assert r.findings == []
    facts[1].facts.comm.reverse()
    r = check_ranks(str(FIXTURES / "pipeline_2stage_8p"), facts)
    assert [(f.subject, f.problem) for f in r.findings] == [("rank 0 -> rank 4", "order differs"),
                                                            ("rank 4 -> rank 0", "order differs")]
    first = r.findings[0].sides
    assert [s.location for s in first[:2]] == [f"rank_0/{V}:1060", f"rank_0/{V}:1510"]
    assert first[0].text.endswith(" before") and "tag 0" in first[0].text and "tag 1" in first[2].text


def test_order_differs_is_of_the_execution_order_not_the_print_order() -> None:
    # The same two ranks listed backwards while their dumps are still read: each rank's Sends and Receives are
    # compared in the order the `order` fact runs them (its dependencies: rank 0 sends tag 0 at 1060 before tag 1 at
    # 1510, ..., rank 4 receives them so), not in the order they are listed: nothing differs. (Listed backwards with
    # the dumps let go, above, print order is all there is, and it differs.)
    from irtool.consistency import check_digests, details
    from irtool.consistency.digest import digest, run_order
    from irtool.parallel import analyze

    held, digests = {}, []
    for rank in [r for r in load_dir(str(FIXTURES / "pipeline_2stage_8p")) if r.rank in (0, 4)]:
        facts = held[rank.rank] = analyze(rank.load(), rank.rank)
        facts.comm.reverse()
        digests.append(digest(rank.rank, rank.path, 0, facts, run_order(facts)))
    r = check_digests(str(FIXTURES / "pipeline_2stage_8p"), digests, lambda ranks: [details(held[k]) for k in ranks])
    assert r.coverage.pairs.compared == 8 and [f.problem for f in r.findings] == []  # 4 micro batches each way


@pytest.mark.parametrize("folder", ["pipeline_2stage_8p", "gpt_small_dp2mp2pp2"])
def test_consistent_folders_at_step_parallel_end(folder: str) -> None:
    # Send/Receive there name `group: "nccl_world_group"` without `group_rank_ids`: the world group is every rank
    r = check_dir(str(FIXTURES / folder), "step_parallel_end")
    assert r.findings == [] and [(u.check, u.text) for u in r.unchecked] == [ORDER_NOT_FIXED]


# Before validate the Sends and Receives are printed in graph order, not execution order (docs/cost.md §4):
# pipeline_folded_8p's step_parallel_end has rank 0 send tag 0 before tag 1 (`grep -n 'sr_tag'`) while rank 4
# receives tag 1 first, on a job that runs; its order is not compared there, and says so.
ORDER_NOT_FIXED = ("p2p", "the order of Sends and Receives is not compared: this pass prints them before "
                          "MindSpore fixes the execution order")


def test_order_is_compared_only_where_the_pass_fixes_it() -> None:
    r = check_dir(str(FIXTURES / "pipeline_folded_8p"), "step_parallel_end")
    assert r.findings == [] and [(u.check, u.text) for u in r.unchecked] == [ORDER_NOT_FIXED]
    assert check_dir(str(FIXTURES / "pipeline_folded_8p")).unchecked == []  # validate: compared


def test_pass_before_the_stages_are_known(tmp_path) -> None:
    # 11_pipeline_split of ranks 0 and 4 (stages 0 and 1): the Sends/Receives are there, the stage is not (§7),
    # so the two ranks are not compared as ranks of one stage; the operators differ by construction.
    d = _folder(tmp_path, "pipeline_2stage_8p", {0: 0, 4: 4})
    r = check_dir(str(d), "pipeline_split")
    assert r.findings == []
    assert [(u.check, u.text) for u in r.unchecked] == [
        ORDER_NOT_FIXED,
        ("stage", "rank 0 has pipeline Send/Receive but no known stage: not compared with other ranks"),
        ("stage", "rank 4 has pipeline Send/Receive but no known stage: not compared with other ranks")]


@pytest.mark.parametrize("folder,code", [("check_micro_mismatch_8p", 1), ("check_strategy_mismatch_8p", 1),
                                         ("flash_sp_sendrecv_8p", 0), ("semi_auto_8p", 0)])
def test_no_python_spellings(folder: str, code: int) -> None:
    from test_output import PYTHON_SPELLINGS

    for fmt in ("text", "markdown"):
        for pass_name in ("validate", "step_parallel_end"):
            got, out = run(FIXTURES / folder, "--format", fmt, "--pass", pass_name)
            assert got == code, out
            bad = [line for line in out.splitlines() if PYTHON_SPELLINGS.search(line)]
            assert not bad, f"{fmt}: {bad[:3]}"


def test_two_ranks_of_a_stage_that_disagree_are_not_called_odd(tmp_path) -> None:
    # ranks 1 (stage 0), 4 and 5 (stage 1) of check_micro_mismatch_8p: with two ranks in stage 1 nothing says which
    # of 4 and 5 is the odd one; the cause is told by rank 5 (the higher, as the checks pick the lowest as reference)
    # without calling it odd
    d = _folder(tmp_path, "check_micro_mismatch_8p", {1: 1, 4: 4, 5: 5})
    (cause,) = check_dir(str(d)).causes
    assert cause.headline == ("rank 1 (stage 0) sends 4 micro batches of (4, 64); rank 5 (stage 1) expects 2 of "
                              "(8, 64) (rank 5 of stage 1 disagrees with rank 4)")
    assert cause.ranks == (5,)


def test_only_the_ranks_a_finding_shows_are_read_again(strategy_validate):
    """The main process keeps a digest per rank; details are read again only for the ranks whose
    hashes differ and that a finding shows: rank 3's out_proj MatMul differs (the fixture's make.py
    changes rank 3 only), its collectives are compared with ranks 0 and 7 (its groups' reference
    ranks, as the findings' sides say) and its stage with rank 0."""
    from irtool.consistency import check_digests
    from irtool.consistency.digest import rank_details, rank_digest

    path = str(FIXTURES / "check_strategy_mismatch_8p")
    files = {f.rank: f for f in load_dir(path)}
    read: list[list[int]] = []

    def load(ranks: list[int]) -> list:
        read.append(ranks)
        return map_ranks(rank_details, [files[r] for r in ranks], 1)

    result = check_digests(path, map_ranks(rank_digest, list(files.values()), 2), load)
    assert sorted(r for batch in read for r in batch) == [0, 3, 7]  # each read once
    assert result.as_dict() == strategy_validate.as_dict()


def test_staged_findings_come_out_in_key_order() -> None:
    # check stages findings made as ranks arrive under the key they are shown by (consistency/staged.py):
    # a temporary SQLite table must order the keys as Python orders the tuples (shorter first, ints, strs
    # by code point), equal keys in the order they were added
    from irtool.consistency.staged import Staged
    from irtool.spill import Spill

    keys = [(2, "b", 0, 5), (0, 300, 4, 0, False), (2, "b", 1), (2, "a", 0, 300), (1,), (0, 4, 300, 1, True),
            (2, "B", 0, 0), (1,), (0, 4, 300, 0, False)]
    staged: Staged[int] = Staged()
    for i, key in enumerate(keys):
        staged.add(key, i)
    assert list(staged.drain()) == [8, 5, 1, 4, 7, 6, 3, 0, 2]
    assert staged.drain(lambda key: key[0] != 0) == Spill([]) == []
    staged.add((0, 1), 0)
    staged.add((3,), 1)
    assert staged.drain(lambda key: key[0] != 0) == [1]


def test_summarize_says_in_text_that_ranks_disagree_on_micro_batches() -> None:
    # make.py: rank 5 compiled with micro_size 2, every other rank with 4. Rank 5's largest `micro: I64(1)` (none of
    # micro 2 or 3); rank 0's line 2570 `micro: I64(3)`. The text must not print one count where the JSON says two.
    r = CliRunner().invoke(main, ["summarize", str(FIXTURES / "check_micro_mismatch_8p")])
    assert r.exit_code == 0, r.output
    job = r.output.splitlines()[1]
    assert "micro batches: ranks disagree (2 or 4)" in job and "4 micro batches" not in job
    row = next(x for x in r.output.splitlines() if x.strip().startswith("micro batches"))
    assert "2 or 4: ranks disagree" in row
    note = next(x for x in r.output.splitlines() if x.strip().startswith("note"))
    assert "rank_5/19_validate_0078.ir.xz:1259 (micro 1, Receive)" in note and "rank_0/19_validate_0078.ir.xz:2570" in note
