"""Communication per layer (docs/parallel.md §16): a node counts in its layer, the `layer` fact
(parameters and activations it reads, never its printed scope: MindSpore prints shared backward
code under the first layer's scope); a node of no layer in the cell of what it serves (the
parameter of a gradient or optimizer node, the operator a redistribution feeds), its printed
scope only when nothing else is known; or, with `depth`, the first N scope components."""
from __future__ import annotations

from typing import Iterable

from .records import CATEGORIES, PHASES, CommNode, Group, LayerComm, Strategy, per_step
from .scope import cell_parts as _cell_parts
from .traffic import node_wire_bytes


def _layer(parts: tuple[str, ...] | list[str], depth: int | None) -> str:
    """The row of a node of no layer: its cell path, or with `depth` its first `depth` components. Never cut at
    a repeated cell's index (`3-Block`): which layer a node is work of is the `layer` fact's to say."""
    return "/".join(parts[:depth] if depth is not None else parts)


def layer_of(scope: str, depth: int | None = None) -> str:
    """The row a scope is counted under when its node has no layer: its cell (with `depth`: the first `depth`
    cell components)."""
    return _layer(_cell_parts(scope), depth)


def _names(part: str) -> list[str]:
    """The attribute names a scope component stands for: `layers-CellList` -> [layers],
    `3-Block` -> [3], `layers.3-Block` -> [layers, 3]."""
    return part.split("-", 1)[0].split(".")


_MAX_RUN = 6  # names of a parameter matched in a row (`layers.6.attention.wq` is 4)


def _cell_names(parameter: str) -> list[str]:
    """The cells a parameter belongs to, by its name: `layers.6.norm.beta` -> [layers, 6, norm]."""
    return parameter.split(".")[:-1][:_MAX_RUN]


class ScopeIndex:
    """The cell paths the dump prints (of communication and strategy operators), to find the cell a
    parameter name stands for."""

    def __init__(self, scopes: Iterable[str]) -> None:
        self.runs: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        runs = self.runs
        for parts in {_cell_parts(s) for s in set(scopes) if s}:
            flat = [(n, i) for i, p in enumerate(parts) for n in _names(p)]
            names, at = tuple(n for n, _ in flat), [i for _, i in flat]
            for j in range(len(flat)):
                for k in range(j + 1, min(len(flat), j + _MAX_RUN) + 1):
                    runs.setdefault(names[j:k], set()).add(parts[: at[k - 1] + 1])
        self._cache: dict[str, tuple[str, ...] | None] = {}

    def cell_of(self, parameter: str) -> tuple[str, ...] | None:
        """The printed cell path of a parameter: the longest run of its cell names, in a row, that the
        dump's scopes contain in exactly one place, cut after that run; None when there is none."""
        if parameter not in self._cache:
            self._cache[parameter] = self._find(_cell_names(parameter))
        return self._cache[parameter]

    def _find(self, names: list[str]) -> tuple[str, ...] | None:
        # a run must contain the parameter's first repeated-cell index (`6` of `layers.6.norm`): that
        # index is what tells layers apart, `norm` alone matches any layer's norm
        at = next((i for i, n in enumerate(names) if n.isdigit()), None)
        for k in range(len(names), 0, -1):
            for j in range(len(names) - k + 1):
                if at is not None and not j <= at < j + k:
                    continue
                hits = self.runs.get(tuple(names[j:j + k]), set())
                if len(hits) == 1:
                    return next(iter(hits))
        return None


def served_cell(c: CommNode, index: ScopeIndex, op_scopes: dict[str, str]) -> tuple[str, ...]:
    """The cell path a node is counted under (§16): the cell of the parameter a gradient or optimizer
    node is for, the scope of the operator a forward redistribution feeds (a backward one's printed
    scope: the same cell), else the scope it is attributed to (its printed one; a backward node's
    printed under another cell, its forward's, §8)."""
    if c.parameter and (cell := index.cell_of(c.parameter)) is not None:
        return cell
    if c.redistributes and c.phase != "backward" and c.serves in op_scopes:
        # a backward redistribution `serves` its forward's producer (§8); it is printed under the
        # forward's consumer, which keeps both directions in one row
        return _cell_parts(op_scopes[c.serves])
    return _cell_parts(c.scope if c.redistributes else c.cell_scope or c.scope)


def layer_comm(comm: list[CommNode], groups: dict[str, Group], depth: int | None = None,
               strategies: Iterable[Strategy] = (), layers: dict[str, int] | None = None) -> list[LayerComm]:
    """Per layer: count, tensor bytes, wire bytes, and bytes per phase and per category; the layer
    that moves the most bytes first. `layers`: the layer of each node (uid -> index, the `layer` fact;
    not used with `depth`); `strategies` give the scopes of the operators nodes of no layer serve."""
    strategies = list(strategies)
    op_scopes = {s.node: s.scope for s in strategies if s.node}
    index = ScopeIndex([*(c.scope for c in comm), *op_scopes.values()])
    rows: dict[str, LayerComm] = {}
    for c in comm:
        at = layers.get(c.node) if layers is not None and depth is None else None
        key = f"layer {at}" if at is not None else _layer(served_cell(c, index, op_scopes), depth) or "(no scope)"
        r = rows.get(key)
        if r is None:
            r = rows[key] = LayerComm(layer=key, count=0, bytes=0, wire_bytes=0, bytes_unknown=0,
                                      by_phase={p: 0 for p in PHASES}, by_category={k: 0 for k in CATEGORIES},
                                      index=at)
        r.count += 1
        wire = per_step(node_wire_bytes(c, groups), c.runs)  # bytes over the step: each run counted
        if wire.unknown:  # an unknown wire size is counted, never added as 0
            r.wire_unknown += 1
        else:
            r.wire_bytes += wire.total
        b = c.step_bytes
        if b.unknown:
            r.bytes_unknown += 1
            continue
        r.bytes += b.total
        r.by_phase[c.phase] = r.by_phase.get(c.phase, 0) + b.total
        r.by_category[c.category] = r.by_category.get(c.category, 0) + b.total
    return sorted(rows.values(), key=lambda r: (-r.bytes, -r.count, r.layer))
