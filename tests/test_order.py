"""Each stage's execution order from its compute dependencies (irtool/parallel/order.py, docs/cost.md §4).

Every expected order below was worked out by hand from the dump text: the lines named are `xzcat FILE | sed -n Np`,
and each step of a chain is a `%N` the next line reads. MindSpore prints a stage's Send/Receive in another order
than its work runs (on stage 0 the Receive of B0 comes before the Send of F3), so an order taken from Send/Receive
is wrong; and a dump printed in another order (`test_order_is_not_the_print_order`) must give the same order."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, fixture

import irtool
from irtool.cli import main
from irtool.parallel import analyze
from irtool.parallel.order import classify, stage_order

P4 = "pipeline_4stage_8p/rank_0/19_validate_0078.ir.xz"


def _order(rel: str):
    return stage_order(analyze(irtool.load(fixture(rel))).table)


def _line(rel: str, n: int) -> str:
    import lzma

    with lzma.open(fixture(rel), "rt") as fh:
        for i, text in enumerate(fh, 1):
            if i == n:
                return text
    raise AssertionError(n)


def test_four_stage_1f1b_stage_0_runs_f3_before_b0() -> None:
    # pipeline_4stage_8p rank_0 validate, 8 micro batches. The Receive of B0 (line 1766, `%148(dx) = Receive(%147)`,
    # sr_tag 0, micro 0) reads `%147 = Depend(Tensor(...), %145)` (line 1763), and %145 (line 1729) is the last Add
    # (`res`) of micro 3's forward; B0's first MatMul (line 1788, micro 0) reads %152 = AllReduce(%151), %151 =
    # Depend(%148, %150). So F3 runs before B0, although the Send of F3 (line 1775) is printed after that Receive.
    # B0's last node %170 (line 2045) feeds %171 = Depend(%170, %150) -> %172 = Depend(%para1_x, %171) -> line 2054
    # `%173 = StridedSlice(%172, ...)`, micro 4's input slice: F4 after B0. Then 1F1B: B_k, F_k+4.
    assert "%145" in _line(P4, 1729) and "micro: I64(3)" in _line(P4, 1729)
    assert "%147(ValueNode_3322) = Depend(Tensor(shape=[], dtype=Float32, value=0), %145)" in _line(P4, 1763)
    assert "= Receive(%147)" in _line(P4, 1766) and "sr_tag: I64(0)" in _line(P4, 1766)
    assert "= Send(%149)" in _line(P4, 1775) and "sr_tag: I64(3)" in _line(P4, 1775)
    assert "StridedSlice(%172," in _line(P4, 2054) and "micro: I64(4)" in _line(P4, 2054)
    o = _order(P4)
    assert o.fixed and o.chunks == []
    assert " ".join(o.work) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7"  # not `F0 F1 F2 B0 F3 ...`
    assert o.warmup == 4 and o.schedule == "1F1B: 4 forward warm-up, then one backward per forward"
    assert o.in_flight == 4  # F0-F3 begun before B0 finishes one: 4, not 3
    # the stage's Send/Receive follow their units, but never before what they read: F3's Send (line 1775,
    # `Send(%149)`) reads `%149 = Depend(%146, %148)` (line 1772), %148 the Receive of B0 (line 1766): B0's gradient
    # is received before F3's output is sent (1F1B's send-forward-receive-backward), though F3 runs before B0
    assert "%149(ValueNode_3323) = Depend(%146, %148)" in _line(P4, 1772)
    hops = [(c.op, c.phase, c.micro, c.line) for c in o.hops]
    assert hops.index(("Receive", "backward", 0, 1766)) < hops.index(("Send", "forward", 3, 1775))


@pytest.mark.parametrize(("rank", "work", "in_flight"), [
    # the same chains one micro batch later per stage: stage s runs 4 - s forward before its first backward
    (2, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7", 3),
    (4, "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7", 2),
    (6, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7", 1)])
def test_four_stage_1f1b_later_stages(rank: int, work: str, in_flight: int) -> None:
    o = _order(f"pipeline_4stage_8p/rank_{rank}/19_validate_0078.ir.xz")
    assert o.fixed and " ".join(o.work) == work and o.in_flight == in_flight
    assert o.schedule.startswith(f"1F1B: {in_flight} forward warm-up")


UT = "ut_pipeline_split_32p/rank_16/19_validate_0078.ir.xz"


def test_the_order_follows_data_flow_where_a_printed_micro_contradicts_it() -> None:
    # MindSpore's own unit test (test_pipeline_split.py, stage 1 of 2, 4 micro batches). Each forward Receive k reads
    # the backward Send of micro k - 1: line 327 `%18 = Receive(%17)` (sr_tag 1), line 324 `%17 = Depend(%para3_..,
    # %16)`, line 318 `%16 = Send(%15)` (micro 0); the same at 459 <- 456 <- 450 and 591 <- 588 <- 582: F0 B0 F1 B1 ...
    # PipelineCell adds each micro batch's output to the sum through a redistribution StridedSlice that prints
    # `micro: I64(0)`: line 634 `%53 = StridedSlice(%52, ..)` where line 617 `%52 = MatMul(..)` prints `micro: I64(3)`,
    # then line 637 `%54 = Add(%40, %53)` (`pipeline_end: I64(3)`, `micro: I64(0)`). Trusting the printed 0 put the
    # slice in F0 after F3's MatMul: "F0 and F3 each depend on the other", the order not fixed.
    assert "%18(equiv_46_CNode_827) = Receive(%17)" in _line(UT, 327) and "sr_tag: I64(1)" in _line(UT, 327)
    assert "%17(ValueNode_884) = Depend(%para3_cell.block.1.param, %16)" in _line(UT, 324)
    assert "%16(send_out) = Send(%15)" in _line(UT, 318) and "micro: I64(0)" in _line(UT, 318)
    assert "= Receive(%32)" in _line(UT, 459) and "Depend(%para3_cell.block.1.param, %31)" in _line(UT, 456)
    assert "%31(send_out) = Send(%30)" in _line(UT, 450)
    assert "= Receive(%47)" in _line(UT, 591) and "Depend(%para3_cell.block.1.param, %46)" in _line(UT, 588)
    assert "%46(send_out) = Send(%45)" in _line(UT, 582)
    slice_, matmul, add = _line(UT, 634), _line(UT, 617), _line(UT, 637)
    assert "%53(equiv_17_CNode_867) = PrimFunc_StridedSlice(%52," in slice_ and "micro: I64(0)" in slice_
    assert "%52(equiv_9_out) = PrimFunc_MatMul(" in matmul and "micro: I64(3)" in matmul
    assert "= PrimFunc_Add(%40, %53)" in add and "pipeline_end: I64(3)" in add and "micro: I64(0)" in add
    o = _order(UT)
    assert o.fixed and " ".join(o.work) == "F0 B0 F1 B1 F2 B2 F3 B3" and o.in_flight == 1
    assert o.schedule == "1F1B: 1 forward warm-up, then one backward per forward"
    t = analyze(irtool.load(fixture(UT))).table
    at = {n.line: n for n in t.dump.nodes()}
    # the slice runs for the micro batch it reads; the Add ending micro 3 (it reads micro 3's slice and the sum of
    # micro 0-2 through line 522's Add ending micro 2) for micro 3; the sens slice of line 262
    # (`StridedSliceGrad(Tensor(..))`, printed once, `micro: I64(0)`, read by every micro batch's backward) reads no
    # micro batch's work: its print stands, and it tells its readers nothing (line 401's Depend prints micro 1)
    assert "StridedSliceGrad(Tensor(shape=[8, 64]" in _line(UT, 262) and "micro: I64(1)" in _line(UT, 401)
    assert [t("micro", at[n]) for n in (634, 637, 262, 401)] == [3, 3, 0, 1]


SHARED = "ut_pipeline_split_shared_32p/rank_16/19_validate_0078.ir.xz"


def test_a_shared_parameter_hop_serves_every_micro_batch() -> None:
    # the same unit test with a parameter both stages share (test_pipeline_split_shared_parameter_stage1): line 57
    # `%0 = Receive(%para3_cell.block.0.param)` prints `pipeline_param: I64(0)` and `micro: I64(0)`: stage 0 sends the
    # parameter once, and every micro batch's backward MatMul reads it (line 418 `%30 = PrimFunc_MatMul(%29, %0, ..)`,
    # %29 micro 1's dx, line 412). Taken for micro 0's work it put B1-B3's MatMuls in B0 ("B3 and B0 each depend on
    # the other"). The activations still fix F0 B0 F1 B1 ...: line 317 `%19 = Receive(%18)`, line 314 `%18 =
    # Depend(%para4_cell.block.1.param1, %17)`, line 308 `%17 = Send(%16)` (micro 0).
    first = _line(SHARED, 57)
    assert "= Receive(%para3_cell.block.0.param)" in first and "pipeline_param: I64(0)" in first
    assert "micro: I64(0)" in first
    assert "%30(CNode_887) = PrimFunc_MatMul(%29, %0," in _line(SHARED, 418) and "%29(dx) = " in _line(SHARED, 412)
    assert "micro: I64(1)" in _line(SHARED, 412)
    assert "%19(equiv_44_CNode_828) = Receive(%18)" in _line(SHARED, 317)
    assert "%18(ValueNode_883) = Depend(%para4_cell.block.1.param1, %17)" in _line(SHARED, 314)
    assert "%17(send_out) = Send(%16)" in _line(SHARED, 308) and "micro: I64(0)" in _line(SHARED, 308)
    t = analyze(irtool.load(fixture(SHARED))).table
    at = {n.line: n for n in t.dump.nodes()}
    assert [t("micro", at[n]) for n in (57, 412, 418)] == [0, 1, 1]
    o = stage_order(t)
    assert o.fixed and " ".join(o.work) == "F0 B0 F1 B1 F2 B2 F3 B3" and o.in_flight == 1


def test_order_is_not_the_print_order(tmp_path: Path) -> None:
    # The point of this test is to detect one change: pipeline_4stage_8p rank_0 validate with the block of lines
    # 1766-2050 (the Receive of B0 and micro 0's backward, up to `%171`) printed before lines 1464-1765 (micro 3's
    # forward, from its input slice `%119` on line 1464). Nothing else changes: every node reads the same inputs, so
    # the dependencies still say F3 before B0, while B0's first line is now printed before F3's. Ordered by printing,
    # the order would read `F0 F1 F2 B0 F3 F4 ...`.
    import lzma

    lines = lzma.open(fixture(P4), "rt").read().split("\n")
    assert lines[1463].startswith("  %119(") and "micro: I64(3)" in lines[1463]
    assert lines[1765].startswith("  %148(dx) = Receive(%147)") and lines[2050].startswith("  %172(")
    moved = lines[:1463] + lines[1765:2050] + lines[1463:1765] + lines[2050:]
    path = tmp_path / "rank_0" / "19_validate_0078.ir"
    path.parent.mkdir()
    path.write_text("\n".join(moved))
    dump = irtool.load(str(path))
    assert not irtool.check(dump)  # still a well-formed dump: every reference resolves
    o = stage_order(analyze(dump).table)
    first = {u.label: u.line for u in o.units}
    assert first["B0"] < first["F3"]  # printed first ...
    assert " ".join(o.work) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7"  # ... run second
    assert o.in_flight == 4


def test_two_stage_lazy_inline_forward_call_of_micro_1_before_b0() -> None:
    # gpt_small_dp2mp2pp2_lazyinline rank_0 validate, main graph: the forward call of micro 1 (line 6405, `%9 = call
    # @..GPT_construct(%7, ...)`) -> line 6414 `%12 = Depend(Tensor(...), %9)` -> line 6417 `%13(dx) = Receive(%12)`
    # (the backward of micro 0, sr_tag 0) -> line 6441 `%20 = Depend(%13, %9)` -> `%21` -> line 6447, B0's bprop call
    # `%22 = %19[@Partial(...)](%21, UMonad)` (`micro: I64(0)`, `is_bp: Bool(1)`). The Send of F1 (line 6429) comes
    # after that Receive: by Send/Receive the order would be `F0 B0 F1 B1`.
    rel = "gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz"
    assert "%13(dx) = Receive(%12)" in _line(rel, 6417) and "is_bp: Bool(1)" in _line(rel, 6447)
    o = _order(rel)
    assert o.fixed and o.work == ["F0", "F1", "B0", "B1"] and o.in_flight == 2
    assert o.schedule.startswith("every forward before any backward")  # 2 micro batches: 1F1B's warm-up is both
    # the first node of each: the micro batch's input slice (lines 6360, 6393: `micro_input = StridedSlice`), B0's call
    assert [u.line for u in o.units[:3]] == [6360, 6393, 6447]
    assert _order("gpt_small_dp2mp2pp2_lazyinline/rank_4/19_validate_0089.ir.xz").work == ["F0", "B0", "F1", "B1"]


def test_mindformers_llama_by_its_depend_edges() -> None:
    # mindformers_llama_dp2mp2pp2 rank_0 validate, main graph (MindFormers' lazy_inline calls): F0's call %34 (line
    # 239) -> %36 = Depend(.., %34) (245) -> %41 (260) -> F1's call %43 (277) -> %44 (280) -> Receive %45 (283) ->
    # %46 (289) -> %52 (307) -> B0's bprop call %53 (310, micro 0) -> %56 (319) -> F2's call %58 (336) -> Receive %60
    # (342) -> B1 %68 (369) -> %71 (378) -> F3 %73 (395) -> Receive %75 (401) -> B2 %83 (428) -> Receive %87 (440)
    # -> B3 %89 (449). Printed Send/Receive: Send 257 (F0), Receive 283 (B0), Send 304 (F1): `F0 B0 F1 B1 ...`.
    rel = "mindformers_llama_dp2mp2pp2/rank_0/19_validate_0089.ir.xz"
    assert "= call @" in _line(rel, 277) and "(%41, " in _line(rel, 277)
    assert "%45(dx) = Receive(%44)" in _line(rel, 283) and "micro: I64(0)" in _line(rel, 310)
    o = _order(rel)
    assert o.fixed and " ".join(o.work) == "F0 F1 B0 F2 B1 F3 B2 B3"
    assert o.schedule == "1F1B: 2 forward warm-up, then one backward per forward" and o.in_flight == 2
    o = _order("mindformers_llama_dp2mp2pp2/rank_4/19_validate_0089.ir.xz")
    assert " ".join(o.work) == "F0 B0 F1 B1 F2 B2 F3 B3" and o.in_flight == 1


def test_interleaved_stage_0() -> None:
    # pipeline_interleaved_4stage_8p rank_0 validate (4 stages x 2 chunks, 8 micro batches). Calls of chunk 0 print
    # `micro`/`chunk` (line 684: `%61 = call ..Net_construct_3417(..)` micro 6 chunk 0); a backward call prints none:
    # line 705 `%67 = %64[@Partial(@..◂..Net_construct_3369)](%66, UMonad)` calls the bprop closure `%64 =
    # TupleGetItem(%25, I64(1))` (line 693) of `%25`, the forward call of micro 0 on chunk 1 (line 549): B0.c1. It
    # reads `%66(dx) = Receive(%65)` (line 699), `%65 = Depend(Tensor, %61)`: after F6.c0. Then `%68 = Depend(%63,
    # %67)` -> Send %69 -> `%70 = Depend(w2, %69)` -> line 729 `%72 = call ..(%70, ..)`, micro 7 chunk 0: F7.c0.
    rel = "pipeline_interleaved_4stage_8p/rank_0/19_validate_0087.ir.xz"
    assert "%64 = " not in _line(rel, 705) and "= %64[@Partial(" in _line(rel, 705)
    assert "TupleGetItem(%25, I64(1))" in _line(rel, 693) and "micro: I64(0), chunk: I64(1)" in _line(rel, 549)
    assert "(%70, " in _line(rel, 729) and "micro: I64(7), chunk: I64(0)" in _line(rel, 729)
    o = _order(rel)
    assert o.fixed and o.chunks == [0, 1]
    assert " ".join(o.work[:13]) == "F0.c0 F1.c0 F2.c0 F3.c0 F0.c1 F1.c1 F2.c1 F3.c1 F4.c0 F5.c0 F6.c0 B0.c1 F7.c0"
    assert o.warmup == 11 and o.schedule.startswith("interleaved 1F1B, 2 chunks: 11 forward warm-up")
    # 11 units of half a micro batch's activations each (a chunk holds half the stage's layers) at the peak, before
    # B0.c1: F0-F6 begun on chunk 0, F0-F3 on chunk 1. Said as whole micro batches per chunk, never "5.5"
    assert o.in_flight_units == 11 and o.in_flight == 5.5 and o.in_flight_by_chunk == [(0, 7), (1, 4)]
    assert o.units[11].line == 705  # the backward call places B0.c1
    text = CliRunner().invoke(main, ["summarize", "--cost", str(FIXTURES / rel)]).stdout
    assert "  micro batches in flight: 7 on chunk 0, 4 on chunk 1 (the most micro batches begun" in text
    assert "activations times micro batches in flight: 7 on chunk 0, 4 on chunk 1 *" in text
    assert "5.5" not in text
    # the rank alone still says its job's size: line 459 Sends to rank 2 on stage 1 (2 ranks per stage), line 546 is a
    # forward Receive into chunk 1 from rank 6 (`src_global_rank: I64(6)`): nothing is upstream of stage 0 but the
    # last stage, 6 / 2 = stage 3, so 4 stages of 2 ranks, world 8; never "one stage" (issue 37: world and pp `—`)
    assert "dst_global_rank: I64(2)" in _line(rel, 459) and "src_global_rank: I64(6)" in _line(rel, 546)
    assert "Job: world 8, dp 1 x mp 2 x pp 4, 2 chunks per stage, 8 micro batches" in text


def test_folded_pipeline_runs_every_forward_first() -> None:
    # pipeline_folded_8p rank_0 (2 stages x 2 segments, 4 micro batches): segment 0's forwards, then segment 1's,
    # then the backwards from the last segment back
    o = _order("pipeline_folded_8p/rank_0/19_validate_0078.ir.xz")
    assert o.fixed and o.chunks == [0, 1]
    # its Sends print `segment`, no `chunk` (make.py: pipeline_segments=2): segments, not interleaved chunks, so its
    # units are labelled by segment (`F0.s1`: micro batch 0's forward on segment 1)
    assert " ".join(o.work) == ("F0.s0 F1.s0 F2.s0 F3.s0 F0.s1 F1.s1 F2.s1 F3.s1 "
                                "B0.s1 B1.s1 B2.s1 B3.s1 B0.s0 B1.s0 B2.s0 B3.s0")
    assert o.schedule.startswith("every forward before any backward, 2 segments") and o.in_flight == 4


def test_inference_stage_1_is_not_ordered() -> None:
    # inference_pp_4p_m2 rank_2 validate, stage 1: `%1 = call @..Network_construct(.., %0)` (line 215, micro 0) and
    # `%4 = call ..(.., %3)` (line 224, micro 1); %3 = Receive(%2), %2 = Depend(Tensor, %0): the second Receive waits
    # for the first Receive, not for the call of micro 0, and `%8 = UpdateState(%7, %4)`, `%7 = UpdateState(U, %1)`
    # only join them. The Concat of line 233 joins both calls (through `%5 = MakeTuple(%1, %4)`) though it prints
    # `micro: I64(0)`: it runs for no single micro batch.
    rel = "inference_pp_4p_m2/rank_2/19_validate_0082.ir.xz"
    assert "micro: I64(0)" in _line(rel, 233) and "PrimFunc_Concat(%5" in _line(rel, 233)
    o = _order(rel)
    assert not o.fixed and o.in_flight is None
    assert o.schedule == "this pass does not fix the order (no data, Depend or UpdateState path orders F0 and F1)"
    assert [u.nodes for u in o.units] == [1, 1]  # the two calls, not the Concat
    o = _order("inference_pp_4p_m2/rank_0/19_validate_0082.ir.xz")  # stage 0 sends micro 1 after micro 0
    assert o.fixed and o.work == ["F0", "F1"] and o.schedule == "forward only (no backward: inference)"
    assert o.in_flight is None  # nothing is kept for a backward


def test_inference_last_stage_joins_through_collectives_are_no_micro_batch() -> None:
    # inference_pp_8p_m4 rank_4 validate, stage 1 of 2, 4 micro batches: the calls of lines 215, 227, 239, 251
    # (micro 0-3), each read by a redistribution AllGather (`%2 = AllGather(%1)` line 218, %6 <- %5 line 230, %10 <-
    # %9 line 242, %14 <- %13 line 254), all four packed by line 257 `%15(ret) = MakeTuple(%2, %6, %10, %14)` and
    # joined by line 263 `%16 = PrimFunc_Concat(%15, I64(0))`, which prints `micro: I64(0)`. Each Receive reads the
    # one before it only through a Depend on it (line 224 `Receive(%3)`, %3 = Depend(Tensor, %0 the first Receive)):
    # nothing orders the calls. Taking the Concat for micro 0 (the AllGathers hid the join) made a path from each
    # later call into "F0" and the order F1 F2 F3 F0; the direction of that path is what such an order would follow.
    rel = "inference_pp_8p_m4/rank_4/19_validate_0082.ir.xz"
    assert "%15(ret) = MakeTuple(%2, %6, %10, %14)" in _line(rel, 257)
    assert "%16(CNode_463) = PrimFunc_Concat(%15, I64(0))" in _line(rel, 263) and "micro: I64(0)" in _line(rel, 263)
    assert all(f"= AllGather(%{k})" in _line(rel, n) for k, n in ((1, 218), (5, 230), (9, 242), (13, 254)))
    assert "= Receive(%3)" in _line(rel, 224)
    t = analyze(irtool.load(fixture(rel))).table
    concat = next(n for n in t.dump.nodes() if n.line == 263)
    assert t("micro", concat) is None
    o = stage_order(t)
    assert [(u.label, u.nodes, u.line) for u in o.units] == [("F0", 1, 215), ("F1", 1, 227), ("F2", 1, 239),
                                                             ("F3", 1, 251)]
    assert not o.fixed and o.why == "no data, Depend or UpdateState path orders F0 and F1" and o.in_flight is None
    # stage 0 (rank 0) is ordered, one way: line 244 `%9 = call ..(.., %2, %8)` (micro 1) reads line 241 `%8 =
    # UpdateState(UMonad[U], %7)`, %7 the call of micro 0 (line 238); %11 (line 250, micro 2) reads %10 =
    # UpdateState(%8, %9) (247), %13 (256, micro 3) reads %12 = UpdateState(%10, %11) (253): F0 F1 F2 F3, not F3 F2 F1 F0
    rel0 = "inference_pp_8p_m4/rank_0/19_validate_0082.ir.xz"
    assert _line(rel0, 244).rstrip().endswith("%2, %8) cnode_primal_attrs: {micro: I64(1)}")
    assert "%8(ValueNode_454) = UpdateState(UMonad[U], %7)" in _line(rel0, 241)
    assert "%7(CNode_452) = call" in _line(rel0, 238) and "micro: I64(0)" in _line(rel0, 238)
    assert "%10(ValueNode_456) = UpdateState(%8, %9)" in _line(rel0, 247) and "%4, %10)" in _line(rel0, 250)
    assert "%12(ValueNode_458) = UpdateState(%10, %11)" in _line(rel0, 253) and "%6, %12)" in _line(rel0, 256)
    o = _order(rel0)
    # each unit: its slice of the batch (lines 193, 205, 217, 229: `%0 = StridedSlice(%para1_x, (I64(0)), (I64(4))`, ...)
    # and its call (lines 238, 244, 250, 256)
    assert o.fixed and o.work == ["F0", "F1", "F2", "F3"]
    assert [(u.nodes, u.line) for u in o.units] == [(2, 193), (2, 205), (2, 217), (2, 229)]


def test_step_parallel_end_does_not_fix_the_order() -> None:
    o = _order("pipeline_4stage_8p/rank_0/step_parallel_end_0019.ir.xz")
    assert not o.fixed and o.schedule.startswith("this pass does not fix the order") and o.warmup is None
    assert _order("semi_auto_8p/rank_0/19_validate_0078.ir.xz").units == []


@pytest.mark.parametrize(("phases", "chunks", "name", "warmup"), [
    ("FFFF", [], "forward only (no backward: inference)", None),
    ("FFBB", [], "every forward before any backward: GPipe, or 1F1B whose warm-up covers all 2 forward", 2),
    ("FFBFBB", [], "1F1B: 2 forward warm-up, then one backward per forward", 2),
    ("FBBF", [], "other order (neither GPipe nor 1F1B)", 1),
    ("FFFBFBBB", [0, 1], "interleaved 1F1B, 2 chunks: 3 forward warm-up, then one backward per forward", 3)])
def test_schedule_names(phases: str, chunks: list[int], name: str, warmup: int | None) -> None:
    assert classify(list(phases), chunks) == (name, warmup)


def test_memory_in_flight_is_the_order_s(tmp_path: Path) -> None:
    # summarize --cost of pipeline_4stage_8p: stage 0 holds the activations of 4 micro batches (F0-F3 begun before
    # B0), the number of its order above, not 3
    r = CliRunner().invoke(main, ["summarize", str(FIXTURES / "pipeline_4stage_8p"), "--cost", "--format", "json"])
    assert r.exit_code == 0, r.output
    cost = json.loads(r.stdout)["cost"]
    stages = {s["stage"]: s for s in cost["stages"]}
    assert [stages[s]["schedule"]["in_flight"] for s in range(4)] == [4, 3, 2, 1]
    assert [cost["memory"][str(s)]["micro_batches_in_flight"] for s in range(4)] == [4, 3, 2, 1]
    assert stages[0]["schedule"]["order"][:5] == ["F0", "F1", "F2", "F3", "B0"]


P3 = "pipeline_3stage_24p_m5"


def test_three_stages_five_micro_batches_1f1b() -> None:
    # pipeline_3stage_24p_m5 (3 stages, 5 micro batches, 24 devices, no count a multiple of another), validate.
    # rank 0: line 1958 `%165 = PrimFunc_Add(%150, %164) {instance name: res}` (micro 2: layer 2's last Add) ->
    # line 2002 `%169 = Depend(Tensor(...), %165)` -> line 2005 `%170(dx) = Receive(%169)` (sr_tag 0: B0's gradient
    # from rank 8). The Send of F2 (line 2014, `Send(%171)`, `%171 = Depend(%168, %170)`) is printed after it.
    # rank 8: line 973 `%42 = PrimFunc_Add(%35, %41) {instance name: res}` (micro 1) -> line 1007 `%44 = Depend(
    # Tensor(...), %42)` -> line 1010 `%45(dx) = Receive(%44)` (sr_tag 0 from rank 16): B0 after F1.
    r0, r8 = f"{P3}/rank_0/19_validate_0078.ir.xz", f"{P3}/rank_8/19_validate_0078.ir.xz"
    assert "%165(" in _line(r0, 1958) and "{instance name: res}" in _line(r0, 1958) and "micro: I64(2)" in _line(r0, 1958)
    assert "= Depend(Tensor(shape=[], dtype=Float32, value=0), %165)" in _line(r0, 2002)
    assert "%170(dx) = Receive(%169)" in _line(r0, 2005) and "sr_tag: I64(0)" in _line(r0, 2005)
    assert "= Send(%171)" in _line(r0, 2014)
    assert "%42(" in _line(r8, 973) and "micro: I64(1)" in _line(r8, 973)
    assert "%45(dx) = Receive(%44)" in _line(r8, 1010) and "src_rank: I64(16)" in _line(r8, 1010)
    orders = {rank: _order(f"{P3}/rank_{rank}/19_validate_0078.ir.xz") for rank in (0, 8, 16)}
    assert " ".join(orders[0].work) == "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4"  # by Send/Receive: F0 F1 B0 F2 ...
    assert " ".join(orders[8].work) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 B4"
    assert " ".join(orders[16].work) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4"
    assert [orders[r].in_flight for r in (0, 8, 16)] == [3, 2, 1]


def test_three_stages_job_from_the_dump() -> None:
    # make.py: dp 4 x mp 2 x pp 3 on 24 devices, micro_size 5, layers 0-2 / 3-4 / 5-6, nn.SGD. From the text: every
    # Send/Receive is on `nccl_world_group` with `group_rank_ids: (0, 1, ..., 23)` (24 ranks); rank 0's tensor-parallel
    # AllReduces on `(0, 1)`, its gradient reductions on `(0, 2, 4, 6)`; `micro: I64(4)` the largest micro on each
    # rank; header parameters `layers.0-2.*` on rank 0, `layers.3-4.*` on rank 8, `layers.5-6.*` on rank 16; rank 0
    # sends to `dest_rank: I64(8)` (5 Sends), rank 8 to 16 and back to 0: 10 pairs per stage boundary.
    r = CliRunner().invoke(main, ["summarize", str(FIXTURES / P3), "--format", "json"])
    assert r.exit_code == 0, r.output
    job = json.loads(r.stdout)["job"]
    assert [job[k]["value"] for k in ("world_size", "dp", "mp", "pipeline_stages", "micro_batches")] == [24, 4, 2, 3, 5]
    assert job["stage_layers"] == {"0": [0, 1, 2], "1": [3, 4], "2": [5, 6]}
    assert job["stage_ranks"] == {"0": [0], "1": [8], "2": [16]}
    c = json.loads(CliRunner().invoke(main, ["check", str(FIXTURES / P3), "--format", "json"]).stdout)
    assert c["coverage"]["pairs"] == {"compared": 20, "present": 20}


def test_ranks_per_stage_from_a_pipeline_peer_not_the_largest_group() -> None:
    # inference_pp_8p_m4 (make.py: 8 devices, 2 stages, MatMuls sharded ((DP, 1), (1, MP)) with DP = MP = 2), rank 0
    # read alone: an inference stage has no gradient reduction, so its largest group is the tensor-parallel (0, 1);
    # line 259 `Send(%7) {...} primitive_attrs: {..., dest_rank: I64(4), group: "nccl_world_group", group_rank_ids:
    # (0, 1, 2, 3, 4, 5, 6, 7), ...}`: MindSpore numbers ranks stage by stage, so a stage holds 4 - 0 = 4 ranks, and 8 /
    # 4 = 2 stages (the largest group read 8 / 2 = 4 stages, dp 1).
    path = str(FIXTURES / "inference_pp_8p_m4/rank_0/19_validate_0082.ir.xz")
    r = analyze(irtool.load(path), 0).job
    assert max(r.stage_sizes) == 2 and r.span.value == 4 and r.span.where.endswith(":259 (Send with rank 4 on stage 1)")
    out = CliRunner().invoke(main, ["summarize", path, "--format", "json"])
    job = json.loads(out.stdout)["job"]
    assert [job[k]["value"] for k in ("world_size", "pipeline_stages", "dp", "mp")] == [8, 2, 2, 2]


@pytest.mark.parametrize(("folder", "line", "world"), [
    # make.py device_num 4, pipeline_stages 2: rank 0 line 1021 `Send(%8) {...} primitive_attrs: {...,
    # dst_global_rank: I64(2), ...}`: 2 ranks per stage x 2 stages; no node names the world group
    ("dynamic_shape_pp_4p", 1021, 4),
    # device_num 8, pipeline_stages 4 (2 chunks each): rank 0 line 459 `Send(%3)` with `dst_global_rank: I64(2)`
    ("pipeline_interleaved_4stage_8p", 459, 8),
])
def test_world_from_ranks_per_stage_when_no_node_names_the_world_group(folder: str, line: int, world: int) -> None:
    r = CliRunner().invoke(main, ["summarize", str(FIXTURES / folder), "--format", "json"])
    assert r.exit_code == 0, r.output
    job = json.loads(r.stdout)["job"]
    assert job["world_size"]["value"] == world
    assert f"rank_0/19_validate_0087.ir.xz:{line} (Send with rank 2 on stage 1)" in job["world_size"]["evidence"]


def test_a_send_is_placed_after_the_receive_it_depends_on() -> None:
    # pipeline_unequal_8p rank 2 (stage 1 of 4, order F0 F1 F2 B0 F3 B1 B2 B3): line 671 `%40(dx) = Receive(%39)` (the
    # gradient of micro 0 from rank 4, scope Gradients/.../Grad_Send), line 677 `%41 = Depend(%38, %40)`, line 680
    # `%42 = Send(%41) {...} primitive_attrs: {..., dest_rank: I64(4), ...}` (micro 2's forward output): the forward
    # Send of F2 waits for the backward Receive of B0, so the stage receives B0's gradient before it sends F2's output
    # (in unit order alone, F2's Send came first: a wait the graph does not have). The same at 982 -> 991 for F3.
    rel = "pipeline_unequal_8p/rank_2/19_validate_0078.ir.xz"
    text = _line(rel, 680) + _line(rel, 677) + _line(rel, 671)
    assert "= Send(%41)" in text and "= Depend(%38, %40)" in text and "%40(dx) = Receive(%39)" in text
    o = _order(rel)
    assert " ".join(o.work) == "F0 F1 F2 B0 F3 B1 B2 B3"
    lines = [c.line for c in o.hops]
    assert lines.index(671) < lines.index(680) and lines.index(982) < lines.index(991)


@pytest.mark.parametrize("rel", ["mindformers_llama_pp4_interleaved/rank_6/19_validate_0089.ir.xz",
                                 "dryrun_llama_dp2mp2pp2/rank_4/graph_build_0_0154.ir.xz"])
def test_one_unit_of_work_per_node_in_the_order_the_lifetimes_and_the_timing(rel: str) -> None:
    """The order, the lifetime walk and the timing put every node in the same unit of work (the `unit` fact): a
    chunked stage (interleaved, chunks 0 and 1) and a kernel graph (micro batches inlined in execution order)."""
    from irtool.parallel.cost import compute_cost
    from irtool.parallel.hardware import load_profile
    from irtool.parallel.lifetime import _unit
    from irtool.parallel.order import unit_label, unit_nodes
    from irtool.parallel.timing import _bucket, stage_timing

    facts = analyze(irtool.load(fixture(rel)))
    t = facts.table
    o = stage_order(t)
    placed = unit_nodes(t)
    # the stage's chunks: the order's (its work's `chunk`) are the job's (its pipeline hops' `chunk`)
    assert o.chunks == facts.job.chunks == ([0, 1] if "interleaved" in rel else [])
    assert {u.key for u in o.units} == set(placed)
    labels = {u.label for u in o.units}
    cols = (t.column("unit"), t.column("micro"), t.column("comm"))

    def bucket(n):  # the timing's unit of the node
        return _bucket(t, n, t("phase", n), cols, o.chunks, True)

    for key, nodes in placed.items():
        for n in nodes:
            assert _unit(t, n)[0] == unit_label(key) and bucket(n) == key, (n.line, key)
    for n in t.column("micro"):
        label = _unit(t, n)[0]
        assert label is None or label == "optimizer" or label in labels, (n.line, label)
    # a pipeline Send/Receive's unit, as the order places it and the timing plays it out, is its node's `unit` fact
    hops = {n: c for n, c in t.column("comm").items() if c.category == "pipeline" and c.direction}
    assert hops and o.hop_units == {c.node: t("unit", n) for n, c in hops.items()}
    timed = {(h.direction, h.sr_tag): h.unit for h in stage_timing(t, compute_cost(t, True), load_profile(None),
                                                                      facts.groups, o).hops}
    assert timed == {(c.direction, c.sr_tag): t("unit", n) for n, c in hops.items()}
    if o.chunks:  # by hand: line 350 `Receive` prints `micro: I64(0)`, `chunk: I64(1)`, `pipeline_begin` (forward);
        # line 421 `Send` prints `micro: I64(0)`, `chunk: I64(1)` and `forward_node_name: "Receive_240316"` (backward)
        at = {c.line: o.hop_units[c.node] for c in o.hops}
        assert at[350] == ("F", 0, 1) and at[421] == ("B", 0, 1)
    # the lifetime walk's picture marks only units the order has
    assert {u for _, u in t.get("lifetimes").units} <= labels | {"optimizer"}
    if o.chunks:
        # line 390 `%65(dx) = PrimFunc_RealDiv(...)` prints `micro: I64(7)`, no `chunk`: micro 7's backward runs on
        # chunks 0 and 1, so it is in neither unit (the lifetime walk called it `B7`, a unit no order has)
        (n,) = [n for n in t.dump.nodes() if n.line == 390]
        assert (n.op, t("micro", n), t("unit", n), _unit(t, n)[0]) == ("RealDiv", 7, None, None)
        assert bucket(n) == ("each", "B", None)


def test_the_gpipe_scheduler_of_the_interleaved_pipeline() -> None:
    # pipeline_interleaved_gpipe_8p rank_0: pipeline_interleaved_4stage_8p's make.py with `pipeline_scheduler: gpipe`.
    # Lines 459-792 print every forward Send/Receive; line 816 `%102 = Depend(Tensor(...), %94)` on line 792's Send of
    # micro 7 chunk 1 feeds line 819 `%103(dx) = Receive(%102)`, the first backward Receive (micro 0, chunk 1): every
    # forward of both chunks before any backward, so all 8 micro batches are in flight on each chunk
    rel = "pipeline_interleaved_gpipe_8p/rank_0/19_validate_0087.ir.xz"
    assert "%102" in _line(rel, 816) and "Depend(Tensor(shape=[], dtype=Float32, value=0), %94)" in _line(rel, 816)
    assert "micro: I64(7), chunk: I64(1)" in _line(rel, 792) and "%103(dx) = Receive(%102)" in _line(rel, 819)
    o = _order(rel)
    assert o.fixed and " ".join(o.work) == " ".join([f"F{m}.c0" for m in range(8)] + [f"F{m}.c1" for m in range(8)] +
                                                    [f"B{m}.c1" for m in range(8)] + [f"B{m}.c0" for m in range(8)])
    assert o.in_flight_by_chunk == [(0, 8), (1, 8)]
    # the 1F1B compile against it: nothing but the order changed, which `diff --cost` says (the rest: one Depend)
    out = CliRunner().invoke(main, ["diff", "--cost", str(FIXTURES / "pipeline_interleaved_4stage_8p/rank_0"),
                                    str(FIXTURES / "pipeline_interleaved_gpipe_8p/rank_0")]).stdout
    assert ("stage 0: order interleaved 1F1B, 2 chunks: 11 forward warm-up, then one backward per forward -> every "
            "forward before any backward, 2 chunks: GPipe, or 1F1B whose warm-up covers all 16 forward") in out
    assert "Depend  125  126  +1" in out
