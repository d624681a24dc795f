"""The timeline picture (`irtool render DIR --timeline`, `irtool view DIR`'s timeline link): the step
played out on a hardware profile (docs/timing.md §4), one lane per stage, time on the x axis, each unit of
work a box (forward, backward, recompute, exposed communication coloured, micro batch on it, chunk by
shade), Send -> Receive arrows between lanes, the idle time hatched, the step time and bubble written on
it. The times are analysis' (`parallel.timing`), the pairs too (`parallel.pairs`); this module only draws
them."""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from ..parallel.balance import stage_cost
from ..parallel.hardware import Profile
from ..parallel.order import unit_label
from ..parallel.records import ParallelFacts
from ..parallel.timing import Box, StageTiming, Step, simulate
from .timing import mfu_text, seconds_text

COMM = "#fdd835"  # exposed communication (yellow: communication the compute does not hide)
TAIL = "#cfd8dc"  # optimizer and gradient aggregation after the last unit
ARROWS = {"F": "#1f5fbf", "B": "#bf1f1f"}  # as `render --pipeline` draws a pair
PHASE_BAND = {"F": "#64b5f6", "B": "#ffb74d"}  # a unit's phase (its compute, and a band along its bottom)
RECOMPUTE = "#ba68c8"
WIDTH, LEFT, RIGHT, LANE, GAP, TOP = 1200, 96, 64, 44, 16, 92


@dataclass
class Timeline:
    step: Step
    ranks: dict[int, int | None]  # stage -> the rank drawn for it
    tails: dict[int, float]  # stage -> seconds after its last unit


def stage_timings(ranks: Iterable[tuple[ParallelFacts, int | None, str]], hardware: Profile) -> list[StageTiming]:
    """Each pipeline stage's time on `hardware`, of the ranks given (facts, rank, file) one per stage."""
    return [stage_cost(facts, hardware=hardware, walk=False).timing
            for facts, rank, file in ranks if facts.stage is not None and rank is not None]


def timeline(timings: list[StageTiming]) -> Timeline:
    """The step the stages' `timings` play out (`simulate`; its `cannot` says why there is none), to draw."""
    return Timeline(simulate(timings), {t.stage or 0: t.rank for t in timings},
                    {t.stage or 0: t.tail.seconds for t in timings})


def _ticks(span: float) -> list[float]:
    """About 6 round ticks (1, 2 or 5 times a power of ten) from 0 to `span`."""
    raw = span / 6 if span > 0 else 1.0
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(span / step) + 1)]


def _box(b: Box, x: float, y: float, scale: float, chunked: bool) -> list[str]:
    """One unit: its parts side by side in proportion (recompute before the backward it serves, the exposed
    communication last), the micro batch written on it when it fits, the whole label in its tooltip."""
    w = (b.end - b.start) * scale
    t = b.time
    parts = [(t.forward, PHASE_BAND["F"]), (t.recompute, RECOMPUTE), (t.backward, PHASE_BAND["B"]), (t.exposed, COMM)]
    total = sum(s for s, _ in parts) or 1.0
    label = unit_label(b.unit)
    dark = chunked and (b.unit[2] or 0) % 2 == 1
    tip = (f"{label}: {seconds_text(b.start)} to {seconds_text(b.end)} (forward {seconds_text(t.forward)}, backward "
           f"{seconds_text(t.backward)}, recompute {seconds_text(t.recompute)}, exposed communication "
           f"{seconds_text(t.exposed)})")
    out = [f'<g class="unit" data-stage="{b.stage}" data-unit={quoteattr(label)}><title>{escape(tip)}</title>']
    at, band = x, LANE * 0.3  # a band along the bottom keeps the phase in sight when communication fills the box
    for secs, colour in parts:
        if secs > 0:
            pw = w * secs / total
            out.append(f'<rect x="{at:.2f}" y="{y:.1f}" width="{pw:.2f}" height="{LANE - band:.1f}" fill="{colour}"/>')
            at += pw
    out.append(f'<rect x="{x:.2f}" y="{y + LANE - band:.1f}" width="{w:.2f}" height="{band:.1f}" '
               f'fill="{PHASE_BAND[b.unit[0]]}"/>')
    stroke = "#37474f" if dark else "#90a4ae"
    out.append(f'<rect class="unit-box" x="{x:.2f}" y="{y:.1f}" width="{w:.2f}" height="{LANE}" fill="none" '
               f'stroke="{stroke}" stroke-width="{1.6 if dark else 0.8}"/>')
    text = label if w >= 7 * len(label) + 4 else f"{b.unit[0]}{b.unit[1]}" if w >= 7 * (1 + len(str(b.unit[1]))) \
        else str(b.unit[1]) if w >= 8 else ""
    if text:
        weight = "bold" if dark else "normal"
        out.append(f'<text x="{x + w / 2:.2f}" y="{y + LANE * 0.35 + 4:.1f}" text-anchor="middle" font-size="11" '
                   f'font-weight="{weight}" fill="#212121">{escape(text)}</text>')
    out.append("</g>")
    return out


