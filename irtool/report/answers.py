"""Tables that answer an engineer's next question (issue 13): why each redistribution, optimizer
sharding per parameter, communication per layer, wire traffic; written from the records of
`irtool.parallel`, the same records the JSON is made from."""
from __future__ import annotations

from typing import Any, Iterable

from ..parallel import Bytes
from ..parallel.records import ChainEnd, LayerComm, OptimizerShard, RedistributionChain, Strategy
from ..parallel.totals import StageLink, Traffic, TrafficRow
from ..parallel.traffic import formula
from ..present import (
    DEFAULT_LIMIT,
    Block,
    Table,
    bytes_text,
    cell,
    chain_end_layout,
    format_strategy,
    rank_list,
    strategy_text,
)

DASH = cell(None)


def _end(end: ChainEnd | None, consumer: bool) -> str:
    if end is None:
        return DASH
    text = f"{end.op} {end.name}".strip()
    if end.line:
        text += f" (line {end.line})"
    if consumer and end.input_index is not None:
        text += f" input {end.input_index}"
    if end.strategy:
        text += " " + format_strategy(end.strategy)
    return text


def chain_ops(nodes: list[str], lines: list[int] | None = None, comm: frozenset[int] = frozenset()) -> str:
    """`%4 Reshape`, `%5 AllGather`, `%7 TupleGetItem` x4 ... -> `Reshape AllGather@104 TupleGetItem x4`:
    communication nodes with their dump line (the `comm` positions)."""
    ops = [n.split(" ", 1)[-1] + (f"@{lines[i]}" if lines and i in comm else "") for i, n in enumerate(nodes)]
    out: list[str] = []
    i = 0
    while i < len(ops):
        j = i
        while j < len(ops) and ops[j] == ops[i]:
            j += 1
        out.append(ops[i] + (f" x{j - i}" if j - i > 1 else ""))
        i = j
    return " ".join(out)


def _where(source: str | None) -> str:
    """`path:line` of the user's source line; its code (Python, with its `None` and `[0]`) is in the JSON."""
    return source.split(" ", 1)[0] if source else DASH


def _chain_text(c: RedistributionChain) -> str:
    keys = {uid.rsplit("/", 1)[-1] for uid in c.comm}
    return chain_ops(c.nodes, c.lines, frozenset(i for i, n in enumerate(c.nodes) if n.split(" ")[0] in keys))


def _ranks(ranks: Any) -> str:
    return rank_list(ranks) if isinstance(ranks, (list, tuple)) and ranks else DASH


def _group_cell(groups: list[str], ranks: list[Any], per_rank: bool) -> str:
    """`name: 0-3` per group; in a folder (`per_rank` False) the group size, which ranks of one stage share."""
    if per_rank:
        return "; ".join(f"{g}: {_ranks(r)}" for g, r in zip(groups, ranks)) or DASH
    return "; ".join(f"{len(r)} ranks" if isinstance(r, (list, tuple)) and r else DASH for r in ranks) or DASH


def _chain_row(c: RedistributionChain) -> tuple[str, str, str, str, str]:
    p, q = c.producer, c.consumer
    full = (q.full_shape if q else None) or (p.full_shape if p else None)
    tensor = f"{cell(full) if full is not None else cell(q.slice_shape if q else None)} {c.dtype or ''}".strip()
    phase = c.phase + (f" (of #{c.of_chain})" if c.of_chain is not None else "")
    return phase, _end(p, False), _end(q, True), tensor, f"{chain_end_layout(p)} -> {chain_end_layout(q)}"


def redistribution_table(chains: Iterable[RedistributionChain], per_rank: bool = True) -> tuple[Table, Table]:
    """Chains that communicate, and the local slices: chains without communication that cut a tensor
    with StridedSlice on this rank (a parameter stored per `parameter_plan` cut again, a batch split);
    conversions by Reshape alone are in the JSON only."""
    group_col = "groups: ranks" if per_rank else "group sizes"
    t = Table("Redistributions (why each layout conversion)",
              ["#", "phase", "producer", "consumer", "tensor", "from -> to", "chain", group_col, "bytes",
               "wire bytes", "consumer source line"])
    local = Table("Local slices (StridedSlice without communication)",
                  ["#", "phase", "producer", "consumer", "tensor", "from -> to", "chain", "consumer source line"])
    for c in chains:
        q = c.consumer
        if not c.comm:
            if any(n.endswith(" StridedSlice") for n in c.nodes):  # a cut, not only a Reshape
                local.rows.append([str(c.id), *_chain_row(c), _chain_text(c), _where(q.source if q else None)])
            continue
        t.rows.append([str(c.id), *_chain_row(c), _chain_text(c), _group_cell(c.groups, c.group_ranks, per_rank),
                       cell(c.bytes), cell(c.wire_bytes), _where(q.source if q else None)])
    return t, local


