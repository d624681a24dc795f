"""Cost in `summarize --cost`: FLOPs and memory of a rank, and the balance of a folder's stages
(docs/cost.md, docs/timing.md). JSON field `cost` (schema `irtool.cost/4`), made once here from the records of
`irtool.parallel.balance`; text and Markdown from `irtool.present.cost`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..dumpdir import RankFile, rank_order
from ..errors import InputError
from ..ir import Dump
from ..parallel import ParallelFacts, analyze
from ..parallel.balance import (
    Advice,
    Balance,
    SplitEstimate,
    StageCost,
    StageMemory,
    in_flight,
    stage_cost,
    stage_memory,
)
from ..parallel.calibrate import Calibration
from ..parallel.calibrate import calibrate as run_calibration
from ..parallel.cost import CostFacts
from ..parallel.hardware import Profile
from ..parallel.job import Job
from ..parallel.lifetime import NOT_COUNTED, Lifetimes
from ..parallel.memory import MemoryFacts, scaled
from ..parallel.order import unit_label
from ..parallel.roles import ROLES
from ..present import Block, Code, Table, cell, parse_bytes
from ..present.cost import (
    advice_sentences,
    advice_yaml,
    balance_sentence,
    flops_text,
    human,
    in_flight_count,
    in_flight_figure,
    in_flight_text,
    memory_sentence,
    offset,
    size_text,
)
from ..present.job import layer_ranges
from ..present.timing import seconds_text, step_line, step_table, unit_table

SCHEMA = "irtool.cost/4"
BUBBLE_FORMULA = "1 - m*sum(t)/(S*T), T = (sum(t) + (v*m-1)*max(t))/v"
SIMULATED = "the step played out over the stages' unit orders and Send -> Receive pairs (docs/timing.md §3)"


def parse_memory(text: str) -> int:
    """`64GiB`, `80GB`, `1073741824` -> bytes."""
    size = parse_bytes(text)
    if size is None:
        raise InputError(f"--device-memory: cannot read {text!r} (use e.g. 64GiB, 80GB or 1073741824)")
    return int(size)


def measure_rank(rank: RankFile, lenient: bool = False, hardware: Profile | None = None) -> StageCost:
    """One rank's cost record, read again (a stage whose cost the summary's worker pass did not measure)."""
    dump = rank.load(lenient)
    facts = analyze(dump, rank.rank)
    return stage_cost(facts, hardware=hardware,
                      order=rank_order(rank, facts, lenient))


@dataclass
class FileCost:
    """The cost of one file: its record and its memory under what the file tells of the job."""

    cost: StageCost
    memory: StageMemory
    device_memory: int | None
    hardware: str = ""  # the profile as the text names it
    hardware_json: dict[str, Any] | None = None  # and as JSON (`hardware_json`)


def rank_cost(dump: Dump, facts: ParallelFacts, job: Job, device_memory: int | None = None,
              hardware: Profile | None = None, hardware_text: str = "", default: bool = False) -> FileCost:
    """The cost of a single file (`job`: as much of the job as the file tells)."""
    sc = stage_cost(facts, hardware=hardware)
    flight = in_flight(sc.order, sc.stage, job)
    return FileCost(sc, stage_memory(sc.memory, flight, sc.lifetimes), device_memory, hardware_text,
                    hardware_json(hardware, default))


# --- JSON (docs/cost.md#json) ---------------------------------------------------------------------

def _compute_json(c: CostFacts) -> dict[str, Any]:
    layers = sorted(set(c.by_layer) | set(c.unknown_by_layer), key=lambda k: (k is None, k or 0))
    zero = dict.fromkeys(c.flops, 0)
    return {"flops": dict(c.flops), "unknown_ops_by_phase": dict(c.unknown_by_phase), "total_flops": c.total,
            "compute_flops": c.compute, "compute_unknown_ops": c.compute_unknown,
            "flops_by_layer": [{"layer": k, "flops": dict(c.by_layer.get(k, zero)),
                                "unknown_ops": dict(c.unknown_by_layer.get(k, zero))} for k in layers],
            "flops_by_family": dict(c.by_family), "matmul_forward_flops": c.matmul_forward,
            "matmul_forward_unknown_ops": c.matmul_forward_unknown,
            "unknown_ops": dict(sorted(c.unknown.items(), key=lambda kv: (-kv[1], kv[0]))),
            "unknown_count": sum(c.unknown.values()), "logical_ops": c.logical_ops,
            "dynamic_ops": dict(sorted(c.dynamic.items(), key=lambda kv: (-kv[1], kv[0]))),
            "dynamic_flops": c.dynamic_flops, "dynamic_flops_bound": c.dynamic_bound,
            "memory_bound_bytes": c.moved, "memory_bound_unknown": c.moved_unknown,
            "branch_ops": c.branch_ops, "unknown_runs_ops": c.unknown_runs,
            "shapes": "per device (printed sliced)" if c.kind != "spe" else
                      "step_parallel_end: logical per micro batch, sliced here by in_strategy"}


def _peak_json(lt: Lifetimes | None, sm: StageMemory) -> dict[str, Any] | None:
    """The lifetime walk (docs/cost.md §2.1); null when the dump does not give the step's order."""
    if lt is None or sm.peak is None:
        return None
    at = lt.at
    return {"bytes": lt.peak.total, "unknown_tensors": lt.peak.unknown, "how": lt.how, "steps": lt.steps,
            "at": None if at is None else {"node": at.node, "op": at.op, "line": at.line, "scope": at.scope,
                                           "unit": at.unit, "micro": at.micro, "step": at.step},
            "live_by_role": dict(lt.by_role), "not_counted": NOT_COUNTED, "notes": list(lt.notes)}


