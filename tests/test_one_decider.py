"""One question, one answer (issue 25 item 1): every per-node fact is decided by one pass of the fact table,
the only code that reads the dump attributes it is made of; the package is read here to fail when another
module reads them again. And the table's passes are an ordered tuple: each needs only what an earlier one
provides, each fact is provided once."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import irtool
from irtool.parallel.facts import PASSES

PACKAGE = Path(irtool.__file__).resolve().parent
FACTS = "parallel/facts.py"
# dump attribute -> the module whose pass reads it (the fact it decides)
OWNED = {
    "micro": FACTS,  # micro
    "chunk": FACTS,  # chunk, printed_chunk
    "segment": FACTS,  # chunk
    "duplicated": FACTS,  # copy (a recomputed copy), and through it phase
    "is_bp": FACTS,  # phase
    "forward_unique_id": FACTS,  # forward, and the phase evidence it gives
    "forward_node_name": FACTS,
    "unique_id": FACTS,  # unique_ids
}
# Reads of an owned attribute for ANOTHER fact, each named with why:
ALSO = {
    # R4: a gradient AllReduce named after the `_Mirror*` node it is the gradient of (its category, not its counterpart)
    ("parallel/rules.py", "forward_node_name"),
}
# How a module reads a node's attributes: these methods with the attribute's name, or `key in <attrs>`.
READERS = {"scalar_attr", "mentions", "attr", "get", "read_group"}
# Dump syntax is read only by the format layer: no module above it searches a node's text.
_TEXT = re.compile(r"\.text\b")


def _modules() -> dict[str, ast.AST]:
    return {str(p.relative_to(PACKAGE)): ast.parse(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py")
            if not p.relative_to(PACKAGE).parts[0] == "ir"}


def test_each_owned_attribute_is_read_by_its_pass_only() -> None:
    found: set[tuple[str, str]] = set()
    for rel, tree in _modules().items():
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READERS \
                    and node.args and isinstance(node.args[0], ast.Constant):
                key = node.args[0].value
            elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                    any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                key = node.left.value
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            if key in OWNED and OWNED[key] != rel:
                found.add((rel, key))
    assert found - ALSO == set()


def test_no_module_above_the_format_reads_node_text() -> None:
    # `node.text` is the statement as printed: reading it is reading dump syntax (issue 25: stage._MICRO,
    # cost._FWD_ID, "duplicated: Bool(1)", chains._PRIMAL, "in_strategy" in node.text were)
    hits = []
    for p in PACKAGE.rglob("*.py"):
        rel = p.relative_to(PACKAGE)
        if rel.parts[0] == "ir":
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if _TEXT.search(line) and "node" in line.split(".text")[0][-12:]:
                hits.append(f"{rel}:{i}: {line.strip()}")
    assert hits == []


def test_passes_are_an_ordered_tuple_each_fact_provided_once() -> None:
    provided: dict[str, str] = {}
    for p in PASSES:
        for need in p.needs:
            assert need in provided, f"{p.name} needs {need}, which no earlier pass provides"
        for fact in p.provides:
            assert fact not in provided, f"{fact} provided by {provided[fact]} and {p.name}"
            provided[fact] = p.name
    # the facts issue 25 item 1 names, each provided
    assert {"kind", "phase", "micro", "chunk", "forward", "layer", "out_bytes", "comm", "strategy"} <= provided.keys()


# Scope text MindSpore prints for what its autodiff and recompute made: read by parallel/scope.py only (the phase
# pass asks it `in_gradients`; render folds by its `printed_cells`), never matched again elsewhere. A string
# starting with one of them or holding one as a scope component (`recompute_config` is MindFormers' YAML key).
SCOPE_LITERAL = re.compile(r"^(Gradients|Grad_|recompute_$|recompute_Default)|/(Gradients|Grad_|recompute_)")
SCOPE = "parallel/scope.py"


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(b[0].value) for b in (getattr(n, "body", None) for n in ast.walk(tree))
            if isinstance(b, list) and b and isinstance(b[0], ast.Expr) and isinstance(b[0].value, ast.Constant)}


def test_scope_literals_are_read_in_one_module() -> None:
    hits = []
    for p in PACKAGE.rglob("*.py"):
        rel = str(p.relative_to(PACKAGE))
        tree = ast.parse(p.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and SCOPE_LITERAL.search(node.value) and rel != SCOPE:
                hits.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert hits == []
    # and the literal is still what the test looks for: scope.py holds it
    assert any(SCOPE_LITERAL.search(n.value) for n in ast.walk(ast.parse((PACKAGE / SCOPE).read_text()))
               if isinstance(n, ast.Constant) and isinstance(n.value, str))
