"""What a communication node is for: the operator it feeds or the parameter it carries (§8)."""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Mapping

from ..ir import Node
from .rules import COMM_OPS

if TYPE_CHECKING:
    from .table import NodeFacts


class NodeIndex:
    """Nodes by key (the `by_key` fact: each subgraph's made when first asked) and users by key (built
    per subgraph on demand): one index serves all analyses of a dump."""

    def __init__(self, by_key: Mapping[str, dict[str, Node]]) -> None:
        self.nodes = by_key
        self._users: dict[str, dict[str, Node | list[Node]]] = {}  # a single user held alone (most nodes have one)

    def producer(self, node: Node) -> Node | None:
        ins = node.inputs
        ref = ins[0].ref if ins else None
        if ref is None or ref.kind != "node":
            return None
        return self.nodes[node.graph].get(ref.name)

    def users(self, node: Node) -> list[Node]:
        if node.graph not in self._users:
            users: dict[str, Node | list[Node]] = {}
            get = users.get
            for n in self.nodes[node.graph].values():
                for key in n.node_refs:  # each user once, in print order
                    found = get(key)
                    if found is None:
                        users[key] = n
                    elif type(found) is list:
                        found.append(n)
                    else:
                        users[key] = [found, n]
            self._users[node.graph] = users
        found = self._users[node.graph].get(node.key)
        return [] if found is None else found if type(found) is list else [found]


def node_index(t: NodeFacts) -> NodeIndex:
    """Nodes and users by key of every subgraph, users built per subgraph when first asked (the
    `node_index` fact: what a collective feeds, §2 R11-R13, §8)."""
    return NodeIndex(t.get("by_key"))


def param_of(node: Node) -> str | None:
    """The parameter name when the node's first input is a parameter (`%para3_w` -> `w`)."""
    ins = node.inputs
    ref = ins[0].ref if ins else None
    if ref is None or ref.kind not in ("param", "free"):
        return None
    name = ref.name.rstrip(")").split(":")[-1].lstrip("%")
    return name.split("_", 1)[1] if name.startswith("para") and "_" in name else name


# Operators whose output is their first input's value (cast, loaded, ordered, reshaped, picked):
# a collective fed through them still carries that input's parameter (§8).
VALUE_OPS = frozenset({"Cast", "Load", "Depend", "TupleGetItem", "Reshape", "Identity"})


def param_through(node: Node, index: NodeIndex, limit: int = 16) -> str | None:
    """The parameter a node's first input is, directly or through value-preserving operators."""
    cur: Node | None = node
    for _ in range(limit):
        if cur is None:
            return None
        name = param_of(cur)
        if name is not None:
            return name
        cur = index.producer(cur)
        if cur is None or cur.op not in VALUE_OPS:
            return None
    return None


def has_strategy(node: Node) -> bool:
    return node.mentions("in_strategy") or node.mentions("in_layout")


# Operators that only route a value (tuple plumbing, ordering, a view): the redistribution chain
# and the walk to a parameter look through them (docs/parallel.md §8).
GLUE_OPS = frozenset({"TupleGetItem", "MakeTuple", "Depend", "Load", "Reshape"})


def _first_input_is(node: Node, producer: Node) -> bool:
    ins = node.inputs
    ref = ins[0].ref if ins else None
    return ref is not None and ref.kind == "node" and ref.name == producer.key


def in_chain(node: Node) -> bool:
    """A node of a tensor-redistribution chain: MindSpore names them `redistribution_op_...`."""
    return "redistribution_op" in (node.instance_name or "")


def walk_to_strategy(node: Node, index: NodeIndex, through_all: bool = False) -> Node | None:
    """The operator that needs what `node` produces: the first user (breadth first, through the
    redistribution chain and glue operators) that has a strategy; else the first user outside the
    chain; else the first user. `through_all` walks through every operator."""
    seen = {node.key}
    queue = deque([node])
    first: Node | None = None
    outside: Node | None = None
    steps = 0
    while queue and steps < 64:
        steps += 1
        cur = queue.popleft()
        for u in index.users(cur):
            if u.key in seen or (u.op == "Depend" and not _first_input_is(u, cur)):
                continue  # a Depend's later inputs only order execution: their value goes nowhere
            seen.add(u.key)
            first = first or u
            chain = in_chain(u)
            if has_strategy(u) and u.op not in COMM_OPS and not chain:
                return u
            if not chain and u.op not in GLUE_OPS:
                outside = outside or u
            if through_all or chain or u.op in GLUE_OPS:
                queue.append(u)
    return outside or first


def ordered_with(node: Node, index: NodeIndex, depth: int = 3) -> list[Node]:
    """Nodes tied to `node` by ordering only: reached through `Depend` operators from its inputs
    (any input of a Depend) and from its users. A Send and a Receive forming one exchange step are
    chained this way (`Receive(Depend(x, Send(...)))`)."""
    graph = index.nodes[node.graph]
    found: list[Node] = []
    seen = {node.key}
    frontier = [node]
    for _ in range(depth):
        nxt: list[Node] = []
        for cur in frontier:
            refs = [i.ref.name for i in cur.inputs if i.ref is not None and i.ref.kind == "node"] \
                if cur is node or cur.op == "Depend" else []
            near = [graph[r] for r in refs if r in graph] + (index.users(cur) if cur is node or cur.op == "Depend" else [])
            for n in near:
                if n.key not in seen:
                    seen.add(n.key)
                    found.append(n)
                    nxt.append(n)
        frontier = nxt
    return found
