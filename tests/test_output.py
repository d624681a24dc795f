"""What people read: text and Markdown of `summarize` and `diff` on real fixtures (issue 10, points 8, 9, 11, 12).

Every number below was worked out from the dump text (the grep is in the comment next to it).
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import LARGE, LARGE_GROUP, fixture, large_dump, large_facts

import irtool
from irtool.cli import main
from irtool.present import CATEGORY_COLORS, Table, rank_list, strategy_text, to_markdown, to_text
from irtool.report.summary import file_summary, summary_blocks

F = Path(__file__).resolve().parents[1] / "fixtures" / "mindir"
P2 = F / "pipeline_2stage_8p"
MISMATCH = F / "check_micro_mismatch_8p"  # rank 5 compiled with micro_size 2, the others 4 (fixtures/mindir/README)


def run(*args: object, code: int = 0) -> str:
    """stdout of `irtool ARGS` run in-process; CliRunner's stdout is not a terminal, like a pipe."""
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == code, res.output
    return res.output


# --- point 9: no Python spellings -----------------------------------------------------------------

PYTHON_SPELLINGS = re.compile(r"None|\{'|': |\(\d+,\)|\.\.\.|…|\bTrue\b|\bFalse\b|\[\d|\['")


def _rank0_files() -> list[Path]:
    """The last validate and the step_parallel_end file of every scenario's rank_0."""
    out = []
    for scenario in sorted(p for p in F.iterdir() if (p / "rank_0").is_dir()):
        for pattern in ("*_validate_*.ir*", "step_parallel_end_*.ir*"):
            out += sorted((scenario / "rank_0").glob(pattern))[-1:]
    return out


RUNS: list[tuple[list[object], int]] = [(["summarize", f], 0) for f in _rank0_files()] + [
    (["summarize", P2], 0), (["summarize", F / "gpt_small_dp2mp2pp2"], 0),
    (["diff", P2, F / "pipeline_4stage_8p"], 1),  # two different scenarios, 4 rank pairs
    (["diff", F / "semi_auto_8p" / "rank_0", F / "layout_8p" / "rank_0"], 1)]  # strategies vs layouts


def test_spelling_runs_cover_every_scenario() -> None:
    assert len(RUNS) >= 30 + 4  # 18 scenarios at the split; every 8p one has both files


@pytest.mark.parametrize("args,code", [
    pytest.param(*r, id=" ".join(str(a).replace(str(F) + "/", "") for a in r[0]),
                 marks=[LARGE_GROUP] if r[0] == ["summarize", Path(fixture(LARGE))] else []) for r in RUNS])
def test_no_python_spellings_in_text_or_markdown(args: list[object], code: int) -> None:
    for fmt in ("text", "markdown"):
        out = _large_summary(args[1], fmt) if args[0] == "summarize" and _is_large(args[1]) else \
            run(*args, "--format", fmt, "--all", code=code)
        bad = [line for line in out.splitlines() if PYTHON_SPELLINGS.search(line)]
        assert not bad, f"{fmt}: {bad[:3]}"


def _is_large(path: object) -> bool:
    return Path(str(path)).parent == F / "gpt_large_perf" / "rank_0"


def _large_summary(path: object, fmt: str) -> str:
    """`summarize FILE --format FMT --all` of a gpt_large_perf file without making its summary again per format:
    the same summary, blocks and writers as the command (cli.py `summarize`), the validate pass from the
    session's parse (conftest `large_dump`)."""
    blocks = _large_blocks(str(path))
    text = to_text(blocks) if fmt == "text" else to_markdown(blocks)
    return text if text.endswith("\n") else text + "\n"


@functools.cache
def _large_blocks(path: str) -> list:
    if path == fixture(LARGE):
        dump, facts = large_dump(), large_facts()
    else:
        dump = irtool.load(path)
        facts = irtool.analyze(dump)
    return summary_blocks(file_summary(dump, facts, ()), None)


