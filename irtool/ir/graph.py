"""The dump as a networkx MultiDiGraph.

Nodes are keyed by `Node.uid` (`graph/%N`), parameters by their reference (`%para3_w`) and
subgraphs by `@name`. Edges run producer -> consumer and carry `kind`:
- `data`: a value input, with `index` (the argument position);
- `control`: a monad or ordering input (the U/IO monads of Load/UpdateState, the second input of
  Depend, any input of UpdateState), so that data-flow algorithms can skip them;
- `call`: a node that calls a subgraph (`call @g`, `Partial(@g, ...)`, `Switch` branches) -> the
  subgraph.
A reference that names nothing in the dump is not dropped silently: it is listed in the graph
attribute `unresolved` as `(node uid, reference)`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # networkx costs ~14 MB and 0.3 s to import: only loaded when a graph is built
    import networkx as nx

from .model import Dump, Node
from .records import Ref, param_number

# Inputs of these operators that only order side effects rather than carry data.
_CONTROL_INPUTS = {"Depend": lambda i: i >= 1, "UpdateState": lambda i: True}


def _is_control(node: Node, index: int, ref: Ref, producer_op: str | None) -> bool:
    rule = _CONTROL_INPUTS.get(node.op)
    if rule is not None and rule(index):
        return True
    return producer_op == "UpdateState" or ref.name.endswith("_u") and ref.kind == "param"


def node_attributes(node: Node) -> dict:
    """The attributes a graph node carries: the model's eager fields, and the node itself."""
    return {"kind": "node", "op": node.op, "name": node.name, "subgraph": node.graph,
            "scope": node.scope or "", "line": node.line, "model": node}


def build_graph(dump: Dump) -> nx.MultiDiGraph:
    """Build the graph of every subgraph of `dump` (see the module docstring)."""
    import networkx as nx

    g = nx.MultiDiGraph(path=dump.path, entry=dump.entry, unresolved=[])
    for p in dump.params:
        g.add_node(p.ref, kind="param", name=p.name, line=p.line, model=p)
    for sub in dump.subgraphs:
        g.add_node(f"@{sub.name}", kind="subgraph", name=sub.name, line=sub.line, model=sub)
        for ref in sub.params:
            if ref not in g:
                g.add_node(ref, kind="param", name=ref.split("_", 1)[-1], line=sub.line,
                           model=None, subgraph=sub.name)
        for n in sub.nodes:
            g.add_node(n.uid, **node_attributes(n))
    unresolved: list[tuple[Node, str]] = []
    for source, target, kind, index in links(dump, unresolved):
        g.add_edge(source, target, kind=kind, index=index)
    g.graph["unresolved"] = [(n.uid, ref) for n, ref in unresolved]
    return g


def links(dump: Dump, unresolved: list[tuple[Node, str]]) -> Iterator[tuple[str, str, str, int]]:
    """The graph's edges as `(from, to, kind, index)`, each reference resolved as the module docstring says; a
    reference that names nothing goes to `unresolved` as `(node, reference)` instead (`check` asks for these
    alone, without building the graph)."""
    param_by_index = {param_number(ref): ref for ref in [p.ref for p in dump.params]
                      + [ref for sub in dump.subgraphs for ref in sub.params]}
    by_name = {sub.name: {n.name: n.uid for n in sub.nodes} for sub in dump.subgraphs}
    for sub in dump.subgraphs:
        local = {n.key: n for n in sub.nodes}
        for n in sub.nodes:
            for inp in n.inputs:
                for ref in (inp.ref,) if inp.ref else inp.nested:
                    source = _resolve(ref, sub.name, local, by_name, param_by_index)
                    if source is None:
                        if ref.name != "@FuncUnion":  # a marker, not a graph
                            unresolved.append((n, ref.name))
                        continue
                    if ref.kind == "graph":
                        yield n.uid, source, "call", inp.index
                        continue
                    producer = local.get(ref.name) if ref.kind == "node" else None
                    control = _is_control(n, inp.index, ref, producer.op if producer else None)
                    yield source, n.uid, "control" if control else "data", inp.index
            if n.callee[0] in "@%$":
                target = _resolve(Ref({"@": "graph", "%": "node", "$": "free"}[n.callee[0]],
                                      n.callee.split("[")[0]), sub.name, local, by_name, param_by_index)
                if target is None:
                    unresolved.append((n, n.callee))
                elif n.callee[0] == "@":
                    yield n.uid, target, "call", -1
                else:
                    yield target, n.uid, "data", -1


def _resolve(ref: Ref, graph: str, local: dict, by_name: dict, params: dict) -> str | None:
    if ref.kind == "node":
        n = local.get(ref.name)
        return n.uid if n else None
    if ref.kind == "param":
        return params.get(param_number(ref.name))
    if ref.kind == "graph":
        name = ref.name[1:]
        return f"@{name}" if name in by_name else None
    owner, _, item = ref.name[3:-1].partition(":")  # $(@g:item)
    if item.startswith("para") and item[4:5].isdigit():
        return params.get(param_number(item))
    return by_name.get(owner, {}).get(item)


def data_graph(g: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """A view with only data edges between nodes (no control, no call edges)."""
    import networkx as nx

    return nx.subgraph_view(g, filter_edge=lambda u, v, k: g.edges[u, v, k]["kind"] == "data")
