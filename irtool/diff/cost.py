"""`irtool diff --cost`: stage compute and memory, old against new (docs/cost.md §5), and the
`--fail-on memory` / `--max-memory-increase` gates. One rank per stage on each side (the ranks of
a stage hold the same work)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import InputError
from ..parallel.balance import in_flight, stage_cost, stage_memory
from ..parallel.roles import ROLES
from ..present import Block, Table, cell, change_pct
from ..selection import Selection
from .compare import _exceeds, parse_threshold

COST_KINDS = ("memory", "cost")


def split_fail_on(values: Iterable[str]) -> tuple[list[str], set[str]]:
    """`--fail-on` values without the cost kinds (for the communication diff), and the cost kinds asked for."""
    rest, kinds = [], set()
    for value in values:
        parts = [p.strip() for p in value.split(",")]
        kinds |= {p for p in parts if p in COST_KINDS}
        keep = ",".join(p for p in parts if p and p not in COST_KINDS)
        if keep:
            rest.append(keep)
    return rest, kinds


def memory_threshold(text: str) -> tuple[str, float]:
    """`5%`, `1GiB`, `1048576`: read like `--max-comm-bytes-increase`."""
    try:
        return parse_threshold(text)
    except InputError:
        raise InputError(f"--max-memory-increase: cannot read {text!r} (use e.g. 5% or 1048576 or 10MB)") from None


@dataclass
class StageFigures:
    rank: int | None
    flops: dict[str, int]
    unknown_ops: int
    memory: int  # known bytes
    memory_unknown: int  # tensors or parameters of unknown size beside them
    by_role: dict[str, int]
    schedule: str = ""  # the stage's order named (`order.classify`): a schedule change leaves FLOPs and layout alone

    def as_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "flops": self.flops, "unknown_ops": self.unknown_ops, "memory_bytes": self.memory,
                "memory_unknown": self.memory_unknown, "memory_by_role": self.by_role, "schedule": self.schedule}


@dataclass
class CostDiff:
    stages: dict[int, tuple[StageFigures | None, StageFigures | None]] = field(default_factory=dict)

    def failures(self, kinds: set[str], max_memory_increase: str | None) -> list[str]:
        limit = memory_threshold(max_memory_increase) if max_memory_increase else None
        out = []
        for stage, (old, new) in sorted(self.stages.items()):
            if old is None or new is None:
                if kinds:
                    out.append(f"stage {stage}: only in {'new' if old is None else 'old'}")
                continue
            if "memory" in kinds and old.memory != new.memory:
                out.append(f"stage {stage}: memory {old.memory:,} -> {new.memory:,} bytes")
            if "cost" in kinds and old.flops != new.flops:
                out.append(f"stage {stage}: FLOPs {sum(old.flops.values()):,} -> {sum(new.flops.values()):,}")
            if limit is not None and _exceeds(old.memory, new.memory, limit):
                out.append(f"stage {stage}: memory {old.memory:,} -> {new.memory:,} bytes exceeds +{max_memory_increase}")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"stages": [{"stage": s, "old": o.as_dict() if o else None, "new": n.as_dict() if n else None}
                           for s, (o, n) in sorted(self.stages.items())],
                "estimate": "memory includes estimated gradients and activations (docs/cost.md)"}


def _side(sel: Selection) -> dict[int, StageFigures]:
    """The figures of one rank per stage (`Selection.per_stage`: ranks of a stage hold the same work)."""
    picked = sel.per_stage()
    job = sel.job()  # the selection's job (`diff` folded it from every rank it read)
    out = {}
    for p in picked:
        sc = stage_cost(p.facts, order=p.order())
        sm = stage_memory(sc.memory, in_flight(sc.order, sc.stage, job))
        out[p.stage] = StageFigures(p.rank, dict(sc.cost.flops), sum(sc.cost.unknown.values()), sm.total.total,
                                    sm.total.unknown, {r: sc.memory.role_bytes(r).total for r in ROLES},
                                    sc.order.schedule)
    return out


def cost_diff(old: Selection, new: Selection) -> CostDiff:
    """Stage FLOPs and memory, old -> new, for the stages either side selects."""
    a, b = _side(old), _side(new)
    return CostDiff({s: (a.get(s), b.get(s)) for s in sorted(set(a) | set(b))})




def blocks(d: CostDiff) -> list[Block]:
    """The stage table (its failures are said in the verdict, `report.document`'s `gates`)."""
    t = Table("Stage cost and memory, old -> new (memory is an estimate)",
              ["stage", "FLOPs old", "FLOPs new", "change", "memory old", "memory new", "change"])
    for s, (o, n) in sorted(d.stages.items()):
        fo = sum(o.flops.values()) if o else None
        fn = sum(n.flops.values()) if n else None
        t.rows.append([cell(s), cell(fo), cell(fn), change_pct(fo, fn) if o and n else cell(None),
                       cell(o.memory if o else None), cell(n.memory if n else None),
                       change_pct(o.memory, n.memory) if o and n else cell(None)])
    # the pipeline schedule (1F1B -> GPipe) changes no operator, layout or FLOPs: said where it changed
    changed = [f"stage {s}: order {o.schedule} -> {n.schedule}" for s, (o, n) in sorted(d.stages.items())
               if o and n and o.schedule != n.schedule]
    return ["", t, *changed]
