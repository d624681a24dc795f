"""Partial folders in `irtool diff` and `--lenient` in every command (issue 18 item 2)."""
from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from irtool.cli import main
from irtool.selection import Selection
from irtool.view.models import models_for

ROOT = Path(__file__).resolve().parent.parent
PIPE = ROOT / "fixtures" / "mindir" / "pipeline_2stage_8p"
GARBAGE = ROOT / "fixtures" / "errors" / "garbage_attr.ir"
MLP = ROOT / "fixtures" / "mindir" / "mlp_cpu" / "rank_0" / "19_validate_0072.ir"
# `xz -dc rank_5/19_validate_0078.ir.xz | grep -n '^  %39(ValueNode_2048) = MakeTuple('` -> 1028; the
# `(` after MakeTuple is column 34 (two spaces, `%39(ValueNode_2048) = MakeTuple` is 31 characters)
CUT_LINE, CUT_COL = 1028, 34
# fixtures/errors/README.md: the `@@ !! ##` of garbage_attr.ir is on line 72; its first `!` is column 102
GARBAGE_AT = "72:102: expected a value, name, reference or bracket, found '!'"


def _cli(*args: str):
    return CliRunner().invoke(main, [*map(str, args)])


def _truncated_copy(tmp_path: Path) -> tuple[Path, Path, Path]:
    """old: a copy of pipeline_2stage_8p; new: the same with rank 5's validate file cut in the middle of
    line 1028, after `MakeTuple(%6, %1, %3, ` (its bracket never closes)."""
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(PIPE, old)
    shutil.copytree(PIPE, new)
    packed = new / "rank_5" / "19_validate_0078.ir.xz"
    lines = lzma.open(packed, "rt").read().split("\n")
    assert lines[CUT_LINE - 1].startswith("  %39(ValueNode_2048) = MakeTuple(%6, %1, %3, %37,")
    cut = new / "rank_5" / "19_validate_0078.ir"
    cut.write_text("\n".join(lines[:CUT_LINE - 1]) + "\n" + lines[CUT_LINE - 1].split("%37,")[0])
    packed.unlink()
    return old, new, cut


def test_diff_of_a_folder_with_a_truncated_rank_compares_the_others(tmp_path: Path) -> None:
    old, new, cut = _truncated_copy(tmp_path)
    error = f"{cut}:{CUT_LINE}:{CUT_COL}: expected ')' closing the '(' at line {CUT_LINE} column {CUT_COL}, " \
            "found end of file"
    res = _cli("diff", old, new)
    assert res.exit_code == 2, res.output
    assert res.stderr.splitlines() == [f"irtool: {error}"]
    out = res.stdout
    # its own section, with the located error
    assert "Unreadable ranks: 1 (not compared)" in out and f"new   5     {error}" in out
    # the other ranks are still compared: 0-3 on stage 0, 4, 6, 7 on stage 1 (rank 5 in neither group)
    assert "== rank 0 (stage 0) -> rank 0 (stage 0)" in out and "== ranks 1-3: same as rank 0" in out
    assert "== rank 4 (stage 1) -> rank 4 (stage 1)" in out and "== ranks 6, 7: same as rank 4" in out
    assert "identical" not in out
    assert out.rstrip().endswith("no differences in the ranks read; 1 rank not read, not compared "
                                 "(see Unreadable ranks)")


def test_diff_json_lists_unreadable_and_missing_pass_ranks_per_side(tmp_path: Path) -> None:
    old, new, cut = _truncated_copy(tmp_path)
    (old / "rank_6" / "19_validate_0078.ir.xz").unlink()  # old rank 6: step_parallel_end only
    res = _cli("diff", old, new, "--format", "json", "--fail-on", "any")
    assert res.exit_code == 2, res.output
    doc = json.loads(res.stdout)
    assert [(u["side"], u["rank"], u["file"]) for u in doc["unreadable"]] == [
        ("old", 6, None), ("new", 5, str(cut))]
    assert doc["unreadable"][0]["error"] == f"{old}: rank 6 has no dump of pass validate (it has: step_parallel_end)"
    assert doc["unreadable"][1]["error"].startswith(f"{cut}:{CUT_LINE}:{CUT_COL}: ")
    # not read is not "only on one side", and never identical
    assert doc["only_old_ranks"] == [] and doc["only_new_ranks"] == [] and doc["identical"] is False
    assert [r["old"]["rank"] for r in doc["ranks"]] == [0, 1, 2, 3, 4, 7]
    assert len(res.stderr.splitlines()) == 2


