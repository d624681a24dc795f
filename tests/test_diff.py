"""`irtool diff` on real fixtures: identical compilations, rank-specific groups, known changes."""
from __future__ import annotations

import json
import lzma
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from irtool import load
from irtool.cli import main
from irtool.diff import diff, diff_dirs, parse_threshold
from irtool.diff.match import normalise_scope
from irtool.diff.report import to_json, to_markdown, to_text
from irtool.dumpdir import rank_files

ROOT = Path(__file__).resolve().parent.parent
F = ROOT / "fixtures" / "mindir"
EDITED = ROOT / "fixtures" / "edited" / "semi_auto_8p_rank_0_validate_fc1_strategy.ir"
RANK_FIELDS = {"group", "group_ranks", "dest_rank", "src_rank", "dst_global_rank", "src_global_rank",
               "send_rank_ids", "recv_rank_ids"}


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["diff", *map(str, args)])
    return res.exit_code, res.output


def rows(records: list) -> list[dict]:
    """Typed change records as their JSON (docs/diff.md)."""
    return [e.as_dict() for e in records]


def comm_counts(rank) -> Counter:
    return Counter((e.change, e.op) for e in rank.comm)


# --- identical

def test_default_and_sorted_order_are_identical() -> None:
    result = diff_dirs(str(F / "mlp_cpu"), str(F / "mlp_cpu_sorted"))
    assert result.identical
    assert result.failures(["any"]) == []
    assert result.ranks[0].counts() == {"comm": 0, "strategy": 0, "ops": 0, "params": 0, "rank_specific": 0}
    code, out = run(F / "mlp_cpu", F / "mlp_cpu_sorted", "--fail-on", "any")
    assert code == 0
    assert out.rstrip().endswith("identical")


def test_sorted_order_identical_through_the_api() -> None:
    old = load(str(F / "mlp_cpu" / "rank_0" / "19_validate_0072.ir"))
    new = load(str(F / "mlp_cpu_sorted" / "rank_0" / "19_validate_0072.ir.xz"))
    assert diff(old, new).identical


def test_two_ranks_of_one_pipeline_stage_differ_only_in_rank_specific_groups() -> None:
    result = diff_dirs(str(F / "pipeline_2stage_8p" / "rank_0"), str(F / "pipeline_2stage_8p" / "rank_1"))
    r = result.ranks[0]
    assert (r.old_rank, r.new_rank, r.old_stage, r.new_stage) == (0, 1, 0, 0)
    assert result.identical and result.failures(["any"]) == []
    assert r.rank_specific, "peer ranks of Send/Receive differ between rank 0 and rank 1"
    for e in rows(r.rank_specific):
        assert set(e["fields"]) <= RANK_FIELDS
    sends = [e for e in rows(r.rank_specific) if e["op"] == "Send"]
    assert sends and all(e["old"]["dest_rank"] == 4 and e["new"]["dest_rank"] == 5 for e in sends)
    code, out = run(F / "pipeline_2stage_8p" / "rank_0", F / "pipeline_2stage_8p" / "rank_1")
    assert code == 0
    assert "Rank-specific (expected between two ranks of one stage; not a failure)" in out


def test_semi_auto_rank_0_vs_rank_5_rank_specific_groups() -> None:
    result = diff_dirs(str(F / "semi_auto_8p" / "rank_0"), str(F / "semi_auto_8p" / "rank_5"))
    r = result.ranks[0]
    assert result.identical
    assert len(r.rank_specific) == 31
    assert all(e["fields"] == ["group", "group_ranks"] for e in rows(r.rank_specific))
    first = rows(r.rank_specific)[0]
    assert first["op"] == "AllGather"
    assert first["node_scope"].endswith("body-ShardedAttentionMLP/AllGather-op0")
    assert first["old"]["group_ranks"] == [0, 1, 2, 3] and first["new"]["group_ranks"] == [4, 5, 6, 7]
    assert run(F / "semi_auto_8p" / "rank_0", F / "semi_auto_8p" / "rank_5")[0] == 0