def _memory_json(m: MemoryFacts, sm: StageMemory, lt: Lifetimes | None = None) -> dict[str, Any]:
    acts = m.activations
    roles = {r: m.role_bytes(r) for r in ROLES}
    flight = sm.in_flight.count
    return {
        "bytes_by_role": {r: b.total for r, b in roles.items()},
        "params": [{"name": p.name, "role": p.role, "of": p.of, "layer": p.layer, "bytes": p.bytes} for p in m.params],
        "gradients_estimate_bytes": m.gradients.total,
        "activations_per_micro_bytes": acts.per_micro.total if acts else None,
        "activation_tensors_per_micro": acts.per_micro.known + acts.per_micro.unknown if acts else 0,
        "activations_unknown_tensors_per_micro": acts.per_micro.unknown if acts else 0,
        "activations_for_recompute_tensors": acts.for_recompute if acts else 0,
        "activations_how": acts.how if acts else None,
        "micro_batches_in_flight": flight, "in_flight_how": sm.in_flight.how,
        "micro_batches_in_flight_by_chunk": {str(c): n for c, n in sm.in_flight.by_chunk} or None,
        "activations_bytes": scaled(acts.per_micro, flight).total if acts and flight is not None else None,
        "total_bytes": sm.total.total, "total_unknown_tensors": sm.total.unknown,
        "total_lower_bound": sm.lower_bound or bool(sm.total.unknown),
        "optimizer_states": [p.name for p in m.params if p.role == "optimizer-state"],
        "unused_params": [p.name for p in m.params if p.role == "unused"],
        "unknown_size_params": [p.name for p in m.params if p.bytes is None],
        "estimates": ["gradients_estimate_bytes", "activations_per_micro_bytes", "activations_bytes", "total_bytes"],
        "peak": _peak_json(lt, sm),
        "notes": list(m.notes)}


def _fits_json(sm: StageMemory, limit: int | None) -> dict[str, Any]:
    fits = sm.fits(limit)
    return {"device_memory_bytes": limit, "fits": fits,
            "headroom_bytes": None if limit is None or fits is None else limit - sm.used.total}


def file_json(fc: FileCost) -> dict[str, Any]:
    """The `cost` field of a single-file summary: the same figures as its stage's row of a folder."""
    sc = fc.cost
    return {"schema": SCHEMA, "stage": sc.stage, "peak_bytes": sc.peak_bytes, "compute": _compute_json(sc.cost),
            "memory": _memory_json(sc.memory, fc.memory, sc.lifetimes), "comm_bytes": sc.comm.total,
            "comm_unknown": sc.comm.unknown, "bytes_per_flop": sc.bytes_per_flop, "schedule": sc.order.as_dict(),
            **_fits_json(fc.memory, fc.device_memory), "timing": _timing_json(sc, fc.hardware_json)}


