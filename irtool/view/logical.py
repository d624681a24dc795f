"""Two parallel configurations of one network in Model Explorer (`irtool view A B` when the two jobs
differ as `irtool diff` decides it: `diff.compare.across_configurations`): the logical graph
(`parallel.logical`, docs/logical.md), one box per user operator in its cell, each saying both
sides' figures old → new (stage, strategy, FLOPs, the bytes a rank holds for it, the communication
around it), its inputs as edges, the changed ones marked as the diff view marks a node (a colour no
category uses, counted on folded boxes); a layer's box says its figures, the graph's info the
configuration change. Read from the `LogicalDiff`'s records, never derived here."""
from __future__ import annotations

import os
from collections import Counter, defaultdict
from typing import Any

from ..parallel.logical import LayerPair, LogicalDiff, LogicalOp, OperatorPair
from ..parallel.operators import OperatorKey
from ..present import DASH, cell, moved, strategy_text
from ..present.job import changes_line
from ..present.palette import DIFF_COLORS, DIFF_TEXT
from .cost import heat_node_data
from .graphs import _kv, diff_node_data
from .models import Model

GRAPH = "logical"


def _id(p: OperatorPair, seen: Counter) -> str:
    """A box's id: the operator as `irtool diff` names it (`.../wq-Linear/MatMul`), with the layer it
    follows where two keys print alike (a top cell's operator before and after the layers)."""
    text = p.key.text
    return text if seen[text] == 1 else f"{text} (layer key {p.key.layer})"


def _both(p: OperatorPair, get: Any) -> str:
    return moved(get(p.old) if p.old else None, get(p.new) if p.new else None)


def _strategy_rows(p: OperatorPair) -> list[dict[str, Any]]:
    a = p.old.strategy if p.old else {}
    b = p.new.strategy if p.new else {}
    return [_kv(name.replace("_", " "), f"{strategy_text(a[name]) if name in a else DASH} → "
                                        f"{strategy_text(b[name]) if name in b else DASH}")
            for name in sorted(set(a) | set(b))]


def _held_rows(p: OperatorPair) -> list[dict[str, Any]]:
    """A `weight` row per weight it is the first to read: its name, its slice on each side (a panel's keys
    are cut at a few words: the name goes in the value)."""
    a = {h.name: h for h in p.old.params} if p.old else {}
    b = {h.name: h for h in p.new.params} if p.new else {}
    return [_kv("weight", f"{name} {cell(a[name].shape) if name in a else DASH} → "
                          f"{cell(b[name].shape) if name in b else DASH}")
            for name in [*a, *(n for n in b if n not in a)]]


def _comm_rows(p: OperatorPair) -> list[dict[str, Any]]:
    """A `comm` row per (op, category, phase) of the communication around it: count, bytes, group size."""
    a = p.old.comm if p.old else {}
    b = p.new.comm if p.new else {}
    rows = []
    for k in sorted(set(a) | set(b)):
        ua, ub = a.get(k), b.get(k)
        op, category, phase = k
        count = moved(ua.count if ua else None, ub.count if ub else None)
        size = moved(ua.bytes if ua else None, ub.bytes if ub else None)
        groups = moved(cell(ua.group_sizes[-1]) if ua and ua.group_sizes else None,
                       cell(ub.group_sizes[-1]) if ub and ub.group_sizes else None)
        rows.append(_kv("comm", f"{op} {category} {phase}: count {count}; bytes {size}; group {groups}"))
    return rows


def _where(o: LogicalOp | None) -> str:
    return DASH if o is None else f"rank {cell(o.rank)} line {o.line}"


def _box(p: OperatorPair, nid: str) -> dict[str, Any]:
    change = p.change + (f": {', '.join(f.replace('_', ' ') for f in p.fields)}" if p.fields else "")
    rows = [_kv("change", change), _kv("source", p.side.source or DASH), _kv("layer", cell(p.side.layer)),
            _kv("stage", _both(p, lambda o: o.stage)), *_strategy_rows(p),
            _kv("FLOPs", _both(p, lambda o: o.total_flops)),
            _kv("weights", _both(p, lambda o: o.weights)),
            _kv("optimizer states", _both(p, lambda o: o.optimizer_states)),
            _kv("activations", _both(p, lambda o: o.activations)), *_held_rows(p), *_comm_rows(p),
            _kv("recomputed", _both(p, lambda o: "yes" if o.recomputed else "no")),
            _kv("dump nodes", _both(p, lambda o: o.nodes)),
            _kv("old at", _where(p.old)), _kv("new at", _where(p.new))]
    unknown = _both(p, lambda o: o.flops_unknown)
    if any(o is not None and o.flops_unknown for o in (p.old, p.new)):
        rows.append(_kv("nodes of unknown FLOPs", unknown))
    box: dict[str, Any] = {"id": nid, "label": p.key.op + (f" #{p.key.occurrence}" if p.key.occurrence else ""),
                           "namespace": p.key.cell, "attrs": rows, "incomingEdges": [], "outputsMetadata": []}
    if p.changed:
        box["style"] = {"backgroundColor": DIFF_COLORS[p.change]}
        if p.change in DIFF_TEXT:
            box["style"]["textColor"] = DIFF_TEXT[p.change]
    return box


