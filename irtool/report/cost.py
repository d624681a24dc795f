"""Cost in `summarize --cost`: FLOPs and memory of a rank, and the balance of a folder's stages
(docs/cost.md). JSON field `cost`; text and Markdown as tables."""
from __future__ import annotations

from functools import partial
from typing import Any

from ..dumpdir import Progress, RankFile, map_ranks
from ..errors import InputError
from ..ir import Dump
from ..parallel import ParallelFacts
from ..parallel.balance import Balance, StageCost, balance, measure_stage
from ..present import Block, Table, bytes_text, cell, parse_bytes
from .summary import DirSummary


def parse_memory(text: str) -> int:
    """`64GiB`, `80GB`, `1073741824` -> bytes."""
    size = parse_bytes(text)
    if size is None:
        raise InputError(f"--device-memory: cannot read {text!r} (use e.g. 64GiB, 80GB or 1073741824)")
    return int(size)


def human(n: int | None) -> str:
    """`bytes_text` (`1,625,620`, `—` when unknown) with the binary unit device memory is sold in:
    `1,625,620 (1.55 MiB)`."""
    if n is None:
        return bytes_text(n)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{bytes_text(n)} ({n / size:.2f} {unit})"
    return bytes_text(n)


def _fits(peak: int, limit: int | None) -> dict[str, Any]:
    return {"device_memory_bytes": limit, "fits": None if limit is None else peak <= limit,
            "headroom_bytes": None if limit is None else limit - peak}


def rank_cost(dump: Dump, facts: ParallelFacts, device_memory: int | None = None) -> dict[str, Any]:
    """The `cost` field of a single-file summary (docs/cost.md): the same figures as its stage's
    row in a folder summary, except that a file does not say how many stages there are."""
    sc = measure_stage(dump, facts, None, None)
    c, m = sc.cost, sc.memory
    if facts.stage is not None and not (sc.schedule and sc.schedule.fixed):
        m.notes.append("single file: the stage count is not in the dump and this pass does not fix the order; "
                       "activations are for one micro batch (summarize the folder for those in flight)")
    return {"stage": facts.stage, "compute": c.as_dict(), "memory": m.as_dict(), "comm_bytes": sc.comm_bytes,
            "bytes_per_flop": sc.bytes_per_flop, "schedule": sc.schedule.as_dict() if sc.schedule else None,
            **_fits(m.peak, device_memory)}


def stage_cost(rank: RankFile, stages: int) -> StageCost:
    """One stage's cost from one of its ranks (runs in a worker process)."""
    from ..parallel import analyze

    dump = rank.load()
    return measure_stage(dump, analyze(dump), rank.rank, stages)


def dir_cost(summary: DirSummary, device_memory: int | None = None, jobs: int | None = None,
             progress: Progress | None = None) -> tuple[dict[str, Any], Balance | None]:
    """The `cost` field of a folder summary: one rank per stage (ranks of a stage hold the same
    work), then the balance. Without pipeline stages: the first rank alone."""
    first: dict[int, RankFile] = {}
    for r in summary.rows:
        first.setdefault(0 if r.stage is None else r.stage, RankFile(r.rank, r.path))
    files = [f for _, f in sorted(first.items())]
    costs = map_ranks(partial(stage_cost, stages=len(first)), files, jobs, progress)
    b = balance(costs, device_memory)
    if summary.stage is not None:
        b.sentence = f"only stage {summary.stage} selected (--stage): no other stage to compare with"
    out = b.as_dict(device_memory)
    out["device_memory_bytes"] = device_memory
    out["one_rank_per_stage"] = [c.rank for c in costs]
    out["memory"] = {str(c.stage): c.memory.as_dict() for c in costs}
    return out, b


def _flops_row(name: str, f: dict[str, int]) -> list[str]:
    return [name, cell(f["forward"]), cell(f["backward"]), cell(f["recompute"]), cell(f["optimizer"])]


