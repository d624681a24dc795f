"""Time records (`irtool.parallel.timing`) as people read them: seconds in the unit that fits (µs, ms, s),
shares of the step, the step line, the per-stage table (docs/timing.md)."""
from __future__ import annotations

from ..parallel.calibrate import Calibration, Fit
from ..parallel.hardware import DEFAULT, Profile, Tier
from ..parallel.order import unit_label
from ..parallel.timing import StageTiming, Step, UnitTime
from .tables import Code, Table
from .text import DASH


def seconds_text(s: float | None) -> str:
    """`845 µs`, `1.23 ms`, `2.41 s`; `—` when unknown."""
    if s is None:
        return DASH
    if s >= 1:
        return f"{s:.3g} s" if s < 100 else f"{s:,.0f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def share_text(part: float, whole: float) -> str:
    return DASH if not whole else f"{part / whole:.1%}"


def mfu_text(m: float | None) -> str:
    """`41.2%`; a small one keeps two figures (`0.014%`)."""
    return DASH if m is None else (f"{m:.1%}" if m >= 0.01 else f"{m * 100:.2g}%")


def profile_text(p: Profile | str, default: bool) -> str:
    """`Huawei Ascend 910B (Atlas 800T A2), the default profile 910b: --hardware NAME|FILE to choose`."""
    name = p if isinstance(p, str) else p.name
    return f"{name}, the default profile {DEFAULT}: --hardware NAME|FILE to choose" if default else name


def step_line(step: Step, hardware: str) -> str:
    """`Step: 1.23 ms (estimate on H100): bubble 27.3%, exposed communication 12.0% of the step, MFU 41%`."""
    if step.cannot:
        return f"Step: cannot play the step out: {step.cannot}"
    unknown = [f"{n} {what}{'s' if n != 1 else ''} of unknown {how} not timed"
               for n, what, how in ((step.unknown_ops, "operator", "cost"),
                                    (step.unknown_comm, "collective", "size or group"))
               if n]
    return (f"Step: {'≥ ' if unknown else ''}{seconds_text(step.seconds)} (estimate on {hardware}): bubble "
            f"{step.bubble:.1%}, exposed communication {step.exposed_share:.1%} of the step, MFU "
            f"{mfu_text(step.mfu)}" + ("; " + ", ".join(unknown) if unknown else ""))


def step_table(step: Step) -> Table:
    """Per stage: compute, exposed communication and idle (bubble) seconds with their share of the step, MFU."""
    rows = []
    for s in step.stages:
        mfu = s.mfu(step.seconds)
        rows.append([str(s.stage), DASH if s.rank is None else str(s.rank),
                     f"{seconds_text(s.busy)} ({share_text(s.busy, step.seconds)})",
                     f"{seconds_text(s.exposed)} ({share_text(s.exposed, step.seconds)})",
                     f"{seconds_text(s.idle)} ({share_text(s.idle, step.seconds)})", mfu_text(mfu)])
    return Table(f"Step time per stage (one rank each; step {seconds_text(step.seconds)}; estimate)",
                 ["stage", "rank", "compute", "exposed communication", "idle (bubble)", "MFU"], rows)


def unit_table(t: StageTiming) -> Table:
    """One rank's units in execution order with their seconds."""
    rows = [[unit_label(k), *_times(t.units[k])] for k in t.order]
    rows.append(["after the last unit (optimizer, gradient aggregation)", *_times(t.tail)])
    return Table(f"Time per unit of work on {t.profile} (estimate; exposed = communication compute does not hide)",
                 ["unit", "forward", "backward", "recompute", "optimizer", "communication", "exposed"], rows)


def _times(u: UnitTime) -> list[str]:
    return [seconds_text(x or None) for x in (u.forward, u.backward, u.recompute, u.optimizer, u.comm, u.exposed)]


def calibration_blocks(c: Calibration, p: Profile) -> list:
    """The trace against the estimate per stage, the fitted figures, the step before and after, and the fitted
    profile as TOML to keep."""
    f = c.fit
    rows = []
    for m in c.measured:
        u = c.predicted.get(m.stage)
        rows.append([str(m.stage), seconds_text(m.computing), seconds_text(u.compute if u else None),
                     seconds_text(m.communication), seconds_text(u.comm if u else None),
                     seconds_text(m.not_overlapped), seconds_text(u.exposed if u else None)])
    t = Table(f"Calibration against {c.file} ({c.steps} step{'s' if c.steps != 1 else ''}, mean; Receive waits "
              "left out of the communication)",
              ["stage", "computing measured", "estimated", "communication measured", "estimated",
               "not overlapped measured", "estimated"], rows)
    fitted = (f"  fitted: compute efficiency x{f.compute_efficiency:.3g}, link efficiency x{f.link_efficiency:.3g}, "
              f"overlap {f.overlap:.2f} (was {f.overlap_was:.2f})")
    step = ""
    if c.step_before is not None and c.step_after is not None:
        step = (f"  step {seconds_text(c.step_before)} on the profile as given, {seconds_text(c.step_after)} with the "
                f"fitted figures; measured {seconds_text(c.measured_step)} (the slowest stage's Computing + "
                "Communication(Not Overlapped) + Free + Bubble)")
    return ["", t, fitted, *([step] if step else []), "  the fitted profile (save as a .toml, --hardware FILE):",
            Code("toml", fitted_toml(p, f))]


def fitted_toml(p: Profile, f: Fit) -> str:
    """The fitted figures as a profile file over the one calibrated. An efficiency the fit would raise above 1
    stays 1 and the rate or bandwidth takes the rest."""
    top = max(e for _, e in (*p.matrix_efficiency, *p.vector_efficiency)) * f.compute_efficiency
    k = min(1.0, 1 / top) * f.compute_efficiency if top > 1 else f.compute_efficiency  # on the efficiencies

    def curve(points: tuple[tuple[float, float], ...]) -> str:
        return "[" + ", ".join(f"[{x:g}, {e * k:.3g}]" for x, e in points) + "]"

    def rates(name: str, table: dict[str, float]) -> str:
        return "" if top <= 1 else f"\n[compute.{name}]\n" + "".join(f"{d} = {r * top:.4g}\n" for d, r in table.items())

    def tier(name: str, t: Tier) -> str:
        e = t.efficiency * f.link_efficiency
        bandwidth = "" if e <= 1 else f"bandwidth = {t.bandwidth * e:.4g}\n"
        return f"[network.{name}]\n{bandwidth}efficiency = {min(1.0, e):.3g}\n"

    base = p.where.split(" over ")[0]  # the file calibrated (itself over its base), or the built-in name
    return (f'base = "{base}"\nname = "{p.name}, calibrated"\n\n[compute]\n'
            f"matrix_efficiency = {curve(p.matrix_efficiency)}\nvector_efficiency = {curve(p.vector_efficiency)}\n"
            + rates("matrix", p.matrix) + rates("vector", p.vector) + "\n"
            + tier("intra", p.intra) + "\n" + tier("inter", p.inter) + f"\n[overlap]\ncollective = {f.overlap:.3g}\n")
