"""Device memory of one rank, from what the dump says (docs/cost.md §2).

Parameters are the `# Params` lines with a default value, as this rank holds them (the printed
shape is the slice, optimizer parallel included). Their roles come from the operators that use
them, not from their names: the weights and the optimizer states are the parameters feeding an
optimizer update (an optimizer-phase operator with two or more parameter inputs: its first is the
weight, the others of the weight's shape its states, the rest hyperparameters); accumulation
buffers are the parameters an `AssignAdd` adds gradients into. Activations are the forward outputs
a backward operator reads (recomputed copies are recompute-phase, so not counted).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..ir import Node
from .params import Params
from .sizes import type_bytes

if TYPE_CHECKING:
    from .table import NodeFacts

ACCUMULATE = frozenset({"AssignAdd", "_VirtualAssignAdd", "_VirtualAccuGrad", "InplaceAdd"})
# Producers whose output is no activation: parameters, tuples of references, ordering tokens.
_NOT_ACTIVATION = frozenset({"Load", "MakeTuple", "UpdateState", "Depend", "Return", "(call)", "Send"})
# Operators that only look through to their first input when a parameter is passed.
_THROUGH = frozenset({"Load", "Depend", "TensorMove", "Cast"})
# Operators that read a parameter without computing with it.
_PLUMBING = _THROUGH | ACCUMULATE | frozenset({"UpdateState", "MakeTuple", "Assign", "Return", "(call)"})


@dataclass
class ParamBytes:
    """One parameter as this rank holds it."""

    name: str
    shape: Any
    dtype: str | None
    bytes: int | None
    role: str  # weight, optimizer-state, accumulation, hyperparameter, other, unused
    of: str | None = None  # the weight an optimizer state or accumulation buffer belongs to


@dataclass
class MemoryFacts:
    """Bytes of one rank by what they hold; `estimates` names the figures that are estimates."""

    kind: str
    params: list[ParamBytes]
    activations_micro: int | None  # bytes kept from forward for backward, one micro batch (None: no backward here)
    activation_tensors: int  # how many forward outputs that is
    micros: int  # micro batches in the dump
    in_flight: int | float  # micro batches whose activations are held at once (a stage of 2 chunks may hold 5.5)
    gradients_estimate: int  # weights without an accumulation buffer: one gradient of the weight's size each
    notes: list[str] = field(default_factory=list)

    def total(self, role: str) -> int:
        return sum(p.bytes or 0 for p in self.params if p.role == role)

    def unknown(self) -> list[str]:
        return [p.name for p in self.params if p.bytes is None]

    @property
    def activations(self) -> int | None:
        return None if self.activations_micro is None else round(self.activations_micro * self.in_flight)

    @property
    def peak(self) -> int:
        """Parameters (all roles, unused included: they are allocated) + gradients + activations in flight."""
        return sum(p.bytes or 0 for p in self.params) + self.gradients_estimate + (self.activations or 0)

    def as_dict(self) -> dict[str, Any]:
        roles = ("weight", "optimizer-state", "accumulation", "hyperparameter", "other", "unused")
        return {
            "bytes_by_role": {r: self.total(r) for r in roles},
            "gradients_estimate_bytes": self.gradients_estimate,
            "activations_per_micro_bytes": self.activations_micro,
            "activation_tensors_per_micro": self.activation_tensors,
            "micro_batches": self.micros, "micro_batches_in_flight": self.in_flight,
            "activations_bytes": self.activations,
            "total_bytes": self.peak,
            "optimizer_states": [p.name for p in self.params if p.role == "optimizer-state"],
            "unused_params": [p.name for p in self.params if p.role == "unused"],
            "unknown_size_params": self.unknown(),
            "estimates": ["gradients_estimate_bytes", "activations_per_micro_bytes", "activations_bytes",
                          "total_bytes"],
            "notes": list(self.notes),
        }


def _kept_producer(src: Node | None, by_key: dict[str, Node]) -> Node | None:
    """The tensor a backward read keeps alive: one element of an operator's tuple keeps the whole
    tuple; an element of a called subgraph's results is that element alone."""
    if src is None or src.op != "TupleGetItem" or not src.inputs:
        return src
    first = src.inputs[0].ref
    tup = by_key.get(first.name) if first is not None and first.kind == "node" else None
    return src if tup is None or tup.op == "(call)" else tup


def _param_of(node: Node, index: int, by_key: dict[str, Node], params: Params, depth: int = 0) -> str | None:
    """The header parameter an input refers to, directly or through Load/Depend."""
    ins = node.inputs
    if index >= len(ins) or ins[index].ref is None:
        return None
    ref = ins[index].ref
    if ref.kind in ("param", "free"):
        return params.name_of(ref.name)
    if ref.kind == "node" and depth < 3:
        src = by_key.get(ref.name)
        if src is not None and src.op in _THROUGH:
            return _param_of(src, 0, by_key, params, depth + 1)
    return None


