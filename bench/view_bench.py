#!/usr/bin/env python3
"""`irtool view` at real model size, in headless Chromium (Debian's, through Playwright), each figure
a ratio to Model Explorer showing the small 4-stage rank folder in the same run (the yardstick):

- graph visible: seconds from the command to the first graph drawn (URL printed, page loaded,
  Model Explorer's layout worker answered); a folder opens on its pipeline graph, a graph of more
  than `--part-size` operators on its overview (irtool.view.graphs.split_large);
- graph JSON received: seconds from the command to the graph JSON's arrival in the page (what the
  server does: read, analyse, build the graphs; the rest of graph visible is Model Explorer's work in
  the browser), and its size; and the CPU seconds the server's processes used until then (theirs alone,
  less stretched by the machine's load than the wall clock, but with whatever the builder went on to do
  while the page was still receiving: the index, the overlays);
- open the largest part (an overview's box with the most nodes, its inputs from other parts
  included): seconds from opening a page on it (the address naming the graph, as a link would) to
  its graph drawn: an upper bound of opening it from the overview, which needs no page load;
- expand: for each top-level group of the first graph and of the part, seconds from the expansion
  request Model Explorer sends on a double click (replayed with the page's own renderer id and
  settings) to the layout worker's answer; the slowest is reported;
- search jump: seconds from Alt+clicking a search result (an operator in the deepest namespace of
  the graph shown last) to the layout worker's answer revealing it;
- find from the overview: seconds from typing an operator's id into the overview's search box (an
  operator of the largest part) to that part drawn with the operator selected, choosing the first
  of the results irtool lists across all parts (two actions: type, choose).

An action that does not finish within LIMIT seconds is reported as such ("Processing" that does not end).
Also printed: the peak resident memory of the server and of the forked process building its graphs.

Usage: python bench/view_bench.py [BIG [SMALL]]
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, unquote

ROOT = Path(__file__).resolve().parents[1]
BIG = ROOT / "fixtures/mindir/gpt_large_perf/rank_0/19_validate_0078.ir.xz"
SMALL = ROOT / "fixtures/mindir/pipeline_4stage_8p"
LIMIT = 300.0
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
# Records the layout worker's answers (time, event type, graph) and the page's own requests, so a
# request can be replayed with the page's renderer id and settings.
HOOK = """
(() => {
  const Orig = window.Worker;
  window.__b = {answers: [], request: null, graph: null};
  window.Worker = function (url, opts) {
    const w = new Orig(url, opts);
    window.__b.worker = w;
    const post = w.postMessage.bind(w);
    w.postMessage = (m, ...rest) => { if (m && m.paneId) window.__b.request = m; return post(m, ...rest); };
    w.addEventListener('message', (e) => {
      const d = e.data || {};
      window.__b.answers.push([performance.now(), d.eventType]);
      const g = d.modelGraph;
      if (g && g.nodes) window.__b.graph = {id: g.id, groups: g.nodes.filter(n => n.nodeType === 1 && !n.nsParentId)
        .map(n => n.id), deepest: g.nodes.filter(n => n.nodeType === 0 && n.attrs.file).reduce((a, n) =>
          !a || (n.namespace || '').split('/').length > (a.namespace || '').split('/').length ? n : a, null),
        parts: g.nodes.filter(n => n.nodeType === 0 && n.subgraphIds && n.attrs.nodes)
          .map(n => [n.subgraphIds[0], Number(n.attrs.nodes) + Number(n.attrs['nodes read from other parts'] || 0)])};
    });
    return w;
  };
  window.Worker.prototype = Orig.prototype;
})();
"""
EXPAND_ANSWER, LOCATE_ANSWER = 3, 7  # Model Explorer's worker event types


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(path: Path) -> Iterator[tuple[str, subprocess.Popen, float]]:
    """`irtool view PATH --no-browser`: yields the URL, the process and the seconds to the URL."""
    port = _free_port()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "irtool.cli", "view", str(path), "--no-browser", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = None
        for line in proc.stderr:  # type: ignore[union-attr]
            m = re.search(r"Model Explorer at (\S+)", line)
            if m:
                url = m.group(1)
                break
        if url is None:
            raise SystemExit(f"irtool view {path} printed no URL")
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/check_health", timeout=2) as r:
                    if r.read() == b"model_explorer_ok":
                        break
            except OSError:
                time.sleep(0.1)
        yield url, proc, time.perf_counter() - start
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


def _answer_after(page: object, since: float, kind: int) -> float | None:
    """Seconds from `since` (page clock, ms) to the worker's first answer of `kind`, or None after LIMIT."""
    try:
        page.wait_for_function(  # type: ignore[attr-defined]
            f"window.__b.answers.some(a => a[0] > {since} && a[1] === {kind})", timeout=LIMIT * 1000)
    except Exception:  # Playwright's TimeoutError: the layout did not finish
        return None
    t = page.evaluate(f"window.__b.answers.find(a => a[0] > {since} && a[1] === {kind})[0]")  # type: ignore[attr-defined]
    return (t - since) / 1000


