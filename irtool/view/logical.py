"""Two parallel configurations of one network in Model Explorer (`irtool view A B` when the two jobs
differ as `irtool diff` decides it: `diff.compare.across_configurations`): the logical graph
(`parallel.logical`, docs/logical.md), one box per user operator in its cell, each saying both
sides' figures old -> new (stage, strategy, FLOPs, the bytes a rank holds for it, the communication
around it), its inputs as edges, a changed one coloured by why it changed (`OperatorPair.cause`: the
layout's change, its own strategy, communication, ...; counted on folded boxes) and saying on the box
what changed (`diff ...` rows: its strategy old -> new, `+AllReduce`, bytes old -> new); a layer's box
says its figures. The page's first lines say the change of the model's sizes (`irtool diff`'s "Model and data
changed"), the configuration change once, and the causes with
their colours (`Model.headline`). Text drawn on the canvas is ASCII (`canvas_text`: Model Explorer's
canvas font has no `→`, `—` or `×`). Read from the `LogicalDiff`'s records, never derived here."""
from __future__ import annotations

import os
from collections import Counter, defaultdict
from typing import Any

from ..parallel.logical import CAUSES, LayerPair, LogicalDiff, LogicalOp, OperatorPair, comm_bytes
from ..parallel.operators import OperatorKey
from ..present import DASH, cell, moved, strategy_text
from ..present.job import change_text, changes_line, follows
from ..present.palette import CAUSE_COLORS, CAUSE_TEXT
from .cost import heat_node_data
from .graphs import _kv, canvas_text
from .models import Model

GRAPH = "logical"


def _id(p: OperatorPair, seen: Counter) -> str:
    """A box's id: the operator as `irtool diff` names it (`.../wq-Linear/MatMul`), with where it is where two
    keys print alike (a top cell's operator before and after the layers: `(before the layers)`, `(after layer 3)`,
    the key's layer for work of no layer being the last layer it reads)."""
    text = p.key.text
    if seen[text] == 1:
        return text
    layer = p.key.layer
    where = "before the layers" if layer < 0 else f"after layer {layer}" if p.side.layer is None else f"layer {layer}"
    return f"{text} ({where})"


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


def diff_rows(p: OperatorPair) -> list[dict[str, Any]]:
    """What changed, as the box says it (`diff ...` rows, drawn on the box): its strategy old -> new, the
    communication that appeared (`+AllReduce`), vanished (`-AllGather`) or changed group, its bytes and FLOPs
    old -> new, its stage."""
    rows = []
    if "stage" in p.fields:
        rows.append(_kv("diff stage", _both(p, lambda o: o.stage)))
    if "strategy" in p.fields and p.old and p.new:
        a, b = p.old.strategy, p.new.strategy
        moves = [(k, f"{strategy_text(a.get(k))} -> {strategy_text(b.get(k))}") for k in sorted(set(a) | set(b))
                 if a.get(k) != b.get(k)]
        rows.append(_kv("diff strategy", moves[0][1] if len(moves) == 1 else
                        "; ".join(f"{k.replace('_strategy', '')} {m}" for k, m in moves)))
    comm = []
    for change, ua, ub in p.comm_changes():
        u = ub or ua
        assert u is not None
        if change != "changed":
            comm.append(f"{'+' if change == 'appeared' else '-'}{u.op}")
        elif ua and ub and ua.group_sizes != ub.group_sizes:
            comm.append(f"{u.op} group {'/'.join(map(str, ua.group_sizes))} -> {'/'.join(map(str, ub.group_sizes))}")
        elif ua and ub and ua.count != ub.count:
            comm.append(f"{u.op} count {ua.count} -> {ub.count}")
    if comm:
        rows.append(_kv("diff comm", " ".join(dict.fromkeys(comm))))
    if "comm" in p.fields:
        rows.append(_kv("diff comm bytes", moved(comm_bytes(p.old), comm_bytes(p.new))))
    for name in ("weights", "optimizer_states", "activations"):
        if name in p.fields:
            rows.append(_kv(f"diff {name.replace('_', ' ')}", _both(p, lambda o, name=name: getattr(o, name))))
    if "flops" in p.fields:
        rows.append(_kv("diff flops", _both(p, lambda o: o.total_flops)))
    return rows


def _box(p: OperatorPair, nid: str) -> dict[str, Any]:
    change = p.change + (f": {', '.join(f.replace('_', ' ') for f in p.fields)}" if p.fields else "")
    why = p.cause if p.cause != p.change else None
    rows = [*diff_rows(p), _kv("change", change + (f" (cause: {why})" if why else "")),
            _kv("source", p.side.source or DASH), _kv("layer", cell(p.side.layer)),
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
    if p.cause:
        box["style"] = {"backgroundColor": CAUSE_COLORS[p.cause]}
        if p.cause in CAUSE_TEXT:
            box["style"]["textColor"] = CAUSE_TEXT[p.cause]
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
                  "colours": "why an operator changed (the page's first lines say which colour is which; the "
                             "diff overlay counts them on folded boxes); each box says what changed",
                  **{lp.label: "; ".join(f"{k} {v}" for k, v in _layer_attrs(lp).items() if k != lp.label)
                     for lp in d.layers if lp.layer is None}}
    for n in nodes:
        for a in n["attrs"]:
            a["value"] = canvas_text(a["value"])
    return {"id": GRAPH, "nodes": nodes,
            "groupNodeAttributes": {ns: {k: canvas_text(v) for k, v in a.items()} for ns, a in groups.items()}}


