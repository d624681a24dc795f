"""What each parameter a rank holds is for, by how the step uses it, whatever its name (the
`param_roles` pass of the fact table, docs/cost.md §2).

- A **weight** is updated by the optimizer and read by forward, backward or recompute work; an
  **optimizer state** is a parameter the optimizer writes and reads into one weight's update only
  (Adam's moments, SGD's `accum`/`stat`, Adafactor's factored rows/columns); a parameter read into
  the updates of several weights (a learning rate, the beta powers, the step counter feeding the
  schedule) or a scalar one is a **hyperparameter**; an **accumulation** buffer is written by an
  `AssignAdd` outside the optimizer (pipeline and gradient accumulation); a weight no work of this
  rank reads, its states and buffers are **unused** (held for nothing); in a step with no backward
  work and no update (inference), a parameter forward work computes with is a **weight** (what the
  model holds to run); the rest is **other**.
- An update is either a fused primitive, whose signature says which input is the weight and which
  its states (`UPDATES`), or written out (MindFormers' AdamW, LazyAdam on dense gradients, Lamb):
  `Assign(param, value)` in the optimizer, the parameters the value is computed from (data edges,
  not Depend's ordering inputs nor UpdateState) telling which parameter feeds which. Written out,
  a weight is a written parameter no other written parameter's value is computed from (the states
  feed the weight, never the reverse) that work reads or that has a state.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..ir import Node
from .params import _THROUGH, Params, data_refs
from .sizes import elements

if TYPE_CHECKING:
    from .table import NodeFacts

Role = Literal["weight", "optimizer-state", "accumulation", "hyperparameter", "other", "unused"]
ROLES: tuple[Role, ...] = ("weight", "optimizer-state", "accumulation", "hyperparameter", "other", "unused")

# Fused update primitives: (input of the weight, inputs of its states), from MindSpore's operator signatures
# (`SGD(parameters, gradient, learning_rate, accum, momentum, stat)`, `Adam(var, m, v, beta1_power, ...)`).
UPDATES: dict[str, tuple[int, tuple[int, ...]]] = {
    "Adam": (0, (1, 2)), "ApplyAdam": (0, (1, 2)), "FusedAdam": (0, (1, 2)), "AdamWeightDecay": (0, (1, 2)),
    "FusedAdamWeightDecay": (0, (1, 2)), "FusedCastAdamWeightDecay": (0, (1, 2)), "AdamW": (0, (1, 2)),
    "ApplyAdamWithAmsgrad": (0, (1, 2, 3)), "ApplyAdamWithAmsgradV2": (0, (1, 2, 3)),
    "FusedSparseAdam": (0, (1, 2)), "FusedSparseLazyAdam": (0, (1, 2)), "SparseApplyLazyAdam": (0, (1, 2)),
    "Lamb": (0, (1, 2)), "LAMB": (0, (1, 2)), "ApplyMomentum": (0, (1,)), "Momentum": (0, (1,)),
    "SGD": (0, (3, 5)), "ApplyAdagrad": (0, (1,)), "ApplyAdagradV2": (0, (1,)), "SparseApplyAdagrad": (0, (1,)),
    "ApplyRMSProp": (0, (1, 2)), "ApplyCenteredRMSProp": (0, (1, 2, 3)), "ApplyAdaMax": (0, (1, 2)),
    "ApplyFtrl": (0, (1, 2)), "SparseApplyFtrl": (0, (1, 2)), "ApplyProximalAdagrad": (0, (1,)),
    "SparseApplyProximalAdagrad": (0, (1,)), "ApplyAdadelta": (0, (1, 2)), "ApplyPowerSign": (0, (1,)),
    "ApplyAddSign": (0, (1,)),
}
WRITES = frozenset({"Assign", "AssignSub"})  # written-out updates: `Assign(param, new value)`
ACCUMULATE = frozenset({"AssignAdd", "_VirtualAssignAdd", "_VirtualAccuGrad", "InplaceAdd"})
# Operators that read a parameter without computing with it (calls are followed into their graph).
_PLUMBING = _THROUGH | ACCUMULATE | WRITES | frozenset({"UpdateState", "MakeTuple", "Return", "(call)", "Partial"})


@dataclass(frozen=True)
class ParamRole:
    """A parameter's role, the weight it serves (a state, buffer or unused companion), and why."""

    role: Role
    of: str | None
    why: str  # `file line N: Adam input 1 (its states by signature)`, ...
    updated: bool = True  # a weight the step updates (so it has a gradient); False: an inference weight


