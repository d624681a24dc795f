"""Two parallel configurations of one network as people read them (docs/diff.md "Across
configurations"): the tables of a `LogicalDiff` (`irtool.parallel.logical`), old -> new with the
ratio, for text and Markdown alike."""
from __future__ import annotations

from typing import Any

from ..parallel.logical import CommUse, Figures, LogicalDiff, LogicalGraph, OperatorPair, comm_bytes
from ..parallel.records import Bytes
from ..present import DASH, Block, Table, bytes_text, cell, moved, strategy_text
from ..present.cost import balance_sentence
from ..present.job import layer_ranges, strategy_groups


def _get(f: Figures | None, name: str) -> Any:
    return None if f is None else getattr(f, name)


def _stage(f: Figures | None) -> str:
    return DASH if f is None else str(f.stage)


def layer_table(d: LogicalDiff) -> Table:
    """Per layer, what one rank holding it holds, computes and sends per step, old → new."""
    rows = []
    for p in d.layers:
        a, b = p.old, p.new
        rows.append([p.label, f"{_stage(a)} → {_stage(b)}",
                     moved(_get(a, "weights"), _get(b, "weights")),
                     moved(_get(a, "optimizer_states"), _get(b, "optimizer_states")),
                     moved(_get(a, "activations"), _get(b, "activations")),
                     moved(_get(a, "total_flops"), _get(b, "total_flops")), moved(comm_bytes(a), comm_bytes(b))])
    return Table("Per layer, per rank holding it (bytes held, FLOPs and communication bytes per device per step; "
                 "old → new)", ["layer", "stage", "weights", "optimizer states", "activations", "FLOPs",
                                "communication bytes"], rows)


def _use_text(u: CommUse | None, what: str) -> Any:
    if u is None:
        return None
    if what == "count":
        return u.count
    if what == "bytes":
        return u.bytes
    return ", ".join(map(str, u.group_sizes)) or None


def layer_comm_table(d: LogicalDiff) -> Table:
    """Per layer and category: count, bytes and group sizes per device per step, old → new (rows that changed)."""
    rows = []
    for p in d.layers:
        a = p.old.by_category() if p.old else {}
        b = p.new.by_category() if p.new else {}
        for cat in sorted(set(a) | set(b)):
            ua, ub = a.get(cat), b.get(cat)
            if ua and ub and (ua.count, ua.bytes, ua.group_sizes) == (ub.count, ub.bytes, ub.group_sizes):
                continue
            rows.append([p.label, cat, moved(_use_text(ua, "count"), _use_text(ub, "count")),
                         moved(_use_text(ua, "bytes"), _use_text(ub, "bytes")),
                         f"{_use_text(ua, 'groups') or DASH} → {_use_text(ub, 'groups') or DASH}"])
    return Table("Communication per layer and category that changed (per device per step; old → new)",
                 ["layer", "category", "count", "bytes", "group size"], rows)


def _name(o: OperatorPair) -> str:
    """`Net/layers-CellList/0-Block/MatMul #1 [layers.0.w2] (layer 0)`: the weight it reads tells which."""
    side, layer = o.side, o.side.layer
    return o.key.text + (f" [{side.params[0].name}]" if side.params else "") + \
        (f" (layer {layer})" if layer is not None else "")


def strategy_table(d: LogicalDiff, every: bool = False) -> Table:
    """The strategy changes, one row per field; those that follow from a degree's change (`strategy_groups`)
    only with `every`."""
    rows = []
    grouped = False
    for p in d.ops:
        if "strategy" not in p.fields:
            continue
        if p.follows and not every:
            grouped = True
            continue
        assert p.old is not None and p.new is not None
        for k in sorted(set(p.old.strategy) | set(p.new.strategy)):
            a, b = p.old.strategy.get(k), p.new.strategy.get(k)
            if a != b:
                rows.append([_name(p), k, f"{strategy_text(a) or DASH} → {strategy_text(b) or DASH}",
                             p.side.source or DASH])
    title = "Strategies that changed and do not follow from the layout's change (--all: every one)" if grouped \
        else "Strategies that changed"
    return Table(f"{title} (user operator; old → new)", ["operator", "field", "strategy", "source"], rows)


