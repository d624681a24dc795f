"""`irtool view` and `irtool export --format model-explorer`: Model Explorer graphs of real dumps,
checked as JSON and in a real browser (Debian's Chromium driven by Playwright, WebGL through
SwiftShader). Every server is stopped at the end of its test."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture

from irtool.cli import main
from irtool.diff import diff_marks
from irtool.view.main import MindIRAdapter
from irtool.view.models import compare_models, models_for

SEMI = fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz")
PIPE = str(Path(fixture("pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz")).parents[1])
EDITED = str(Path(__file__).resolve().parents[1] / "fixtures" / "edited" / "semi_auto_8p_rank_0_validate_fc1_strategy.ir")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As root Chromium needs --no-sandbox; WebGL (Model Explorer draws with it) runs on SwiftShader; no
# background traffic (this machine reaches no other host).
CHROMIUM_ARGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# What the layout worker hands the renderer: per graph its nodes (id, label, op or group, expanded,
# parent group, incoming edges), so a test can tell which nodes are drawn.
WORKER_HOOK = """
(() => {
  const Orig = window.Worker;
  window.__me = {events: 0, graph: null};
  window.Worker = function (url, opts) {
    const w = new Orig(url, opts);
    w.addEventListener('message', (e) => {
      const d = e.data || {};
      window.__me.events += 1;
      const g = d.modelGraph;
      if (g && g.nodes) {
        window.__me.graph = {id: g.id, nodes: g.nodes.map(n => [n.id, n.label, n.nodeType, n.expanded === true,
          n.nsParentId || '', (n.incomingEdges || []).length])};
      }
    });
    return w;
  };
  window.Worker.prototype = Orig.prototype;
})();
"""


def _graph_nodes(doc: dict, graph_id: str) -> list[dict]:
    return next(g for g in doc["graphs"] if g["id"] == graph_id)["nodes"]


# --- the graphs, as JSON -------------------------------------------------------------------------

def test_export_of_a_sharded_dump(tmp_path: Path) -> None:
    out = tmp_path / "semi.json"
    res = CliRunner().invoke(main, ["export", SEMI, "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    (graph,) = doc["graphs"]
    # header: `Total number of cnodes: 290` (%0..%288 and Return), `# Total params: 25`, all read by some node
    ops = [n for n in graph["nodes"] if not n["id"].startswith("%para")]
    assert len(ops) == 290 and len(graph["nodes"]) == 290 + 25
    # `xzcat ... | grep -c '= AllGather('` -> 14
    gathers = [n for n in ops if n["label"] == "AllGather"]
    assert len(gathers) == 14
    first = next(n for n in gathers if n["id"] == "%5")
    attrs = {a["key"]: a["value"] for a in first["attrs"]}
    # line 104: `%5(equiv_90_CNode_533) = AllGather(%4) {instance name: redistribution_op_1806...}
    #            primitive_attrs: {... group: "4-6301172352641561019", ... rank_list: (0, 1, 2, 3) ...`
    assert attrs["file"] == "19_validate_0078.ir.xz:104"
    assert attrs["comm category"] == "redistribution" and attrs["comm group ranks"] == "0-3"
    assert attrs["instance name"].startswith("redistribution_op_18061495112778206992AllGather")
    assert first["incomingEdges"] == [{"sourceNodeId": "%4", "sourceNodeOutputId": "0", "targetNodeInputId": "0"}]
    assert first["namespace"] == "Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP"
    # the qkv MatMul (line 86) shows its strategy as MindInsight did
    qkv = next(n for n in ops if any(a["key"] == "file" and a["value"].endswith(":86") for a in n["attrs"]))
    assert {"key": "in strategy", "value": "(2,1)(1,4)"} in qkv["attrs"]
    # a folded scope counts what is inside it
    body = graph["groupNodeAttributes"]["Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP"]
    assert int(body["redistribution"]) > 0 and int(body["with strategy"]) > 0
    # node data files next to the graph: every communication node coloured by category
    category = json.loads((tmp_path / "semi.comm_category.json").read_text())
    assert set(category) == {graph["id"]} and category[graph["id"]]["results"]["%5"]["bgColor"]
    assert len(category[graph["id"]]["results"]) == sum(1 for n in ops if "style" in n)


def test_pipeline_graph_pairs_every_send_with_its_receive() -> None:
    model = models_for(PIPE)
    ids = [g["id"] for g in model.graphs]
    # one rank per stage (manifest: ranks 0-3 stage 0, 4-7 stage 1) and the pipeline graph first
    assert ids[0] == "pipeline" and [i.split(":")[0] for i in ids[1:]] == ["stage 0 rank 0", "stage 1 rank 4"]
    nodes = _graph_nodes({"graphs": model.graphs}, "pipeline")
    # `grep -cE '= (Send|Receive)\\('`: 8 on rank 0 (4 Send, 4 Receive), 8 on rank 4
    assert len(nodes) == 16
    edges = [(e["sourceNodeId"], n["id"]) for n in nodes for e in n["incomingEdges"]]
    # rank 0's 4 forward Sends reach rank 4's 4 Receives; rank 4's 4 backward Sends reach rank 0's Receives
    assert len(edges) == 8
    label = {n["id"]: n["label"] for n in nodes}
    assert all(label[a] == "Send" and label[b] == "Receive" and a.split("/")[0] != b.split("/")[0] for a, b in edges)


def test_compare_marks_the_changed_strategy() -> None:
    # fixtures/edited: the fc1 MatMul's in_strategy of semi_auto_8p rank 0 changed by hand (README there)
    old, new = compare_models(str(Path(SEMI).parent), EDITED, diff_marks)
    marks_old = [r for g in old.node_data["diff"].values() for r in g["results"].values()]
    marks_new = [r for g in new.node_data["diff"].values() for r in g["results"].values()]
    assert len(marks_old) == len(marks_new) == 1 and marks_new[0]["bgColor"] == "#ffe082"  # one `changed`


def test_adapter_extension_converts_a_dump() -> None:
    graphs = MindIRAdapter().convert(SEMI, {})["graphs"]
    assert len(graphs) == 1 and len(graphs[0].nodes) == 290 + 25


def test_stage_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["export", PIPE, "--stage", "7", "-o", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "stages 0, 1" in res.output and not (tmp_path / "x.json").exists()


# --- in a real browser -----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(*paths: str) -> Iterator[str]:
    """`irtool view PATHS --no-browser` on a free port; yields the page URL; always stops the server."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "irtool.cli", "view", *paths, "--no-browser", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = None
        for line in proc.stderr:  # type: ignore[union-attr]
            m = re.search(r"Model Explorer at (\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "irtool view printed no URL"
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/check_health", timeout=2) as r:
                    if r.read() == b"model_explorer_ok":
                        break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, "the server did not start"
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _open(browser: object, url: str) -> object:
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000})  # type: ignore[attr-defined]
    ctx.add_init_script(WORKER_HOOK)
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    local = url.split("/?")[0]
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
    page.goto(url)
    page.wait_for_function("window.__me.graph !== null")
    page.locator("info-panel table.info-attrs").first.wait_for()
    page.wait_for_timeout(1000)
    return page


