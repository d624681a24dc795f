"""Selections that match nothing, outputs that cannot be written and bad ranks in folders: one line
on stderr naming what exists, exit 2. The table of docs/selection.md is walked through the CLI for
every command that accepts each option (click's CliRunner, stderr apart), and the rules it states
(no pipeline is stage 0, which rank a folder command used) likewise.

pipeline_2stage_8p (manifest.json: pipeline_stages 2, device_num 8): ranks 0-3 are stage 0, ranks
4-7 stage 1; the folders here hold rank_0 and rank_4 only, to keep the tests quick. semi_auto_8p and
mlp_cpu have no pipeline (no Send/Receive: `xzcat .../19_validate_0078.ir.xz | grep -c '= Send('` is 0)."""
from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner
from hostile import MLP, ROOT, raw_bytes, run_cli

import irtool
from irtool.cli import main
from irtool.errors import DumpError, InputError, OutputError, SelectionError
from irtool.ir import pass_name
from irtool.selection import Policy, Selection

MINDIR = ROOT / "fixtures" / "mindir"
PIPE = MINDIR / "pipeline_2stage_8p"
SEMI = MINDIR / "semi_auto_8p"
VALIDATE = "19_validate_0078.ir.xz"
PASS_FILES = (VALIDATE, "step_parallel_begin_0018.ir.xz", "step_parallel_end_0019.ir.xz")
NOT_A_DUMP = ROOT / "fixtures" / "errors" / "not_a_dump.ir"


def _one_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _cli(args: list[str]) -> str:
    """Run the CLI in this process; exit 2 and exactly one line on stderr, no output: that line."""
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, (args, res.exit_code, res.stderr[-2000:], res.exception)
    assert res.stdout == "" and "Traceback" not in res.stderr and "internal error" not in res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, (args, res.stderr)
    return lines[0]


@pytest.fixture(scope="module")
def two_stages(tmp_path_factory) -> Path:
    """rank_0 (stage 0) and rank_4 (stage 1) of pipeline_2stage_8p, passes validate, step_parallel_begin/end."""
    root = tmp_path_factory.mktemp("pipe")
    for rank in (0, 4):
        (root / f"rank_{rank}").mkdir()
        for name in PASS_FILES:
            shutil.copy(PIPE / f"rank_{rank}" / name, root / f"rank_{rank}" / name)
    return root


@pytest.fixture(scope="module")
def unparsable(tmp_path_factory) -> Path:
    """Two ranks whose every file is fixtures/errors/not_a_dump.ir under a real pass name: a selection
    error decided from file names must come before any of them is parsed (parsing one is a DumpError)."""
    root = tmp_path_factory.mktemp("names")
    for rank in (0, 4):
        (root / f"rank_{rank}").mkdir()
        for name in PASS_FILES:
            shutil.copy(NOT_A_DUMP, root / f"rank_{rank}" / name.replace(".ir.xz", ".ir"))
    return root


@pytest.fixture(scope="module")
def missing_rank(tmp_path_factory) -> Path:
    """rank_0: pipeline_2stage_8p rank 0's validate; rank_3: step_parallel_end only, and not a dump."""
    root = tmp_path_factory.mktemp("missing")
    (root / "rank_0").mkdir()
    (root / "rank_3").mkdir()
    shutil.copy(PIPE / "rank_0" / VALIDATE, root / "rank_0" / VALIDATE)
    shutil.copy(NOT_A_DUMP, root / "rank_3" / "step_parallel_end_0019.ir")
    return root


