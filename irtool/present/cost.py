"""Cost records (`irtool.parallel.balance`, `cost`, `memory`) as people read them: FLOPs and sizes
with their unknowns, the balance sentence, whether the stages fit, the advice, and the advice as
the YAML a MindFormers user pastes (docs/cost.md §3)."""
from __future__ import annotations

from collections.abc import Iterable

from ..parallel.balance import Advice, Balance, InFlight, SplitEstimate
from ..parallel.job import Job
from ..parallel.records import Bytes
from .job import layer_ranges
from .text import DASH, bytes_text, cell
from .timing import seconds_text


def human(n: int | None) -> str:
    """`bytes_text` (`1,625,620`, `—` when unknown) with the binary unit device memory is sold in:
    `1,625,620 (1.55 MiB)`."""
    if n is None:
        return bytes_text(n)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{bytes_text(n)} ({n / size:.2f} {unit})"
    return bytes_text(n)


def size_text(b: Bytes, lower_bound: bool = False) -> str:
    """A memory figure: `1,516,692 (1.45 MiB)`; with tensors of unknown size `≥ 98,816 + 64 tensors of
    unknown size`; `≥` also when more micro batches may be held (`lower_bound`)."""
    if b.unknown:
        return f"≥ {human(b.total)} + {b.unknown} tensor{'s' if b.unknown != 1 else ''} of unknown size"
    return ("≥ " if lower_bound else "") + human(b.total)


def flops_text(known: int, unknown: int) -> str:
    """Known FLOPs, and the operators of unknown cost beside them (`≥ 1,024 + 3 operators of unknown
    cost`; `—` when nothing is known)."""
    if not unknown:
        return cell(known)
    ops = f"{unknown} operator{'s' if unknown != 1 else ''} of unknown cost"
    return f"≥ {cell(known)} + {ops}" if known else f"{DASH} ({ops})"


def ratio_text(r: float | None) -> str:
    return DASH if r is None else f"{r:.2f}x"


def in_flight_words(count: int | float | None, by_chunk: Iterable[tuple[int, int]] = (), part: str = "chunk") -> str:
    """`2`, or whole micro batches per chunk (`4 on chunk 0, 1 on chunk 1`; `on segment 0` of a folded pipeline): never
    a fraction of one."""
    return ", ".join(f"{n} on {part} {c}" for c, n in by_chunk) or cell(count)


def in_flight_figure(f: InFlight) -> str:
    return in_flight_words(f.count, f.by_chunk, f.part)


def in_flight_count(f: InFlight) -> str:
    """`micro batches in flight: 2`: said after the words, so that it never reads as the job's micro batches."""
    return f"micro batches in flight: {in_flight_figure(f)}"


def in_flight_text(f: InFlight) -> str:
    return f"{in_flight_count(f)} ({f.how})"


def _held(b: Balance, stage: int | None) -> str:
    f = next((x for x in b.stages if x.stage == stage), None)
    return layer_ranges(f.layers) if f is not None else DASH


def balance_sentence(b: Balance) -> str:
    """`stage 0 does 5.37x the compute (forward+backward+recompute FLOPs) of stage 1: it holds layers
    0-4, stage 1 holds layer 5 (forward alone: 5.05x)`."""
    if b.selected is not None:
        return f"only stage {b.selected} selected (--stage): no other stage to compare with"
    if not b.stages:
        return "no rank of a known stage read"
    if len(b.stages) < 2:
        if b.absent:
            return f"one stage read; stage{'s' if len(b.absent) > 1 else ''} {', '.join(map(str, b.absent))} not read"
        # a pipeline whose stage count is unknown is not one stage (an interleaved rank alone: its peers' stages)
        return "one stage: nothing to balance" if b.stage_count.known else "one stage read of an unknown number"
    unknown = (f"; known operators only: {b.unknown_ops} operator{'s' if b.unknown_ops != 1 else ''} of unknown cost "
               "not counted") if b.unknown_ops else ""
    absent = f"; stages {', '.join(map(str, b.absent))} not read" if b.absent else ""
    if b.unknown_dominates:
        return ("no ratio: most forward, backward and recompute operators are of unknown cost on "
                + ", ".join(f"stage {s} ({u} of {n})" for s, u, n in b.unknown_dominates)
                + f", and the known ones cannot say which stage is heavier{absent}")
    if b.compute_ratio is None:
        return f"stage {b.lightest} does no {b.measure} that this tool can count{unknown}{absent}"
    if b.time_ratio is not None and b.slowest is not None and b.fastest is not None:
        secs = b.seconds
        return (f"stage {b.slowest} takes {b.time_ratio:.2f}x the time of stage {b.fastest} "
                f"({seconds_text(secs[b.slowest])} vs {seconds_text(secs[b.fastest])} of compute and exposed "
                f"communication per step; {b.measure}: stage {b.heaviest} does {ratio_text(b.compute_ratio)} stage "
                f"{b.lightest}'s): it holds {_held(b, b.slowest)}, stage {b.fastest} holds {_held(b, b.fastest)}"
                f"{unknown}{absent}")
    return (f"stage {b.heaviest} does {b.compute_ratio:.2f}x the compute ({b.measure}) of stage "
            f"{b.lightest}: it holds {_held(b, b.heaviest)}, stage {b.lightest} holds {_held(b, b.lightest)} "
            f"(forward alone: {ratio_text(b.forward_ratio)}){unknown}{absent}")


