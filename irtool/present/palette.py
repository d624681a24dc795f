"""The one colour palette of irtool's pictures: `irtool render` (DOT fills and borders) and
`irtool view` (Model Explorer node colours) draw a communication category in the same colour.
README.md ("irtool view") and docs/render.md name these colours."""
from __future__ import annotations

# communication category -> fill colour
CATEGORY_COLORS = {
    "redistribution": "#ffcc80",  # orange
    "operator-forward": "#fff59d",  # yellow
    "gradient-aggregation": "#ef9a9a",  # red
    "optimizer-parallel": "#90caf9",  # blue
    "pipeline": "#ce93d8",  # purple
    "expert-parallel": "#c5e1a5",  # light green
    "sequence-parallel": "#80deea",  # cyan
    "context-parallel": "#f48fb1",  # pink
    "other": "#e0e0e0",  # grey
}
# communication category -> DOT shape in `irtool render` (the view draws every node as a box)
CATEGORY_SHAPES = {
    "redistribution": "hexagon",
    "operator-forward": "octagon",
    "gradient-aggregation": "doubleoctagon",
    "optimizer-parallel": "parallelogram",
    "pipeline": "cds",
    "expert-parallel": "trapezium",
    "sequence-parallel": "house",
    "context-parallel": "invhouse",
    "other": "diamond",
}
STRATEGY_FILL = "#f5f0dc"  # an operator with a sharding strategy (cream: not a communication colour)
FOLD_FILL = "#dde8f5"  # a folded scope
FOLD_BORDER = "#5b7fa6"  # a folded scope without communication
DIFF_COLORS = {"added": "#a5d6a7", "removed": "#ef9a9a", "changed": "#ffe082"}
