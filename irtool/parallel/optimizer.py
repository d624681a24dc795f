"""Optimizer sharding per parameter (docs/parallel.md §15): the parameter's forward gather and
backward reduce-scatter side by side, from the classified communication nodes."""
from __future__ import annotations

from .records import Bytes, CommNode, Group, OptimizerShard, per_step
from .rules import GATHERS
from .traffic import group_size, node_wire_bytes


def _sum(nodes: list[CommNode], values: list[int | None]) -> int | None:
    """The nodes' bytes over one step (each run counted); None when one is unknown or there is none."""
    total = Bytes()
    for c, v in zip(nodes, values):
        total += per_step(v, c.runs)
    return total.exact


def optimizer_shards(comm: list[CommNode], groups: dict[str, Group]) -> list[OptimizerShard]:
    """One row per parameter with optimizer-parallel communication, sorted by parameter name."""
    by_param: dict[str, list[CommNode]] = {}
    for c in comm:
        if c.category == "optimizer-parallel":
            by_param.setdefault(c.parameter or c.node, []).append(c)
    out = []
    for name, nodes in sorted(by_param.items()):
        fwd = [c for c in nodes if c.phase != "backward"]
        bwd = [c for c in nodes if c.phase == "backward"]
        gather = next((c for c in fwd if c.op in GATHERS and isinstance(c.shape, tuple)), None)
        full = gather.shape if gather else next((c.shape for c in bwd if c.op == "ReduceScatter"), None)
        n = group_size(gather or nodes[0], groups)
        piece = None
        if isinstance(full, tuple) and full and isinstance(full[0], int) and n and full[0] % n == 0:
            piece = (full[0] // n, *full[1:])  # AllGather concatenates the ranks' pieces on dimension 0
        names = list(dict.fromkeys(c.group for c in nodes if c.group))
        wires = [node_wire_bytes(c, groups) for c in nodes]
        out.append(OptimizerShard(
            parameter=name, forward_ops=[c.op for c in fwd], backward_ops=[c.op for c in bwd], groups=names,
            group_ranks=next((c.group_ranks for c in nodes if c.group_ranks), None), full_shape=full,
            slice_shape=piece, dtype=next((c.dtype for c in fwd + bwd if c.dtype), None),
            forward_bytes=_sum(fwd, [c.bytes for c in fwd]), backward_bytes=_sum(bwd, [c.bytes for c in bwd]),
            wire_bytes=_sum(nodes, wires), nodes=[c.node for c in nodes],
            backward_dtype=next((c.dtype for c in bwd if c.dtype), None)))
    return out
