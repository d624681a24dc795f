"""`irtool plan DIR`: configurations predicted from one compile (docs/plan.md); the analysis is
`irtool.parallel.plan`'s, read here from a folder and written as text, Markdown or JSON."""
from __future__ import annotations

from ..dumpdir import Progress
from ..parallel.hardware import Profile
from ..parallel.logical import logical_graph
from ..parallel.plan import Basis, basis
from ..selection import Selection, job_of


def read_basis(sel: Selection, hardware: Profile | None, progress: Progress | None = None) -> Basis:
    """The compile of `sel` as the plan reads it: the job of every rank (`progress` told of each), the lowest rank
    of each stage."""
    job = job_of(sel, progress)
    every = Selection(sel.path, dict(sel.files), sel.pass_name, None, sel.policy, partial=sel.partial)
    stages = [(p.rank, p.dump, p.facts) for p in every.per_stage()]
    sel.unreadable += [u for u in every.unreadable if u not in sel.unreadable]
    return basis(stages, job, logical_graph(stages, job, sel.path), hardware, sel.path)
