"""Redistribution chains: why a tensor-layout conversion exists (docs/parallel.md §13).

MindSpore inserts a chain of operators (Reshape, AllGather, Split, TupleGetItem, MakeTuple,
Concat, StridedSlice, AlltoAll, ...) where an operator's output layout differs from the layout
its consumer's strategy needs. In the forward graph those nodes carry an instance name
`redistribution_op_*` or the primal attribute `forward_comm_node_unique_id`; their bprop nodes
carry `forward_comm_node_unique_id` and `forward_unique_id` (the forward node's `unique_id`). A
chain is a connected set of such nodes (linked by data); its producer is the first operator
upstream, its consumer the first operator downstream, with their strategies.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..ir import Node, source_ref
from .links import NodeIndex
from .records import Bytes, ChainEnd, CommNode, Group, Phase, RedistributionChain, Strategy, per_step
from .rules import COMM_OPS
from .sizes import input_type
from .strategies import attr_value
from .traffic import node_wire_bytes

if TYPE_CHECKING:
    from .table import NodeFacts

_REDIST = re.compile(r"^grad_?redistribution_op|^redistribution_op")
_OTHER_INSERTED = re.compile(r"^(grad)?forward_op|^\d+[A-Za-z]+\d+$")
FC = "forward_comm_node_unique_id"
# Nodes between chain nodes that only pass values along (Split -> TupleGetItem... -> MakeTuple -> Concat).
_TUPLE_OPS = frozenset({"TupleGetItem", "MakeTuple"})
# Looking for a producer or consumer, walk through these: they do not change a layout.
_THROUGH = frozenset({"TupleGetItem", "Depend", "Load", "MakeTuple", "UpdateState"})


def inserted(instance: str | None) -> bool:
    """Whether an instance name is one the parallel pass gives the operators it inserts (a
    redistribution's `redistribution_op_...`, a row-parallel MatMul's `forward_op_...`)."""
    return bool(instance) and bool(_REDIST.match(instance) or _OTHER_INSERTED.match(instance))  # type: ignore[arg-type]


def user_source(node: Node | None) -> str | None:
    """The user's line of a node: the last `# In file` line outside site-packages, as
    `path:line code` (the last line of all when every frame is in a library)."""
    if node is None:
        return None
    last = None
    for text in reversed(node.sources):  # from the end: the last user frame is usually near it
        m = source_ref(text)
        if m is None:
            continue
        entry = f"{m.path}:{m.line} {m.code}"
        if "site-packages" not in m.path:
            return entry if "site-packages" not in entry else _user_source_all(node.sources)
        last = last or entry
    return last


def _user_source_all(sources: tuple[str, ...]) -> str | None:
    """user_source reading every line: a user frame whose code mentions site-packages."""
    found = None
    for text in sources:
        m = source_ref(text)
        if m is None:
            continue
        entry = f"{m.path}:{m.line} {m.code}"
        if "site-packages" not in m.path:
            found = entry
        elif found is None or "site-packages" in found:
            found = entry
    return found


def _split(full: Any, piece: Any) -> Any:
    """Pieces per dimension, full / slice, when both are shapes of the same rank that divide."""
    if not isinstance(full, (tuple, list)) or not isinstance(piece, (tuple, list)) or len(full) != len(piece):
        return None
    if not all(isinstance(a, int) and isinstance(b, int) and b > 0 and a % b == 0 for a, b in zip(full, piece)):
        return None
    return tuple(a // b for a, b in zip(full, piece))


def _item(value: Any, index: int | None) -> Any:
    """`value[index]` for a tuple of per-input (or per-output) values, else None."""
    if index is None or not isinstance(value, (tuple, list)) or index >= len(value):
        return None
    return value[index]


def _shape_of(t: Any, index: int | None = None) -> Any:
    if t is None:
        return None
    shape = t.shape
    if t.kind == "Tuple" and index is not None:
        return _item(shape, index)
    return shape


class _Graph:
    """One subgraph's nodes by key with users, for walking around a chain."""

    def __init__(self, index: NodeIndex, graph: str) -> None:
        self.index = index
        self.nodes = index.nodes[graph]

    def node_input(self, node: Node, i: int) -> Node | None:
        ins = node.inputs
        ref = ins[i].ref if i < len(ins) else None
        return self.nodes.get(ref.name) if ref is not None and ref.kind == "node" else None

    def node_inputs(self, node: Node) -> list[tuple[int, Node]]:
        out = []
        for inp in node.inputs:
            if inp.ref is not None and inp.ref.kind == "node" and inp.ref.name in self.nodes:
                out.append((inp.index, self.nodes[inp.ref.name]))
        return out