def memory_sentence(b: Balance) -> str:
    """Whether the stages fit (`--device-memory`), else the fullest stage."""
    if not b.stages:
        return "no stage read"
    full = max(b.stages, key=lambda f: f.memory.used.total)
    limit = b.device_memory
    kind = "peak of live tensors" if all(f.memory.peak is not None for f in b.stages) else "estimate"
    if limit is None:
        return (f"stage {full.stage} holds the most, {size_text(full.memory.used, full.memory.used_lower_bound)} "
                f"({kind}; --device-memory SIZE says whether it fits)")
    verdicts = [(f, f.memory.fits(limit)) for f in b.stages]
    over = [f for f, ok in verdicts if ok is False]
    open_ = [f for f, ok in verdicts if ok is None]
    if over:
        return "; ".join(f"stage {f.stage} does NOT fit in {human(limit)}: {human(f.memory.used.total - limit)} "
                         f"over" + (" at least" if f.memory.used.unknown or f.memory.used_lower_bound else "")
                         for f in over)
    if open_:
        return "; ".join(f"stage {f.stage} may not fit in {human(limit)}: "
                         f"{size_text(f.memory.used, f.memory.used_lower_bound)}" for f in open_)
    return (f"every stage fits in {human(limit)}; the fullest, stage {full.stage}, has "
            f"{human(limit - full.memory.used.total)} headroom ({kind}; not counted: operator workspace, the "
            "runtime's own reservations)")


def split_groups(e: SplitEstimate) -> str:
    """`layers 0-1 | layers 2-3 | ...` per stage (a chunked job: each stage's chunks joined by `+`)."""
    per_stage: dict[int, list[str]] = {}
    for g, s in zip(e.groups, e.stage_of):
        per_stage.setdefault(s, []).append(layer_ranges(g))
    return " | ".join(" + ".join(per_stage.get(s, ["no layer"])) for s in range(len(e.loads)))


def offset(a: Advice, e: SplitEstimate) -> list[int] | list[list[int]]:
    """MindFormers' `model_config.offset` of a split: each stage's layer count minus the even share
    (`num_layers // (pipeline_stage * pp_interleave_num)`), per chunk when there are chunks."""
    counts = e.layer_counts()
    share = a.num_layers // (len(e.loads) * len(counts))
    rows = [[n - share for n in row] for row in counts]
    return rows[0] if len(rows) == 1 else rows


def _estimate_text(e: SplitEstimate) -> str:
    timed = "" if e.seconds is None or not min(e.seconds) else \
        f"slowest/fastest {ratio_text(max(e.seconds) / min(e.seconds))} by time (FLOPs: {ratio_text(e.ratio)}), " \
        f"step {seconds_text(e.step)}, "
    return ((timed or f"heaviest/lightest {ratio_text(e.ratio)}, ")
            + f"bubble {DASH if e.bubble is None else f'{e.bubble:.1%}'}"
            + ("" if e.fits is None else ("; every stage fits" if e.fits else "; a stage does NOT fit")))


