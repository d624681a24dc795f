"""The job record (`irtool.parallel.job.Job`) as people read it: one line for a headline, and a table
of every field with its value and evidence (docs/parallel.md §17). Every command shows a job so."""
from __future__ import annotations

from typing import Any

from ..parallel.job import Evidence, Job
from .tables import Table
from .text import DASH


def layer_ranges(indices: list[int]) -> str:
    """[0, 1, 2, 4] -> `layers 0-2, 4`; [7] -> `layer 7`; [] -> `no layer`."""
    if not indices:
        return "no layer"
    parts, start, prev = [], indices[0], indices[0]
    for i in [*indices[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ("layer " if len(indices) == 1 else "layers ") + ", ".join(parts)


def _value(e: Evidence) -> str:
    if not e.known:
        return DASH
    v: Any = e.value
    return "yes" if v is True else str(v)


def job_line(job: Job) -> str:
    """`Job: 8 ranks, dp 2 x mp 2 x pp 2, 4 micro batches, AdamW sharded over 2 ranks, gradient accumulation`."""
    layout = " x ".join(f"{name} {_value(e)}" for name, e in (("dp", job.dp), ("mp", job.mp), ("pp", job.pipeline_stages))
                        ) + "".join(f" x {name} {e.value}" for name, e in (("ep", job.ep), ("sp", job.sp), ("cp", job.cp))
                                    if e.known and e.value != 1)
    parts = [f"world {_value(job.world_size)}", layout]
    if job.chunks.known and job.chunks.value > 1:
        parts.append(f"{job.chunks.value} chunks per stage")
    m = job.micro_batches
    parts.append(f"{_value(m)} micro batch{'' if m.value == 1 else 'es'}")
    opt = _value(job.optimizer)
    if job.optimizer_shard.known and job.optimizer_shard.value > 1:
        opt += f" sharded over {job.optimizer_shard.value} ranks"
    parts.append(f"optimizer {opt}" if job.training else "inference (no backward)")
    if job.gradient_accumulation.known:
        parts.append("gradient accumulation")
    if job.recompute:
        parts.append("recompute " + "; ".join(f"stage {s}: {layer_ranges(v)}" for s, v in job.recompute.items()))
    if job.stages_absent:
        parts.append(f"stage{'s' if len(job.stages_absent) > 1 else ''} {', '.join(map(str, job.stages_absent))} not read")
    return "Job: " + ", ".join(parts)


def job_table(job: Job) -> Table:
    """Every field of the job with its value and where the dump shows it (or why it is unknown)."""
    rows = []
    for label, e in (("world size", job.world_size), ("pipeline stages", job.pipeline_stages), ("dp", job.dp),
                     ("mp", job.mp), ("ep", job.ep), ("sp", job.sp), ("cp", job.cp), ("micro batches", job.micro_batches),
                     ("chunks per stage", job.chunks), ("optimizer", job.optimizer),
                     ("optimizer sharding", job.optimizer_shard), ("gradient accumulation", job.gradient_accumulation)):
        rows.append([label, _value(e), e.where if e.known else f"unknown: {e.where}"])
    for s, ranks in job.stage_ranks.items():
        held = job.stage_layers.get(s, [])
        rows.append([f"stage {s}", f"{layer_ranges(held)}; ranks {', '.join(DASH if r is None else str(r) for r in ranks)}",
                     job.stage_layers_where.get(s, "no parameter of a layer read")])
    for s in job.stages_absent:
        rows.append([f"stage {s}", DASH, "no rank read is on it"])
    for s, layers in job.recompute.items():
        rows.append([f"recompute, stage {s}", layer_ranges(layers), "recomputed copies (`duplicated`) read their weights"])
    return Table("Job (each value and where the dump shows it)", ["field", "value", "evidence"], rows)
