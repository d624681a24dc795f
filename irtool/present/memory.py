"""The memory picture (`irtool render DIR --memory`, `irtool view DIR`'s memory link): device memory over
the step per stage, as MindSpore's memory tracker shows it:
the live bytes by role over the execution order (stacked), the units of work along the top, the peak marked and
labelled (docs/cost.md §2.1). The walk is analysis' (`parallel.lifetime.walk`, the `lifetimes` pass with its
curve kept); this module only draws it, as SVG written here (a chart, not a graph: no Graphviz).

Read back by tests: each stage is `<g class="stage" data-stage data-rank data-peak-bytes>`, each role's area
`<path class="role" data-role data-peak-bytes>` (its bytes at the peak), the peak `<line class="peak">` and its
`<text class="peak-label">`.
"""
from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from ..parallel.lifetime import LIVE_ROLES, NOT_COUNTED, ROLE_MEANING, Lifetimes, walk
from ..parallel.records import ParallelFacts
from .cost import human

# role -> fill (parameters in blues/greys, what the step makes in warm colours)
ROLE_COLORS = {
    "weight": "#1f77b4", "optimizer-state": "#6baed6", "accumulation": "#9ecae1", "hyperparameter": "#c6dbef",
    "unused": "#bdbdbd", "other": "#d9d9d9", "input": "#a1d99b", "constant": "#74c476",
    "activation": "#fd8d3c", "recompute": "#fdae6b", "backward": "#e6550d", "communication": "#9e9ac8",
    "optimizer": "#fdd0a2", "temporary": "#fee6ce",
}
WIDTH, PANEL_H, LEFT, RIGHT, TOP = 1100, 300, 90, 230, 60
MAX_POINTS = 600  # columns drawn per stage: each the step of most live bytes among the steps it stands for


@dataclass
class Panel:
    stage: int | None
    rank: int | None
    file: str
    walk: Lifetimes


def panel(facts: ParallelFacts, rank: int | None, file: str) -> Panel:
    """One rank's walk (the `lifetimes` pass with its curve kept)."""
    return Panel(facts.stage, rank, file, walk(facts.table, curve=True))


def _sample(curve: list[tuple[int, ...]], keep: int) -> list[int]:
    """Steps to draw: at most MAX_POINTS, each bucket's fullest step, and `keep` (the peak) always."""
    n = len(curve)
    if n <= MAX_POINTS:
        return list(range(n))
    size = n / MAX_POINTS
    steps = []
    for k in range(MAX_POINTS):
        lo, hi = int(k * size), max(int(k * size) + 1, int((k + 1) * size))
        steps.append(max(range(lo, min(hi, n)), key=lambda s: sum(curve[s])))
    if keep not in steps:
        steps.append(keep)
    return sorted(set(steps))


