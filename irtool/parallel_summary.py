"""The parallel part of `irtool summarize`: communication, groups, p2p, gradient aggregation, strategies.

Field meanings are documented in docs/parallel.md ("JSON fields").
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from .model import Dump
from .parallel import comm_nodes, group_table, stage_info, strategies


def _add(totals: dict[str, Any], key: str, nbytes: int | None) -> None:
    e = totals.setdefault(key, {"count": 0, "bytes": 0, "bytes_unknown": 0})
    e["count"] += 1
    if nbytes is None:
        e["bytes_unknown"] += 1
    else:
        e["bytes"] += nbytes


def comm_totals(comm: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and bytes per category, per op, per category/phase, and overall, from `comm` dicts."""
    out: dict[str, Any] = {"by_category": {}, "by_op": {}, "by_category_phase": {}}
    for c in comm:
        _add(out["by_category"], c["category"], c["bytes"])
        _add(out["by_op"], c["op"], c["bytes"])
        _add(out["by_category_phase"], f"{c['category']}/{c['phase']}", c["bytes"])
        _add(out, "total", c["bytes"])
    for key in ("by_category", "by_op", "by_category_phase"):
        out[key] = dict(sorted(out[key].items()))
    out.setdefault("total", {"count": 0, "bytes": 0, "bytes_unknown": 0})
    return out


def parallel_summary(dump: Dump, top: int = 10) -> dict[str, Any]:
    """The parallel fields added to the `irtool.summary/1` dict of one dump."""
    comms = comm_nodes(dump)
    comm = [c.as_dict() for c in comms]
    info = stage_info(dump)
    pairs: dict[tuple, dict[str, Any]] = {}
    for c in comm:
        if c["direction"] is None:
            continue
        key = (c["op"], c["phase"], c["peer_stage"], c["peer_rank"], c["bytes"])
        e = pairs.setdefault(key, {"op": c["op"], "phase": c["phase"], "peer_stage": c["peer_stage"],
                                   "peer_rank": c["peer_rank"], "bytes_each": c["bytes"], "micros": [], "count": 0})
        e["count"] += 1
        if c["micro"] is not None:
            e["micros"].append(c["micro"])
    for e in pairs.values():
        e["micros"] = sorted(e["micros"])
    grads: dict[str, dict[str, Any]] = {}
    for c in comm:
        if c["category"] not in ("gradient-aggregation", "optimizer-parallel") or c["phase"] != "backward":
            continue
        name = c["parameter"] or c["node"]
        e = grads.setdefault(name, {"parameter": name, "ops": [], "groups": [], "count": 0, "bytes": 0})
        e["count"] += 1
        e["bytes"] += c["bytes"] or 0
        if c["op"] not in e["ops"]:
            e["ops"].append(c["op"])
        if c["group"] not in e["groups"]:
            e["groups"].append(c["group"])
    scopes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c in comm:
        scope = _scope_prefix(c["scope"])
        scopes[scope][0] += 1
        scopes[scope][1] += c["bytes"] or 0
    top_scopes = [{"scope": s, "count": v[0], "bytes": v[1]}
                  for s, v in sorted(scopes.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))[:top]]
    return {
        "stage": info.stage,
        "stage_evidence": {"votes": {str(k): v for k, v in info.votes.items()}, "how": info.how,
                           "chunks": info.chunks, "peer_stages": info.peer_stages},
        "comm": comm,
        "comm_totals": comm_totals(comm),
        "groups": [{"name": k, **v} for k, v in sorted(group_table(dump).items())],
        "send_receive": sorted(pairs.values(), key=lambda e: (e["phase"], e["op"], str(e["peer_stage"]))),
        "gradient_aggregation": sorted(grads.values(), key=lambda e: e["parameter"]),
        "strategies": [s.as_dict() for s in strategies(dump)],
        "top_scopes": top_scopes,
    }


def _scope_prefix(scope: str) -> str:
    """The cell part of a scope: `Default/net/blocks-CellList/0-FFNBlock/AllReduce-op0` -> without the op."""
    parts = scope.split("/")
    return "/".join(parts[:-1]) if len(parts) > 1 else scope
