"""The package's layers and invariants, read from the code (issue 9): imports only go down, no
cycles, nothing below the CLI prints or reaches the terminal, one exception root, analysis never
writes into a Dump, `load` is reentrant, one record per concept from analysis to every output."""
from __future__ import annotations

import ast
import copy
import functools
import json
import lzma
import threading
from pathlib import Path

import networkx as nx
import pytest
from conftest import fixture

import irtool
from irtool import errors
from irtool.diff import diff
from irtool.diff.facts import comm_facts
from irtool.report.summary import summarize

PACKAGE = Path(irtool.__file__).resolve().parent

# Layer of each top-level part of the package; a module may import only its own layer or lower.
LAYERS = {"errors": 0, "atomic": 0, "spill": 0, "ir": 1, "parallel": 2, "present": 3, "dumpdir": 3, "selection": 3,
          "report": 4, "render": 4, "diff": 4, "consistency": 4, "view": 4, "plan": 4, "progress": 5, "cli": 6}
COMMANDS = {"report", "render", "diff", "consistency", "view", "plan"}  # side by side: none imports another
TERMINAL = {"click", "rich"}  # only the CLI (and its progress module) may import these


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


MODULES = _modules()


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every test here (the trees are only read)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(name: str, path: Path) -> set[str]:
    """Modules of the package and third-party top-level names imported by one module (also inside functions)."""
    is_pkg = path.name == "__init__.py"
    found = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            found.update(subs or [target])
    return found


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for name, path in MODULES.items():
        g.add_node(name)
        for target in _imports(name, path):
            g.add_edge(name, target)
    return g


def test_every_part_of_the_package_has_a_layer():
    parts = {_part(m) for m in MODULES} - {"__init__"}
    assert parts <= LAYERS.keys(), parts - LAYERS.keys()


def test_imports_only_go_down_and_form_no_cycle():
    g = _graph()
    own = g.subgraph([n for n in g if n in MODULES])
    assert list(nx.simple_cycles(own)) == []
    upward = [(a, b) for a, b in own.edges if _part(a) != "__init__" and _part(b) != "__init__"
              and LAYERS[_part(b)] > LAYERS[_part(a)]]
    assert upward == []
    # the package root re-exports the library API; it must not pull in the CLI or the terminal
    assert not {b for b in own.successors("irtool") if _part(b) in ("cli", "progress")}


def test_commands_never_import_one_another():
    sideways = sorted((a, b) for a, b in _graph().edges if b in MODULES and _part(a) in COMMANDS
                      and _part(b) in COMMANDS and _part(a) != _part(b))
    assert sideways == []


def test_presentation_knows_no_command_and_no_folder():
    for name, path in MODULES.items():
        if _part(name) == "present":
            above = {t for t in _imports(name, path) if t.startswith("irtool.") and _part(t) not in ("present", "parallel")}
            assert not above, (name, above)


def test_the_format_layer_imports_nothing_above_it():
    for name, path in MODULES.items():
        if _part(name) == "ir":
            above = {t for t in _imports(name, path) if t.startswith("irtool.") and _part(t) not in ("ir", "errors")}
            assert not above, (name, above)


def test_only_the_cli_reaches_the_terminal():
    for name, path in MODULES.items():
        if _part(name) in ("cli", "progress"):
            continue
        third = {t.split(".")[0] for t in _imports(name, path)}
        assert not third & TERMINAL, (name, third & TERMINAL)
        if _part(name) != "progress":
            assert "irtool.progress" not in _imports(name, path), name
        tree = _tree(path)
        prints = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                  and n.func.id in ("print", "input")]
        streams = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                   and n.attr in ("stdout", "stderr") and isinstance(n.value, ast.Name) and n.value.id == "sys"]
        assert not prints and not streams, (name, prints, streams)