def optimizer_table(shards: Iterable[OptimizerShard], per_rank: bool = True) -> Table:
    t = Table("Optimizer sharding per parameter",
              ["parameter", "forward", "backward", "group ranks" if per_rank else "group size", "slice -> full",
               "dtype", "forward bytes", "backward bytes", "wire bytes"])
    for o in shards:
        ranks = o.group_ranks
        group = _ranks(ranks) if per_rank else (str(len(ranks)) if isinstance(ranks, (list, tuple)) and ranks else DASH)
        t.rows.append([o.parameter, _ops(o.forward_ops), _ops(o.backward_ops), group,
                       f"{cell(o.slice_shape)} -> {cell(o.full_shape)}", _dtypes(o),
                       cell(o.forward_bytes), cell(o.backward_bytes), cell(o.wire_bytes)])
    return t


def strategies_table(strategies: Iterable[Strategy]) -> Table:
    return Table("Operators with strategies", ["operator", "scope", "in_strategy / in_layout",
                                               "out_strategy / out_layout"],
                 [[st.op, st.scope, strategy_text(st.in_strategy or st.in_layout),
                   strategy_text(st.out_strategy or st.out_layout)] for st in strategies])


def folder_answer_tables(strategies: list[Strategy], chains: list[RedistributionChain],
                         shards: list[OptimizerShard]) -> list[Table]:
    """A rank's tables in a folder summary; ranks of one stage with the same tables are shown once
    (groups by size: their members differ between ranks by construction)."""
    redis, local = redistribution_table(chains, per_rank=False)
    return [strategies_table(strategies), redis, local, optimizer_table(shards, per_rank=False)]


def _dtypes(o: OptimizerShard) -> str:
    back = o.backward_dtype
    return f"{o.dtype} / {back}" if back and o.dtype and back != o.dtype else o.dtype or back or DASH


def _ops(ops: list[str]) -> str:
    if not ops:
        return DASH
    first = ops[0]
    return f"{first} x{len(ops)}" if all(o == first for o in ops) and len(ops) > 1 else ", ".join(ops)


def layers_table(rows: Iterable[LayerComm], depth: int | None) -> Table:
    title = "Communication per layer" + (f" (scope depth {depth})" if depth else "")
    t = Table(title, ["layer", "count", "bytes", "wire bytes", "forward", "backward", "recompute", "by category"])
    for r in rows:
        cats = "; ".join(f"{k} {cell(v)}" for k, v in r.by_category.items() if v) or DASH
        none = r.bytes_unknown == r.count  # no size known: every figure is unknown, not 0
        t.rows.append([r.layer, cell(r.count), bytes_text(Bytes(r.bytes, r.count - r.bytes_unknown, r.bytes_unknown)),
                       bytes_text(Bytes(r.wire_bytes, r.count - r.wire_unknown, r.wire_unknown)),
                       *(DASH if none else cell(r.by_phase.get(p, 0)) for p in ("forward", "backward", "recompute")),
                       cats])
    return t


def _traffic_row(name: str, e: TrafficRow, formula: str) -> list[str]:
    return [name, cell(e.count), bytes_text(e.bytes), bytes_text(e.wire), formula]


def traffic_table(tr: Traffic, title: str = "Traffic: tensor bytes and estimated per-rank wire bytes") -> Table:
    t = Table(title, ["operator", "count", "tensor bytes", "wire bytes", "formula"],
              [_traffic_row(op, e, formula(op) or DASH) for op, e in tr.by_op.items()])
    t.rows.append(_traffic_row("total", tr.total, ""))
    return t


TRAFFIC_NOTE = ("Wire bytes: an estimate of what one rank sends (= receives) under the ring / pairwise "
                "algorithms, n = group size, S = tensor bytes; the library may choose another algorithm.")


def answer_blocks(chains: list[RedistributionChain], shards: list[OptimizerShard], layers: list[LayerComm],
                  depth: int | None, tr: Traffic, limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """The tables of one file's summary."""
    redis, local = redistribution_table(chains)
    blocks: list[Block] = [redis.limited(limit), local.limited(limit)]
    blocks += [optimizer_table(shards).limited(limit), layers_table(layers, depth).limited(limit),
               traffic_table(tr).limited(limit)]
    if tr.by_op:
        blocks.append(TRAFFIC_NOTE)
    return blocks


def dir_answer_blocks(stages: list[tuple[str, Traffic]], matrix: list[StageLink],
                      limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """Traffic per stage (named as the stage's other tables name it) and the stage x stage Send matrix of a folder."""
    blocks: list[Block] = [
        traffic_table(tr, f"{name} traffic: tensor bytes and estimated per-rank wire bytes, summed over ranks")
        .limited(limit) for name, tr in stages if tr.by_op]
    t = Table("Pipeline Send/Receive between stages (counted at the sender)",
              ["from stage", "to stage", "count", "bytes"],
              [[cell(e.from_stage), cell(e.to_stage), cell(e.tally.count), bytes_text(e.tally.bytes)] for e in matrix])
    return blocks + [t.limited(limit)] + ([TRAFFIC_NOTE] if blocks else [])