# How each command is called on an input, with the selection options; `out` is a path to write.
Command = Callable[[str, list[str], str], list[str]]
COMMANDS: dict[str, Command] = {
    "summarize": lambda p, opts, out: ["summarize", p, *opts],
    "render": lambda p, opts, out: ["render", p, "-o", str(Path(out).with_suffix(".svg")), *opts],
    "diff": lambda p, opts, out: ["diff", p, p, *opts],
    "check": lambda p, opts, out: ["check", p, *opts],
    "view": lambda p, opts, out: ["view", p, "--no-browser", *opts],
    "export": lambda p, opts, out: ["export", p, "-o", out, *opts],
}
STAGE_COMMANDS = ["summarize", "render", "diff", "view", "export"]  # docs/selection.md: `check` has no --stage
FOLDER_COMMANDS = list(COMMANDS)
# answer for the readable ranks of a folder (issue 18); summarize and check also list them in a section
PARTIAL_COMMANDS = ["summarize", "check", "render", "view", "export", "diff"]
REPORT_COMMANDS = ["summarize", "check"]


def _where(cmd: str, path: str) -> str:
    return f"{path} and {path}" if cmd == "diff" else path


@pytest.mark.parametrize("cmd", STAGE_COMMANDS)
def test_stage_not_on_any_rank_folder(cmd: str, two_stages: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "x.json")
    line = _cli(COMMANDS[cmd](str(two_stages), ["--stage", "9"], out))
    assert line == f"irtool: {_where(cmd, str(two_stages))}: no rank is on stage 9 (stages 0, 1); try another --stage"
    assert not Path(out).exists()


@pytest.mark.parametrize("cmd", STAGE_COMMANDS)
def test_stage_not_on_the_file(cmd: str, tmp_path: Path) -> None:
    rank4 = str(PIPE / "rank_4" / VALIDATE)
    line = _cli(COMMANDS[cmd](rank4, ["--stage", "0"], str(tmp_path / "x.json")))
    assert line == f"irtool: {_where(cmd, rank4)}: no rank is on stage 0 (stage 1); try another --stage"


@pytest.mark.parametrize("cmd", STAGE_COMMANDS)
def test_no_pipeline_is_stage_0_only(cmd: str, tmp_path: Path) -> None:
    for path in (str(SEMI), str(MLP)):
        line = _cli(COMMANDS[cmd](path, ["--stage", "1"], str(tmp_path / "x.json")))
        assert line == f"irtool: {_where(cmd, path)}: no rank is on stage 1 (stage 0); try another --stage"


@pytest.mark.parametrize("cmd", [c for c in STAGE_COMMANDS if c != "view"])  # view would serve
def test_no_pipeline_stage_0_selects_all_of_it(cmd: str, tmp_path: Path) -> None:
    args = COMMANDS[cmd](str(SEMI), ["--stage", "0"], str(tmp_path / "x.svg"))
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.stderr
    if cmd == "summarize":  # both ranks of the folder (rank_0, rank_5), the stage asked for
        d = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)
        assert [r["rank"] for r in d["ranks"]] == [0, 5] and d["stage"] == 0
    if cmd == "diff":
        d = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)
        assert [r["old"]["rank"] for r in d["ranks"]] == [0, 5]


@pytest.mark.parametrize("cmd", FOLDER_COMMANDS)
def test_unknown_pass_lists_the_passes(cmd: str, unparsable: Path, tmp_path: Path) -> None:
    line = _cli(COMMANDS[cmd](str(unparsable), ["--pass", "nosuchpass"], str(tmp_path / "x.json")))
    assert line == (f"irtool: {unparsable}: no pass matches --pass nosuchpass; passes here: step_parallel_begin, "
                    "step_parallel_end, validate")


@pytest.mark.parametrize("cmd", FOLDER_COMMANDS)
def test_ambiguous_pass_lists_the_candidates(cmd: str, unparsable: Path, tmp_path: Path) -> None:
    line = _cli(COMMANDS[cmd](str(unparsable), ["--pass", "parallel"], str(tmp_path / "x.json")))
    assert line == (f"irtool: {unparsable}: --pass parallel matches 2 passes: step_parallel_begin, step_parallel_end; "
                    "give one of them")


