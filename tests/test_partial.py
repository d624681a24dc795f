"""Partial folders in `irtool diff` and `--lenient` in every command (issue 18 item 2)."""
from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

from click.testing import CliRunner

from irtool.cli import main

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
