"""The plan as text, Markdown and JSON (`irtool.plan/1`, docs/plan.md)."""
from __future__ import annotations

from typing import Any

from ..parallel.plan import SCHEMA, Basis, Plan
from ..present import Block, Code, Table, bytes_text
from ..present.job import layer_ranges
from ..present.timing import seconds_text

_FIGURES = ("weight", "optimizer-state", "accumulation", "activations_bytes", "peak_bytes", "micro_batches_in_flight",
            "compute_flops", "comm_bytes")


def mindformers_yaml(p: Plan, layers: int) -> str:
    """The MindFormers YAML to run a candidate: `parallel_config`, `offset`, `recompute_config`."""
    c = p.candidate
    # without a pipeline MindFormers accumulates gradients over the micro batches instead
    micro = [f"  micro_batch_num: {c.micro}"] if c.pp > 1 else []
    accumulate = [f"  gradient_accumulation_steps: {c.micro}"] if c.pp == 1 and c.micro > 1 else []
    return "\n".join([
        f"# irtool plan: {c.label()}", "parallel:", f"  enable_parallel_optimizer: {c.opt_shard}",
        "parallel_config:", f"  data_parallel: {c.dp}", f"  model_parallel: {c.mp}",
        f"  pipeline_stage: {c.pp}", *micro,
        "runner_config:", f"  batch_size: {c.global_batch // (c.dp * c.micro)}", *accumulate,
        "model:", "  model_config:", f"    num_layers: {layers}", f"    offset: {p.offset}",
        "recompute_config:", f"  recompute: {_recompute(p)}"]) + "\n"


def _recompute(p: Plan) -> str:
    c = p.candidate
    return str(list(c.recompute_counts)) if c.recompute_counts is not None else str(c.recompute)


def _mib(n: float | int | None) -> str:
    return "unknown" if n is None else f"{n / 2**20:.2f} MiB"


def _row(p: Plan) -> list[str]:
    c = p.candidate
    return [("* " if p.current else "") + str(c.dp), str(c.mp), str(c.pp), str(c.micro), str(p.offset),
            {"True": "all", "False": "none"}.get(_recompute(p), _recompute(p)), "on" if c.opt_shard else "off",
            _mib(p.peak_bytes), "unknown" if p.step_seconds is None else seconds_text(p.step_seconds),
            "unknown" if p.bubble is None else f"{p.bubble * 100:.1f}%",
            {True: "yes", False: "no", None: "not asked"}[p.fits]]


def _figures(p: Plan) -> str:
    step = "" if p.step_seconds is None else f"step {seconds_text(p.step_seconds)}, "
    return step + f"peak {_mib(p.peak_bytes)}" + ("" if p.bubble is None else f", bubble {p.bubble * 100:.1f}%")


def _answer(plans: list[Plan], fit: list[Plan]) -> str:
    """The answer first: the fastest candidate that fits, beside the compiled configuration."""
    now = next((p for p in plans if p.current), None)
    if len(plans) == 1 and not plans[0].refused:  # --only: the one configuration asked for
        one = plans[0]
        return (f"{one.candidate.label()}{' (as compiled)' if one.current else ''}: {_figures(one)}"
                + ("" if one.fits is None else ", fits" if one.fits else ", does not fit") + " (estimates)")
    if not fit:
        return "No candidate fits" + (f" (the compiled configuration: {_figures(now)})" if now else "") + \
            " (estimates)"
    best = fit[0]
    what = ("fastest" if best.step_seconds is not None else "smallest peak (no step time without a profile)") + \
        (" that fits" if best.fits else "")
    if best.current:
        return f"The compiled configuration is the {what}: {_figures(best)} (estimates)"
    return (f"{what[0].upper()}{what[1:]}: {best.candidate.label()}: {_figures(best)}"
            + (f"; compiled: {_figures(now)}" if now else "") + " (estimates)")