def _layer_attrs(lp: LayerPair) -> dict[str, str]:
    """A layer's figures old → new, for the box of the scope holding its operators."""
    def get(f: Any, name: str) -> Any:
        return None if f is None else getattr(f, name)

    out = {lp.label: "old → new", **{what: moved(get(lp.old, name), get(lp.new, name)) for what, name in (
        ("weights", "weights"), ("optimizer states", "optimizer_states"), ("activations", "activations"),
        ("FLOPs", "total_flops"))}}
    a = lp.old.by_category() if lp.old else {}
    b = lp.new.by_category() if lp.new else {}
    for category in sorted(set(a) | set(b)):
        ua, ub = a.get(category), b.get(category)
        out[f"comm {category}"] = (f"count {moved(ua.count if ua else None, ub.count if ub else None)}; "
                                   f"bytes {moved(ua.bytes if ua else None, ub.bytes if ub else None)}")
    return out


def _home(cells: list[str]) -> str:
    """The scope a layer's operators are in (`.../layers-CellList/0-LLamaDecodeLayer`): the deepest prefix
    holding nine in ten of them (a layer by data flow may hold an operator printed in another cell)."""
    home: list[str] = []
    while True:
        below = Counter(tuple(c.split("/")[: len(home) + 1]) for c in cells if c.split("/")[: len(home)] == home)
        if not below:
            return "/".join(home)
        prefix, n = below.most_common(1)[0]
        if n * 10 < len(cells) * 9 or len(prefix) == len(home):
            return "/".join(home)
        home = list(prefix)


def logical_graph_json(d: LogicalDiff) -> dict[str, Any]:
    """The logical graph of two configurations as Model Explorer's graph JSON (module docstring)."""
    seen = Counter(p.key.text for p in d.ops)
    ids: dict[OperatorKey, str] = {p.key: _id(p, seen) for p in d.ops}
    nodes = []
    by_layer: dict[str, list[str]] = defaultdict(list)
    for p in d.ops:
        box = _box(p, ids[p.key])
        inputs = dict.fromkeys([*(p.old.inputs if p.old else ()), *(p.new.inputs if p.new else ())])
        box["incomingEdges"] = [{"sourceNodeId": ids[k], "sourceNodeOutputId": "0", "targetNodeInputId": str(i)}
                                for i, k in enumerate(k for k in inputs if k in ids)]
        nodes.append(box)
        by_layer[cell(p.side.layer)].append(p.key.cell)
    groups: dict[str, dict[str, str]] = {}
    for lp in d.layers:
        if lp.layer is not None and by_layer.get(str(lp.layer)):
            groups.setdefault(_home(by_layer[str(lp.layer)]), {}).update(_layer_attrs(lp))
    count = Counter(p.change for p in d.ops)
    groups[""] = {"configuration": changes_line(d.changes) or DASH, "old": d.old.path, "new": d.new.path,
                  "user operators": str(len(d.ops)),
                  **{kind: str(count[kind]) for kind in ("changed", "added", "removed") if count[kind]},
                  "colours": "changed, added, removed: the diff's colours (the diff overlay counts them on folded "
                             "boxes); each box says old → new",
                  **{lp.label: "; ".join(f"{k} {v}" for k, v in _layer_attrs(lp).items() if k != lp.label)
                     for lp in d.layers if lp.layer is None}}
    return {"id": GRAPH, "nodes": nodes, "groupNodeAttributes": groups}


def logical_model(d: LogicalDiff) -> Model:
    """`irtool view A B` across configurations: one model, its logical graph, with the diff overlay shown
    (loaded last) and each side's FLOPs as a cost overlay; it opens on the first changed operator."""
    graph = logical_graph_json(d)
    changes = {n["id"]: p.change for n, p in zip(graph["nodes"], d.ops) if p.changed}
    flops = {side: {n["id"]: o.total_flops for n, p in zip(graph["nodes"], d.ops)
                    if (o := getattr(p, side)) is not None} for side in ("old", "new")}
    overlays = {**{f"FLOPs ({side})": (lambda graphs, side=side: heat_node_data(
        f"FLOPs ({side})", {GRAPH: flops[side]}, graphs, what=f"each operator's FLOPs in the step, {side} side",
        unit="FLOPs")) for side in ("old", "new")},
                "diff": lambda graphs: diff_node_data(GRAPH, changes)}
    label = f"{os.path.basename(os.path.normpath(d.old.path))} → {os.path.basename(os.path.normpath(d.new.path))}"
    first = next(iter(changes), None)
    return Model(label, [graph], overlays, first_graph=GRAPH, first_node=(lambda: first) if first else None)