def _nice_step(top: float) -> float:
    raw = top / 5
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def _panel(p: Panel, y0: int, top_bytes: int) -> list[str]:
    lt = p.walk
    curve = lt.curve or []
    plot_w = WIDTH - LEFT - RIGHT
    h = PANEL_H - 70
    base = y0 + 40 + h
    n = max(1, len(curve))
    mib = 2**20

    def x(step: float) -> float:
        return LEFT + plot_w * step / n

    def y(b: float) -> float:
        return base - h * b / max(1, top_bytes)

    at = lt.at.step if lt.at is not None else 0
    steps = _sample(curve, at)
    stage = "—" if p.stage is None else str(p.stage)
    rank = "—" if p.rank is None else str(p.rank)  # a file outside a rank_N folder: never `None`
    peak_roles = lt.by_role
    out = [f'<g class="stage" data-stage={quoteattr(stage)} data-rank={quoteattr(rank)} '
           f'data-peak-bytes="{lt.peak_bytes}" data-steps="{lt.steps}">',
           f'<text x="{LEFT}" y="{y0 + 22}" class="title">stage {escape(stage)} (rank {rank}): peak '
           f'{escape(human(lt.peak_bytes))}<title>walking {escape(lt.how)}</title></text>',
           f'<text x="{LEFT}" y="{y0 + 36}" class="small">{escape(p.file)}<title>walking {escape(lt.how)}</title>'
           '</text>']
    tick = _nice_step(top_bytes / mib) * mib
    v = 0.0
    while v <= top_bytes + 1:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" class="axis" text-anchor="end">{v / mib:g} MiB</text>')
        v += tick
    lower = [0] * len(steps)
    for i, role in enumerate(LIVE_ROLES):
        upper = [lo + curve[s][i] for lo, s in zip(lower, steps)]
        if any(u != lo for u, lo in zip(upper, lower)):
            pts = [f"{x(s):.1f},{y(u):.1f}" for s, u in zip(steps, upper)]
            back = [f"{x(s):.1f},{y(lo):.1f}" for s, lo in zip(reversed(steps), reversed(lower))]
            out.append(f'<path class="role" data-role="{role}" data-peak-bytes="{peak_roles.get(role, 0)}" '
                       f'fill="{ROLE_COLORS[role]}" d="M{" L".join(pts)} L{" L".join(back)} Z">'
                       f'<title>{escape(role)}: {escape(human(peak_roles.get(role, 0)))} at the peak'
                       f'{escape(": " + ROLE_MEANING[role]) if role in ROLE_MEANING else ""}</title></path>')
        lower = upper
    seen: set[str] = set()
    for s, label in lt.units:  # each unit's label where it begins (a unit resumed later is not labelled again)
        if label in seen:
            continue
        seen.add(label)
        out.append(f'<line x1="{x(s):.1f}" x2="{x(s):.1f}" y1="{y0 + 40}" y2="{base}" class="unit"/>'
                   f'<text x="{x(s) + 2:.1f}" y="{base + 12}" class="unit">{escape(label)}</text>')
    if lt.at is not None:
        a = lt.at
        where = f"{a.op}, line {a.line}" + (f", {a.unit}" if a.unit else "")
        px = x(at)
        anchor = "end" if px > LEFT + plot_w * 0.6 else "start"
        dx = -4 if anchor == "end" else 4
        out.append(f'<line class="peak" x1="{px:.1f}" x2="{px:.1f}" y1="{y(lt.peak_bytes):.1f}" y2="{base}" '
                   f'data-step="{at}"/><circle cx="{px:.1f}" cy="{y(lt.peak_bytes):.1f}" r="3.5" class="peak"/>'
                   f'<text class="peak-label" x="{px + dx:.1f}" y="{y(lt.peak_bytes) - 6:.1f}" text-anchor="{anchor}">'
                   f'peak {escape(human(lt.peak_bytes))} at {escape(where)}</text>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{base}" y2="{base}" class="axisline"/>'
               f'<text x="{LEFT + plot_w / 2:.0f}" y="{base + 26}" class="axis" text-anchor="middle">kernels run, '
               f'in execution order (0 to {lt.steps})</text>')
    ly = y0 + 62
    lx = LEFT + plot_w + 16
    out.append(f'<text x="{lx}" y="{ly - 8}" class="small">live at the peak</text>')
    for role in reversed(LIVE_ROLES):
        if role in peak_roles:
            out.append(f'<rect x="{lx}" y="{ly}" width="11" height="11" fill="{ROLE_COLORS[role]}"/>'
                       f'<text x="{lx + 16}" y="{ly + 10}" class="legend">{escape(role)} '
                       f'{peak_roles[role] / mib:.2f} MiB</text>')
            ly += 15
    out.append("</g>")
    return out


def memory_svg(ps: list[Panel], title: str) -> str:
    """The SVG: one panel per stage, on one byte scale (the fullest stage's peak)."""
    top = int(max(p.walk.peak_bytes for p in ps) * 1.12) or 1  # room above the peak for its label
    height = TOP + PANEL_H * len(ps) + 30
    body = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="Helvetica, Arial, sans-serif">',
            "<style>.title{font-size:14px;font-weight:bold}.small{font-size:11px;fill:#555}"
            ".axis{font-size:11px;fill:#333}.legend{font-size:11px}.grid{stroke:#e5e5e5}"
            ".axisline{stroke:#333}.unit{stroke:#999;stroke-dasharray:2,3;font-size:10px;fill:#666}"
            "text.unit{stroke:none}.role{stroke:none}line.peak{stroke:#c00;stroke-width:1.5}"
            "circle.peak{fill:#c00}.peak-label{font-size:12px;font-weight:bold;fill:#c00}</style>",
            '<rect width="100%" height="100%" fill="white"/>',
            f'<text x="{LEFT}" y="24" class="title" font-size="16">{escape(title)}</text>',
            f'<text x="{LEFT}" y="42" class="small">live bytes by role over the step (tensor lifetimes, '
            'docs/cost.md §2.1), one byte scale for every stage</text>',
            f'<text x="{LEFT}" y="{height - 10}" class="small">not counted: {escape(NOT_COUNTED)}</text>']
    for k, p in enumerate(ps):
        body += _panel(p, TOP + PANEL_H * k, top)
    body.append("</svg>")
    return "\n".join(body) + "\n"
