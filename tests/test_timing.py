"""Hardware profiles, time per operator and collective, and the step played out (docs/timing.md).

The closed forms are checked on real fixtures' unit orders and Send -> Receive pairs, every unit given the same
time and the transfers none: 1F1B (p-1)/(m+p-1), interleaved (p-1)/(v*m+p-1), worked out by hand below."""
from __future__ import annotations

import functools
import glob
import json
import lzma
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, reads

from irtool import load
from irtool.cli import main
from irtool.errors import InputError
from irtool.parallel import analyze
from irtool.parallel.balance import bubble, step_time
from irtool.parallel.calibrate import read_trace
from irtool.parallel.cost import compute_cost
from irtool.parallel.hardware import builtin_names, load_profile
from irtool.parallel.timing import StageTiming, TimedHop, UnitTime, comm_seconds, op_seconds, simulate, stage_timing


@functools.cache
def _timings(folder: str, ranks: tuple[int, ...], hardware: str = "910b") -> list:
    p = load_profile(hardware)
    out = []
    for r in ranks:
        path = sorted(glob.glob(str(FIXTURES / folder / f"rank_{r}" / "19_validate_*.ir.xz")))[0]
        facts = analyze(load(path), r)
        out.append(stage_timing(facts.table, compute_cost(facts.table, keep_ops=True), p, facts.groups,
                                facts.table.get("order")))
    return out


# --- 1. profiles ------------------------------------------------------------------------------------

def test_every_shipped_profile_loads_with_its_datasheet_figures() -> None:
    assert builtin_names() == ["910b", "910c", "h100", "h800"]
    h100, h800, b, c = (load_profile(n) for n in ("H100", "h800", "910B", "910c"))
    # H100 SXM datasheet: BF16 1,979 TFLOPS with sparsity -> 989.4 dense; HBM3 3.35 TB/s; NVLink 900 GB/s both ways
    assert h100.rate(True, "BFloat16") == 989.4e12 and h100.hbm_bandwidth == 3.35e12 and h100.intra.bandwidth == 450e9
    # H800: the same compute, NVLink 400 GB/s both ways
    assert h800.rate(True, "Float16") == h100.rate(True, "Float16") and h800.intra.bandwidth == 200e9
    # Atlas 800T A2: 2.5 PFLOPS FP16 per 8 NPUs; 910C: 376 per die, 16 dies per Atlas 800T A3 node
    assert b.rate(True, "Float16") == 313e12 and b.devices_per_node == 8
    assert c.rate(True, "BFloat16") == 376e12 and c.devices_per_node == 16
    # a dtype without a rate of its own runs at Float32's
    assert b.rate(False, "Int32") == b.vector["fp32"]