def hardware_json(p: Profile | None, default: bool) -> dict[str, Any] | None:
    """The profile timed on: `name`, `where` (the built-in name, or the file over its base), `default` (not
    asked for: the default profile)."""
    return None if p is None else {"name": p.name, "where": p.where, "default": default}


def _unit_json(u: Any) -> dict[str, float]:
    return {"forward_seconds": u.forward, "backward_seconds": u.backward, "recompute_seconds": u.recompute,
            "optimizer_seconds": u.optimizer, "comm_seconds": u.comm, "exposed_seconds": u.exposed,
            "seconds": u.seconds}


def _timing_json(sc: StageCost, hardware: dict[str, Any] | None) -> dict[str, Any] | None:
    t = sc.timing
    if t is None:
        return None
    return {"hardware": hardware, "units": [{"unit": unit_label(k), **_unit_json(t.units[k])}
                                                          for k in t.order],
            "tail": _unit_json(t.tail), "total": _unit_json(t.total()), "unknown_ops": t.unknown_ops,
            "unknown_comm": t.unknown_comm, "model_flops": t.model_flops, "peak_flops_per_second": t.peak,
            "notes": t.notes}


def _step_json(b: Balance, hardware: dict[str, Any] | None) -> dict[str, Any] | None:
    st = b.step
    if st is None:
        return None
    return {"hardware": hardware, "cannot": st.cannot, "seconds": st.seconds if not st.cannot else None,
            "bubble": round(st.bubble, 4) if not st.cannot else None, "mfu": st.mfu if not st.cannot else None,
            "stages": [{"stage": s.stage, "rank": s.rank, "compute_seconds": s.busy, "exposed_seconds": s.exposed,
                        "idle_seconds": s.idle, "bubble": round(s.share(st.seconds), 4),
                        "mfu": s.mfu(st.seconds)} for s in st.stages]}


def _split_json(a: Advice, e: SplitEstimate | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"layers_per_stage": e.groups, "stage_of": e.stage_of, "layer_counts": e.layer_counts(),
            "offset": offset(a, e), "compute_flops": e.loads, "heaviest_stage_flops": e.heaviest,
            "lightest_stage_flops": e.lightest, "ratio": e.ratio,
            "bubble": None if e.bubble is None else round(e.bubble, 4),
            "memory_bytes": [m.total for m in e.memory], "memory_unknown_tensors": [m.unknown for m in e.memory],
            "memory_lower_bound": e.lower_bound, "fits": e.fits, "seconds": e.seconds, "step_seconds": e.step,
            "estimate": True}


