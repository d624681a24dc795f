"""`irtool render DIR --timeline -o t.svg`: the step of a folder's stages, drawn by `present.timeline`
(docs/timing.md §4)."""
from __future__ import annotations

from ..errors import SelectionError
from ..parallel.hardware import Profile
from ..present.timeline import Timeline, stage_timings, timeline
from ..selection import Loaded


def folder_timeline(picked: list[Loaded], path: str, hardware: Profile) -> Timeline:
    """The step of the ranks picked one per stage (`Selection.per_stage`), timed on `hardware`."""
    timings = stage_timings(((p.facts, p.rank, p.file) for p in picked), hardware)
    if len(timings) < 2:
        found = "no pipeline stage" if not timings else "one stage"
        raise SelectionError(f"{path}: --timeline needs a folder of ranks on two or more pipeline stages (found "
                             f"{found}; summarize --cost says a single stage's time)")
    tl = timeline(timings)
    if tl.step.cannot:
        raise SelectionError(f"{path}: --timeline: {tl.step.cannot}")
    return tl
