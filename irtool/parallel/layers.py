"""Communication per layer (docs/parallel.md §16): repeated cells (`layers-CellList/3-Block`,
`layers.3`, `blocks-SequentialCell/0`) recognised in the scope; any other node by its cell, or
by the first N scope components with `depth`."""
from __future__ import annotations

import re

from .records import CATEGORIES, PHASES, CommNode, Group, LayerComm
from .scope import Scope
from .traffic import node_wire_bytes

_INDEXED = re.compile(r"^\d+(-|$)")  # `3-DecoderLayer` under a CellList / SequentialCell
_DOTTED = re.compile(r"^[A-Za-z_]\w*\.\d+(-|$)")  # `layers.3-Block`


def layer_of(scope: str, depth: int | None = None) -> str:
    """The layer a scope belongs to: the path up to the first repeated-cell index, else the cell
    (with `depth`: the first `depth` cell components)."""
    parts = Scope(scope).cell_parts
    if depth is not None:
        return "/".join(parts[:depth])
    for i, p in enumerate(parts):
        if (_INDEXED.match(p) and i > 0) or _DOTTED.match(p):
            return "/".join(parts[: i + 1])
    return "/".join(parts)


def layer_comm(comm: list[CommNode], groups: dict[str, Group], depth: int | None = None) -> list[LayerComm]:
    """Per layer: count, tensor bytes, wire bytes, and bytes per phase and per category; the layer
    that moves the most bytes first."""
    rows: dict[str, LayerComm] = {}
    for c in comm:
        key = layer_of(c.scope, depth) or "(no scope)"
        r = rows.get(key)
        if r is None:
            r = rows[key] = LayerComm(layer=key, count=0, bytes=0, wire_bytes=0, bytes_unknown=0,
                                      by_phase={p: 0 for p in PHASES}, by_category={k: 0 for k in CATEGORIES})
        r.count += 1
        wire = node_wire_bytes(c, groups)
        if wire is None:  # an unknown wire size is counted, never added as 0
            r.wire_unknown += 1
        else:
            r.wire_bytes += wire
        if c.bytes is None:
            r.bytes_unknown += 1
            continue
        r.bytes += c.bytes
        r.by_phase[c.phase] = r.by_phase.get(c.phase, 0) + c.bytes
        r.by_category[c.category] = r.by_category.get(c.category, 0) + c.bytes
    return sorted(rows.values(), key=lambda r: (-r.bytes, -r.count, r.layer))