def comm_table(d: LogicalDiff) -> Table:
    """Communication around an operator that appeared or vanished, or whose group size changed (a
    count or byte change alone is in the per-layer tables)."""
    rows = []
    for p in d.ops:
        for change, a, b in p.comm_changes():
            if a is not None and b is not None and a.group_sizes == b.group_sizes:
                continue
            u = b or a
            assert u is not None
            rows.append([_name(p), change, u.op, u.category, u.phase,
                         moved(_use_text(a, "count"), _use_text(b, "count")),
                         moved(_use_text(a, "bytes"), _use_text(b, "bytes")),
                         f"{_use_text(a, 'groups') or DASH} → {_use_text(b, 'groups') or DASH}"])
    return Table("Communication around user operators that appeared, vanished or changed group (per device per step)",
                 ["operator", "change", "op", "category", "phase", "count", "bytes", "group size"], rows)


def one_sided_table(d: LogicalDiff) -> Table:
    rows = [[p.change, _name(p), cell(p.side.stage), p.side.source or DASH]
            for p in d.ops if p.change in ("added", "removed")]
    return Table("User operators in one configuration only", ["change", "operator", "stage", "source"], rows)


def stage_table(g: LogicalGraph, side: str) -> Table:
    rows = [[str(s.stage), cell(s.rank), layer_ranges(s.layers), bytes_text(s.weights), bytes_text(s.optimizer_states),
             bytes_text(s.activations), cell(s.total_flops), bytes_text(comm_bytes(s) or Bytes()), bytes_text(s.memory)]
            for s in g.stages]
    return Table(f"{side.capitalize()} configuration per stage (one rank each, per step): {g.path}",
                 ["stage", "rank", "layers", "weights", "optimizer states", "activations", "FLOPs",
                  "communication bytes", "memory estimate"], rows)


def stage_comm_table(d: LogicalDiff) -> Table:
    """Communication per stage and category, each side's, per device per step: count, bytes, group sizes."""
    rows = []
    for side, g in (("old", d.old), ("new", d.new)):
        for s in g.stages:
            for cat, u in s.by_category().items():
                rows.append([side, str(s.stage), cat, cell(u.count), bytes_text(u.bytes),
                             ", ".join(map(str, u.group_sizes)) or DASH])
    return Table("Communication per stage and category (one rank each, per device per step)",
                 ["side", "stage", "category", "count", "bytes", "group size"], rows)


def summary(d: LogicalDiff) -> str:
    """One line: how many user operators, and what changed of them."""
    ops = d.ops
    count = {c: sum(p.change == c for p in ops) for c in ("changed", "added", "removed")}
    strat = sum("strategy" in p.fields for p in ops)
    comm = sum(bool(p.comm_changes()) for p in ops)
    return (f"Compared as one logical graph: {len(ops)} user operators, {count['changed']} changed "
            f"({strat} strategy, {comm} communication), {count['removed']} only in old, {count['added']} only in new")


def balance_lines(d: LogicalDiff) -> list[str]:
    def text(g: LogicalGraph) -> str:
        return balance_sentence(g.balance) if g.balance is not None else "no stage read"

    return [f"Stage balance, old: {text(d.old)}", f"Stage balance, new: {text(d.new)}"]


def stage_blocks(d: LogicalDiff) -> list[Block]:
    """What a reviewer reads first: the summary, each side per stage (memory, FLOPs) and its balance."""
    return [summary(d), stage_table(d.old, "old"), stage_table(d.new, "new"), *balance_lines(d)]


def detail_blocks(d: LogicalDiff, every: bool = False) -> list[Block]:
    """Then per layer and per operator (all rows: shortened when written); strategy changes that follow from a
    degree's change are one line each (`strategy_groups`), listed only with `every`."""
    return [layer_table(d), layer_comm_table(d), stage_comm_table(d), *strategy_groups(d), strategy_table(d, every),
            comm_table(d), one_sided_table(d)]


def blocks(d: LogicalDiff, every: bool = False) -> list[Block]:
    """Every block of a logical comparison: the stages first, then the layers and the operators."""
    return [*stage_blocks(d), *detail_blocks(d, every)]

