"""The five lines `summarize` opens with, read before any table: who (rank and stage), how much
communication by category and where most of it is, redistributions, optimizer sharding, and what
is unknown or unpaired. Written from the same records as the tables."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from ..parallel import Bytes
from ..parallel.records import OptimizerShard, RedistributionChain
from ..parallel.totals import CommTotals, SendReceive, Tally
from ..present import bytes_text, cell, rank_list

if TYPE_CHECKING:
    from .summary import DirSummary, FileSummary, StageSum


def _n(count: int, word: str) -> str:
    """`1 parameter`, `3 parameters`."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _categories(totals: CommTotals) -> str:
    """`gradient-aggregation 1,091,072 B (34), ...`: the categories, most bytes first."""
    rows = sorted(totals.by_category.items(), key=lambda kv: (-kv[1].bytes.total, -kv[1].count, kv[0]))
    return ", ".join(f"{k} {bytes_text(t.bytes)} B ({t.count})" for k, t in rows)


def _communication(totals: CommTotals, biggest: str) -> str:
    t = totals.total
    if not t.count:
        return "Communication: none"
    return (f"Communication: {t.count:,} nodes, {bytes_text(t.bytes)} B: {_categories(totals)}"
            + (f"; most in {biggest}" if biggest else ""))


def _redistributions(chains: list[RedistributionChain]) -> str:
    moving = [c for c in chains if c.comm]
    cut = sum(1 for c in chains if not c.comm and any(n.endswith(" StridedSlice") for n in c.nodes))
    if not chains:
        return "none"
    b = Bytes()
    for c in moving:
        b += c.bytes
    parts = [f"{len(moving)} with communication ({bytes_text(b)} B)" if moving else "none with communication",
             _n(cut, "local slice") if cut else "", _n(len(chains) - len(moving) - cut, "reshape") + " only"
             if len(chains) - len(moving) - cut else ""]
    return ", ".join(p for p in parts if p)


def _sharding(shards: list[OptimizerShard]) -> str:
    if not shards:
        return "none"
    sizes = sorted({len(o.group_ranks) for o in shards if isinstance(o.group_ranks, (list, tuple))})
    b = Bytes()
    for o in shards:
        b += o.wire_bytes
    over = f" over groups of {', '.join(map(str, sizes))} ranks" if sizes else ""
    return f"{_n(len(shards), 'parameter')}{over}, {bytes_text(b)} wire B"


def _unknowns(unknown_size: int, other: int, no_peer: int, unpaired: str, warnings: int, stage: str) -> str:
    parts = [_n(unknown_size, "node") + " of unknown size" if unknown_size else "",
             _n(other, "node") + " of category other" if other else "",
             f"{no_peer} Send/Receive without a peer rank" if no_peer else "", unpaired,
             _n(warnings, "warning") + " below" if warnings else "", stage]
    found = [p for p in parts if p]
    return "Unknown or unpaired: " + ("; ".join(found) if found else "none")


def file_headline(s: FileSummary, rank: int | None) -> list[str]:
    f, info = s.facts, s.facts.stage_info
    if info.stage is not None:
        stage = f"pipeline stage {info.stage}"
    else:
        stage = "no pipeline stage (no pipeline Send/Receive)" if not info.votes else "pipeline stage unknown"
    top = s.layers[0] if s.layers and s.layers[0].bytes else None
    biggest = f"layer {top.layer} ({cell(top.bytes)} B)" if top else ""
    other = s.totals.by_category.get("other", Tally()).count
    return [f"Rank {cell(rank)}, {stage}",
            _communication(s.totals, biggest),
            f"Redistributions: {_redistributions(f.chains)}",
            f"Optimizer sharding: {_sharding(s.shards)}",
            _unknowns(s.totals.total.bytes.unknown, other, sum(1 for c in f.comm if c.direction and c.peer_rank is None),
                      "", len(s.warnings), "stage votes disagree" if info.stage is None and info.votes else "")]


def _unpaired(pairs: Iterable[tuple[int | None, SendReceive]]) -> str:
    """Sends from stage a to b that no rank of b receives from a, and the other way round, counted
    over the folder."""
    sent: dict[tuple[int, int], int] = {}
    received: dict[tuple[int, int], int] = {}
    for stage, p in pairs:
        if stage is None or p.peer_stage is None:
            continue
        if p.op == "Send":
            sent[(stage, p.peer_stage)] = sent.get((stage, p.peer_stage), 0) + p.count
        elif p.op == "Receive":
            received[(p.peer_stage, stage)] = received.get((p.peer_stage, stage), 0) + p.count
    diff = [f"stage {a}->{b}: {sent.get((a, b), 0)} Send, {received.get((a, b), 0)} Receive"
            for a, b in sorted(set(sent) | set(received)) if sent.get((a, b), 0) != received.get((a, b), 0)]
    return "; ".join(diff)


def dir_headline(d: DirSummary) -> list[str]:
    stages = [f"stage {cell(s.stage)}: {'rank' if len(s.ranks) == 1 else 'ranks'} "
              f"{rank_list(r for r in s.ranks if r is not None)}" for s in d.stages if s.stage is not None]
    who = _n(len(d.rows), "rank") + ", " + (_n(len(stages), "pipeline stage") + " (" + "; ".join(stages) + ")"
                                            if stages else "no pipeline stage")
    total = CommTotals()
    for r in d.rows:
        for k, t in r.totals.by_category.items():
            e = total.by_category.setdefault(k, Tally())
            e.count += t.count
            e.bytes += t.bytes
        total.total.count += r.totals.total.count
        total.total.bytes += r.totals.total.bytes
    top = max(d.rows, key=lambda r: (r.totals.total.bytes.total, -(r.rank or 0)), default=None)
    biggest = f"rank {cell(top.rank)} ({bytes_text(top.totals.total.bytes)} B)" if top and top.totals.total.count else ""

    def where(s: StageSum) -> str:
        who = "all ranks" if s.stage is None else f"stage {s.stage}"
        many = len(s.answers)
        return who + (f" (rank {cell(s.answers[0].ranks[0])}; {many} different answers below)" if many > 1 else "")

    redis = "; ".join(f"{where(s)}: {_redistributions(s.answers[0].chains)}" for s in d.stages if s.answers)
    shards = "; ".join(f"{where(s)}: {_sharding(s.answers[0].shards)}" for s in d.stages if s.answers)
    if len({_sharding(s.answers[0].shards) for s in d.stages if s.answers}) == 1 and len(d.stages) > 1:
        shards = _sharding(d.stages[0].answers[0].shards) + " on every stage"
    other = total.by_category.get("other", Tally()).count
    no_peer = sum(p.count for r in d.rows for p in r.pairs if p.peer_rank is None)
    unknown_stage = [r.rank for r in d.rows if r.stage is None] if stages else []
    return [f"{who}",
            _communication(total, biggest),
            f"Redistributions: {redis or 'none'}",
            f"Optimizer sharding: {shards or 'none'}",
            _unknowns(total.total.bytes.unknown, other, no_peer,
                      _unpaired((r.stage, p) for r in d.rows for p in r.pairs),
                      sum(len(r.warnings) for r in d.rows),
                      f"stage unknown on rank(s) {rank_list(unknown_stage)}" if unknown_stage else "")]
