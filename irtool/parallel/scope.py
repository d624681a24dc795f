"""A node's name scope and the parts every command reads from it (docs/parallel.md §8).

`Default/net/layers-CellList/3-Block/AllReduce-op0`: the cell `Default/net/layers-CellList/3-Block`
and the node's own operator `AllReduce-op0` (sorted-order dumps print the cell only). Backward
nodes print `Gradients/<cell>/Grad_<Op>/...`, recomputed ones `recompute_<cell>`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

_OWN_OP = re.compile(r"^[A-Za-z_][\w.]*-op\d+$")
GRADIENTS = "Gradients/"
RECOMPUTE = "recompute_"


@dataclass(frozen=True)
class Scope:
    """One printed scope (`Fullname with scope`), read the same way by every command."""

    text: str

    @cached_property
    def own_op(self) -> str | None:
        """The node's own `Op-opN` component when the scope ends with one."""
        parts = self.text.split("/")
        return parts[-1] if len(parts) > 1 and _OWN_OP.match(parts[-1]) else None

    @cached_property
    def cell(self) -> str:
        """The scope without the node's own operator: the cell it belongs to."""
        return self.text[: -len(self.own_op) - 1] if self.own_op else self.text

    @property
    def gradient(self) -> bool:
        return self.text.startswith(GRADIENTS)

    @property
    def recompute(self) -> bool:
        return self.text.startswith(RECOMPUTE) or self.text.startswith(GRADIENTS + RECOMPUTE)

    @cached_property
    def cell_parts(self) -> tuple[str, ...]:
        """The cell's components, the same for forward, backward and recompute nodes: without
        `Gradients/`, `recompute_`, the `Grad_*` pseudo-cells and the own operator."""
        return cell_parts(self.text)

    @property
    def forward_cell(self) -> str:
        """The cell without a `recompute_` prefix (a recomputed copy is the same cell)."""
        return self.text[len(RECOMPUTE):] if self.text.startswith(RECOMPUTE) else self.text


def cell_parts(scope: str) -> tuple[str, ...]:
    """`Scope(scope).cell_parts`, without making a `Scope` (per node of a large dump)."""
    text = scope[len(GRADIENTS):] if scope.startswith(GRADIENTS) else scope
    text = text[len(RECOMPUTE):] if text.startswith(RECOMPUTE) else text
    parts = [p for p in text.split("/") if p and not p.startswith("Grad_")]
    if len(parts) > 1 and _OWN_OP.match(parts[-1]):
        parts = parts[:-1]
    return tuple(parts)


def attributed_scope(scope: str, forward_scope: str | None) -> str:
    """The scope a backward node is attributed to (§8): MindSpore sometimes prints a backward
    collective under another cell than its forward counterpart (CSE'd or reused bprop). When the
    printed cell is not the forward node's cell, the gradient belongs to the forward cell:
    `Gradients/` + that cell + the printed `Grad_<Op>/<op>` tail. Otherwise the printed scope."""
    if not forward_scope or not scope.startswith(GRADIENTS):
        return scope
    parts = scope.split("/")
    grads = [i for i, p in enumerate(parts) if p.startswith("Grad_")]
    cut = grads[-1] if grads else len(parts) - 1
    printed_cell = "/".join(parts[1:cut])
    fwd_cell = "/".join(forward_scope.split("/")[:-1])
    if not fwd_cell or Scope(printed_cell).forward_cell == Scope(fwd_cell).forward_cell:
        return scope
    return "/".join(["Gradients", fwd_cell, *parts[cut:]])
