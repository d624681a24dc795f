"""Mutation run over the rules every command shares (issue 37, docs/mutation.md): `make mutate`.

Each mutant is a plausible one-line bug (a few lines where one bug spans them) in the analysis (`irtool/parallel`)
or the commands. For each, in a copy of the tree under a temporary folder (the checked-in files are never edited):
1. does it change REAL OUTPUT: the outputs of `summarize --format json` (with `--cost` too), `check`, `diff` and
   `render --pipeline` on bundled real dumps (`COMMANDS`), compared with the unmutated tree's;
2. is it caught: `pytest -x` over the test files most likely to catch it (`Mutant.tests`), then, when it survives
   those and changes real output, the rest of the suite (`tests/test_view.py`, the browser, left out).
A mutant whose target line is not found once (the code was refactored) is "not applicable".

    python tools/mutate.py [--only ID,...] [--escalate output|all|none] [--out docs/mutation.md]

Runs one mutant at a time under the caller's niceness (`make mutate` runs it under `nice -n 10`).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("irtool", "tests", "tools", "bench", "fuzz", "grammar", "docs", "README.md", "pyproject.toml", "Makefile")
TEST_TIMEOUT = 1500  # seconds for one pytest run (a mutant looping forever is caught by the timeout)
OUTPUT_TIMEOUT = 900


@dataclass(frozen=True)
class Edit:
    """Replace `old` by `new` in the one line containing `old` (after the line containing `after`, when given)."""

    old: str
    new: str
    after: str = ""


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    edits: tuple[Edit, ...]
    what: str
    tests: tuple[str, ...] = ()  # test files run first (`-x`), before the rest of the suite
    # the same bug where the code was refactored: (file, edits), tried in turn when `edits` do not apply to `file`
    variants: tuple[tuple[str, tuple[Edit, ...]], ...] = ()

    @classmethod
    def one(cls, id: str, file: str, old: str, new: str, what: str, tests: tuple[str, ...] = (), after: str = "",
            also: tuple[tuple[str, str, str], ...] = ()) -> Mutant:
        """One edit; `also`: (file, old, new) of the same bug in refactored code."""
        return cls(id, file, (Edit(old, new, after),), what, tests, tuple((f, (Edit(o, n),)) for f, o, n in also))


P, C = "irtool/parallel/", "irtool/"
PAIRS = ("tests/test_pairs.py", "tests/test_peers.py", "tests/test_check.py")
PHASE = ("tests/test_parallel_rules.py", "tests/test_one_decider.py", "tests/test_parallel.py", "tests/test_golden.py")
STAGE = ("tests/test_inference_pipeline.py", "tests/test_peers.py", "tests/test_parallel.py")
COST = ("tests/test_cost.py", "tests/test_plan.py")
ORDER = ("tests/test_order.py", "tests/test_render.py")
JOB = ("tests/test_degrees.py", "tests/test_parallel.py", "tests/test_golden.py", "tests/test_folded_fixtures.py")

MUTANTS: tuple[Mutant, ...] = (
    # pairing (parallel/pairs.py)
    Mutant("pair-order", P + "pairs.py", (
        Edit("by_tag[r.sr_tag].append(r)", "by_tag[None].append(r)"),
        Edit("k = taken[s.sr_tag]", "k = taken[None]"),
        Edit("if k < len(by_tag[s.sr_tag]):", "if k < len(by_tag[None]):"),
        Edit("pairs.append((s, by_tag[s.sr_tag][k]))", "pairs.append((s, by_tag[None][k]))"),
        Edit("taken[s.sr_tag] += 1", "taken[None] += 1")),
        "Sends and Receives of a link paired in dump order, not by `sr_tag`", PAIRS),
    Mutant.one("pair-last-first", P + "pairs.py", "by_tag[s.sr_tag][k]))", "by_tag[s.sr_tag][-1 - k]))",
               "within a tag, the k-th Send paired with the k-th Receive from the end", PAIRS),
    Mutant.one("link-direction", P + "pairs.py", 'if h.direction == "send" else (h.peer_rank, rank)',
               'if h.direction == "receive" else (h.peer_rank, rank)', "a link's sender and receiver swapped", PAIRS),
    # phase (parallel/facts.py, comm.py)
    Mutant("phase-copy-first", P + "facts.py", (
        Edit('scope = n.scope or ""', 'scope = n.scope or ""\n    if copy:\n        return "recompute"'),
        # the fast path of the same rule, `Gradients/` scope first (`_evidence`), takes the copy first too
        Edit('if in_gradients(n.scope or ""):', 'if in_gradients(n.scope or "") and not t("copy", n):')),
        "a recomputed copy checked before the backward evidence (`is_bp`, `forward_unique_id`, Gradients/)",
        PHASE, ((P + "facts.py", (Edit('scope = n.scope or ""',
                                        'scope = n.scope or ""\n    if copy:\n        return "recompute"'),)),)),
    Mutant.one("phase-isbp-copy", P + "facts.py", '(n.scalar_attr("is_bp") is True and not copy)',
               '(n.scalar_attr("is_bp") is True)', "`is_bp` on a recomputed copy read as backward", PHASE),
    Mutant.one("phase-graph-calls", P + "facts.py", "_own_phase(t, s) or of(s.graph, seen | {graph}) or",
               "_own_phase(t, s) or", "a subgraph's phase from its call sites' own evidence only (not their graph's)",
               PHASE, also=((P + "facts.py", 't("evidence", s) or of(s.graph, seen | {graph}) or', 't("evidence", s) or'),
                            (P + "facts.py", "found, deeper = of(s.graph, inside) if s.graph not in inside else",
                             "found, deeper = (None, False) if True else"))),
    Mutant.one("phase-grad-reducer", P + "facts.py", "_OPTIMIZER_SCOPE.search(scope)) or in_grad_reducer(scope):",
               "_OPTIMIZER_SCOPE.search(scope)):", "a gradient reducer's work (PipelineGradReducer's) read as forward",
               PHASE),
    Mutant.one("phase-rule-r8", P + "facts.py", 'if rule in ("R1", "R4", "R8") or', 'if rule in ("R1", "R4") or',
               "rule R8 communication not decided backward by its rule", PHASE),
    Mutant.one("phase-exchange", P + "comm.py", 'if other.phase == "backward":', 'if other.phase == "forward":',
               "a paired exchange step (R9) takes the other phase", PHASE,
               also=((P + "facts.py", 'if other is not None and t("phase", other) == "backward":',
                      'if other is not None and t("phase", other) == "forward":'),)),
    # stage rules (parallel/stage.py)
    Mutant.one("stage-inference-direction", P + "stage.py", 'd = peer - r if c.op == "Send" else r - peer',
               'd = r - peer if c.op == "Send" else peer - r',
               "inference stage rule: a forward Send taken as coming from the previous stage", STAGE),
    Mutant.one("stage-inference-peer", P + "stage.py", 'peer = own + 1 if c.op == "Send" else own - 1',
               'peer = own - 1 if c.op == "Send" else own + 1',
               "inference peer stage: a forward Send's peer taken as the previous stage", STAGE),
    Mutant.one("stage-sends-only", P + "stage.py", 'elif c.op == "Send" and not receives:', 'elif c.op == "Send":',
               "inference: any rank that sends taken as the first stage", STAGE),
    Mutant.one("stage-src-rank", P + "stage.py", " votes[src + 1] += 1", " votes[src] += 1",
               "`pr.src_rank` voted as the own stage (off by one)", STAGE),
    Mutant.one("stage-downstream", P + "stage.py", 'downstream = (c.op == "Send") != (c.phase == "backward")',
               'downstream = c.op == "Send"', "a hop's direction from its op alone (a backward Send taken as downstream)",
               STAGE),
    Mutant.one("stage-span", P + "job.py", "divmod(c.peer_rank - rank, c.peer_stage - stage)",
               "divmod(c.peer_rank - rank, 1)", "ranks per stage from a peer without dividing by the stage distance",
               JOB),
    # advice (parallel/balance.py)
    Mutant.one("advice-tie", P + "balance.py", "min(low[k - 1][i], x) > low[k][j]:", "min(low[k - 1][i], x) >= low[k][j]:",
               "advice search: ties of the lightest stage go to the later cut (off by one in the split search)", COST),
    Mutant.one("advice-top", P + "balance.py", "x <= top and fits(k - 1, i, j)", "x < top and fits(k - 1, i, j)",
               "advice search off by one: the heaviest stage must be strictly below the optimum (3/2/2 for 2/3/2)", COST),
    Mutant.one("advice-load", P + "balance.py", "return model.base[k] + prefix[j] - prefix[i]",
               "return model.base[k] + prefix[j - 1] - prefix[i]", "advice search: a stage's last layer not counted",
               COST),
    Mutant.one("step-time", P + "balance.py", "(sum(times) + (v * m - 1) * max(times, default=0.0)) / v",
               "(sum(times) + (v * m) * max(times, default=0.0)) / v", "step time: one micro batch too many", COST),
    Mutant.one("one-f-one-b", P + "balance.py", "return max(1, min(stages - stage, micros))",
               "return max(1, min(stages - stage - 1, micros))", "1F1B in flight: one micro batch fewer", COST),
    # micro batch (parallel/facts.py)
    Mutant.one("micro-printed", P + "facts.py", "if not found or n.op in _HOPS:", "if True:",
               "micro batch: the printed `micro` trusted over the data flow", ORDER),
    Mutant.one("micro-pipeline-end", P + "facts.py",
               "return mark if found >> mark & 1 and _pipeline_mark(n, None) == mark else None", "return mark",
               "micro batch: a node joining several micro batches keeps its printed mark", ORDER),
    Mutant.one("micro-shared-param", P + "facts.py", 'seeds = n.op in _HOPS and not n.mentions("pipeline_param")',
               "seeds = n.op in _HOPS", "micro batch: a shared parameter's hop seeds its micro batch", ORDER,
               also=((P + "facts.py", '(n.op in _HOPS and not n.mentions("pipeline_param"))', "(n.op in _HOPS)"),)),
    Mutant.one("micro-depend", P + "facts.py", 'refs = (n.first_node_ref,) if n.op == "Depend" else n.node_refs',
               "refs = n.node_refs", "micro batch: a Depend's ordering input read as data", ORDER),
    # the job (parallel/job.py)
    Mutant.one("dp-cp", P + "job.py", "split = mp.value * cp.value if", "split = mp.value if",
               "dp under context parallelism: cp not taken out of the ranks per stage", ("tests/test_llm.py", *JOB)),
    Mutant.one("micro-disagree", P + "job.py", "micro = self.micro[max(self.micro)] if",
               "micro = self.micro[min(self.micro)] if",
               "ranks disagreeing on micro batches: the fewest taken", ("tests/test_check.py", *JOB),
               also=((P + "job.py", "return f.micro[max(f.micro)], sorted(f.micro)",
                      "return f.micro[min(f.micro)], sorted(f.micro)"),)),
    Mutant.one("world-derived", P + "job.py", "elif not world.known and self.staged and stages.known and stage_size.known:",
               "elif False:", "world size not derived from ranks per stage x stages", JOB,
               also=((P + "job.py", "if not world.known and f.staged and stages.known and size.known:", "if False:"),)),
    Mutant.one("span-largest-group", P + "job.py", "size = f.span or (Evidence(top, f.stage_sizes[top][1])",
               "size = (Evidence(top, f.stage_sizes[top][1])",
               "ranks per stage from the largest collective group, not from the pipeline peers",
               ("tests/test_inference_pipeline.py", *JOB)),
    Mutant.one("last-from-wrap", P + "job.py", "wrap = [c for c in forward if stage == 0",
               "wrap = [c for c in () if stage == 0",
               "stage 0's forward Receive from the last stage (the wrap) not read as naming the last stage",
               ("tests/test_order.py", *JOB)),
    Mutant.one("last-from-group", P + "job.py", "if rank is None or stage is None:", "if True:",
               "a p2p group of one rank per stage not read as the stage count",
               ("tests/test_pairs.py", *JOB), after="def _one_rank_per_stage"),
    Mutant.one("mp-loss-mean", P + "job.py", 'or "/%" not in c.serves or c.group_ranks not in gradients:',
               'or "/%" not in c.serves or True:',
               "tensor parallelism from any operator-forward collective (a loss mean or a router's expert load too)",
               ("tests/test_llm.py", *JOB)),
    Mutant.one("stage-of-no-pipeline", P + "job.py", "return 0 if stage is None and not self.stage_unknown else stage",
               "return stage", "a folder's rank of no pipeline on no stage (null), where the job says stage 0",
               ("tests/test_lifetime.py", *JOB)),
    Mutant.one("folded-chunks", P + "order.py", "return any(c.chunk is None for c in hops)", "return False",
               "a folded pipeline's segments taken for interleaved chunks", ("tests/test_folded_fixtures.py", *ORDER)),
    Mutant.one("folded-unit-label", P + "order.py", 'part = Segment if chunks and t.get("folded") else int',
               "part = int", "a folded pipeline's units labelled by chunk (`F0.c1`), not by segment (`F0.s1`)",
               ("tests/test_folded_fixtures.py", *ORDER)),
    Mutant.one("sp-sequence-split", P + "flowrules.py", "and _layout_splits_sequence(layout, ranks)", "and False",
               "sequence parallelism not recognised from a layout (`in_layout`) splitting the sequence",
               ("tests/test_degrees.py", "tests/test_llm.py", "tests/test_parallel_rules.py")),
    Mutant.one("advice-no-layer", P + "balance.py", "if idle:", "if False:",
               "advice given where the layers carry none of a stage's work (an inference pipeline's)",
               ("tests/test_inference_pipeline.py", *COST),
               after="idle = [f for f in figures if f.layers"),
    Mutant.one("cost-disagree", P + "balance.py", "complete = len(job.micro_seen) < 2 and not job.stages_absent",
               "complete = not job.stages_absent", "a step, bubble and advice estimated where the ranks disagree on the "
               "micro batches (with the most, for ranks that ran fewer)", ("tests/test_check.py", *COST),
               also=()),
    Mutant.one("cost-unknown-stage", C + "report/cost.py",
               "if (selected is None or s == selected) and job.folder_stage(c.stage) is not None]",
               "if (selected is None or s == selected)]", "a rank of unknown stage in a pipeline measured as stage 0",
               ("tests/test_partial.py", *COST)),
    Mutant.one("select-unknown-stage", P + "records.py", "return stage if stage is not None or hops else 0",
               "return stage if stage is not None else 0",
               "a pipelined rank of unknown stage selected by `--stage 0`, and beginning stage 0 (the folder's lowest rank)",
               ("tests/test_partial.py", "tests/test_selection.py")),
    Mutant.one("peak-row-measured", C + "report/summary.py",
               "c = r.cost or next((c for c in self.costs.values() if c.rank == r.rank and r.rank is not None), None)",
               "c = r.cost", "a stage measured afterwards (its lowest rank unreadable): its rank's row says no peak",
               ("tests/test_partial.py", *COST)),
    Mutant.one("balance-unknown", P + "balance.py", "if (c := f.cost.cost).compute_unknown > c.compute_known]",
               "if (c := f.cost.cost).compute_unknown > c.compute_known + c.compute_unknown]",
               "a balance ratio printed from known operators where unknown-cost work dominates", COST),
    # runs per step (parallel/runs.py)
    Mutant.one("runs-max", P + "runs.py", "total += r.count", "total = max(total, r.count)",
               "runs per step: a graph called from several sites counted once", ("tests/test_runs.py", *COST)),
    Mutant.one("runs-bound", P + "runs.py", "via = sites or calls.bound.get(graph, [])", "via = sites",
               "runs per step: a graph bound by Partial/J (a closure) runs unknown", ("tests/test_runs.py", *COST)),
    # byte counts (parallel/rules.py, traffic.py, comm.py, records.py)
    Mutant.one("bytes-rank-size-1", P + "rules.py",
               'if as_int(pa.get("rank_size")) == 1 or (ranks is not None and len(ranks) == 1):',
               "if ranks is not None and len(ranks) == 1:", "a collective of `rank_size 1` counted as moving data",
               ("tests/test_degrees.py", "tests/test_parallel_rules.py", "tests/test_parallel.py")),
    Mutant.one("bytes-wire", P + "traffic.py", "return factor * (n - 1) * nbytes // n", "return factor * nbytes",
               "wire bytes without the (n-1)/n ring factor", ("tests/test_parallel.py", "tests/test_parallel_rules.py"),
               also=((P + "traffic.py", "return _RING[kind] * (n - 1) * nbytes // n", "return _RING[kind] * nbytes"),)),
    Mutant.one("bytes-gather", P + "comm.py", 'if op in GATHERS or op == "Receive":', 'if op == "Receive":',
               "an AllGather's bytes from its input, not its gathered output", ("tests/test_parallel_rules.py",)),
    Mutant.one("bytes-per-step", P + "records.py", "return Bytes(nbytes * runs, runs, 0)", "return Bytes(nbytes, runs, 0)",
               "bytes per step: a node's runs not multiplied", ("tests/test_runs.py", "tests/test_parallel.py")),
    # order and in flight (parallel/order.py)
    Mutant.one("order-kahn", P + "order.py", "return out if len(out) == len(hops) else [hops[i][0] for i in ranked]",
               "return [hops[i][0] for i in ranked]",
               "Send/Receive placed by their units only, not after the hops they depend on (Kahn)", ORDER),
    Mutant("order-send-first", P + "order.py", (Edit('c.op != "Receive")', 'c.op == "Receive")'),),
           "within a unit, its Send placed before its Receive", ORDER,
           ((P + "order.py", (Edit('c.op != "Receive"', 'c.op == "Receive"', after='return len(at), c.phase == "backward"'),
                              Edit('c.op != "Receive"', 'c.op == "Receive"', after="return at.get(unit, len(at)),"))),)),
    Mutant.one("order-print", P + "order.py", "ranked = sorted(found, key=lambda k: (len(before[k]), canonical.index(k)))",
               "ranked = sorted(found, key=lambda k: units[k].line)", "units ordered by print order", ORDER),
    Mutant.one("in-flight-release", P + "order.py", 'held += 1 if u.phase == "F" else -1',
               'held += 1 if u.phase == "F" else 0', "in flight: a backward unit frees nothing", (*ORDER, *COST)),
    Mutant.one("in-flight-chunk", P + "order.py", 'held[u.chunk or 0] += 1 if u.phase == "F" else -1',
               'held[u.chunk or 0] += 1', "in flight per chunk: a backward unit frees nothing", (*ORDER, *COST)),
    # layer index (parallel/params.py)
    Mutant.one("layer-index", P + "params.py", "return int(m.group(1)) if m else None",
               "return int(m.group(1)) + 1 if m else None", "a parameter's layer index off by one", COST),
    Mutant.one("layer-max", P + "params.py", "out[n] = max(found)", "out[n] = min(found)",
               "forward work reading several layers: the first layer, not the last", COST,
               after="if n not in outside and found and not"),
    Mutant.one("layer-counterpart", P + "params.py", "if fwd is not None and fwd in out:", "if False:",
               "backward work placed by its inputs, not its forward counterpart", COST),
    # lifetimes (parallel/lifetime.py)
    Mutant.one("lifetime-free", P + "lifetime.py", "end = last[b] if last[b] >= born[b] else born[b]", "end = born[b]",
               "a block freed where it is made, not after its last use", ("tests/test_lifetime.py", *COST),
               also=((P + "lifetime.py", "frees[max(last[b], born[b])].append(b)", "frees[born[b]].append(b)"),)),
    Mutant.one("lifetime-late", P + "lifetime.py", 'late = {"backward", "recompute"}', 'late = {"backward"}',
               "a forward block read only by recompute not an activation", ("tests/test_lifetime.py", *COST)),
    Mutant.one("lifetime-replay-held", P + "lifetime.py", "if self.waits and any(b in self.waits for b in flat):",
               "if False:", "a call replayed though a collective still holds one of its arguments (never walked for it)",
               ("tests/test_lifetime.py", *COST)),
    Mutant.one("lifetime-block", P + "lifetime.py", "return ((nbytes + 31) // 512 + 1) * 512",
               "return ((nbytes + 511) // 512) * 512", "the pool's block size without its 32-byte pad",
               ("tests/test_lifetime.py", *COST)),
    # timing (parallel/timing.py)
    Mutant.one("timing-steps", P + "timing.py", "* max(0, (n or 1) - 1)", "* max(0, (n or 1))",
               "a collective's latency steps: one too many", ("tests/test_timing.py", *COST)),
    Mutant.one("timing-roofline", P + "timing.py", "return max(compute, memory)", "return compute + memory",
               "roofline: compute and memory time added, not overlapped", ("tests/test_timing.py", *COST)),
    Mutant.one("timing-exposed", P + "timing.py", "ut.exposed = max(0.0, span[b] - ut.compute) if ut.comm else 0.0",
               "ut.exposed = ut.comm", "every communication second exposed", ("tests/test_timing.py", *COST)),
    # the commands
    Mutant.one("check-order", C + "consistency/p2p.py", "if at[id(r1)] < at[id(r0)]:", "if at[id(r1)] > at[id(r0)]:",
               "check: 'order differs' when the Receives follow the Sends' order", PAIRS,
               also=((C + "consistency/p2p.py", "if r1.at < r0.at:", "if r1.at > r0.at:"),)),
    Mutant.one("text-disagree", C + "present/job.py", "if len(job.micro_seen) > 1", "if len(job.micro_seen) > 2",
               "summary text: ranks disagreeing on two micro batch counts print one",
               ("tests/test_check.py", "tests/test_output.py", "tests/test_parallel.py")),
    Mutant.one("diff-disagree", C + "present/job.py", "        if seen:  # ranks of that side disagree",
               "        if False:  # ranks of that side disagree",
               "diff: a side whose ranks disagree on the micro batches said by its most alone",
               ("tests/test_check.py", "tests/test_output.py")),
    Mutant.one("text-segments", C + "present/job.py", "'segments (folded)' if job.folded else 'chunks'", "'chunks'",
               "summary text: a folded pipeline's segments said as chunks",
               ("tests/test_folded_fixtures.py", "tests/test_output.py")),
    Mutant.one("text-in-flight", C + "present/cost.py",
               'return ", ".join(f"{n} on chunk {c}" for c, n in by_chunk) or cell(count)', "return cell(count)",
               "in flight said as a fraction, not whole micro batches per chunk", ("tests/test_order.py", *COST),
               also=((C + "present/cost.py", 'return ", ".join(f"{n} on {part} {c}" for c, n in by_chunk) or cell(count)',
                      "return cell(count)"),)),
)

F = "fixtures/mindir/"
PIPELINES = ("pipeline_3stage_24p_m5", "pipeline_4stage_8p", "pipeline_2stage_2p", "inference_pp_4p_m2",
             "inference_pp_8p_m4", "ut_pipeline_split_32p", "ut_pipeline_split_shared_32p",
             "pipeline_interleaved_4stage_8p", "pipeline_folded_8p", "pipeline_segments_8p", "pipeline_unequal_8p",
             "pipeline_4stage_lazy_8p", "gpt_small_dp2mp2pp2", "mindformers_llama_dp2mp2pp2",
             "mindformers_llama_pp4_interleaved", "mindformers_moe_dp2mp2pp2_ep2", "dryrun_llama_dp2mp2pp2",
             "check_micro_mismatch_8p", "dynamic_shape_pp_4p", "mindformers_deepseek3_sp_dp2mp2pp2",
             "mindformers_deepseek3_dp2pp4", "pipeline_4stage_32p_loss")
FLAT = ("semi_auto_8p", "flash_sp_sendrecv_8p", "flash_attention_sp_8p", "moe_8p", "user_group_8p", "two_d_tp_8p",
        "mindformers_llama_sp_fa_dp2mp2pp2", "opt_parallel_8p", "mlp_cpu", "control_flow_cpu")
COMMANDS: tuple[tuple[str, ...], ...] = (
    *(("summarize", "--format", "json", F + x) for x in (*PIPELINES, *FLAT)),
    *(("summarize", "--cost", "--format", "json", F + x) for x in (
        "pipeline_3stage_24p_m5", "pipeline_4stage_8p", "inference_pp_4p_m2", "pipeline_interleaved_4stage_8p",
        "mindformers_llama_dp2mp2pp2", "dryrun_llama_dp2mp2pp2", "ut_pipeline_split_32p", "semi_auto_8p",
        "pipeline_folded_8p", "mindformers_moe_dp2mp2pp2_ep2", "gpt_small_dp2mp2pp2", "gpt_small_dp2mp2pp2_lazyinline",
        "pipeline_4stage_lazy_8p", "dryrun_llama_pp4")),
    *(("summarize", "--cost", F + x) for x in ("pipeline_3stage_24p_m5", "pipeline_interleaved_4stage_8p",
                                               "check_micro_mismatch_8p", "pipeline_folded_8p")),
    *(("check", "--format", "json", F + x) for x in ("pipeline_4stage_8p", "ut_pipeline_split_32p", "inference_pp_8p_m4",
                                                     "flash_sp_sendrecv_8p", "check_micro_mismatch_8p")),
    ("diff", "--format", "json", F + "semi_auto_8p", F + "semi_auto_8p_changed"),
    ("diff", "--format", "json", "--cost", F + "gpt_small_dp2mp2pp2", F + "gpt_small_dp1mp4pp2"),
    ("diff", "--format", "json", F + "mindformers_llama_dp2mp2pp2", F + "mindformers_llama_pp4"),
    # every node's phase, layer and category: the Model Explorer graph and its node data, the backward nodes drawn
    *(("export", "-o", "OUT.json", F + x) for x in ("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz",
                                                    "pipeline_4stage_lazy_8p/rank_0/19_validate_0087.ir.xz")),
    ("render", "--backward", "--format", "dot", "-o", "OUT.dot", F + "gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz"),
    *(("render", "--pipeline", "--format", "dot", "-o", "OUT.dot", F + x) for x in (
        "pipeline_4stage_8p", "pipeline_2stage_2p", "ut_pipeline_split_32p", "inference_pp_4p_m2",
        "pipeline_interleaved_4stage_8p", "pipeline_unequal_8p")),
)

def _golden() -> tuple[tuple[str, ...], ...]:
    """The golden cases' commands too (tests/golden/cases.py: single dumps of other passes, diffs by rank)."""
    spec = importlib.util.spec_from_file_location("golden_cases", ROOT / "tests" / "golden" / "cases.py")
    if spec is None or spec.loader is None:
        return ()
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    return (*(("summarize", "--format", "json", path) for path in cases.SUMMARIZE.values()),
            *(("diff", "--format", "json", *args) for args in cases.DIFF.values()))