def test_same_rank_against_itself_has_no_rank_specific_entries() -> None:
    result = diff_dirs(str(F / "semi_auto_8p" / "rank_0"), str(F / "semi_auto_8p" / "rank_0"))
    assert result.identical and result.ranks[0].rank_specific == []


def test_stage_option_keeps_the_ranks_of_one_stage() -> None:
    # pipeline_2stage_8p: ranks 4-7 are stage 1 (manifest.json)
    only = diff_dirs(str(F / "pipeline_2stage_8p"), str(F / "pipeline_2stage_8p"), stage=1)
    assert [r.old_rank for r in only.ranks] == [4, 5, 6, 7] and only.identical
    assert run(F / "pipeline_2stage_8p", F / "pipeline_2stage_8p", "--stage", "1")[0] == 0


def test_scenario_folders_match_ranks_by_number() -> None:
    same = diff_dirs(str(F / "pipeline_2stage_8p"), str(F / "pipeline_2stage_8p"))
    assert [r.old_rank for r in same.ranks] == list(range(8)) and same.identical
    # two configurations (dp2 x mp2 x pp2, 4 micro batches against dp1 x mp2 x pp4, 8): rank with rank on request
    mixed = diff_dirs(str(F / "pipeline_2stage_8p"), str(F / "pipeline_4stage_8p"), by_rank=True)
    assert [r.old_rank for r in mixed.ranks] == [0, 2, 4, 6]
    assert mixed.only_old == [1, 3, 5, 7] and mixed.only_new == []
    across = diff_dirs(str(F / "pipeline_2stage_8p"), str(F / "pipeline_4stage_8p"))
    assert across.mode == "logical" and across.ranks == [] and across.only_old == []


# --- known changes

def test_edited_in_strategy_is_reported_exactly() -> None:
    result = diff_dirs(str(F / "semi_auto_8p" / "rank_0"), str(EDITED))
    r = result.ranks[0]
    assert r.counts() == {"comm": 0, "strategy": 1, "ops": 0, "params": 0, "rank_specific": 0}
    assert rows(r.strategy) == [{
        "change": "changed", "stage": None,
        "scope": "Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP", "op": "MatMul",
        "name": "fc1", "node_scope": "Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP/MatMul-op2",
        "field": "in_strategy", "old": [[4, 1], [1, 2]], "new": [[2, 1], [1, 4]], "micro": None,
    }]
    assert result.failures() == ["rank 0 vs dump: 1 strategy difference(s)"]
    code, out = run(F / "semi_auto_8p" / "rank_0", EDITED)
    assert code == 1
    assert "in_strategy: (4,1)(1,2) -> (2,1)(1,4)" in out
    assert run(F / "semi_auto_8p" / "rank_0", EDITED, "--fail-on", "comm,ops")[0] == 0
    assert run(F / "semi_auto_8p" / "rank_0", EDITED, "--fail-on", "params", "--fail-on", "strategy")[0] == 1


def test_semi_auto_vs_data_parallel() -> None:
    result = diff_dirs(str(F / "semi_auto_8p" / "rank_0"), str(F / "data_parallel_8p" / "rank_0"), by_rank=True)
    r = result.ranks[0]
    assert comm_counts(r) == {("added", "AllReduce"): 12, ("removed", "AllGather"): 14,
                              ("removed", "AllReduce"): 11, ("removed", "ReduceScatter"): 14}
    assert r.comm_bytes_total == (3592836, 484920)
    by_cat = {e["category"]: (e["old"], e["new"], e["old_count"], e["new_count"]) for e in rows(r.comm_bytes)}
    assert by_cat["redistribution"] == (3145728, 0, 28, 0)
    assert Counter(e["change"] for e in rows(r.strategy)) == {"removed": 22}
    ops = {e["op"]: e["delta"] for e in rows(r.ops)}
    assert ops["AllGather"] == -14 and ops["ReduceScatter"] == -14 and ops["AllReduce"] == 1
    assert ops["Conv2D"] == 2
    params = {e["name"]: e for e in rows(r.params)}
    assert params["inputs0"]["change"] == "changed"
    assert (params["inputs0"]["old_shape"], params["inputs0"]["new_shape"]) == ([512, 64], [16, 3, 32, 32])
    assert params["conv1.weight"]["change"] == "added" and params["body.w1"]["change"] == "removed"
    assert run(F / "semi_auto_8p" / "rank_0", F / "data_parallel_8p" / "rank_0", "--by-rank")[0] == 1


