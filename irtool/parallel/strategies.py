"""Operators with sharding strategies or layouts (docs/parallel.md §9)."""
from __future__ import annotations

import re
from typing import Any

from ..ir import Dump, Node, Unreadable
from ..ir.values import parse_value
from .records import STRATEGY_KEYS, Strategy

# A tuple nested at most three deep holding no other brackets: the bracket matching below, in C.
_TUPLE = re.compile(r"\((?:[^()\[\]{}]|\((?:[^()\[\]{}]|\([^()\[\]{}]*\))*\))*\)")


def _extract(text: str, key: str) -> Any:
    """Fast path: the bracketed value after the last `key: `, found by bracket matching and read
    with the grammar's `value` rule (cached: strategies recur); `...` when that fails."""
    k = text.rfind(key + ": ")
    if k < 0:
        return None
    i = k + len(key) + 2
    if i >= len(text) or text[i] not in "([":
        return ...
    m = _TUPLE.match(text, i)  # the usual value, `((2, 1), (1, 4))`, found by one regex
    if m is not None:
        value = parse_value(m.group())
        return ... if isinstance(value, Unreadable) else value
    depth, j = 0, i
    while j < len(text):
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    value = parse_value(text[i : j + 1])
    return ... if isinstance(value, Unreadable) else value


def attr_value(node: Node, key: str) -> Any:
    """One bracketed attribute value of a node read without parsing all its attributes (large
    operators print long attribute groups); the full parse when the fast path cannot read it."""
    value = _extract(node.text, key)
    return node.attr(key) if value is ... else value


def strategy_records(dump: Dump) -> dict[Node, Strategy]:
    """Every operator with a strategy or layout (`_Virtual*` bookkeeping operators excluded), in print
    order (the `strategies` pass of the fact table)."""
    out: dict[Node, Strategy] = {}
    for node in dump.nodes():
        if not (node.mentions("in_strategy") or node.mentions("in_layout")) or node.op.startswith("_Virtual"):
            continue
        text = node.text
        values: dict[str, Any] = {}
        for key in STRATEGY_KEYS:
            if key + ": " not in text:
                continue
            v = _extract(text, key)
            if v is ...:  # layouts (unquoted names, true/false): the full attribute parser
                v = node.attr(key)
            values[key] = v
        out[node] = Strategy(op=node.op, scope=node.scope or "", node=node.uid, name=node.name, line=node.line,
                             instance=node.instance_name, **values)
    return out
