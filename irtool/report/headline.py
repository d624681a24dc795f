"""Pieces of the lines `summarize` opens with, read before any table: who (rank and stage), how much
communication by category and where most of it is, redistributions, optimizer sharding, and what is
unknown or unpaired (the job, second, is `present.job.job_line`). Written from the same records as
the tables (`summary.py` puts them together)."""
from __future__ import annotations

from ..parallel import Bytes
from ..parallel.kernels import Kernels, Stream
from ..parallel.pairs import Unpaired
from ..parallel.records import OptimizerShard, RedistributionChain
from ..parallel.totals import CommTotals
from ..present import bytes_text, cell


def plural(count: int, word: str) -> str:
    """`1 parameter`, `3 parameters`."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _categories(totals: CommTotals) -> str:
    """`gradient-aggregation 1,091,072 B (34), ...`: the categories, most bytes first."""
    rows = sorted(totals.by_category.items(), key=lambda kv: (-kv[1].bytes.total, -kv[1].count, kv[0]))
    return ", ".join(f"{k} {bytes_text(t.bytes)} B ({t.count})" for k, t in rows)


def communication_line(totals: CommTotals, biggest: str) -> str:
    t = totals.total
    if not t.count:
        return "Communication: none"
    runs = "" if t.runs == t.count else f" run {cell(t.runs)} times a step"  # a reused cell's nodes run once per call
    return (f"Communication: {t.count:,} nodes{runs}, {bytes_text(t.bytes)} B: {_categories(totals)}"
            + (f"; most in {biggest}" if biggest else ""))


def kernels_line(k: Kernels) -> str:
    """`Kernels: 2,807 in execution order; compute stream 0 (2,715); communication streams 2 (AllGather 15, ...)`."""
    def one(s: Stream) -> str:
        ops = ", ".join(f"{op} {n:,}" for op, n in s.ops.most_common()) if s.kind == "communication" else ""
        return f"{s.id} ({ops or plural(s.kernels, 'kernel')})"

    parts = [f"{kind} stream{'s' if len(mine) > 1 else ''} " + ", ".join(one(s) for s in mine)
             for kind in ("compute", "communication") if (mine := [s for s in k.streams if s.kind == kind])]
    none = f"; {plural(k.no_stream, 'kernel')} with no stream" if k.no_stream else ""
    return f"Kernels: {len(k.order):,} in execution order; " + "; ".join(parts) + none


def redistributions_text(chains: list[RedistributionChain]) -> str:
    moving = [c for c in chains if c.comm]
    cut = sum(1 for c in chains if not c.comm and any(n.endswith(" StridedSlice") for n in c.nodes))
    if not chains:
        return "none"
    b = Bytes()
    for c in moving:
        b += c.bytes
    parts = [f"{len(moving)} with communication ({bytes_text(b)} B)" if moving else "none with communication",
             plural(cut, "local slice") if cut else "", plural(len(chains) - len(moving) - cut, "reshape") + " only"
             if len(chains) - len(moving) - cut else ""]
    return ", ".join(p for p in parts if p)


def sharding_text(shards: list[OptimizerShard]) -> str:
    if not shards:
        return "none"
    sizes = sorted({len(o.group_ranks) for o in shards if isinstance(o.group_ranks, (list, tuple))})
    b = Bytes()
    for o in shards:
        b += o.wire_bytes
    over = f" over groups of {', '.join(map(str, sizes))} ranks" if sizes else ""
    return f"{plural(len(shards), 'parameter')}{over}, {bytes_text(b)} wire B"


def unknowns_line(unknown_size: int, other: int, no_peer: int, unpaired: str, warnings: int, stage: str) -> str:
    parts = [plural(unknown_size, "node") + " of unknown size" if unknown_size else "",
             plural(other, "node") + " of category other" if other else "",
             f"{no_peer} Send/Receive without a peer rank" if no_peer else "", unpaired,
             plural(warnings, "warning") + " below" if warnings else "", stage]
    found = [p for p in parts if p]
    return "Unknown or unpaired: " + ("; ".join(found) if found else "none")


def unpaired_text(u: Unpaired) -> str:
    """The Send/Receive the folder's pairing (`parallel.pairs`: sender, receiver, tag; as `check` pairs
    them) leaves without a partner, by stages, and those whose peer rank was not read."""
    def stages(key: tuple[int | None, int | None]) -> str:
        return f"stage {cell(key[0])}->{cell(key[1])}"

    parts = [f"{stages(k)}: {plural(n, 'Send')} without Receive" for k, n in sorted(u.sends.items(), key=str)]
    parts += [f"{stages(k)}: {plural(n, 'Receive')} without Send" for k, n in sorted(u.receives.items(), key=str)]
    if u.peer_not_read:
        parts.append(f"{u.peer_not_read:,} Send/Receive whose peer rank was not read")
    return "; ".join(parts)