def rank_blocks(c: dict[str, Any], limit: int | None) -> list[Block]:
    """Text/Markdown of a single file's `cost`."""
    comp, mem = c["compute"], c["memory"]
    blocks: list[Block] = ["", f"Cost (FLOPs this device runs per step; shapes {comp['shapes']})",
                           f"  total {cell(comp['total_flops'])} FLOPs, forward MatMul {cell(comp['matmul_forward_flops'])}"
                           f", {comp['micro_batches']} micro batch(es); communication {human(c['comm_bytes'])} bytes"
                           + (f" = {c['bytes_per_flop']:.4g} bytes per FLOP" if c["bytes_per_flop"] is not None else "")]
    if comp["unknown_count"]:
        blocks.append(f"  {comp['unknown_count']} operator(s) of unknown cost, not counted: "
                      + ", ".join(f"{op} x{n}" for op, n in comp["unknown_ops"].items()))
    if comp["dynamic_ops"]:
        blocks.append("  " + ", ".join(f"{op} x{n}" for op, n in comp["dynamic_ops"].items())
                      + f" counted at the mean of their token rows (expert-parallel all-to-all): "
                      f"{cell(comp['dynamic_flops'])} FLOPs (at most {cell(comp['dynamic_flops_bound'])})")
    if comp["memory_bound_bytes"] or comp["memory_bound_unknown"]:
        blocks.append(f"  memory-bound operators (sort, top-k, scatter): {human(comp['memory_bound_bytes'])} bytes moved"
                      + (f", {comp['memory_bound_unknown']} of unknown size" if comp["memory_bound_unknown"] else ""))
    layers = Table("FLOPs per layer and phase", ["layer", "forward", "backward", "recompute", "optimizer"],
                   [_flops_row(k, v) for k, v in sorted(comp["flops_by_layer"].items(),
                                                         key=lambda kv: -sum(kv[1].values()))])
    layers.rows.append(_flops_row("total", comp["flops"]))
    roles = mem["bytes_by_role"]
    mt = Table("Memory of this rank (bytes; * = estimate)", ["what", "bytes"],
               [["parameters (weights)", human(roles["weight"])],
                ["optimizer states", human(roles["optimizer-state"])],
                ["gradient accumulation buffers", human(roles["accumulation"])],
                ["other parameters (hyperparameters, counters)", human(roles["hyperparameter"] + roles["other"])],
                ["held but unused parameters", human(roles["unused"])],
                ["gradients without a buffer *", human(mem["gradients_estimate_bytes"])],
                [f"activations kept for backward, per micro batch * ({mem['activation_tensors_per_micro']} tensors)",
                 human(mem["activations_per_micro_bytes"])],
                [f"activations in flight * ({mem['micro_batches_in_flight']} micro batch(es))",
                 human(mem["activations_bytes"])],
                ["total *", human(mem["total_bytes"])]])
    blocks += [layers.limited(limit), mt]
    sched = c.get("schedule")
    if sched and sched["events"]:
        blocks.append(f"  pipeline order: {' '.join(sched['order'])} ({sched['schedule']})" if sched["fixed"]
                      else f"  pipeline order: {sched['schedule']}")
    if c["device_memory_bytes"] is not None:
        blocks.append(_fit_line("this rank", mem["total_bytes"], c["device_memory_bytes"]))
    if mem["unused_params"]:
        blocks.append("  held but unused: " + ", ".join(mem["unused_params"]))
    blocks += [f"  note: {x}" for x in mem["notes"]]
    return blocks


def _fit_line(who: str, peak: int, limit: int) -> str:
    if peak <= limit:
        return f"  {who} fits in {human(limit)}: headroom {human(limit - peak)}"
    return f"  {who} does NOT fit in {human(limit)}: {human(peak - limit)} over"


def dir_blocks(c: dict[str, Any], limit: int | None) -> list[Block]:
    """Text/Markdown of a folder's `cost`: per stage, the balance sentence, the advice."""
    t = Table("Cost per stage (one rank each; memory is an estimate)",
              ["stage", "rank", "layers", "forward FLOPs", "backward", "recompute", "optimizer", "memory",
               "comm bytes/FLOP", "unknown ops"],
              [[cell(s["stage"]), cell(s["rank"]), s["layers"], cell(s["flops"]["forward"]),
                cell(s["flops"]["backward"]), cell(s["flops"]["recompute"]), cell(s["flops"]["optimizer"]),
                human(s["memory_bytes"]) + ("" if s["fits"] is None else (" fits" if s["fits"] else " DOES NOT FIT")),
                cell(None) if s["bytes_per_flop"] is None else f"{s['bytes_per_flop']:.4g}", cell(s["unknown_ops"])]
               for s in c["stages"]])
    blocks: list[Block] = ["", "Balance: " + c["sentence"], t.limited(limit),
                           f"  estimated bubble {c['bubble']:.1%} with {c['micro_batches']} micro batches "
                           f"({c['bubble_formula']}, t = a stage's forward+backward+recompute FLOPs per micro batch)"]
    if c["device_memory_bytes"] is not None:
        blocks += [_fit_line(f"stage {s['stage']} (rank {s['rank']})", s["memory_bytes"], c["device_memory_bytes"])
                   for s in c["stages"]]
    order = Table("Pipeline in execution order (Send/Receive ordered by data, Depend and UpdateState edges)",
                  ["stage", "schedule", "order (F = forward, B = backward, micro batch)"],
                  [[cell(s["stage"]), s["schedule"]["schedule"], " ".join(s["schedule"]["order"]) or cell(None)]
                   for s in c["stages"] if s.get("schedule")])
    blocks.append(order.limited(limit))
    a = c.get("advice")
    if a:
        head = ("Advice (estimate from this compilation): " + "; ".join(
            f"stage {i}: {x}" for i, x in enumerate(a["layers_per_stage"])))
        blocks += [head, f"  MindFormers offset {a['offset']}: heaviest/lightest "
                   f"{a['ratio']:.2f}x, bubble {a['bubble']:.1%}"
                   + ("" if a["fits"] is None else ("; every stage fits" if a["fits"] else
                                                    "; no assignment fits the device memory"))]
    return blocks