@contextmanager
def _peak_memory(session: int) -> Iterator[tuple[Callable[[], dict[int, float]], Callable[[], float]]]:
    """Each server process's peak resident memory (MB, VmHWM), read every 0.2 s while it lives (the
    graphs are built in a forked process that ends when they are written), and their CPU seconds (user
    and system, as last read): yields a function reading each. `status` is cheap to read; `smaps` would
    stall the process measured on its memory map lock."""
    peaks: dict[int, float] = {}
    cpu: dict[int, float] = {}
    done = threading.Event()
    tick = os.sysconf("SC_CLK_TCK")

    def sample() -> None:
        while not done.is_set():
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                    if int(fields[3]) == session:  # field 6: session id
                        pid = int(stat.parent.name)
                        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick  # fields 14, 15: utime, stime
                        status = (stat.parent / "status").read_text()
                        hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
                        peaks[pid] = max(peaks.get(pid, 0.0), hwm)
                except (OSError, IndexError, ValueError, AttributeError):
                    continue
            done.wait(0.2)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield lambda: dict(peaks), lambda: sum(cpu.values())
    finally:
        done.set()
        thread.join()


def _open(ctx: object, url: str) -> tuple[object, dict]:
    """A page of `url`, once Model Explorer drew its first graph; the graph as the hook recorded it."""
    page = ctx.new_page()  # type: ignore[attr-defined]
    local = url.split("/?")[0]
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
    page.goto(url)
    page.wait_for_function("window.__b.graph !== null && window.__b.request !== null", timeout=LIMIT * 1000)
    return page, page.evaluate("window.__b.graph")


def _opening(url: str, graph_id: str) -> str:
    """`url` opening on another graph of the model (the page's `uiState`, as irtool view sets it)."""
    base, _, query = url.partition("/?data=")
    data = json.loads(unquote(query))
    data["uiState"]["paneStates"][0]["selectedGraphId"] = graph_id
    return f"{base}/?data={quote(json.dumps(data))}"


def _search_jump(page: object, graph: dict, out: dict[str, object]) -> None:
    """Alt+click a search result (the operator in the deepest namespace, by its `file` attribute)."""
    box = page.locator("search-bar input")  # type: ignore[attr-defined]
    where = graph["deepest"]["attrs"]["file"]  # `dump:line`, the one node's own attribute
    box.fill(where.replace(".", "[.]"))
    box.press("Enter")
    result = page.locator(".search-results-container mat-tree-node:not(:has(.expandable-tree-node))").first  # type: ignore[attr-defined]
    result.wait_for(timeout=LIMIT * 1000)
    since = page.evaluate("performance.now()")  # type: ignore[attr-defined]
    start_jump = time.perf_counter()
    try:
        result.click(modifiers=["Alt"], timeout=10_000)
    except Exception:  # Playwright's TimeoutError: irtool's list of results across graphs may lie over it
        result.dispatch_event("click", {"altKey": True})
    # the worker's answer revealing it, or (a node drawn already, no layout needed) the panel showing it
    try:
        page.wait_for_function(f"""() => window.__b.answers.some(a => a[0] > {since} && a[1] === {LOCATE_ANSWER})
          || [...document.querySelectorAll('info-panel td')].some(td => td.innerText.trim() === {json.dumps(where)})""",  # type: ignore[attr-defined]
                               timeout=LIMIT * 1000)
        out["search jump"] = time.perf_counter() - start_jump
    except Exception:  # Playwright's TimeoutError
        out["search jump"] = None
    out["searched"] = where
    box.fill("")  # clear the search (its clear button may sit under the results)
    page.wait_for_timeout(1000)  # type: ignore[attr-defined]


def _expand_each(page: object, graph: dict, out: dict[str, object]) -> None:
    """Expand and collapse each top-level group of `graph`; the slowest expansion."""
    slowest = out.get("expand") or 0.0
    for group in graph["groups"]:
        for expand in (True, False):
            since = page.evaluate("performance.now()")  # type: ignore[attr-defined]
            page.evaluate("""([g, expand]) => { const r = window.__b.request;
              window.__b.worker.postMessage({eventType: 2, modelGraphId: window.__b.graph.id, groupNodeId: g, expand,
                showOnNodeItemTypes: r.showOnNodeItemTypes, nodeDataProviderRuns: r.nodeDataProviderRuns,
                rendererId: r.rendererId || r.paneId,
                paneId: r.paneId, all: false, ts: Date.now(), config: r.config}); }""", [group, expand])  # type: ignore[attr-defined]
            took = _answer_after(page, since, EXPAND_ANSWER)
            print(f"  {'expand' if expand else 'collapse'} {group}: {took}", file=sys.stderr, flush=True)
            if took is None:
                out["expand"], out["expand group"] = None, group
                return
            if expand and took > slowest:
                slowest, out["expand group"] = took, f"{group} of {graph['id']}"
    out["expand"] = slowest