def redistribution_chains(t: NodeFacts) -> list[RedistributionChain]:
    """Every redistribution chain of the dump of fact table `t`: forward (and recompute) chains first
    in print order, then backward ones, each linked to the forward chain it is the bprop of. Before
    validate (`kind` `pre` / `spe`) the printed types are logical or stale (§1): no slice shapes then."""
    dump, kind, groups = t.dump, t.get("file_kind"), t.get("groups")
    silent = t.get("silent")
    comm_of = {n: c for n, c in t.column("comm").items() if n not in silent}
    not_redist = {n for n, c in comm_of.items() if not c.redistributes}
    strat: dict[Node, Strategy] = t.column("strategy")
    marked: dict[Node, tuple[bool, bool]] = {}  # (named a redistribution, names a forward communication node)
    for n in dump.nodes():  # one search of each node's text: most name neither
        named, fc = _named(n), n.mentions(FC)
        if named or fc:
            marked[n] = (named, fc)
    if not marked:
        return []
    index: NodeIndex = t.get("node_index")
    in_graphs = {n.graph for n in marked}
    neither = (False, False)
    forward: list[tuple[list[Node], _Graph]] = []
    backward: list[tuple[list[Node], _Graph]] = []
    for g in dump.subgraphs:
        if g.name not in in_graphs:
            continue
        graph = _Graph(index, g.name)
        members: dict[str, bool] = {}  # key -> named (redistribution instance) or not
        for n in g.nodes:
            named, fc = marked.get(n, neither)
            inst = (n.instance_name or "") if named or fc else ""
            if named and _REDIST.match(inst):
                members[n.key] = True
            elif fc and n not in not_redist and not _OTHER_INSERTED.match(inst) and n.op != "Return":
                members[n.key] = False
            elif n.op in _TUPLE_OPS and any(k in members for k in n.node_refs):
                ins = graph.node_inputs(n)  # split only when the text names a member
                if ins and all(x.key in members for _, x in ins):
                    members[n.key] = False
        parent = {k: k for k in members}
        is_bwd = {k: t("phase", graph.nodes[k]) == "backward" for k in members}
        for key in members:
            for ref in graph.nodes[key].node_refs:  # the nodes it reads (without splitting its arguments)
                if ref in members and is_bwd[ref] == is_bwd[key]:
                    parent[_find(parent, ref)] = _find(parent, key)
        parts: dict[str, list[Node]] = {}
        for key in members:
            parts.setdefault(_find(parent, key), []).append(graph.nodes[key])
        for nodes in parts.values():
            if not any(members[n.key] for n in nodes):
                continue  # parallel-inserted nodes of another kind (forward_op replace graphs)
            nodes.sort(key=lambda n: n.line)
            while len(nodes) > 1 and nodes[-1].op == "MakeTuple":  # packs chain outputs for an operator
                nodes.pop()
            (backward if is_bwd[nodes[0].key] else forward).append((nodes, graph))
    chains: list[RedistributionChain] = []
    fwd_ids: dict[Node | str, int] = {}  # a forward member, or its forward_comm_node_unique_id -> chain id
    for nodes, graph in sorted(forward, key=lambda p: (p[0][0].line, p[0][0].graph)):
        chain = _chain(t, len(chains), nodes, graph, comm_of, groups, strat, kind == "post")
        chains.append(chain)
        for n in nodes:
            fwd_ids.setdefault(n, chain.id)
            fc = n.scalar_attr(FC)
            if fc is not None:
                fwd_ids.setdefault(f"{FC}:{fc}", chain.id)
    pieces = [(part, graph, hit) for nodes, graph in backward for hit, part in _by_forward(t, nodes, graph, fwd_ids)]
    for nodes, graph, hit in sorted(pieces, key=lambda p: (p[0][0].line, p[0][0].graph)):
        if not any(_REDIST.match(n.instance_name or "") for n in nodes):
            continue  # the bprop of a local slice: no communication
        chain = _chain(t, len(chains), nodes, graph, comm_of, groups, strat, kind == "post")
        if hit is not None:
            chain.of_chain = hit
            chain.producer, chain.consumer = chains[hit].producer, chains[hit].consumer
            chain.consumers = list(chains[hit].consumers)
        chains.append(chain)
    return chains


