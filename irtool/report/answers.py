"""Tables that answer an engineer's next question (issue 13): why each redistribution, optimizer
sharding per parameter, communication per layer, wire traffic; from the summary dict, so text,
Markdown and JSON say the same."""
from __future__ import annotations

from typing import Any

from ..parallel import Bytes
from ..present import DEFAULT_LIMIT, Block, Table, bytes_text, cell, format_strategy, rank_list, strategy_text

DASH = cell(None)


def _layout(end: dict[str, Any] | None) -> str:
    """How one side of a redistribution lays the tensor out: device matrix and tensor map when the
    dump gives a layout, else pieces per dimension (full / slice shape), else the strategy."""
    if not end:
        return DASH
    lay = end.get("layout")
    if isinstance(lay, dict) and "device_matrix" in lay:
        return strategy_text(lay)
    if end.get("split"):
        return "split " + format_strategy(end["split"])
    strategy = end.get("strategy")
    return ("strategy " + format_strategy(strategy)) if strategy else DASH


def _end(end: dict[str, Any] | None, consumer: bool) -> str:
    if not end:
        return DASH
    text = f"{end['op']} {end['name']}".strip()
    if end.get("line"):
        text += f" (line {end['line']})"
    if consumer and end.get("input_index") is not None:
        text += f" input {end['input_index']}"
    strategy = end.get("strategy")
    if strategy:
        text += " " + format_strategy(strategy)
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


def _chain_text(c: dict[str, Any]) -> str:
    keys = {uid.rsplit("/", 1)[-1] for uid in c["comm"]}
    return chain_ops(c["nodes"], c.get("lines"), frozenset(i for i, n in enumerate(c["nodes"]) if n.split(" ")[0] in keys))


def _ranks(ranks: Any) -> str:
    return rank_list(ranks) if isinstance(ranks, list) and ranks else DASH


def redistribution_table(s: dict[str, Any]) -> tuple[Table, int]:
    """Chains that communicate (the others are local slices: counted, listed in JSON)."""
    t = Table("Redistributions (why each layout conversion)",
              ["#", "phase", "producer", "consumer", "tensor", "from -> to", "chain", "groups: ranks", "bytes",
               "wire bytes", "consumer source line"])
    local = 0
    for c in s.get("redistributions", []):
        if not c["comm"]:
            local += 1
            continue
        p, q = c["producer"], c["consumer"]
        full = (q or {}).get("full_shape") or (p or {}).get("full_shape")
        tensor = f"{cell(full) if full is not None else cell((q or {}).get('slice_shape'))} {c['dtype'] or ''}".strip()
        phase = c["phase"] + (f" (of #{c['of_chain']})" if c["of_chain"] is not None else "")
        groups = "; ".join(f"{g}: {_ranks(r)}" for g, r in zip(c["groups"], c["group_ranks"])) or DASH
        t.rows.append([str(c["id"]), phase, _end(p, False), _end(q, True), tensor,
                       f"{_layout(p)} -> {_layout(q)}", _chain_text(c), groups, cell(c["bytes"]),
                       cell(c["wire_bytes"]), _where((q or {}).get("source"))])
    return t, local


def optimizer_table(s: dict[str, Any]) -> Table:
    t = Table("Optimizer sharding per parameter",
              ["parameter", "forward", "backward", "group ranks", "slice -> full", "dtype", "forward bytes",
               "backward bytes", "wire bytes"])
    for o in s.get("optimizer_sharding", []):
        t.rows.append([o["parameter"], _ops(o["forward_ops"]), _ops(o["backward_ops"]), _ranks(o["group_ranks"]),
                       f"{cell(o['slice_shape'])} -> {cell(o['full_shape'])}", _dtypes(o),
                       cell(o["forward_bytes"]), cell(o["backward_bytes"]), cell(o["wire_bytes"])])
    return t


def _dtypes(o: dict[str, Any]) -> str:
    back = o.get("backward_dtype")
    return f"{o['dtype']} / {back}" if back and o["dtype"] and back != o["dtype"] else o["dtype"] or back or DASH


