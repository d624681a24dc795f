"""Device memory of one rank, from what the dump says (docs/cost.md §2).

Parameters are the `# Params` lines with a default value, as this rank holds them (the printed
shape is the slice, optimizer parallel included); their roles are the `param_roles` fact (by use,
`roles.py`). Activations are the forward outputs kept for later: read by a backward operator, or
by a recomputed copy (a recomputed segment's inputs are kept until the copy runs in the backward
pass). Unknown sizes are counted beside the known bytes (`Bytes`), never added as 0. How many
micro batches' activations are held at once is not decided here (`balance.in_flight`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..ir import Node
from .params import layer_index
from .records import Bytes
from .roles import Role
from .sizes import type_bytes

if TYPE_CHECKING:
    from .table import NodeFacts

# Producers whose output is no activation: parameters, tuples of references, ordering tokens.
_NOT_ACTIVATION = frozenset({"Load", "MakeTuple", "UpdateState", "Depend", "Return", "(call)", "Send"})


def scaled(b: Bytes, k: int | float) -> Bytes:
    """`k` copies of the tensors `b` counts (k micro batches' activations; an interleaved stage of C
    chunks may hold a fraction: each unit keeps a C-th of a micro batch's activations)."""
    return Bytes(round(b.total * k), round(b.known * k), round(b.unknown * k))


@dataclass(frozen=True)
class ParamBytes:
    """One parameter as this rank holds it."""

    name: str
    shape: Any
    dtype: str | None
    bytes: int | None
    role: Role
    of: str | None  # the weight a state, buffer or unused companion serves
    layer: int | None  # the layer of the weight it is or serves (`layers.3.w1`, `adam_m.layers.3.w1`)


@dataclass(frozen=True)
class Activations:
    """Forward outputs kept for later, for one micro batch."""

    per_micro: Bytes  # known bytes, and how many tensors are of unknown size
    by_layer: dict[int | None, Bytes]  # per micro batch, by the layer of the producing node
    for_recompute: int  # tensors kept because a recomputed copy reads them (checkpoints)
    how: str  # which micro batch, or the step's total shared over the micro batches
    # per micro batch, by layer: the recomputed copies' outputs the backward reads, which that layer would keep
    # were it not recomputed (its forward outputs in their place; docs/cost.md §3, recompute)
    recomputed_by_layer: dict[int | None, Bytes] = field(default_factory=dict)


@dataclass
class MemoryFacts:
    """Bytes of one rank by what they hold (the activations of one micro batch: the caller knows how
    many are held at once)."""

    kind: str
    params: list[ParamBytes]
    gradients: Bytes  # estimate: weights without an accumulation buffer, one gradient of the weight's size each
    gradients_by_layer: dict[int | None, Bytes]
    activations: Activations | None  # None: no backward operators in this pass
    notes: list[str] = field(default_factory=list)
    # the tensors `activations.per_micro` adds up, by producer uid (`graph/%N`): what each keeps for one micro batch
    kept: dict[str, int | None] = field(default_factory=dict)

    def role_bytes(self, role: str) -> Bytes:
        out = Bytes()
        for p in self.params:
            if p.role == role:
                out += p.bytes
        return out

    @property
    def params_bytes(self) -> Bytes:
        out = Bytes()
        for p in self.params:
            out += p.bytes
        return out

    def static(self) -> Bytes:
        """Everything but the activations: parameters of all roles (unused ones are allocated too) and gradients."""
        return self.params_bytes + self.gradients

    def static_by_layer(self) -> dict[int | None, Bytes]:
        """Parameters (weights, states, buffers of a layer's weights) and gradients by layer; held-but-unused and
        hyperparameters stay with the stage (None)."""
        out: dict[int | None, Bytes] = {}
        for p in self.params:
            key = p.layer if p.role not in ("unused", "hyperparameter") else None
            out[key] = out.get(key, Bytes()) + p.bytes
        for k, b in self.gradients_by_layer.items():
            out[k] = out.get(k, Bytes()) + b
        return out

    def total(self, in_flight: int) -> Bytes:
        """Parameters + gradients + the activations of `in_flight` micro batches."""
        act = scaled(self.activations.per_micro, in_flight) if self.activations else Bytes()
        return self.static() + act


def _kept_producer(src: Node | None, by_key: dict[str, Node]) -> Node | None:
    """The tensor a later read keeps alive: the value behind Depend/TensorMove (a recomputed segment
    reads its input through a Depend ordering it after the backward); one element of an operator's
    tuple keeps the whole tuple; an element of a called subgraph's results is that element alone."""
    for _ in range(4):
        if src is None or src.op not in ("Depend", "TensorMove") or not src.inputs:
            break
        first = src.inputs[0].ref
        src = by_key.get(first.name) if first is not None and first.kind == "node" else None
    if src is None or src.op != "TupleGetItem" or not src.inputs:
        return src
    first = src.inputs[0].ref
    tup = by_key.get(first.name) if first is not None and first.kind == "node" else None
    return src if tup is None or tup.op == "(call)" else tup


def compute_memory(t: NodeFacts, micro_batches: int | None = None) -> MemoryFacts:
    """What the rank of fact table `t` holds (docs/cost.md §2); `micro_batches`: how many the step
    runs (the job's), to share the kept tensors of a dump that marks none with its micro batch."""
    dump = t.dump
    roles = t.get("param_roles")
    by_key = t.get("by_key")
    rows = []
    for p in dump.params:
        if not p.has_default:
            continue
        r = roles[p.name]
        shape, dtype, nbytes = type_bytes(p.type)
        rows.append(ParamBytes(p.name, shape, dtype, nbytes, r.role, r.of, layer_index(r.of or p.name)))
    notes = []
    with_buffer = {r.of for r in rows if r.role == "accumulation" and r.of}
    grads, grads_layer = Bytes(), {}
    for r in rows:
        if r.role == "weight" and r.name not in with_buffer and roles[r.name].updated:
            grads += r.bytes
            grads_layer[r.layer] = grads_layer.get(r.layer, Bytes()) + r.bytes
    if not any(r.role in ("weight", "unused") and r.of is None for r in rows):
        notes.append("no optimizer update found: parameters with no role are listed as `other`")
    kept: dict[Node, None] = {}
    for_recompute: set[Node] = set()
    recomputed: dict[Node, None] = {}  # recomputed copies' outputs a backward node reads
    has_backward = False
    graph_phases = t.get("graph_phases")
    for n in dump.nodes():
        ph = t("phase", n)
        # a backward operator, or a call (or closure) of a subgraph run in the backward only (cell reuse, a lazy
        # inline bprop's `Partial` keeping the forward values it is given); a recomputed copy keeps the forward
        # outputs it reads (its segment's inputs) until it runs
        reads_back = ph == "backward" or any(graph_phases.get(c) == "backward" for c in (*n.called_graphs, n.bound_graph))
        if not reads_back and ph != "recompute":
            continue
        has_backward |= reads_back
        local = by_key[n.graph]
        for ref in n.node_refs:
            src = _kept_producer(local.get(ref), local)
            if src is not None and src.op not in _NOT_ACTIVATION and reads_back and t("phase", src) == "recompute":
                recomputed[src] = None
            if src is not None and src.op not in _NOT_ACTIVATION and t("phase", src) == "forward":
                kept[src] = None
                if not reads_back:
                    for_recompute.add(src)
    if not has_backward:
        notes.append("no backward operators in this pass (step_parallel_end has not differentiated yet): "
                     "activations are read from validate")
        return MemoryFacts(t.get("file_kind"), rows, grads, grads_layer, None, notes)
    weight, how = _per_micro(t, list(kept), micro_batches)
    chosen = [n for n in kept if weight[n] != 0]
    per_micro, by_layer, sizes = Bytes(), {}, {}
    for n in chosen:
        size, w = type_bytes(n.output_type, tuple_sum=True)[2], weight[n]
        sizes[n.uid] = None if size is None or w is None else round(size * w)
        b = Bytes.of(sizes[n.uid])
        layer = t("layer", n)
        per_micro += b
        by_layer[layer] = by_layer.get(layer, Bytes()) + b
    acts = Activations(per_micro, by_layer, sum(1 for n in chosen if n in for_recompute), how,
                       _by_layer(t, list(recomputed), micro_batches))
    return MemoryFacts(t.get("file_kind"), rows, grads, grads_layer, acts, notes, sizes)


def _by_layer(t: NodeFacts, nodes: list[Node], micro_batches: int | None) -> dict[int | None, Bytes]:
    """Bytes per micro batch of `nodes`' outputs (weighted as the kept tensors are), by the layer of each."""
    weight, _ = _per_micro(t, nodes, micro_batches)
    out: dict[int | None, Bytes] = {}
    for n in nodes:
        size, w = type_bytes(n.output_type, tuple_sum=True)[2], weight[n]
        if w != 0:
            layer = t("layer", n)
            out[layer] = out.get(layer, Bytes()) + Bytes.of(None if size is None or w is None else round(size * w))
    return out


def _per_micro(t: NodeFacts, kept: list[Node], micro_batches: int | None) -> tuple[dict[Node, int | float | None], str]:
    """How many copies of each kept tensor one micro batch holds, and how that is known. A tensor of
    a micro batch (`micro`) is held by the first micro batch's or not at all. A tensor of a graph
    called per micro batch (a lazy-inline or cell-reuse forward graph: its calls carry `micro`) is held
    once per run of its graph for that micro batch: each call keeps its own outputs for the backward (the
    `Partial` binding the call's bprop graph holds them). Any other is the step's (its `runs`) shared
    evenly over the micro batches; of a loop body, whose runs are unknown, an unknown number (None)."""
    calls = t.get("calls").sites
    runs = t.get("graph_runs")
    first = min(t.column("micro").values(), default=None)
    memo: dict[str, int | None] = {}

    def of_micro(graph: str, path: frozenset[str]) -> int | None:
        """Runs of `graph` for the first micro batch (None: no call of it carries a micro batch)."""
        if graph in memo:
            return memo[graph]
        total: int | None = None
        for site in calls.get(graph, []):
            m = t("micro", site)
            if m is None:
                k = None if site.graph in path else of_micro(site.graph, path | {graph})
            else:
                k = runs[site.graph].count if m == first else 0
            if k is not None:
                total = (total or 0) + k
        memo[graph] = total
        return total

    share = max(1, micro_batches or 1)
    out: dict[Node, int | float | None] = {}
    shared = 0
    for n in kept:
        m = t("micro", n)
        if m is not None:
            out[n] = 1 if m == first else 0
            continue
        k = of_micro(n.graph, frozenset())
        if k is None:  # the step's runs shared; a tensor of a loop body (runs unknown) is of unknown size
            r = runs[n.graph].count
            k = None if r is None else r / share
            shared += 1
        out[n] = k
    how = f"the tensors of micro batch {first}" if first is not None else "the tensors of one micro batch"
    if any(t("micro", n) is None and of_micro(n.graph, frozenset()) for n in kept):
        how += ", a reused graph's once per call for it"
    if shared:
        how += (f"; {shared} of no micro batch: the step's / {share} micro batches" if share > 1 else
                f"; {shared} of no micro batch: the step's")
    return out, how
