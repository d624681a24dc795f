"""The docs say what the code does: read from both, never from the tool's output (README: "Docs stay true").

Section numbers of docs/parallel.md and docs/cost.md are unique and in order and every `§N` the code and the
docs cite exists; links into the docs name a heading; the fact table of docs/parallel.md §17 is `PASSES`; the
job's fields are in §18; every key a JSON document is made of (the string keys of the dict displays of the
functions that make it) is named in the doc of its schema, and every schema the code names is its current one;
the README lists every module of the package and every option of every command."""
from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import fields
from pathlib import Path

import pytest
from conftest import ROOT

from irtool.cli import main
from irtool.parallel.facts import PASSES
from irtool.parallel.job import Job

DOCS = ROOT / "docs"
PACKAGE = ROOT / "irtool"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The text of the `## heading...` section (to the next `## `)."""
    start = text.index("\n## " + heading)
    end = text.find("\n## ", start + 1)
    return text[start: end if end >= 0 else len(text)]


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^## (\d+)\. ", text, re.M)]


@pytest.mark.parametrize("name", ["parallel.md", "cost.md"])
def test_sections_are_numbered_once_and_in_order(name: str) -> None:
    numbers = _numbers(_doc(name))
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def _cited() -> list[tuple[str, str, int]]:
    """(where, doc, section) of every `docs/X.md §N` (also `§N-§M`) in the package, tests and docs, and of every
    bare `§N` in the analysis code (its comments cite docs/parallel.md: irtool/parallel/analyze.py)."""
    out = []
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").glob("*.py"), *DOCS.glob("*.md"), ROOT / "README.md"]
    for path in files:
        text = path.read_text(encoding="utf-8")
        for doc, first, last in re.findall(r"(\w+)\.md \u00a7(\d+)(?:-\u00a7(\d+))?", text):
            out += [(str(path), f"{doc}.md", int(n)) for n in (first, last) if n]
        if path.parent == PACKAGE / "parallel":
            bare = re.sub(r"\w+\.md \u00a7\d+(-\u00a7\d+)?", "", text)
            out += [(str(path), "parallel.md", int(n)) for n in re.findall(r"\u00a7(\d+)", bare)]
    return out


def test_every_cited_section_exists() -> None:
    sections = {name: set(_numbers(_doc(name))) for name in ("parallel.md", "cost.md")}
    cited = [c for c in _cited() if c[1] in sections]
    assert cited and not [c for c in cited if c[2] not in sections[c[1]]]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return text.replace(" ", "-")


def test_links_into_the_docs_name_a_heading() -> None:
    anchors = {p.name: {_anchor(h) for h in re.findall(r"^#+ (.+)$", p.read_text(encoding="utf-8"), re.M)}
               for p in [*DOCS.glob("*.md"), ROOT / "README.md"]}
    links = []
    for path in [*DOCS.glob("*.md"), ROOT / "README.md"]:
        for target, anchor in re.findall(r"\]\(([\w./]*?)#([^)\s]+)\)", path.read_text(encoding="utf-8")):
            links.append((path.name, Path(target).name or path.name, anchor))
    assert links and not [x for x in links if x[2] not in anchors[x[1]]]


def test_the_fact_table_is_the_passes() -> None:
    rows = re.findall(r"^\| ([a-z ]+) \| ((?:`\w+`(?:, )?)+) \| (node|column|dump) \|",
                      _section(_doc("parallel.md"), "17."), re.M)
    documented = [(name, tuple(re.findall(r"`(\w+)`", facts)), level) for name, facts, level in rows]
    assert documented == [(p.name, p.provides, p.level) for p in PASSES]


def test_every_job_field_is_in_its_table() -> None:
    table = _section(_doc("parallel.md"), "18.")
    named = set(re.findall(r"^\| ([^|]+) \|", table, re.M))
    named = {f for cell in named for f in re.findall(r"`(\w+)`", cell)}
    assert {f.name for f in fields(Job)} <= named


def _keys(module: str, *functions: str) -> set[str]:
    """The string keys of the dict displays in the named functions (`Class.method` or function) of a module."""
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    found: set[str] = set()
    wanted = set(functions)
    for node in ast.walk(tree):
        bodies = []
        if isinstance(node, ast.ClassDef):
            bodies = [(f"{node.name}.{f.name}", f) for f in node.body if isinstance(f, ast.FunctionDef)]
        elif isinstance(node, ast.FunctionDef):
            bodies = [(node.name, node)]
        for name, fn in bodies:
            if name in wanted:
                wanted.discard(name)
                for d in ast.walk(fn):
                    if isinstance(d, ast.Dict):
                        found |= {k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    assert not wanted, f"{module}: no {sorted(wanted)}"
    return found


JSON_DOCS = [
    ("report/cost.py", ("_compute_json", "_memory_json", "_fits_json", "file_json", "_split_json", "dir_json",
                        "_unit_json", "_timing_json", "_step_json", "calibration_json", "hardware_json"),
     lambda: _section(_doc("cost.md"), "JSON")),
    ("parallel/order.py", ("Unit.as_dict", "StageOrder.as_dict"), lambda: _section(_doc("cost.md"), "JSON")),
    ("diff/cost.py", ("StageFigures.as_dict", "CostDiff.as_dict"), lambda: _section(_doc("cost.md"), "5.")),
    ("parallel/logical.py", ("_bytes", "CommUse.as_dict", "Held.as_dict", "LogicalOp.as_dict", "Figures.as_dict",
                             "LayerFigures.as_dict", "StageFigures.as_dict", "LogicalGraph.as_dict",
                             "OperatorPair.as_dict", "LayerPair.as_dict", "LogicalDiff.as_dict"),
     lambda: _doc("logical.md")),
    ("report/summary.py", ("FileSummary.as_dict", "DirSummary.as_dict"),
     lambda: _section(README, "JSON output") + _section(_doc("parallel.md"), "12.")),
    ("diff/compare.py", ("RankDiff.as_dict", "SideUnreadable.as_dict", "DiffResult.as_dict"),
     lambda: _section(_doc("diff.md"), "JSON")),
    ("diff/records.py", ("CommChange.as_dict", "RankSpecific.as_dict", "StrategyChange.as_dict", "OpCount.as_dict",
                         "ParamChange.as_dict", "CommBytes.as_dict"), lambda: _section(_doc("diff.md"), "JSON")),
    ("diff/facts.py", ("CommFact.as_dict",), lambda: _section(_doc("diff.md"), "JSON")),
    ("consistency/records.py", ("Side.as_dict", "Finding.as_dict", "Compared.as_dict", "Coverage.as_dict",
                                "Unchecked.as_dict", "CheckResult.as_dict"), lambda: _section(_doc("check.md"), "JSON")),
]


@pytest.mark.parametrize("module,functions,doc", JSON_DOCS, ids=[m for m, _, _ in JSON_DOCS])
def test_every_json_key_is_documented(module: str, functions: tuple[str, ...], doc) -> None:
    text = re.sub(r"^```.*$", "", doc(), flags=re.M)  # a fenced block is one span
    spans = re.findall(r"`([^`]+)`", text)  # a key is named in code type: `key`, `{key, ...}`, `key[]`
    keys = _keys(module, *functions)
    assert keys and not sorted(k for k in keys if not any(re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", s)
                                                          for s in spans))


def test_every_schema_named_is_the_current_one() -> None:
    from irtool.diff.compare import SCHEMA as DIFF
    from irtool.parallel.logical import SCHEMA as LOGICAL
    from irtool.report.cost import SCHEMA as COST
    from irtool.report.summary import SCHEMA as SUMMARY

    current = {s.split("/")[0]: s for s in (SUMMARY, COST, DIFF, LOGICAL, "irtool.check/2")}
    assert '"schema": "irtool.check/2"' in (PACKAGE / "consistency/records.py").read_text(encoding="utf-8")
    named = {(str(p), s) for p in PACKAGE.rglob("*.py")
             for s in re.findall(r"irtool\.(?:summary|cost|diff|logical|check)/\d+", p.read_text(encoding="utf-8"))}
    assert named and not [x for x in named if x[1] != current[x[1].split("/")[0]]]
    assert all(f"`{s}`" in README for s in current.values())


def test_the_readme_lists_every_module() -> None:
    table = _section(README, "How it works")
    rows = re.findall(r"^\| (`[^|]+`) \|", table, re.M)
    listed = set()
    for cell in rows:
        names = re.findall(r"`([\w/]+\.py)`", cell)
        if not names:
            continue
        folder = names[0].rsplit("/", 1)[0] + "/" if "/" in names[0] else ""
        listed |= {n if "/" in n else folder + n for n in names}
    modules = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    assert not sorted(modules - listed)


def test_the_readme_gives_every_option() -> None:
    said_once = {"--lenient", "--pass", "--stage", "--help"}  # said for every command above the table
    missing = []
    for name, command in main.commands.items():
        row = next(line for line, cmd in re.findall(r"^(\| `(\w+)[^|]*` \| .* \|)$", README, re.M) if cmd == name)
        for param in command.params:
            opts = [o for o in (*param.opts, *param.secondary_opts) if o.startswith("-")]
            if opts and not set(opts) & said_once and \
                    not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", row) for o in opts):
                missing.append(f"{name} {opts[0]}")
    assert not missing


def test_no_text_file_keeps_a_merge_conflict_marker() -> None:
    # fixtures/mindir/README.md kept `<<<<<<< HEAD` / `=======` / `>>>>>>> main` from a merge (68e7482)
    marker = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.M)
    texts = [p for pattern in ("*.md", "docs/*.md", "fixtures/**/*.md", "irtool/**/*.py", "tests/*.py")
             for p in ROOT.glob(pattern)]
    assert len(texts) > 50
    assert [str(p.relative_to(ROOT)) for p in texts if marker.search(p.read_text(encoding="utf-8"))] == []


def test_every_bundled_scenario_has_a_readme_row() -> None:
    fixtures = ROOT / "fixtures" / "mindir"
    table = (fixtures / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z0-9_]+)`", "\n".join(row for row in table.splitlines() if row.startswith("| `"))))
    folders = {p.parent.name for p in fixtures.glob("*/manifest.json")}
    assert sorted(folders - named) == []