def timeline_svg(tl: Timeline, title: str) -> str:
    """The SVG text of a timeline."""
    step = tl.step
    stages = sorted(tl.ranks)
    lane_of = {s: i for i, s in enumerate(stages)}
    scale = (WIDTH - LEFT - RIGHT) / step.seconds
    height = TOP + len(stages) * (LANE + GAP) + 56
    chunked = any(b.unit[2] for b in step.boxes)
    y_of = {s: TOP + lane_of[s] * (LANE + GAP) for s in stages}
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
         'font-family="Helvetica, Arial, sans-serif">',
         '<defs><pattern id="idle" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
         '<rect width="6" height="6" fill="#fafafa"/><line x1="0" y1="0" x2="0" y2="6" stroke="#bdbdbd" '
         'stroke-width="2"/></pattern>'
         '<marker id="head" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" orient="auto">'
         '<path d="M0,0 L6,3 L0,6 z" fill="#555"/></marker></defs>',
         f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
         f'<text x="{LEFT}" y="24" font-size="16" font-weight="bold">{escape(title)}</text>',
         f'<text class="summary" x="{LEFT}" y="46" font-size="13">step {escape(seconds_text(step.seconds))} on '
         f'{escape(step.profile)} (estimate) · bubble {step.bubble:.1%} · MFU {escape(mfu_text(step.mfu))}</text>']
    legend = [("forward", PHASE_BAND["F"]), ("backward", PHASE_BAND["B"]), ("recompute", RECOMPUTE),
              ("exposed communication", COMM), ("optimizer, gradient aggregation", TAIL), ("idle (bubble)", "url(#idle)")]
    x = LEFT
    o.append('<g class="legend" font-size="12">')
    for name, fill in legend:
        o.append(f'<rect x="{x}" y="58" width="14" height="14" fill="{fill}" stroke="#90a4ae"/>'
                 f'<text x="{x + 19}" y="70">{escape(name)}</text>')
        x += 26 + 7 * len(name)
    if chunked:
        o.append(f'<text x="{x}" y="70">bold box: chunk 1 (odd chunks)</text>')
    o.append("</g>")
    for s in stages:
        y = y_of[s]
        row = next(r for r in step.stages if r.stage == s)
        o.append(f'<g class="lane" data-stage="{s}">')
        o.append(f'<rect x="{LEFT}" y="{y}" width="{WIDTH - LEFT - RIGHT}" height="{LANE}" fill="url(#idle)"/>')
        rank = tl.ranks[s]
        o.append(f'<text x="{LEFT - 8}" y="{y + LANE / 2}" text-anchor="end" font-size="13">stage {s}</text>'
                 f'<text x="{LEFT - 8}" y="{y + LANE / 2 + 14}" text-anchor="end" font-size="11" fill="#616161">'
                 f'rank {"—" if rank is None else rank}</text>')
        o.append(f'<text x="{WIDTH - RIGHT + 6}" y="{y + LANE / 2 + 4}" font-size="11" fill="#616161">idle '
                 f'{row.share(step.seconds):.0%}</text>')
        o.append("</g>")
    for b in step.boxes:
        o += _box(b, LEFT + b.start * scale, y_of[b.stage], scale, chunked)
    for s in stages:  # the tail after each stage's last unit
        last = max((b.end for b in step.boxes if b.stage == s), default=0.0)
        if tl.tails[s] > 0:
            o.append(f'<rect class="tail" x="{LEFT + last * scale:.2f}" y="{y_of[s]}" '
                     f'width="{tl.tails[s] * scale:.2f}" height="{LANE}" fill="{TAIL}" stroke="#90a4ae" '
                     f'stroke-width="0.8"><title>optimizer and gradient aggregation: '
                     f'{escape(seconds_text(tl.tails[s]))}</title></rect>')
    for a in step.arrows:
        down = lane_of[a.dst.stage] > lane_of[a.src.stage]
        x1, x2 = LEFT + a.src.end * scale, LEFT + a.dst.start * scale
        y1 = y_of[a.src.stage] + (LANE if down else 0)
        y2 = y_of[a.dst.stage] + (0 if down else LANE)
        o.append(f'<line class="arrow" data-from={quoteattr(unit_label(a.src.unit))} data-to='
                 f'{quoteattr(unit_label(a.dst.unit))} x1="{x1:.2f}" y1="{y1}" x2="{x2:.2f}" y2="{y2}" '
                 f'stroke="{ARROWS[a.src.unit[0]]}" stroke-opacity="0.55" stroke-width="1" '
                 f'marker-end="url(#head)"/>')
    axis = TOP + len(stages) * (LANE + GAP)
    o.append(f'<g class="axis" font-size="11" fill="#424242"><line x1="{LEFT}" y1="{axis}" x2="{WIDTH - RIGHT}" '
             f'y2="{axis}" stroke="#424242"/>')
    for tick in _ticks(step.seconds):
        tx = LEFT + tick * scale
        o.append(f'<line x1="{tx:.2f}" y1="{axis}" x2="{tx:.2f}" y2="{axis + 5}" stroke="#424242"/>'
                 f'<text x="{tx:.2f}" y="{axis + 18}" text-anchor="middle">{escape(seconds_text(tick))}</text>')
    o.append(f'<text x="{WIDTH - RIGHT}" y="{axis + 36}" text-anchor="end">time →</text></g>')
    o.append("</svg>")
    return "\n".join(o) + "\n"