def test_a_file_overrides_its_base_field_by_field(tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text('base = "h100"\nname = "H100 on 200G"\n[network.inter]\nbandwidth = 25e9\n')
    p = load_profile(str(f))
    assert p.name == "H100 on 200G" and p.inter.bandwidth == 25e9
    assert p.inter.latency == load_profile("h100").inter.latency and p.matrix == load_profile("h100").matrix
    assert p.where == f"{f} over h100"


@pytest.mark.parametrize("text, where", [
    ('base = "h100"\n[network.inter]\nbandwidth = -3\n', "3:1: expected network.inter.bandwidth a number > 0, found -3"),
    ('base = "h100"\n\n[compute]\nmatrix_efficiency = [[1e9, 0.5], [1e6, 0.2]]\n',
     "4:1: expected compute.matrix_efficiency"),
    ('base = "h100"\n[network]\ndevices_per_node = 0\n', "3:1: expected network.devices_per_node an integer >= 1"),
    ('base = "a100"\n', "1:1: expected base = one of 910b, 910c, h100, h800 or a file, found 'a100'"),
    ('name = "x"\n[compute\n', "2:9: expected TOML, found expected ']'"),
])
def test_a_bad_profile_is_one_located_line(tmp_path: Path, text: str, where: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        load_profile(str(f))
    assert str(e.value).startswith(f"{f}:{where}") and "\n" not in str(e.value)


def test_an_unknown_name_says_which_exist() -> None:
    with pytest.raises(InputError, match="no profile 'tpu': name one of 910b, 910c, h100, h800 or a .toml file"):
        load_profile("tpu")


# --- 2. time per operator and collective ----------------------------------------------------------------

def test_operator_time_is_the_roofline_at_the_efficiency_of_its_size() -> None:
    p = load_profile("h100")
    # fc1 of pipeline_unequal_8p: (16, 64) x (64, 128) Float32 = 2*16*128*64 = 262,144 FLOPs, below the first point
    # of the matrix curve (1e6 FLOPs: 0.12): TF32 494.7e12 x 0.12
    assert op_seconds(p, "MatMul", 262_144, "Float32", None) == pytest.approx(262_144 / (494.7e12 * 0.12))
    # 3e9 FLOPs lies between 1e9 (0.44) and 9e9 (0.72): log-interpolated
    e = 0.44 + (0.72 - 0.44) * math.log(3) / math.log(9)
    assert op_seconds(p, "BatchMatMul", 3_000_000_000, "BFloat16", None) == pytest.approx(3e9 / (989.4e12 * e))
    # a memory-bound operator: its bytes over HBM 3.35 TB/s x 0.9
    assert op_seconds(p, "TopK", 0, "Float16", 1 << 20) == pytest.approx((1 << 20) / (3.35e12 * 0.9))
    # both at once: fc1 reads (16, 64) and (64, 128) and writes (16, 128) Float32, (1,024 + 8,192 + 2,048) x 4 =
    # 45,056 B: 14.9 ns of HBM against 4.4 ns of arithmetic overlap (the roofline's max), never add up
    assert op_seconds(p, "MatMul", 262_144, "Float32", 45_056) == pytest.approx(45_056 / (3.35e12 * 0.9))


def test_a_collective_takes_the_tier_its_group_spans() -> None:
    p = load_profile("h100")  # 8 GPUs per node
    intra, known = p.tier((0, 1), 2)
    assert intra is p.intra and known
    assert p.tier((0, 8), 2)[0] is p.inter and p.tier(None, 16) == (p.inter, False)
    # AllReduce of 4096 bytes over 2 ranks: 2(n-1) = 2 steps of latency + 2(n-1)/n x 4096 = 4096 wire bytes
    assert comm_seconds(p, "AllReduce", 4096, 2, p.intra) == pytest.approx(2 * 3e-6 + 4096 / (450e9 * 0.8))
    # AllGather of an 8-rank 1 MiB output across nodes: 7 steps + 7/8 of it
    assert comm_seconds(p, "AllGather", 1 << 20, 8, p.inter) == pytest.approx(7 * 10e-6 + (7 << 20) / 8 / (50e9 * 0.85))
    assert comm_seconds(p, "Send", 1024, 2, p.intra) == pytest.approx(3e-6 + 1024 / (450e9 * 0.8))


def test_units_hold_every_second_of_compute_once() -> None:
    # the units' compute plus the tail is every operator's time: spreading work printed once for every micro batch
    # (the lazy-inline body runs once per call, 8 calls) loses or adds none
    for folder, ranks in (("pipeline_4stage_8p", (0, 2)), ("pipeline_4stage_lazy_8p", (0, 2))):
        for t in _timings(folder, ranks):
            units = sum(u.compute for u in t.units.values()) + t.tail.forward + t.tail.backward + t.tail.recompute
            assert units == pytest.approx(sum(t.layer_seconds.values()), rel=1e-9)
            assert t.tail.optimizer > 0
            assert len(t.units) == 16 and all(u.forward > 0 or u.backward > 0 for u in t.units.values())


# --- 3. the step --------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder, ranks, p, m, v", [
    ("pipeline_4stage_8p", (0, 2, 4, 6), 4, 8, 1),               # 1F1B: 3/11
    ("pipeline_unequal_8p", (0, 2, 4, 6), 4, 4, 1),              # 3/7
    ("pipeline_4stage_lazy_8p", (0, 2, 4, 6), 4, 8, 1),          # lazy inline: the units are call nodes
    ("pipeline_interleaved_4stage_8p", (0, 2, 4, 6), 4, 8, 2),   # interleaved: 3/19
    ("mindformers_llama_pp4_interleaved", (0, 2, 4, 6), 4, 8, 2),  # MindFormers' pp_interleave_num 2: 3/19
    ("pipeline_segments_8p", (0, 4), 2, 4, 2),                   # 2 stages, 2 chunks, 4 micro batches: 1/9
])
def test_balanced_orders_reproduce_the_closed_forms(folder: str, ranks: tuple[int, ...], p: int, m: int,
                                                    v: int) -> None:
    step = simulate(_timings(folder, ranks), time_of=lambda stage, unit: 1.0, hop_time=lambda hop: 0.0)
    assert step.cannot is None
    # each stage runs 2*v*m units of 1; the step is 2*v*m + 2*(p-1) units: (p-1)/(v*m+p-1) of it idle
    assert step.seconds == 2 * v * m + 2 * (p - 1)
    assert step.bubble == pytest.approx((p - 1) / (v * m + p - 1), abs=1e-12)
    assert {s.idle for s in step.stages} == {2.0 * (p - 1)}
    # one arrow per Send -> Receive pair: 2 directions x m micro batches x v chunks per link, and the wrap of an
    # interleaved pipeline (last stage back to the first) x 2 directions
    links = (p - 1) * v + (v - 1)
    assert len(step.arrows) == 2 * m * links