def advice_sentences(a: Advice) -> list[str]:
    """The advice in plain words, the current and even splits beside it (one estimate for all three)."""
    out = []
    if a.advised is not None:
        same = a.current is not None and a.advised.groups == a.current.groups
        head = ("the current split is already the best found: " if same else "") + split_groups(a.advised)
        shorter = ""
        if not same and a.current is not None and a.current.step and a.advised.step is not None:
            shorter = (f"; the step shortens by {1 - a.advised.step / a.current.step:.1%} (by the stages' times "
                       f"per micro batch: {seconds_text(a.current.step)} -> {seconds_text(a.advised.step)})")
        out.append(f"Advice (estimate from this compilation): {head} (offset {offset(a, a.advised)}): "
                   f"{_estimate_text(a.advised)}{shorter}{recompute_text(a)}")
    else:
        out.append(f"Advice: cannot advise: {a.cannot}")
    for name, e in (("now", a.current), ("even split", a.even)):
        if e is not None and (a.advised is None or e.groups != a.advised.groups or name == "now"):
            out.append(f"  {name}: {split_groups(e)}: {_estimate_text(e)}")
    return out


def recompute_text(a: Advice) -> str:
    """`; recompute: stage 0 stops recomputing layers 0-1 (peak 68.75 MiB -> 107.00 MiB, 458 µs less recompute per
    step): the step 4.54 ms -> 3.97 ms (12.6% shorter), each such stage fitting in 1.00 GiB`; empty without a change."""
    if not a.recompute or a.advised is None or not a.advised.step or a.recompute_step is None:
        return ""
    parts = [f"stage {c.stage} {'stops recomputing' if c.off else 'recomputes'} {layer_ranges(c.off or c.on)} "
             f"(peak {_short(c.before)} -> {_short(c.after)}, {seconds_text(abs(c.seconds))} "
             f"{'less' if c.seconds < 0 else 'more'} recompute per step)" for c in a.recompute]
    change = 1 - a.recompute_step / a.advised.step
    return (f"; recompute: {', '.join(parts)}: the step {seconds_text(a.advised.step)} -> "
            f"{seconds_text(a.recompute_step)} ({abs(change):.1%} {'shorter' if change > 0 else 'longer'}), "
            f"each such stage fitting in {_short(a.device_memory)}")


def _short(n: int | None) -> str:
    """`68.75 MiB`, `1.00 GiB`: the unit of `human` alone, where several sizes share a sentence."""
    return human(n).rpartition("(")[2].rstrip(")")


def _recompute(a: Advice, e: SplitEstimate) -> tuple[str, str | None]:
    """`recompute_config.recompute` for the split (each layer keeps its recompute, but for the advised changes), and
    a comment when MindFormers' form (the first N layers of each stage) is not the set recomputed."""
    recomputed = a.recomputed_after
    if not recomputed:
        return "False", None
    if len(recomputed) == a.num_layers:
        return "True", None
    counts, first = [], True
    for g in e.groups:
        mine = [i for i in g if i in recomputed]
        counts.append(len(mine))
        first &= mine == g[: len(mine)]
    now = "" if a.recompute else " now"
    note = None if first else (f"recomputed{now}: {layer_ranges(recomputed)}; MindFormers recomputes the first N "
                               "layers of each stage")
    return str(counts), note


def advice_yaml(a: Advice, job: Job) -> str | None:
    """The advised split as the MindFormers YAML to paste (`parallel_config.pipeline_stage`,
    `model_config.offset`, `recompute_config`), its estimate in comments; None without advice."""
    e = a.advised
    if e is None:
        return None
    recompute, note = _recompute(a, e)
    micro = job.micro_batches.value if job.micro_batches.known else None
    lines = [f"# irtool advice: {split_groups(e)}", f"# estimate: {_estimate_text(e)}"
             + ("" if a.current is None else f" (now {ratio_text(a.current.ratio)})")]
    if (rc := recompute_text(a)):
        lines.append(f"# {rc.removeprefix('; ')}")
    lines += ["parallel_config:", f"  pipeline_stage: {len(e.loads)}"]
    if micro is not None:
        lines.append(f"  micro_batch_num: {micro}")
    lines += ["model:", "  model_config:", f"    num_layers: {a.num_layers}", f"    offset: {offset(a, e)}",
              "recompute_config:", f"  recompute: {recompute}" + (f"  # {note}" if note else "")]
    return "\n".join(lines) + "\n"