@pytest.mark.parametrize("cmd", FOLDER_COMMANDS)
def test_rank_without_the_pass(cmd: str, missing_rank: Path, tmp_path: Path) -> None:
    args = COMMANDS[cmd](str(missing_rank), [], str(tmp_path / "x.json"))
    want = f"irtool: {missing_rank}: rank 3 has no dump of pass validate (it has: step_parallel_end)"
    if cmd not in PARTIAL_COMMANDS:
        assert _cli(args) == want
        return
    if cmd == "view":  # it serves rank 0: read stderr up to the server's address, then stop it
        lines = _view_stderr(args)
        assert want in lines and lines[-1].startswith("irtool: Model Explorer at "), lines
        return
    res = CliRunner().invoke(main, args)  # rank 0 is answered for, rank 3 listed: still exit 2
    assert res.exit_code == 2 and want in res.stderr.splitlines(), res.stderr
    if cmd == "diff":  # the folder on both sides: its rank 3 listed per side in the report, said once on stderr
        assert res.stderr.splitlines() == [want]
        assert "Unreadable ranks: 2 (not compared)" in res.stdout and "== rank 0 (stage 0)" in res.stdout
    elif cmd in REPORT_COMMANDS:
        assert res.stderr.splitlines() == [want]
        assert "Unreadable ranks: 1" in res.stdout and "1 rank not read (below)" in res.stdout.splitlines()[0]
    else:
        assert Path(args[3]).exists()  # `-o OUT`: drawn / written from rank 0