def test_the_formula_bubble_counts_chunks() -> None:
    # the case: 2 stages, 2 chunks, 4 micro batches, equal stages: 1/(2*4+1) = 11.1 %, not 1/5 = 20 %
    assert bubble([1.0, 1.0], 4, 2) == pytest.approx(1 / 9)
    assert bubble([1.0] * 4, 4) == pytest.approx(3 / 7)
    assert step_time([1.0] * 4, 8, 2) == pytest.approx((4 + 15) / 2)


def test_the_step_adds_up_per_stage() -> None:
    step = simulate(_timings("pipeline_4stage_8p", (0, 2, 4, 6)))
    assert step.seconds > 0 and step.profile.startswith("Huawei Ascend 910B")
    for s in step.stages:  # busy + exposed communication + idle is the step on every stage
        assert s.busy + s.exposed + s.idle == pytest.approx(step.seconds)
    # no unit starts before the one sending it its input has ended and the transfer crossed
    for a in step.arrows:
        assert a.dst.start >= a.src.end + a.seconds - 1e-15
    assert 0 < step.mfu < 1


# --- 6. summarize --cost ------------------------------------------------------------------------------

UNEQUAL = str(FIXTURES / "pipeline_unequal_8p")


@functools.cache
def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_summarize_cost_plays_the_step_out_per_stage() -> None:
    code, out, _ = _run("summarize", UNEQUAL, "--cost", "--hardware", "h100", "--format", "json")
    assert code == 0
    cost = json.loads(out)["cost"]
    step = cost["step"]
    assert step["hardware"] == {"name": "NVIDIA H100 SXM5 80GB", "where": "h100", "default": False}
    assert step["cannot"] is None and step["seconds"] > 0
    for s in step["stages"]:  # compute + exposed communication + idle is the step, on every stage
        assert s["compute_seconds"] + s["exposed_seconds"] + s["idle_seconds"] == pytest.approx(step["seconds"])
    assert cost["bubble"] == step["bubble"] and cost["bubble_how"].startswith("the step played out")
    # the FLOPs stay beside the time: 5.38x (test_cost.py, by hand) and stage 0 (5 layers) the slowest
    assert cost["sentence"].startswith("stage 0 takes ") and "stage 0 does 5.38x stage 1's" in cost["sentence"]
    assert all(r["seconds"] > 0 for r in cost["stages"])


def test_the_advice_moves_layers_off_the_slow_stage_and_says_by_how_much() -> None:
    code, out, _ = _run("summarize", UNEQUAL, "--cost", "--hardware", "h100", "--format", "json")
    a = json.loads(out)["cost"]["advice"]
    now, advised = a["current"], a["advised"]
    assert now["layer_counts"] == [[5, 1, 1, 1]]
    assert advised["layer_counts"][0][0] < 5  # stage 0 gives layers away
    assert max(advised["seconds"]) < max(now["seconds"]) and advised["step_seconds"] < now["step_seconds"]
    code, text, _ = _run("summarize", UNEQUAL, "--cost", "--hardware", "h100")
    lines = text.splitlines()
    assert lines[0].startswith("Step: ") and " (estimate on NVIDIA H100 SXM5 80GB): bubble " in lines[0]
    assert lines[1].startswith("Balance: stage 0 takes ")
    shorter = 1 - advised["step_seconds"] / now["step_seconds"]
    assert f"the step shortens by {shorter:.1%}" in lines[3]


def test_the_default_profile_is_said() -> None:
    code, text, _ = _run("summarize", UNEQUAL, "--cost")
    said = "(estimate on Huawei Ascend 910B (Atlas 800T A2), the default profile 910b: --hardware NAME|FILE to choose): "
    assert code == 0 and said in text.splitlines()[0]
    code, md, _ = _run("summarize", UNEQUAL, "--cost", "--format", "markdown")
    assert code == 0 and "| stage | rank | compute | exposed communication | idle (bubble) | MFU |" in md


def test_a_bad_hardware_profile_exits_2_with_one_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text('base = "910b"\n[memory]\nbandwidth = "fast"\n')
    r = CliRunner().invoke(main, ["summarize", UNEQUAL, "--hardware", str(f)])
    assert r.exit_code == 2
    assert r.stderr == f"irtool: {f}:3:1: expected memory.bandwidth a number > 0, found 'fast'\n"


# --- 4. the timeline picture ----------------------------------------------------------------------------

