"""One question, one answer (issue 25 item 1): every per-node fact is decided by one pass of the fact table,
the only code that reads the dump attributes it is made of; the package is read here to fail when another
module reads them again. And the table's passes are an ordered tuple: each needs only what an earlier one
provides, each fact is provided once."""
from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES

import irtool
from irtool.errors import IrtoolError
from irtool.parallel.facts import PASSES
from irtool.parallel.layers import layer_comm
from irtool.parallel.peer import rank_of

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
    # plan's pieces of a tensor: a backward copy prints its forward operator's `origin_output_shape`, not its own
    # (whether it is a copy, found or not, not which node it copies)
    ("parallel/lifetime.py", "forward_unique_id"),
}
# How a module reads a node's attributes: these methods with the attribute's name, or `key in <attrs>`.
READERS = {"scalar_attr", "mentions", "attr", "get", "read_group"}
# Dump syntax is read only by the format layer: no module above it searches a node's text.
_TEXT = re.compile(r"\.text\b")


@functools.cache
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
    for rel, tree in _modules().items():
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and SCOPE_LITERAL.search(node.value) and rel != SCOPE:
                hits.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert hits == []
    # and the literal is still what the test looks for: scope.py holds it
    assert any(SCOPE_LITERAL.search(n.value) for n in ast.walk(ast.parse((PACKAGE / SCOPE).read_text()))
               if isinstance(n, ast.Constant) and isinstance(n.value, str))


EXCHANGE_RANK_0 = "flash_sp_sendrecv_8p/rank_0/19_validate_0078.ir.xz"


def _cheap() -> list[Path]:
    """One dump of each bundled scenario that loads cheaply: its highest rank's validate pass (the last stage,
    where a pipeline's backward and loss are), else its last pass; at most 40 KB compressed (52 of the 78
    scenarios; the MindFormers/dry-run Llama variants above it have the structure of dryrun_llama_pp4's, below it)."""
    def key(p: Path) -> tuple[int, bool, str]:
        return rank_of(str(p)) or 0, "validate" in p.name, p.name
    picks = [max(files, key=key) for d in sorted(FIXTURES.iterdir()) if (files := list(d.rglob("*.ir.xz")))]
    # and the other end of the exchange steps flash_sp_sendrecv_8p's rank 2 has: rank 0's paired Send runs forward
    # (line 770), rank 2's backward (line 1194)
    return [p for p in picks if p.stat().st_size <= 40_000] + [FIXTURES / EXCHANGE_RANK_0]


@pytest.fixture(scope="module")
def cheap() -> list[tuple[str, irtool.ParallelFacts]]:
    out = []
    for p in _cheap():
        try:
            dump = irtool.load(str(p))
        except IrtoolError:  # a compile failure's dump: its error is tested elsewhere
            continue
        out.append((str(p.relative_to(FIXTURES)), irtool.analyze(dump)))
    return out


def test_every_record_says_the_tables_phase_category_and_layer(cheap: list) -> None:
    """Values, not only who reads what: no record's phase, category or layer differs from the fact table's
    (comm._pair_exchanges once rewrote a CommNode's phase and category after the passes: flash_sp_sendrecv_8p
    rank_2 line 1194 said backward in the summary, forward in the table memory reads)."""
    assert len(cheap) >= 45  # the scenarios this covers
    wrong: list[str] = []
    for rel, f in cheap:
        t = f.table
        for n, c in t.column("comm").items():
            if (c.phase, (c.category, c.rule)) != (t("phase", n), t("category", n)):
                wrong.append(f"{rel}:{n.line} {c.op}: record {c.phase} {c.category}/{c.rule}, "
                             f"table {t('phase', n)} {t('category', n)}")
        by_uid = {n.uid: n for n in t.get("comm_nodes")}
        # a layer's communication row holds the nodes the `layer` fact puts in it, and only those
        layers = {u: i for u, n in by_uid.items() if (i := t("layer", n)) is not None}
        rows = Counter({r.index: r.count for r in layer_comm(f.comm, f.groups, None, f.strategies, layers)
                        if r.index is not None})
        if rows != Counter(layers[c.node] for c in f.comm if c.node in layers):
            wrong.append(f"{rel}: communication per layer {dict(rows)}")
    assert wrong == []


def test_recomputed_copies_inside_a_bprop_are_backward_work(cheap: list) -> None:
    """A copy made by recompute (`duplicated: Bool(1)`) is recompute work, except a copy MindSpore makes inside a
    gradient (scope `Gradients/recompute_Default/.../Grad_LayerNorm/...`): backward evidence is weighed before the
    copy. pipeline_opt_shard_8p rank_4 validate prints 78 copies (`xzcat | grep -c 'duplicated: Bool(1)'`); the
    scope two lines below 8 of them starts with `Gradients/`: the TupleGetItems picking LayerNorm's mean and
    variance for LayerNormGrad, e.g. line 3383 `%340 = TupleGetItem(%331, I64(2))` reading the copy on line 3308
    `%331 = PrimFunc_LayerNorm(...)` (scope `recompute_Default/...`, recompute)."""
    (f,) = [f for rel, f in cheap if rel == "pipeline_opt_shard_8p/rank_4/19_validate_0078.ir.xz"]
    t = f.table
    phases = {n.line: t("phase", n) for n in t.get("copies")}
    backward = {3383, 3386, 3819, 3822, 6741, 6744, 7223, 7226}
    assert len(phases) == 78 and {line for line, ph in phases.items() if ph == "backward"} == backward
    assert phases[3308] == "recompute" and set(phases.values()) == {"backward", "recompute"}