def _info(page: object) -> dict[str, str]:
    """Key -> value rows of the side panel's graph info."""
    return page.evaluate("""() => {  // type: ignore[attr-defined]
      const out = {};
      for (const tr of document.querySelectorAll('info-panel table.metadata-table tr')) {
        const td = tr.querySelectorAll('td');
        if (td.length >= 2) out[td[0].innerText.trim()] = td[1].innerText.trim();
      }
      return out; }""")


def _drawn(page: object) -> dict:
    """Labels of the nodes drawn now (every enclosing scope expanded), and the edge count."""
    return page.evaluate("""() => {  // type: ignore[attr-defined]
      const g = window.__me.graph, byId = {};
      for (const n of g.nodes) byId[n[0]] = n;
      const shown = g.nodes.filter(n => { let p = n[4];
        while (p) { const q = byId[p]; if (!q || !q[3]) return false; p = q[4]; } return true; });
      return {id: g.id, ops: g.nodes.filter(n => n[2] === 0).length, shown: shown.map(n => n[0]),
              edges: g.nodes.reduce((s, n) => s + n[5], 0)}; }""")


def test_a_dump_in_model_explorer(browser: object, tmp_path: Path) -> None:
    with served(SEMI) as url:
        page = _open(browser, url)
        page.screenshot(path=str(tmp_path / "01_loaded.png"))
        info = _info(page)
        # header: 290 cnodes, 25 parameters; Model Explorer counts both as op nodes
        assert info["nodes"] == "290" and info["op node count"] == str(290 + 25), info
        # a regex search for AllGather finds the dump's 14 AllGathers (`grep -c '= AllGather('`)
        box = page.locator("search-bar input")
        box.fill("^AllGather$")
        box.press("Enter")
        results = page.locator(".search-results-container")
        results.wait_for()
        for kind in ("Attrs", "Inputs", "Outputs"):  # match node labels only, not attribute values
            option = results.locator(".option-container", has_text=kind)
            if "selected" in (option.get_attribute("class") or ""):
                option.click()
        page.wait_for_timeout(500)
        assert results.locator(".title-label").inner_text().strip().startswith("14 "), \
            results.locator(".title-label").inner_text()
        page.screenshot(path=str(tmp_path / "02_search.png"))
        page.locator("search-bar .btn-clear-container").click()
        # expanding the scopes reveals the operators inside them
        before = _drawn(page)
        assert "%5" not in before["shown"]  # line 104's AllGather, inside body-ShardedAttentionMLP
        events = page.evaluate("window.__me.events")
        page.locator("div.expand-all").click()
        page.wait_for_function(f"window.__me.events > {events}")
        page.wait_for_timeout(1000)
        after = _drawn(page)
        assert "%5" in after["shown"] and len(after["shown"]) > len(before["shown"])
        # the node data overlays are loaded with the graph
        assert page.get_by_text("comm category").count() and page.get_by_text("comm bytes").count()
        page.screenshot(path=str(tmp_path / "03_expanded.png"))
        if os.environ.get("IRTOOL_SCREENSHOTS"):  # how README's picture is made
            shutil.copy(tmp_path / "03_expanded.png", Path(os.environ["IRTOOL_SCREENSHOTS"]) / "view_semi_auto.png")


def test_the_pipeline_graph_of_a_folder(browser: object, tmp_path: Path) -> None:
    with served(PIPE) as url:
        page = _open(browser, url)
        page.locator("graph-selector").first.click()
        events = page.evaluate("window.__me.events")
        page.locator('.graph-item-container[data-id="pipeline"]').click()
        page.wait_for_function(f"window.__me.events > {events} && window.__me.graph.id === 'pipeline'")
        page.wait_for_timeout(1000)
        drawn = _drawn(page)
        # 8 Send/Receive on rank 0 and 8 on rank 4 (grep), 8 pairs: an edge from each Send to its Receive
        assert drawn["ops"] == 16 and drawn["edges"] == 8, drawn
        info = _info(page)
        assert info["Send/Receive"] == "16" and info["pairs"] == "8", info
        page.screenshot(path=str(tmp_path / "pipeline.png"))