@pytest.mark.parametrize("folder, ranks, micros, chunks", [
    ("pipeline_4stage_8p", (0, 2, 4, 6), 8, 1),
    ("pipeline_interleaved_4stage_8p", (0, 2, 4, 6), 8, 2),
])
def test_timeline_svg_has_a_lane_per_stage_a_box_per_unit_an_arrow_per_pair(tmp_path: Path, folder: str,
                                                                             ranks: tuple[int, ...], micros: int,
                                                                             chunks: int) -> None:
    out = tmp_path / "t.svg"
    r = CliRunner().invoke(main, ["render", str(FIXTURES / folder), "--timeline", "-o", str(out)])
    assert r.exit_code == 0, r.output
    svg = ET.parse(out).getroot()
    ns = {"s": "http://www.w3.org/2000/svg"}
    lanes = svg.findall(".//s:g[@class='lane']", ns)
    assert [g.get("data-stage") for g in lanes] == [str(s) for s in range(len(ranks))]
    # each lane's idle time shows: the lane is hatched under its boxes, its idle share written at its right
    assert all(g.find("s:rect", ns).get("fill") == "url(#idle)" for g in lanes)
    assert all(re.fullmatch(r"idle \d+%", g.findall("s:text", ns)[-1].text) for g in lanes)
    # a unit is the forward or the backward of one micro batch on one chunk: 2 x m x v per stage
    units = svg.findall(".//s:g[@class='unit']", ns)
    assert len(units) == len(ranks) * 2 * micros * chunks
    labels = {(g.get("data-stage"), g.get("data-unit")) for g in units}
    assert ("0", "F0" if chunks == 1 else "F0.c0") in labels and len(labels) == len(units)
    # one arrow per Send -> Receive pair: every Send the stages' dumps print (`grep -c ' = Send('`) is paired
    sends = sum(lzma.open(sorted((FIXTURES / folder / f"rank_{k}").glob("19_validate_*.ir.xz"))[0], "rt").read()
                .count(" = Send(") for k in ranks)
    assert len(svg.findall(".//s:line[@class='arrow']", ns)) == sends
    summary = svg.find(".//s:text[@class='summary']", ns).text
    assert summary.startswith("step ") and " on Huawei Ascend 910B (Atlas 800T A2) (estimate) · bubble " in summary
    legend = "".join(t.text or "" for t in svg.findall(".//s:g[@class='legend']/s:text", ns))
    for name in ("forward", "backward", "recompute", "exposed communication", "idle (bubble)"):
        assert name in legend


def test_timeline_needs_a_folder_of_stages_and_svg(tmp_path: Path) -> None:
    one = str(FIXTURES / "pipeline_4stage_8p" / "rank_0" / "19_validate_0078.ir.xz")
    r = CliRunner().invoke(main, ["render", one, "--timeline", "-o", str(tmp_path / "t.svg")])
    assert r.exit_code == 2 and "--timeline needs a folder of ranks on two or more pipeline stages" in r.stderr
    r = CliRunner().invoke(main, ["render", str(FIXTURES / "pipeline_4stage_8p"), "--timeline", "-o",
                                  str(tmp_path / "t.png")])
    assert r.exit_code == 2 and "--timeline writes SVG, not png" in r.stderr


# --- 5. calibration -----------------------------------------------------------------------------------

DATA = Path(__file__).parent / "data"
HEADER = ("Step,Type,Index,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
          "Communication(Not Overlapped and Exclude Receive),Preparing")


def test_the_cluster_step_trace_is_read_by_its_documented_columns() -> None:
    # tests/data/cluster_step_trace_time.csv, written from msprof-analyze's documentation: microseconds; a stage
    # row (the stage's maxima, Index its ranks) wins over its ranks' rows; Receive (Bubble) left out of the
    # communication
    measured, steps = read_trace(str(DATA / "cluster_step_trace_time.csv"), {0: 0, 1: 0, 2: 1, 4: 2})
    assert steps == 2
    s0, s1, s2 = measured
    assert (s0.stage, s0.computing, s0.not_overlapped) == (0, pytest.approx(1210.5e-6), pytest.approx(270.25e-6))
    assert s0.communication == pytest.approx((400.25 - 50.0) * 1e-6) and s0.bubble == pytest.approx(50e-6)
    assert (s1.stage, s1.computing, s1.overlapped) == (1, pytest.approx(600e-6), pytest.approx(50e-6))
    assert (s2.stage, s2.free) == (2, pytest.approx(35e-6))


@pytest.mark.parametrize("text, where", [
    ("Step,Type,Index,Computing\n", "1:1: expected the column Communication(Not Overlapped)"),
    (HEADER + "\n0,rank,0,12x,1,1,1,1,1,1,1,1\n", "2:4: expected a number of microseconds in Computing, found '12x'"),
    (HEADER + "\n0,rank,0,1\n", "2:1: expected 12 columns, found 4"),
])
def test_a_bad_trace_is_one_located_line(tmp_path: Path, text: str, where: str) -> None:
    f = tmp_path / "cluster_step_trace_time.csv"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        read_trace(str(f), {0: 0})
    assert str(e.value).startswith(f"{f}:{where}")