def test_pipeline_2_stage_vs_4_stage() -> None:
    result = diff_dirs(str(F / "pipeline_2stage_8p" / "rank_0"), str(F / "pipeline_4stage_8p" / "rank_0"),
                       by_rank=True)
    r = result.ranks[0]
    assert (r.old_stage, r.new_stage) == (0, 0)
    assert comm_counts(r) == {
        ("added", "AllGather"): 8, ("added", "AllReduce"): 36, ("added", "ReduceScatter"): 8,
        ("added", "Send"): 4, ("added", "Receive"): 4, ("changed", "Send"): 4, ("changed", "Receive"): 4,
        ("removed", "AllReduce"): 45}
    changed = [e for e in rows(r.comm) if e["change"] == "changed"]
    for e in changed:
        assert e["fields"] == ["shape", "bytes"]
        assert (e["old"]["shape"], e["new"]["shape"]) == ([4, 64], [8, 64])
        assert (e["old"]["bytes"], e["new"]["bytes"]) == (1024, 2048)
        assert e["category"] == "pipeline" and e["stage"] == 0
    pipeline = [e for e in rows(r.comm_bytes) if e["category"] == "pipeline"]
    assert pipeline == [{"stage": 0, "category": "pipeline", "old": 8192, "new": 32768, "old_count": 8,
                         "new_count": 16, "old_bytes_unknown": 0, "new_bytes_unknown": 0}]
    ops = {e["op"]: e["delta"] for e in rows(r.ops)}
    assert ops["Send"] == 4 and ops["Receive"] == 4 and ops["LayerNorm"] == 16
    assert run(F / "pipeline_2stage_8p" / "rank_0", F / "pipeline_4stage_8p" / "rank_0", "--by-rank")[0] == 1


def test_max_comm_bytes_increase() -> None:
    result = diff_dirs(str(F / "pipeline_4stage_8p" / "rank_0"), str(F / "pipeline_2stage_8p" / "rank_0"), by_rank=True)
    assert result.ranks[0].comm_bytes_total == (132096, 337920)
    assert result.failures([], "5%") == ["rank 0: communication bytes 132096 -> 337920 exceed +5%"]
    assert result.failures([], "200%") == []
    assert result.failures([], "300000") == []
    assert result.failures([], "100kB") != []
    # the other direction is a decrease: never over the threshold
    back = diff_dirs(str(F / "pipeline_2stage_8p" / "rank_0"), str(F / "pipeline_4stage_8p" / "rank_0"), by_rank=True)
    assert back.failures([], "0%") == []
    assert parse_threshold("5%") == ("relative", 0.05)
    assert parse_threshold("2MiB") == ("absolute", 2 * 2**20)


# --- formats and errors

