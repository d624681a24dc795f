"""The job record (`irtool.parallel.job.Job`) as people read it: one line for a headline, and a table
of every field with its value and evidence (docs/parallel.md §18). Every command shows a job so."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..parallel.job import Evidence, Job, JobChange
from .tables import Table
from .text import DASH

if TYPE_CHECKING:  # a summary, which imports this, needs no cost model (`logical` loads it)
    from ..parallel.logical import LogicalDiff


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
        parts.append(f"{job.chunks.value} {'segments (folded)' if job.folded else 'chunks'} per stage")
    m = job.micro_batches
    parts.append(f"micro batches: ranks disagree ({' or '.join(map(str, job.micro_seen))})" if len(job.micro_seen) > 1
                 else f"{_value(m)} micro batch{'' if m.value == 1 else 'es'}")
    opt = _value(job.optimizer)
    if job.optimizer_shard.known and job.optimizer_shard.value > 1:
        opt += f" sharded over {job.optimizer_shard.value} ranks"
    parts.append(f"optimizer {opt}" if job.training else "inference (no backward)" if job.training is False else
                 f"training or inference {DASH} (a pass before the pipeline split)")
    if job.gradient_accumulation.known:
        parts.append("gradient accumulation")
    if job.recompute:
        parts.append("recompute " + "; ".join(f"stage {s}: {layer_ranges(v)}" for s, v in job.recompute.items()))
    if job.stages_absent:
        parts.append(f"stage{'s' if len(job.stages_absent) > 1 else ''} {', '.join(map(str, job.stages_absent))} not read")
    if job.stage_unknown:
        parts.append(f"{_ranks(job.stage_unknown)} of unknown stage")
    return "Job: " + ", ".join(parts)


def _ranks(ranks: list[int | None]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(DASH if r is None else str(r) for r in ranks)


def job_table(job: Job) -> Table:
    """Every field of the job with its value and where the dump shows it (or why it is unknown)."""
    rows = []
    for label, e in (("world size", job.world_size), ("pipeline stages", job.pipeline_stages), ("dp", job.dp),
                     ("mp", job.mp), ("ep", job.ep), ("sp", job.sp), ("cp", job.cp), ("micro batches", job.micro_batches),
                     ("segments per stage" if job.folded else "chunks per stage", job.chunks),
                     ("optimizer", job.optimizer),
                     ("optimizer sharding", job.optimizer_shard), ("gradient accumulation", job.gradient_accumulation),
                     ("global batch", job.global_batch), ("layers", job.num_layers), ("hidden size", job.hidden_size),
                     ("feed-forward size", job.ffn_size), ("attention heads", job.heads),
                     ("key-value heads", job.kv_heads),
                     ("vocabulary", job.vocab_size), ("sequence length", job.sequence_length)):
        value = f"{' or '.join(map(str, job.micro_seen))}: ranks disagree" \
            if e is job.micro_batches and len(job.micro_seen) > 1 else _value(e)
        rows.append([label, value, e.where if e.known else f"unknown: {e.where}"])
    for s, ranks in job.stage_ranks.items():
        held = job.stage_layers.get(s, [])
        rows.append([f"stage {s}", f"{layer_ranges(held)}; ranks {', '.join(DASH if r is None else str(r) for r in ranks)}",
                     job.stage_layers_where.get(s, "no parameter of a layer read")])
    for s in job.stages_absent:
        rows.append([f"stage {s}", DASH, "no rank read is on it"])
    if job.stage_unknown:
        rows.append(["stage unknown", f"{layer_ranges(job.stage_unknown_layers)}; {_ranks(job.stage_unknown)}",
                     "no pipeline Send/Receive of these ranks says its stage"])
    for s, layers in job.recompute.items():
        rows.append([f"recompute, stage {s}", layer_ranges(layers), "recomputed copies (`duplicated`) read their weights"])
    rows += [["note", *n.split(": ", 1)] for n in job.notes]
    return Table("Job (each value and where the dump shows it)", ["field", "value", "evidence"], rows)


_LABELS = {"global_batch": "global batch", "num_layers": "layers", "hidden_size": "hidden size",
           "ffn_size": "feed-forward size", "heads": "attention heads", "kv_heads": "key-value heads",
           "vocab_size": "vocabulary", "sequence_length": "sequence length", "world_size": "world size", "dp": "dp",
           "mp": "mp", "pipeline_stages": "pipeline stages", "ep": "ep",
           "sp": "sp", "chunks": "chunks per stage", "micro_batches": "micro batches",
           "recompute_layers": "recompute", "optimizer": "optimizer", "optimizer_shard": "optimizer sharding",
           "gradient_accumulation": "gradient accumulation"}


def _layers_value(layers: list[int] | None, none: str) -> str:
    """[0, 1, 2, 3, 4] -> `0-4`, [0, 1, 4] -> `0-1, 4`, [] -> `none`."""
    if layers is None:
        return none
    return layer_ranges(layers).split(" ", 1)[1] if layers else "none"


def change_parts(c: JobChange) -> tuple[str, str, str]:
    """(what, old, new) of a configuration change as people read it: (`micro batches`, `8`, `4`),
    (`stage 0 layers`, `0-4`, `0-1`), (`recompute`, `none`, `layers 0-1, 4`), (`optimizer sharding`, `1`, `2`)."""
    if c.field == "stage_layers":
        return f"stage {c.stage} layers", _layers_value(c.old, "no such stage"), _layers_value(c.new, "no such stage")
    if c.field == "recompute_layers":
        return "recompute", layer_ranges(c.old) if c.old else "none", layer_ranges(c.new) if c.new else "none"

    def value(v: Any, seen: tuple[int, ...] = ()) -> str:
        if seen:  # ranks of that side disagree: every count, never one of them alone
            return f"{' or '.join(map(str, seen))} (ranks disagree)"
        return "yes" if v is True else "no" if v is False else str(v)

    return _LABELS.get(c.field, c.field.replace("_", " ")), value(c.old, c.old_seen), value(c.new, c.new_seen)


def change_text(c: JobChange) -> str:
    """`micro batches 8 → 4`, `stage 0 layers 0-4 → 0-1`, `optimizer SGD → AdamWeightDecay`."""
    what, old, new = change_parts(c)
    return f"{what} {old} → {new}"


def changes_line(changes: list[JobChange]) -> str:
    """Every change on one line, in the job's order: `micro batches 8 → 4; stage 0 layers 0-4 → 0-1; ...`."""
    return "; ".join(change_text(c) for c in changes)