def test_calibration_recovers_the_efficiencies_and_overlap_a_run_shows(tmp_path: Path) -> None:
    # a run whose compute took twice the estimate, whose collectives took 1.25x, and which hid half of what the
    # dependencies let hide; every stage waited 10 µs in Receive
    timings = _timings("pipeline_4stage_8p", (0, 2, 4, 6))
    rows = [HEADER]
    for t in timings:
        u = t.total()
        comm, overlapped = 1.25 * u.comm, 0.5 * 1.25 * u.hideable
        rows.append(f"3,rank,{t.rank},{2e6 * u.compute},{1e6 * (comm - overlapped) + 10},{1e6 * overlapped},"
                    f"{1e6 * comm + 10},1,0,10,{1e6 * (comm - overlapped)},0")
    f = tmp_path / "cluster_step_trace_time.csv"
    f.write_text("\n".join(rows) + "\n")
    code, out, _ = _run("summarize", str(FIXTURES / "pipeline_4stage_8p"), "--calibrate", str(f), "--format", "json")
    assert code == 0
    cal = json.loads(out)["cost"]["calibration"]
    fitted = cal["fitted"]
    assert fitted["compute_efficiency_scale"] == pytest.approx(0.5)
    assert fitted["link_efficiency_scale"] == pytest.approx(0.8)
    assert fitted["overlap"] == pytest.approx(0.5) and fitted["overlap_was"] == 1.0
    # played again with the fitted figures the units take what the run measured: the step grows
    assert cal["fitted_step_seconds"] > cal["step_seconds"]
    code, text, _ = _run("summarize", str(FIXTURES / "pipeline_4stage_8p"), "--calibrate", str(f))
    assert "  fitted: compute efficiency x0.5, link efficiency x0.8, overlap 0.50 (was 1.00)" in text
    assert 'base = "910b"\nname = "Huawei Ascend 910B (Atlas 800T A2), calibrated"' in text.replace("    ", "")
    saved = tmp_path / "fitted.toml"  # the fitted profile loads and carries the fitted figures
    block = text.split("```toml\n")[1].split("```")[0] if "```toml" in text else \
        "\n".join(x[4:] for x in text.split("the fitted profile (save as a .toml, --hardware FILE):\n")[1].splitlines())
    saved.write_text(block)
    p = load_profile(str(saved))
    assert p.overlap == 0.5 and p.intra.efficiency == pytest.approx(0.7 * 0.8)
    assert p.matrix_efficiency[0][1] == pytest.approx(0.08 * 0.5, rel=1e-2)


def test_the_interleaved_bubble_without_times_counts_chunks() -> None:
    # the job: pipeline_segments_8p, 2 stages x 2 chunks, 4 micro batches, stages within 1 % of each other
    # in FLOPs: about 1/(2*4 + 2 - 1) = 11.1 %; the no-interleave formula said (2-1)/(4+2-1) = 20 % and more
    code, out, _ = _run("summarize", str(FIXTURES / "pipeline_segments_8p"), "--cost", "--hardware", "none",
                        "--format", "json")
    cost = json.loads(out)["cost"]
    assert cost["step"] is None and cost["bubble_how"] == cost["bubble_formula"]
    assert cost["bubble"] == pytest.approx(1 / 9, abs=0.005)


@reads("dryrun_llama_dp2mp2pp2")
def test_a_kernel_graph_and_validate_of_one_compile_give_one_step() -> None:
    # dryrun_llama_dp2mp2pp2: validate (lazy-inline cells called per micro batch, no streams) and the kernel graph
    # (every micro batch inlined, each kernel once, collectives on the streams it prints) are one compile: the
    # same FLOPs per step (test_cost.py) and, played out, the same step within 5 %
    folder = str(FIXTURES / "dryrun_llama_dp2mp2pp2")
    steps = []
    for pass_name in ("validate", "hwopt_d_end_acl_graph_final"):
        code, out, _ = _run("summarize", folder, "--cost", "--pass", pass_name, "--format", "json")
        assert code == 0
        steps.append(json.loads(out)["cost"]["step"]["seconds"])
    assert steps[1] == pytest.approx(steps[0], rel=0.05)


def test_a_units_collective_by_hand() -> None:
    # pipeline_unequal_8p rank 2 (stage 1): F0's one collective is the tensor-parallel AllReduce of validate line 304,
    # `(<Tensor[Float32], (16, 64)>)` = 4,096 bytes over rank_list (2, 3): one node of 8 on 910B, HCCS: 2(n-1) = 2
    # steps of 5 µs + 2(n-1)/n x 4,096 = 4,096 wire bytes at 196 GB/s x 0.7; fc2's output feeds it and only the
    # Send reads it: nothing hides it
    t = _timings("pipeline_unequal_8p", (2,))[0]
    f0 = t.units[("F", 0, None)]
    assert f0.comm == pytest.approx(2 * 5e-6 + 4096 / (196e9 * 0.7))
    assert f0.exposed == pytest.approx(f0.comm)