def param_of(node: Node, index: int, by_key: dict[str, Node], params: Params, depth: int = 0) -> str | None:
    """The header parameter input `index` of `node` is, directly or through Load/Depend/Cast/TensorMove."""
    ins = node.inputs
    if index >= len(ins) or ins[index].ref is None:
        return None
    ref = ins[index].ref
    if ref.kind in ("param", "free"):
        return params.name_of(ref.name)
    if ref.kind == "node" and depth < 3:
        src = by_key.get(ref.name)
        if src is not None and src.op in _THROUGH:
            return param_of(src, 0, by_key, params, depth + 1)
    return None


def _refs_through(n: Node, local: dict[str, Node], depth: int = 3) -> list[str]:
    """The parameter references `n` names, directly or through Load/Cast/Depend/TensorMove nodes."""
    out = list(n.param_refs)
    if depth:
        for ref in n.node_refs:
            src = local.get(ref)
            if src is not None and src.op in _THROUGH:
                out += _refs_through(src, local, depth - 1)
    return out


def _computed(t: NodeFacts, params: Params) -> set[str]:
    """Header parameters some forward, backward or recompute operator computes with, directly,
    through Load/Cast/Depend, or as the argument a call passes to a subgraph parameter so read
    (lazy inline: one body called with every layer's weights)."""
    dump = t.dump
    graphs = {g.name: g for g in dump.subgraphs}
    by_key = t.get("by_key")
    raw: dict[str, set[str]] = {g.name: set() for g in dump.subgraphs}  # graph -> its parameter refs computed with
    out: set[str] = set()
    sites: list[tuple[Node, str, int]] = []
    for g in dump.subgraphs:
        local = by_key[g.name]
        for n in g.nodes:
            if n.op == "(call)" or n.op == "Partial":
                for callee in (*n.called_graphs, n.bound_graph):
                    if callee in graphs:
                        sites.append((n, callee, 1 if n.op == "Partial" else 0))
                continue
            if n.op in _PLUMBING or t("phase", n) == "optimizer":
                continue
            raw[g.name].update(_refs_through(n, local))
    for _ in range(4):  # calls nest 2-3 deep in lazy-inline dumps
        grew = False
        for n, callee, shift in sites:
            formal = graphs[callee].params
            for i, ref in enumerate(formal):
                if ref not in raw[callee]:
                    continue
                j = i + shift
                arg = n.inputs[j].ref if j < len(n.inputs) else None
                if arg is None:
                    continue
                name = arg.name if arg.kind in ("param", "free") else None
                if arg.kind == "node":
                    src = by_key[n.graph].get(arg.name)
                    through = _refs_through(src, by_key[n.graph]) if src is not None and src.op in _THROUGH else []
                    name = through[0] if through else None
                if name is not None and name not in raw[n.graph]:
                    raw[n.graph].add(name)
                    grew = True
        if not grew:
            break
    for refs in raw.values():
        out.update(x for r in refs if (x := params.name_of(r)) is not None)
    return out


def _reached(t: NodeFacts, nodes: list[Node], local: dict[str, Node], params: Params) -> dict[Node, frozenset[str]]:
    """The header parameters each node's value is computed from (data edges only) since the
    backward pass: a gradient's own computation (backward and recompute work) reaches nothing, so
    what the forward pass reads (a BatchNorm's running mean) does not feed the update. Nodes in
    print order (MindSpore prints producers first; a later producer is read as reaching nothing yet)."""
    out: dict[Node, frozenset[str]] = {}
    for n in nodes:
        if t("phase", n) in ("backward", "recompute"):
            out[n] = frozenset()
            continue
        found = set(params.read_by(n))
        for ref in data_refs(n):
            src = local.get(ref)
            if src is not None and src in out:
                found |= out[src]
        out[n] = frozenset(found)
    return out


