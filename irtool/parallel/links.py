"""What a communication node is for: the operator it feeds or the parameter it carries (§8)."""
from __future__ import annotations

import re
from collections import deque

from ..ir import Dump, Node
from .rules import COMM_OPS

_NODE_REF = re.compile(r"%\d+(?![\w.])")


class NodeIndex:
    """Nodes by key, and users by key (built on demand), for the subgraphs holding communication."""

    def __init__(self, dump: Dump, comm: list[Node]) -> None:
        graphs = {n.graph for n in comm}
        self.nodes = {g.name: {n.key: n for n in g.nodes} for g in dump.subgraphs if g.name in graphs}
        self._users: dict[str, dict[str, list[Node]]] = {}

    def producer(self, node: Node) -> Node | None:
        ins = node.inputs
        ref = ins[0].ref if ins else None
        if ref is None or ref.kind != "node":
            return None
        return self.nodes.get(node.graph, {}).get(ref.name)

    def users(self, node: Node) -> list[Node]:
        if node.graph not in self._users:
            users: dict[str, list[Node]] = {}
            # A regex over the text after the callee finds the `%N` a node uses far faster than
            # splitting the arguments of every node; a `%N` inside a string attribute would only
            # add a spurious user, and MindSpore prints none.
            for n in self.nodes.get(node.graph, {}).values():
                for key in dict.fromkeys(_NODE_REF.findall(n.text, n.args_start)):
                    users.setdefault(key, []).append(n)
            self._users[node.graph] = users
        return self._users[node.graph].get(node.key, [])


def param_of(node: Node) -> str | None:
    """The parameter name when the node's first input is a parameter (`%para3_w` -> `w`)."""
    ins = node.inputs
    ref = ins[0].ref if ins else None
    if ref is None or ref.kind not in ("param", "free"):
        return None
    name = ref.name.rstrip(")").split(":")[-1].lstrip("%")
    return name.split("_", 1)[1] if name.startswith("para") and "_" in name else name


def has_strategy(node: Node) -> bool:
    return "in_strategy" in node.text or "in_layout" in node.text


def walk_to_strategy(node: Node, index: NodeIndex, through_all: bool = False) -> Node | None:
    """First user (breadth first, through redistribution chains) that has a strategy; else the first user."""
    seen = {node.key}
    queue = deque([node])
    first: Node | None = None
    steps = 0
    while queue and steps < 64:
        steps += 1
        for u in index.users(queue.popleft()):
            if u.key in seen:
                continue
            seen.add(u.key)
            first = first or u
            if has_strategy(u) and u.op not in COMM_OPS:
                return u
            if through_all or "redistribution_op" in u.text or u.op in ("TupleGetItem", "Depend", "Reshape"):
                queue.append(u)
    return first
