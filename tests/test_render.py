"""Rendering on real fixtures: selection, folding, DOT/SVG export, escaping, CLI."""
from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pydot
import pytest

import irtool
from irtool.errors import SelectionError as RenderError
from irtool.report.export import export, to_bytes
from irtool.report.render import Semantics, fold, render_graph, select

ROOT = Path(__file__).resolve().parents[1]
MINDIR = ROOT / "fixtures" / "mindir"
SEMI = MINDIR / "semi_auto_8p" / "rank_0" / "19_validate_0078.ir.xz"
PIPE = MINDIR / "pipeline_2stage_8p"
MLP = MINDIR / "mlp_cpu" / "rank_0" / "19_validate_0072.ir"
HOSTILE = ROOT / "fixtures" / "hostile" / "19_validate_0072_hostile_scope.ir"
SVG = "{http://www.w3.org/2000/svg}"


def svg_titles(data: bytes) -> list[str]:
    root = ET.fromstring(data)
    return [t.text or "" for g in root.iter(f"{SVG}g") if g.get("class") == "node" for t in g.findall(f"{SVG}title")]


def picture_ids(titles: list[str]) -> set[str]:
    return {t for t in titles if not t.startswith("legend_")}


@pytest.mark.parametrize("depth", [None, 3, "all"])
def test_svg_valid_and_titles_match_selection(depth):
    dump = irtool.load(str(SEMI))
    graph = render_graph(dump, irtool.analyze(dump), depth=depth)
    titles = svg_titles(to_bytes(graph, "svg"))
    assert picture_ids(titles) == set(graph.nodes)
    assert any(t.startswith("legend_") for t in titles)
    # every selected operator is in exactly one box
    assert sum(a["count"] for _, a in graph.nodes(data=True)) == sum(1 for _ in dump.nodes())
    if depth == "all":
        assert graph.number_of_nodes() == sum(1 for _ in dump.nodes())


def test_folded_box_counts_strategies_and_comm():
    dump = irtool.load(str(SEMI))
    sem = Semantics.of(irtool.analyze(dump))
    graph = render_graph(dump, irtool.analyze(dump), depth=2)
    assert sum(a["strategy"] for _, a in graph.nodes(data=True)) == len(sem.strategy) > 0
    assert sum(sum(a["comm"].values()) for _, a in graph.nodes(data=True)) == len(sem.category) > 0


def test_dot_parses_back_to_same_nodes_and_edges(tmp_path):
    dump = irtool.load(str(SEMI))
    graph = render_graph(dump, irtool.analyze(dump))
    out = tmp_path / "g.dot"
    export(graph, str(out))
    (parsed,) = pydot.graph_from_dot_file(str(out))
    nodes = {n.get_name() for n in parsed.get_nodes()} - {"node", "edge", "graph"}
    edges = {(e.get_source(), e.get_destination()) for e in parsed.get_edges()}
    assert nodes == set(graph.nodes)
    assert edges == set(graph.edges)
    assert not list(tmp_path.glob(".irtool-*"))  # no temp file left behind


def test_comm_only_hops_is_networkx_neighbourhood():
    dump = irtool.load(str(SEMI))
    g, sem = irtool.build_graph(dump), Semantics.of(irtool.analyze(dump))
    zero = select(dump, g, sem, comm_only=True, hops=0).uids
    one = select(dump, g, sem, comm_only=True, hops=1).uids
    assert zero == set(sem.category) and zero < one


def test_forward_backward_partition():
    dump = irtool.load(str(SEMI))
    g, sem = irtool.build_graph(dump), Semantics.of(irtool.analyze(dump))
    fwd = select(dump, g, sem, direction="forward").uids
    bwd = select(dump, g, sem, direction="backward").uids
    assert fwd and bwd and not fwd & bwd
    assert len(fwd) + len(bwd) == sum(1 for _ in dump.nodes())
    nodes = {n.uid: n for n in dump.nodes()}
    assert all((nodes[u].scope or "").startswith("Gradients/") or sem.phase.get(u) for u in bwd)


def test_scope_selection():
    dump = irtool.load(str(MLP))
    fc1 = "Default/network-WithLossCell/_backbone-MLP/fc1-Dense"
    graph = render_graph(dump, irtool.analyze(dump), scope=fc1, depth="all")
    assert graph.number_of_nodes() > 0
    assert all("fc1-Dense" in a["scope"] for _, a in graph.nodes(data=True))


