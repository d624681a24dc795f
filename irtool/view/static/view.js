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
// A graph is opened through Model Explorer's own app service (the renderer each pane registers in
// `window.me_test`, as its tests use it); without it, the page is loaded again at the node (its
// address's `uiState`).
(() => {
  "use strict";
  const IR = window.IRTOOL || {models: []};
  const LINK_KEYS = new Set(["in part", "stage graph", "comm serves"]);
  const SHOWN = 100;  // results listed at most (their count is said)
  const indexes = {};

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

  function openNode(pane, graphId, nodeId, label, retries = 3) {
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
          if (retries) ensure(pane, graphId, nodeId, label, retries);
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

  function ensure(pane, graphId, nodeId, label, tries) {
    // Model Explorer drops a reveal a layout running then (a search cleared, an overlay shown) undoes, and may
    // draw the graph a pane showed before when that one's late layout comes in after: asked again while the pane
    // shows the graph with nothing selected, or another graph with nothing being laid out (never once another
    // graph was asked for, nor over a node the user chose meanwhile; looked at again while a layout runs)
    setTimeout(() => {
      const r = renderer(pane);
      const app = r && r.appService;
      if (!r || tries <= 0 || (asked(pane) || graphId) !== graphId) return;
      const there = shown(pane)[0] === graphId;
      if (there && (!nodeId || r.selectedNodeId)) return;
      if (there || !(app.processing && app.processing())) openNode(pane, graphId, nodeId, label, 0);
      ensure(pane, graphId, nodeId, label, tries - 1);
    }, 1500);
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
      const [current, label] = shown(pane);
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
      const [graph, label] = shown(pane);
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
      expandLanes();
      narrowPanels();
      unitRow();
      opening();
    });
  }).observe(document.documentElement, {childList: true, subtree: true});

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
      hint.textContent = name === "timeline" ? "click a unit: its nodes in the stage graph" :
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
      if (to) go(0, to[0], to[1], IR.models[0]);
    });
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