def compute_memory(t: NodeFacts, stage: int | None = None, stages: int | None = None) -> MemoryFacts:
    """What the rank of fact table `t` holds (docs/cost.md §2). `stage`/`stages` place it in the
    pipeline: under 1F1B stage s of S holds the activations of min(S - s, micro batches) micro batches at once."""
    dump = t.dump
    kind = t.get("file_kind")
    held = {p.ref: p.name for p in dump.params if p.has_default}
    types = {p.name: p.type for p in dump.params if p.has_default}
    used: set[str] = set()
    computed: set[str] = set()  # parameters a forward/backward/recompute operator reads
    weights: dict[str, str | None] = {}
    states: dict[str, str] = {}
    hyper: set[str] = set()
    accum: dict[str, str | None] = {}
    kept: dict[str, Node] = {}
    micros: set[int] = set()
    has_backward = False
    keys = {g.name: {n.key: n for n in g.nodes} for g in dump.subgraphs}
    params: Params = t.get("parameters")
    names = set(held.values())
    backward_graphs = {g.name for g in dump.subgraphs if any(t("phase", n) == "backward" for n in g.nodes)}
    for g in dump.subgraphs:
        by_key = keys[g.name]
        for n in g.nodes:
            ins = n.inputs
            param_ins = []
            for name in params.read_by(n):
                if name in names:
                    used.add(name)
            for i in range(len(ins)):
                p = _param_of(n, i, by_key, params)
                if p is not None and p in names:
                    param_ins.append((i, p))
            ph = t("phase", n)
            if ph != "optimizer" and n.op not in _PLUMBING:
                computed.update(p for _, p in param_ins)
            micro = t("micro", n)
            if micro is not None:
                micros.add(micro)
            if n.op in ACCUMULATE and param_ins and ph != "optimizer":
                # AssignAdd(buffer, value); _VirtualAssignAdd(value, buffer) (step_parallel_end)
                accum.setdefault(param_ins[-1][1] if n.op.startswith("_Virtual") else param_ins[0][1], None)
            if ph == "optimizer" and len(param_ins) >= 2 and n.op not in _THROUGH and n.op not in ACCUMULATE \
                    and n.op not in ("Assign", "UpdateState", "MakeTuple", "Depend"):
                w = param_ins[0][1]
                weights.setdefault(w, None)
                wshape = types[w].shape if types.get(w) else None
                for _, p in param_ins[1:]:
                    ty = types.get(p)
                    if ty is not None and ty.shape == wshape and p != w:
                        states[p] = w
                    elif p != w:
                        hyper.add(p)
            # a backward operator, or a call (or closure) of a backward subgraph (cell reuse / lazy inline)
            called = (*n.called_graphs, n.bound_graph)
            if ph == "backward" or any(c in backward_graphs for c in called):
                has_backward = True
                for inp in ins:
                    if inp.ref is not None and inp.ref.kind == "node":
                        src = _kept_producer(by_key.get(inp.ref.name), by_key)
                        if src is not None and src.op not in _NOT_ACTIVATION and t("phase", src) == "forward":
                            kept[src.uid] = src
    notes = []
    rows = []
    for p in dump.params:
        if not p.has_default:
            continue
        name = p.name
        if name in weights and name not in computed:
            role, of = "unused", None  # updated by the optimizer, read by no operator of this stage
        elif name in weights:
            role, of = "weight", None
        elif name in states:
            role, of = "optimizer-state", states[name]
        elif name in accum:
            role, of = "accumulation", None
        elif name in hyper:
            role, of = "hyperparameter", None
        elif name not in used:
            role, of = "unused", None
        else:
            role, of = "other", None
        shape, dtype, nbytes = type_bytes(p.type)
        rows.append(ParamBytes(name, shape, dtype, nbytes, role, of))
    unused = {r.name for r in rows if r.role == "unused"}
    for r in rows:
        if r.role in ("accumulation", "other"):  # the weight a buffer serves: the weight's name as its suffix
            r.of = next((w for w in weights if r.name.endswith("." + w)), None)
        if r.of in unused and r.role in ("other", "accumulation", "optimizer-state"):
            r.role = "unused"  # the buffers and states of an unused weight are held for nothing too
    with_buffer = {r.of for r in rows if r.role == "accumulation" and r.of}
    grads = sum(r.bytes or 0 for r in rows if r.role == "weight" and r.name not in with_buffer)
    per_micro: int | None = None
    count = 0
    if has_backward:
        marked = [n for n in kept.values() if t("micro", n) is not None]
        if micros and marked:
            chosen = [n for n in marked if t("micro", n) == min(micros)]
            count = len(chosen)
            per_micro = sum(type_bytes(n.output_type, tuple_sum=True)[2] or 0 for n in chosen)
        else:  # no micro batch marks on what is kept (cell reuse): the step's total shared evenly
            n_micro = max(1, len(micros))
            count = len(kept) // n_micro
            per_micro = sum(type_bytes(n.output_type, tuple_sum=True)[2] or 0 for n in kept.values()) // n_micro
            if micros:
                notes.append(f"the kept tensors carry no micro batch mark: their total / {n_micro} micro batches")
    else:
        notes.append("no backward operators in this pass (step_parallel_end has not differentiated yet): "
                     "activations are read from validate")
    n_micro = max(1, len(micros))
    if stage is not None and stages:
        in_flight = min(stages - stage, n_micro)
        notes.append(f"activations in flight: 1F1B assumed, stage {stage} of {stages} holds "
                     f"min({stages} - {stage}, {n_micro}) = {in_flight} micro batches")
    else:
        in_flight = 1
    if not weights:
        notes.append("no optimizer update operator found: parameters with no role are listed as `other`")
    return MemoryFacts(kind=kind, params=rows, activations_micro=per_micro, activation_tensors=count, micros=n_micro,
                       in_flight=in_flight, gradients_estimate=grads, notes=notes)

