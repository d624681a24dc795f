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
# `irtool view A B`: what the diff marks, in saturated colours no category's pastel comes near (a changed
# node must stand out among the communication nodes around it); white text on the dark ones
DIFF_COLORS = {"added": "#00c853", "removed": "#d50000", "changed": "#304ffe"}
DIFF_TEXT = {"removed": "#ffffff", "changed": "#ffffff"}
# `irtool view` of two configurations: a user operator by why it changed (`parallel.logical.CAUSES`); the layout's
# change, which explains most operators, in a quiet blue, an operator's own strategy change in the diff's
CAUSE_COLORS = {"added": DIFF_COLORS["added"], "removed": DIFF_COLORS["removed"], "stage": "#aa00ff",
                "strategy": DIFF_COLORS["changed"], "layout": "#9fa8da", "communication": "#ff6d00",
                "figures": "#cfd8dc"}
CAUSE_TEXT = {"removed": "#ffffff", "stage": "#ffffff", "strategy": "#ffffff"}
# pipeline Send/Receive, as MindInsight drew them: a Send red, a Receive green; the backward's paler,
# with a border of its colour (`irtool view`'s pipeline and execution order graphs)
P2P_COLORS = {("send", "F"): "#ef5350", ("receive", "F"): "#66bb6a", ("send", "B"): "#ffcdd2", ("receive", "B"): "#c8e6c9"}
P2P_BORDERS = {("send", "F"): "#424242", ("receive", "F"): "#424242", ("send", "B"): "#c62828", ("receive", "B"): "#2e7d32"}
PAIR_EDGE_COLOR = "#4a148c"  # a Send's line to the Receive it pairs with (dark purple: pipeline communication)
ORDER_EDGE_COLOR = "#9e9e9e"  # a box's line to the next of its rank's execution order
# units of work in execution order: forward, backward, a backward that recomputes forward work, as the timeline
# picture draws them (present/timeline.py), in hues no Send (red) or Receive (green) box has
UNIT_COLORS = {"F": "#64b5f6", "B": "#ffb74d", "recompute": "#ba68c8"}
# cost overlays of `irtool view` (FLOPs, bytes held, activation bytes): a value's decade below the largest
# shown, palest (less than a ten-thousandth of it) to darkest (within a tenth)
HEAT = ("#fff9c4", "#ffe082", "#ffb74d", "#f4511e", "#b71c1c")