def test_stage_on_pipeline_fixture():
    for rank in sorted(PIPE.glob("rank_*")):
        dump = irtool.load(str(next(rank.glob("*_validate_*"))))
        sem = Semantics.of(irtool.analyze(dump))
        assert sem.stage in (0, 1), rank  # the manifest's stages; checked per rank in test_parallel
        here = render_graph(dump, irtool.analyze(dump), stage=sem.stage, depth="all")
        wrong = f"no rank is on stage {1 - sem.stage} \\(stage {sem.stage}\\); try another --stage"  # docs/selection.md
        with pytest.raises(RenderError, match=wrong):
            render_graph(dump, irtool.analyze(dump), stage=1 - sem.stage, depth="all")
        assert here.number_of_nodes() == sum(1 for _ in dump.nodes())
        p2p = [a for _, a in here.nodes(data=True) if a["op"] in ("Send", "Receive")]
        assert p2p, rank
        peers = {a["peer_stage"] for a in p2p if a.get("category") == "pipeline"}
        assert peers <= {1 - sem.stage, None}


def test_stage_folder_picks_rank_of_that_stage():
    from irtool.report.render import load_input
    from irtool.selection import Selection

    # pipeline_2stage_8p: ranks 0-3 are stage 0, ranks 4-7 stage 1 (manifest.json)
    dump, facts, chosen = load_input(Selection.of(str(PIPE), 1))
    assert facts.stage == 1 and chosen.startswith("rank 4 ")


def test_hostile_scope_is_inert(tmp_path):
    dump = irtool.load(str(HOSTILE))
    assert any("<script>" in (n.scope or "") for n in dump.nodes())
    for depth in ("all", 4):
        graph = render_graph(dump, irtool.analyze(dump), depth=depth)
        data = to_bytes(graph, "svg")
        root = ET.fromstring(data)  # well-formed
        assert not [e for e in root.iter() if e.tag.endswith("script")]
        assert b"<script" not in data and b"\\N" not in data.replace(b"\\\\N", b"")
        assert picture_ids(svg_titles(data)) == set(graph.nodes)
        (parsed,) = pydot.graph_from_dot_data(to_bytes(graph, "dot").decode())
        assert {n.get_name() for n in parsed.get_nodes()} - {"node", "edge", "graph"} == set(graph.nodes)


def test_too_large_selection_raises():
    dump = irtool.load(str(SEMI))
    g, sem = irtool.build_graph(dump), Semantics.of(irtool.analyze(dump))
    import irtool.report.render as r

    old = r.MAX_BOXES
    r.MAX_BOXES = 10
    try:
        with pytest.raises(RenderError, match="fold deeper"):
            fold(dump, g, sem, select(dump, g, sem), "all")
    finally:
        r.MAX_BOXES = old


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_render_folder_svg(tmp_path):
    out = tmp_path / "x.svg"
    r = run_cli("render", str(SEMI.parent.parent), "-o", str(out))
    assert r.returncode == 0, r.stderr
    ET.fromstring(out.read_bytes())


def test_cli_render_errors_exit_2(tmp_path):
    r = run_cli("render", str(SEMI), "-o", str(tmp_path / "x.svg"), "--depth", "zero")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    r = run_cli("render", str(SEMI), "-o", str(tmp_path / "x.gif"))
    assert r.returncode == 2 and "format" in r.stderr
    assert not list(tmp_path.iterdir())


def test_a_picture_graphviz_would_take_minutes_on_is_refused_before_it_runs(tmp_path):
    # bench/layout_bench.py: the large GPT folded at depth 5 has 63 boxes and 383 edges and takes
    # Graphviz 45 s here; at depth 7 (543 boxes, 2267 edges) it ran for more than 15 minutes.
    out = tmp_path / "gpt.svg"
    r = run_cli("render", str(MINDIR / "gpt_large_perf" / "rank_0" / "19_validate_0078.ir.xz"), "-o", str(out),
                "--depth", "7")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "edges would keep Graphviz busy" in r.stderr and "--depth" in r.stderr and "irtool view" in r.stderr
    assert not out.exists()
    # the same selection as DOT text is written: no layout runs
    dot = tmp_path / "gpt.dot"
    assert run_cli("render", str(MINDIR / "gpt_large_perf" / "rank_0" / "19_validate_0078.ir.xz"), "-o", str(dot),
                   "--depth", "7").returncode == 0 and dot.stat().st_size > 0
