"""`irtool plan DIR`: configurations predicted from one compile (docs/plan.md); the analysis is
`irtool.parallel.plan`'s, read here from a folder and written as text, Markdown or JSON."""
from __future__ import annotations

from ..dumpdir import Progress
from ..errors import InputError
from ..parallel.hardware import Profile
from ..parallel.logical import logical_graph
from ..parallel.plan import Basis, Candidate, basis, current
from ..selection import Selection, job_of

_KEYS = ("dp", "mp", "pp", "micro", "batch", "recompute", "opt_shard", "offset", "layers")


def read_basis(sel: Selection, hardware: Profile | None, progress: Progress | None = None) -> Basis:
    """The compile of `sel` as the plan reads it: the job of every rank (`progress` told of each), the lowest rank
    of each stage."""
    job = job_of(sel, progress)
    every = Selection(sel.path, dict(sel.files), sel.pass_name, None, sel.policy, partial=sel.partial)
    stages = [(p.rank, p.dump, p.facts) for p in every.per_stage()]
    sel.unreadable += [u for u in every.unreadable if u not in sel.unreadable]
    return basis(stages, job, logical_graph(stages, job, sel.path), hardware, sel.path)


def only(spec: str, b: Basis, global_batch: int | None = None, num_layers: int | None = None) -> Candidate:
    """The one configuration `--only` names: comma-separated KEY=VALUE of `dp`, `mp`, `pp`, `micro`, `batch`
    (samples per data-parallel rank and micro batch, MindFormers' `batch_size`), `recompute` (on, off, or per stage
    the first layers recomputed, `1:1`), `opt_shard` (on, off), `offset` (per stage, `1:-1`), `layers`; what it does
    not name is the compile's (the global batch: `--global-batch`, else batch x dp x micro)."""
    now = current(b)
    got: dict[str, str] = {}
    for part in filter(None, (x.strip() for x in spec.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in _KEYS:
            raise InputError(f"--only {spec}: expected KEY=VALUE with KEY one of {', '.join(_KEYS)}, found {part!r}")
        got[key] = value.strip()

    def num(key: str, default: int, low: int = 1) -> int:
        try:
            n = int(got.get(key, default))
        except ValueError:
            raise InputError(f"--only {spec}: expected a whole number for {key}, found {got[key]!r}") from None
        if n < low:
            raise InputError(f"--only {spec}: expected {key} >= {low}, found {n}")
        return n

    def ints(key: str) -> tuple[int, ...] | None:
        if key not in got:
            return None
        try:
            return tuple(int(x) for x in got[key].split(":"))
        except ValueError:
            raise InputError(f"--only {spec}: expected {key} as numbers separated by ':' (1:-1), found "
                             f"{got[key]!r}") from None

    def flag(key: str, default: bool) -> bool:
        v = got.get(key, "on" if default else "off").lower()
        if v not in ("on", "off", "true", "false", "all", "none"):
            raise InputError(f"--only {spec}: expected {key}=on or off, found {v!r}")
        return v in ("on", "true", "all")

    dp, mp, pp, micro = num("dp", b.dp), num("mp", b.mp), num("pp", b.pp), num("micro", b.micro)
    counts = None
    recompute = b.recompute
    if "recompute" in got and ":" in got["recompute"] or got.get("recompute", "").isdigit():
        counts = ints("recompute")
        recompute = any(counts or ())
    elif "recompute" in got:
        recompute = flag("recompute", b.recompute)
    elif pp == b.pp:
        counts = now.recompute_counts
    gb = global_batch or num("batch", b.micro_size) * dp * micro
    layers = num("layers", num_layers or b.layers)
    return Candidate(dp, mp, pp, micro, recompute, flag("opt_shard", b.opt_shard), gb, ints("offset"), counts,
                     None if layers == b.layers else layers)
