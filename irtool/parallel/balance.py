"""Balance of a pipeline's stages and the layer-to-stage assignment that would even it out
(docs/cost.md §3). Works on one rank per stage (ranks of one stage hold the same work)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import Dump
from .cost import CostFacts, compute_cost
from .memory import MemoryFacts, compute_memory
from .order import StageOrder, stage_order
from .params import layer_index as param_layer
from .records import ParallelFacts


def layer_index(layer: str) -> int | None:
    """The layer index of a per-layer key (`cost.layer_key`), None for work of no layer."""
    return int(layer) if layer.isdigit() else None


def ranges(indices: list[int]) -> str:
    """[0, 1, 2, 4] -> `layers 0-2, 4`; [7] -> `layer 7`; [] -> `no layer`."""
    if not indices:
        return "no layer"
    parts, start, prev = [], indices[0], indices[0]
    for i in indices[1:] + [None]:  # type: ignore[list-item]
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ("layer " if len(indices) == 1 else "layers ") + ", ".join(parts)


@dataclass
class StageCost:
    """One stage, from one of its ranks."""

    stage: int
    rank: int | None
    cost: CostFacts
    memory: MemoryFacts
    comm_bytes: int  # known communication bytes of the rank
    layers: list[int] = field(default_factory=list)  # repeated-cell indices with forward FLOPs here
    schedule: StageOrder | None = None

    @property
    def compute(self) -> int:
        """FLOPs of forward, backward and recompute (what the pipeline's critical path runs)."""
        f = self.cost.flops
        return f["forward"] + f["backward"] + f["recompute"]

    @property
    def bytes_per_flop(self) -> float | None:
        return self.comm_bytes / self.cost.total if self.cost.total else None

    def layer_flops(self) -> dict[int, int]:
        """Compute FLOPs per repeated-cell index on this stage."""
        out: dict[int, int] = {}
        for layer, ph in self.cost.by_layer.items():
            i = layer_index(layer)
            if i is not None:
                out[i] = out.get(i, 0) + ph["forward"] + ph["backward"] + ph["recompute"]
        return out


def measure_stage(dump: Dump, facts: ParallelFacts, rank: int | None, stages: int | None) -> StageCost:
    """One stage's cost, memory and order from one of its ranks; no pipeline: stage 0. The
    activations in flight are those of the order the dump fixes, else the 1F1B assumption (with
    `stages` known), else one micro batch."""
    stage = facts.stage or 0
    memory = compute_memory(facts.table, stage, stages)
    sched = stage_order(facts.table)  # in flight: decided once, in parallel/order.py
    if sched.in_flight is not None and memory.activations_micro is not None:
        memory.in_flight = sched.in_flight
        memory.notes = [n for n in memory.notes if not n.startswith("activations in flight")]
        memory.notes.append(f"activations in flight: {sched.in_flight} micro batch(es), the most begun and not "
                            "yet finished backward in the order this dump fixes")
    return StageCost(stage=stage, rank=rank, cost=compute_cost(facts.table), memory=memory,
                     comm_bytes=sum(x.bytes or 0 for x in facts.comm), schedule=sched)


def stage_layers(cost: CostFacts) -> list[int]:
    return sorted({i for layer, ph in cost.by_layer.items() if ph["forward"] and (i := layer_index(layer)) is not None})


def bubble(times: list[float], micros: int) -> float:
    """Idle share of a pipeline of per-micro-batch stage times `times` and `micros` micro batches:
    step T = sum(t) + (m - 1) * max(t); bubble = 1 - m * sum(t) / (S * T) (equal stages:
    (S - 1) / (S + m - 1))."""
    if not times or not any(times):
        return 0.0
    s, m = len(times), max(1, micros)
    step = sum(times) + (m - 1) * max(times)
    return 1.0 - m * sum(times) / (s * step)


@dataclass
class Advice:
    """The contiguous layer-to-stage assignment minimising the heaviest stage (an estimate)."""

    layers_per_stage: list[list[int]]
    offset: list[int]  # MindFormers `offset`: layers per stage minus the even share
    heaviest: int
    ratio: float | None
    bubble: float
    fits: bool | None  # every stage under the memory limit (None: no limit given)
    memory: list[int]

    def as_dict(self) -> dict[str, Any]:
        return {"layers_per_stage": [ranges(x) for x in self.layers_per_stage],
                "layer_counts": [len(x) for x in self.layers_per_stage], "offset": self.offset,
                "heaviest_stage_flops": self.heaviest, "ratio": self.ratio, "bubble": round(self.bubble, 4),
                "fits": self.fits, "memory_bytes": self.memory, "estimate": True}


@dataclass
class Balance:
    stages: list[StageCost]
    micros: int
    sentence: str
    forward_ratio: float | None
    compute_ratio: float | None
    bubble: float
    advice: Advice | None

    def as_dict(self, device_memory: int | None = None) -> dict[str, Any]:
        rows = []
        for s in self.stages:
            mem = s.memory.peak
            rows.append({"stage": s.stage, "rank": s.rank, "layers": ranges(s.layers), "layer_indices": s.layers,
                         "flops": dict(s.cost.flops), "compute_flops": s.compute,
                         "matmul_forward_flops": s.cost.matmul_forward,
                         "unknown_ops": sum(s.cost.unknown.values()), "memory_bytes": mem,
                         "comm_bytes": s.comm_bytes, "bytes_per_flop": s.bytes_per_flop,
                         "fits": None if device_memory is None else mem <= device_memory,
                         "headroom_bytes": None if device_memory is None else device_memory - mem,
                         "schedule": s.schedule.as_dict() if s.schedule else None})
        return {"stages": rows, "micro_batches": self.micros, "sentence": self.sentence,
                "forward_ratio": self.forward_ratio, "compute_ratio": self.compute_ratio,
                "bubble": round(self.bubble, 4), "bubble_formula": "1 - m*sum(t)/(S*(sum(t) + (m-1)*max(t)))",
                "advice": self.advice.as_dict() if self.advice else None}


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def balance(stages: list[StageCost], device_memory: int | None = None) -> Balance:
    """Per-stage totals, the heaviest/lightest ratio and its sentence, and the advice."""
    stages = sorted(stages, key=lambda s: s.stage)
    for s in stages:
        s.layers = stage_layers(s.cost)
    micros = max((s.cost.micros for s in stages), default=1)
    heavy = max(stages, key=lambda s: s.cost.flops["forward"])
    light = min(stages, key=lambda s: s.cost.flops["forward"])
    ratio = _ratio(heavy.cost.flops["forward"], light.cost.flops["forward"])
    comp = [s.compute for s in stages]
    if len(stages) < 2:
        sentence = "one stage: nothing to balance"
    elif ratio is None:
        sentence = f"stage {light.stage} does no forward FLOPs that this tool can count"
    else:
        sentence = (f"stage {heavy.stage} does {ratio:.1f}x the forward FLOPs of stage {light.stage}: it holds "
                    f"{ranges(heavy.layers)}, stage {light.stage} holds {ranges(light.layers)}")
    return Balance(stages=stages, micros=micros, sentence=sentence, forward_ratio=ratio,
                   compute_ratio=_ratio(max(comp), min(comp)) if comp else None,
                   bubble=bubble([c / micros for c in comp], micros), advice=advise(stages, micros, device_memory))


def advise(stages: list[StageCost], micros: int, device_memory: int | None) -> Advice | None:
    """Split the layers (in order, contiguous) over the stages so the heaviest stage is lightest,
    each stage keeping its own non-layer work (embedding, head, loss, optimizer of those) and, when
    `device_memory` is given, staying under it. Per-layer cost is the layer's FLOPs where it ran
    now; per-layer memory its parameters, states and buffers (by name) and the stage's activations
    shared evenly among its layers (an estimate)."""
    n = len(stages)
    layer_cost: dict[int, int] = {}
    layer_mem: dict[int, int] = {}
    layer_act: dict[int, int] = {}
    base_cost, base_mem = [], []
    for s in stages:
        lf = s.layer_flops()
        layer_cost.update(lf)
        held = s.layers or sorted(lf)
        static = sum(p.bytes or 0 for p in s.memory.params) + s.memory.gradients_estimate
        act = s.memory.activations_micro or 0
        layer_static = _layer_static(s.memory, held)
        for i in held:
            layer_mem[i] = layer_static.get(i, 0)
            layer_act[i] = act // max(1, len(held))
        base_cost.append(s.compute - sum(lf.values()))
        base_mem.append(static - sum(layer_static.values()))
    order = sorted(layer_cost)
    if n < 2 or len(order) < n:
        return None

    def stage_mem(k: int, group: list[int]) -> int:
        in_flight = min(n - k, micros)
        return base_mem[k] + sum(layer_mem.get(i, 0) + layer_act.get(i, 0) * in_flight for i in group)

    # dp[k][j]: best heaviest stage for the first j layers on stages 0..k-1
    inf = float("inf")
    best: list[list[float]] = [[inf] * (len(order) + 1) for _ in range(n + 1)]
    cut: list[list[int]] = [[0] * (len(order) + 1) for _ in range(n + 1)]
    best[0][0] = 0
    for k in range(1, n + 1):
        for j in range(len(order) + 1):
            for i in range(j + 1):
                if best[k - 1][i] == inf:
                    continue
                group = order[i:j]
                if device_memory is not None and stage_mem(k - 1, group) > device_memory:
                    continue
                heavy = max(best[k - 1][i], base_cost[k - 1] + sum(layer_cost[x] for x in group))
                if heavy < best[k][j]:
                    best[k][j], cut[k][j] = heavy, i
    fits: bool | None = None if device_memory is None else True
    if best[n][len(order)] == inf:
        if device_memory is None:
            return None
        adv = advise(stages, micros, None)  # nothing fits: the unconstrained split, said so
        if adv is not None:
            adv.fits = False
        return adv
    groups: list[list[int]] = []
    j = len(order)
    for k in range(n, 0, -1):
        i = cut[k][j]
        groups.insert(0, order[i:j])
        j = i
    loads = [base_cost[k] + sum(layer_cost[x] for x in g) for k, g in enumerate(groups)]
    even = len(order) // n
    return Advice(layers_per_stage=groups, offset=[len(g) - even for g in groups], heaviest=max(loads),
                  ratio=_ratio(max(loads), min(loads)), bubble=bubble([c / micros for c in loads], micros),
                  fits=fits, memory=[stage_mem(k, g) for k, g in enumerate(groups)])


def _layer_static(memory: MemoryFacts, held: list[int]) -> dict[int, int]:
    """Parameter, state and buffer bytes per layer, by the layer index in the parameter's name
    (`layers.3.w1`, `accu_grads.layers.3.w1`, `adam_m.layers.3.w1`); the others stay with the stage."""
    out = {i: 0 for i in held}
    for p in memory.params:
        if p.role in ("hyperparameter", "unused") or p.bytes is None:
            continue
        hit = param_layer(p.name)
        if hit in out:
            out[hit] += p.bytes
    return out