def test_layout_and_strategy_spelling() -> None:
    # layout_8p rank_5 validate, MatMul-op0 (grep 'in_layout' ... _backbone-LayoutBlock/MatMul-op0):
    # in_layout: ({'device_matrix': (2, 2, 2), 'tensor_map': ((2, 1), -1), 'interleaved_parallel': false, ...},
    #             {'device_matrix': (2, 2, 2), 'tensor_map': (-1, 0), ...})
    out = run("summarize", F / "layout_8p" / "rank_5" / "19_validate_0078.ir.xz")
    row = next(line for line in out.splitlines() if "_backbone-LayoutBlock/MatMul-op0" in line)
    assert "dev (2,2,2) map ((2,1),-1); dev (2,2,2) map (-1,0)" in row
    # ... SoftmaxCrossEntropyWithLogits-op0 {in_strategy: ((8, 1), (8, 1))}; ReduceMean-op0 {in_strategy: ((8))}
    assert re.search(r"SoftmaxCrossEntropyWithLogits-op0\s+\(8,1\)\(8,1\)\s+—", out)
    assert re.search(r"ReduceMean-op0\s+\(8\)\s+—", out)
    # the step_parallel_begin print keeps `interleaved_parallel: true` (docs/parallel.md §9)
    assert strategy_text([{"device_matrix": [2, 4], "tensor_map": [1, -1], "interleaved_parallel": True}]) \
        == "dev (2,4) map (1,-1) interleaved"
    assert strategy_text(None) == "—" and strategy_text([[4]]) == "(4)"
    # mindformers_deepseek3_dp2pp4 rank_0 validate line 2670: a Concat's one input is a tuple of two tensors, each
    # with its layout: `in_layout: (({'device_matrix': (2, 1, 1), 'tensor_map': (-1, 2, 0, -1), ...}, {...}))`
    two = {"device_matrix": (2, 1, 1), "tensor_map": (-1, 2, 0, -1), "interleaved_parallel": False}
    assert strategy_text(((two, two),)) == "[dev (2,1,1) map (-1,2,0,-1); dev (2,1,1) map (-1,2,0,-1)]"
    assert rank_list([1, 2, 3, 5, 7, 6]) == "1-3, 5-7" and rank_list([6, 7]) == "6, 7" and rank_list([]) == ""


def test_render_draws_layouts_and_colours_as_every_command(tmp_path: Path) -> None:
    # the same MatMul-op0 as above (layout_8p rank_5 validate, line 64 its scope): the DOT label
    # spells its layout as summarize does, never as a Python dict
    out = tmp_path / "g.dot"
    run("render", F / "layout_8p" / "rank_5" / "19_validate_0078.ir.xz", "--depth", "all", "-o", out)
    dot = out.read_text(encoding="utf-8")
    labels = re.findall(r'\blabel="((?:[^"\\]|\\.)*)"', dot)  # the visible text (tooltips hold the raw attributes)
    assert any("dev (2,2,2) map ((2,1),-1); dev (2,2,2) map (-1,0)" in text for text in labels)
    assert not [text for text in labels if "device_matrix" in text or "{" in text]
    # one palette: the render legend fills each category with the colour `irtool view` uses
    for cat, colour in CATEGORY_COLORS.items():
        assert re.search(rf'legend_{cat.replace("-", "_")} \[.*fillcolor="{colour}"', dot), cat


def test_stage_line_without_dict() -> None:
    # pipeline_2stage_8p rank_4 validate: 4 forward Receive + 4 backward Send, each with `pr.src_rank: I64(0)`
    # (grep -cE '= (PrimFunc_)?(Send|Receive)\(' = 8): 8 votes for stage 1
    out = run("summarize", P2 / "rank_4" / "19_validate_0078.ir.xz")
    lines = out.splitlines()
    assert lines[0] == "Rank 4, pipeline stage 1 of 2"  # the headline's first line
    assert lines[7].startswith(str(P2 / "rank_4" / "19_validate_0078.ir.xz") + "  entry @")  # after 6 lines and a gap
    assert lines[8].startswith("Pipeline stage: 1 (8 votes, ")


# --- point 8: no silent truncation, names never cut ---------------------------------------------------