def test_collectives_hide_under_independent_compute_at_the_profiles_overlap(tmp_path: Path) -> None:
    # the Llama's collectives: some run beside compute that neither feeds them nor reads them (the dependencies
    # allow it), so part of them hides; a profile that lets nothing overlap exposes every second of them
    folder = "mindformers_llama_dp2mp2pp2"
    hides = [t.total() for t in _timings(folder, (0, 4))]
    assert all(u.hideable > 0 and u.exposed == pytest.approx(u.comm - u.hideable) for u in hides)
    none = tmp_path / "no_overlap.toml"
    none.write_text('base = "910b"\n[overlap]\ncollective = 0\n')
    exposed = [t.total() for t in _timings(folder, (0, 4), str(none))]
    assert all(u.exposed == pytest.approx(u.comm) for u in exposed)
    assert [u.comm for u in exposed] == pytest.approx([u.comm for u in hides])


def test_a_misspelt_profile_field_is_an_error_not_ignored(tmp_path: Path) -> None:
    f = tmp_path / "typo.toml"
    f.write_text('base = "h100"\n[network.intra]\nbandwith = 9e11\n')
    with pytest.raises(InputError, match=r"typo.toml:3:1: expected a field of a profile \(bandwidth, efficiency, "
                                         r"latency under network.intra\), found 'bandwith'"):
        load_profile(str(f))
    f.write_text('base = "h100"\n\n[netwrok.inter]\nbandwidth = 9e11\n')
    with pytest.raises(InputError, match=r"typo.toml:3:1: expected a field of a profile \(base, compute, memory, "
                                         r"name, network, overlap\), found 'netwrok'"):
        load_profile(str(f))


def test_a_named_profile_says_whether_each_stage_fits_its_memory() -> None:
    # h100: 80 GiB = 85,899,345,920 bytes, the limit --device-memory would set
    code, out, _ = _run("summarize", UNEQUAL, "--cost", "--hardware", "h100", "--format", "json")
    cost = json.loads(out)["cost"]
    assert cost["device_memory_bytes"] == 85_899_345_920 and all(s["fits"] for s in cost["stages"])
    code, out, _ = _run("summarize", UNEQUAL, "--cost", "--format", "json")  # the default profile is no limit
    assert json.loads(out)["cost"]["device_memory_bytes"] is None


def test_a_pass_that_does_not_fix_the_order_is_not_played() -> None:
    # step_parallel_end has no Depend chain between the micro batches yet (docs/cost.md §4): no step is played, the
    # bubble is the formula's, and the first line says why
    code, out, _ = _run("summarize", UNEQUAL, "--cost", "--pass", "step_parallel_end", "--format", "json")
    cost = json.loads(out)["cost"]
    assert cost["step"]["cannot"].startswith("the dump does not fix the order of stage ")
    assert cost["step"]["seconds"] is None and cost["bubble_how"] == cost["bubble_formula"]
    code, text, _ = _run("summarize", UNEQUAL, "--cost", "--pass", "step_parallel_end")
    assert text.startswith("Step: cannot play the step out: the dump does not fix the order of stage ")


def test_a_ranks_step_trace_takes_its_rank_from_its_path(tmp_path: Path) -> None:
    # MindSpore's per-rank step_trace_time.csv: the cluster file's columns without Type and Index
    folder = tmp_path / "rank_2"
    folder.mkdir()
    f = folder / "step_trace_time.csv"
    f.write_text("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
                 "Communication(Not Overlapped and Exclude Receive),Preparing\n"
                 "1,800.0,150.0,20.0,170.0,10.0,900.0,60.0,90.0,2.0\n3,1000.0,150.0,20.0,170.0,10.0,900.0,60.0,90.0,2.0\n")
    (m,), steps = read_trace(str(f), {0: 0, 2: 1})
    assert (m.stage, steps) == (1, 2) and m.computing == pytest.approx(900e-6)  # rank 2 is stage 1; 2 steps' mean
    assert m.communication == pytest.approx(110e-6) and m.not_overlapped == pytest.approx(90e-6)
    bare = tmp_path / "step_trace_time.csv"
    bare.write_text(f.read_text())
    with pytest.raises(InputError, match="names no rank: keep it under its rank_N folder"):
        read_trace(str(bare), {0: 0})


