"""This rank's pipeline stage from its Send/Receive nodes (docs/parallel.md §7)."""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

from .records import CommNode, FileKind, StageInfo

_INT = re.compile(r"-?\d+")


def as_int(v: Any) -> int | None:
    """An attribute value read as an integer (`I64(3)` parses to 3, `"3"` too); else None."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, str) and _INT.fullmatch(v.strip()):
        return int(v)
    return None


def stage_info(kind: FileKind, comm: list[CommNode], primal: dict[str, dict]) -> StageInfo:
    """Stage votes of the pipeline Send/Receive nodes of a step_parallel_end-or-later dump;
    `primal` maps a node uid to its primal attributes."""
    votes: Counter = Counter()
    how: set[str] = set()
    chunks: set[int] = set()
    peers: set[int] = set()
    if kind != "pre":
        for c in comm:
            if c.op not in ("Send", "Receive") or c.category != "pipeline":
                continue
            pr = primal[c.node]
            own = as_int(pr.get("stage"))
            if own is not None:
                votes[own] += 1
                how.add("primal stage")
                chunk = as_int(pr.get("chunk"))
                if chunk is not None:
                    chunks.add(chunk)
            else:
                dest, src = as_int(pr.get("dest_rank")), as_int(pr.get("src_rank"))
                if dest is not None:
                    votes[dest - 1] += 1
                    how.add("primal dest_rank-1")
                if src is not None:
                    votes[src + 1] += 1
                    how.add("primal src_rank+1")
            if c.peer_stage is not None:
                peers.add(c.peer_stage)
    stage = next(iter(votes)) if len(votes) == 1 else None
    return StageInfo(stage=stage, votes=dict(votes), how=sorted(how), chunks=sorted(chunks), peer_stages=sorted(peers))