def blocks(b: Basis, plans: list[Plan], limit: int | None = 25) -> list[Block]:
    ok = [p for p in plans if not p.refused]
    fit = [p for p in ok if p.fits is not False]
    head = (f"Plan for {b.path}: compiled dp {b.dp} x mp {b.mp} x pp {b.pp}, {b.micro} micro batch"
            f"{'es' if b.micro != 1 else ''}, global batch {b.global_batch}, {b.layers} layer"
            f"{'s' if b.layers != 1 else ''}; "
            f"{len(plans)} candidate{'s' if len(plans) != 1 else ''}: "
            + (f"{len(fit)} fit, {len(ok) - len(fit)} do not" if any(p.fits is not None for p in ok) else
               f"{len(ok)} predicted") + f", {len(plans) - len(ok)} refused (estimates on "
            f"{b.hardware or 'no hardware profile'}; * the compiled configuration)")
    out: list[Block] = [_answer(plans, fit)]
    cols = ["dp", "mp", "pp", "micro", "offset", "recompute", "opt shard", "peak", "step", "bubble", "fits"]
    title = "Candidates that fit, fastest first" if any(p.fits is not None for p in ok) else \
        "Candidates, fastest first (--device-memory SIZE or --hardware NAME to keep those that fit)"
    out += [head, Table(title, cols, [_row(p) for p in fit]).limited(limit)]
    if len(ok) > len(fit):
        out.append(Table("Candidates that do not fit", cols, [_row(p) for p in ok if p not in fit]).limited(limit))
    if len(plans) > len(ok):
        why: dict[tuple[str, str], int] = {}
        for p in plans:
            if p.refused:
                c = p.candidate
                key = (f"dp{c.dp} mp{c.mp} pp{c.pp} m{c.micro}", "; ".join(p.refused))
                why[key] = why.get(key, 0) + 1
        out.append(Table("Refused (each with its recompute, sharding and offset variants)", ["candidate", "variants", "why"],
                         [[k, str(n), w] for (k, w), n in why.items()]).limited(limit))
    if fit:
        best = fit[0]
        out.append(Table(f"Best: {best.candidate.label()}, per stage", ["stage", "layers", *(_FIGURES[:-2]),
                                                                        "compute FLOPs", "communication"],
                         [[str(s.stage), layer_ranges(s.layers),
                           *(bytes_text(int(s.figures[k].value)) if k != "micro_batches_in_flight"
                             else str(s.figures[k].value) for k in _FIGURES[:-2]),
                           f"{int(s.figures['compute_flops'].value):,}",
                           ", ".join(f"{k} {v:,} B" + (f" (groups of {'/'.join(map(str, s.group_sizes[k]))})"
                                                         if s.group_sizes.get(k) else "")
                                     for k, v in s.comm_by_category.items())] for s in best.stages]))
        out.append(Table("How each figure is obtained", ["figure", "how"],
                         [[k, v.how] for k, v in best.stages[0].figures.items()]))
        out.append(Code("yaml", mindformers_yaml(best, best.candidate.layers(b.layers))))
    out += [f"note: {n}" for n in b.notes]
    return out


def as_dict(b: Basis, plans: list[Plan]) -> dict[str, Any]:
    """`irtool.plan/1`."""
    return {"schema": SCHEMA, "path": b.path,
            "compiled": {"dp": b.dp, "mp": b.mp, "pp": b.pp, "micro_batches": b.micro, "global_batch": b.global_batch,
                         "recompute": b.recompute, "optimizer_shard": b.opt_shard, "num_layers": b.layers},
            "hardware": b.hardware, "candidates": [_candidate(b, p) for p in plans], "notes": b.notes}


def _candidate(b: Basis, p: Plan) -> dict[str, Any]:
    c = p.candidate
    return {"dp": c.dp, "mp": c.mp, "pp": c.pp, "micro_batches": c.micro, "recompute": c.recompute,
            "optimizer_shard": c.opt_shard, "global_batch": c.global_batch, "current": p.current,
            "refused": p.refused, "offset": p.offset if not p.refused else None,
            "peak_bytes": p.peak_bytes, "step_seconds": p.step_seconds, "bubble": p.bubble, "fits": p.fits,
            "stages": [{"stage": s.stage, "layers": s.layers,
                        **{k: v.value for k, v in s.figures.items()}, "bytes_by_role": s.bytes_by_role,
                        "flops": s.flops,
                        "comm_by_category": s.comm_by_category, "group_sizes": s.group_sizes,
                        "how": {k: v.how for k, v in s.figures.items()}} for s in p.stages],
            "num_layers": c.layers(b.layers),
            "mindformers_yaml": None if p.refused else mindformers_yaml(p, c.layers(b.layers))}
