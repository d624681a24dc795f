"""`irtool render DIR --memory`: device memory over the step per stage, drawn by `present.memory`
(docs/cost.md §2.1)."""
from __future__ import annotations

from ..errors import SelectionError
from ..present.memory import Panel, panel
from ..selection import Loaded


def panels(picked: list[Loaded], path: str) -> list[Panel]:
    """One walk per stage (the rank `Selection.per_stage` picks), by stage."""
    out = [panel(p.facts, p.rank, p.file) for p in picked]
    if not out:
        raise SelectionError(f"{path}: no rank to draw")
    return out
