"""The parallel fields of `irtool summarize` (docs/parallel.md §12), from `ParallelFacts` records."""
from __future__ import annotations

from typing import Any, Iterable

from ..parallel import CommNode, ParallelFacts
from ..parallel.layers import layer_comm
from ..parallel.optimizer import optimizer_shards
from ..parallel.records import Group
from ..parallel.traffic import FORMULAS, node_wire_bytes


def _count(e: dict[str, Any], nbytes: int | None) -> None:
    """One more node in a row: its bytes added when known, else counted in `bytes_unknown` (never as 0)."""
    e["count"] += 1
    if nbytes is None:
        e["bytes_unknown"] += 1
    else:
        e["bytes"] += nbytes


def _add(totals: dict[str, Any], key: str, nbytes: int | None) -> None:
    _count(totals.setdefault(key, {"count": 0, "bytes": 0, "bytes_unknown": 0}), nbytes)


def comm_totals(comm: Iterable[CommNode]) -> dict[str, Any]:
    """Counts and bytes per category, per op, per category/phase, and overall."""
    out: dict[str, Any] = {"by_category": {}, "by_op": {}, "by_category_phase": {}}
    for c in comm:
        _add(out["by_category"], c.category, c.bytes)
        _add(out["by_op"], c.op, c.bytes)
        _add(out["by_category_phase"], f"{c.category}/{c.phase}", c.bytes)
        _add(out, "total", c.bytes)
    for key in ("by_category", "by_op", "by_category_phase"):
        out[key] = dict(sorted(out[key].items()))
    out.setdefault("total", {"count": 0, "bytes": 0, "bytes_unknown": 0})
    return out


def send_receive(comm: Iterable[CommNode]) -> list[dict[str, Any]]:
    """Send/Receive nodes grouped by direction, phase, peer, size and pipeline segment, with their micro batches."""
    pairs: dict[tuple, dict[str, Any]] = {}
    for c in comm:
        if c.direction is None:
            continue
        key = (c.op, c.phase, c.peer_stage, c.peer_rank, c.bytes, c.segment)
        e = pairs.setdefault(key, {"op": c.op, "phase": c.phase, "peer_stage": c.peer_stage,
                                   "peer_rank": c.peer_rank, "bytes_each": c.bytes, "micros": [], "count": 0,
                                   "segment": c.segment})
        e["count"] += 1
        if c.micro is not None:
            e["micros"].append(c.micro)
    for e in pairs.values():
        e["micros"] = sorted(e["micros"])
    return sorted(pairs.values(), key=lambda e: (e["phase"], e["op"], str(e["peer_stage"]), str(e["segment"])))


def gradient_aggregation(comm: Iterable[CommNode]) -> list[dict[str, Any]]:
    """Backward gradient aggregation and optimizer-parallel nodes per parameter."""
    grads: dict[str, dict[str, Any]] = {}
    for c in comm:
        if c.category not in ("gradient-aggregation", "optimizer-parallel") or c.phase != "backward":
            continue
        name = c.parameter or c.node
        e = grads.setdefault(name, {"parameter": name, "ops": [], "groups": [], "count": 0, "bytes": 0,
                                    "bytes_unknown": 0})
        _count(e, c.bytes)
        if c.op not in e["ops"]:
            e["ops"].append(c.op)
        if c.group not in e["groups"]:
            e["groups"].append(c.group)
    return sorted(grads.values(), key=lambda e: e["parameter"])


def top_scopes(comm: Iterable[CommNode], top: int = 10) -> list[dict[str, Any]]:
    """The cells (scope without the operator) that move the most bytes."""
    scopes: dict[str, dict[str, Any]] = {}
    for c in comm:
        scope = cell_scope(c.cell_scope or c.scope)
        _count(scopes.setdefault(scope, {"scope": scope, "count": 0, "bytes": 0, "bytes_unknown": 0}), c.bytes)
    return sorted(scopes.values(), key=lambda e: (-e["bytes"], -e["count"], e["scope"]))[:top]


def traffic(comm: Iterable[CommNode], groups: dict[str, Group]) -> dict[str, Any]:
    """Tensor bytes (§5) and estimated per-rank wire bytes (§14) per operator, category and overall."""
    out: dict[str, Any] = {"formulas": dict(FORMULAS), "by_op": {}, "by_category": {}}
    zero = {"count": 0, "bytes": 0, "bytes_unknown": 0, "wire_bytes": 0, "wire_unknown": 0}
    for c in comm:
        wire = node_wire_bytes(c, groups)
        for e in (out["by_op"].setdefault(c.op, dict(zero)), out["by_category"].setdefault(c.category, dict(zero)),
                  out.setdefault("total", dict(zero))):
            e["count"] += 1
            e["bytes"] += c.bytes or 0
            e["bytes_unknown"] += c.bytes is None
            if wire is None:
                e["wire_unknown"] += 1
            else:
                e["wire_bytes"] += wire
    out.setdefault("total", dict(zero))
    for key in ("by_op", "by_category"):
        out[key] = dict(sorted(out[key].items()))
    return out


def send_receive_matrix(ranks: Iterable[tuple[int | None, ParallelFacts]]) -> list[dict[str, Any]]:
    """Pipeline traffic between stages over a folder: one row per (from stage, to stage) with the
    Send nodes of every rank of the sending stage (each transfer counted once, at its sender)."""
    cells: dict[tuple[int, int], dict[str, Any]] = {}
    for _, facts in ranks:
        own = facts.stage
        for c in facts.comm:
            if c.op != "Send" or own is None or c.peer_stage is None:
                continue
            e = cells.setdefault((own, c.peer_stage), {"from_stage": own, "to_stage": c.peer_stage, "count": 0,
                                                       "bytes": 0, "bytes_unknown": 0})
            e["count"] += 1
            if c.bytes is None:
                e["bytes_unknown"] += 1
            else:
                e["bytes"] += c.bytes
    return [cells[k] for k in sorted(cells)]


def parallel_summary(facts: ParallelFacts, top: int = 10, depth: int | None = None) -> dict[str, Any]:
    """The parallel fields added to the `irtool.summary/1` dict of one dump."""
    info = facts.stage_info
    return {
        "stage": info.stage,
        "stage_evidence": {"votes": {str(k): v for k, v in info.votes.items()}, "how": info.how,
                           "chunks": info.chunks, "peer_stages": info.peer_stages},
        "comm": [c.as_dict() for c in facts.comm],
        "comm_totals": comm_totals(facts.comm),
        "groups": [g.as_dict() for _, g in sorted(facts.groups.items())],
        "send_receive": send_receive(facts.comm),
        "gradient_aggregation": gradient_aggregation(facts.comm),
        "strategies": [s.as_dict() for s in facts.strategies],
        "top_scopes": top_scopes(facts.comm, top),
        "no_op_gathers": [c.as_dict() for c in facts.no_op_gathers],
        "redistributions": [c.as_dict() for c in facts.chains],
        "optimizer_sharding": [o.as_dict() for o in optimizer_shards(facts.comm, facts.groups)],
        "layers": {"by_scope_depth": depth,
                   "rows": [r.as_dict() for r in layer_comm(facts.comm, facts.groups, depth)]},
        "traffic": traffic(facts.comm, facts.groups),
    }


def cell_scope(scope: str) -> str:
    """The cell part of a scope: `Default/net/blocks-CellList/0-FFNBlock/AllReduce-op0` -> without the op."""
    parts = scope.split("/")
    return "/".join(parts[:-1]) if len(parts) > 1 else scope
