"""Deep check of a dump: parse every lazily parsed part and resolve every reference.

`irtool.load` reads the structure of every line; attributes and types are parsed when first asked
for. `check` asks for all of them and returns what could not be read, without changing the dump.
"""
from __future__ import annotations

from .graph import links
from .model import Dump, Node
from .records import DumpWarning
from .values import parse_type_sig


def check(dump: Dump) -> list[DumpWarning]:
    """Warnings for attributes and type lines kept as raw text and for references that name
    nothing (resolved as `irtool.ir.graph.build_graph` resolves them), in line order."""
    found: list[DumpWarning] = []
    for n in dump.nodes():
        bad = n.unreadable_attrs
        if bad is not None:
            found.append(DumpWarning(n.line, f"attributes kept as raw text: {bad.reason}"))
        for tl in n.type_lines:
            ins, outs = parse_type_sig(tl)
            if any(t.kind == "?" for t in ins + outs):
                found.append(DumpWarning(n.line, f"type line kept as raw text: {tl.strip()[:60]}"))
    unresolved: list[tuple[Node, str]] = []
    for _ in links(dump, unresolved):
        pass
    found += [DumpWarning(node.line, f"unresolved reference {ref} in {node.key}") for node, ref in unresolved]
    return found