def headline(d: LogicalDiff) -> dict[str, Any]:
    """The page's first lines: the configuration change, what it did to the user operators, and a colour key
    of why they changed (`lines`; `legend`: [colour, text] per cause present), each degree's strategy changes
    said once (`follows`, as `irtool diff` counts them); "nothing matched" when no operator is on both
    sides (two networks, not two configurations of one)."""
    causes = Counter(p.cause for p in d.ops if p.cause)
    both = sum(p.old is not None and p.new is not None for p in d.ops)
    # the model's and data's change said first, apart from the layout's, as `irtool diff` says it: the figures change
    # with it (a hidden size 512 -> 1024: its communication's bytes, its FLOPs, whatever the layout)
    model = [c for c in d.changes if c.model]
    layout = [c for c in d.changes if not c.model]
    lines = [f"Model and data changed, not the parallel layout: {changes_line(model)} (every figure below changes "
             "with it)"] if model else []
    if layout or not model:
        lines.append(f"Configuration: {changes_line(layout) or DASH}")
    for side, other, g in (("old", "new", d.old), ("new", "old", d.new)):
        absent = g.job.stages_absent
        if absent:  # a folder without a stage's rank: its operators are not gone, they were not read
            many = len(absent) > 1
            lines.append(f"{side}: stage{'s' if many else ''} {', '.join(map(str, absent))} not read ({g.path} holds no "
                         f"rank of {'them' if many else 'it'}): {'their' if many else 'its'} operators show as only in "
                         f"{other}")
    if not both:  # the first thing to know: the two are not one network (the configuration line says how they differ)
        lines.insert(0, f"Nothing matched: no user operator of {d.old.path} is in {d.new.path} "
                        f"({causes['removed']} only in old, {causes['added']} only in new): two different networks?")
    else:  # right above the colours' key
        lines.append(f"{sum(causes.values())} of {len(d.ops)} user operators changed; the colours say why:")
    groups = ", ".join(f"{change_text(c)} ({n})" for c, n in follows(d))
    comm = [(c, sum(c.field in p.comm_follows for p in d.ops)) for c in d.changes]
    moved_comm = ", ".join(f"{change_text(c)} ({n})" for c, n in comm if n)
    follow = "; ".join(x for x in (groups and f"its strategy follows {groups}",
                                   moved_comm and f"only its communication follows {moved_comm}") if x)
    words = {"added": "only in new", "removed": "only in old", "stage": "moved to another stage",
             "strategy": "its own strategy changed", "layout": follow,
             "communication": "communication around it changed", "figures": "only FLOPs or bytes changed"}
    legend = [[CAUSE_COLORS[c], f"{c} {causes[c]}: {words[c]}"] for c in CAUSES if causes[c]]
    return {"lines": lines, "legend": legend}


def logical_model(d: LogicalDiff) -> Model:
    """`irtool view A B` across configurations: one model, its logical graph, with the diff overlay shown
    (loaded last) and each side's FLOPs as a cost overlay; it opens on the first changed operator."""
    graph = logical_graph_json(d)
    causes = {n["id"]: p.cause for n, p in zip(graph["nodes"], d.ops) if p.cause}
    flops = {side: {n["id"]: o.total_flops for n, p in zip(graph["nodes"], d.ops)
                    if (o := getattr(p, side)) is not None} for side in ("old", "new")}
    overlays = {**{f"FLOPs ({side})": (lambda graphs, side=side: heat_node_data(
        f"FLOPs ({side})", {GRAPH: flops[side]}, graphs, what=f"each operator's FLOPs in the step, {side} side",
        unit="FLOPs")) for side in ("old", "new")},
                "diff": lambda graphs: _cause_data(causes)}
    label = f"{os.path.basename(os.path.normpath(d.old.path))} → {os.path.basename(os.path.normpath(d.new.path))}"
    first = next(iter(causes), None)
    return Model(label, [graph], overlays, first_graph=GRAPH, first_node=(lambda: first) if first else None,
                 headline=headline(d))


def _cause_data(causes: dict[str, str]) -> dict[str, Any]:
    """The diff overlay: each changed box valued and coloured by why it changed (a folded box counts each)."""
    results = {k: {"value": v, "bgColor": CAUSE_COLORS[v], **({"textColor": CAUSE_TEXT[v]} if v in CAUSE_TEXT else {})}
               for k, v in causes.items()}
    return {GRAPH: {"name": "diff", "results": results, "showExpandedSummaryOnGroupNode": True}}
