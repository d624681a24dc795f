"""Activations a recomputed layer reads, kept sliced until its recompute (docs/plan.md, "Micro-batch size").

MindFormers' `recompute_slice_activation` marks a layer's output (a node printing the CNode attribute
`slice_activation`). MindSpore's SliceRecomputedActivationNodes then keeps such an output, where recomputed copies
read it, as one slice along dimension 0 over the ranks holding identical copies of it (the repeats of its tensor
layout), and gathers it back before the recompute (an AllGather, instance `recompute_slice_allgather`); when
dimension 0 does not divide by their number it leaves the output whole (a warning, nothing in the dump). So the
same network compiled at another micro-batch size, or another dp or mp, gains or loses that AllGather: the plan
needs each marked output (its layer, bytes, dimension 0 and split) and whether this compile slices it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .table import NodeFacts

MARK = "slice_activation"
GATHER = "recompute_slice_allgather"


@dataclass(frozen=True)
class MarkedOutput:
    """A node marked `slice_activation` (CNode attribute): an output a recompute may read sliced."""

    node: str  # uid
    layer: int | None
    nbytes: int | None  # its output, one run, whole
    dim0: int | None  # its output's dimension 0 on this rank
    split: tuple[int, ...] | None  # its output's split: its first input's strategy (an elementwise operator)
    runs: int | None
    sliced: bool  # this compile slices it (a StridedSlice marked `recompute_slice` reads it)


def marked_outputs(t: NodeFacts) -> list[MarkedOutput]:
    """Every node printing the CNode attribute `slice_activation` (a Transpose is never sliced: MindSpore skips it)."""
    index = t.get("node_index")
    out = []
    for n in t.dump.nodes():
        if not n.mentions(MARK) or n.op == "Transpose" or n.cnode_attrs.get(MARK) is not True:
            continue
        ty = n.output_type
        dims = ty.shape if ty is not None and isinstance(ty.shape, tuple) else None
        dim0 = dims[0] if dims and isinstance(dims[0], int) else None
        st = t("strategy", n)
        first = st.in_strategy[0] if st is not None and st.in_strategy else None
        split = tuple(first) if isinstance(first, tuple) and all(isinstance(x, int) for x in first) else None
        sliced = any(u.op == "StridedSlice" and u.cnode_attrs.get("recompute_slice") is True
                     for u in index.users(n))
        out.append(MarkedOutput(n.uid, t("layer", n), t("out_bytes", n), dim0, split, t("runs", n), sliced))
    return out
