"""Operators with sharding strategies or layouts (docs/parallel.md §9)."""
from __future__ import annotations

from typing import Any

from ..ir import Dump, Node
from .records import STRATEGY_KEYS, Strategy


def attr_value(node: Node, key: str) -> Any:
    """One bracketed attribute value of a node (`Node.bracket_attr`), else the full parse."""
    value = node.bracket_attr(key)
    return node.attr(key) if value is ... else value


def strategy_records(dump: Dump) -> dict[Node, Strategy]:
    """Every operator with a strategy or layout (`_Virtual*` bookkeeping operators excluded), in print
    order (the `strategies` pass of the fact table)."""
    out: dict[Node, Strategy] = {}
    for node in dump.nodes():
        if not (node.mentions("in_strategy") or node.mentions("in_layout")) or node.op.startswith("_Virtual"):
            continue
        values: dict[str, Any] = {}
        for key in STRATEGY_KEYS:
            if node.mentions(key):
                values[key] = attr_value(node, key)  # layouts (unquoted names, true/false): the full parser
        out[node] = Strategy(op=node.op, scope=node.scope or "", node=node.uid, name=node.name, line=node.line,
                             instance=node.instance_name, **values)
    return out
