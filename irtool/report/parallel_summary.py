"""The parallel fields of `irtool summarize` (docs/parallel.md §12): the JSON of the records
`irtool.parallel` computes, made here once."""
from __future__ import annotations

from typing import Any

from ..parallel import ParallelFacts
from ..parallel.layers import layer_comm
from ..parallel.optimizer import optimizer_shards
from ..parallel.totals import comm_totals, gradient_aggregation, scope_totals, send_receive, traffic

TOP_SCOPES = 10  # `top_scopes` keeps the cells that move the most bytes


def parallel_summary(facts: ParallelFacts, depth: int | None = None) -> dict[str, Any]:
    """The parallel fields added to the `irtool.summary/1` dict of one dump."""
    info = facts.stage_info
    scopes = scope_totals(facts.comm)
    return {
        "stage": info.stage,
        "stage_evidence": {"votes": {str(k): v for k, v in info.votes.items()}, "how": info.how,
                           "chunks": info.chunks, "peer_stages": info.peer_stages},
        "comm": [c.as_dict() for c in facts.comm],
        "comm_totals": comm_totals(facts.comm).as_dict(),
        "groups": [g.as_dict() for _, g in sorted(facts.groups.items())],
        "send_receive": [e.as_dict() for e in send_receive(facts.comm)],
        "gradient_aggregation": [e.as_dict() for e in gradient_aggregation(facts.comm)],
        "strategies": [s.as_dict() for s in facts.strategies],
        "top_scopes": [e.as_dict() for e in scopes[:TOP_SCOPES]],
        "no_op_gathers": [c.as_dict() for c in facts.no_op_gathers],
        "redistributions": [c.as_dict() for c in facts.chains],
        "optimizer_sharding": [o.as_dict() for o in optimizer_shards(facts.comm, facts.groups)],
        "layers": {"by_scope_depth": depth,
                   "rows": [r.as_dict() for r in layer_comm(facts.comm, facts.groups, depth)]},
        "traffic": traffic(facts.comm, facts.groups).as_dict(),
    }