def _named(n: Node) -> bool:
    """A redistribution's instance name (`redistribution_op_...`); the text is searched first: most of
    40 000 nodes do not name one, and reading the instance name costs more."""
    return "redistribution_op" in n.text and n.mentions("instance name") and \
        "redistribution_op" in (n.instance_name or "")


def _find(parent: dict[str, str], k: str) -> str:
    """Union-find root, halving the path as it goes."""
    while parent[k] != k:
        parent[k] = parent[parent[k]]
        k = parent[k]
    return k


def _forward_hit(t: NodeFacts, n: Node, fwd_ids: dict[Node | str, int]) -> int | None:
    """The forward chain a bprop node belongs to: its forward counterpart's, else by `forward_comm_node_unique_id`."""
    fwd = t("forward", n)
    hit = fwd_ids.get(fwd) if fwd is not None else None
    fc = n.scalar_attr(FC) if hit is None else None
    return fwd_ids.get(f"{FC}:{fc}") if fc is not None else hit


def _by_forward(t: NodeFacts, nodes: list[Node], graph: _Graph,
                fwd_ids: dict[Node | str, int]) -> list[tuple[int | None, list[Node]]]:
    """A backward component split by the forward chain each node is the bprop of: one data-linked
    set of bprop nodes may serve several forward chains (two inputs of one operator). A node that
    names no forward node (a MakeTuple between bprops) goes with its first input's part."""
    part: dict[str, int | None] = {}
    for n in nodes:  # print order: inputs first
        hit = _forward_hit(t, n, fwd_ids)
        if hit is None:
            hit = next((part[x.key] for _, x in graph.node_inputs(n) if x.key in part), None)
        part[n.key] = hit
    out: dict[int | None, list[Node]] = {}
    for n in nodes:
        out.setdefault(part[n.key], []).append(n)
    for items in out.values():
        while len(items) > 1 and items[-1].op == "MakeTuple":  # joins bprops of two chains: part of neither
            items.pop()
    return list(out.items())


def _chain(t: NodeFacts, cid: int, nodes: list[Node], graph: _Graph, comm_of: dict[Node, CommNode],
           groups: dict[str, Group], strat: dict[Node, Strategy], typed: bool) -> RedistributionChain:
    keys = {n.key for n in nodes}
    comms = [comm_of[n] for n in nodes if n in comm_of]
    phase: Phase = comms[0].phase if comms else t("phase", nodes[0])
    tensor, wire = Bytes(), Bytes()  # over one step: each run of a node counted
    for c in comms:
        tensor += c.step_bytes
        wire += per_step(node_wire_bytes(c, groups), c.runs)
    group_names: list[str] = []
    ranks: list[Any] = []
    for c in comms:
        if c.group and c.group not in group_names:
            group_names.append(c.group)
            ranks.append(c.group_ranks)
    dtype = next((c.dtype for c in comms if c.dtype), None)
    if dtype is None:
        out = nodes[0].output_type
        dtype = out.dtype if out is not None else None
    producer = _producer(nodes, keys, graph, strat)
    consumers = _consumers(nodes, keys, graph, strat)
    if not typed:  # shapes printed before validate are logical or stale
        for end in [producer, *consumers]:
            if end is not None:
                end.slice_shape = end.split = None
    return RedistributionChain(
        id=cid, phase=phase, nodes=[f"{n.key} {n.op}" for n in nodes], comm=[c.node for c in comms],
        comm_ops=[c.op for c in comms], groups=group_names, group_ranks=ranks, dtype=dtype,
        # a chain's cost is one figure: unknown when one node's is (0 for a local chain)
        bytes=None if tensor.unknown else tensor.total, wire_bytes=None if wire.unknown else wire.total,
        producer=producer, consumer=consumers[0] if consumers else None, consumers=[c.node for c in consumers],
        first_line=nodes[0].line, scope=nodes[0].scope or "", lines=[n.line for n in nodes])


