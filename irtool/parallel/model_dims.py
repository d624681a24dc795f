"""The sizes of the model and its data as one rank's dump shows them (docs/parallel.md §18): the global batch,
the hidden size, the feed-forward size, the attention heads, the vocabulary and the sequence length. They change
the work, the bytes and the communication as much as the parallel layout does, so `irtool diff` says them first;
the job (`job.RankJob`, `job.JobFold`) reads them from here once.

- The global batch: the first data input of the graph (a header parameter without a default value) prints its
  shape on this rank and then its shape over all ranks (`%para1_inputs0: <Tensor[Float32], (8, 64)> : [64, 64]`
  under `dataset_strategy="data_parallel"`, `(8, 513)> : [8, 513]` under `full_batch`): the latter's first
  dimension is the batch of one training step, every micro batch and data-parallel rank included. Where no operator
  has a strategy (`parallel_mode="data_parallel"`: data_parallel_8p prints `(16, 3, 32, 32)> : [16, 3, 32, 32]`
  for its 16 samples per device) both are the rank's own: the job multiplies by dp (`per_rank`).
- The vocabulary, hidden size and sequence length: the embedding, a `Gather` reading a weight of no layer with
  token indices (or an `Embedding(indices, table)` of MindFormers' mcore models: with no strategy printed only its
  columns, the hidden size, are known). A rank holds slices: the full shape is the slice times the split its
  `in_strategy` gives each dimension (`(2048, 512)` split `(2, 1)`: a (4096, 512) table, vocabulary 4096, hidden
  size 512; indices `(1, 512)` split `(2, 1)`: sequences of 512). Before the parallel pass (`whole`) shapes are
  not sliced yet, whatever the strategies the user set.
- The feed-forward size: the whole shapes (slice times split, as above) of the 2-D weights the forward MatMuls of
  the lowest layer read (`layer_weights`); the job takes the largest dimension beside its hidden size that is
  larger than it (Llama's w1 `(704, 512)` split `(2, 1)`: 1408 beside 512). An MoE layer's experts are batched
  3-D weights: no such MatMul, the size unknown.
- The attention heads: the forward BatchMatMuls of 4-D operands (batch, heads, sequence, head size), each shape
  once (`attention`); the job takes the first whose heads x head size, restored whole, is its hidden size
  (Llama's query `(1, 4, 512, 64)` split `(2, 2, 1, 1)`: 8 heads of 64). Flash attention's fused operator is not
  read for it.
- The key-value heads: that BatchMatMul's key (its second operand) followed back through the operators that only
  reshape, convert or repeat a tensor (`_KEY_PATH`) to the first that computes it (the rotary Add, the projection's
  MatMul or bias Add): a grouped-query attention repeats each key head for several query heads there (MindFormers'
  `tile_kv` Tile `(1, 1, 2, 1)`), so the key-value heads are the heads x the elements where the key is computed /
  the elements the BatchMatMul reads (Llama: `(1, 2, 512, 64)` tiled to `(1, 4, 512, 64)`: 8 x 1/2 = 4); nothing
  repeated: as many as the heads (GPT). Unknown where a collective is on that path (what it gathers is not a repeat).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..ir import Dump, Node
from .params import WEIGHT_VALUE, follow_value, layer_index, param_name
from .rules import COMM_OPS

Seen = tuple[int | None, str]  # a value and where the dump shows it, or None and why it is unknown
_GATHER = ("Gather", "GatherV2", "SparseGatherV2")
# `Embedding(indices, table, ...)` (mint.nn.functional.embedding): MindFormers' mcore VocabParallelEmbedding runs it
# inside a self-defined shard (a Morph: no in_strategy printed) whose table is laid out (tp, None): rows split over
# the tensor-parallel ranks, the columns, the hidden size, whole (mindformers parallel_core tensor_parallel/layers.py)
_EMBEDDING = "Embedding"
# what the key passes through between where it is computed and the attention scores: same elements, or repeated
_KEY_PATH = frozenset({"Reshape", "Transpose", "Cast", "ExpandDims", "Squeeze", "Tile", "BroadcastTo", "Load",
                       "Depend", "Identity"})


@dataclass(frozen=True)
class ModelDims:
    """What one rank's dump shows of the model's sizes (picklable)."""

    global_batch: Seen
    per_rank: bool  # the batch printed is one data-parallel rank's (no strategy: data-parallel mode)
    hidden: Seen
    vocab: Seen
    sequence: Seen
    # the lowest layer's 2-D MatMul weights, whole: (layer, name, shape, where)
    layer_weights: tuple[tuple[int, str, tuple[int, ...], str], ...] = ()
    # the forward BatchMatMuls of 4-D operands, each (heads, head size) once, whole: (heads, head size, where,
    # the key-value heads its second operand shows)
    attention: tuple[tuple[int, int, str, Seen], ...] = ()


def model_dims(t: Any, dump: Dump, file: str, whole: bool = False) -> ModelDims:
    """The sizes `t` (the rank's fact table) and its dump show (call before the table is released); `whole`: a
    pass before the parallel pass, whose shapes are not sliced."""
    splits = {} if whole else t.column("strategy")
    hidden, vocab, sequence = _embedding(t, file, splits)
    return ModelDims(_global_batch(dump, file), not t.column("strategy"), hidden, vocab, sequence,
                     _layer_weights(t, file, splits), _attention(t, file, splits))


def _global_batch(dump: Dump, file: str) -> Seen:
    for p in dump.params:
        if p.has_default or p.type is None or p.type.kind != "Tensor":
            continue
        full, mine = p.full_shape, p.type.shape
        if full:
            return full[0], f"{file}:{p.line} ({p.ref} {_dims(mine)} on this rank, whole shape {_dims(full)})"
    return None, "no data input prints its shape over all ranks"


def _dims(shape: Any) -> str:
    return "(" + ", ".join(map(str, shape)) + ")" if isinstance(shape, tuple) else str(shape)


def _full(shape: Any, split: Any) -> tuple[int, ...] | None:
    """A slice's shape times its split per dimension (None when either is not a list of whole numbers)."""
    if not isinstance(shape, tuple) or not isinstance(split, (tuple, list)) or len(shape) != len(split) or \
            not all(isinstance(x, int) and x > 0 for x in (*shape, *split)):
        return None
    return tuple(a * b for a, b in zip(shape, split))


def _embedding(t: Any, file: str, strategies: dict[Node, Any]) -> tuple[Seen, Seen, Seen]:
    why = "no embedding (a Gather of a weight of no layer by token indices)"
    params, by_key = t.get("parameters"), t.get("by_key")
    for n in t.dump.nodes():
        if n.op not in _GATHER and n.op != _EMBEDDING or len(n.input_types) < 2:
            continue
        at, ai = (1, 0) if n.op == _EMBEDDING else (0, 1)  # the table's input and the indices'
        table, index = n.input_types[at], n.input_types[ai]
        if table.shape is None or len(table.shape) != 2 or not (index.dtype or "").startswith(("Int", "UInt")):
            continue
        weight = _weight(n, by_key[n.graph], params, at)
        if weight is None or layer_index(weight) is not None:
            continue
        split = _split(n, strategies)
        if n.op == _EMBEDDING and split is None and table.shape[1] > 0:
            where = (f"{file}:{n.line} (Embedding of {weight} {_dims(table.shape)}, no in_strategy: MindFormers' "
                     "vocabulary-parallel table splits its rows only")
            rows = "the rows split over the tensor-parallel ranks by a self-defined shard"
            return (table.shape[1], where + f": {table.shape[1]} wide)"), (None, f"{where}: {rows})"), \
                (None, f"{file}:{n.line}: the token indices are flattened")
        if split is not None and n.op == _EMBEDDING:
            split = [split[1], split[0], *split[2:]]
        if split is None:
            return ((None, f"{file}:{n.line}: the embedding's {n.op} has no in_strategy of whole numbers"),) * 3
        full_table, full_index = _full(table.shape, split[0]), _full(index.shape, split[1])
        if full_table is None:
            return ((None, f"{file}:{n.line}: the embedding's table and its split do not match"),) * 3
        where = f"{file}:{n.line} ({n.op} of {weight} {_dims(table.shape)} split {_dims(tuple(split[0]))}"
        seq = (full_index[-1], f"{where}: token indices {_dims(index.shape)} split {_dims(tuple(split[1]))})") \
            if full_index is not None and len(full_index) == 2 else (None, f"{file}:{n.line}: indices not (batch, sequence)")
        return (full_table[1], where + f": {full_table[1]} wide)"), (full_table[0], where + f": {full_table[0]} rows)"), seq
    return (None, why), (None, why), (None, why)


def _layer_weights(t: Any, file: str, strategies: dict[Node, Any]) -> tuple[tuple[int, str, tuple[int, ...], str], ...]:
    params, by_key = t.get("parameters"), t.get("by_key")
    found: dict[int, list[tuple[int, str, tuple[int, ...], str]]] = {}
    for n in t.dump.nodes():
        if n.op != "MatMul" or t("phase", n) != "forward":
            continue
        for i, typ in enumerate(n.input_types[:2]):
            name = _weight(n, by_key[n.graph], params, i)
            layer = layer_index(name) if name is not None else None
            if name is None or layer is None or any(name == w[1] for w in found.get(layer, [])):
                continue
            split = _split(n, strategies)
            full = _full(typ.shape, split[i]) if split is not None and len(split) > i else None
            if full is not None and len(full) == 2:
                found.setdefault(layer, []).append((layer, name, full, f"{file}:{n.line}"))
    return tuple(found[min(found)]) if found else ()


def _attention(t: Any, file: str, strategies: dict[Node, Any]) -> tuple[tuple[int, int, str, Seen], ...]:
    found: dict[tuple[int, int], tuple[str, Seen]] = {}
    by_key = t.get("by_key")
    for n in t.dump.nodes():
        if n.op in _FLASH and len(n.input_types) > 1 and t("phase", n) == "forward":
            for heads_dim, kv, where in _flash(n, _split(n, strategies), file):
                found.setdefault(heads_dim, (where, kv))
            continue
        if n.op != "BatchMatMul" or len(n.input_types) < 2 or t("phase", n) != "forward":
            continue
        split = _split(n, strategies)
        full = _full(n.input_types[0].shape, split[0]) if split else None
        if full is not None and len(full) == 4 and (full[1], full[3]) not in found:
            found[(full[1], full[3])] = (f"{file}:{n.line} (BatchMatMul of {_dims(n.input_types[0].shape)} split "
                                         f"{_dims(tuple(split[0]))})", _key_heads(n, full[1], by_key[n.graph], file))
    return tuple((n, d, where, kv) for (n, d), (where, kv) in found.items())


_FLASH = frozenset({"FlashAttentionScore"})
FLASH_HEAD_NUM, FLASH_LAYOUT = 10, 16  # FlashAttentionScore's `head_num` (this rank's heads), `input_layout` inputs
_HEADS_AXIS = {1: (1,), 3: (2,)}  # input_layout (MindSpore's enum, docs/cost.md): BNSD heads on 1, BSND on 2


def _flash(n: Node, split: list[Any] | None, file: str) -> list[tuple[tuple[int, int], Seen, str]]:
    """A flash attention's (heads, head size), its key-value heads and where: from its query's and key's whole
    shapes, the heads on dimension 1 (BNSD) or 2 (BSND) of a 4-D query by its `input_layout` (not printed: both,
    the attention scores then pick the one whose heads x head size is the hidden size); a 3-D query (BSH, SBH:
    hidden last) by its `head_num` input x the split of the hidden dimension."""
    if not split or len(split) < 2:
        return []
    q, k = _full(n.input_types[0].shape, split[0]), _full(n.input_types[1].shape, split[1])
    if q is None or k is None or len(q) != len(k):
        return []
    where = f"{file}:{n.line} (FlashAttentionScore of query {_dims(q)}, key {_dims(k)} whole)"
    if len(q) == 4:
        return [((q[a], q[3]), (k[a], where + f": {k[a]} key-value heads"), where)
                for a in _HEADS_AXIS.get(n.input_value(FLASH_LAYOUT), (1, 2))]
    local = n.input_value(FLASH_HEAD_NUM)
    if len(q) == 3 and isinstance(local, int) and local > 0 and isinstance(split[0][2], int):
        heads = local * split[0][2]
        if q[2] % heads == 0 and k[2] % (q[2] // heads) == 0:
            d = q[2] // heads
            return [((heads, d), (k[2] // d, where + f": {k[2] // d} key-value heads of {d}"), where)]
    return []


def _key_heads(bmm: Node, heads: int, local: dict[str, Node], file: str) -> Seen:
    """The key-value heads of a BatchMatMul of `heads` heads: its second operand followed back along `_KEY_PATH`,
    the heads x the elements where the key is computed / the elements the BatchMatMul reads (this rank's slices:
    the path's operators keep the split of the heads)."""
    cur, i, tiles, src = bmm, 1, [], None
    for _ in range(32):
        ref = cur.inputs[i].ref if len(cur.inputs) > i else None
        src = local.get(ref.name) if ref is not None and ref.kind == "node" else None
        if src is None or src.op not in _KEY_PATH:
            break
        cur, i = src, 0
        tiles += [src] if src.op in ("Tile", "BroadcastTo") else []
    if src is None:  # a graph's parameter or a constant: where it is computed is not in this graph
        return None, f"{file}:{bmm.line}: the key comes from outside its graph (line {cur.line})"
    if src.op in COMM_OPS:
        return None, f"{file}:{bmm.line}: the key reaches the BatchMatMul through a {src.op} (line {src.line})"
    made, read = cur.input_types[i].shape if len(cur.input_types) > i else None, bmm.input_types[1].shape
    m, r = _elements(made), _elements(read)
    if not m or not r or (heads * m) % r or heads % (heads * m // r):
        return None, f"{file}:{bmm.line}: the key's {_dims(made)} where it is computed against {_dims(read)} read"
    kv = heads * m // r
    how = f"repeated {r // m} times ({', '.join(f'{x.op} line {x.line}' for x in tiles)})" if kv != heads \
        else "not repeated"
    return kv, f"{file}:{bmm.line}: its key of {heads} heads {how} from {_dims(made)}: {kv} key-value heads"


def _elements(shape: Any) -> int | None:
    return math.prod(shape) if isinstance(shape, tuple) and all(isinstance(x, int) and x > 0 for x in shape) else None


def _scores(hidden: int, attention: tuple[tuple[int, int, str, Seen], ...]) -> tuple[int, int, str, Seen] | None:
    """The first 4-D BatchMatMul (`attention`) whose heads x head size is `hidden`: the attention scores."""
    return next((a for a in attention if a[0] * a[1] == hidden), None)


def heads(hidden: int, attention: tuple[tuple[int, int, str, Seen], ...]) -> Seen:
    """The heads of the attention scores' BatchMatMul (`_scores`)."""
    a = _scores(hidden, attention)
    if a is None:
        return None, f"no 4-D BatchMatMul whose heads x head size is the hidden size {hidden}"
    n, d, where, _ = a
    return n, f"{where}: {n} heads of {d}, {n} x {d} = the hidden size {hidden}"


def kv_heads(hidden: int, attention: tuple[tuple[int, int, str, Seen], ...]) -> Seen:
    """The key-value heads of the attention scores' BatchMatMul: its key's heads before any repeat (`_key_heads`)."""
    a = _scores(hidden, attention)
    return a[3] if a is not None else heads(hidden, attention)


def ffn_size(hidden: int, weights: tuple[tuple[int, str, tuple[int, ...], str], ...]) -> Seen:
    """The largest dimension beside `hidden` that is larger than it, of the layer's 2-D weights (`layer_weights`)."""
    wide = [(d, w) for w in weights if hidden in w[2] for d in w[2] if d > hidden]
    if not wide:
        layer = f"layer {weights[0][0]}" if weights else "any layer"
        return None, f"no 2-D MatMul weight of {layer} wider than the hidden size {hidden} (an MoE layer's experts are 3-D)"
    d, (layer, name, shape, where) = max(wide, key=lambda x: x[0])
    return d, f"{where} ({name} {_dims(shape)} whole: {d} beside the hidden size {hidden})"


def _weight(n: Node, local: dict[str, Node], params: Any, index: int = 0) -> str | None:
    """The parameter input `index` of `n` is the value of, through what passes a weight's value on (a Load, Cast,
    Depend, the optimizer-parallel AllGather of its shard): the header name, or the name of the graph's own parameter
    a call passes it in as (`▸CR_model.tok_embeddings.embedding_weight` in a cell-reuse graph)."""
    ref, _ = follow_value(n, index, local, lambda s: s.op in WEIGHT_VALUE)
    if ref is None or ref.kind not in ("param", "free"):
        return None
    return params.name_of(ref.name) or param_name(ref.name)


def weight_splits(t: Any) -> dict[str, tuple[int, ...]]:
    """Each parameter a forward operator with a strategy reads (through what passes a weight's value on): its
    split per dimension (that input's `in_strategy`) at the first such reader; names as `_weight` gives them (a
    cell-reuse graph's `▸CR_` name for a parameter passed in). The whole shape is the slice times the split."""
    strategies, params, by_key = t.column("strategy"), t.get("parameters"), t.get("by_key")
    found: dict[str, tuple[int, ...]] = {}
    for n in t.dump.nodes():
        if n not in strategies or t("phase", n) != "forward":
            continue
        split = _split(n, strategies)
        for i in range(len(n.input_types)):
            name = _weight(n, by_key[n.graph], params, i)
            if name is not None and name not in found and split is not None and len(split) > i \
                    and isinstance(split[i], (tuple, list)):
                found[name] = tuple(split[i])
    return found


def _split(n: Node, strategies: dict[Node, Any]) -> list[Any] | None:
    """The split of each input of `n` by its `in_strategy`; all 1 without any strategy (one device, data-parallel
    mode, or a pass before the parallel pass: shapes are whole)."""
    s = strategies.get(n)
    if s is None:
        return None if strategies else [(1,) * len(x.shape) if isinstance(x.shape, tuple) else () for x in n.input_types]
    value = s.in_strategy
    if not isinstance(value, (tuple, list)) or len(value) < 2:
        return None
    return list(value)
