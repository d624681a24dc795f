"""The user operator each node of a dump is work of (the `operator`, `operator_params` and `placement`
passes of the fact table, docs/parallel.md §19): the identity that lets two parallel configurations of
one network be compared as one logical graph (`irtool.parallel.logical`).

A user operator is identified by what the user wrote, never by what a configuration adds: its cell
below the wrappers (`scope.user_cell`: `Net/layers-CellList/0-Block`), its operator, its layer (the
`layer` fact, by data flow; for work of no layer where it is, `LayerFlow.after`: a top cell's `MatMul`
before the layers and the one after them are told apart, whichever stages they are on) and its
occurrence among the operators of one micro batch with the same cell, operator and layer, in
creation order (`-opN`). Not its instance name: MindSpore
merges primitives of equal attributes, so two `MatMul`s sharded alike share one instance name
whichever cell they are in (`fc2` and `proj_out`), and a strategy change changes which survives.
Ranks, micro batches, recompute copies and pipeline wrappers are folded away:
- the copies of one operator per micro batch share its key (occurrence counts within a micro batch:
  the `micro` fact, else that of the nearest marked node it reads or that reads it, `_MicroCopy`);
- a recomputed copy (`duplicated`) is its original's work: the node of the same `unique_id`, else (validate
  prints none on copies) the original of the same cell, operator and micro batch reading the same
  weights, else the one of the same rank in creation order;
- a backward node with a forward counterpart is that operator's work;
- a node inside a wrapper cell only (micro-batch slicing, the pipeline's own plumbing), a node the
  parallel pass inserted (a redistribution's Split or Concat, `chains.inserted`), backward work
  without a counterpart (gradient sums, accumulation) and the optimizer's update are no user
  operator's: None (their work counts in their layer's and stage's figures, `logical`).
Communication is no user operator: it is *placed* around the operator it is inserted for — a
gradient or optimizer collective around the operator reading its parameter, a forward Receive
around the first operator reading what it brings, the others around the operator they serve
(`CommNode.serves`, followed through plumbing and other communication; a reduction over several
operators' values, as global-norm clipping's, serves none of them).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from ..ir import Node
from .chains import inserted
from .params import data_refs
from .scope import op_number, user_cell, wrapped

if TYPE_CHECKING:
    from .params import LayerFlow, Params
    from .records import CommNode
    from .table import NodeFacts


@dataclass(frozen=True, order=True)
class OperatorKey:
    """A user operator, the same in every parallel configuration of one network."""

    cell: str  # the user's cell (`scope.user_cell`)
    op: str
    layer: int  # the `layer` fact (data flow); work of no layer: the last layer it reads (the head), -1 before any
    occurrence: int  # among the operators of one micro batch with this cell, op and layer, in creation order

    @property
    def text(self) -> str:
        """`Net/layers-CellList/0-Block/MatMul`, `.../MatMul #1` for the second of its cell and layer."""
        return f"{self.cell}/{self.op}" + (f" #{self.occurrence}" if self.occurrence else "")

    def as_dict(self) -> dict[str, object]:
        return {"cell": self.cell, "op": self.op, "layer": None if self.layer < 0 else self.layer,
                "occurrence": self.occurrence}


_DEPTH = 10  # nodes of no operator walked through (plumbing, communication, calls) to find one


def operator_keys(t: NodeFacts) -> dict[Node, OperatorKey]:
    """Every compute node's user operator (module docstring); nodes of no user operator are absent."""
    params: Params = t.get("parameters")
    by_key = t.get("by_key")
    groups: dict[tuple[str, str, int, int | None], list[Node]] = defaultdict(list)
    copies: dict[tuple[str, str, int, int | None], list[Node]] = defaultdict(list)
    backward: list[Node] = []
    originals = t.get("unique_ids")
    flow: LayerFlow = t.get("layer_flow")
    out: dict[Node, OperatorKey] = {}
    work = [n for n in t.dump.nodes() if t("kind", n) == "compute" and not inserted(n.instance_name)]
    in_wrapper = any(wrapped(n.scope or "") for n in work)  # then the network is what the wrappers hold
    copy_of = _MicroCopy(t)
    for n in work:
        phase = t("phase", n)
        if phase == "backward" or (t("copy", n) and n.unique_id in originals):
            backward.append(n)  # placed below by its counterpart (a copy by the id it shares with its original)
            continue
        if phase == "optimizer":
            continue
        cell = user_cell(n.scope or "", in_wrapper)
        if cell is not None:
            layer = t("layer", n)
            if layer is None:  # work of no layer: where it is (after the last layer it reads, else -1: before)
                layer = flow.after.get(n, -1)
            (copies if t("copy", n) else groups)[(cell, n.op, layer, copy_of(n))].append(n)
    for (cell, op, layer, _), nodes in groups.items():
        for i, n in enumerate(sorted(nodes, key=lambda x: (op_number(x.scope), x.line))):
            out[n] = OperatorKey(cell, op, layer, i)
    for group, nodes in copies.items():  # validate prints no id on a copy: its original by the weights it reads
        candidates = groups.get(group, [])
        ordered = sorted(nodes, key=lambda x: (op_number(x.scope), x.line))
        for i, n in enumerate(ordered):
            reads = set(params.reached_by(n, by_key[n.graph]))
            same = [c for c in candidates if reads and set(params.reached_by(c, by_key[c.graph])) == reads]
            origin = same[0] if len(same) == 1 else (candidates[i] if len(candidates) == len(ordered) else None)
            if origin is not None:
                out[n] = out[origin]
    for n in backward:
        origin = originals.get(n.unique_id) if t("copy", n) else t("forward", n)  # type: ignore[arg-type]
        if origin is not None and origin in out:
            out[n] = out[origin]
    return out


