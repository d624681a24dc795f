"""Selections that match nothing, outputs that cannot be written and bad ranks in folders (issue
10.10): one line on stderr naming what exists, exit 2. Through the CLI in a subprocess.

pipeline_2stage_8p (manifest.json: pipeline_stages 2, device_num 8): ranks 0-3 are stage 0, ranks
4-7 stage 1; the folders here hold rank_0 and rank_4 only, to keep the tests quick."""
from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
from hostile import MLP, ROOT, raw_bytes, run_cli

from irtool.errors import DumpError, InputError, OutputError, SelectionError

MINDIR = ROOT / "fixtures" / "mindir"
PIPE = MINDIR / "pipeline_2stage_8p"
VALIDATE = "19_validate_0078.ir.xz"


def _one_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def two_stages(tmp_path_factory) -> Path:
    """rank_0 (stage 0) and rank_4 (stage 1) of pipeline_2stage_8p."""
    root = tmp_path_factory.mktemp("pipe")
    for rank in (0, 4):
        (root / f"rank_{rank}").mkdir()
        shutil.copy(PIPE / f"rank_{rank}" / VALIDATE, root / f"rank_{rank}" / VALIDATE)
    return root


def test_summarize_folder_unknown_stage(two_stages: Path) -> None:
    line = _one_line(run_cli("summarize", str(two_stages), "--stage", "9"))
    assert line == f"irtool: {two_stages}: no rank is on stage 9 (stages 0, 1); try another --stage"


def test_summarize_file_of_another_stage() -> None:
    path = str(PIPE / "rank_4" / VALIDATE)
    line = _one_line(run_cli("summarize", path, "--stage", "0"))
    assert line == f"irtool: {path}: no rank is on stage 0 (stage 1); try another --stage"
    assert run_cli("summarize", path, "--stage", "1").returncode == 0


def test_summarize_file_without_pipeline_is_stage_0() -> None:
    # mlp_cpu is one CPU device: no pipeline, all of it is stage 0
    assert run_cli("summarize", str(MLP), "--stage", "0").returncode == 0
    assert _one_line(run_cli("summarize", str(MLP), "--stage", "2")).endswith("no rank is on stage 2 (stage 0); "
                                                                           "try another --stage")


def test_render_unknown_stage(two_stages: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "x.svg")
    line = _one_line(run_cli("render", str(two_stages), "--stage", "9", "-o", out))
    assert line == f"irtool: {two_stages}: no rank is on stage 9 (stages 0, 1); try another --stage"
    rank0 = str(PIPE / "rank_0" / VALIDATE)
    line = _one_line(run_cli("render", rank0, "--stage", "1", "-o", out))
    assert line == f"irtool: {rank0}: this rank is on stage 0, not stage 1; try --stage 0, or a folder of ranks"
    assert not Path(out).exists()


def test_diff_unknown_stage_compares_nothing_and_fails(two_stages: Path) -> None:
    line = _one_line(run_cli("diff", str(two_stages), str(two_stages), "--stage", "9"))
    assert line == f"irtool: {two_stages} and {two_stages}: no rank is on stage 9 (stages 0, 1); try another --stage"
    assert run_cli("diff", str(two_stages), str(two_stages), "--stage", "1").returncode == 0


def test_render_scope_that_matches_nothing_names_the_closest(tmp_path: Path) -> None:
    # mlp_cpu validate scopes: `# Fullname with scope: (Default/network-WithLossCell/_backbone-MLP/fc1-Dense/...)`,
    # fc2-Dense and fc3-Dense likewise; there is no fc9-Dense
    base = "Default/network-WithLossCell/_backbone-MLP/"
    line = _one_line(run_cli("render", str(MLP), "--scope", base + "fc9-Dense", "-o", str(tmp_path / "x.svg")))
    assert line.startswith(f"irtool: {MLP}: no node is under the scope {base}fc9-Dense; closest: ")
    assert {base + f"fc{i}-Dense" for i in (1, 2, 3)} <= set(line.split("; closest: ")[1].split(", "))


def test_output_in_a_missing_folder(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "x.svg"
    line = _one_line(run_cli("render", str(MLP), "-o", str(out)))
    assert line == f"irtool: {out}: the folder {out.parent} does not exist"


def test_dump_error_survives_pickling() -> None:
    err = DumpError("rank_3/19_validate_0078.ir", 12, 5, "']'", "end of line")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is DumpError and str(back) == str(err) and (back.line, back.col) == (12, 5)
    for other in (InputError("x: no such file or folder"), SelectionError("no rank is on stage 9"), OutputError("o")):
        again = pickle.loads(pickle.dumps(other))
        assert type(again) is type(other) and str(again) == str(other)


def _folder_with_a_broken_rank(tmp_path: Path) -> Path:
    """rank_0: mlp_cpu's real validate file; rank_3: fixtures/errors/garbage_attr.ir (its `!` at 72:102)."""
    for rank, src in ((0, MLP), (3, ROOT / "fixtures" / "errors" / "garbage_attr.ir")):
        (tmp_path / f"rank_{rank}").mkdir()
        shutil.copy(src, tmp_path / f"rank_{rank}" / "19_validate_0072.ir")
    return tmp_path


def test_one_bad_rank_gives_its_located_error(tmp_path: Path) -> None:
    folder = _folder_with_a_broken_rank(tmp_path)
    line = _one_line(run_cli("summarize", str(folder), "--jobs", "2"))  # two worker processes
    assert line == (f"irtool: {folder}/rank_3/19_validate_0072.ir:72:102: expected a value, name, reference or "
                    "bracket, found '!'")


def test_lenient_folder_reports_the_skipped_node_per_rank(tmp_path: Path) -> None:
    folder = _folder_with_a_broken_rank(tmp_path)
    proc = run_cli("summarize", str(folder), "--jobs", "2", "--lenient", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    ranks = {r["rank"]: r for r in json.loads(proc.stdout)["ranks"]}
    assert ranks[0]["warnings"] == []
    assert ranks[3]["warnings"][0]["line"] == 72 and "found '!'" in ranks[3]["warnings"][0]["message"]


def test_check_in_a_folder_runs_in_each_rank(tmp_path: Path) -> None:
    lines = raw_bytes(MLP).split(b"\n")
    # mlp_cpu validate line 60 (the first node, %0) ends `cnode_attrs: {checkpoint: Bool(1)} ...`; two values for
    # one key are balanced and plain text, so only the deep check reads (and reports) them
    i = next(k for k, t in enumerate(lines) if t.startswith(b"  %0("))
    assert b"{checkpoint: Bool(1)}" in lines[i]
    lines[i] = lines[i].replace(b"{checkpoint: Bool(1)}", b"{checkpoint: Bool(1) Bool(1)}")
    (tmp_path / "rank_0").mkdir()
    (tmp_path / "rank_0" / "19_validate_0072.ir").write_bytes(b"\n".join(lines))
    plain = json.loads(run_cli("summarize", str(tmp_path), "--format", "json").stdout)
    deep = json.loads(run_cli("summarize", str(tmp_path), "--check", "--format", "json").stdout)
    assert not any(w["message"].startswith("attributes kept as raw text") for w in plain["ranks"][0]["warnings"])
    found = [w for w in deep["ranks"][0]["warnings"] if w["message"].startswith("attributes kept as raw text")]
    assert [w["line"] for w in found] == [i + 1]