def test_lenient_export_skips_the_bad_node_with_a_warning(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    strict = _cli("export", GARBAGE, "-o", out)
    assert strict.exit_code == 2 and strict.stderr.splitlines() == [f"irtool: {GARBAGE}:{GARBAGE_AT}"]
    assert not out.exists()
    lenient = _cli("export", GARBAGE, "-o", out, "--lenient")
    assert lenient.exit_code == 0, lenient.stderr
    assert f"irtool: warning: skipped: {GARBAGE}:{GARBAGE_AT}" in lenient.stderr.splitlines()
    assert out.exists()


def test_lenient_check_reads_the_rank_it_could_not(tmp_path: Path) -> None:
    # rank_0: mlp_cpu's validate file; rank_3: garbage_attr.ir (which imitates it)
    for rank, src in ((0, MLP), (3, GARBAGE)):
        (tmp_path / f"rank_{rank}").mkdir()
        shutil.copy(src, tmp_path / f"rank_{rank}" / "19_validate_0072.ir")
    bad = tmp_path / "rank_3" / "19_validate_0072.ir"
    strict = _cli("check", tmp_path)
    assert strict.exit_code == 2 and strict.stderr.splitlines() == [f"irtool: {bad}:{GARBAGE_AT}"]
    lenient = _cli("check", tmp_path, "--lenient", "--format", "json")
    assert lenient.exit_code == 0, lenient.output
    assert lenient.stderr.splitlines() == [f"irtool: warning: skipped: {bad}:{GARBAGE_AT}"]
    assert json.loads(lenient.stdout)["unreadable"] == []


def test_lenient_diff_of_a_file_with_itself_says_each_skip_once() -> None:
    # both sides read the same file: one bad node, one warning (it was said once per side)
    res = _cli("diff", GARBAGE, GARBAGE, "--lenient")
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == [f"irtool: warning: skipped: {GARBAGE}:{GARBAGE_AT}"]


# --- issue 25 items 6 and 7: unreadable is not missing; partial folders never crash ---------------------------

FIXTURES = ROOT / "fixtures" / "mindir"
VALIDATE = "19_validate_0078.ir.xz"


def _cut_copy(src: Path, dst: Path, rank: int, line: int, before: str) -> Path:
    """A copy of the real folder `src` at `dst` whose rank's validate file is cut on `line` just before
    `before` (a bracket opened on that line never closes); the cut file, written uncompressed."""
    shutil.copytree(src, dst)
    packed = dst / f"rank_{rank}" / VALIDATE
    lines = lzma.open(packed, "rt").read().split("\n")
    assert before in lines[line - 1]
    cut = packed.with_suffix("")  # rank_N/19_validate_0078.ir
    cut.write_text("\n".join(lines[:line - 1]) + "\n" + lines[line - 1].split(before)[0])
    packed.unlink()
    return cut


def _cut_error(cut: Path, line: int, col: int) -> str:
    return f"{cut}:{line}:{col}: expected ')' closing the '(' at line {line} column {col}, found end of file"


# Two folders whose lowest rank of a stage cannot be read, each with a stray dump beside the rank folders
# (a copy of rank 2's validate file: a dump that no rank_N folder holds).
#  p4: pipeline_4stage_8p (ranks 0, 2, 4, 6 on stages 0-3, manifest `stage_of_rank`) with rank 0 cut on line 134,
#      `  %7(▲CNode_3063) = MakeTuple(%5, %6) ...`, after `MakeTuple(%5, `: the `(` is column 30 (two spaces,
#      `%7(▲CNode_3063)` 15 characters, ` = ` 3, `MakeTuple` 9). Stage 0 has no other rank: it is not answered for.
#  p2: pipeline_2stage_8p with rank 4, the lowest of stage 1 (ranks 4-7), cut on line 1028 as test 1 above cuts
#      rank 5 (`xz -dc rank_4/19_validate_0078.ir.xz | sed -n 1028p` starts the same): rank 5 stands for stage 1.
CASES = {
    # name: (fixture, rank cut, line, column, cut before, ranks answered, rank picked per stage)
    "p4": ("pipeline_4stage_8p", 0, 134, 30, "%6) cnode_attrs", [2, 4, 6], {1: 2, 2: 4, 3: 6}),
    "p2": ("pipeline_2stage_8p", 4, CUT_LINE, CUT_COL, "%37,", [0, 1, 2, 3, 5, 6, 7], {0: 0, 1: 5}),
}
# Send/Receive drawn by `render --pipeline` (`grep -cE '= (Send|Receive)\('` on each validate file): p4 ranks 2
# and 4 32 each, rank 6 16; p2 ranks 0 and 5 8 each
DRAWN = {"p4": (3, 80), "p2": (2, 16)}


def _partial(tmp_path: Path, case: str) -> tuple[Path, Path, str, Path]:
    """(folder, its cut file, the located error, the stray dump)."""
    fixture, rank, line, col, before, *_ = CASES[case]
    folder = tmp_path / case
    cut = _cut_copy(FIXTURES / fixture, folder, rank, line, before)
    stray = folder / VALIDATE
    shutil.copy(FIXTURES / fixture / "rank_2" / VALIDATE, stray)
    return folder, cut, _cut_error(cut, line, col), stray


FOLDER_COMMANDS = ["summarize", "check", "diff", "render --pipeline", "render --stage", "export", "view"]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("cmd", FOLDER_COMMANDS)
def test_every_folder_command_answers_for_the_readable_ranks(cmd: str, case: str, tmp_path: Path) -> None:
    folder, cut, error, stray = _partial(tmp_path, case)
    fixture, rank, *_, answered, picked = CASES[case]
    ignored = f"irtool: {folder}: ignored 1 dump file outside the rank_N folders: {stray}"
    out = tmp_path / "out"
    if cmd == "view":  # the models `irtool view` serves, built without a browser (as tests/test_view.py does)
        sel = Selection.of(str(folder), partial=True)
        model = models_for(sel)
        graphs = json.loads(model.graphs_json())["graphs"]
        assert [u.error for u in sel.unreadable] == [error] and sel.ignored == [str(stray)]
        assert f"stage {max(picked)} rank {picked[max(picked)]}: " in graphs[-1]["id"]
        peers = {a["value"] for n in graphs[0]["nodes"] for a in n["attrs"] if a["key"] == "peer"}
        # the peer that could not be read is said so, with its error: it is in the folder
        assert f"peer rank {rank}: unreadable ({error})" in peers
        assert graphs[0]["groupNodeAttributes"][""]["peers unreadable"] == str(rank)
        return
    args = {"summarize": ["summarize", folder, "--format", "json"],
            "check": ["check", folder, "--format", "json", "--jobs", "2"],
            "diff": ["diff", FIXTURES / fixture, folder, "--format", "json"],
            "render --pipeline": ["render", folder, "--pipeline", "-o", f"{out}.svg"],
            "render --stage": ["render", folder, "--stage", "1", "-o", f"{out}.svg"],
            "export": ["export", folder, "-o", f"{out}.json"]}[cmd]
    res = _cli(*args)
    assert "internal error" not in res.output and res.exit_code == 2, res.output
    err = res.stderr.splitlines()
    assert f"irtool: {error}" in err and ignored in err
    if cmd in ("summarize", "check"):
        d = json.loads(res.stdout)
        assert [r["rank"] for r in d["ranks"]] == answered
        assert d["unreadable"] == [{"rank": rank, "file": str(cut), "error": error}]
        assert d["ignored"] == [str(stray)]
        if cmd == "check":  # nothing found in the ranks read, but they are not the folder
            assert d["consistent"] is None and d["complete"] is False
    elif cmd == "diff":
        d = json.loads(res.stdout)
        assert [r["new"]["rank"] for r in d["ranks"]] == answered
        assert [(u["side"], u["rank"], u["error"]) for u in d["unreadable"]] == [("new", rank, error)]
    elif cmd == "render --pipeline":
        stages, events = DRAWN[case]
        which = ", ".join(f"rank {r} (stage {s})" for s, r in sorted(picked.items()))
        assert f"irtool: {folder}: using {which}, the lowest rank of each stage" in err
        assert f"{out}.svg: {stages} stages, {events} Send/Receive" in err
    elif cmd == "render --stage":
        assert f"irtool: {folder}: using rank {picked[1]} (stage 1), the lowest rank of its stage" in err
        assert (tmp_path / "out.svg").exists()
    else:
        which = ", ".join(f"rank {r} (stage {s})" for s, r in sorted(picked.items()))
        assert f"irtool: {folder}: using {which}, the lowest rank of each stage" in err
        assert (tmp_path / "out.json").exists()


@pytest.mark.parametrize("cmd", ["summarize", "render", "export"])
def test_a_stage_whose_only_rank_is_unreadable_names_the_rank_not_read(cmd: str, tmp_path: Path) -> None:
    folder, _, error, stray = _partial(tmp_path, "p4")
    out = tmp_path / ("x.svg" if cmd == "render" else "x.json")
    res = _cli(cmd, folder, "--stage", "0", *([] if cmd == "summarize" else ["-o", out]))
    assert res.exit_code == 2 and res.stdout == ""
    # the located error first, then why there is nothing to answer for: stage 0 may be rank 0's
    assert res.stderr.splitlines() == [
        f"irtool: {folder}: ignored 1 dump file outside the rank_N folders: {stray}", f"irtool: {error}",
        f"irtool: {folder}: no rank read is on stage 0 (the ranks read are on stages 1, 2, 3; not read: rank 0); "
        "try another --stage"]
    assert not out.exists()


def test_check_says_unreadable_where_the_rank_is_there(tmp_path: Path) -> None:
    _, new, cut = _truncated_copy(tmp_path)
    error = _cut_error(cut, CUT_LINE, CUT_COL)
    res = _cli("check", new, "--format", "json")
    assert res.exit_code == 2 and res.stderr.splitlines() == [f"irtool: {error}"]
    d = json.loads(res.stdout)
    assert d["schema"] == "irtool.check/2" and d["consistent"] is None and d["complete"] is False
    assert d["unreadable"] == [{"rank": 5, "file": str(cut), "error": error}]
    # rank 1 sends 4 and receives 4 with rank 5 (`grep -c '= Send('` on rank_1: 4, `dest_rank: I64(5)`); the groups
    # rank 5 is in, as ranks 4 and 7 name them (`group_rank_ids` of their AllReduce/AllGather/ReduceScatter)
    assert sorted(u["text"] for u in d["unchecked"]) == sorted([
        f"rank 1 sends to rank 5, which is unreadable ({error}) (4 Send)",
        f"rank 1 receives from rank 5, which is unreadable ({error}) (4 Receive)",
        f"group 2-16057586909177180503 (ranks 5, 7): rank 5 is unreadable ({error}), its collectives are not compared",
        f"group 2-6541264347459079684 (ranks 4, 5): rank 5 is unreadable ({error}), its collectives are not compared",
        f"group 4-15700679239691767905 (ranks 4-7): rank 5 is unreadable ({error}), its collectives are not compared"])
    text = _cli("check", new)
    assert text.exit_code == 2 and "not in the folder" not in text.stdout
    assert text.stdout.splitlines()[0] == (f"irtool check {new}: 7 ranks (pass validate): no findings in the ranks "
                                           "read, 5 not checked; 1 rank not read (below): the folder was not fully checked")


def test_check_tells_an_unreadable_rank_from_an_absent_one(tmp_path: Path) -> None:
    # p4 with rank 0 unreadable and rank 4 (stage 2) removed: rank 2 sends 8 to and receives 8 from each of
    # ranks 0 and 4 (the `dest_rank` / `src_rank` in the primitive_attrs of rank_2's Send / Receive lines)
    folder, _, error, _ = _partial(tmp_path, "p4")
    shutil.rmtree(folder / "rank_4")
    res = _cli("check", folder, "--format", "json")
    notes = [u["text"] for u in json.loads(res.stdout)["unchecked"]]
    assert f"rank 2 sends to rank 0, which is unreadable ({error}) (8 Send)" in notes
    assert f"rank 2 receives from rank 0, which is unreadable ({error}) (8 Receive)" in notes
    assert "rank 2 sends to rank 4, which is not in the folder (8 Send)" in notes
    assert "rank 6 receives from rank 4, which is not in the folder (8 Receive)" in notes


def test_folder_text_prints_every_warning_its_headline_counts(tmp_path: Path) -> None:
    # rank 5 of pipeline_2stage_8p with `checkpoint: Bool(1)` of line 1077 (`%47(▲CNode_1911) = MakeTuple(%45, %46)
    # cnode_attrs: {checkpoint: Bool(1)}`) made `checkpoint: @@ !! ##`, as fixtures/errors/garbage_attr.ir does:
    # the first `!` is column 71 (2 spaces, `%47(▲CNode_1911)` 16, ` = ` 3, `MakeTuple(%45, %46)` 19,
    # ` cnode_attrs: {` 15, `checkpoint: ` 12, `@@ ` 3). --lenient skips that node: its header's
    # `Total number of cnodes: 815` (line 69) is one more than read.
    folder = tmp_path / "p2"
    shutil.copytree(PIPE, folder)
    packed = folder / "rank_5" / VALIDATE
    lines = lzma.open(packed, "rt").read().split("\n")
    assert lines[1076].endswith("cnode_attrs: {checkpoint: Bool(1)}") and lines[68] == "Total number of cnodes: 815"
    lines[1076] = lines[1076].replace("checkpoint: Bool(1)", "checkpoint: @@ !! ##")
    bad = packed.with_suffix("")
    bad.write_text("\n".join(lines))
    packed.unlink()
    skip = f"skipped: {bad}:1077:71: expected a value, name, reference or bracket, found '!'"
    res = _cli("summarize", folder, "--lenient")
    assert res.exit_code == 0, res.output
    out = res.stdout.splitlines()
    assert out[5].startswith("Unknown or unpaired: ") and "2 warnings below" in out[5]  # the job line is second
    table = out[out.index("Warnings: 2") + 3:]
    assert [row.split(None, 2) for row in table[:2]] == [
        ["5", f"{bad}:1077", skip], ["5", str(bad), "header declares 815 cnodes, parsed 814"]]


def test_a_rank_unreadable_in_a_folder_out_of_rank_order(tmp_path: Path) -> None:
    # rank_0 holds pipeline_2stage_8p's rank 4 (stage 1), rank_2 its rank 0 (stage 0): not MindSpore's order, so
    # every rank is read; rank_1 (fixtures/errors/garbage_attr.ir) fails while they are
    for rank, src in ((0, PIPE / "rank_4" / VALIDATE), (1, GARBAGE), (2, PIPE / "rank_0" / VALIDATE)):
        (tmp_path / f"rank_{rank}").mkdir()
        shutil.copy(src, tmp_path / f"rank_{rank}" / (VALIDATE if rank != 1 else "19_validate_0078.ir"))
    sel = Selection.of(str(tmp_path), partial=True)
    assert [(p.rank, p.stage) for p in sel.per_stage()] == [(2, 0), (0, 1)]
    assert [u.error for u in sel.unreadable] == [f"{tmp_path}/rank_1/19_validate_0078.ir:{GARBAGE_AT}"]


def test_summarize_names_the_ranks_not_in_the_folder_apart_from_the_unreadable(tmp_path: Path) -> None:
    # pipeline_2stage_8p without rank_2 and rank_3 (world 8: rank 0's Send on `nccl_world_group` with
    # `group_rank_ids: (0, 1, ..., 7)`), rank 5 cut in the middle of a line (unreadable, in the folder)
    _, new, _ = _truncated_copy(tmp_path)
    for r in (2, 3):
        shutil.rmtree(new / f"rank_{r}")
    res = _cli("summarize", new)
    assert res.exit_code == 2
    head = res.stdout.splitlines()[0]
    assert head.startswith("5 ranks, 2 pipeline stages (stage 0: ranks 0, 1; stage 1: ranks 4, 6, 7); "
                           "ranks 2, 3 of world 8 not in the folder; 1 rank not read (below)"), head


def test_a_rank_of_unknown_stage_is_said_unknown_never_stage_0() -> None:
    """step_parallel_begin is only dumped by ranks 0 and 4 of pipeline_2stage_8p, before the parallel pass
    gives its Send/Receive a stage: rank 4's first Receive (`xz -dc rank_4/step_parallel_begin_0018.ir.xz`
    line 2114, `src_rank: I64(0)`) receives from stage 0, so rank 4 is not on stage 0, whatever else it is.
    The job files neither rank under a stage: it says them of unknown stage, in text, JSON and Markdown."""
    args = (PIPE, "--pass", "step_parallel_begin")
    doc = json.loads(_cli("summarize", *args, "--cost", "--format", "json").stdout)
    job = doc["job"]
    assert job["stage_ranks"] == {} and job["stages_read"] == [] and job["stage_unknown"] == [0, 4]
    # nor measured as stage 0: no cost row, no peak on the row of the stage unknown
    assert [(s["stage"], s["ranks"], s["peak_rank"]) for s in doc["stages"]] == [(None, [0, 4], None)]
    assert doc["cost"]["stages"] == [] and doc["cost"]["sentence"] == "no rank of a known stage read"
    assert job["pipeline_stages"]["value"] is None and "stages 0" not in job["pipeline_stages"]["unknown"]
    for fmt in ("text", "markdown"):
        out = _cli("summarize", *args, "--format", fmt).stdout
        assert "ranks 0, 4 of unknown stage" in out and "stage unknown" in out, fmt
        assert "stage 0" not in out.lower() and "no pipeline stage" not in out.lower(), fmt


def test_no_stage_selects_a_rank_of_unknown_stage() -> None:
    """`--stage` never selects a rank of unknown stage, nor does a rank of unknown stage begin a stage: ranks 0 and 4,
    the only ones that dump step_parallel_begin, print their Send/Receive before the parallel pass gives them a
    stage (rank 4's 4 Receives, lines 2114, 2836, 3576 and 4303, carry `src_rank: I64(0)` and no `stage`). Read as
    stage 0, `--stage 0` would select both; rank 4 is on stage 1 (its step_parallel_end says so)."""
    res = _cli("summarize", PIPE, "--pass", "step_parallel_begin", "--stage", "0")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.splitlines()[-1] == (f"irtool: {PIPE}: no rank read is on stage 0 (the ranks read are of unknown "
                                           "stage; not read: ranks 1-3, 5-7); try another --stage")
    begin = PIPE / "rank_4" / "step_parallel_begin_0018.ir.xz"
    res = _cli("render", begin, "--stage", "0", "-o", "unused.svg")
    assert res.exit_code == 2 and res.stderr.splitlines() == [
        f"irtool: {begin}: no rank is on stage 0 (the ranks are of unknown stage); try another --stage"]
    # the folder's lowest rank of a stage: none is known, so the lowest rank read, said of unknown stage
    sel = Selection.of(str(PIPE), pass_name_="step_parallel_begin", partial=True)
    assert [(p.rank, p.stage) for p in sel.per_stage()] == [(0, None)]
    assert sel.notes == [f"{PIPE}: using rank 0 (stage unknown), the lowest rank read; no rank's stage is known"]
    # its cost: of no stage, and no micro batches in flight from 1F1B on a stage it is not known to be on
    cost = json.loads(_cli("summarize", begin, "--cost", "--format", "json").stdout)["cost"]
    assert cost["stage"] is None and cost["memory"]["micro_batches_in_flight"] is None
    assert cost["memory"]["in_flight_how"] == "unknown: this pass does not fix the order and the rank's stage is unknown"
    # nor planned as stage 0: its place in the pipeline scales everything the plan works out
    res = _cli("plan", PIPE, "--pass", "step_parallel_begin")
    assert res.exit_code == 2 and res.stderr.splitlines()[-1] == (
        f"irtool: {PIPE}/rank_0/step_parallel_begin_0018.ir.xz: cannot plan: the rank's pipeline stage is unknown (its "
        "Send/Receive do not say it); plan from a pass that decides it (step_parallel_end or later)")


def test_cost_of_a_folder_whose_lowest_rank_of_a_stage_is_unreadable(tmp_path: Path) -> None:
    """p2: rank 4, the lowest of stage 1, cut; rank 5 (ranks 4-7 share stage 1's collective groups: `group_rank_ids`
    (4, 5, 6, 7) of its AllReduce) does not begin its stage by the groups it shares with rank 4, so its stage is
    measured on it afterwards. Its peak is said alike in the cost's row, the stage's row and rank 5's own row (they
    said `null` where the cost's row had it), and stage 1 is not said absent."""
    folder, *_ = _partial(tmp_path, "p2")
    res = _cli("summarize", folder, "--cost", "--format", "json")
    assert res.exit_code == 2, res.output
    doc = json.loads(res.stdout)
    cost = doc["cost"]
    assert [(s["stage"], s["rank"]) for s in cost["stages"]] == [(0, 0), (1, 5)] and cost["stages_absent"] == []
    peak = cost["stages"][1]["peak_bytes"]
    assert peak and doc["stages"][1]["ranks"] == [5, 6, 7]
    assert (doc["stages"][1]["peak_rank"], doc["stages"][1]["peak_bytes"]) == (5, peak)
    assert [r["peak_bytes"] for r in doc["ranks"] if r["rank"] in (5, 6, 7)] == [peak, None, None]


def test_a_lone_middle_rank_is_one_stage_read_of_an_unknown_number(tmp_path: Path) -> None:
    """pipeline_4stage_8p's rank 2 alone, at step_parallel_end: its Receives print `src_rank: I64(0)` and its Sends
    `dest_rank: I64(2)` in their primal attributes (stage 0 before it, stage 2 after: it is stage 1), its Sends go to
    global rank 4 (`dest_rank: I64(4)`), no group names the world's ranks: a middle stage of a pipeline whose stage
    count this rank does not tell. One stage read is not "one stage": nothing to balance, said so, no advice."""
    (tmp_path / "rank_2").mkdir()
    shutil.copy(FIXTURES / "pipeline_4stage_8p" / "rank_2" / "step_parallel_end_0019.ir.xz", tmp_path / "rank_2")
    res = _cli("summarize", tmp_path, "--pass", "step_parallel_end", "--cost", "--format", "json")
    assert res.exit_code == 0, res.output
    cost = json.loads(res.stdout)["cost"]
    assert [(s["stage"], s["rank"]) for s in cost["stages"]] == [(1, 2)] and cost["stage_count"]["value"] is None
    assert cost["sentence"] == "one stage read of an unknown number"
    assert cost["advice"]["cannot"] == "1 stage read of an unknown number"
    text = _cli("summarize", tmp_path, "--pass", "step_parallel_end", "--cost").stdout.splitlines()
    assert text[0] == "Balance: one stage read of an unknown number" and "one stage: nothing" not in "\n".join(text)