def _view_stderr(args: list[str]) -> list[str]:
    """stderr of `irtool view ...` until it serves (a free port), then the server is stopped."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    proc = subprocess.Popen([sys.executable, "-m", "irtool.cli", *args, "--port", port], cwd=ROOT, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines: list[str] = []
    try:
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.append(line.rstrip("\n"))
            if "Model Explorer at " in line:
                break
    finally:
        proc.kill()
        proc.wait(timeout=30)
    return lines


@pytest.mark.parametrize("cmd", FOLDER_COMMANDS)
def test_folder_without_dumps(cmd: str, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    line = _cli(COMMANDS[cmd](str(tmp_path / "empty"), [], str(tmp_path / "x.json")))
    assert line == f"irtool: {tmp_path / 'empty'}: no .ir dump here and no rank_N folder holding one"


@pytest.mark.parametrize("cmd", STAGE_COMMANDS)
def test_a_file_is_not_another_pass(cmd: str, tmp_path: Path) -> None:
    rank4 = str(PIPE / "rank_4" / VALIDATE)
    line = _cli(COMMANDS[cmd](rank4, ["--pass", "step_parallel_end"], str(tmp_path / "x.json")))
    assert line == f"irtool: {rank4}: no pass matches --pass step_parallel_end; passes here: validate"


def _partial_folder(root: Path) -> Path:
    """rank_0, rank_4: pipeline_2stage_8p's validate; rank_1: fixtures/errors/garbage_attr.ir (its `!` at
    72:102); rank_5: step_parallel_end only."""
    for rank in (0, 1, 4, 5):
        (root / f"rank_{rank}").mkdir(parents=True)
    for rank in (0, 4):
        shutil.copy(PIPE / f"rank_{rank}" / VALIDATE, root / f"rank_{rank}" / VALIDATE)
    shutil.copy(ROOT / "fixtures" / "errors" / "garbage_attr.ir", root / "rank_1" / "19_validate_0078.ir")
    shutil.copy(PIPE / "rank_5" / "step_parallel_end_0019.ir.xz", root / "rank_5")
    return root


def test_partial_folder_export_shows_the_stages_of_the_readable_ranks(tmp_path: Path) -> None:
    folder = _partial_folder(tmp_path / "f")
    res = CliRunner().invoke(main, ["export", str(folder), "-o", str(tmp_path / "x.json"), "--no-node-data"])
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        f"irtool: {folder}: using rank 0 (stage 0), rank 4 (stage 1), the lowest rank of each stage",
        f"irtool: wrote {tmp_path / 'x.json'} (4 graphs)",  # two stages, the pipeline and the execution order
        f"irtool: {folder}/rank_1/19_validate_0078.ir:72:102: expected a value, name, reference or bracket, found '!'",
        f"irtool: {folder}: rank 5 has no dump of pass validate (it has: step_parallel_end)"]


@pytest.mark.parametrize("cmd", REPORT_COMMANDS)
def test_partial_folder_answers_for_the_readable_ranks(cmd: str, tmp_path: Path) -> None:
    _partial_folder(tmp_path)
    res = CliRunner().invoke(main, [cmd, str(tmp_path), "--format", "json", "--jobs", "2"])
    assert res.exit_code == 2
    bad = f"{tmp_path}/rank_1/19_validate_0078.ir:72:102: expected a value, name, reference or bracket, found '!'"
    missing = f"{tmp_path}: rank 5 has no dump of pass validate (it has: step_parallel_end)"
    assert res.stderr.splitlines() == [f"irtool: {bad}", f"irtool: {missing}"]
    d = json.loads(res.stdout)
    assert [r["rank"] for r in d["ranks"]] == [0, 4]
    assert d["unreadable"] == [{"rank": 1, "file": f"{tmp_path}/rank_1/19_validate_0078.ir", "error": bad},
                               {"rank": 5, "file": None, "error": missing}]


def test_stages_out_of_rank_order_are_read_rank_by_rank(tmp_path: Path) -> None:
    # rank_0 holds pipeline_2stage_8p's rank 4 (stage 1), rank_1 its rank 0 (stage 0): not MindSpore's order
    for rank, real in ((0, 4), (1, 0)):
        (tmp_path / f"rank_{rank}").mkdir()
        shutil.copy(PIPE / f"rank_{real}" / VALIDATE, tmp_path / f"rank_{rank}" / VALIDATE)
    picked = Selection.of(str(tmp_path)).per_stage()
    assert [(p.rank, p.stage) for p in picked] == [(1, 0), (0, 1)]


def test_a_part_of_one_pass_name_selects_it(two_stages: Path) -> None:
    # `--pass end` is only step_parallel_end: `ls rank_0` has validate, step_parallel_begin, step_parallel_end
    sel = Selection.of(str(two_stages), pass_name_="end")
    assert sel.pass_name == "step_parallel_end"
    assert [Path(f).name for f in sel.files.values()] == ["step_parallel_end_0019.ir.xz"] * 2


def test_folder_commands_say_which_rank_they_used(two_stages: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["render", str(two_stages), "-o", str(tmp_path / "x.dot"), "--comm-only"])
    assert res.exit_code == 0, res.stderr
    assert res.stderr.splitlines()[0] == (f"irtool: {two_stages}: using rank 0 (stage 0), the lowest rank; "
                                          "--stage picks the rank of another stage")
    res = CliRunner().invoke(main, ["export", str(two_stages), "-o", str(tmp_path / "x.json")])
    assert res.exit_code == 0, res.stderr
    assert res.stderr.splitlines()[0] == (f"irtool: {two_stages}: using rank 0 (stage 0), rank 4 (stage 1), "
                                          "the lowest rank of each stage")


@pytest.mark.parametrize("folder, picked, reads", [
    # pipeline_2stage_8p: ranks 0-3 stage 0, 4-7 stage 1 (manifest.json). The bisection reads ranks 0 and 7,
    # then 3, 5, 4 to find where stage 1 begins: 5 of the 8 files.
    ("pipeline_2stage_8p", [(0, 0), (4, 1)], ["rank_0", "rank_3", "rank_4", "rank_5", "rank_7"]),
    # pipeline_4stage_8p holds ranks 0, 2, 4, 6, one per stage: read in the order 0, 6, 2, 4, each once (the
    # lowest rank read of each stage is kept, not only the latest: ranks 2 and 6 were read twice)
    ("pipeline_4stage_8p", [(0, 0), (2, 1), (4, 2), (6, 3)], ["rank_0", "rank_2", "rank_4", "rank_6"])])
def test_view_picks_one_rank_per_stage_without_reading_every_rank(folder: str, picked: list, reads: list) -> None:
    read: list[str] = []

    def counting(path: str) -> irtool.Dump:
        read.append(Path(path).parent.name)
        return irtool.load(path)

    sel = Selection.of(str(MINDIR / folder), policy=Policy(loader=counting))
    drawn = sel.per_stage()
    assert [(p.rank, p.stage) for p in drawn] == picked
    assert sorted(read) == reads
    if folder == "pipeline_2stage_8p":
        # the folder's job, of every rank (the view reads it): the ranks drawn are not read again, the job is the same
        assert sel.job(have=drawn).as_dict() == Selection.of(str(PIPE)).job().as_dict()


def test_render_scope_that_matches_nothing_names_the_closest(tmp_path: Path) -> None:
    # mlp_cpu validate scopes: `# Fullname with scope: (Default/network-WithLossCell/_backbone-MLP/fc1-Dense/...)`,
    # fc2-Dense and fc3-Dense likewise; there is no fc9-Dense
    base = "Default/network-WithLossCell/_backbone-MLP/"
    line = _one_line(run_cli("render", str(MLP), "--scope", base + "fc9-Dense", "-o", str(tmp_path / "x.svg")))
    assert line.startswith(f"irtool: {MLP}: no node is under the scope {base}fc9-Dense; closest: ")
    assert {base + f"fc{i}-Dense" for i in (1, 2, 3)} <= set(line.split("; closest: ")[1].split(", "))


def test_render_subgraph_that_does_not_exist_names_the_closest(tmp_path: Path) -> None:
    # mlp_cpu validate: `grep "^subgraph @"` gives one subgraph (@214_121_1_..._construct_683); there is no @fc9
    line = _cli(["render", str(MLP), "--subgraph", "fc9", "-o", str(tmp_path / "x.svg")])
    first = next(t for t in MLP.read_text().splitlines() if t.startswith("subgraph @")).split("@")[1].split("(")[0]
    assert line == f"irtool: {MLP}: no subgraph @fc9; closest: @{first}"


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


# Two compilations of one MindFormers Llama (dp 2 x mp 2 and dp 1 x mp 4, save_graphs, every pass) name the pass that
# lifts the top graph after that graph, with the ids each compilation gives it: rank_0 holds
# `after_lift_1232_158_mindspore_nn_wrap_cell_wrapper__VirtualDatasetCell_construct_7992_0024.ir` in one and
# `..._construct_8006_0024.ir` in the other. Both are one pass.
LIFT = "after_lift_1232_158_mindspore_nn_wrap_cell_wrapper__VirtualDatasetCell_construct_{}_0024.ir.xz"


def test_a_pass_named_after_its_graph_is_the_same_pass_in_another_compilation(tmp_path: Path) -> None:
    assert pass_name(LIFT.format(7992)) == pass_name(LIFT.format(8006)) == \
        "after_lift_mindspore_nn_wrap_cell_wrapper__VirtualDatasetCell_construct"
    assert pass_name("opt_pass_10_overlap_param_gather_0040.ir") == "opt_pass_10_overlap_param_gather"
    # two folders, each rank_0 with the validate pass and that lift pass (a copy of a real dump stands for it: only
    # the names matter here): diff finds no pass on one side only
    for side, graph_id in (("old", 7992), ("new", 8006)):
        rank = tmp_path / side / "rank_0"
        rank.mkdir(parents=True)
        shutil.copy(SEMI / "rank_0" / VALIDATE, rank / VALIDATE)
        shutil.copy(SEMI / "rank_0" / VALIDATE, rank / LIFT.format(graph_id))
    r = CliRunner().invoke(main, ["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["only_old_passes"] == data["only_new_passes"] == []