def test_one_exception_root():
    own_errors = {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, BaseException)}
    assert all(issubclass(getattr(errors, n), errors.IrtoolError) for n in own_errors)
    # functions that build one of those errors (`raise stage_error(...)`), by their return annotation
    factories = {f.name for path in MODULES.values() for f in ast.walk(_tree(path))
                 if isinstance(f, ast.FunctionDef) and isinstance(f.returns, ast.Name) and f.returns.id in own_errors}
    for name, path in MODULES.items():
        tree = _tree(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and name != "irtool.errors":
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                assert not any(b.endswith(("Error", "Exception")) for b in bases), (name, node.name)
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name):
                raised = node.exc.func.id
                # KeyError / ValueError only for programming errors (a missing mapping key, a bad mode)
                assert raised in own_errors | factories or raised in ("KeyError", "ValueError"), (name, node.lineno, raised)


def _snapshot(dump: irtool.Dump) -> tuple:
    return (sorted(vars(dump)), copy.copy(dump.warnings), [vars(g).copy() for g in dump.subgraphs])


@pytest.mark.parametrize("rel", ["semi_auto_8p/rank_0/19_validate_0078.ir.xz",
                                 "pipeline_2stage_8p/rank_4/step_parallel_end_0019.ir.xz"])
def test_analysis_and_checks_never_write_into_the_dump(rel):
    dump = irtool.load(fixture(rel))
    before = _snapshot(dump)
    facts = irtool.analyze(dump)
    first = irtool.check(dump)
    summarize(dump, facts, first)
    diff(dump, dump)
    assert _snapshot(dump) == before
    assert irtool.check(dump) == first  # checking twice finds the same, adds nothing


def test_load_is_reentrant(tmp_path):
    # A real dump with k unknown annotation lines (kept raw, one warning each) under k nodes, for
    # k = 0..3, loaded at once from several threads: each load reports exactly its own warnings.
    lines = lzma.open(fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz"), "rt", encoding="utf-8").read().split("\n")
    nodes = [i for i, ln in enumerate(lines) if ln.startswith("  %")]
    paths = []
    for k in range(4):
        variant = list(lines)
        for at in reversed(nodes[:k]):
            variant.insert(at + 1, f"      # Fusion bucket: {at}")
        paths.append(tmp_path / f"v{k}.ir")
        paths[-1].write_text("\n".join(variant), encoding="utf-8")

    def key(path: Path) -> tuple:
        dump = irtool.load(path)
        return (str(path), [w.as_dict() for w in dump.warnings], dump.counts["cnodes"])

    expected = {p: key(p) for p in paths}
    assert [len(expected[p][1]) for p in paths] == [0, 1, 2, 3]
    got: list[tuple] = []
    failures: list[BaseException] = []

    def work(p: Path) -> None:
        try:
            for _ in range(3):
                got.append(key(p))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(p,)) for p in paths * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert sorted(got) == sorted(expected[p] for p in paths * 2 for _ in range(3))


def test_load_dir_returns_dumps_on_demand():
    ranks = irtool.load_dir(str(Path(fixture("pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz")).parents[1]))
    assert [r.rank for r in ranks] == list(range(8))
    assert all(isinstance(r, irtool.RankFile) for r in ranks)
    assert ranks[5].load().counts["subgraphs"] == 1


@pytest.mark.parametrize("rel", ["pipeline_2stage_8p/rank_0/11_pipeline_split_0014.ir.xz",
                                 "pipeline_2stage_8p/rank_0/merge_send_receive_0017.ir.xz",
                                 "gpt_small_dp2mp2pp2/rank_0/step_parallel_begin_0018.ir.xz",
                                 "gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz"])
def test_summary_and_diff_read_the_same_record(rel):
    dump = irtool.load(fixture(rel))
    facts = irtool.analyze(dump)
    # the diff wraps the very records analysis made: no second bytes or group rule
    assert [f.comm for f in comm_facts(facts)] == facts.comm
    assert all(a is b for a, b in zip((f.comm for f in comm_facts(facts)), facts.comm))
    summary = json.loads(json.dumps(summarize(dump, facts)))
    assert [c["bytes"] for c in summary["comm"]] == [c.bytes for c in facts.comm]
