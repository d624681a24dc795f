"""This rank's pipeline stage from its Send/Receive nodes (docs/parallel.md §7)."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
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
    return replace(stage_of(t.get("file_kind"), [c for _, c in pairs], primal), split=t.get("split_done"))


def stage_of(kind: FileKind, comm: list[CommNode], primal: dict[str, dict]) -> StageInfo:
    """Stage votes of the pipeline Send/Receive nodes of a step_parallel_end-or-later dump;
    `primal` maps a node uid to its primal attributes."""
    votes: Counter = Counter()
    how: set[str] = set()
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
    hops = sum(c.category == "pipeline" and c.direction is not None for c in comm)
    return StageInfo(stage=stage, votes=dict(votes), how=sorted(how), peer_stages=sorted(peers), hops=hops)


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



def peer_stages(kind: FileKind, comm: list[CommNode], primal: dict[str, dict], own_rank: int | None) -> None:
    """The peer stage of every Send/Receive (`CommNode.peer_stage`, §7), decided here for every command;
    `primal` maps a Send/Receive's uid to its primal attributes, `own_rank` is the dump's global rank
    (None when unknown).

    1. `pr.stage` (the lazy-inline path): the own stage ± 1, downstream for a forward Send or a backward
       Receive; except across a wrap of a folded or interleaved pipeline (`_wraps`).
    2. `pr.dest_rank` / `pr.src_rank`: the peer's stage id as printed.
    3. a forward pipeline hop with neither (inference, rule 6): the own stage (`stage_of`) ± 1.
    Otherwise unknown (None), never a made-up number."""
    hops = [c for c in comm if c.direction]
    staged = []
    for c in hops:
        pr = primal.get(c.node, {})
        if "stage" in pr:
            staged.append(c)
        elif "dest_rank" in pr:
            c.peer_stage = as_int(pr["dest_rank"])
        elif "src_rank" in pr:
            c.peer_stage = as_int(pr["src_rank"])
    _wraps(staged, primal, own_rank)
    placed = [c for c in hops if c.category == "pipeline" and c.phase == "forward"
              and not any(k in primal.get(c.node, {}) for k in _PLACEMENT_KEYS)]
    own = stage_of(kind, comm, primal).stage if placed else None
    for c in placed if own is not None else ():
        peer = own + 1 if c.op == "Send" else own - 1
        c.peer_stage = peer if peer >= 0 else None


def _wraps(hops: list[CommNode], primal: dict[str, dict], own_rank: int | None) -> None:
    """Peer stages of hops printing `pr.stage` (rule 5): own stage ± 1, except where the pipeline
    folds: the last stage's downstream hop goes to stage 0 of the next segment, stage 0's upstream hop
    comes from the last stage of the previous segment. MindSpore places stage s on the global ranks
    [s·n/S, (s+1)·n/S), so a downstream hop to a lower global rank (or an upstream hop from a higher
    rank, or upstream into stage 0) wraps. The own global rank is the dump's (`rank_N`), else the other
    member of a 2-rank p2p group; without either, the peer's index into a 2-rank group says which is
    lower (index 0). A group of any size pairs the same way: the lazy-inline group of one rank per stage
    (pipeline_4stage_lazy_8p, (0, 2, 4, 6)) has `src_rank` = the index, never compared with a rank.
    The last stage is the stage the same peer rank has on a hop that does not wrap, else own stage +
    (peer rank − own rank) / the rank step between adjacent stages; never a negative or made-up number."""
    stage_of_peer: dict[int, int] = {}
    steps: set[int] = set()
    wraps: list[tuple[CommNode, int, bool, int | None]] = []
    for c in hops:
        own = as_int(primal[c.node]["stage"])
        if own is None:
            continue
        downstream = (c.op == "Send") != (c.phase == "backward")
        me = own_rank if own_rank is not None else _other_member(c)
        if me is not None and c.peer_rank is not None:
            lower: bool | None = c.peer_rank < me
        else:
            index = as_int(c.rank_attrs.get("dest_rank" if c.op == "Send" else "src_rank"))
            lower = index == 0 if index is not None and _two_ranks(c) else None
        if (downstream and lower) or (not downstream and (own == 0 or lower is False)):
            wraps.append((c, own, downstream, me))
            continue
        c.peer_stage = own + 1 if downstream else own - 1
        if c.peer_rank is not None:
            stage_of_peer[c.peer_rank] = c.peer_stage
            if me is not None:
                steps.add(abs(c.peer_rank - me))
    step = next(iter(steps)) if len(steps) == 1 else None
    for c, own, downstream, me in wraps:
        if downstream:
            c.peer_stage = 0
        elif c.peer_rank in stage_of_peer:
            c.peer_stage = stage_of_peer[c.peer_rank]
        else:
            diff = None if me is None or c.peer_rank is None else c.peer_rank - me
            c.peer_stage = own + diff // step if step and diff is not None and diff > 0 and diff % step == 0 else None


def _two_ranks(c: CommNode) -> bool:
    """The hop's group has two members (listed, or named `2-<hash>` by MindSpore)."""
    return len(c.group_ranks) == 2 if c.group_ranks else (c.group or "").startswith("2-")


def _other_member(c: CommNode) -> int | None:
    """This rank in a 2-rank p2p group: the member that is not the peer."""
    ranks = c.group_ranks
    if ranks is None or len(ranks) != 2 or c.peer_rank not in ranks:
        return None
    return ranks[0] if ranks[1] == c.peer_rank else ranks[1]
