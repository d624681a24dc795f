"""Calibration of a hardware profile against a profiled run (docs/timing.md §5): msprof-analyze's
`cluster_step_trace_time.csv` (one row per rank and per pipeline stage and step) or MindSpore's / torch_npu's
per-rank `step_trace_time.csv`, read; the profile's compute efficiency, link efficiency and overlap fitted so
the stages' predicted compute, communication and overlap match the measured ones; the step played again.

Columns (msprof-analyze docs, "cluster_step_trace_time.csv"; microseconds): Step, Type (`rank` or `stage`),
Index (the rank, or the stage's ranks), Computing, Communication(Not Overlapped), Overlapped, Communication,
Free, Stage, Bubble (the Receive time), Communication(Not Overlapped and Exclude Receive), Preparing. The
per-rank `step_trace_time.csv` has the same columns without Type and Index: its rank is the `rank_N` its path
names. Stage rows give a stage's maxima over its ranks; without them a stage is the mean of its rank rows.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import InputError
from .timing import StageTiming, UnitTime, simulate

US = 1e-6
NEEDED = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication")
OPTIONAL = ("Free", "Bubble", "Communication(Not Overlapped and Exclude Receive)")


@dataclass(frozen=True)
class Measured:
    """One stage's figures per step (seconds; mean over the steps read)."""

    stage: int
    computing: float
    not_overlapped: float  # communication compute did not hide (Receive waits excluded when the file says them)
    overlapped: float
    communication: float  # every collective's time (Receive waits excluded when the file says them)
    free: float | None
    bubble: float | None  # time in Receive (the pipeline's wait)


@dataclass(frozen=True)
class Fit:
    """What the measured figures make of the profile's: scales of its compute and link efficiencies (the
    profile's efficiencies are multiplied by them) and the overlap share."""

    compute_efficiency: float  # x the profile's matrix and vector efficiencies
    link_efficiency: float  # x every tier's efficiency
    overlap: float  # the share of hideable communication hidden
    overlap_was: float
    stages: list[int]


