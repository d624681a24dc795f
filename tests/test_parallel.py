r"""Parallel semantics on the real fixtures: exact numbers from docs/parallel_expected.md.

Every number below was worked out by hand from the fixture files (docs/parallel_expected.md, "Commands"):
per-op counts by `grep -oE '^  %[^ ]+ = (AllReduce|...)\(' | sort | uniq -c`; categories by the instance-name
families (`redistribution_op_*`, `forward_op_*`, `grad_mirror_*`, `parallel_optimizer_*`, pipeline primal attrs);
bytes = element count x dtype size of this rank's tensor (docs/parallel.md §5); stage from the Send/Receive
primal `dest_rank`/`src_rank`/`stage` (§7).
"""
from __future__ import annotations

import json
import lzma
import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, LARGE_GROUP, fixture, large_facts

import irtool
from irtool.cli import main
from irtool.parallel import analyze

# (file, comm nodes per op [grep of `= Op(` node lines], per category [rules R1-R10],
#  bytes per category [sum of element count x dtype size; step_parallel_end: only Send/Receive attrs and
#  the sliced `# Params:` of each mirror's parameter], stage [§7 votes])
CASES = [
    ("semi_auto_8p/rank_0/19_validate_0078.ir.xz",
     {"AllGather": 14, "AllReduce": 11, "ReduceScatter": 14},
     {"gradient-aggregation": 6, "operator-forward": 5, "redistribution": 28},
     {"gradient-aggregation": 53888, "operator-forward": 393220, "redistribution": 3145728}, None),
    ("semi_auto_8p/rank_0/step_parallel_end_0019.ir.xz",
     {"AllGather": 14, "AllReduce": 3, "_MirrorOperator": 6},
     {"gradient-aggregation": 6, "operator-forward": 3, "redistribution": 14},
     {"gradient-aggregation": 53888}, None),
    ("semi_auto_8p/rank_5/19_validate_0078.ir.xz",
     {"AllGather": 14, "AllReduce": 11, "ReduceScatter": 14},
     {"gradient-aggregation": 6, "operator-forward": 5, "redistribution": 28},
     {"gradient-aggregation": 53888, "operator-forward": 393220, "redistribution": 3145728}, None),
    ("pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz",
     {"AllReduce": 45, "Receive": 4, "Send": 4},
     {"gradient-aggregation": 13, "operator-forward": 32, "pipeline": 8},
     {"gradient-aggregation": 296960, "operator-forward": 32768, "pipeline": 8192}, 0),
    ("pipeline_2stage_8p/rank_0/step_parallel_end_0019.ir.xz",
     {"AllReduce": 16, "Send": 4, "_MirrorMicroStepOperator": 13},
     {"gradient-aggregation": 13, "operator-forward": 16, "pipeline": 4},
     {"gradient-aggregation": 296960, "pipeline": 4096}, 0),
    ("pipeline_2stage_8p/rank_4/19_validate_0078.ir.xz",
     {"AllGather": 4, "AllReduce": 53, "Receive": 4, "ReduceScatter": 4, "Send": 4},
     {"gradient-aggregation": 13, "operator-forward": 40, "pipeline": 8, "redistribution": 8},
     {"gradient-aggregation": 266240, "operator-forward": 32800, "pipeline": 8192, "redistribution": 2048}, 1),
    ("pipeline_4stage_8p/rank_2/19_validate_0078.ir.xz",
     {"AllReduce": 36, "Receive": 16, "Send": 16},
     {"gradient-aggregation": 4, "operator-forward": 32, "pipeline": 32},
     {"gradient-aggregation": 1024, "operator-forward": 65536, "pipeline": 65536}, 1),
    ("pipeline_4stage_8p/rank_6/19_validate_0078.ir.xz",
     {"AllReduce": 68, "Receive": 8, "Send": 8},
     {"gradient-aggregation": 4, "operator-forward": 64, "pipeline": 16},
     {"gradient-aggregation": 1024, "operator-forward": 70720, "pipeline": 32768}, 3),
    ("opt_parallel_8p/rank_0/19_validate_0078.ir.xz",
     {"AllGather": 8, "AllReduce": 1, "ReduceScatter": 8},
     {"operator-forward": 1, "optimizer-parallel": 16},
     {"operator-forward": 4, "optimizer-parallel": 1218688}, None),
    ("opt_parallel_8p/rank_0/step_parallel_end_0019.ir.xz",
     {"AllGather": 8, "AllReduce": 1},
     {"operator-forward": 1, "optimizer-parallel": 8},
     {}, None),
    ("data_parallel_8p/rank_0/19_validate_0072.ir.xz",
     {"AllReduce": 12},
     {"gradient-aggregation": 12},
     {"gradient-aggregation": 484920}, None),
    ("auto_parallel_8p/rank_0/19_validate_0079.ir.xz",
     {"AllGather": 1, "AllReduce": 26, "ReduceScatter": 1},
     {"gradient-aggregation": 17, "operator-forward": 9, "redistribution": 2},
     {"gradient-aggregation": 100608, "operator-forward": 262148, "redistribution": 10240}, None),
    ("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz",
     {"AllReduce": 56, "Receive": 2, "Send": 2},
     {"gradient-aggregation": 34, "operator-forward": 22, "pipeline": 4},
     {"gradient-aggregation": 1091072, "operator-forward": 851968, "pipeline": 262144}, 0),
    ("gpt_small_dp2mp2pp2/rank_5/19_validate_0078.ir.xz",
     {"AllReduce": 69, "Receive": 2, "Send": 2},
     {"gradient-aggregation": 35, "operator-forward": 34, "pipeline": 4},
     {"gradient-aggregation": 1059328, "operator-forward": 595984, "pipeline": 262144}, 1),
    ("gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz",
     {"AllReduce": 45, "Receive": 2, "Send": 2},
     {"gradient-aggregation": 34, "operator-forward": 11, "pipeline": 4},
     {"gradient-aggregation": 1091072, "operator-forward": 425984, "pipeline": 262144}, 0),
    ("gpt_small_dp2mp2pp2_lazyinline/rank_4/19_validate_0089.ir.xz",
     {"AllReduce": 52, "Receive": 2, "Send": 2},
     {"gradient-aggregation": 35, "operator-forward": 17, "pipeline": 4},
     {"gradient-aggregation": 1059328, "operator-forward": 297992, "pipeline": 262144}, 1),
    ("moe_8p/rank_0/19_validate_0078.ir.xz",
     {"AllReduce": 5, "AlltoAll": 8},
     {"gradient-aggregation": 4, "operator-forward": 1, "expert-parallel": 8},
     {"gradient-aggregation": 14848, "operator-forward": 4, "expert-parallel": 131072}, None),
    ("layout_8p/rank_0/19_validate_0078.ir.xz",
     {"AllGather": 5, "AllReduce": 5, "ReduceScatter": 5},
     {"gradient-aggregation": 4, "operator-forward": 3, "redistribution": 8},
     {"gradient-aggregation": 17472, "operator-forward": 4100, "redistribution": 18432}, None),
    ("flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz",
     {"AllGather": 5, "AllReduce": 7, "NeighborExchange": 2, "ReduceScatter": 5},
     {"gradient-aggregation": 4, "operator-forward": 3, "context-parallel": 2, "redistribution": 10},
     {"gradient-aggregation": 16384, "operator-forward": 16388, "context-parallel": 16384, "redistribution": 98304}, None),
]