COMMANDS += _golden()

# Runs every command in one process (a dump read once serves all): JSON lines {"i": index, "out": text}.
_RUNNER = r"""
import json, sys, tempfile, traceback
from pathlib import Path
from click.testing import CliRunner
from irtool.cli import main
commands = json.loads(sys.argv[1])
out_dir = Path(tempfile.mkdtemp())
runner = CliRunner()
for i, args in enumerate(commands):
    stem = f"o{i}"
    args = [str(out_dir / stem) + a[3:] if a.startswith("OUT") else a for a in args]
    try:
        r = runner.invoke(main, args, catch_exceptions=True)
        text = f"exit {r.exit_code}\n{r.output}"
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            text += "".join(traceback.format_exception(r.exception))
    except BaseException as e:  # noqa: BLE001
        text = f"crash {e!r}"
    for f in sorted(out_dir.glob(stem + ".*")):  # the file written and any written beside it
        text += f"\n== {f.name[len(stem):]}\n" + f.read_text()
        f.unlink()
    print(json.dumps({"i": i, "out": text.replace(str(out_dir / stem), "OUT")}), flush=True)
"""


@dataclass
class Result:
    mutant: Mutant
    applicable: bool = True
    changed: list[str] = field(default_factory=list)  # the commands whose output changed
    caught_by: str = ""  # test id, "timeout", or "" (survived)
    ran: str = ""  # which tests ran: "targeted" or "suite"
    seconds: float = 0.0
    file: str = ""  # the file mutated (a variant's where the code was refactored)
    tree: str = ""  # the commit the run copied (with uncommitted changes, if any)


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "IRTOOL_JOBS": "1",
            "IRTOOL_CACHE": "1000"}