def _ops(ops: list[str]) -> str:
    if not ops:
        return DASH
    first = ops[0]
    return f"{first} x{len(ops)}" if all(o == first for o in ops) and len(ops) > 1 else ", ".join(ops)


def row_bytes(e: dict[str, Any], total: str = "bytes", unknown: str = "bytes_unknown") -> Bytes:
    """The `Bytes` of a JSON row counting `count` nodes: `total` the known sum, `unknown` how many are not known."""
    missing = e.get(unknown) or 0
    return Bytes(e[total], e["count"] - missing, missing)


def _tensor(e: dict[str, Any]) -> str:
    return bytes_text(row_bytes(e))


def _wire(e: dict[str, Any]) -> str:
    return bytes_text(row_bytes(e, "wire_bytes", "wire_unknown"))


def layers_table(s: dict[str, Any]) -> Table:
    layers = s.get("layers") or {}
    depth = layers.get("by_scope_depth")
    title = "Communication per layer" + (f" (scope depth {depth})" if depth else "")
    t = Table(title, ["layer", "count", "bytes", "wire bytes", "forward", "backward", "recompute", "by category"])
    for r in layers.get("rows", []):
        cats = "; ".join(f"{k} {cell(v)}" for k, v in r["by_category"].items() if v) or DASH
        none = r["bytes_unknown"] == r["count"]  # no size known: every figure is unknown, not 0
        t.rows.append([r["layer"], cell(r["count"]), _tensor(r), _wire(r),
                       *(DASH if none else cell(r["by_phase"].get(p, 0)) for p in ("forward", "backward", "recompute")),
                       cats])
    return t


def traffic_table(s: dict[str, Any]) -> Table:
    tr = s.get("traffic") or {}
    t = Table("Traffic: tensor bytes and estimated per-rank wire bytes",
              ["operator", "count", "tensor bytes", "wire bytes", "formula"])
    formulas = tr.get("formulas", {})
    for op, e in tr.get("by_op", {}).items():
        formula = formulas.get(op) or formulas.get("Send/Receive" if op in ("Send", "Receive") else "", DASH)
        if op.startswith("_Mirror"):
            formula = formulas.get("AllReduce", DASH)
        elif "AllGather" in op:
            formula = formulas.get("AllGather", DASH)
        t.rows.append([op, cell(e["count"]), _tensor(e), _wire(e), formula])
    if tr.get("total"):
        e = tr["total"]
        t.rows.append(["total", cell(e["count"]), _tensor(e), _wire(e), ""])
    return t


TRAFFIC_NOTE = ("Wire bytes: an estimate of what one rank sends (= receives) under the ring / pairwise "
                "algorithms, n = group size, S = tensor bytes; the library may choose another algorithm.")


def answer_blocks(s: dict[str, Any], limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """The tables of one file's summary."""
    redis, local = redistribution_table(s)
    blocks: list[Block] = [redis.limited(limit)]
    if local:
        blocks.append(f"{local} redistribution chain(s) without communication (local slices): "
                      "in --format json `redistributions`")
    blocks += [optimizer_table(s).limited(limit), layers_table(s).limited(limit), traffic_table(s).limited(limit)]
    if s.get("traffic", {}).get("by_op"):
        blocks.append(TRAFFIC_NOTE)
    return blocks


def dir_answer_blocks(d: dict[str, Any], limit: int | None = DEFAULT_LIMIT) -> list[Block]:
    """Traffic per stage and the stage x stage Send matrix of a folder."""
    blocks: list[Block] = []
    for st in d.get("stages", []):
        if st.get("traffic", {}).get("by_op"):
            t = traffic_table(st)
            t.title = f"Stage {cell(st['stage'])} traffic: tensor bytes and estimated per-rank wire bytes, summed over ranks"
            blocks.append(t.limited(limit))
    t = Table("Pipeline Send/Receive between stages (counted at the sender)",
              ["from stage", "to stage", "count", "bytes"],
              [[cell(e["from_stage"]), cell(e["to_stage"]), cell(e["count"]), _tensor(e)]
               for e in d.get("send_receive_matrix", [])])
    return blocks + [t.limited(limit)] + ([TRAFFIC_NOTE] if blocks else [])