class _MicroCopy:
    """Which micro batch's copy a forward node is, to tell the copies of one operator apart: its `micro`
    fact, else (MindSpore marks not every node: an embedding before the first marked operator) the
    nearest marked node it reads, else the nearest marked node reading it, in its graph. A node with
    neither is no copy (a graph called once per micro batch holds each operator once)."""

    def __init__(self, t: NodeFacts) -> None:
        self.t = t
        self.by_key = t.get("by_key")
        self.users: dict[str, dict[str, list[Node]]] = {}
        self.found: dict[Node, int | None] = {}

    def __call__(self, n: Node) -> int | None:
        own = self.t("micro", n)
        if own is not None:
            return own
        if n not in self.found:
            local = self.by_key[n.graph]
            up = self._nearest(n, lambda m: [x for r in data_refs(m) if (x := local.get(r)) is not None])
            self.found[n] = up if up is not None else self._nearest(n, self._users_of)
        return self.found[n]

    def _users_of(self, n: Node) -> list[Node]:
        users = self.users.get(n.graph)
        if users is None:
            users = self.users[n.graph] = defaultdict(list)
            for x in self.by_key[n.graph].values():
                for r in data_refs(x):
                    users[r].append(x)
        return users.get(n.key, [])

    def _nearest(self, n: Node, step: Any) -> int | None:
        todo, seen = [n], {n}
        for _ in range(_DEPTH):
            later = []
            for m in todo:
                for x in step(m):
                    if x in seen:
                        continue
                    micro = self.t("micro", x)
                    if micro is not None:
                        return micro
                    seen.add(x)
                    later.append(x)
            todo = later
        return None


def operator_params(t: NodeFacts) -> dict[str, OperatorKey]:
    """Header parameter -> the user operator reading it first (print order) in its forward work,
    directly or through what is no operator's (a Load, Cast, the optimizer-parallel AllGather of a
    sharded weight, a redistribution): where its weight bytes, optimizer states and gradient
    communication are placed. A parameter only gathered before a call (cell reuse passes the
    gathered weight into the layer's graph) is placed where the gathered value is used."""
    params: Params = t.get("parameters")
    by_key = t.get("by_key")
    keys = t.column("operator")
    out: dict[str, OperatorKey] = {}
    for n, key in keys.items():
        if t("phase", n) != "forward":
            continue
        local = by_key[n.graph]
        todo, seen = [(n, 0)], {n}
        while todo:
            m, depth = todo.pop()
            c = t("comm", m) if t("kind", m) == "communication" else None
            if c is not None and c.category == "pipeline":
                continue  # a Receive's input orders it (MindSpore passes it a parameter): no value it reads
            for name in params.read_by(m):
                out.setdefault(name, key)
            if depth < _DEPTH:
                for ref in data_refs(m):  # not what only orders it (UpdateState, a Depend's later inputs)
                    src = local.get(ref)
                    if src is not None and src not in seen and src not in keys:
                        seen.add(src)
                        todo.append((src, depth + 1))
    users = _Users(t)
    for n, c in t.column("comm").items():
        if c.parameter and c.parameter not in out and c.phase == "forward":
            key = users.first_operator(n, keys)
            if key is not None:
                out[c.parameter] = key
    return out