def _run(cmd: list[str], tree: Path, timeout: int) -> tuple[int | None, str]:
    """Run in its own process group (killed whole on timeout); (exit code or None on timeout, output)."""
    p = subprocess.Popen(cmd, cwd=tree, env=_env(tree), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, ""


def outputs(tree: Path) -> list[str]:
    code, out = _run([sys.executable, "-c", _RUNNER, json.dumps(COMMANDS)], tree, OUTPUT_TIMEOUT)
    got = {}
    for line in out.splitlines():
        if line.startswith('{"i"'):
            row = json.loads(line)
            got[row["i"]] = row["out"]
    return [got.get(i, f"no output (exit {code})") for i in range(len(COMMANDS))]


def mutated(m: Mutant, tree: Path) -> tuple[str, str, str] | None:
    """(file, original text, mutated text) of the first of the mutant's variants that applies in `tree`."""
    for file, edits in ((m.file, m.edits), *m.variants):
        path = tree / file
        if path.exists():
            text = path.read_text()
            new = apply(edits, text)
            if new is not None:
                return file, text, new
    return None


def apply(edits: tuple[Edit, ...], text: str) -> str | None:
    """The text with the edits; None when an edit's line is not found exactly once."""
    lines = text.split("\n")
    for e in edits:
        start = 0
        if e.after:
            hits = [i for i, x in enumerate(lines) if e.after in x]
            if len(hits) != 1:
                return None
            start = hits[0]
        hits = [i for i in range(start, len(lines)) if e.old in lines[i]]
        if len(hits) != 1 and not (e.after and hits):
            return None
        i = hits[0]
        lines[i] = lines[i].replace(e.old, e.new, 1)
    return "\n".join(lines)


def _failed(out: str) -> str:
    m = re.search(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
    return m.group(1) if m else "a test (see the log)"


def pytest(tree: Path, files: list[str], ignore: list[str]) -> tuple[str, str]:
    """(caught by, log) of `pytest -x` on `files` (the whole suite when empty) ignoring `ignore`."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-rfE",
           "--no-header", *files, *(f"--ignore={x}" for x in ignore)]
    code, out = _run(cmd, tree, TEST_TIMEOUT)
    if code is None:
        return "timeout", ""
    if code == 5:  # no tests collected
        return "", out
    return ("" if code == 0 else _failed(out)), out


def copy_tree(dest: Path) -> Path:
    tree = dest / "tree"
    tree.mkdir(parents=True)
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src.exists():
            shutil.copy2(src, tree / name)
    (tree / "fixtures").symlink_to(ROOT / "fixtures")
    for parent in ROOT.parents:  # tests find ../shared/fixtures next to the checkout
        if (parent / "shared").is_dir():
            (dest / "shared").symlink_to(parent / "shared")
            break
    return tree


def run_one(m: Mutant, tree: Path, base: list[str], escalate: str, log: Path) -> Result:
    r = Result(m)
    found = mutated(m, tree)
    if found is None:
        r.applicable = False
        return r
    r.file, original, text = found
    path = tree / r.file
    t0 = time.monotonic()
    path.write_text(text)
    try:
        got = outputs(tree)
        r.changed = [" ".join(a for a in COMMANDS[i] if not a.startswith("OUT")).replace(F, "")
                     for i, (a, b) in enumerate(zip(base, got)) if a != b]
        targeted = [x for x in m.tests if (tree / x).exists()]
        r.caught_by, out = pytest(tree, targeted, []) if targeted else ("", "")
        r.ran = "targeted"
        if not r.caught_by and (escalate == "all" or (escalate == "output" and r.changed)):
            r.caught_by, out = pytest(tree, [], [*targeted, "tests/test_view.py"])
            r.ran = "suite"
        log.write_text(out)
    finally:
        path.write_text(original)
    r.seconds = time.monotonic() - t0
    return r


HEADER = """# Mutation run

`make mutate` (`tools/mutate.py`) applies plausible one-line bugs to the rules every command shares (pairing,
phase, stage, advice, micro batch, the job's degrees and world size, runs per step, byte counts, order and in
flight, layer index, lifetimes, timing) and to the commands, one at a time, in a copy of the tree. For each:
whether it changes **real output** (the outputs of `summarize --format json` and `--cost`, `check`, `diff` and
`render --pipeline`, `render --backward` and `export` over bundled real dumps and the golden cases,
`tools/mutate.py` `COMMANDS`, compared with the unmutated tree's),
and which test catches it: `pytest -x` over the test files most likely to (`Mutant.tests`), then, for a survivor
that changes real output, the rest of the suite (the browser tests of `tests/test_view.py` left out; not with
`--escalate none`). A mutant whose line is gone (the code was refactored) is "not applicable". The rule the run
holds (issue 37): every mutant that changes real output is caught.

"""


NOTES = "## Notes"


def table(results: list[Result]) -> str:
    rows = ["| mutant | file | mutation | changes real output? | caught by | tree |", "|---|---|---|---|---|---|"]
    for r in results:
        m = r.mutant
        if not r.applicable:
            rows.append(f"| {m.id} | `{m.file}` | {m.what} | not applicable (line gone) | — | {r.tree} |")
            continue
        changed = f"yes ({len(r.changed)}: {r.changed[0]}{', …' if len(r.changed) > 1 else ''})" if r.changed else "no"
        caught = (f"`{r.caught_by}`" if r.caught_by not in ("", "timeout") else r.caught_by) if r.caught_by else \
            f"SURVIVED ({'the whole suite' if r.ran == 'suite' else 'the targeted tests'})"
        rows.append(f"| {m.id} | `{r.file or m.file}` | {m.what} | {changed} | {caught} | {r.tree} |")
    ok = [r for r in results if r.applicable]
    real = [r for r in ok if r.changed]
    totals = (f"{len(results)} mutants: {len(ok)} applied, {len(real)} change real output, "
              f"{sum(1 for r in real if r.caught_by)} of those caught; "
              f"{sum(1 for r in ok if r.caught_by)} of {len(ok)} caught in all.")
    return HEADER + totals + "\n\n" + "\n".join(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated mutant ids, run in this order")
    ap.add_argument("--escalate", choices=("output", "all", "none"), default="output",
                    help="run the whole suite for a survivor of the targeted tests: when it changes real output "
                         "(default), always, or never")
    ap.add_argument("--out", default="", help="write the Markdown page here (docs/mutation.md)")
    ap.add_argument("--json", default="", help="also write the results as JSON lines here")
    ap.add_argument("--from-json", nargs="*", default=None, metavar="FILE",
                    help="write the page from earlier runs' --json files (the last record of a mutant wins), not running")
    args = ap.parse_args()
    if args.from_json is not None:
        return _page(_from_json(args.from_json), args.out)
    only = [x for x in args.only.split(",") if x]  # run in this order
    by_id = {m.id: m for m in MUTANTS}
    mutants = [by_id[x] for x in only] if only else list(MUTANTS)
    with tempfile.TemporaryDirectory(prefix="irtool-mutate-") as tmp:
        commit = _commit()  # of the tree copied
        tree = copy_tree(Path(tmp))
        base = outputs(tree)
        if base != outputs(tree):
            print("the unmutated outputs differ between two runs: not comparable", file=sys.stderr)
            return 2
        results = []
        for m in mutants:
            r = run_one(m, tree, base, args.escalate, Path(tmp) / f"{m.id}.log")
            r.tree = commit
            results.append(r)
            state = "n/a" if not r.applicable else (r.caught_by or "SURVIVED")
            print(f"{m.id}: output {'changed' if r.changed else 'same'}; {state} ({r.ran}, {r.seconds:.0f} s)",
                  file=sys.stderr, flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps({"id": m.id, "file": r.file, "tree": r.tree, "applicable": r.applicable,
                                         "changed": r.changed,
                                         "caught_by": r.caught_by, "ran": r.ran, "seconds": round(r.seconds)}) + "\n")
    return _page(results, args.out)


def _commit() -> str:
    """The checkout's commit, `+` when files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return head + ("+" if dirty else "")


def _page(results: list[Result], out: str) -> int:
    text = table(results)
    if out:
        old = Path(out).read_text() if Path(out).exists() else ""
        notes = old[old.index(NOTES):] if NOTES in old else ""  # kept: written by hand
        Path(out).write_text(text + ("\n" + notes if notes else ""))
    else:
        print(text)
    return 0


def _from_json(files: list[str]) -> list[Result]:
    """The results of earlier runs in `MUTANTS` order; a mutant no run recorded is left out."""
    last = {}
    for f in files:
        for line in Path(f).read_text().splitlines():
            row = json.loads(line)
            last[row["id"]] = row
    return [Result(m, r["applicable"], r["changed"], r["caught_by"], r["ran"], r["seconds"], r.get("file", ""),
                   r.get("tree", ""))
            for m in MUTANTS if (r := last.get(m.id)) is not None]


if __name__ == "__main__":
    sys.exit(main())
