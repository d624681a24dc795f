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
_OP_NUM = re.compile(r"-op(\d+)$")
GRADIENTS = "Gradients/"
RECOMPUTE = "recompute_"
# Generated ids that change per compilation and per pass, in names and scopes.
_IDS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"\bCNode_\d+"), "CNode_?"),
    (re.compile(r"\bequiv_\d+"), "equiv_?"),
    (re.compile(r"\d{8,}"), "?"),  # hashes and unique ids inside names
]
# The cells MindSpore and MindFormers wrap a network in (training step, loss, pipeline, micro batches,
# gradient accumulation, virtual dataset): not the network as the user wrote it (`user_cell`).
WRAPPER_CELLS = frozenset({
    "PipelineCell", "Pipeline", "_MicroBatch", "MicroBatchInterleaved", "WithLossCell", "WithGradCell",
    "WithEvalCell", "TrainOneStepCell", "TrainOneStepWithLossScaleCell", "_VirtualDatasetCell",
    "_TrainGradAccuStepCell", "_TrainPipelineAccuStepCell", "GradAccumulationCell", "GradAccumulation",
    "PipelineGradReducer", "AutoParallel", "PipelineCellWithTwoOutput", "MFPipelineWithLossScaleCell",
    "MFTrainOneStepCell", "_VirtualCellWrapper", "_MicroBatchInterleaved",
})

# MindSpore's gradient reducers (mindspore/nn/wrap/grad_reducer.py), the cells a training step passes its gradients
# through between the backward and the optimizer (`grads = self.pp_grad_reducer(grads)`, then `self.optimizer(grads)`):
# data parallelism's mean of the reduced gradients, a pipeline's accumulated gradients scaled and their buffers zeroed
# (`accu_grads.*`). Gradient work run once per step after the last micro batch's backward, for the update alone: the
# phase pass files it with the optimizer's (never forward); a reducer's AllReduce is backward by its category.
GRAD_REDUCERS = frozenset({"DistributedGradReducer", "PipelineGradReducer"})


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
    text = without_gradients(scope)
    text = text[len(RECOMPUTE):] if text.startswith(RECOMPUTE) else text
    parts = [p for p in text.split("/") if p and not p.startswith("Grad_")]
    if len(parts) > 1 and _OWN_OP.match(parts[-1]):
        parts = parts[:-1]
    return tuple(parts)


def in_gradients(scope: str) -> bool:
    """The scope is under MindSpore's `Gradients` root (what its autodiff made; the phase pass reads it as
    backward evidence, `render` folds and names such boxes apart)."""
    return scope.startswith(GRADIENTS) or scope == GRADIENTS[:-1]


def in_grad_reducer(scope: str) -> bool:
    """The scope is a gradient reducer's (`GRAD_REDUCERS`): `Default/pp_grad_reducer-PipelineGradReducer/Mul-op13`."""
    return "GradReducer" in scope and any(p.split("-", 1)[-1] in GRAD_REDUCERS for p in scope.split("/"))


def without_gradients(scope: str) -> str:
    """The scope without its `Gradients/` root: the forward cell a backward node is printed under."""
    return scope[len(GRADIENTS):] if scope.startswith(GRADIENTS) else scope


def printed_cells(scope: str) -> tuple[str, ...]:
    """The cell path as printed (its `Gradients` and `recompute_` roots kept), without the node's own
    operator and the per-operator `Grad_<Op>` pseudo-cells of a backward scope."""
    return tuple(p for p in Scope(scope).cell.split("/") if p and not p.startswith("Grad_"))


def op_number(scope: str | None) -> int:
    """The creation counter `N` of a trailing `-opN` (stable across print orders); -1 without one."""
    if not scope:
        return -1
    m = _OP_NUM.search(scope)
    return int(m.group(1)) if m else -1


def stable_name(text: str) -> str:
    """A name or scope without the ids MindSpore generates per compilation and pass: hex addresses,
    `CNode_N`, `equiv_N`, hashes (`forward_op_10546112788216059064` -> `forward_op_?`)."""
    for pattern, repl in _IDS:
        text = pattern.sub(repl, text)
    return text


def _wrapper(part: str) -> bool:
    return part.split("-", 1)[-1] in WRAPPER_CELLS


def wrapped(scope: str) -> bool:
    """Whether a scope passes through a wrapper cell (`WRAPPER_CELLS`)."""
    return any(_wrapper(p) for p in scope.split("/"))


def user_cell(scope: str, in_wrapper: bool = False) -> str | None:
    """The cell a node belongs to in the network as the user wrote it: the cell (`cell_parts`) below
    `Default` and below the last wrapper cell (`WRAPPER_CELLS`), the network's own attribute name
    dropped, so that one network wrapped differently (with or without a pipeline, another loss or
    training-step wrapper) gives the same path:
    `Default/net_with_loss-PipelineCell/network-WithLossCell/_backbone-Net/layers-CellList/0-Block/MatMul-op0`
    -> `Net/layers-CellList/0-Block`. None for work of no user cell: the wrappers' own, `Default`'s,
    and with `in_wrapper` (a dump whose network is wrapped) the training step's cells beside the
    network (`Default/clip_grad_norm-ClipGradNorm`, `Default/learning_rate-...`)."""
    parts = list(cell_parts(scope))
    if parts and parts[0] == "Default":
        parts = parts[1:]
    last = max((i for i, p in enumerate(parts) if _wrapper(p)), default=-1)
    if in_wrapper and last < 0:
        return None
    parts = parts[last + 1:]
    if not parts:
        return None
    parts[0] = parts[0].split("-", 1)[-1]
    return stable_name("/".join(parts))


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