def test_the_uneven_mindformers_job_is_advised_back_to_even_by_time() -> None:
    # mindformers_llama_pp4_uneven: MindFormers' offset [1, 0, 0, -1] puts layers 0-2 | 3-4 | 5-6 | 7 on the 4 stages
    # (its manifest: `grep ^%paraN_model.layers.K.` of each rank's # Params); stage 0 does three layers and the
    # embedding, stage 3 one layer and the head: the advice by time gives stage 0 a layer less and says the step
    # shortens
    folder = str(FIXTURES / "mindformers_llama_pp4_uneven")
    code, out, _ = _run("summarize", folder, "--cost", "--format", "json")
    cost = json.loads(out)["cost"]
    a = cost["advice"]
    assert a["current"]["layers_per_stage"] == [[0, 1, 2], [3, 4], [5, 6], [7]]
    assert a["advised"]["layer_counts"][0][0] == 2 and a["advised"]["offset"] != [1, 0, 0, -1]
    assert max(a["advised"]["seconds"]) < max(a["current"]["seconds"])
    assert a["advised"]["step_seconds"] < a["current"]["step_seconds"]
    assert cost["sentence"].startswith("stage 0 takes ") and "it holds layers 0-2, stage 3 holds layer 7" in cost["sentence"]
    code, text, _ = _run("summarize", folder, "--cost")
    assert "the step shortens by " in text.splitlines()[3]


@reads("mindformers_llama_pp4")
def test_interleaving_the_same_model_shortens_its_bubble() -> None:
    # mindformers_llama_pp4 and its interleaved compile (the same Llama, 4 stages, 8 micro batches, 2 layers a stage):
    # with 2 chunks the warm-up crosses the stages a chunk at a time
    bubbles = []
    for folder in ("mindformers_llama_pp4", "mindformers_llama_pp4_interleaved"):
        code, out, _ = _run("summarize", str(FIXTURES / folder), "--cost", "--format", "json")
        bubbles.append(json.loads(out)["cost"]["step"]["bubble"])
    assert bubbles[1] < bubbles[0]


def test_orders_that_wait_on_each_other_are_said_never_played() -> None:
    # records, not a dump: stage 1 runs B0 before F0, but its B0 waits for stage 0's B0, which runs after stage 0's
    # F0, which waits for stage 1's F0
    def stage(s: int, rank: int, order: list, hops: list) -> StageTiming:
        return StageTiming(s, rank, "p", order, True, {k: UnitTime(forward=1.0) for k in order}, UnitTime(), hops, 0, 1.0)

    f0, b0 = ("F", 0, None), ("B", 0, None)
    s0 = stage(0, 0, [f0, b0], [TimedHop("receive", 2, 2, f0, 0.0), TimedHop("send", 2, 1, b0, 0.0)])
    s1 = stage(1, 2, [b0, f0], [TimedHop("receive", 0, 1, b0, 0.0), TimedHop("send", 0, 2, f0, 0.0)])
    step = simulate([s0, s1])
    assert step.cannot is not None and step.cannot.startswith("the orders and Send -> Receive pairs wait on each other")
    assert step.seconds == 0.0 and not step.boxes


# --- recompute weighed beside the split (docs/cost.md §3, Recompute) ---------------------------------------

LLAMA = "dryrun_llama_dp2mp2pp2"  # full recompute: stage 0 recomputes layers 0-1, stage 1 layers 2-3; 4 micro batches
LLAMA_OFF = "dryrun_llama_recompute_off"  # the same job compiled with recompute off


def _advice(folder: str, *args: str) -> dict:
    code, out, err = _run("summarize", str(FIXTURES / folder), "--cost", "--format", "json", *args)
    assert code == 0, err
    return json.loads(out)["cost"]["advice"]


def _dry_peak(folder: str, rank: int) -> int:
    """MindSpore's own peak of the dry run (`memory_block.csv`'s largest actual_used_memory, in dryrun.json)."""
    return json.loads((FIXTURES / folder / "dryrun.json").read_text())[str(rank)]["memory_block_csv_max_actual_used_B"]


def test_a_stage_that_fits_stops_recomputing_and_the_step_shortens_by_its_recompute() -> None:
    # 1 GiB: both stages fit with room for every layer's activations, so both stop recomputing all their layers
    a = _advice(LLAMA, "--device-memory", "1GiB")
    assert [(c["stage"], c["off"], c["on"]) for c in a["recompute"]] == [(0, [0, 1], []), (1, [2, 3], [])]
    timings = _timings(LLAMA, (0, 4))
    for c, t in zip(a["recompute"], timings):
        # the recompute seconds saved are the timing model's, per unit: each backward unit's recompute, split by the
        # layer of its operators (what is of no layer, the loss's, stays)
        per_unit = sum(u.recompute for u in t.units.values())
        mine = [t.layer_recompute[i] for i in c["off"]]
        assert sum(mine) + t.layer_recompute.get(None, 0.0) == pytest.approx(per_unit)
        assert c["seconds"] == pytest.approx(-sum(mine)) and sum(mine) > 0.9 * per_unit
    # the step by hand: 1F1B over 2 stages and 4 micro batches, T = (t0 + t1 + 3 max(t)) per micro batch
    t = [x.total().seconds + c["seconds"] for x, c in zip(timings, a["recompute"])]
    assert a["recompute_step_seconds"] == pytest.approx((sum(t) + 3 * max(t)) / 4)
    assert a["recompute_step_seconds"] < a["advised"]["step_seconds"]
    # held against the compiler: the same job compiled with recompute off peaks (MindSpore's dry run) within 1 % of
    # the peak estimated for it from the recompute-on compile (stage 0: 2 micro batches in flight, stage 1: 1)
    for c, rank in zip(a["recompute"], (0, 4)):
        assert c["peak_bytes_before"] == a["advised"]["memory_bytes"][c["stage"]]
        assert c["peak_bytes_after"] == pytest.approx(_dry_peak(LLAMA_OFF, rank), rel=0.01)
    assert "  recompute: False" in a["mindformers_yaml"]
    code, text, _ = _run("summarize", str(FIXTURES / LLAMA), "--cost", "--device-memory", "1GiB")
    shorter = 1 - a["recompute_step_seconds"] / a["advised"]["step_seconds"]
    line = text.splitlines()[3]
    assert "; recompute: stage 0 stops recomputing layers 0-1 (peak " in line
    assert "stage 1 stops recomputing layers 2-3" in line
    assert f"({shorter:.1%} shorter), each such stage fitting in 1.00 GiB" in line
    assert "# recompute: stage 0 stops recomputing layers 0-1" in text