def _totals(rel: str) -> tuple[Counter, Counter, Counter, int | None]:
    dump = irtool.load(fixture(rel))
    comms = analyze(dump).comm
    by_bytes: Counter = Counter()
    for c in comms:
        if c.bytes is not None:
            by_bytes[c.category] += c.bytes
    return Counter(c.op for c in comms), Counter(c.category for c in comms), by_bytes, analyze(dump).stage


@pytest.mark.parametrize(("rel", "ops", "cats", "nbytes", "stage"), CASES, ids=[c[0] for c in CASES])
def test_expected_numbers(rel: str, ops: dict, cats: dict, nbytes: dict, stage: int | None) -> None:
    got_ops, got_cats, got_bytes, got_stage = _totals(rel)
    assert dict(got_ops) == ops  # grep count of `  %N = Op(` lines per comm op
    assert dict(got_cats) == cats  # instance-name families / primal attrs, docs/parallel.md §2
    assert {k: v for k, v in got_bytes.items() if v} == nbytes  # per-node tensor bytes summed, §5
    assert got_stage == stage  # Send/Receive primal dest_rank-1 / src_rank+1 / stage, §7


def test_semi_auto_rank0_details() -> None:
    dump = irtool.load(fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz"))
    comms = analyze(dump).comm
    phases = Counter(f"{c.category}/{c.phase}" for c in comms)
    # Gradients/ scope or forward_unique_id -> backward; mirrors always backward (§3)
    assert phases == {"gradient-aggregation/backward": 6, "operator-forward/backward": 2, "operator-forward/forward": 3,
                      "redistribution/backward": 14, "redistribution/forward": 14}
    groups = analyze(dump).groups
    # group -> group_rank_ids / rank_list read from any comm node using it (§6)
    assert groups["2-16453000547691086251"].ranks == (0, 4)
    assert groups["4-6301172352641561019"].ranks == (0, 1, 2, 3)
    assert groups["nccl_world_group"].ranks == tuple(range(8))
    assert groups["2-5004544844489628105"].comm_nodes == 10  # comm nodes naming that group
    # 22 node lines contain `in_strategy`, none of them _Virtual* (grep -c in_strategy)
    assert len(analyze(dump).strategies) == 22
    assert all(s.in_strategy is not None for s in analyze(dump).strategies)


def _manifest_stages(scenario: str) -> dict[int, int]:
    meta = json.loads((FIXTURES / scenario / "manifest.json").read_text())["per_rank_meta"]
    return {int(r): m["stage"] for r, m in meta.items()}


@pytest.mark.parametrize("scenario", ["pipeline_2stage_8p", "pipeline_4stage_8p", "gpt_small_dp2mp2pp2",
                                      "gpt_small_dp2mp2pp2_lazyinline", "pipeline_unequal_8p"])
@pytest.mark.parametrize("pass_glob", ["*_validate_*", "step_parallel_end_*"])
def test_stage_matches_manifest(scenario: str, pass_glob: str) -> None:
    expected = _manifest_stages(scenario)
    assert expected
    for rank, stage in expected.items():
        (path,) = (FIXTURES / scenario / f"rank_{rank}").glob(pass_glob + ".ir.xz")
        assert analyze(irtool.load(str(path))).stage == stage, (scenario, rank)  # manifest.json per_rank_meta


def test_pipeline_2stage_send_receive_pairs() -> None:
    for rank in range(8):
        comms = analyze(irtool.load(fixture(f"pipeline_2stage_8p/rank_{rank}/19_validate_0078.ir.xz"))).comm
        p2p = [c for c in comms if c.op in ("Send", "Receive")]
        stage, peer = (0, rank + 4) if rank < 4 else (1, rank - 4)
        fwd_op = "Send" if stage == 0 else "Receive"  # stage 0 sends activations forward, stage 1 receives them
        fwd = [c for c in p2p if c.phase == "forward"]
        bwd = [c for c in p2p if c.phase == "backward"]
        # 1 p2p per micro batch 0..3 each way (micro_size 4), peer stage 1-stage, global peer rank r+-4, 4x64 F32
        assert sorted(c.micro for c in fwd) == [0, 1, 2, 3] and {c.op for c in fwd} == {fwd_op}
        assert sorted(c.micro for c in bwd) == [0, 1, 2, 3] and {c.op for c in bwd} == {"Send", "Receive"} - {fwd_op}
        assert {(c.peer_stage, c.peer_rank, c.bytes) for c in p2p} == {(1 - stage, peer, 1024)}


def test_lazyinline_p2p_uses_stage_attr() -> None:
    dump = irtool.load(fixture("gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz"))
    facts = analyze(dump)
    info = facts.stage_info
    # pr.stage 0, pr.chunk 0 on every hop: one chunk, which the stage's chunks say as [] (`order.stage_chunks`)
    assert info.stage == 0 and info.how == ["primal stage"] and facts.job.chunks == []
    send = [c for c in analyze(dump).comm if c.op == "Send" and c.phase == "forward"]
    # 2-rank group `2-16453000547691086251Send` = (0, 4); dst_global_rank 4 (pa.dest_rank 1 is the in-group index)
    assert {(c.group, tuple(c.group_ranks or ()), c.peer_rank, c.peer_stage) for c in send} == {
        ("2-16453000547691086251Send", (0, 4), 4, 1)}


@LARGE_GROUP
def test_gpt_large_perf() -> None:
    facts = large_facts()  # gpt_large_perf/rank_0/19_validate_0078.ir.xz, parsed once per test process
    comms = facts.comm
    assert Counter(c.op for c in comms) == {"AllReduce": 1266, "Receive": 8, "Send": 8}  # grep count
    assert Counter(c.category for c in comms) == {"gradient-aggregation": 386, "operator-forward": 880, "pipeline": 16}
    # recompute copies carry cnode_attrs duplicated: Bool(1) (96 AllReduce)
    assert Counter(c.phase for c in comms if c.category == "operator-forward") == {
        "backward": 392, "forward": 392, "recompute": 96}
    by: Counter = Counter()
    for c in comms:
        by[c.category] += c.bytes or 0
    assert by == {"gradient-aggregation": 184754176, "operator-forward": 234881024, "pipeline": 8388608}  # §5 sums
    assert facts.stage == 0  # 16 votes, primal dest_rank 1 -> stage 0
    assert len(facts.strategies) == 7232  # grep -c in_strategy, no _Virtual* among them


def test_summarize_folder_cli() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["summarize", str(FIXTURES / "pipeline_2stage_8p"), "--format", "json", "--jobs", "4"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(r["rank"], r["stage"]) for r in data["ranks"]] == [(r, 0 if r < 4 else 1) for r in range(8)]
    assert all("19_validate_0078" in r["file"] for r in data["ranks"])  # default pass: last validate
    stages = {s["stage"]: s for s in data["stages"]}
    assert stages[0]["ranks"] == [0, 1, 2, 3] and stages[1]["ranks"] == [4, 5, 6, 7]
    # 4 ranks x (13 grad + 32 op-forward + 8 pipeline) from the rank 0-3 table
    assert stages[0]["comm_totals"]["by_category"]["pipeline"]["count"] == 32
    assert stages[0]["comm_totals"]["total"]["bytes"] == 4 * 337920
    result = runner.invoke(main, ["summarize", str(FIXTURES / "pipeline_2stage_8p"), "--stage", "1",
                                  "--pass", "step_parallel_end", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    # the tables are stage 1's (ranks 4-7); the job above them is the folder's, its evidence may name any rank
    tables = result.output[result.output.index("| rank | stage | file |"):]
    assert "step_parallel_end_0019" in tables and "rank_0/" not in tables


def test_summarize_file_json_fields() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["summarize", fixture("pipeline_2stage_8p/rank_4/19_validate_0078.ir.xz"),
                                  "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("schema", "path", "entry", "counts", "ops", "subgraphs", "warnings", "stage", "comm", "comm_totals",
                "groups", "send_receive", "gradient_aggregation", "strategies", "top_scopes"):
        assert key in data
    assert data["stage"] == 1
    need = {"node", "op", "category", "phase", "group", "group_ranks", "shape", "dtype", "bytes", "micro",
            "peer_stage", "scope"}
    assert all(need <= set(c) for c in data["comm"])
    assert data["comm_totals"]["total"]["count"] == 69  # AllGather 4 + AllReduce 53 + Receive 4 + RS 4 + Send 4
    for fmt in ("text", "markdown"):
        assert runner.invoke(main, ["summarize", fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz"),
                                    "--format", fmt]).exit_code == 0


def test_chains_are_built_when_first_asked_for_and_facts_stay_picklable() -> None:
    import pickle

    from irtool.dumpdir import load_dir, rank_facts

    dump = irtool.load(fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz"))
    facts = analyze(dump)
    assert facts._chains is None  # analysis itself builds none
    # pickled before the chains were asked for: the facts travel without the dump, and say so when asked
    copy = pickle.loads(pickle.dumps(facts))
    assert copy.comm == facts.comm and copy._chains is None
    with pytest.raises(ValueError, match="ask for them before"):
        _ = copy.chains
    # asked for: built once, kept, and travelling with the facts; the dump is let go
    chains = facts.chains
    assert chains and facts.chains is chains and facts._make_chains is None
    assert [c.as_dict() for c in pickle.loads(pickle.dumps(facts)).chains] == [c.as_dict() for c in chains]
    # a folder command (check, summarize DIR) keeps the ranks' facts without their dumps and builds no chains
    (rank0,) = [r for r in load_dir(str(Path(fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz")).parents[1]))
                if r.rank == 0]
    kept = rank_facts(rank0).facts
    assert kept._chains is None and kept._make_chains is None


def test_one_byte_sum_and_one_spelling() -> None:
    from irtool.parallel import Bytes
    from irtool.parallel.records import total_bytes
    from irtool.present import bytes_text, cell

    partly = total_bytes([4096, None, 1024, None])
    assert (partly.total, partly.known, partly.unknown, partly.exact) == (5120, 2, 2, None)
    assert bytes_text(partly) == cell(partly) == "5,120 (+2 unknown)"
    assert bytes_text(total_bytes([None] * 4)) == "—"  # nothing known: never `0 (+4 unknown)`
    assert bytes_text(Bytes() + 8 + 0) == "8" and (Bytes() + 8).exact == 8 and Bytes().exact is None


def test_scope_reads_the_cell_whether_or_not_the_dump_prints_the_operator() -> None:
    from irtool.parallel.scope import Scope, in_gradients

    # validate dumps print `Fullname with scope: (.../body-ShardedAttentionMLP/AllGather-op0)`, step_parallel_end
    # ones `# Scope: (.../body-ShardedAttentionMLP)`: the same cell
    assert Scope("Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP/AllGather-op0").cell == \
        Scope("Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP").cell == \
        "Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP"
    grad = Scope("Gradients/recompute_Default/n-GPT/layers-CellList/0-DecoderLayer/Grad_MatMul/AllReduce-op3")
    assert in_gradients(grad.text) and grad.own_op == "AllReduce-op3"
    assert grad.cell_parts == ("Default", "n-GPT", "layers-CellList", "0-DecoderLayer")
    # semi_auto_8p rank_5 step_parallel_end: the communication nodes' `# Scope:` lines
    # (grep -A2 -E '^  %[0-9]+(\([^)]*\))? = (PrimFunc_)?(AllGather|AllReduce|_MirrorOperator|ReduceScatter)\(' |
    #  grep -o '# Scope: ([^)]*)' | sort | uniq -c): 20 under body-ShardedAttentionMLP, 2 head-Head, 1 _loss_fn-Loss
    out = CliRunner().invoke(main, ["summarize", "--format", "json",
                                    fixture("semi_auto_8p/rank_5/step_parallel_end_0019.ir.xz")])
    top = [(e["scope"].rsplit("/", 1)[-1], e["count"]) for e in json.loads(out.output)["top_scopes"]]
    assert sorted(top) == [("_loss_fn-Loss", 1), ("body-ShardedAttentionMLP", 20), ("head-Head", 2)]


def test_a_peer_printed_as_a_group_index_is_the_same_global_rank_in_every_command(tmp_path: Path) -> None:
    # gpt_small_dp2mp2pp2_lazyinline rank_0 validate: its 4 Send/Receive print `dest_rank: I64(1)` / `src_rank: I64(1)`
    # (the index in `group_rank_ids: (0, 4)`) and `dst_global_rank: I64(4)` / `src_global_rank: I64(4)`. Without
    # the global ranks (as older MindSpore prints them) the peer is still rank 4.
    text = lzma.open(FIXTURES / "gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz", "rt",
                     encoding="utf-8").read()
    stripped, n = re.subn(r"(dst|src)_global_rank: I64\(\d+\), |, (dst|src)_global_rank: I64\(\d+\)", "", text)
    assert n == 4
    (tmp_path / "rank_0").mkdir()
    (tmp_path / "rank_0" / "19_validate_0087.ir").write_text(stripped, encoding="utf-8")
    out = CliRunner().invoke(main, ["summarize", "--format", "json", str(tmp_path / "rank_0" / "19_validate_0087.ir")])
    s = json.loads(out.output)
    assert [c["peer_rank"] for c in s["comm"] if c["direction"]] == [4, 4, 4, 4]
    assert {e["peer_rank"] for e in s["send_receive"]} == {4}