def _end(node: Node, strat: dict[Node, Strategy], index: int | None, as_consumer: bool,
         piece: Any) -> ChainEnd:
    s = strat.get(node)
    if as_consumer:
        strategy = _item(s.in_strategy, index) if s else None
        layout = _item(s.in_layout, index) if s else None
        full = _item(attr_value(node, "origin_input_shapes"), index)
    else:
        strategy = (s.out_strategy or s.in_strategy) if s else None
        layout = (_item(s.out_layout, index or 0) if isinstance(s.out_layout, (tuple, list)) else s.out_layout) \
            if s else None
        full = attr_value(node, "origin_output_shape")
        if index is not None and isinstance(full, (tuple, list)) and full and isinstance(full[0], (tuple, list)):
            full = _item(full, index)
    return ChainEnd(node=node.uid, op=node.op, name=node.instance_name or node.name, line=node.line,
                    input_index=index, strategy=strategy, layout=layout, full_shape=full, slice_shape=piece,
                    split=_split(full, piece), source=user_source(node), scope=node.scope or "")


def _producer(nodes: list[Node], keys: set[str], graph: _Graph, strat: dict[Node, Strategy]) -> ChainEnd | None:
    """The first operator upstream of the chain's first external input (through tuple items,
    Load, Depend and communication of other kinds), or the parameter it reads."""
    for n in nodes:
        for inp in n.inputs:
            ref = inp.ref
            if ref is None or (ref.kind == "node" and ref.name in keys):
                continue
            t = input_type(n, inp.index)
            piece = _shape_of(t)
            if ref.kind != "node":
                if ref.kind not in ("param", "free"):
                    continue
                return _parameter_end(ref.name, piece)
            x = graph.nodes.get(ref.name)
            item: int | None = None
            steps = 0
            while x is not None and steps < 16 and x not in strat and (x.op in _THROUGH or x.op in COMM_OPS):
                steps += 1
                if x.op == "TupleGetItem" and item is None and len(x.inputs) > 1:
                    v = x.input_value(1)
                    item = v if isinstance(v, int) and not isinstance(v, bool) else None
                nxt = graph.node_input(x, 0)
                if nxt is None:
                    first = x.inputs[0].ref if x.inputs else None
                    if x.op == "Load" and first is not None and first.kind in ("param", "free"):
                        return _parameter_end(first.name, piece)  # a stored parameter, named, not its Load
                    break
                x = nxt
            if x is not None:
                return _end(x, strat, item, False, piece)
    return None


def _parameter_end(ref: str, piece: Any) -> ChainEnd:
    """The producer end of a chain that reads a parameter (`%para3_l1.w` -> `l1.w`)."""
    name = ref.rstrip(")").split(":")[-1].lstrip("%")
    return ChainEnd(node=ref, op="Parameter", name=name.split("_", 1)[-1], slice_shape=piece)


def _consumers(nodes: list[Node], keys: set[str], graph: _Graph, strat: dict[Node, Strategy]) -> list[ChainEnd]:
    """The first operators downstream of the chain (through tuple items and Depend), each with the
    input the chain feeds."""
    out: list[tuple[bool, ChainEnd]] = []  # (no strategy, the end)
    seen: set[str] = set()
    for n in nodes:
        stack = [(n, u) for u in graph.index.users(n) if u.key not in keys]
        steps = 0
        while stack and steps < 64:
            steps += 1
            src, u = stack.pop(0)
            if u.key in seen:
                continue
            seen.add(u.key)
            if u not in strat and u.op in ("TupleGetItem", "Depend", "MakeTuple") and u.op != "Return":
                stack.extend((u, w) for w in graph.index.users(u) if w.key not in keys)
                continue
            if u.op in ("Return", "UpdateState"):
                continue
            index = next((i.index for i in u.inputs if i.ref is not None and i.ref.name == src.key), None)
            t = input_type(u, index) if index is not None else None
            out.append((u not in strat, _end(u, strat, index, True, _shape_of(t))))
    out.sort(key=lambda e: (e[0], e[1].line))
    return [e for _, e in out]