GPT0 = F / "gpt_small_dp2mp2pp2" / "rank_0" / "19_validate_0078.ir.xz"
# line 5909-5911 of GPT0: %464 = PrimFunc_MatMul(...) primitive_attrs: {in_strategy: ((2, 1), (2, 1)), ...}
#   # Fullname with scope: (recompute_Default/network-PipelineCell/network-GPT/layers-CellList/0-DecoderLayer/...)
LONG_SCOPE = ("recompute_Default/network-PipelineCell/network-GPT/layers-CellList/0-DecoderLayer/"
              "attention-Attention/wv-Linear/MatMul-op3")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_summarize_says_what_it_leaves_out(fmt: str) -> None:
    # operators with a strategy: xzcat GPT0 | grep -E '^  %[0-9]+\(' | grep -E 'in_strategy|in_layout'
    #   | grep -vc _Virtual  -> 158
    short = run("summarize", GPT0, "--format", fmt)
    assert "showing 25 of 158 (--all for every row)" in short
    assert LONG_SCOPE not in short
    full = run("summarize", GPT0, "--format", fmt, "--all")
    assert "of 158" not in full and "--all for every row" not in full
    row = next(line for line in full.splitlines() if LONG_SCOPE + " " in line or LONG_SCOPE + " |" in line)
    assert "(2,1)(2,1)" in row and len(LONG_SCOPE) > 80


