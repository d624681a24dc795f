"""Version tolerance: constructs this grammar does not know are kept, reported, and do not spoil
the rest of the summary. The input is a real dump with two hand-made changes, made here."""
from __future__ import annotations

import lzma
from collections import Counter

from conftest import fixture

import irtool
from irtool.report.summary import summarize

REAL = fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz")


def _loaded(path):
    dump = irtool.load(path)
    return dump, irtool.analyze(dump)


def edited(tmp_path):
    """The real dump with (1) a value form no MindSpore we know prints, in the attributes of its
    first AllGather, and (2) an annotation line of a kind we do not know under that node."""
    lines = lzma.open(REAL, "rt", encoding="utf-8").read().split("\n")
    at = next(i for i, ln in enumerate(lines) if "= AllGather(" in ln)
    lines[at] = lines[at].replace("primitive_attrs: {", "primitive_attrs: {layout_v2: Layout<dp, mp>, ", 1)
    lines.insert(at + 1, "      # Fusion bucket: 3")
    path = tmp_path / "edited.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path, at + 1  # 1-based line of the edited node


def test_unknown_constructs_are_warnings_and_the_rest_is_right(tmp_path):
    path, line = edited(tmp_path)
    real, dump = summarize(*_loaded(REAL)), summarize(*_loaded(path))
    assert real["warnings"] == []
    messages = {w["line"]: w["message"] for w in dump["warnings"]}
    assert "Fusion bucket" in messages[line + 1] and "kept as raw text" in messages[line + 1]
    assert messages[line].startswith("attributes of %5 kept as raw text (primitive_attrs: expected ")
    assert "found '<dp,'" in messages[line] and "classification may be incomplete" in messages[line]
    assert dump["counts"] == real["counts"] and dump["ops"] == real["ops"]
    # every communication node is still found; only the edited one may lose its category
    assert len(dump["comm"]) == len(real["comm"])
    changed = [(a["node"], a["category"], b["category"]) for a, b in zip(real["comm"], dump["comm"])
               if a["category"] != b["category"]]
    assert len(changed) <= 1
    assert Counter(c["op"] for c in dump["comm"]) == Counter(c["op"] for c in real["comm"])


def test_unknown_header_lines_are_kept_and_the_counts_still_checked(tmp_path):
    # mlp_cpu_ms210 (MindSpore 2.10, with a `jit config {` block) with three lines a later version
    # might print: one inside the header, one in `jit config`, one after the node counts.
    lines = lzma.open(fixture("mlp_cpu_ms210/rank_0/21_validate_0076.ir.xz"), "rt", encoding="utf-8").read().split("\n")
    at = lines.index("jit config {")
    lines.insert(at, "# Dump format: 3")
    lines.insert(at + 2, "# new_option = on")
    cnodes = next(i for i, ln in enumerate(lines) if ln.startswith("Total number of cnodes:"))
    lines.insert(cnodes + 1, "Total number of value nodes: 92")
    path = tmp_path / "later.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    dump = irtool.load(path)
    assert [w.line for w in dump.warnings] == [at + 1, at + 3, cnodes + 2]
    assert all("unrecognised line kept as raw text" in w.message for w in dump.warnings)
    assert dump.counts == {k: dump.declared[k] for k in ("subgraphs", "params", "cnodes")}
    assert dump.jit_config["exc_mode"] == "auto"


def test_unknown_lines_between_nodes_are_kept(tmp_path):
    lines = open(fixture("mlp_cpu/rank_0/19_validate_0072.ir"), encoding="utf-8").read().split("\n")
    opener = next(i for i, ln in enumerate(lines) if ln.startswith("subgraph @"))
    lines.insert(opener + 1, "# Graph kind: training")
    lines.insert(opener + 2, "fusion_policy: auto")
    path = tmp_path / "notes.ir"
    path.write_text("\n".join(lines), encoding="utf-8")
    dump = irtool.load(path)
    assert [w.line for w in dump.warnings] == [opener + 2, opener + 3]
    assert dump.subgraphs[0].body_notes == ["# Graph kind: training", "fusion_policy: auto"]
    assert dump.counts["cnodes"] == dump.declared["cnodes"] == 68