def read_trace(path: str, rank_stage: dict[int, int]) -> tuple[list[Measured], int]:
    """The per-stage figures of a step trace CSV and how many steps it holds; `rank_stage`: rank -> stage."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise InputError(f"--calibrate: cannot read {path}: {e.strerror or e}") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise InputError(f"{path}:1:1: expected a step trace CSV header (Step,Type,Index,Computing,...), found "
                         "an empty file")
    head = [h.strip() for h in rows[0]]
    missing = [c for c in NEEDED if c not in head]
    if missing:
        raise InputError(f"{path}:1:1: expected the column {missing[0]} (msprof-analyze cluster_step_trace_time.csv or "
                         f"step_trace_time.csv), found {', '.join(head) or 'no column'}")
    col = {h: i for i, h in enumerate(head)}
    if "Type" in col and "Index" not in col:
        raise InputError(f"{path}:1:1: expected the column Index beside Type (cluster_step_trace_time.csv), found "
                         f"{', '.join(head)}")
    own_rank = None
    if "Type" not in col:
        m = re.search(r"rank[_-]?(\d+)", str(p))
        if m is None:
            raise InputError(f"{path}: a per-rank step_trace_time.csv names no rank: keep it under its rank_N folder")
        own_rank = int(m.group(1))
    by_stage: dict[int, list[list[float | None]]] = {}
    stage_rows: dict[int, list[list[float | None]]] = {}
    steps: set[str] = set()
    for n, row in enumerate(rows[1:], 2):
        if not any(x.strip() for x in row):
            continue
        if len(row) < len(head):
            raise InputError(f"{path}:{n}:1: expected {len(head)} columns, found {len(row)}")
        steps.add(row[col["Step"]].strip() if "Step" in col else "")
        values = [_number(path, n, row, col, c) for c in (*NEEDED, *OPTIONAL)]
        if own_rank is not None:
            kind, index = "rank", str(own_rank)
        else:
            kind, index = row[col["Type"]].strip().lower(), row[col["Index"]].strip()
        ranks = [int(x) for x in re.findall(r"\d+", index)]
        if kind == "stage":
            stage = next((rank_stage[r] for r in ranks if r in rank_stage), None) if len(ranks) > 1 else \
                (ranks[0] if ranks else None)
            if stage is not None:
                stage_rows.setdefault(stage, []).append(values)
        elif kind == "rank" and ranks and ranks[0] in rank_stage:
            by_stage.setdefault(rank_stage[ranks[0]], []).append(values)
    chosen = {**by_stage, **stage_rows}  # a stage row (the stage's maxima) wins over its ranks' mean
    if not chosen:
        raise InputError(f"{path}: no row of a rank or stage of this job (ranks {', '.join(map(str, sorted(rank_stage)))})")
    out = []
    for stage, vs in sorted(chosen.items()):
        mean = [None if any(v[i] is None for v in vs) else sum(v[i] for v in vs) / len(vs)  # type: ignore[misc]
                for i in range(len(vs[0]))]
        comp, nov, ovl, comm, free, bubble, nov_x = mean
        recv = bubble or 0.0
        out.append(Measured(stage, comp * US, (nov_x if nov_x is not None else max(0.0, nov - recv)) * US, ovl * US,
                            max(0.0, comm - recv) * US, None if free is None else free * US,
                            None if bubble is None else bubble * US))
    return out, max(1, len(steps))


def _number(path: str, n: int, row: list[str], col: dict[str, int], name: str) -> float | None:
    if name not in col:
        return None
    raw = row[col[name]].strip()
    try:
        return float(raw)
    except ValueError:
        raise InputError(f"{path}:{n}:{col[name] + 1}: expected a number of microseconds in {name}, "
                         f"found {raw!r}") from None


def fit(measured: list[Measured], timings: list[StageTiming], overlap: float) -> Fit:
    """Least-squares scales over the stages measured: compute time = profile's / compute scale (so the
    efficiencies scale by it), communication likewise by the link scale; the overlap is the share of the
    hideable communication (what the dependencies let run under compute) the run hid."""
    by_stage = {t.stage or 0: t for t in timings}
    pairs = [(m, by_stage[m.stage].total()) for m in measured if m.stage in by_stage]
    if not pairs:
        raise InputError("--calibrate: no stage of the trace is among the stages read")
    pc = sum(u.compute * m.computing for m, u in pairs)
    compute = pc / sum(m.computing ** 2 for m, _ in pairs) if pc else 1.0
    comm_pairs = [(m, u) for m, u in pairs if m.communication > 0 and u.comm > 0]
    link = sum(u.comm * m.communication for m, u in comm_pairs) / sum(m.communication ** 2 for m, _ in comm_pairs) \
        if comm_pairs else 1.0
    hideable = sum(u.hideable / link for _, u in comm_pairs)
    hidden = sum(m.overlapped for m, _ in comm_pairs)
    fitted = min(1.0, hidden / hideable) if hideable > 0 else overlap
    return Fit(compute, link, fitted, overlap, [m.stage for m, _ in pairs])


def refit(t: StageTiming, f: Fit) -> StageTiming:
    """The times of a rank under the fitted figures (compute / compute scale, communication / link scale,
    the hideable part hidden at the fitted overlap)."""
    def one(u: UnitTime) -> UnitTime:
        comm, hideable = u.comm / f.link_efficiency, u.hideable / f.link_efficiency
        dag_exposed = comm - hideable
        return UnitTime(u.forward / f.compute_efficiency, u.backward / f.compute_efficiency,
                        u.recompute / f.compute_efficiency, u.optimizer / f.compute_efficiency, comm,
                        dag_exposed + hideable * (1 - f.overlap), hideable)

    return replace(t, units={k: one(u) for k, u in t.units.items()}, tail=one(t.tail),
                   hops=[replace(h, seconds=h.seconds / f.link_efficiency) for h in t.hops])


@dataclass
class Calibration:
    """A trace read against this compilation's times: the fit and the step before and after it."""

    file: str
    steps: int
    measured: list[Measured]
    predicted: dict[int, UnitTime]  # stage -> its times under the profile as given
    fit: Fit
    step_before: float | None  # played out under the profile as given (None: one stage, nothing to play)
    step_after: float | None  # under the fitted figures
    measured_step: float | None  # the slowest stage's Computing + Communication(Not Overlapped) + Free + Bubble


def calibrate(path: str, timings: list[StageTiming], rank_stage: dict[int, int], overlap: float) -> Calibration:
    """Read `path`, fit the profile's figures, and play the step again under them (docs/timing.md §5)."""
    measured, steps = read_trace(path, rank_stage)
    f = fit(measured, timings, overlap)
    before = after = None
    if len(timings) > 1:
        b, a = simulate(timings), simulate([refit(t, f) for t in timings])
        before, after = (None if b.cannot else b.seconds), (None if a.cannot else a.seconds)
    whole = [m.computing + m.not_overlapped + (m.free or 0.0) + (m.bubble or 0.0) for m in measured]
    return Calibration(path, steps, measured, {t.stage or 0: t.total() for t in timings}, f, before, after,
                       max(whole) if whole else None)