def changes_table(changes: list[JobChange]) -> Table:
    """The configuration change, one row per field (what, old, new, evidence of each side)."""
    rows = [[*change_parts(c), c.old_where or DASH, c.new_where or DASH] for c in changes]
    return Table("Configuration changed (old → new)", ["setting", "old", "new", "old evidence", "new evidence"], rows)


DEGREE_NAMES = {"dp": "data-parallel", "mp": "model-parallel", "cp": "context-parallel", "ep": "expert-parallel"}


def strategy_groups(d: LogicalDiff) -> list[str]:
    """One line per degree that changed: the user operators whose strategy changes follow from it
    (`OperatorPair.follows`): `mp 2 → 4: 150 operators' strategies change accordingly (their
    model-parallel dimension 2 → 4)`. An operator split by two changed degrees counts in both."""
    return [f"{c.field} {c.old} → {c.new}: {n} operator{'s' if n > 1 else ''}' strategies change "
            f"accordingly (their {DEGREE_NAMES[c.field]} dimension {c.old} → {c.new})" for c, n in follows(d)]


def follows(d: LogicalDiff) -> list[tuple[JobChange, int]]:
    """Each degree that changed with the number of user operators whose strategy change follows from it."""
    counted = [(c, sum(c.field in p.follows for p in d.ops)) for c in d.changes]
    return [(c, n) for c, n in counted if n]
