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
    wrap_votes: Counter = Counter()  # votes of upstream hops in a segment > 0 (possible wraps into stage 0)
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
                if dest == 0:
                    # downstream to stage 0: only the last stage of a folded pipeline does that (wrap to the
                    # next segment); which stage that is, this hop does not say
                    how.add("wrap to stage 0")
                elif dest is not None:
                    votes[dest - 1] += 1
                    how.add("primal dest_rank-1")
                if src is not None:
                    votes[src + 1] += 1
                    how.add("primal src_rank+1")
                    if (c.segment or 0) > 0:
                        wrap_votes[src + 1] += 1
            if c.peer_stage is not None:
                peers.add(c.peer_stage)
    if len(votes) > 1 and 0 in votes and set(votes) - {0} and all(
            wrap_votes[v] == n for v, n in votes.items() if v != 0):
        # every vote against stage 0 comes from an upstream hop of a later segment: the wrap from the
        # last stage of the previous segment into stage 0 (§7, folded pipelines)
        how.add("wrap from the last stage")
        votes = Counter({0: votes[0]})
    stage = next(iter(votes)) if len(votes) == 1 else None
    return StageInfo(stage=stage, votes=dict(votes), how=sorted(how), chunks=sorted(chunks), peer_stages=sorted(peers))