def test_json_format_is_versioned() -> None:
    code, out = run(F / "semi_auto_8p" / "rank_0", EDITED, "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["schema"] == "irtool.diff/2"
    assert list(doc)[:4] == ["schema", "verdict", "failed", "failures"]  # the answer first
    assert doc["verdict"] == "FAIL: rank 0 vs dump: 1 strategy difference(s)"
    assert doc["failed"] is True and doc["identical"] is False and doc["mode"] == "nodes"
    assert doc["fail_on"] == ["comm", "config", "strategy"]
    assert doc["configuration"]["changes"] == [] and doc["logical"] is None
    rank = doc["ranks"][0]
    assert rank["old"]["rank"] == 0 and rank["new"]["rank"] is None
    assert rank["strategy"][0]["field"] == "in_strategy"
    assert set(rank) >= {"comm", "rank_specific", "strategy", "ops", "params", "comm_bytes", "comm_bytes_total"}


def test_markdown_and_text_render() -> None:
    result = diff_dirs(str(F / "semi_auto_8p" / "rank_0"), str(EDITED))
    md = to_markdown(result)
    assert md.startswith("### :x: irtool diff: 1 failing difference(s)")
    assert "| change | stage | op | name | scope | difference |" in md
    assert "in_strategy: (4,1)(1,2) -> (2,1)(1,4)" in md
    assert "FAIL: rank 0 vs dump: 1 strategy difference(s)" in to_text(result)
    assert json.loads(to_json(result))["ranks"][0]["counts"]["strategy"] == 1
    same = diff_dirs(str(F / "mlp_cpu"), str(F / "mlp_cpu_sorted"))
    assert to_markdown(same).startswith("### :white_check_mark: irtool diff: identical")


@pytest.mark.parametrize("extra", [["--fail-on", "bogus"], ["--max-comm-bytes-increase", "lots"],
                                   ["--pass", "no_such_pass"], ["missing"]])
def test_bad_input_exits_2_with_one_line(extra: list[str]) -> None:
    if extra == ["missing"]:
        code, out = run(F / "no_such_scenario", F / "mlp_cpu_sorted")
    else:
        code, out = run(F / "mlp_cpu", F / "mlp_cpu_sorted", *extra)
    assert code == 2
    assert out.strip().startswith("irtool:") and len(out.strip().splitlines()) == 1
    assert "internal error" not in out and "Traceback" not in out


def test_pass_option_picks_another_dump() -> None:
    files = rank_files(str(F / "pipeline_2stage_8p" / "rank_0"), "step_parallel_end")
    assert Path(files[0]).name == "step_parallel_end_0019.ir.xz"
    assert run(F / "mlp_cpu", F / "mlp_cpu_sorted", "--pass", "pipeline_split")[0] == 0


def test_normalise_scope() -> None:
    assert normalise_scope("Default/net-Net/fc1-Dense/MatMul-op12") == "Default/net-Net/fc1-Dense"
    assert normalise_scope("Default/net-Net/fc1-Dense") == "Default/net-Net/fc1-Dense"
    assert normalise_scope("Gradients/Default/Grad_AllGather-op3/ReduceScatter-op0") == \
        "Gradients/Default/Grad_AllGather-op"
    assert normalise_scope(None) == ""


@pytest.mark.parametrize("scenario,a,b", [
    ("gpt_small_dp2mp2pp2", 0, 1), ("gpt_small_dp2mp2pp2", 4, 7), ("layout_8p", 0, 5),
    ("flash_attention_sp_8p", 0, 6), ("auto_parallel_8p", 0, 6), ("opt_parallel_8p", 0, 7), ("moe_8p", 0, 3),
])
def test_ranks_of_one_stage_are_identical_apart_from_rank_specific(scenario: str, a: int, b: int) -> None:
    result = diff_dirs(str(F / scenario / f"rank_{a}"), str(F / scenario / f"rank_{b}"))
    r = result.ranks[0]
    assert r.old_stage == r.new_stage
    assert result.identical and result.failures(["any"]) == []
    assert all(set(e["fields"]) <= RANK_FIELDS for e in rows(r.rank_specific))


def test_ranks_of_different_stages_differ() -> None:
    result = diff_dirs(str(F / "gpt_small_dp2mp2pp2" / "rank_0"), str(F / "gpt_small_dp2mp2pp2" / "rank_4"))
    r = result.ranks[0]
    assert (r.old_stage, r.new_stage) == (0, 1)
    assert not result.identical and result.failures() != []
    assert {e["stage"] for e in rows(r.comm) if e["change"] == "removed"} == {0}
    assert {e["stage"] for e in rows(r.comm) if e["change"] == "added"} == {1}


# --- one node changed in a copy of a real dump: matching finds exactly that node (issue 18, item 1)

P4_RANK2 = F / "pipeline_4stage_8p" / "rank_2" / "19_validate_0078.ir.xz"


def edited_copy(tmp_path: Path, line: int, old: str, new: str) -> Path:
    """A copy of P4_RANK2 (stage 1, 8 micro batches) with `old` replaced by `new` on one line only,
    under `rank_2/` so that both sides are rank 2."""
    lines = lzma.open(P4_RANK2, "rt", encoding="utf-8").read().split("\n")
    assert old in lines[line - 1], lines[line - 1][:200]
    lines[line - 1] = lines[line - 1].replace(old, new)
    out = tmp_path / "rank_2" / "19_validate_0078.ir"
    out.parent.mkdir()
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


def test_one_strategy_changed_is_that_node(tmp_path: Path) -> None:
    # line 398: `%6 = PrimFunc_MatMul(...) {instance name: fc1} primitive_attrs: {in_strategy: ((1, 1), (1, 2))}
    # ... micro: I64(0)`; fc1 and fc2 share the scope `layers-CellList/2-Block` and every micro batch
    # has a copy (grep -c 'instance name: fc1' = 16), so only instance and micro tell %6 apart
    new = edited_copy(tmp_path, 398, "in_strategy: ((1, 1), (1, 2))", "in_strategy: ((2, 1), (1, 1))")
    r = diff_dirs(str(P4_RANK2), str(new)).ranks[0]
    assert r.counts() == {"comm": 0, "strategy": 1, "ops": 0, "params": 0, "rank_specific": 0}
    (e,) = r.strategy
    assert (e.change, e.name, e.field, e.old, e.new) == ("changed", "fc1", "in_strategy", ((1, 1), (1, 2)),
                                                         ((2, 1), (1, 1)))
    assert e.node_scope.endswith("layers-CellList/2-Block/MatMul-op0") and e.micro == 0
    # the node %6 of the top graph (`# Params:` graph, header line 20), nothing else, on both sides
    (uid, mark), = r.new_marks.items()
    assert uid.endswith("TrainStep_construct_3646/%6") and mark == "changed" and r.old_marks == r.new_marks


def test_one_communication_node_changed_is_that_node(tmp_path: Path) -> None:
    # lines 1179-1180: `%54 = AllReduce(%53) {instance name: forward_op_1054...} ... micro: I64(2)`
    # `: (<Tensor[Float32], (8, 64)>) -> (<Tensor[Float32], (8, 64)>)`, one of the 2-Block AllReduces
    # (grep -c '= AllReduce(' = 32); its input and output made Float16 (an AllReduce's bytes are its
    # input's, docs/parallel.md §5): dtype and bytes (8*64*4 -> 8*64*2) change
    new = edited_copy(tmp_path, 1180, "<Tensor[Float32], (8, 64)>", "<Tensor[Float16], (8, 64)>")
    r = diff_dirs(str(P4_RANK2), str(new)).ranks[0]
    assert r.counts() == {"comm": 1, "strategy": 0, "ops": 0, "params": 0, "rank_specific": 0}
    (e,) = r.comm
    assert e.old is not None and e.new is not None
    assert (e.change, e.op, e.fields) == ("changed", "AllReduce", ("dtype", "bytes"))
    assert (e.old.comm.line, e.new.comm.line, e.new.comm.micro) == (1179, 1179, 2)
    assert (e.old.comm.bytes, e.new.comm.bytes) == (2048, 1024)
    assert e.node_scope.endswith("2-Block/AllReduce-op2")


def test_one_parameter_changed_is_that_parameter(tmp_path: Path) -> None:
    # line 25: `%para4_layers.2.w1: <Ref[Tensor[Float32]], (64, 64), ...>`
    new = edited_copy(tmp_path, 25, "(64, 64), ref_key", "(64, 32), ref_key")
    r = diff_dirs(str(P4_RANK2), str(new)).ranks[0]
    assert r.counts()["params"] == 1 and r.counts()["strategy"] == 0
    (e,) = r.params
    assert (e.change, e.name, e.old_shape, e.new_shape) == ("changed", "layers.2.w1", [64, 64], [64, 32])


# --- ranks, stages and passes on one side only

def test_a_rank_missing_on_one_side_is_a_change(tmp_path: Path) -> None:
    # pipeline_2stage_8p: rank 0 on stage 0, rank 4 on stage 1 (manifest.json); new has rank 0 only
    old, new = tmp_path / "old", tmp_path / "new"
    for side, ranks in ((old, (0, 4)), (new, (0,))):
        side.mkdir()
        for r in ranks:
            (side / f"rank_{r}").symlink_to(F / "pipeline_2stage_8p" / f"rank_{r}")
    result = diff_dirs(str(old), str(new))
    assert (result.only_old, result.only_new) == ([4], [])
    assert (result.only_old_stages, result.only_new_stages) == ([1], [])
    assert not result.identical
    assert result.failures(["comm"]) == ["ranks only in old: 4, only in new: none",
                                         "pipeline stages only in old: 1, only in new: none"]
    for fail_on in ("any", "comm"):
        code, out = run(old, new, "--fail-on", fail_on)
        assert code == 1
        assert out.startswith("FAIL: ranks only in old: 4, only in new: none; pipeline stages only in old: 1, only "
                              "in new: none\nranks only in old: 4; only in new: —; pipeline stages only in old: 1; "
                              "only in new: —\n")
    assert run(old, new, "--fail-on", "strategy")[0] == 0
    doc = json.loads(run(old, new, "--format", "json")[1])
    assert (doc["only_old_ranks"], doc["only_old_stages"], doc["identical"]) == ([4], [1], False)
    md = run(old, new, "--format", "markdown")[1]
    assert "**ranks only in old: 4; only in new: —; pipeline stages only in old: 1; only in new: —**" in md


def test_two_passes_of_one_rank_unknown_to_known_is_no_change() -> None:
    # step_parallel_end prints `-> (<null>)` for collectives (grep -c '<null>'), validate the shapes:
    # not a change; the AllReduces of the forward pass match one to one
    rank = F / "pipeline_4stage_8p" / "rank_2"
    result = diff_dirs(str(rank / "step_parallel_end_0019.ir.xz"), str(rank / "19_validate_0078.ir.xz"))
    r = result.ranks[0]
    assert (r.old_pass, r.new_pass) == ("step_parallel_end", "validate")
    assert [e for e in r.comm if e.change == "changed"] == []
    # what remains is what autodiff adds at validate: backward Send/Receive, AllReduce (grep of
    # `Gradients/` scopes) and the _MirrorMicroStepOperator lowered to AllReduce
    assert {(e.change, e.op) for e in r.comm if not e.node_scope.startswith("Gradients/")} == {
        ("removed", "_MirrorMicroStepOperator")}
    code, out = run(rank / "step_parallel_end_0019.ir.xz", rank / "19_validate_0078.ir.xz")
    assert result.config == [] and result.mode == "nodes"  # what a pass cannot show yet is no configuration change
    assert out.splitlines()[1] == "== rank 2 (stage 1, pass step_parallel_end) -> rank 2 (stage 1, pass validate)"
    assert "— -> (8, 64)" not in out


def test_a_pass_dumped_on_one_side_only_is_a_change(tmp_path: Path) -> None:
    # pipeline_2stage_8p/rank_0 holds 6 passes (ls: 00_bootstrap, 11_pipeline_split, 19_validate,
    # merge_send_receive, step_parallel_begin, step_parallel_end); the new rank 0 has its validate file only
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    (old / "rank_0").symlink_to(F / "pipeline_2stage_8p" / "rank_0")
    (new / "rank_0").mkdir(parents=True)
    (new / "rank_0" / "19_validate_0078.ir.xz").symlink_to(F / "pipeline_2stage_8p" / "rank_0" / "19_validate_0078.ir.xz")
    result = diff_dirs(str(old), str(new))
    assert result.only_old_passes == ["bootstrap", "merge_send_receive", "pipeline_split", "step_parallel_begin",
                                      "step_parallel_end"] and result.only_new_passes == []
    assert result.ranks[0].counts() == {"comm": 0, "strategy": 0, "ops": 0, "params": 0, "rank_specific": 0}
    assert not result.identical
    code, out = run(old, new)
    assert code == 1 and out.splitlines()[1] == ("passes only in old: bootstrap, merge_send_receive, pipeline_split, "
                                                 "step_parallel_begin, step_parallel_end; only in new: —")
    assert run(old, new, "--fail-on", "strategy")[0] == 0
