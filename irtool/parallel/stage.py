"""This rank's pipeline stage from its Send/Receive nodes (docs/parallel.md §7)."""
from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from .records import CommNode, FileKind, StageInfo

if TYPE_CHECKING:
    from .table import NodeFacts

# Point-to-point primitives: their groups may span stages, so they say nothing of the own rank.
_P2P = frozenset({"Send", "Receive", "BatchISendIRecv", "CollectivePermute", "InnerCommIsend", "InnerCommIrecv"})
_PLACEMENT_KEYS = ("stage", "dest_rank", "src_rank")

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


def stage_info(t: NodeFacts) -> StageInfo:
    """This rank's stage (the `stage` pass of the fact table): `stage_of` its communication records."""
    silent = t.get("silent")
    pairs = [(n, c) for n, c in t.column("comm").items() if n not in silent]
    primal = {c.node: n.primal_attrs for n, c in pairs if c.op in ("Send", "Receive")}
    return stage_of(t.get("file_kind"), [c for _, c in pairs], primal)


def stage_of(kind: FileKind, comm: list[CommNode], primal: dict[str, dict]) -> StageInfo:
    """Stage votes of the pipeline Send/Receive nodes of a step_parallel_end-or-later dump;
    `primal` maps a node uid to its primal attributes."""
    votes: Counter = Counter()
    how: set[str] = set()
    chunks: set[int] = set()
    peers: set[int] = set()
    wrap_votes: Counter = Counter()  # votes of upstream hops in a segment > 0 (possible wraps into stage 0)
    placed: list[CommNode] = []  # forward hops with no stage attribute: inference pipelines (§7 rule 6)
    if kind != "pre":
        for c in comm:
            if c.op not in ("Send", "Receive") or c.category != "pipeline":
                continue
            pr = primal[c.node]
            if c.phase == "forward" and not any(k in pr for k in _PLACEMENT_KEYS):
                placed.append(c)
                continue
            own = as_int(pr.get("stage"))
            if own is not None:
                votes[own] += 1
                how.add("primal stage")
                if c.chunk is not None:
                    chunks.add(c.chunk)
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
    if placed:
        for stage, rule in _placed_votes(placed, comm):
            votes[stage] += 1
            how.add(rule)
    stage = next(iter(votes)) if len(votes) == 1 else None
    return StageInfo(stage=stage, votes=dict(votes), how=sorted(how), chunks=sorted(chunks), peer_stages=sorted(peers))


def own_rank_candidates(comm: list[CommNode]) -> set[int] | None:
    """The global ranks this dump can be of: every collective group a rank runs includes it, so it is in
    all of them (p2p groups left out: they span stages). None when no group names its ranks."""
    found: set[int] | None = None
    for c in comm:
        if c.op in _P2P or not c.group_ranks:
            continue
        found = set(c.group_ranks) if found is None else found & set(c.group_ranks)
    return found


def _placed_votes(hops: list[CommNode], comm: list[CommNode]) -> list[tuple[int, str]]:
    """Stage votes of forward pipeline hops that print neither `pr.stage` nor `pr.dest_rank`/`pr.src_rank`
    (an inference pipeline: `micro` and `pipeline_end`/`pipeline_begin` only; §7 rule 6). A forward Send
    goes to the next stage, a forward Receive comes from the previous one, and MindSpore places stage s on
    ranks [s·d, (s+1)·d), pairing rank r with rank r + d of the next stage. So with own rank r and peer
    global rank q: d = |q − r| and the own stage is r // d. The own rank is one of the candidates of
    `own_rank_candidates`, which all lie in the own stage: a candidate whose stage would not hold them all is
    impossible, and a hop votes only when the possible candidates give one stage. Without candidates,
    a rank that sends downstream and receives nothing is the first stage."""
    out: list[tuple[int, str]] = []
    candidates = own_rank_candidates(comm)
    receives = any(c.op == "Receive" for c in hops)
    for c in hops:
        peer = c.peer_rank  # a global rank: resolved once in analysis (parallel/peer.py)
        if peer is None:
            continue
        if candidates:
            stages = set()
            for r in candidates:
                d = peer - r if c.op == "Send" else r - peer
                # a candidate is possible only if its stage [s·d, (s+1)·d) holds all candidates (they share
                # collective groups, which never span stages)
                if d > 0 and all(x // d == r // d for x in candidates):
                    stages.add(r // d)
            if len(stages) == 1:
                out.append((stages.pop(), "peer rank and own rank (inference)"))
        elif c.op == "Send" and not receives:
            out.append((0, "sends only (inference, first stage)"))
    return out

