// irtool's additions to Model Explorer's page, served by `irtool view` (irtool/view/serve.py).
//
// - Search across graphs: what is typed into the search box of any graph (an operator, `%154`,
//   `file:line`, a scope; space-separated regular expressions that must all match, as Model
//   Explorer's own search reads them) is also looked up in every other graph of the model (the
//   index `irtool/index/<model>.json`, graphs.node_index); choosing a result opens its graph with
//   the node selected.
// - Links to other graphs: the panel rows `in part` (a node of another part), `stage graph` and
//   `comm serves` (a pipeline box's node, and the node it serves, in its stage graph) open the graph
//   where the node is, with it selected.
//
// - A folder's pipeline and execution-order graphs (`IRTOOL.lanes`) shown with their groups, a rank
//   each, expanded when a pane opens them.
// - A split graph's parts as stubs, each part's graph fetched when Model Explorer first lays it out (its worker
//   asked for it): the page loads the overview, not the 54 MB of every part of the 68 MB dump. While it waits,
//   a line says for what (the part fetched, then laid out), or why the part could not be fetched (after PART_WAIT
//   seconds at most: it is then drawn empty, Model Explorer's spinner never turns for ever).
// - The graph selector in the model's own order (a folder's pipeline and execution-order graphs, then
//   its stages in stage order, each rank's entry graph first; a split graph's overview before its
//   parts): Model Explorer sorts a model from a server by node count (it drops the graph JSON's
//   `graphSorting`).
//
// - A folder's pictures (`IRTOOL.pictures`: the timeline and the memory over the step, as `irtool render
//   --timeline` and `--memory` draw them): a link each in a small bar, opening in a new tab.
//
// - The node a page opens on (`irtool view --node`, a folder's first pipeline box: `IRTOOL_OPEN`, its
//   graph is in the address, serve.py) selected, again while Model Explorer's first layouts drop it.
//
// - A folder's lanes laid out as a person reads them: the pipeline graph's columns aligned at the top, the
//   execution-order graph's rows at the left (Model Explorer centres them); its pair lines drawn whether or not
//   a box is selected; a plain click on a panel link (`pairs with`, a chain's nodes) selects its node (Model
//   Explorer only pans to it unless Alt is held), each link saying its node's operator.
// - A phase selector on a graph whose nodes say their phase (the `phase` fact: forward, backward, recompute,
//   optimizer): each on or off; the graph shown is the one of the phases on (a graph of its own, named so).
// - Overlays: a legend saying what the overlay shown colours, its unit, its scale and the range of its values
//   in the graph shown; the overlay a person chose kept whatever opens the next graph (Model Explorer shows the
//   first loaded one), none where it has no values (the graph's own colours show then).
//
// A graph is opened through Model Explorer's own app service (the renderer each pane registers in
// `window.me_test`, as its tests use it); without it, the page is loaded again at the node (its
// address's `uiState`).
(() => {
  "use strict";
  const IR = window.IRTOOL || {models: []};
  const LINK_KEYS = new Set(["in part", "stage graph", "comm serves"]);
  const SHOWN = 100;  // results listed at most (their count is said)
  const indexes = {};

  // --- a folder's lanes aligned -------------------------------------------------------------------

  function alignLanes(mg) {
    // top-level groups laid out side by side (columns) aligned at the top, one under another (rows) at the left;
    // everything inside a moved group moved with it (its nodes' global offsets)
    if (!mg || !Array.isArray(mg.nodes) || !(IR.lanes || []).includes(mg.id)) return;
    const byId = new Map(mg.nodes.map((n) => [n.id, n]));
    const tops = mg.nodes.filter((n) => n.nodeType === 1 && !n.nsParentId && typeof n.x === "number");
    if (tops.length < 2) return;
    const rows = (mg.groupNodeConfigs || []).some((c) => c.namespaceRegex === "^$" && c.layoutDirection === 1);
    if (rows) inTime(mg, tops);
    const [axis, global] = rows ? ["x", "globalX"] : ["y", "globalY"];
    const first = Math.min(...tops.map((n) => n[axis]));
    const shift = new Map(tops.map((n) => [n.id, first - n[axis]]));
    for (const n of tops) n[axis] = first;
    for (const n of mg.nodes) {
      let top = null;
      for (let p = n.nsParentId; p; p = byId.get(p) && byId.get(p).nsParentId) top = p;
      if (top && shift.get(top)) n[global] = (n[global] || 0) + shift.get(top);
    }
  }

  const SECONDS = {"s": 1, "ms": 1e-3, "µs": 1e-6};

  function span(text) {
    // a unit's `time` row, `25.2 µs to 50.3 µs`, as [start, end] in seconds
    const m = /^([\d.,]+) (s|ms|µs) to ([\d.,]+) (s|ms|µs)$/.exec(text || "");
    return m && [parseFloat(m[1].replaceAll(",", "")) * SECONDS[m[2]], parseFloat(m[3].replaceAll(",", "")) * SECONDS[m[4]]];
  }

  const ASPECT = 1.3;  // width / height of the graph area of a 1600 x 1000 window beside the side panel
  const LINE = 12;  // scene units between two lines of a row

  function inTime(mg, rows) {
    // a row's boxes where and as long as they run in the step (their `time` rows), on one scale for every row: the
    // shortest unit as wide as its label; rows keep their order when some box has no time or sits deeper. A step
    // longer than the graph area is wide at fit wraps onto lines, each the same stretch of time in every row (its
    // units where they start), so that the whole step fits the area with its labels at a size people read
    const ops = mg.nodes.filter((n) => n.nodeType === 0);
    const ids = new Set(rows.map((n) => n.id));
    const times = ops.map((n) => span(n.attrs && n.attrs.time));
    if (!ops.length || times.some((t) => !t) || ops.some((n) => !ids.has(n.nsParentId))) return;
    const wide = (n) => 7 * n.label.length + 16;  // about what its label needs
    const scale = Math.max(...ops.map((n, i) => times[i][1] > times[i][0] ? (wide(n) + 4) / (times[i][1] - times[i][0]) : 0));
    if (!(scale > 0 && isFinite(scale))) return;
    const pad = Math.min(...ops.map((n) => n.x));
    const at = ops.map((n, i) => times[i][0] * scale);
    ops.forEach((n, i) => { n.width = Math.max(wide(n), (times[i][1] - times[i][0]) * scale - 4); });
    const step = Math.max(...ops.map((n, i) => at[i] + n.width));
    const line = Math.max(...ops.map((n) => n.height)) + LINE;
    const tall = rows.reduce((sum, r) => sum + r.height, 0) + 20 * (rows.length - 1);
    const longest = Math.max(...ops.map((n) => n.width));
    const fit = (k) => Math.min(ASPECT / (step / k + longest + 2 * pad), 1 / (tall + rows.length * (k - 1) * line));
    let lines = 1;
    while (lines < 8 && fit(lines + 1) > fit(lines)) lines += 1;
    const stretch = step / lines;
    const onLine = new Map();
    ops.forEach((n, i) => {
      const k = Math.min(lines - 1, Math.floor(at[i] / stretch));
      n.x = pad + at[i] - k * stretch;
      n.y += k * line;
      onLine.set(n.id, k);
    });
    let below = 0;  // rows under a taller one moved down, with what they hold
    const moved = new Map();
    for (const row of [...rows].sort((a, b) => a.y - b.y)) {
      const mine = ops.filter((n) => n.nsParentId === row.id);
      if (mine.length) row.width = Math.max(...mine.map((n) => n.x + n.width)) + pad;
      row.y += below;
      moved.set(row.id, below);
      const extra = mine.length ? Math.max(...mine.map((n) => onLine.get(n.id))) * line : 0;
      row.height += extra;
      below += extra;
    }
    for (const n of ops) n.globalY = (n.globalY || 0) + moved.get(n.nsParentId);
  }

  // --- a split graph's parts loaded when opened -------------------------------------------------------
  // The page gets each part as a stub (graphs.part_stub: no nodes, its number in its info): Model Explorer asks its
  // worker to lay out a graph with the graph's JSON, so a stub's graph is fetched then, put in place of the stub (the
  // page's own copy: what opens it again, the phase selector, read it) and the request sent on; the requests after
  // it wait their turn.

  const STUB = "irtool part";
  const STUB_NODES = "irtool part nodes";

  function partUrl(m) {
    const g = m && m.graph;
    const info = g && !g.nodes.length && g.groupNodeAttributes && g.groupNodeAttributes[""];
    const i = info && info[STUB] !== undefined ? IR.models.indexOf(g.collectionLabel) : -1;
    return i >= 0 ? `irtool/part/${i}/${info[STUB]}.json` : null;
  }

  const PART_WAIT = 180;  // seconds a part's graph is waited for (the server makes the 68 MB dump's in about 10)

  function fill(graph, url) {
    // the part's graph put in place of its stub; the reason it could not be, or null
    const stop = new AbortController();
    const late = setTimeout(() => stop.abort(), PART_WAIT * 1000);
    return fetch(url, {signal: stop.signal}).then((r) => (r.ok ? r.json() : Promise.reject(new Error(`the server answered ${r.status}`))))
      .then((full) => {
        graph.nodes = full.nodes;
        graph.groupNodeAttributes = full.groupNodeAttributes;
        const app = renderer(0) && renderer(0).appService;
        if (app && app.curGraphCollections.set) app.curGraphCollections.set([...app.curGraphCollections()]);  // counted
        return null;
      }).catch((e) => (stop.signal.aborted ? `nothing in ${PART_WAIT} s` : String(e.message || e)))
      .finally(() => clearTimeout(late));
  }

  // What the page waits for while Model Explorer says "Processing graph": a part's graph fetched, then laid out
  // (until the worker answers with it); or why it could not be fetched (the part is then drawn empty).
  let waitingFor = null;

  function waiting(text, graphId = null, failed = false) {
    let el = document.querySelector(".irtool-waiting");
    waitingFor = graphId;
    if (!text) {
      if (el) el.remove();
      return;
    }
    if (!el) {
      el = document.createElement("div");
      el.className = "irtool-waiting";
      document.body.append(el);
    }
    el.textContent = text;
    el.classList.toggle("irtool-waiting-failed", failed);
    if (failed) setTimeout(() => { if (el.textContent === text) waiting(null); }, 30000);
  }

  function fetching(graph, url) {
    // `fill`, saying what the page waits for, and for how long
    const info = graph.groupNodeAttributes[""];
    const what = `part "${graph.id}" (${info[STUB_NODES]} nodes)`;
    const start = Date.now();
    const say = () => waiting(`irtool: fetching the graph of ${what} from the server, ${Math.round((Date.now() - start) / 1000)} s`,
      graph.id);
    say();
    const tick = setInterval(say, 1000);
    return fill(graph, url).then((failed) => {
      clearInterval(tick);
      if (failed) waiting(`irtool: the graph of ${what} could not be fetched (${failed}): drawn empty; open it again to retry`, null, true);
      else waiting(`irtool: Model Explorer is laying out ${what}`, graph.id);
      return failed;
    });
  }

  function stubCounts() {
    // the graph selector counts a stub's nodes (none): its own and those it reads instead (once loaded, with
    // those its links name)
    const app = renderer(0) && renderer(0).appService;
    if (!app || !app.curGraphCollections) return;
    const counts = new Map();
    for (const c of app.curGraphCollections()) {
      for (const g of c.graphs) {
        const info = g.groupNodeAttributes && g.groupNodeAttributes[""];
        if (info && info[STUB] !== undefined) counts.set(g.id, info[STUB_NODES]);
      }
    }
    if (!counts.size) return;
    for (const el of document.querySelectorAll("[data-id] .node-count-label")) {
      const n = counts.get(el.closest("[data-id]").dataset.id);
      if (n !== undefined && el.textContent.trim() !== `${n} nodes`) el.textContent = ` ${n} nodes `;
    }
  }

  function loadParts(w) {
    const post = w.postMessage.bind(w);
    let held = null;  // the requests sent while a part's graph is fetched, in order
    const failed = new Set();  // a part's address whose graph could not be fetched, while its requests are sent on
    w.postMessage = (m, ...rest) => {
      if (held) {
        held.push([m, rest]);
        return;
      }
      const url = partUrl(m);
      if (!url || failed.has(url)) {
        post(m, ...rest);
        return;
      }
      held = [[m, rest]];
      fetching(m.graph, url).then((reason) => {
        const waiting = held;
        held = null;
        if (reason) failed.add(url);  // laid out as the stub it still is (asked for again when opened again)
        for (const [x, r] of waiting) w.postMessage(x, ...r);  // another stub among them holds the rest again
        failed.delete(url);
      });
    };
  }

  const NativeWorker = window.Worker;
  if (NativeWorker) {  // the layouts Model Explorer's worker sends, adjusted before the page draws them
    window.Worker = function (url, opts) {
      const w = new NativeWorker(url, opts);
      w.addEventListener("message", (e) => {
        const g = e.data && e.data.modelGraph;
        alignLanes(g);
        if (g && waitingFor && g.id === waitingFor) waiting(null);  // the part laid out
      });
      loadParts(w);
      return w;
    };
    window.Worker.prototype = NativeWorker.prototype;
  }

  function index(label) {
    // a model's node index (graphs.node_index), each node's searched fields made once
    const i = IR.models.indexOf(label);
    if (i < 0) return Promise.resolve(null);
    if (!indexes[label]) {
      indexes[label] = fetch(`irtool/index/${i}.json`).then((r) => r.json()).then((ix) => {
        ix.fields = ix.nodes.map((n) => [n[2], n[1], n[3] >= 0 ? `${ix.files[n[3]]}:${n[4]}` : "",
                                         ix.scopes[n[5]] ? `${ix.scopes[n[5]]}/${n[6]}` : n[6], n[7]]);
        return ix;
      }).catch(() => null);
    }
    return indexes[label];
  }

  function panes() {
    return [...document.querySelectorAll(".pane-container")];
  }

  function paneOf(el) {
    return panes().findIndex((p) => p.contains(el));
  }

  function renderer(pane) {
    const me = window.me_test;
    return me && me.renderers ? me.renderers[pane] : undefined;
  }

  function shown(pane) {
    // [graph id, model label] of the graph a pane shows
    const r = renderer(pane);
    const g = r && (r.curModelGraph || r.modelGraph);
    return g ? [g.id, g.collectionLabel || ""] : [null, ""];
  }

  function asked(pane) {
    // the id of the graph a pane was last asked to show (it shows the one before until that one is laid out)
    const r = renderer(pane);
    const app = r && r.appService;
    const p = app && app.panes()[pane];
    const g = p && app.paneIdToGraph && app.paneIdToGraph[p.id];
    return g ? g.id : null;
  }

  function openNode(pane, graphId, nodeId, label, retries = 9) {  // looked at for about 100 s (see `ensure`)
    const r = renderer(pane);
    const app = r && r.appService;
    if (app && app.selectGraphInPane && app.setNodeToReveal && app.curGraphCollections) {
      for (const c of app.curGraphCollections()) {
        const g = c.graphs.find((x) => x.id === graphId);
        if (g && (!label || c.label === label)) {
          const [now, nowLabel] = shown(pane);
          if (now !== graphId || nowLabel !== c.label) app.selectGraphInPane(g, pane);
          const paneId = app.panes()[pane].id;
          if (app.curInitialUiState) app.curInitialUiState.set(undefined);
          app.selectNode(paneId, undefined);
          if (app.curToLocateNodeInfo) app.curToLocateNodeInfo.set(undefined);
          app.setNodeToReveal(paneId, nodeId);
          if (retries) ensure(pane, graphId, nodeId, label, retries, Date.now());
          return;
        }
      }
    }
    const params = new URLSearchParams(location.search);
    const data = JSON.parse(params.get("data") || "{}");
    data.uiState = {paneStates: [{deepestExpandedGroupNodeIds: [], selectedNodeId: nodeId, selectedGraphId: graphId,
                                  selectedCollectionLabel: label || "", widthFraction: 1}]};
    params.set("data", JSON.stringify(data));
    location.assign("?" + params.toString());
  }

  function go(pane, graphId, nodeId, label) {
    // the user's own step (a link, a search result, the console): the node the page opened on is not revealed
    // again in that pane
    for (const o of opens) if (o.pane === pane) o.done = true;
    openNode(pane, graphId, nodeId, label);
  }

  const touched = new Map();  // pane -> when the user last pressed a pointer in it
  document.addEventListener("pointerdown", (e) => {
    const pane = e.target instanceof Element ? paneOf(e.target) : -1;
    if (pane >= 0) touched.set(pane, Date.now());
  }, true);

  function ensure(pane, graphId, nodeId, label, tries, since, wait = 1500) {
    // Model Explorer drops a reveal a layout running then (a search cleared, an overlay shown) undoes, and may
    // draw the graph a pane showed before when that one's late layout comes in after, and may drop the node
    // selected a while after it was shown so (on a loaded machine, seconds later): asked again while the pane
    // shows the graph with nothing selected, or another graph with nothing being laid out (never once another
    // graph was asked for, nor over a node the user chose meanwhile, nor once the user pressed a pointer in the
    // pane; looked at again while a layout runs, and while the node stays selected)
    setTimeout(() => {
      const r = renderer(pane);
      const app = r && r.appService;
      if (!r || tries <= 0 || (asked(pane) || graphId) !== graphId || (touched.get(pane) || 0) > since) return;
      const there = shown(pane)[0] === graphId;
      if (there && (!nodeId || (r.selectedNodeId && r.selectedNodeId !== nodeId))) return;
      if (there && r.selectedNodeId === nodeId) {
        ensure(pane, graphId, nodeId, label, tries - 1, since, wait);
        return;
      }
      if (there || !(app.processing && app.processing())) openNode(pane, graphId, nodeId, label, 0);
      // less and less often: asking again restarts a layout, which a loaded machine runs late (a 68 MB dump's
      // part took over 8 s: asked every 8 s it was never laid out)
      ensure(pane, graphId, nodeId, label, tries - 1, since, Math.min(wait * 2, 16000));
    }, wait);
  }

  // --- search across graphs ---------------------------------------------------------------------

  function regexes(text) {
    return text.replaceAll("\\ ", "\u0000").split(" ").filter((p) => p.trim() !== "").map((p) => {
      const src = p.replaceAll("\u0000", "\\ ");
      try {
        return [src.toLowerCase(), new RegExp(src, "i")];
      } catch (e) {
        return [src.toLowerCase(), new RegExp(src.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i")];
      }
    });
  }

  function search(ix, text, current) {
    // nodes of other graphs than `current` matching every part of `text`, exact matches first
    const parts = regexes(text);
    if (!parts.length) return [];
    const found = [];
    for (let i = 0; i < ix.nodes.length; i++) {
      const n = ix.nodes[i];
      if (ix.graphs[n[0]] === current) continue;
      const fields = ix.fields[i];
      let exact = false;
      let all = true;
      for (const [low, re] of parts) {
        if (!fields.some((f) => f && re.test(f))) {
          all = false;
          break;
        }
        exact = exact || fields.some((f) => f && (f.toLowerCase() === low || f.toLowerCase().endsWith("/" + low)));
      }
      if (all) found.push([exact ? 0 : 1, n, fields]);
    }
    found.sort((a, b) => a[0] - b[0]);
    return found.map((f) => [f[1], f[2]]);
  }

  const boxes = new Map();  // pane index -> its results element

  function box(pane) {
    let el = boxes.get(pane);
    if (!el || !el.isConnected) {
      el = document.createElement("div");
      el.className = "irtool-find";
      el.addEventListener("mousedown", (e) => e.preventDefault());  // the search box keeps its focus
      document.body.appendChild(el);
      boxes.set(pane, el);
    }
    return el;
  }

  function hide(pane) {
    const el = boxes.get(pane);
    if (el) el.style.display = "none";
  }

  function place(pane, el, input) {
    const bar = input.closest("search-bar") || input;
    const rect = bar.getBoundingClientRect();
    let left = rect.left;
    const own = panes()[pane] && panes()[pane].querySelector(".search-results-container");
    if (own && own.offsetParent !== null) left = Math.max(left, own.getBoundingClientRect().right + 8);
    el.style.left = `${left}px`;
    el.style.top = `${rect.bottom + 6}px`;
  }

  function show(pane, input, ix, current, label, text) {
    const found = search(ix, text, current);
    const el = box(pane);
    if (!found.length) {
      hide(pane);
      return;
    }
    el.replaceChildren();
    const title = document.createElement("div");
    title.className = "irtool-find-title";
    title.textContent = `${found.length} in ${current ? "other graphs" : "all graphs"}` +
      (found.length > SHOWN ? ` (the first ${SHOWN})` : "");
    el.appendChild(title);
    for (const [n, fields] of found.slice(0, SHOWN)) {
      const row = document.createElement("div");
      row.className = "irtool-find-row";
      row.dataset.graph = ix.graphs[n[0]];
      row.dataset.node = n[1];
      const op = document.createElement("span");
      op.className = "irtool-find-op";
      op.textContent = n[2];
      const what = document.createElement("span");
      what.className = "irtool-find-id";
      what.textContent = ` ${n[1]}${fields[2] ? " " + fields[2] : ""}`;
      const where = document.createElement("div");
      where.className = "irtool-find-where";
      where.textContent = ix.graphs[n[0]];
      row.append(op, what, where);
      row.addEventListener("click", () => {
        hide(pane);
        go(pane, row.dataset.graph, row.dataset.node, label);
      });
      el.appendChild(row);
    }
    el.style.display = "block";
    place(pane, el, input);
  }

  let timer = null;
  document.addEventListener("input", (e) => {
    const input = e.target;
    if (!(input instanceof HTMLInputElement) || !input.closest("search-bar")) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      const pane = paneOf(input);
      const [now, label] = shown(pane);
      const current = phaseBase.get(now) || now;
      const text = input.value.trim();
      if (!text) {
        hide(pane);
        return;
      }
      index(label).then((ix) => {
        if (ix && input.value.trim() === text) show(pane, input, ix, current, label, text);
      });
    }, 350);  // after Model Explorer's own search (300 ms), so its results are placed first
  }, true);
  document.addEventListener("click", (e) => {
    if (e.target instanceof Element && e.target.closest(".btn-clear-container")) {
      const pane = paneOf(e.target);
      if (pane >= 0) hide(pane);
    }
  }, true);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") boxes.forEach((el) => { el.style.display = "none"; });
  }, true);

  // --- panel rows linking to other graphs ---------------------------------------------------------

  function panelNode(p) {
    // the node a pane's panel shows (its `id` row): Model Explorer reuses the panel's rows from node to node, and
    // may redraw them before its renderer says which node is selected
    const row = [...p.querySelectorAll("info-panel tr")].find((tr) => {
      const key = tr.querySelector("td.key");
      return key && key.innerText.trim() === "id";
    });
    const value = row && row.querySelector("td.value");
    return value ? value.innerText.trim().split(/\s/)[0] : "";
  }

  function decorate() {
    panes().forEach((p, pane) => {
      const [now, label] = shown(pane);
      const graph = phaseBase.get(now) || now;  // a graph of some phases: its links are those of the whole
      const node = panelNode(p);
      if (!graph || !node) return;
      const rows = [...p.querySelectorAll("info-panel tr")].filter((tr) => {
        const key = tr.querySelector("td.key");
        return key && LINK_KEYS.has(key.innerText.trim()) && tr.dataset.irtoolLink !== `${graph}\u0000${node}`;
      });
      if (!rows.length) return;
      index(label).then((ix) => {
        if (!ix || panelNode(p) !== node) return;  // another node's now: decorated again for it
        const targets = (ix.links[graph] && ix.links[graph][node]) || {};
        for (const tr of rows) {
          tr.dataset.irtoolLink = `${graph}\u0000${node}`;
          const target = targets[tr.querySelector("td.key").innerText.trim()];
          const value = tr.querySelector("td.value");
          if (!value) continue;
          if (!target) {  // a row of a node whose value is no link (reused from one that was)
            value.classList.remove("irtool-link");
            value.onclick = null;
            value.querySelectorAll(".irtool-locate").forEach((e) => e.remove());
            continue;
          }
          value.classList.add("irtool-link");
          value.title = `open ${target[1]} in ${target[0]}`;
          if (!value.querySelector(".irtool-locate")) {
            const icon = document.createElement("span");
            icon.className = "material-icons irtool-locate";
            icon.textContent = "my_location";
            value.appendChild(icon);
          }
          value.onclick = () => go(pane, target[0], target[1], label);
        }
      });
    });
  }

  // --- the graph selector in the model's order ----------------------------------------------------

  function sortSelector() {
    const r = renderer(0);
    const app = r && r.appService;
    if (!app || !app.curGraphCollections || !app.curGraphCollections.set) return;
    const cols = app.curGraphCollections();
    let changed = false;
    for (const c of cols) {
      if (c.irtoolSorted || !c.graphsWithLevel) continue;
      const order = new Map(c.graphs.map((g, i) => [g.id, i]));
      // the selector's tree (a graph a node of another opens is listed under it), siblings in the model's order
      const root = {kids: []};
      const stack = [root];
      for (const e of c.graphsWithLevel) {
        const node = {e, kids: []};
        stack.length = e.level + 1;
        stack[e.level].kids.push(node);
        stack.push(node);
      }
      const out = [];
      const walk = (n) => {
        n.kids.sort((a, b) => order.get(a.e.graph.id) - order.get(b.e.graph.id));
        for (const k of n.kids) {
          out.push(k.e);
          walk(k);
        }
      };
      walk(root);
      c.graphsWithLevel = out;
      c.irtoolSorted = true;
      changed = true;
    }
    if (changed) app.curGraphCollections.set([...cols]);  // the selector's list is made again from them
  }

  // --- the node the page opens on ----------------------------------------------------------------

  let openTimer = null;
  const opens = (window.IRTOOL_OPEN || []).map(([pane, graph, node, label]) => ({pane, graph, node, label, last: 0,
                                                                                  since: 0, start: 0, seen: false,
                                                                                  done: false}));

  function opening() {
    // selected until it stays so for 2 s (a layout running when a node is revealed may undo it: nothing is
    // selected then), a try a second and a half at most, for a minute at most once the graph is drawn (a page
    // loading in a background tab draws late); never once it stayed or another node was chosen (the user's own
    // clicks are not undone)
    const now = Date.now();
    for (const o of opens) {
      const r = renderer(o.pane);
      if (o.done || (o.start && now - o.start > 60000)) {
        o.done = true;
        continue;
      }
      const graph = asked(o.pane);  // another graph chosen in the selector once this one was shown: never undone
      if (graph === o.graph || shown(o.pane)[0] === o.graph) o.seen = true;
      if (o.seen && graph && graph !== o.graph) {
        o.done = true;
        continue;
      }
      if (!r || shown(o.pane)[0] !== o.graph || !r.nodesToRender || !r.nodesToRender.length) continue;
      o.start = o.start || now;
      if (r.selectedNodeId === o.node) {
        o.since = o.since || now;
        o.done = now - o.since > 2000;
        continue;
      }
      if (r.selectedNodeId) {  // another node chosen meanwhile (a click, a link): never undone
        o.done = true;
        continue;
      }
      o.since = 0;
      if (now - o.last < 1500) continue;
      o.last = now;
      openNode(o.pane, o.graph, o.node, o.label, 0);
    }
    if (opens.some((o) => !o.done) && !openTimer) {  // looked at again without changes on the page too
      openTimer = setTimeout(() => {
        openTimer = null;
        opening();
      }, 250);
    }
  }

  // --- a folder's lanes expanded --------------------------------------------------------------------

  const opened = new Map();  // pane -> the graph it showed when last looked at

  function expandLanes() {
    panes().forEach((p, pane) => {
      const r = renderer(pane);
      const g = r && r.curModelGraph;
      if (!g || opened.get(pane) === g.id || !r.nodesToRender || !r.nodesToRender.length) return;
      opened.set(pane, g.id);
      const folded = g.nodes.some((n) => n.nodeType === 1 && !n.expanded);
      if ((IR.lanes || []).includes(g.id) && folded && r.appService.expandOrCollapseAllGraphLayersClicked) {
        r.appService.expandOrCollapseAllGraphLayersClicked.next({expandOrCollapse: true, rendererId: r.rendererId});
      }
    });
  }

  // --- two panes side by side: each side panel narrower, the graph wider -----------------------------------------

  const PANEL_SHARE = 0.3;  // of a pane's width, at least PANEL_MIN px (Model Explorer's own: 370 px however narrow)
  const PANEL_MIN = 180;

  function narrowPanels() {
    const all = panes();
    if (all.length < 2) return;
    for (const p of all) {
      const info = p.querySelector("info-panel");
      if (!info || info.dataset.irtoolNarrowed) continue;  // once: the user's own resizing is kept
      const width = Math.max(PANEL_MIN, Math.round(p.getBoundingClientRect().width * PANEL_SHARE));
      if (width >= info.getBoundingClientRect().width) continue;
      info.dataset.irtoolNarrowed = "1";
      info.style.width = info.style.minWidth = `${width}px`;
    }
  }

  let pending = false;
  new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      decorate();
      panes().forEach((p, pane) => index(shown(pane)[1]));  // fetched once a graph is shown, before a search
      sortSelector();
      stubCounts();
      expandLanes();
      narrowPanels();
      unitRow();
      opening();
      adjust();
    });
  }).observe(document.documentElement, {childList: true, subtree: true});


  // --- Model Explorer's services adjusted ----------------------------------------------------------

  const chosen = new Map();  // pane index -> the overlay (run name) a person chose there, or the one loaded last
  let changingGraph = false;

  function patch(r) {
    const app = r.appService;
    const edges = r.webglRendererEdgeOverlaysService;
    const proto = edges && Object.getPrototypeOf(edges);
    if (proto && proto.updateOverlaysData && !proto.irtool) {
      // an overlay not limited to the selected node's edges (a folder's pairs) drawn with nothing selected too
      proto.updateOverlaysData = function () {
        this.clearOverlaysData();
        const selected = this.webglRenderer.selectedNodeId;
        for (const o of this.edgeOverlaysService.selectedOverlays()) {
          if (selected ? o.nodeIds.has(selected) || !o.showEdgesConnectedToSelectedNodeOnly
            : !o.showEdgesConnectedToSelectedNodeOnly) this.curOverlays.push(o);
        }
      };
      proto.irtool = true;
    }
    const own = Object.getPrototypeOf(r);
    if (own.handleCurNodeDataProviderResultsChanged && !own.irtool) {
      // an overlay shown as a graph opens lays the graph out again with the node the renderer holds selected, which
      // it learns from the pane a moment after the pane has it: the node a link opened was selected, then dropped
      // (gpt_small's part opened from the overview's search); the pane's own is asked instead
      const changed = own.handleCurNodeDataProviderResultsChanged;
      own.handleCurNodeDataProviderResultsChanged = function (...args) {
        const pane = this.appService && this.appService.getPaneById && this.appService.getPaneById(this.paneId);
        const id = pane && pane.selectedNodeInfo && pane.selectedNodeInfo.nodeId;
        if (id && id !== this.selectedNodeId && this.curModelGraph && this.curModelGraph.nodesById[id]) {
          this.selectedNodeId = id;
        }
        return changed.apply(this, args);
      };
      own.irtool = true;
    }
    const ndp = r.webglRendererNdpService && r.webglRendererNdpService.nodeDataProviderExtensionService;
    if (ndp && app && !app.irtoolRuns) {
      app.irtoolRuns = true;
      app.irtoolNdp = ndp;
      const select = app.setSelectedNodeDataProviderRunId.bind(app);
      app.setSelectedNodeDataProviderRunId = (paneId, runId) => {
        const run = runId && ndp.runs()[runId];
        if (!changingGraph && run) chosen.set(app.getPaneIndexById(paneId), run.runName);
        select(paneId, runId);
      };
      const changed = ndp.handleModelGraphInPaneChanged.bind(ndp);
      const runsOf = ndp.getRunsForModelGraph.bind(ndp);
      ndp.handleModelGraphInPaneChanged = (graph, paneIndex) => {
        // Model Explorer shows the first overlay with values for the graph: the one chosen instead, or none (a
        // stand-in first, valueless run); one change of the overlay shown, as Model Explorer makes it (a second one
        // raced with the graph's layout)
        const name = chosen.has(paneIndex) ? chosen.get(paneIndex) : (IR.overlay || {})[graph.collectionLabel];
        ndp.getRunsForModelGraph = (g) => {
          const runs = runsOf(g);
          const want = runs.find((x) => x.runName === name);
          return runs.length ? [want || {runId: undefined, results: {[g.id]: null}, nodeDataProviderData: null},
                                ...runs.filter((x) => x !== want)] : runs;
        };
        changingGraph = true;
        try {
          changed(graph, paneIndex);
        } finally {
          changingGraph = false;
          delete ndp.getRunsForModelGraph;
        }
      };
    }
  }

  // --- panel links: a plain click selects, each link says its operator ---------------------------------

  function linkId(el) {
    return [...el.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join("").trim();
  }

  document.addEventListener("click", (e) => {
    if (e.altKey || !(e.target instanceof Element)) return;  // Alt+click: Model Explorer's own select
    const el = e.target.closest("info-panel .node-id-attribute");
    const pane = el ? paneOf(el) : -1;
    const r = renderer(pane);
    const id = el && linkId(el);
    if (!r || !r.curModelGraph || !id || !r.curModelGraph.nodesById[id]) return;
    e.stopPropagation();
    e.preventDefault();
    go(pane, r.curModelGraph.id, id, r.curModelGraph.collectionLabel);
  }, true);

  function nameLinks(p, r) {
    for (const el of p.querySelectorAll("info-panel .node-id-attribute")) {
      const id = linkId(el);
      const n = r.curModelGraph && r.curModelGraph.nodesById[id];
      const label = n && n.label !== id ? n.label : "";
      let span = el.querySelector(".irtool-op");
      if (!label) {
        if (span) span.remove();
        continue;
      }
      if (!span) {
        span = document.createElement("span");
        span.className = "irtool-op";
        el.prepend(span);
      }
      if (span.textContent !== label) span.textContent = label;
    }
  }

  // --- the phase selector ---------------------------------------------------------------------------

  const PHASES = ["forward", "backward", "recompute", "optimizer"];
  const phaseBase = new Map();  // a graph of some phases' id -> the graph it is cut from
  const phasesOff = new Map();  // the graph cut from -> the phases turned off
  const phasesIn = new WeakMap();  // a graph's JSON -> the phases its nodes say

  function phaseOf(n) {
    const a = n.attrs && n.attrs.find((x) => x.key === "phase");
    return a ? a.value : undefined;
  }

  function graphJson(app, id, label) {
    for (const c of app.curGraphCollections()) {
      if (label && c.label !== label) continue;
      const g = c.graphs.find((x) => x.id === id);
      if (g) return g;
    }
    return null;
  }

  function phasesOf(g) {
    if (!phasesIn.has(g)) phasesIn.set(g, PHASES.filter((ph) => g.nodes.some((n) => phaseOf(n) === ph)));
    return phasesIn.get(g);
  }

  function cut(app, base, off) {
    // the graph of the phases on: their nodes, and the nodes of no phase (parameters) they read
    const on = phasesOf(base).filter((ph) => !off.has(ph));
    const id = `${base.id} [${on.join(", ") || "no phase"}]`;
    const byId = new Map(base.nodes.map((n) => [n.id, n]));
    const kept = new Set(base.nodes.filter((n) => on.includes(phaseOf(n))).map((n) => n.id));
    for (const n of base.nodes) {
      if (!kept.has(n.id)) continue;
      for (const e of n.incomingEdges || []) {
        const src = byId.get(e.sourceNodeId);
        if (src && phaseOf(src) === undefined) kept.add(src.id);
      }
    }
    const nodes = base.nodes.filter((n) => kept.has(n.id)).map((n) => (
      {...n, incomingEdges: (n.incomingEdges || []).filter((e) => kept.has(e.sourceNodeId))}));
    const g = {...base, id, nodes, groupNodeAttributes: phaseCounts(base, on)};
    delete g.tasksData;
    phaseBase.set(id, base.id);
    const runs = app.irtoolNdp ? Object.values(app.irtoolNdp.runs()) : [];
    for (const run of runs) {  // the overlays of the graph cut from colour it too
      const data = run.nodeDataProviderData;
      if (data && data[base.id] && !data[id]) data[id] = data[base.id];
    }
    return g;
  }

  function phaseCounts(base, on) {
    // the counts on the groups' boxes (operators, with strategy, ...) of the phases on (`irtoolPhaseCounts`, made
    // with them: graphs.PHASE_COUNTS), each group's `phase` row too; a count of 0 said by none, as irtool says them
    const by = base.irtoolPhaseCounts;
    const attrs = base.groupNodeAttributes || {};
    if (!by) return attrs;
    const out = {};
    for (const [ns, a] of Object.entries(attrs)) {
      const per = by.groups[ns];
      if (!per) {
        out[ns] = a;
        continue;
      }
      const b = {...a};
      by.keys.forEach((k, i) => {
        const n = on.reduce((sum, ph) => sum + (per[ph] ? per[ph][i] : 0), 0);
        if (n || i === 0) b[k] = String(n); else delete b[k];
      });
      if ("phase" in b) {
        const here = on.filter((ph) => per[ph] && per[ph][0]);
        b.phase = here.length > 1 ? here.map((ph) => `${ph} ${per[ph][0]}`).join(", ") : here[0] || "none";
      }
      out[ns] = b;
    }
    return out;
  }

  function phaseBar(p, pane, r) {
    const app = r.appService;
    const g = r.curModelGraph;
    const baseId = g && (phaseBase.get(g.id) || g.id);
    const base = g && graphJson(app, baseId, g.collectionLabel);
    const phases = base && !(IR.lanes || []).includes(baseId) ? phasesOf(base) : [];  // stage graphs
    let bar = p.querySelector(".irtool-phases");
    if (phases.length < 2) {
      if (bar) bar.remove();
      return;
    }
    const off = phasesOff.get(baseId) || new Set();
    const key = `${baseId}\u0000${[...off].join(",")}`;
    if (bar && bar.dataset.key === key) return;
    if (!bar) {
      bar = document.createElement("div");
      bar.className = "irtool-phases";
      p.append(bar);
    }
    bar.dataset.key = key;
    bar.replaceChildren(Object.assign(document.createElement("span"), {textContent: "phases"}));
    for (const ph of phases) {
      const label = document.createElement("label");
      const box = Object.assign(document.createElement("input"), {type: "checkbox", checked: !off.has(ph)});
      box.dataset.phase = ph;
      box.addEventListener("change", () => {
        const now = new Set(phasesOff.get(baseId) || []);
        if (box.checked) now.delete(ph); else now.add(ph);
        phasesOff.set(baseId, now);
        const shownGraph = now.size ? cut(app, base, now) : base;
        for (const o of opens) if (o.pane === pane) o.done = true;
        app.selectGraphInPane(shownGraph, pane);
      });
      label.append(box, ` ${ph}`);
      bar.append(label);
    }
  }

  // --- the overlay's legend -------------------------------------------------------------------------

  function number(v) {
    return typeof v === "number" ? v.toLocaleString("en-US") : String(v);
  }

  function legend(p, r) {
    // the overlay shown, else a lane graph's own colours (its `irtoolKey`: pipeline.KEY)
    const s = r.webglRendererNdpService;
    const run = s && s.curNodeDataProviderRun && s.curNodeDataProviderRun();
    const g = r.curModelGraph;
    let el = p.querySelector(".irtool-legend");
    const data = run && g && run.nodeDataProviderData && run.nodeDataProviderData[g.id];
    const own = !data && g && graphJson(r.appService, g.id, g.collectionLabel);
    const ownKey = own && own.irtoolKey;
    if (!data && !ownKey) {
      if (el) el.remove();
      return;
    }
    const key = data ? `${run.runId}\u0000${g.id}` : `\u0000${g.id}`;
    if (el && el.dataset.key === key) return;
    if (!el) {
      el = document.createElement("div");
      el.className = "irtool-legend";
      p.append(el);
    }
    el.dataset.key = key;
    el.classList.toggle("irtool-legend-own", !data);
    const add = (cls, text) => el.append(Object.assign(document.createElement("div"), {className: cls, textContent: text}));
    el.replaceChildren();
    const swatch = (colour, text) => {
      const row = document.createElement("div");
      row.className = "irtool-legend-row";
      const sw = Object.assign(document.createElement("span"), {className: "irtool-swatch"});
      sw.style.background = colour;
      row.append(sw, text);
      el.append(row);
    };
    if (!data) {
      add("irtool-legend-title", ownKey.title);
      for (const [colour, text] of ownKey.rows) swatch(colour, text);
      return;
    }
    const said = data.legend || {};
    add("irtool-legend-title", run.runName + (said.unit && said.unit !== run.runName ? ` (${said.unit})` : ""));
    if (said.what) add("irtool-legend-what", said.what);
    // the values of the nodes of the graph shown (a graph of some phases shares the whole graph's overlay)
    const shown = Object.entries(data.results || {}).filter(([id]) => g.nodesById[id]).map(([, x]) => x);
    if (data.thresholds) {
      let low = null;
      for (const t of data.thresholds) {
        swatch(t.bgColor, low === null ? `up to ${number(t.value)}` : `${number(low)} to ${number(t.value)}`);
        low = t.value;
      }
    } else if (data.gradient) {
      const bar = Object.assign(document.createElement("div"), {className: "irtool-gradient"});
      bar.style.background = `linear-gradient(to right, ${data.gradient.map((x) => `${x.bgColor} ${x.stop * 100}%`).join(", ")})`;
      el.append(bar);
    } else {  // a value per colour (categories, diff marks)
      const colours = new Map();
      for (const x of shown) if (x.bgColor) colours.set(String(x.value), x.bgColor);
      for (const [value, colour] of colours) swatch(colour, value);
    }
    if (said.scale) add("irtool-legend-scale", said.scale);
    const numbers = shown.map((x) => x.value).filter((v) => typeof v === "number");
    if (numbers.length) {
      add("irtool-legend-range", `${numbers.length.toLocaleString("en-US")} valued: min ${number(Math.min(...numbers))}, ` +
                                 `max ${number(Math.max(...numbers))}`);
    }
  }

  function pairLines(r) {
    // a lane graph opened with nothing selected (from another graph, the selector): Model Explorer works out the
    // overlays' edges only for a selection or a layout with one, so its pair lines, drawn whatever is selected, are
    // worked out here once it is drawn
    const s = r.webglRendererEdgeOverlaysService;
    const g = r.curModelGraph;
    if (!s || !g || r.selectedNodeId || !(IR.lanes || []).includes(g.id) || !r.nodesToRender || !r.nodesToRender.length ||
        (s.overlaysEdgesList && s.overlaysEdgesList.length)) return;
    s.updateOverlaysData();
    if (!s.curOverlays.length) return;
    s.updateOverlaysEdges();
    r.webglRendererThreejsService.render();
  }

  function adjust() {
    // the part waited for shown (laid out whichever way the worker's answer came): nothing waited for
    if (waitingFor && panes().some((p, pane) => shown(pane)[0] === waitingFor)) waiting(null);
    panes().forEach((p, pane) => {
      const r = renderer(pane);
      if (!r || !r.appService) return;
      patch(r);
      pairLines(r);
      nameLinks(p, r);
      phaseBar(p, pane, r);
      legend(p, r);
    });
  }


  // --- a folder's time and memory beside the graphs ----------------------------------------------------------
  // The bar's links open the pictures on a sheet below the graphs (a plain click; the link itself opens it in a
  // tab): a unit of the timeline opens its first node in its stage graph, the memory peak its node; a stage graph's
  // node says its unit of work and when it runs (the server's targets, `Model.targets`), which opens the timeline
  // on that unit.

  let targets = null;

  function targetsOf() {
    if (!targets) {
      targets = (IR.targets || []).length ? fetch(IR.targets[0]).then((r) => (r.ok ? r.json() : null))
        .catch(() => null) : Promise.resolve(null);
    }
    return targets;
  }

  const pictures = new Map();  // name -> its SVG text, fetched once
  let sheet = null;

  function showPicture(name, href, unit) {
    if (!sheet) {
      sheet = document.createElement("div");
      sheet.className = "irtool-sheet";
      sheet.addEventListener("click", onSheetClick);
      document.body.append(sheet);
    }
    document.body.classList.add("irtool-with-sheet");
    sheet.style.display = "block";
    sheet.dataset.picture = name;
    const text = pictures.get(name) || fetch(href).then((r) => r.text());
    pictures.set(name, text);
    return Promise.resolve(text).then((svg) => {
      if (sheet.dataset.picture !== name) return;
      const head = document.createElement("div");
      head.className = "irtool-sheet-head";
      for (const [other, link] of IR.pictures) {
        const tab = document.createElement("a");
        Object.assign(tab, {href: link, textContent: other, className: other === name ? "irtool-tab-on" : ""});
        tab.addEventListener("click", (e) => { e.preventDefault(); showPicture(other, link); });
        head.append(tab);
      }
      const hint = document.createElement("span");
      hint.className = "irtool-sheet-hint";
      hint.textContent = name === "timeline" ? "click a unit: its nodes in the stage graph (marked, its first selected)" :
        "click a peak: its node in the stage graph";
      const close = document.createElement("a");
      Object.assign(close, {href: "#", textContent: "close", className: "irtool-sheet-close"});
      close.addEventListener("click", (e) => {
        e.preventDefault();
        sheet.style.display = "none";
        document.body.classList.remove("irtool-with-sheet");
      });
      const picture = document.createElement("div");
      picture.className = "irtool-sheet-picture";
      picture.innerHTML = svg;  // irtool's own SVG, from this server
      sheet.replaceChildren(head, picture);
      head.append(hint, close);
      if (unit) {
        const g = picture.querySelector(`g.unit[data-stage="${unit[0]}"][data-unit="${unit[1]}"]`);
        if (g) {
          g.classList.add("irtool-current");
          g.scrollIntoView({block: "nearest", inline: "center"});
        }
      }
    });
  }

  function onSheetClick(e) {
    const unit = e.target.closest && e.target.closest("g.unit");
    const peak = e.target.closest && e.target.closest(".peak, .peak-label");
    const stage = peak && peak.closest("g.stage");
    if (!unit && !stage) return;
    targetsOf().then((t) => {
      const to = t && (unit ? t.units[`${unit.dataset.stage} ${unit.dataset.unit}`] : t.peaks[stage.dataset.stage]);
      if (!to) return;
      go(0, to[0], to[1], IR.models[0]);
      marking += 1;
      if (unit) markUnit(t, to[0], unit.dataset.stage, unit.dataset.unit, marking);
    });
  }

  let marking = 0;  // the last mark asked for (a unit clicked before the one before it was marked wins)

  function markUnit(t, graph, stage, unit, mine, tries = 240) {
    // the unit's nodes in the graph it opened (the targets' `nodes` rows: unit, time, stage) marked as search results
    // are (a node in a folded group marks the group), once the pane shows the graph with its first node selected
    const r = renderer(0);
    if (!r || tries <= 0 || mine !== marking) return;
    if (!(r.curModelGraph && r.curModelGraph.id === graph && r.selectedNodeId)) {
      setTimeout(() => markUnit(t, graph, stage, unit, mine, tries - 1), 500);
      return;
    }
    const rows = t.nodes[graph] || {};
    const ids = Object.keys(rows).filter((id) => rows[id][0] === unit && String(rows[id][2]) === String(stage));
    r.appService.setSearchResults(r.appService.panes()[0].id,
      {results: Object.fromEntries(ids.map((id) => [id, [{type: "title", matchedText: unit}]]))});
  }

  function unitRow() {
    // a stage graph's node: its unit of work and its time, a row of the panel opening the timeline on the unit
    if (!(IR.targets || []).length) return;
    panes().forEach((p, pane) => {
      const [graph] = shown(pane);
      const node = panelNode(p);
      const table = p.querySelector("info-panel .attrs-table-container table, info-panel table.info-attrs");
      if (!graph || !node || !table) return;
      const old = p.querySelector("tr.irtool-unit");
      if (old && old.dataset.for === `${graph}\u0000${node}` && old.isConnected) return;
      targetsOf().then((t) => {
        const row = t && t.nodes[graph] && t.nodes[graph][node];
        const now = p.querySelector("tr.irtool-unit");
        if (panelNode(p) !== node) return;
        if (now) now.remove();
        if (!row) return;
        const tr = document.createElement("tr");
        tr.className = "irtool-unit";
        tr.dataset.for = `${graph}\u0000${node}`;
        const key = document.createElement("td");
        key.className = "key";
        key.textContent = "unit of work";
        const value = document.createElement("td");
        value.className = "value irtool-link";
        value.textContent = `${row[0]}, ${row[1]}`;
        value.title = `open the timeline on ${row[0]} of stage ${row[2]}`;
        const timeline = (IR.pictures || []).find(([name]) => name === "timeline");
        value.onclick = () => timeline && showPicture("timeline", timeline[1], [row[2], row[0]]);
        tr.append(key, value);
        (table.tBodies[0] || table).prepend(tr);
      });
    });
  }

  if ((IR.pictures || []).length) {
    const bar = document.createElement("div");
    bar.className = "irtool-pictures";
    for (const [name, href] of IR.pictures) {
      const a = document.createElement("a");
      Object.assign(a, {href, target: "_blank", rel: "noopener", textContent: name});
      a.addEventListener("click", (e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;  // a tab, as asked
        e.preventDefault();
        showPicture(name, href);
      });
      bar.append(a);
    }
    document.body.append(bar);
  }

  // --- the page's first lines: two configurations' change and the colours of why an operator changed ---------------

  for (const h of IR.headlines || []) {
    const top = document.createElement("div");
    top.className = "irtool-headline";
    h.lines.forEach((text, i) => {
      const line = document.createElement("div");
      line.className = i ? "irtool-headline-line" : "irtool-headline-first";
      line.textContent = text;
      top.append(line);
    });
    for (const [colour, text] of h.legend) {
      const key = document.createElement("span");
      key.className = "irtool-headline-key";
      const swatch = document.createElement("span");
      swatch.className = "irtool-swatch";
      swatch.style.background = colour;
      key.append(swatch, text);
      top.append(key);
    }
    document.body.prepend(top);
    document.body.classList.add("irtool-with-headline");
  }

  window.irtool = {openNode: go, index, search};  // for tests and the console
})();