def test_recompute_is_turned_off_only_as_far_as_the_memory_fits() -> None:
    # 100 MiB: stage 1 (1 micro batch in flight) still fits without recompute; stage 0 holds 2 micro batches: both its
    # layers off would need about the recompute-off compile's peak, 112,636,416 B (its dry run), over 100 MiB, so one
    # layer stays recomputed (the first, as MindFormers' list form says it)
    limit = 100 * 2**20
    a = _advice(LLAMA, "--device-memory", "100MiB")
    assert [(c["stage"], c["off"]) for c in a["recompute"]] == [(0, [1]), (1, [2, 3])]
    assert _dry_peak(LLAMA_OFF, 0) > limit
    assert all(c["peak_bytes_after"] * 1.03 <= limit for c in a["recompute"])  # with the peak's margin (3 %, validate)
    assert "  recompute: [1, 0]" in a["mindformers_yaml"]


def test_just_below_the_peak_recompute_stays() -> None:
    # stage 0's peak less one byte: it does not fit already, recomputes every layer and cannot recompute more; stage 1
    # fits, with no room for any layer's activations: no change, recompute stays on every layer
    peak = _advice(LLAMA, "--device-memory", "1GiB")["recompute"][0]["peak_bytes_before"]
    a = _advice(LLAMA, "--device-memory", str(peak - 1))
    assert a["recompute"] == [] and a["recompute_step_seconds"] is None and a["recompute_not_weighed"] is None
    assert "  recompute: True" in a["mindformers_yaml"]
    code, text, _ = _run("summarize", str(FIXTURES / LLAMA), "--cost", "--device-memory", str(peak - 1))
    assert "recompute:" not in text.splitlines()[3]


def test_a_stage_that_does_not_fit_recomputes_until_it_fits() -> None:
    # the recompute-off compile in 100 MiB: stage 0 (its dry run: 112,636,416 B) does not fit; recomputing layer 0
    # drops its activations for both micro batches in flight, plus one micro batch of its recomputed copies while its
    # backward runs: it fits, and the step grows by layer 0's forward, run once more in each backward
    a = _advice(LLAMA_OFF, "--device-memory", "100MiB")
    assert [(c["stage"], c["off"], c["on"]) for c in a["recompute"]] == [(0, [], [0])]
    (c,) = a["recompute"]
    assert c["peak_bytes_before"] > 100 * 2**20 >= c["peak_bytes_after"] * 1.03
    t = _timings(LLAMA_OFF, (0, 4))[0]
    assert c["seconds"] == pytest.approx(t.layer_forward[0]) and a["recompute_step_seconds"] > a["advised"]["step_seconds"]
    # recomputing both layers is what the recompute-on compile does: its dry run peaks below the estimate for one
    assert _dry_peak(LLAMA, 0) < c["peak_bytes_after"]
    assert "  recompute: [1, 0]" in a["mindformers_yaml"]


def test_without_a_device_memory_recompute_is_not_weighed() -> None:
    a = _advice(LLAMA)  # the default profile sets no limit
    assert a["recompute"] == [] and a["recompute_not_weighed"].startswith("no device memory to fit")
    a = _advice(LLAMA, "--hardware", "none", "--device-memory", "1GiB")
    assert a["recompute"] == [] and a["recompute_not_weighed"].startswith("not timed")
    # an interleaved job gets no advised split (a split per chunk is not searched): nor a recompute change
    a = _advice("mindformers_llama_pp4_interleaved", "--device-memory", "1GiB")
    assert a["advised"] is None and a["recompute"] == [] and a["recompute_not_weighed"] == "no advised split"