def _find_jump(page: object, graph: dict, out: dict[str, object]) -> None:
    """Type the id of an operator of the largest part in the overview's search box, choose the first
    result irtool lists across all parts; the seconds to that part shown with the operator selected."""
    part = max(graph["parts"], key=lambda p: p[1])[0]
    node = page.evaluate("""async (part) => { const r = window.me_test.renderers[0];  // type: ignore[attr-defined]
      const ix = await window.irtool.index(r.curModelGraph.collectionLabel);
      const gi = ix.graphs.indexOf(part);
      return ix.nodes.filter(n => n[0] === gi && n[1].startsWith('%')).pop()[1]; }""", part)
    start = time.perf_counter()
    page.locator("search-bar input").fill(node)  # type: ignore[attr-defined]
    row = page.locator(".irtool-find-row").first  # type: ignore[attr-defined]
    try:
        row.wait_for(timeout=LIMIT * 1000)
        row.click()
        page.wait_for_function("""([part, node]) => { const r = window.me_test.renderers[0];  // type: ignore[attr-defined]
          return r && r.curModelGraph.id === part && r.selectedNodeId === node &&
            [...document.querySelectorAll('info-panel td')].some(td => td.innerText.trim() === node); }""",
                               arg=[part, node], timeout=LIMIT * 1000)
        out["find from the overview"] = time.perf_counter() - start
    except Exception:  # Playwright's TimeoutError
        out["find from the overview"] = None
    out["found"] = f"{node} of {part}"


def measure(browser: object, path: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    with served(path) as (url, proc, to_url), _peak_memory(proc.pid) as (peak, cpu):
        start = time.perf_counter() - to_url
        ctx = browser.new_context(viewport={"width": 1600, "height": 1000})  # type: ignore[attr-defined]
        ctx.add_init_script(HOOK)
        arrived: list[tuple[float, int]] = []
        ctx.on("requestfinished", lambda r: "load_graphs_json" in r.url and not arrived and arrived.append(
            (time.perf_counter() - start, int(r.response().headers.get("content-length", 0)), cpu())))  # type: ignore[union-attr]
        # (the length header: `sizes()` would copy the 64 MB body to this process while the page works)
        page, graph = _open(ctx, url)
        out["graph visible"] = time.perf_counter() - start
        (out["graph JSON received"], size, out["server CPU"]), = arrived
        out["graph JSON MB"] = size / 1e6
        out["graph"] = graph["id"]
        print(f"{path.name}: graph visible {out['graph visible']:.1f} s", file=sys.stderr, flush=True)
        page.wait_for_timeout(1000)
        _expand_each(page, graph, out)
        if graph["parts"]:  # an overview: find an operator from it; open its largest part as a link does (a new page)
            _find_jump(page, graph, out)
            part, out["part nodes"] = max(graph["parts"], key=lambda p: p[1])
            opened = time.perf_counter()
            page, graph = _open(ctx, _opening(url, part))
            out["open part"] = time.perf_counter() - opened
            out["part"] = graph["id"]
            page.wait_for_timeout(1000)
            _expand_each(page, graph, out)
        _search_jump(page, graph, out)
        peaks = peak()
        out["server peak RSS MB"] = peaks.pop(proc.pid, 0.0)
        out["build process peak RSS MB"] = max(peaks.values(), default=0.0)
        ctx.close()
    return out


def _fmt(v: object, yard: float) -> str:
    if v is None:
        return f"did not finish in {LIMIT:.0f} s"
    return f"{v:.1f} s ({v / yard:.1f}x)"  # type: ignore[operator]


def main(big: Path, small: Path) -> int:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            base = measure(browser, small)
            large = measure(browser, big)
        finally:
            browser.close()
    yard = float(base["graph visible"])  # type: ignore[arg-type]
    print(f"yardstick: {small.name} graph visible {yard:.1f} s after the command")
    for name, r in ((small.name, base), (big.name, large)):
        print(f"{name}: graph visible {_fmt(r['graph visible'], yard)} (graph JSON, {r['graph JSON MB']:.1f} MB, "
              f"received after {r['graph JSON received']:.1f} s, the server's processes having used "
              f"{r['server CPU']:.1f} s of CPU ({r['server CPU'] / base['server CPU']:.1f}x the folder's); "  # type: ignore[operator]
              f"first graph {r['graph']})")
        if "find from the overview" in r:
            print(f"  find {r['found']} from the overview (type its id, choose the first result) "
                  f"{_fmt(r['find from the overview'], yard)}")
        if "open part" in r:
            print(f"  open the largest part ({r['part nodes']} nodes with its inputs, {r['part']}) in a new page "
                  f"{_fmt(r['open part'], yard)}")
        print(f"  expand slowest top-level group ({r.get('expand group')}) {_fmt(r.get('expand'), yard)}, "
              f"search jump to {r.get('searched')} {_fmt(r.get('search jump'), yard)}, "
              f"server peak RSS {r['server peak RSS MB']:.0f} MB, its build process's "
              f"{r['build process peak RSS MB']:.0f} MB "
              "(pages they share counted in both)")
    return 0


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]]
    sys.exit(main(args[0] if args else BIG, args[1] if len(args) > 1 else SMALL))
