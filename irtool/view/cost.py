"""Cost overlays of `irtool view`: Model Explorer node data valuing each node by what the cost
records say of it (docs/cost.md; read, never re-derived here): `FLOPs` (`parallel.cost`: each
operator's FLOPs in the step, a reused cell's operators times its calls), `bytes held` (`parallel.memory`:
each parameter as this rank holds it: weights, optimizer states, buffers) and `activation bytes`
(`parallel.memory`: each forward output kept for the backward, for one micro batch). An operator of
unknown cost has no value (unknown is never 0).

A node's colour is its value's decade below the largest value of a node of the model (`HEAT`,
palest for less than a ten-thousandth of it), the same scale in every graph of a model. On an
overview each part box carries the sum of its nodes' values, on a folder's execution-order graph each
unit of work the FLOPs of its operators (the stage's load), coloured from the least to the largest
sum of the graph (sums are alike in size: decades would colour them all alike).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..parallel import ParallelFacts
from ..parallel.balance import stage_cost
from ..present.palette import HEAT
from .graphs import node_ids, own_ids


@dataclass
class NodeCost:
    """What the cost records say of one rank's nodes."""

    flops: dict[str, int]  # node uid -> its known FLOPs in the step
    unknown: int  # operators of unknown cost (no value)
    held: dict[str, int]  # parameter reference (`%para3_fc1.weight`) -> bytes this rank holds
    kept: dict[str, int]  # node uid -> bytes of its output kept for the backward, one micro batch
    kept_how: str  # which micro batch (`memory.Activations.how`), "" without backward work


def node_cost(facts: ParallelFacts, rank: int | None, file: str) -> NodeCost:
    """The cost records of one analysed rank (`balance.stage_cost`), by node."""
    sc = stage_cost(facts, keep_ops=True, walk=False)
    cost, memory, t = sc.cost, sc.memory, facts.table
    held_by_name = {p.name: p.bytes for p in memory.params if p.bytes is not None}
    held = {p.ref: held_by_name[p.name] for p in t.dump.params if p.name in held_by_name}
    return NodeCost(flops={o.node: o.flops for o in cost.ops if o.flops is not None},
                    unknown=sum(1 for o in cost.ops if o.flops is None), held=held,
                    kept={u: b for u, b in memory.kept.items() if b is not None},
                    kept_how=memory.activations.how if memory.activations else "")


# the overlays, by name: which values of a rank's NodeCost, what the values are, and their unit
COST_OVERLAYS: dict[str, tuple[Callable[[NodeCost], dict[str, int]], str, str]] = {
    "FLOPs": (lambda c: c.flops, "each operator's FLOPs in the step (a reused cell's operators times its calls)",
              "FLOPs"),
    "bytes held": (lambda c: c.held, "each parameter's bytes this rank holds", "bytes"),
    "activation bytes": (lambda c: c.kept, "each forward output's bytes kept for the backward, one micro batch",
                         "bytes"),
}


def heat_thresholds(top: int) -> list[dict[str, Any]]:
    """Model Explorer thresholds colouring a value by its decade below `top` (the largest value shown)."""
    edges = [top // 10 ** k for k in range(len(HEAT) - 1, 0, -1)] + [top]
    return [{"value": v, "bgColor": c, "textColor": _text_on(i)} for i, (v, c) in enumerate(zip(edges, HEAT))]


def log_thresholds(low: int, top: int) -> list[dict[str, Any]]:
    """Thresholds colouring a value by where it lies between `low` and `top` on a log scale, in as many steps as
    HEAT has colours: sums of very different sizes (the parts of a large graph, one holding the whole forward)
    each get a colour of their own size, not one dark box among pale ones."""
    low = max(low, 1)
    edges = [round(low * (top / low) ** ((i + 1) / len(HEAT))) for i in range(len(HEAT) - 1)] + [top]
    return [{"value": v, "bgColor": c, "textColor": _text_on(i)} for i, (v, c) in enumerate(zip(edges, HEAT))]


def _text_on(i: int) -> str:
    """White text on the two darkest colours of HEAT, black on the others."""
    return "#ffffff" if i >= len(HEAT) - 2 else "#000000"


def heat_node_data(name: str, values: dict[str, dict[str, int]], graphs: list[dict[str, Any]],
                   sums: dict[str, dict[str, int]] | None = None, what: str = "", unit: str = "") -> dict[str, Any]:
    """Node data `name` by graph id from node values (`values`: graph id before a split -> node id -> value),
    for the graphs shown: a split graph's parts get their nodes' values, one scale for the model (its
    largest value of a node); an overview each part box the sum of its own nodes' values, on a log scale from
    the least to the largest part; and `sums` (graph id -> node id -> a sum: a folder's units of work) are
    given as they are, each such graph on a linear scale of its own. Each graph's data carries its `legend`
    (what is coloured, `what`, in `unit`, and the scale), which the page shows beside the graph."""
    ids = {g["id"]: node_ids(g) for g in graphs}
    out = {gid: {k: v for k, v in vs.items() if k in ids[gid]} for gid, vs in values.items() if gid in ids}
    parts: dict[str, dict[str, int]] = {}
    for g in graphs:
        whole = g["groupNodeAttributes"].get("", {}).get("part of")
        if whole not in values:
            continue
        out[g["id"]] = {k: v for k, v in values[whole].items() if k in ids[g["id"]]}
        overview = next((o["id"] for o in graphs if o["groupNodeAttributes"].get("", {}).get("overview of") == whole),
                        None)
        if overview is not None:
            mine = own_ids(g)
            parts.setdefault(overview, {})[g["id"]] = sum(v for k, v in values[whole].items() if k in mine)
    top = max((v for vs in out.values() for v in vs.values()), default=0)
    legend = {"what": what, "unit": unit}
    data = {gid: _data(name, vs, heat_thresholds(top) if top > 0 else None, legend=legend | {
        "scale": f"by decade below the model's largest, {top:,}"}) for gid, vs in out.items()}
    for gid, vs in parts.items():
        known = [v for v in vs.values() if v > 0]
        data[gid] = _data(name, vs, log_thresholds(min(known), max(known)) if known else None, legend=legend | {
            "what": f"each part: the sum of its nodes' {unit or name}",
            "scale": "log scale from the least part to the largest"})
    for gid, vs in (sums or {}).items():
        if gid in ids:
            data[gid] = _data(name, vs, gradient=HEAT_GRADIENT, legend=legend | {
                "what": f"each unit of work: the sum of its operators' {unit or name}",
                "scale": "linear, palest the least unit to darkest the largest"})
    return data


# sums alike in size (units of work): coloured from the least (palest) to the largest (darkest) shown
HEAT_GRADIENT = [{"stop": i / (len(HEAT) - 1), "bgColor": c, "textColor": _text_on(i)} for i, c in enumerate(HEAT)]


def _data(name: str, values: dict[str, int], thresholds: list[dict[str, Any]] | None = None,
          gradient: list[dict[str, Any]] | None = None, legend: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "results": {k: {"value": v} for k, v in values.items()}}
    if thresholds:
        out["thresholds"] = thresholds
    if gradient:
        out["gradient"] = gradient
    if legend:
        out["legend"] = legend  # read by the page (static/view.js), not by Model Explorer
    return out