def param_roles(t: NodeFacts) -> dict[str, ParamRole]:
    """The role of every parameter with a default value (module docstring), by header name."""
    dump = t.dump
    params: Params = t.get("parameters")
    by_key = t.get("by_key")
    held = {p.name: p for p in dump.params if p.has_default}
    size = {name: elements(p.type.shape) if p.type is not None else None for name, p in held.items()}
    computed = _computed(t, params)
    fused: dict[str, tuple[list[str], str]] = {}  # weight -> (states, why)
    feeds: dict[str, set[str]] = {}  # updated parameter -> parameters its new value is computed from
    written: dict[str, str] = {}  # parameter written out -> why
    accum: dict[str, str] = {}  # accumulation buffer -> why
    reached_graphs: dict[str, dict[Node, frozenset[str]]] = {}

    def reached(n: Node) -> frozenset[str]:
        g = reached_graphs.get(n.graph)
        if g is None:
            g = reached_graphs[n.graph] = _reached(t, list(next(x for x in dump.subgraphs if x.name == n.graph).nodes),
                                                   by_key[n.graph], params)
        return g.get(n, frozenset())

    where = dump.path or "dump"
    for n in dump.nodes():
        op = n.op
        if op not in UPDATES and op not in WRITES and op not in ACCUMULATE:
            continue
        local = by_key[n.graph]
        phase = t("phase", n)
        if op in ACCUMULATE and phase != "optimizer":
            # AssignAdd(buffer, value); _VirtualAssignAdd(value, buffer) (step_parallel_end)
            index = len(n.inputs) - 1 if op.startswith("_Virtual") else 0
            buf = param_of(n, index, local, params)
            if buf is None and op.startswith("_Virtual"):
                buf = param_of(n, 1, local, params)
            if buf is not None and buf in held:
                accum.setdefault(buf, f"{where}:{n.line} ({op} adds into it outside the optimizer)")
            continue
        if phase != "optimizer":
            continue
        if op in UPDATES:
            var, state_at = UPDATES[op]
            w = param_of(n, var, local, params)
            if w is None or w not in held:
                continue
            states = [s for i in state_at if (s := param_of(n, i, local, params)) in held and s != w]
            fused[w] = (states, f"{where}:{n.line} ({op} input {var}; states: inputs "
                                f"{', '.join(map(str, state_at))} of its signature)")
            feeds.setdefault(w, set()).update(reached(n) - {w})
            continue
        target = param_of(n, 0, local, params)
        if target is None or target not in held or len(n.inputs) < 2:
            continue
        value = n.inputs[1].ref
        src = local.get(value.name) if value is not None and value.kind == "node" else None
        from_ = set(reached(src)) if src is not None else set()
        if value is not None and value.kind in ("param", "free"):
            from_.add(params.name_of(value.name) or "")
        feeds.setdefault(target, set()).update(from_ - {target, ""})
        written.setdefault(target, f"{where}:{n.line} ({op} writes it in the optimizer)")
    # written out: weights are the written parameters no other written one is computed from
    others = {p: {q for q, src in feeds.items() if q != p and p in src} for p in written}
    sinks = [p for p in written if not others[p] and p not in fused]
    fed_by = {q: {w for w in sinks if q in feeds.get(w, ())} for q in written}
    weights = {w: why for w, (_, why) in fused.items()}
    for w in sinks:
        if w in computed or any(len(fed_by[q]) == 1 for q in written if w in fed_by[q]):
            weights[w] = written[w] + "; no other written parameter is computed from it"
    roles: dict[str, ParamRole] = {}
    for w, (states, why) in fused.items():
        for s in states:
            roles[s] = ParamRole("optimizer-state", w, why)
    for q in written:
        if q in weights or q in roles:
            continue
        into = fed_by[q] & set(weights)
        if len(into) == 1:
            w = next(iter(into))
            if (size.get(q) or 0) > 1 or size.get(w) == 1:
                roles[q] = ParamRole("optimizer-state", w, f"{written[q]}; read into the update of {w} only")
                continue
        if into:
            roles[q] = ParamRole("hyperparameter", None, f"{written[q]}; read into {len(into)} weights' updates")
    readers: dict[str, set[str]] = {}
    for w in weights:
        for p in feeds.get(w, ()):
            readers.setdefault(p, set()).add(w)
    for p, ws in readers.items():
        if p in roles or p in weights or p in accum or p not in held:
            continue
        if len(ws) > 1 or size.get(p) == 1:
            roles[p] = ParamRole("hyperparameter", None, f"read into the update of {len(ws)} weight(s)")
        else:  # read into one weight's update and written by no update: its gradient buffer
            w = next(iter(ws))
            roles[p] = ParamRole("accumulation", w, f"read into the update of {w} only (its gradient)")
    for w, why in weights.items():
        roles[w] = ParamRole("weight" if w in computed else "unused", None,
                             why if w in computed else why + "; read by no work of this rank")
    for b, why in accum.items():
        served = {w for w in weights if b in feeds.get(w, ())}
        of, how = (next(iter(served)), "read into its update") if len(served) == 1 else \
            (next((w for w in weights if b.endswith("." + w)), None), "by name")
        roles[b] = ParamRole("accumulation", of, why + (f"; serves {of} ({how})" if of else ""))
    inference = not fused and not written and not accum and not any(t("phase", n) == "backward" for n in dump.nodes())
    for name in held:
        role = roles.get(name)
        if role is None and inference and name in computed:
            roles[name] = ParamRole("weight", None, "forward work computes with it, and nothing in this step is "
                                    "backward or updates a parameter (inference)", updated=False)
        elif role is None:
            roles[name] = ParamRole("other", None, "no optimizer update or accumulation writes it")
        elif role.of is not None and roles.get(role.of, role).role == "unused" and role.role != "hyperparameter":
            roles[name] = ParamRole("unused", role.of, role.why + f"; serves {role.of}, read by no work here")
    return {name: roles[name] for name in held}