def test_piped_output_is_not_cut() -> None:
    """A real pipe (subprocess), 80-column terminal settings in the environment: nothing is cut."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    out = subprocess.run([sys.executable, "-m", "irtool.cli", "summarize", str(GPT0), "--all"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert LONG_SCOPE in out
    assert max(len(line) for line in out.splitlines()) > 80


def test_table_note_in_both_formats() -> None:
    t = Table("T", ["a", "b"], [[str(i), "x"] for i in range(30)]).limited(25)
    assert "  showing 25 of 30 (--all for every row)" in to_text([t]).splitlines()
    assert "_showing 25 of 30 (--all for every row)_" in to_markdown([t])
    assert Table("T", ["a"], [["1"]]).limited(25).note is None


# --- point 11: folder summaries ---------------------------------------------------------------------

def test_folder_summary_says_what_it_adds_up() -> None:
    out = run("summarize", P2, "--all")
    # every rank's validate: grep -cE '= (PrimFunc_)?Send\(' -> 4, Receive 4; AllReduce 45 on ranks 0-3
    lines = out.splitlines()

    def table(title: str) -> list[str]:
        i = lines.index(title)
        end = next((j for j in range(i + 1, len(lines)) if not lines[j]), len(lines))
        return lines[i + 3:end]  # after the title, the header and the rule

    ops0 = table("Stage 0: sum over 4 ranks (0-3), communication by operator")
    assert [row.split()[:2] for row in ops0] == [["AllReduce", "180"], ["Receive", "16"], ["Send", "16"]]  # 4 x 45, 4 x 4
    cats1 = table("Stage 1: sum over 4 ranks (4-7), communication by category")
    # pipeline = 4 ranks x (4 Send + 4 Receive); operators are not mixed into the category table
    assert ["pipeline", "32", "32,768"] in [row.split() for row in cats1]
    assert not any(row.split()[0] in ("AllReduce", "Send") for row in cats1)
    sr = [row.split() for row in table("Send/Receive per rank")]
    # rank 1: 4 x `= Send(` with `primitive_attrs: {shape: [4, 64], dest_rank: I64(5)` and `pr.dest_rank: I64(1)`,
    # micro: I64(0..3); F32 [4, 64] = 1,024 bytes.  rank 5: 4 backward Sends, `dest_rank: I64(1)`, `pr.src_rank: I64(0)`
    assert ["1", "0", "Send", "forward", "1", "5", "1,024", "4", "0,1,2,3"] in sr
    assert ["5", "1", "Send", "backward", "0", "1", "1,024", "4", "0,1,2,3"] in sr
    assert len(sr) == 16  # 8 ranks x (Send, Receive), each one (peer, size)
    md = run("summarize", P2, "--format", "markdown")
    assert "**Stage 1: sum over 4 ranks (4-7), communication by operator**" in md
    assert "| 5 | 1 | Send | backward | 0 | 1 | 1,024 | 4 | 0,1,2,3 |" in md


# --- point 12: diff ---------------------------------------------------------------------------------

def test_diff_same_blocks_once_and_peers() -> None:
    text = run("diff", P2, MISMATCH, code=1)
    # Only rank 5 was compiled differently (micro_size 2): its comm nodes per op, grep -oE '= (Send|Receive|...)\('
    # | sort | uniq -c: old 4 AllGather, 53 AllReduce, 4 Receive, 4 ReduceScatter, 4 Send (69); new 2, 33, 2, 2, 2 (41)
    headers = [line for line in text.splitlines() if line.startswith("== ")]
    assert headers == ["== rank 0 (stage 0) -> rank 0 (stage 0)", "== ranks 1-3: same as rank 0",
                       "== rank 4 (stage 1) -> rank 4 (stage 1)", "== ranks 6, 7: same as rank 4",
                       "== rank 5 (stage 1) -> rank 5 (stage 1)"]
    rows = [line.split() for line in text.splitlines() if line.startswith("  removed ")]
    assert len([r for r in rows if r[3] in ("pipeline", "redistribution", "operator-forward",
                                            "gradient-aggregation")]) == 69 - 41
    # rank 5's Receives come from rank 1 (`src_rank: I64(1)`), stage 0 (`pr.src_rank: I64(0)`)
    receive = [line for line in text.splitlines() if " Receive " in line and "pipeline" in line]
    assert receive and all(line.endswith("peer rank 1 (stage 0)") for line in receive)
    md = run("diff", P2, MISMATCH, "--format", "markdown", code=1)
    assert "**ranks 1-3: same as rank 0**" in md and "**ranks 6, 7: same as rank 4**" in md
    # and the configuration change first (rank 5 compiled with 2 of the 4 micro batches), where each side shows it folded
    assert "- **configuration: micro batches 4 → 2 or 4 (ranks disagree)**" in md and md.count("<details") == 4
    doc = json.loads(run("diff", P2, MISMATCH, "--format", "json", code=1))
    assert [r["new"]["rank"] for r in doc["ranks"]] == list(range(8))  # JSON keeps every rank
    r5 = doc["ranks"][5]
    sends = [e["old"] for e in r5["comm"] if e["op"] == "Send"]
    assert sends and all((s["peer_rank"], s["peer_stage"]) == (1, 0) for s in sends)
    # rank 5's communication rows: 69 - 41 = 28 removed; of the 41 left, the output types (the line after each
    # comm line, grep -A1 ... | sed 's/.*-> //' | sort | uniq -c) that carry the micro batch double their first
    # dimension, (4, 64) -> (8, 64) x 20, (1, 4, 8) -> (1, 8, 8) x 2, (2, 4, 8) -> (2, 8, 8) x 2: 24 changed;
    # the 17 others ((), (128), (128, 64), (64, 128), (64, 8)) are identical and not listed: 28 + 24 = 52 rows
    changes = [e["change"] for e in r5["comm"]]
    assert (changes.count("removed"), changes.count("changed"), len(changes)) == (28, 24, 52)
    assert r5["counts"]["comm"] == 52
    # the --all limit: the same shared Table note as summarize
    from irtool.diff import diff_dirs
    from irtool.diff.report import to_text as diff_text
    short = diff_text(diff_dirs(str(P2 / "rank_5"), str(MISMATCH / "rank_5"), by_rank=True), limit=10)
    assert "showing 10 of 52 (--all for every row)" in short


def test_diff_peers_between_scenarios() -> None:
    # pipeline_4stage_8p rank_0 validate: `= Send(` with `dest_rank: I64(2)` (global) and `pr.dest_rank: I64(1)`
    text = run("diff", P2 / "rank_0", F / "pipeline_4stage_8p" / "rank_0", "--all", "--by-rank", code=1)
    sends = [line for line in text.splitlines() if re.match(r"  (added|changed) +0 +Send ", line)]
    assert len(sends) == 8 and all(line.endswith("peer rank 2 (stage 1)") for line in sends)
    doc = json.loads(run("diff", P2 / "rank_0", F / "pipeline_4stage_8p" / "rank_0", "--format", "json", "--by-rank",
                         code=1))
    added = [e["new"] for e in doc["ranks"][0]["comm"] if e["change"] == "added" and e["op"] == "Send"]
    assert added and all((a["peer_rank"], a["peer_stage"]) == (2, 1) for a in added)


def test_diff_of_a_folder_with_itself_shows_each_stage_once() -> None:
    # pipeline_2stage_8p: stage 0 = ranks 0-3, stage 1 = ranks 4-7 (pr.dest_rank / pr.src_rank of their Send/Receive)
    text = run("diff", P2, P2)
    assert [line for line in text.splitlines() if line.startswith("== ")] == [
        "== rank 0 (stage 0) -> rank 0 (stage 0)", "== ranks 1-3: same as rank 0",
        "== rank 4 (stage 1) -> rank 4 (stage 1)", "== ranks 5-7: same as rank 4"]
    assert text.endswith("identical\n")


def test_markdown_mentions_nobody() -> None:
    # rank_4 validate header: `# IR entry: @1972_1971_291_289_1_...construct_2557`; on GitHub `@1972` would notify a user
    md = run("summarize", P2 / "rank_4" / "19_validate_0078.ir.xz", "--format", "markdown")
    assert "entry &#64;1972_1971_291_289_1_" in md and "@" not in md
    text = run("summarize", P2 / "rank_4" / "19_validate_0078.ir.xz")
    assert "entry @1972_1971_291_289_1_" in text  # text keeps the dump's spelling for grep


def test_folder_summary_strategies_per_stage_same_ranks_once() -> None:
    gpt = F / "gpt_small_dp2mp2pp2"
    d = json.loads(run("summarize", gpt, "--format", "json"))
    # grep -cE '^\s+%[0-9]+\(.*\) = .*in_strategy: ' rank_N/19_validate_0078.ir -> 158 on ranks 0-3, 183 on rank 4
    answers = {s["stage"]: s["answers"] for s in d["stages"]}
    assert [(a["ranks"], len(a["strategies"])) for a in answers[0]] == [([0, 1, 2, 3], 158)]
    assert [(a["ranks"], len(a["strategies"])) for a in answers[1]] == [([4, 5, 6, 7], 183)]
    out = run("summarize", gpt)
    assert "Stage 0, rank 0: operators with strategies" in out and "ranks 1-3: same as rank 0" in out
    assert "ranks 5-7: same as rank 4" in out
    # local slice, rank 0 line 201: `%2 = PrimFunc_StridedSlice(%1, ...) {instance name: redistribution_op_...}`
    # cutting the micro batch of line 189 (`strided_slice`, (4, 64) -> (2, 64)) for the Sub on line 204
    local = out.split("Stage 0, rank 0: local slices (StridedSlice without communication)\n", 1)[1]
    assert re.search(r"\n  0 +forward +StridedSlice strided_slice \(line 189\) .*Sub \S+ \(line 204\)", local)


def test_folder_summary_rank_with_another_strategy_shown_apart() -> None:
    # check_strategy_mismatch_8p (manifest: rank 3 shards out_proj as ((2, 1), (1, 4)), the others ((2, 4), (4, 1))):
    # rank 3 validate line 395 `PrimFunc_MatMul(...) {instance name: out_proj} primitive_attrs: {in_strategy: ((2, 1),
    # (1, 4))`; no pipeline, so one stage (None) with two answers
    d = json.loads(run("summarize", F / "check_strategy_mismatch_8p", "--format", "json"))
    (stage,) = d["stages"]
    assert [a["ranks"] for a in stage["answers"]] == [[0, 1, 2, 4, 5, 6, 7], [3]]
    out = run("summarize", F / "check_strategy_mismatch_8p", "--all")
    assert "ranks 1, 2, 4-7: same as rank 0" in out and "Stage 0 (no pipeline), rank 3: operators with strategies" in out
    mm = [line for line in out.split("Stage 0 (no pipeline), rank 3: operators with strategies", 1)[1].splitlines()
          if line.startswith("  MatMul ") and "out_proj" not in line]
    assert any("(2,1)(1,4)" in line for line in mm)


def test_text_fits_100_columns_and_keeps_names_whole() -> None:
    from irtool.ir import load
    from irtool.parallel import analyze
    from irtool.present.tables import _BREAK
    from irtool.report.summary import file_summary, summary_blocks

    dump = load(F / "semi_auto_8p" / "rank_0" / "19_validate_0078.ir.xz")
    blocks = summary_blocks(file_summary(dump, analyze(dump)), None)
    wide, narrow = to_text(blocks), to_text(blocks, width=100)
    assert max(map(len, wide.splitlines())) > 100  # piped: one line per row, however long
    assert max(map(len, narrow.splitlines())) <= 100
    # every piece of every cell (scopes split after `/`, lists after `; `) is printed whole on one line
    pieces = {p.strip() for b in blocks if isinstance(b, Table) for row in b.rows for c in row
              for p in _BREAK.split(c) if p.strip()}
    lines = narrow.splitlines()
    assert all(any(p in ln for ln in lines) for p in pieces)
    # e.g. the layer `Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP` (its Fullname with scope
    # in the dump) wraps after its `/`s
    assert "  Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP  " in wide
    assert any(ln.strip().startswith("body-ShardedAttentionMLP") for ln in lines)


def test_headline_first() -> None:
    # opt_parallel_8p rank_0 validate: grep -cE "= (AllGather|ReduceScatter|AllReduce)\(" -> 17 (8 AllGather with
    # `parallel_optimizer` in the instance name, all on group "nccl_world_group" of 8 ranks, 8 ReduceScatter, 1 AllReduce)
    lines = run("summarize", F / "opt_parallel_8p" / "rank_0" / "19_validate_0078.ir.xz").splitlines()
    assert lines[0] == "Rank 0, pipeline stage: none (no pipeline Send/Receive)"
    # make.py: device_num=8, nn.Adam, enable_parallel_optimizer; the 8 AllGathers run on nccl_world_group (8 ranks),
    # no tensor-parallel collective (the 1 AllReduce is on the world group), no `micro` anywhere
    assert lines[1] == "Job: world 8, dp 8 x mp 1 x pp 1, 1 micro batch, optimizer Adam sharded over 8 ranks"
    assert lines[2].startswith("Communication: 17 nodes, ")
    assert lines[3] == "Redistributions: none"
    assert lines[4].startswith("Optimizer sharding: 8 parameters over groups of 8 ranks, ")
    assert lines[5] == "Unknown or unpaired: none"
    assert lines[6] == "" and lines[7].startswith(str(F / "opt_parallel_8p"))
    # semi_auto_8p: no parameter names a layer index; of its 39 collectives 33 print a scope under
    # `.../_backbone-Net/body-ShardedAttentionMLP`, 4 under `head-Head`, 2 under `_loss_fn-Loss`: the most is a scope
    line = run("summarize", F / "semi_auto_8p" / "rank_0" / "19_validate_0078.ir.xz").splitlines()[2]
    assert "); most in scope Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP (" in line
    # a folder: gpt_small_dp2mp2pp2, `pr.stage` of the Sends: ranks 0-3 stage 0, 4-7 stage 1; each rank's 2 Sends
    # and 2 Receives (grep -cE "= (Send|Receive)\(" -> 4 per rank) meet a Receive / Send of the other stage
    head = run("summarize", F / "gpt_small_dp2mp2pp2").splitlines()[:6]
    assert head[0] == "8 ranks, 2 pipeline stages (stage 0: ranks 0-3; stage 1: ranks 4-7)"
    # make.py: dp 2, mp 2, pp 2, micro_size 2, AdamWeightDecay, 4 layers with recompute on i % 2 == 0 (0 and 2),
    # layers 0-1 on stage 0 and 2-3 on stage 1 (pipeline_stage = i * 2 // 4)
    assert head[1] == ("Job: world 8, dp 2 x mp 2 x pp 2, 2 micro batches, optimizer AdamWeightDecay, gradient "
                       "accumulation, recompute stage 0: layer 0; stage 1: layer 2")
    assert head[4] == "Optimizer sharding: none on every stage"
    assert head[5] == "Unknown or unpaired: none"