def dir_json(b: Balance, job: Job, hardware: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `cost` field of a folder summary."""
    rows = []
    for f in b.stages:
        sc, sm = f.cost, f.memory
        rows.append({"stage": f.stage, "peak_bytes": sc.peak_bytes, "rank": sc.rank, "layers": f.layers,
                     "flops": dict(sc.cost.flops),
                     "compute_flops": sc.cost.compute, "compute_unknown_ops": sc.cost.compute_unknown,
                     "matmul_forward_flops": sc.cost.matmul_forward,
                     "matmul_forward_unknown_ops": sc.cost.matmul_forward_unknown,
                     "unknown_ops": sum(sc.cost.unknown.values()), "memory_bytes": sm.total.total,
                     "memory_unknown_tensors": sm.total.unknown, "memory_lower_bound": sm.lower_bound,
                     "micro_batches_in_flight": sm.in_flight.count, "in_flight_how": sm.in_flight.how,
                     "comm_bytes": sc.comm.total, "comm_unknown": sc.comm.unknown, "bytes_per_flop": sc.bytes_per_flop,
                     **_fits_json(sm, b.device_memory), "schedule": sc.order.as_dict(),
                     "seconds": None if sc.timing is None else sc.timing.total().seconds,
                     "timing": _timing_json(sc, hardware)})
    a = b.advice
    yaml = advice_yaml(a, job)
    return {"schema": SCHEMA, "measure": b.measure, "stages": rows, "stage_count": b.stage_count.as_dict(),
            "micro_batches": b.micro_batches.as_dict(), "stages_absent": b.absent, "selected_stage": b.selected,
            "heaviest_stage": b.heaviest, "lightest_stage": b.lightest, "compute_ratio": b.compute_ratio,
            "forward_ratio": b.forward_ratio, "unknown_ops": b.unknown_ops,
            "unknown_dominates": [{"stage": st, "unknown_ops": u, "ops": n} for st, u, n in b.unknown_dominates],
            "sentence": balance_sentence(b),
            "memory_sentence": memory_sentence(b),
            "bubble": None if b.bubble is None else round(b.bubble, 4), "bubble_formula": BUBBLE_FORMULA,
            "bubble_how": _bubble_how(b), "step": _step_json(b, hardware),
            "advice": {"cannot": a.cannot, "num_layers": a.num_layers, "chunks": a.chunks,
                       "recomputed_layers": a.recomputed, "current": _split_json(a, a.current),
                       "even": _split_json(a, a.even), "advised": _split_json(a, a.advised),
                       "recompute": [{"stage": c.stage, "off": c.off, "on": c.on, "seconds": c.seconds,
                                      "peak_bytes_before": c.before, "peak_bytes_after": c.after}
                                     for c in a.recompute],
                       "recompute_step_seconds": a.recompute_step, "recompute_not_weighed": a.recompute_not,
                       "mindformers_yaml": yaml},
            "device_memory_bytes": b.device_memory, "one_rank_per_stage": [f.cost.rank for f in b.stages],
            "memory": {str(f.stage): _memory_json(f.cost.memory, f.memory, f.cost.lifetimes) for f in b.stages}}


def _bubble_how(b: Balance) -> str | None:
    if b.bubble is None:
        return None
    return SIMULATED if b.played is not None else BUBBLE_FORMULA


# --- text and Markdown ----------------------------------------------------------------------------

def headline(b: Balance, hardware: str = "") -> list[str]:
    """The first lines of `summarize DIR --cost`: step time, balance, memory and fit, the advice."""
    a = advice_sentences(b.advice)[0]
    step = [step_line(b.step, hardware or b.step.profile)] if b.step is not None else []
    return [*step, f"Balance: {balance_sentence(b)}", f"Memory: {memory_sentence(b)}",
            a if b.selected is None else "Advice: summarize without --stage for the advice (it moves layers between stages)"]


def file_headline(fc: FileCost) -> list[str]:
    sc, sm = fc.cost, fc.memory
    busy = "" if sc.timing is None else \
        f" ({seconds_text(sc.timing.total().seconds)} of work on {fc.hardware or sc.timing.profile}, estimate)"
    line = (f"Cost: {flops_text(sc.cost.total, sum(sc.cost.unknown_by_phase.values()))} FLOPs per step{busy}; memory "
            + (f"peak {size_text(sm.peak)} (tensor lifetimes)" if sm.peak is not None else
               f"{size_text(sm.total, sm.lower_bound)} (estimate)"))
    fits = sm.fits(fc.device_memory)
    if fc.device_memory is not None:
        line += (f"; fits in {human(fc.device_memory)}" if fits else
                 f"; does NOT fit in {human(fc.device_memory)}" if fits is False else
                 f"; may not fit in {human(fc.device_memory)}")
    return [line]


def _flops_row(name: str, f: dict[str, int], u: dict[str, int]) -> list[str]:
    return [name] + [flops_text(f[p], u.get(p, 0)) for p in ("forward", "backward", "recompute", "optimizer")]


def _memory_table(m: MemoryFacts, sm: StageMemory, title: str) -> Table:
    roles = {r: m.role_bytes(r) for r in ROLES}
    acts = m.activations
    per_micro = (f"activations kept for backward, per micro batch * ({acts.per_micro.known + acts.per_micro.unknown} "
                 f"tensors, {acts.for_recompute} of them for recompute)") if acts else \
        "activations kept for backward, per micro batch *"
    flight = sm.in_flight.count
    return Table(title, ["what", "bytes"], [
        ["parameters (weights)", size_text(roles["weight"])],
        ["optimizer states", size_text(roles["optimizer-state"])],
        ["gradient accumulation buffers", size_text(roles["accumulation"])],
        ["other parameters (hyperparameters, counters)", size_text(roles["hyperparameter"] + roles["other"])],
        ["held but unused parameters", size_text(roles["unused"])],
        ["gradients without a buffer *", size_text(m.gradients)],
        [per_micro, size_text(acts.per_micro) if acts else cell(None)],
        [f"activations times {in_flight_count(sm.in_flight)} *",
         size_text(scaled(acts.per_micro, flight)) if acts and flight is not None else cell(None)],
        ["total *", size_text(sm.total, sm.lower_bound)]])


def peak_lines(lt: Lifetimes | None, sm: StageMemory, who: str = "") -> list[str]:
    """The lifetime walk's peak, where it happens and what is live there (docs/cost.md §2.1)."""
    if lt is None:
        return []
    if sm.peak is None:
        return [f"  {who}peak of live tensors: not known ({'; '.join(lt.notes) or lt.how})"]
    at = lt.at
    where = "" if at is None else (f" at {at.op} (line {at.line}" + (f", {at.unit}" if at.unit else "")
                                   + (f", micro batch {at.micro}" if at.micro is not None else "") + ")")
    live = ", ".join(f"{role} {human(b)}" for role, b in sorted(lt.by_role.items(), key=lambda kv: -kv[1]))
    return [f"  {who}peak of live tensors {size_text(lt.peak)}{where}, walking {lt.how}",
            f"    live there: {live}", f"    not counted: {NOT_COUNTED}"]


def rank_blocks(fc: FileCost, limit: int | None) -> list[Block]:
    """Text/Markdown of a single file's cost."""
    sc, sm = fc.cost, fc.memory
    c = sc.cost
    shapes = "per device (printed sliced)" if c.kind != "spe" else \
        "step_parallel_end: logical per micro batch, sliced here by in_strategy"
    bpf = "" if sc.bytes_per_flop is None else f" = {sc.bytes_per_flop:.4g} bytes per FLOP"
    blocks: list[Block] = ["", f"Cost (FLOPs this device runs per step; shapes {shapes})",
                           f"  total {flops_text(c.total, sum(c.unknown_by_phase.values()))} FLOPs, forward MatMul "
                           f"{flops_text(c.matmul_forward, c.matmul_forward_unknown)}; communication "
                           f"{human(sc.comm.total)} bytes{bpf}"]
    if c.unknown:
        blocks.append(f"  {sum(c.unknown.values())} operator(s) of unknown cost, not counted: "
                      + ", ".join(f"{op} x{n}" for op, n in sorted(c.unknown.items(), key=lambda kv: (-kv[1], kv[0]))))
    if c.unknown_runs:
        blocks.append(f"  {c.unknown_runs} of them in a loop body: how many times it runs a step is not printed")
    if c.branch_ops:
        blocks.append(f"  {c.branch_ops} operator(s) in a Switch branch, counted as if taken (at most these FLOPs)")
    zero = dict.fromkeys(c.flops, 0)
    keys = sorted(set(c.by_layer) | set(c.unknown_by_layer), key=lambda k: -sum(c.by_layer.get(k, zero).values()))
    if c.dynamic:
        blocks.append("  " + ", ".join(f"{op} x{n}" for op, n in sorted(c.dynamic.items(), key=lambda kv: (-kv[1], kv[0])))
                      + f" counted at the mean of their token rows (expert-parallel all-to-all): "
                      f"{cell(c.dynamic_flops)} FLOPs (at most {cell(c.dynamic_bound)})")
    if c.moved or c.moved_unknown:
        blocks.append(f"  memory-bound operators (sort, top-k, scatter): {human(c.moved)} bytes moved"
                      + (f", {c.moved_unknown} of unknown size" if c.moved_unknown else ""))
    layers = Table("FLOPs per layer and phase", ["layer", "forward", "backward", "recompute", "optimizer"],
                   [_flops_row("(no layer)" if k is None else str(k), c.by_layer.get(k, zero),
                               c.unknown_by_layer.get(k, zero)) for k in keys])
    layers.rows.append(_flops_row("total", c.flops, c.unknown_by_phase))
    blocks += [layers.limited(limit), _memory_table(sc.memory, sm, "Memory of this rank (bytes; * = estimate)")]
    if sc.order.hops:
        blocks.append(f"  pipeline order: {' '.join(sc.order.work)} ({sc.order.schedule})" if sc.order.fixed
                      else f"  pipeline order: {sc.order.schedule}")
    if sc.timing is not None and sc.timing.order:
        blocks.append(unit_table(sc.timing).limited(limit))
    blocks += [f"  timing: {note}" for note in (sc.timing.notes if sc.timing is not None else [])]
    blocks.append(f"  {in_flight_text(sm.in_flight)}")
    blocks += peak_lines(sc.lifetimes, sm)
    fits = sm.fits(fc.device_memory)
    if fc.device_memory is not None:
        blocks.append(_fit_line("this rank", sm, fc.device_memory, fits))
    unused = [p.name for p in sc.memory.params if p.role == "unused"]
    if unused:
        blocks.append("  held but unused: " + ", ".join(unused))
    blocks += [f"  note: {x}" for x in sc.memory.notes]
    return blocks


def _fit_line(who: str, sm: StageMemory, limit: int, fits: bool | None) -> str:
    used = sm.used
    basis = (f" (peak of live tensors, fits only with {sm.margin:.0%} headroom; not counted: operator workspace, "
             "the runtime's own reservations)") if sm.peak is not None else " (estimate)"
    if fits:
        return f"  {who} fits in {human(limit)}: headroom {human(limit - used.total)}{basis}"
    if fits is False:
        return f"  {who} does NOT fit in {human(limit)}: {human(used.total - limit)} over" + \
            (" at least" if used.unknown or sm.used_lower_bound else "") + basis
    return f"  {who} may not fit in {human(limit)}: {size_text(used, sm.used_lower_bound)}{basis}"


def dir_blocks(b: Balance, job: Job, limit: int | None) -> list[Block]:
    """Text/Markdown of a folder's cost: per stage, the balance, the order, the advice and its YAML."""
    t = Table(f"Cost per stage (one rank each; compute = {b.measure}; memory = the peak of live tensors, "
              "or * an estimate where the dump does not give the step's order)",
              ["stage", "rank", "layers", "compute FLOPs", "forward", "backward", "recompute", "optimizer",
               "memory", "in flight", "comm bytes/FLOP"], [])
    for f in b.stages:
        c, sm = f.cost.cost, f.memory
        fits = sm.fits(b.device_memory)
        t.rows.append([cell(f.stage), cell(f.cost.rank), layer_ranges(f.layers),
                       flops_text(c.compute, c.compute_unknown),
                       *(flops_text(c.flops[p], c.unknown_by_phase[p]) for p in ("forward", "backward", "recompute",
                                                                                 "optimizer")),
                       size_text(sm.used, sm.used_lower_bound) + ("" if sm.peak is not None else " *")
                       + ("" if b.device_memory is None else
                                                              " fits" if fits else " DOES NOT FIT" if fits is False
                                                              else " may not fit"),
                       in_flight_figure(sm.in_flight),
                       cell(None) if f.cost.bytes_per_flop is None else f"{f.cost.bytes_per_flop:.4g}"])
    m = b.micro_batches
    how = (SIMULATED if b.played is not None else
           f"{BUBBLE_FORMULA}, t = a stage's {b.measure} per micro batch, v = chunks")
    bubble = (f"  estimated bubble {b.bubble:.1%} with {m.value} micro batches and {b.stage_count.value} stages "
              f"({how})" if b.bubble is not None else
              "  estimated bubble: unknown (" + ("stages not read" if b.absent else
                                                 "micro batches unknown: " + m.where if not m.known else
                                                 "ranks disagree on the number of micro batches ("
                                                 + " or ".join(map(str, b.micro_seen)) + ")" if len(b.micro_seen) > 1
                                                 else "the stage count unknown") + ")")
    blocks: list[Block] = ["", "Balance: " + balance_sentence(b), t.limited(limit)]
    if b.played is not None:
        blocks.append(step_table(b.played).limited(limit))
    blocks += [f"  stage {f.stage}: {note}" for f in b.stages if f.cost.timing is not None for note in f.cost.timing.notes]
    if len(b.stages) > 1 or b.absent:
        blocks.append(bubble)
    if b.device_memory is not None:
        blocks += [_fit_line(f"stage {f.stage} (rank {cell(f.cost.rank)})", f.memory, b.device_memory,
                             f.memory.fits(b.device_memory)) for f in b.stages]
    blocks += [f"  stage {f.stage}: {in_flight_text(f.memory.in_flight)}" for f in b.stages]
    for f in b.stages:
        blocks += peak_lines(f.cost.lifetimes, f.memory, f"stage {f.stage}: ")
    order = Table("Pipeline in execution order (units of work ordered by data, Depend and UpdateState edges)",
                  ["stage", "schedule", "order (F = forward, B = backward, micro batch)"],
                  [[cell(f.stage), f.cost.order.schedule + (f" (the kernel graph's, {f.cost.order.kernel_graph})"
                                                            if f.cost.order.kernel_graph else ""),
                    " ".join(f.cost.order.work) or cell(None)] for f in b.stages])
    blocks.append(order.limited(limit))
    if b.selected is None:
        blocks += advice_sentences(b.advice)
        yaml = advice_yaml(b.advice, job)
        if yaml is not None:
            blocks += ["  as MindFormers configuration (paste into the model's YAML):", Code("yaml", yaml)]
    return blocks


def dir_cost(costs: dict[int, StageCost], job: Job, selected: int | None = None,
             device_memory: int | None = None) -> Balance:
    """The balance of a folder from one cost record per stage (`selected`: the --stage shown)."""
    from ..parallel.balance import balance

    # a rank of unknown stage in a pipeline is no stage's: never measured as stage 0 (`Job.folder_stage`)
    picked = [c for s, c in sorted(costs.items())
              if (selected is None or s == selected) and job.folder_stage(c.stage) is not None]
    return balance(picked, job, device_memory, selected)


def calibration_json(c: Calibration) -> dict[str, Any]:
    """`cost.calibration` (docs/timing.md §5)."""
    f = c.fit
    return {"file": c.file, "steps": c.steps,
            "stages": [{"stage": m.stage, "measured": {"computing_seconds": m.computing,
                                                      "communication_seconds": m.communication,
                                                      "not_overlapped_seconds": m.not_overlapped,
                                                      "overlapped_seconds": m.overlapped, "free_seconds": m.free,
                                                      "bubble_seconds": m.bubble},
                        "estimated": None if m.stage not in c.predicted else
                        {"computing_seconds": c.predicted[m.stage].compute,
                         "communication_seconds": c.predicted[m.stage].comm,
                         "not_overlapped_seconds": c.predicted[m.stage].exposed}} for m in c.measured],
            "fitted": {"compute_efficiency_scale": f.compute_efficiency, "link_efficiency_scale": f.link_efficiency,
                       "overlap": f.overlap, "overlap_was": f.overlap_was, "stages": f.stages},
            "step_seconds": c.step_before, "fitted_step_seconds": c.step_after,
            "measured_step_seconds": c.measured_step}


def calibrate(path: str, timings: list, job: Job, hardware: Profile) -> Calibration:
    """`--calibrate FILE` against the stages' times (each rank's stage from the job)."""
    if not timings or any(t is None for t in timings):
        raise InputError("--calibrate needs the stages' times: give --hardware NAME|FILE, not none")
    rank_stage = {r: s for s, rs in job.stage_ranks.items() for r in rs if r is not None}
    for t in timings:
        if t.rank is not None:
            rank_stage.setdefault(t.rank, t.stage or 0)
    return run_calibration(path, timings, rank_stage, hardware.overlap)