class _Users:
    """Who uses each node's value, across calls (a call's argument is the callee's parameter)."""

    def __init__(self, t: NodeFacts) -> None:
        self.graphs = {g.name: g for g in t.dump.subgraphs}
        self.by_graph: dict[str, dict[str, list[Node]]] = {}
        self.t = t

    def of(self, n: Node) -> list[Node]:
        users = self.by_graph.get(n.graph)
        if users is None:
            users = self.by_graph[n.graph] = defaultdict(list)
            for x in self.graphs[n.graph].nodes:
                for ref in x.node_refs:
                    users[ref].append(x)
        out: list[Node] = []
        for u in users.get(n.key, []):
            if self.t("kind", u) != "call":
                out.append(u)
                continue
            at = [i.index for i in u.inputs if i.ref is not None and i.ref.name == n.key]
            for g in u.called_graphs:
                callee = self.graphs.get(g)
                if callee is None:
                    continue
                for i in at:
                    if i < len(callee.params):
                        out += [x for x in callee.nodes if callee.params[i] in x.param_refs]
        return out

    def first_operator(self, start: Node, keys: dict[Node, OperatorKey]) -> OperatorKey | None:
        """The first forward user operator downstream of `start` (breadth first, through nodes of none)."""
        todo, seen = [start], {start}
        for _ in range(_DEPTH):
            later = []
            for n in todo:
                for u in self.of(n):
                    if u in keys and self.t("phase", u) == "forward":
                        return keys[u]
                    if u not in seen and u not in keys:
                        seen.add(u)
                        later.append(u)
            todo = later
        return None


def placements(t: NodeFacts) -> dict[Node, OperatorKey]:
    """Communication node -> the user operator it is inserted around (module docstring)."""
    by_key = t.get("by_key")
    owners = t.get("operator_params")
    keys = t.column("operator")

    def node_of(uid: str) -> Node | None:
        graph, _, key = uid.rpartition("/")
        try:
            return by_key[graph].get(key)
        except KeyError:  # not a graph of this dump
            return None

    memo: dict[tuple[Node, int], OperatorKey | None] = {}  # a reduction's inputs share their producers

    def resolve(n: Node | None, depth: int) -> OperatorKey | None:
        if n is None or depth > _DEPTH:
            return None
        if n in keys:
            return keys[n]
        if (n, depth) not in memo:
            memo[n, depth] = _resolve(n, depth)
        return memo[n, depth]

    def _resolve(n: Node, depth: int) -> OperatorKey | None:
        kind = t("kind", n)
        if kind == "communication":
            c = t("comm", n)
            if c is None:
                return None
            if c.parameter:
                return owners.get(c.parameter)
            return resolve(node_of(c.serves), depth + 1) if c.serves and "/" in c.serves else None
        if kind in ("plumbing", "compute"):  # passes its inputs on; work of no operator (a gradient sum): its inputs'
            return _one(resolve(by_key[n.graph].get(r), depth + 1) for r in data_refs(n))
        if kind == "call" and n.called_graphs:  # what the called graph returns
            try:
                ret = by_key[n.called_graphs[0]].get("Return")
            except KeyError:
                return None
            return resolve(ret, depth + 1)
        return None

    users = _Users(t)

    def place(n: Node, c: CommNode) -> OperatorKey | None:
        if c.parameter:
            return owners.get(c.parameter)
        if c.op == "Receive" and c.phase == "forward":
            # the first operator reading what it brings, also in a graph it is passed to (cell reuse: the
            # layers' graph), not what that graph returns (the loss)
            return users.first_operator(n, keys)
        return resolve(n, 0)

    out: dict[Node, OperatorKey] = {}
    for n, c in t.column("comm").items():
        key = place(n, c)
        if key is not None:
            out[n] = key
    return out


def _one(keys: Iterable[OperatorKey | None]) -> OperatorKey | None:
    """The one operator that values reaching a node come from (those of none aside), else None: a
    reduction over many operators' values (the global norm of every gradient, the overflow check) serves
    none of them, whichever its first input is."""
    found = None
    for k in keys:
        if k is not None and k != found:
            if found is not None:
                return None
            found = k
    return found
