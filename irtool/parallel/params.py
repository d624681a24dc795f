"""Which parameter each reference names, who reads it, and the layer of every node by data flow
(the `parameters` and `layers` passes of the fact table, docs/parallel.md §16).

A parameter is identified by its header name (`model.layers.3.attention.wq.weight`). Subgraphs
name it through their own parameters (`call @g(%para7_w, ...)`: @g's first parameter is `w`; a
lazy-inline body receives every layer's weights so) or free variables (`$(@g:para7_w)`).

A layer is a repeated cell, identified by its index: the first `.N.` component of the names of the
parameters it owns (`model.layers.3.attention.wq.weight`, `blocks.2.w1`, `0.attention.wq.weight`;
optimizer states and accumulation buffers carry their weight's name behind a prefix). A node's
layer is the layer whose parameters it reads, else the layer of the activations it reads (the
most downstream one: a residual `Add` of layer L reads layer L-1's output and layer L's), never
its printed scope: MindSpore prints shared code (a LayerNorm's gradient, an MoE router) under the
first layer's scope. A node reading a weight of no layer (the embedding, a final norm, the head)
is no layer's work, and so is the loss that reads only the head's output.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from typing import TYPE_CHECKING, Callable, Sequence

from ..ir import Dump, Node, Ref

if TYPE_CHECKING:
    from .table import NodeFacts

_LAYER = re.compile(r"(?:^|\.)(\d+)\.")
_THROUGH = frozenset({"Load", "Depend", "TensorMove", "Cast"})  # pass a parameter's value on
# ... and the optimizer-parallel gathers of a sharded weight: what a weight's value is still the weight after
WEIGHT_VALUE = _THROUGH | frozenset({"AllGather", "_MicroStepAllGather", "_MiniStepAllGather"})


def follow_value(n: Node, index: int, local: dict[str, Node],
                 through: Callable[[Node], bool]) -> tuple[Ref | None, Node | None]:
    """Where input `index` of `n` comes from, followed up the first inputs of the nodes `through` accepts (what passes a
    value on; at most 8): the reference it stops at (not a node's: a parameter's, a free variable's...) and the node
    it stops at, when a node of the graph (`local`) `through` does not accept; (None, None) where no input is."""
    for _ in range(8):
        ins = n.inputs
        ref = ins[index].ref if len(ins) > index else None
        index = 0
        if ref is None or ref.kind != "node":
            return ref, None
        src = local.get(ref.name)
        if src is None or not through(src):
            return ref, src
        n = src
    return None, None


_PICK = frozenset({"TupleGetItem", "tuple_getitem"})
_PACK = frozenset({"MakeTuple", "make_tuple"})


def picked(n: Node, local: dict[str, Node]) -> Ref | None:
    """The element `TupleGetItem(%t, I64(i))` takes of a `MakeTuple` `%t` of its graph (`local`: nodes by
    key): input i's reference, a node or a parameter; None for any other node."""
    if n.op not in _PICK:
        return None
    refs = n.node_refs
    tup = local.get(refs[0]) if refs else None
    if tup is None or tup.op not in _PACK:
        return None
    i = n.input_value(1)
    ins = tup.inputs
    return ins[i].ref if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(ins) else None


def layer_index(name: str) -> int | None:
    """The layer a parameter name belongs to: its first `.N.` component (`model.layers.3.w` -> 3)."""
    m = _LAYER.search(name)
    return int(m.group(1)) if m else None


def _key(ref: str) -> str:
    """`%para13_w` and `$(@g:para13_w)` (a free variable naming a parameter) -> `%para13_w`."""
    if ref.startswith("$("):
        return "%" + ref[ref.index(":") + 1 : -1]
    return ref


def param_name(ref: str) -> str:
    """The name a parameter reference carries: `%para13_w`, `$(@g:para13_w)` -> `w`."""
    key = _key(ref)
    return key[key.index("_") + 1 :]


@dataclass
class Params:
    """Header parameters by every reference that names one, and the nodes reading each."""

    names: dict[str, str]  # reference (`%paraN_x`) -> header parameter name
    readers: dict[str, list[Node]] = field(default_factory=dict)  # header name -> nodes naming it, print order

    def name_of(self, ref: str) -> str | None:
        return self.names.get(_key(ref))

    def reached_by(self, node: Node, local: dict[str, Node], depth: int = 6) -> list[str]:
        """The header parameters `node` reads directly or through nodes passing a parameter's value on
        (`Load`, `Cast`, `Depend`, an optimizer-parallel gather, one element of a tuple: a kernel graph
        packs what a call passed into a `MakeTuple` and reads it back with `TupleGetItem`) of its
        subgraph `local` (nodes by key)."""
        element = picked(node, local)
        if element is not None:  # one element of a tuple, not every one
            if element.kind != "node":
                name = self.name_of(element.name)
                return [name] if name is not None else []
            srcs = [local.get(element.name)]
        else:
            srcs = [local.get(ref) for ref in node.node_refs]
        out = self.read_by(node)
        if depth:
            for src in srcs:
                if src is not None and (src.op in WEIGHT_VALUE or src.op in _PICK):
                    out += [p for p in self.reached_by(src, local, depth - 1) if p not in out]
        return out

    def read_by(self, node: Node) -> list[str]:
        """The header parameters `node` names (directly, not through other nodes)."""
        out = []
        for ref in node.param_refs:
            name = self.names.get(_key(ref))
            if name is not None and name not in out:
                out.append(name)
        return out


def _callee(n: Node, graphs: dict[str, object]) -> tuple[object | None, int]:
    """(subgraph, offset of its first parameter among `n`'s inputs) for `call @g(...)` and
    `Partial(@g, ...)` (which binds @g's first parameters); (None, 0) otherwise."""
    if n.callee.startswith("@"):
        return graphs.get(n.callee[1:]), 0
    bound = n.bound_graph
    return (graphs.get(bound), 1) if bound is not None else (None, 0)


def parameters(dump: Dump) -> Params:
    """Header parameters by reference, plus each subgraph parameter that every call site passes one
    header parameter to, to a fixed point; then who reads each."""
    names = {p.ref: p.name for p in dump.params}
    graphs = {g.name: g for g in dump.subgraphs}
    keys: dict[str, dict[str, Node]] = {}  # the subgraphs holding call sites, by node key
    sites = [(n, *_callee(n, graphs)) for g in dump.subgraphs for n in g.nodes
             if n.callee.startswith("@") or n.op == "Partial"]
    sites = [s for s in sites if s[1] is not None]

    def named(n: Node, j: int, depth: int = 0) -> str | None:
        """The header parameter input `j` of `n` is, directly or loaded (`Load(%para7_w, U)`)."""
        ins = n.inputs
        arg = ins[j].ref if j < len(ins) else None
        if arg is None:
            return None
        if arg.kind in ("param", "free"):
            return names.get(_key(arg.name))
        if n.graph not in keys:
            keys[n.graph] = {x.key: x for x in graphs[n.graph].nodes}
        src = keys[n.graph].get(arg.name) if arg.kind == "node" else None
        return named(src, 0, depth + 1) if src is not None and src.op in _THROUGH and depth < 3 else None

    for _ in range(4):  # nesting depth of calls seen in lazy-inline dumps is 2-3
        seen: dict[str, set[str | None]] = {}
        for n, target, shift in sites:
            for i, ref in enumerate(target.params):  # type: ignore[attr-defined]
                seen.setdefault(ref, set()).add(named(n, i + shift))
        grew = False
        for ref, found in seen.items():
            if len(found) == 1 and None not in found and ref not in names:
                names[ref] = next(iter(found))  # type: ignore[assignment]
                grew = True
        if not grew:
            break
    params = Params(names)
    for n in dump.nodes():
        if n.param_refs:  # most nodes name no parameter
            for name in params.read_by(n):
                params.readers.setdefault(name, []).append(n)
    return params


def param_shapes(t: NodeFacts) -> dict[str, tuple]:
    """Header parameter name -> its printed shape (the `param_shapes` fact)."""
    return {p.name: p.type.shape for p in t.dump.params if p.type is not None and isinstance(p.type.shape, tuple)}


# Inputs that only order execution: the later inputs of Depend and Load (`Load(%para, U)`: a kernel graph
# orders it by a `Depend` where the front end prints a monad), every input of UpdateState.
_ORDERING = frozenset({"UpdateState", "Depend", "Load"})  # the nodes `data_refs` does not read all of


def data_refs(n: Node) -> Sequence[str]:
    if n.op == "UpdateState":
        return []
    if n.op in ("Depend", "Load"):
        first = n.first_node_ref
        return [first] if first is not None else []
    return n.node_refs


def _graph_order(dump: Dump, graphs: dict[str, object]) -> tuple[list, dict[Node, tuple[object, int]]]:
    """Subgraphs with each one after the graphs that call or bind it (a forward graph before the bprop
    graph it binds with `Partial`), print order among the rest and in a cycle; and the nodes that call
    or bind one (`_callee`)."""
    deps: dict[str, set[str]] = {g.name: set() for g in dump.subgraphs}
    callers: dict[Node, tuple[object, int]] = {}
    for g in dump.subgraphs:
        for n in g.nodes:
            if n.op != "Partial" and not n.callee.startswith("@"):  # `_callee`'s answer for most nodes
                continue
            target, shift = _callee(n, graphs)
            if target is None:
                continue
            callers[n] = (target, shift)
            if target.name != g.name:  # type: ignore[attr-defined]
                deps[target.name].add(g.name)  # type: ignore[attr-defined]
    try:
        names = list(TopologicalSorter(deps).static_order())
    except CycleError:
        names = list(deps)
    return [graphs[name] for name in names], callers


@dataclass
class LayerFlow:
    """The `layer` of every node that has one, and where in the network each forward node of no layer
    is (`after`: the most downstream layer whose output it reads, the head and loss after the last;
    absent before the layers): what tells a top cell's operator before the layers from one after them."""

    layer: dict[Node, int]
    after: dict[Node, int]


def _outside_weights(dump: Dump) -> set[str]:
    """Header parameters of no layer that are weights (`Ref`, as a `Parameter` prints): the embedding,
    a final norm, the head. A network input (`Tensor`, an attention mask read by every layer) is none."""
    out = set()
    for p in dump.params:
        ty = p.type
        if layer_index(p.name) is None and ty is not None and ty.kind == "Ref":
            out.add(p.name)
    return out


def layer_flow(t: NodeFacts) -> LayerFlow:
    """The layer of every node that has one (module docstring): own parameters first (a node reading a
    weight of no layer, the head's MatMul or a final norm's scale, loaded, cast, gathered or passed into
    a subgraph, is no layer's work, and so is what reads only such work's values: the loss); then forward
    (and recompute, optimizer) work by the layers of its inputs, in dependency order within each
    subgraph; then backward work by its forward counterpart, else its inputs. A subgraph parameter that
    is no header parameter carries the activation every call or `Partial` passes to it (a bprop graph's
    saved forward values): it has that activation's layer when they agree."""
    dump = t.dump
    params: Params = t.get("parameters")
    owns: dict[Node, set[int]] = {}  # the layers of the parameters each node reads (from who reads each)
    outside: set[Node] = set()  # nodes reading a weight of no layer (directly, or a value in `weights`)
    no_layer = _outside_weights(dump)
    for name, readers in params.readers.items():
        index = layer_index(name)
        if index is not None:
            for n in readers:
                owns.setdefault(n, set()).add(index)
        elif name in no_layer:
            outside.update(readers)
    graphs = {g.name: g for g in dump.subgraphs}
    out: dict[Node, int] = {}
    after: dict[Node, int] = {}
    weights: set[Node] = set()  # nodes whose value is a weight of no layer (loaded, cast, gathered)
    carried: dict[str, set[int | None]] = {}  # subgraph parameter -> layers of the values passed to it
    carried_weight: dict[str, set[bool]] = {}  # subgraph parameter -> whether each value passed is such a weight
    passed: set[str] = set()  # subgraph parameters every call passes such a weight to
    deferred: list[tuple[Node, list[Node]]] = []
    ordered, callers = _graph_order(dump, graphs)
    by_key = t.get("by_key")
    for g in ordered:
        local = by_key[g.name]
        deps: dict[Node, list[Node]] = {}
        get = local.get
        for n in g.nodes:  # one element of a tuple of this graph is that element, not the whole tuple
            op = n.op
            element = picked(n, local) if op in _PICK else None
            if element is None:
                deps[n] = [x for r in (data_refs(n) if op in _ORDERING else n.node_refs) if (x := get(r)) is not None]
            elif element.kind == "node":
                deps[n] = [local[element.name]] if element.name in local else []
            elif (name := params.name_of(element.name)) is not None:  # a parameter: read, as its readers are
                index = layer_index(name)
                if index is not None:
                    owns.setdefault(n, set()).add(index)
                elif name in no_layer:
                    outside.add(n)
                deps[n] = []
            else:
                deps[n] = [x for r in data_refs(n) if (x := local.get(r)) is not None]
        order = list(g.nodes)
        seen: set[Node] = set()
        for n in order:  # MindSpore prints producers first: then print order is a dependency order already
            if not seen.issuperset(deps[n]):
                break
            seen.add(n)
        if len(seen) < len(order):
            try:
                order = list(TopologicalSorter({n: d for n, d in deps.items()}).static_order())
            except CycleError:  # a malformed graph: print order
                order = list(g.nodes)
        layer_of = out.get
        for n in order:
            own = owns.get(n)
            if own is not None:
                if len(own) == 1:
                    out[n] = next(iter(own))
                continue  # or it reads several layers' parameters (a fused update, a tuple of gradients): none
            ins = deps[n]
            away = n in outside
            if not away and ((weights and not weights.isdisjoint(ins)) or (
                    passed and any(_key(r) in passed for r in n.param_refs))):
                outside.add(n)
                away = True
            if away and (n.op in WEIGHT_VALUE or n.op in _PICK):
                weights.add(n)
            if t("phase", n) in _LATER:  # a copy reads backward plumbing (a kernel graph's Depend)
                deferred.append((n, ins))
                continue
            if len(ins) == 1 and not carried:  # the usual node: one input, no list made
                found = layer_of(ins[0])
                if found is not None and not away:
                    out[n] = found
                    continue
                found = [] if found is None else [found]
            else:
                found = [x for d in ins if (x := layer_of(d)) is not None]
                if carried:
                    found += _carried(n, carried)
                if not away and found and not (n.op == "MakeTuple" and len(set(found)) > 1):
                    out[n] = max(found)
                    continue
            below = [x for d in ins if (x := out.get(d, after.get(d))) is not None] + found
            if below and n.op != "MakeTuple":
                after[n] = max(below)
        for n in g.nodes:  # what this graph passes on to the graphs it calls or binds
            if n not in callers:
                continue
            target, shift = callers[n]
            for i, arg in enumerate(n.inputs[shift:]):
                if i < len(target.params) and arg.ref is not None and arg.ref.kind == "node":  # type: ignore[attr-defined]
                    src = local.get(arg.ref.name)
                    param = target.params[i]  # type: ignore[attr-defined]
                    carried.setdefault(param, set()).add(out.get(src) if src is not None else None)
                    carried_weight.setdefault(param, set()).add(src in weights)
        passed = {p for p, kinds in carried_weight.items() if kinds == {True}}
    for n, ins in deferred:  # print order: forward counterparts and inputs are placed by now where they can be
        fwd = t("forward", n)
        if fwd is not None and fwd in out:
            out[n] = out[fwd]
            continue
        if n in outside or (fwd is not None and fwd in outside):
            continue  # work on a weight of no layer, or the gradient of such work (the head's)
        found = [out[d] for d in ins if d in out] + _carried(n, carried)
        if found and not (n.op == "MakeTuple" and len(set(found)) > 1):
            out[n] = max(found)
    return LayerFlow(out, after)


_LATER = frozenset({"backward", "recompute"})  # phases `layer_flow` places after every graph's forward work


def _carried(n: Node, carried: dict[str, set[int | None]]) -> list[int]:
    """The layers of the activations `n` reads through its subgraph's parameters (one layer each)."""
    found = []
    for ref in n.param_refs:
        layers = carried.get(_key(ref))
        if layers is not None and len(layers) == 1 and None not in layers:
            found.append(next(iter(layers)))
    return found
