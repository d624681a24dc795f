"""Serve models in Google's Model Explorer (`ai-edge-model-explorer`, the `irtool[view]` extra).

The page is served while the graphs are built (in a forked process: Model Explorer starts and the
browser loads it meanwhile), and the graph JSON goes to the browser as irtool wrote it: Model
Explorer's own handler would parse it and write it again (seconds for a large dump). Node data
overlays are loaded with the graphs. The page gets irtool's script and style (`static/`: a search
across all graphs of a model, links to nodes of other graphs) and each model's node index
(`graphs.node_index`) at `irtool/index/<model>.json`.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import threading
from typing import Any, Callable
from urllib.parse import quote, unquote

from ..errors import InputError, IrtoolError
from .graphs import graph_of
from .models import Model

INDEX = "\0index"  # the builder's file of a model's node index (its other files: graphs, overlays, pictures)
PICTURE = "\0picture:"  # + a picture's name (`Model.pictures`): the builder's file of its SVG
TARGETS = "\0targets"  # the builder's file of where the pictures' marks open (`Model.targets`)
PARTS = "\0parts"  # the builder's file of the JSON of every part of a split graph, one after another
PARTS_AT = "\0parts at"  # the builder's file of where each part's JSON is in PARTS ([start, end] bytes)
STATIC = os.path.join(os.path.dirname(__file__), "static")


def _model_explorer() -> Any:
    try:
        import model_explorer
    except ImportError:
        raise InputError("Model Explorer is not installed: pip install 'irtool[view]'") from None
    return model_explorer


class _Builder:
    """Every model's graph JSON, node index and overlays, built while Model Explorer starts: on Linux in
    a forked process (sharing one interpreter lock, the build and Model Explorer's start-up took as long
    as both together) writing them to unnamed temporary files the server then sends (gone with the
    process, however it ends), the graphs first, each file sent as soon as it is written (the cost
    overlays, computed last, never hold the graphs back); elsewhere in a thread. When the process
    fails, a request builds in this one, meeting the error again to report it."""

    def __init__(self, models: list[Model]) -> None:
        self.models = models
        self.files: dict[tuple[int, str | None], Any] = {}
        self.done: dict[tuple[int, str | None], Any] = {}  # set by the process once the file is written
        self.proc: Any = None
        self._at: dict[int, list[list[int]]] = {}  # in the process: where each model's parts are in its PARTS file
        if sys.platform.startswith("linux"):
            import multiprocessing

            fork = multiprocessing.get_context("fork")
            # the overlay shown first (the one loaded last) next: Model Explorer draws the first graph once it has it;
            # the parts, only asked for when opened, before the other overlays (the cost ones take seconds)
            shown = [(i, list(m.overlays)[-1]) for i, m in enumerate(models) if m.overlays]
            keys = [(i, None) for i in range(len(models))] + shown + [(i, INDEX) for i in range(len(models))] + [
                (i, name) for i in range(len(models)) for name in (PARTS, PARTS_AT)] + [
                (i, name) for i, m in enumerate(models) for name in reversed(m.overlays) if (i, name) not in shown] + [
                (i, PICTURE + name) for i, m in enumerate(models) for name in m.pictures] + [  # only asked for by a link
                (i, TARGETS) for i, m in enumerate(models) if m.targets]
            for key in keys:
                self.files[key] = tempfile.TemporaryFile()
                self.done[key] = fork.Event()
            self.proc = fork.Process(target=self._write, name="irtool-graphs", daemon=True)
            # the dumps read so far (millions of objects, kept for as long as the server runs) out of the garbage
            # collector's sight: its full collections walked them again and again while the graphs were built (a
            # tenth to a fifth of the build of the 68 MB dump, bench/view_bench.py), and the fork shares their pages
            gc.freeze()
            self.proc.start()
        else:
            threading.Thread(target=self._build, name="irtool-graphs", daemon=True).start()

    def _write(self) -> None:
        # no garbage collection in this process: it allocates the graphs' millions of dicts and lists, which the
        # collector would walk again and again (a fifth of the build of the 68 MB dump), and it ends once they are
        # written (the little cyclic garbage it makes goes with it)
        gc.disable()
        try:
            for (i, name), f in self.files.items():
                if name == PARTS:  # each part's JSON as it is made, not all of them held at once
                    at = self._at[i] = []
                    for text in self.models[i].part_jsons():
                        at.append([f.tell(), f.tell() + f.write(text)])
                else:
                    text = self._text(i, name)
                    f.write(text if isinstance(text, bytes) else text.encode())
                f.flush()
                self.done[(i, name)].set()
        except BaseException:  # noqa: BLE001 - no traceback here: the server builds again and reports it
            os._exit(1)

    def _text(self, index: int, name: str | None) -> str | bytes:
        m = self.models[index]
        if name is None:
            return m.page_json()
        if name == PARTS_AT:
            return json.dumps(self._at[index])
        if name == INDEX:
            return json.dumps(m.index(), separators=(",", ":"), ensure_ascii=False)
        if name.startswith(PICTURE):
            return m.pictures[name.removeprefix(PICTURE)]()
        if name == TARGETS:
            return json.dumps(_placed(m), separators=(",", ":"), ensure_ascii=False)
        return _node_data_json(m.node_data_of(name))

    def _build(self) -> None:
        for m in self.models:
            try:
                m.page_json()
            except Exception:  # noqa: BLE001 - raised again, and reported, where the page asks for the graphs
                return

    def _written(self, index: int, name: str | None) -> str | None:
        """The path this process reads a written file by (each open its own offset), once the process wrote it;
        None when the process ended without writing it."""
        if self.proc is None:
            return None
        done = self.done[(index, name)]
        while not done.wait(0.1):
            if not self.proc.is_alive():
                break
        return f"/proc/self/fd/{self.files[(index, name)].fileno()}" if done.is_set() else None

    def graphs(self, index: int) -> Any:
        import flask

        path = self._written(index, None)
        if path is not None:
            return flask.send_file(path, mimetype="application/json")
        return flask.Response(self.models[index].page_json(), mimetype="application/json")

    def part(self, index: int, number: int) -> bytes | None:
        """The JSON of a model's part `number` (`Model.part_jsons`), None when there is none."""
        at = self._written(index, PARTS_AT)
        if at is None:
            return self.models[index].part_json(number)
        with open(at, encoding="utf-8") as f:
            spans = json.load(f)
        if not 0 <= number < len(spans):
            return None
        with open(self._written(index, PARTS), "rb") as f:  # type: ignore[arg-type]
            f.seek(spans[number][0])
            return f.read(spans[number][1] - spans[number][0])

    def node_data(self, index: int, name: str) -> str:
        """An overlay's JSON text, (`name` INDEX) the model's node index or (PICTURE + name) a picture's SVG."""
        path = self._written(index, name)
        if path is not None:
            with open(path, encoding="utf-8") as f:
                return f.read()
        return self._text(index, name)  # type: ignore[return-value]

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.terminate()
        for f in self.files.values():
            f.close()


def _placed(m: Model) -> dict[str, Any]:
    """`Model.targets` with each node's graph the one holding it (a split graph's part)."""
    ix = m.index()
    home = {(ix["wholes"][n[0]], n[1]): ix["graphs"][n[0]] for n in ix["nodes"]}
    t = m.targets()  # type: ignore[misc]
    nodes: dict[str, dict[str, Any]] = {}
    for whole, rows in t["nodes"].items():
        for node, row in rows.items():
            nodes.setdefault(home.get((whole, node), whole), {})[node] = row
    return {"units": {k: [home.get((g, n), g), n] for k, (g, n) in t["units"].items()},
            "peaks": {k: [home.get((g, n), g), n] for k, (g, n) in t["peaks"].items()}, "nodes": nodes}


class _Prebuilt:
    """A model's graph JSON in Model Explorer's config, sent as it is (see `_send_as_built`)."""

    def __init__(self, builder: _Builder, index: int) -> None:
        self.builder, self.index = builder, index


def _send_as_built(me: Any) -> bool:
    """Make Model Explorer's graph handler send a `_Prebuilt` model's JSON text without parsing and
    writing it again; False (nothing changed) if its server module changed shape."""
    server = getattr(me, "server", None)
    convert = getattr(server, "convert_adapter_response", None)
    respond = getattr(server, "_make_json_response", None)
    if convert is None or respond is None:
        return False
    if getattr(respond, "irtool", False):
        return True

    def convert_response(resp: Any) -> Any:
        return resp if isinstance(resp, _Prebuilt) else convert(resp)

    def json_response(obj: Any) -> Any:
        if isinstance(obj, _Prebuilt):
            return obj.builder.graphs(obj.index)
        return respond(obj)

    json_response.irtool = True  # type: ignore[attr-defined]
    server.convert_adapter_response = convert_response
    server._make_json_response = json_response
    return True


def config_for(models: list[Model], builder: _Builder | None = None) -> Any:
    """A Model Explorer config holding the models and their node data; with a `builder`, the graphs
    and overlays are its (sent as built, see `_send_as_built`), else JSON text made now."""
    me = _model_explorer()
    config = me.config()
    for index, m in enumerate(models):
        config.graphs_list.append(_Prebuilt(builder, index) if builder else m.graphs_json())
        config.model_sources.append({"url": f"graphs://{m.label}/{index}"})
        for name in m.overlays:
            config.add_node_data(name, _NodeData(m, name, builder, index), model_name=m.label)
    return config


class _NodeData:
    """An overlay in Model Explorer's config: its server asks for `to_json_string()` when the page
    loads it, after the graphs it colours (the overlay of a split graph's parts needs them built)."""

    def __init__(self, model: Model, name: str, builder: _Builder | None, index: int) -> None:
        self.model, self.name, self.builder, self.index = model, name, builder, index

    def to_json_string(self) -> str:
        if self.builder is not None:
            return self.builder.node_data(self.index, self.name)
        return _node_data_json(self.model.node_data_of(self.name))


def _node_data_json(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


# Model Explorer draws a group's attributes on its box when its "View on node" setting "Layer node
# attributes" is on, and keeps that setting in the browser's local storage (key below). The page is
# seeded with it on, filtered to the counts MindInsight showed on folded scopes, and the same counts on
# an overview's part boxes ("Op node attributes": no operator has attributes named so), unless the user
# has chosen a setting for this address already.
SHOW_ON_NODE_KEY = "model_explorer_show_on_node_item_types_v2"
SHOW_COUNTS = {"Layer node attributes": {"selected": True,
                                         "filterRegex": "strategy|redistribution|gradient|diff|^stage (FLOPs|load)"},
               "Op node attributes": {"selected": True,
                                      "filterRegex": "^(with strategy|redistribution|gradient aggregation|diff [a-z ]+):"}}
NODE_PARAM = "irtool_node"  # the page's address parameter naming a node to open on (`irtool view --node`)


def _add_to_page(me: Any, models: list[Model], builder: _Builder) -> None:
    """Serve Model Explorer's page with the setting above seeded, irtool's script and style, each
    model's node index, and the panes opened on their first node (a folder's first pipeline box) or,
    for an address with NODE_PARAM, on that node (the address rewritten before Model Explorer reads
    it). If Model Explorer's server module changed shape, leave it alone (the counts stay in the side
    panel, the search in one graph)."""
    server = getattr(me, "server", None)
    original = getattr(server, "_serve_static_asset", None)
    web = getattr(server, "OSS_WEB_APP_DIR", None)
    if original is None or web is None or getattr(original, "irtool", False):
        return
    import flask

    page_data = {"models": [m.label for m in models], "lanes": sorted({g for m in models for g in m.lanes}),
                 # the overlay each model's panes show until a person chooses another: the one loaded last
                 "overlay": {m.label: list(m.overlays)[-1] for m in models if m.overlays},
                 "pictures": [[name, f"irtool/{name}/{i}.svg"] for i, m in enumerate(models) for name in m.pictures],
                 "headlines": [m.headline for m in models if m.headline],
                 "targets": [f"irtool/targets/{i}.json" for i, m in enumerate(models) if m.targets][:1]}

    seed = (f"<script>if (!localStorage.getItem({json.dumps(SHOW_ON_NODE_KEY)})) localStorage.setItem("
            f"{json.dumps(SHOW_ON_NODE_KEY)}, {json.dumps(json.dumps(SHOW_COUNTS))});"
            f"window.IRTOOL = {json.dumps(page_data)};</script>"
            '<link rel="stylesheet" href="irtool/view.css"><script src="irtool/view.js" defer></script>')

    def serve_asset(rel_path: str) -> Any:
        if rel_path.startswith("irtool/index/") and rel_path.endswith(".json"):
            i = rel_path[len("irtool/index/") : -len(".json")]
            if not i.isdigit() or int(i) >= len(models):
                flask.abort(404)
            return flask.Response(builder.node_data(int(i), INDEX), mimetype="application/json")
        kind, _, file = rel_path.removeprefix("irtool/").partition("/")
        if rel_path.startswith("irtool/") and file.endswith(".svg"):
            i = file.removesuffix(".svg")
            if not i.isdigit() or int(i) >= len(models) or kind not in models[int(i)].pictures:
                flask.abort(404)
            try:
                return flask.Response(builder.node_data(int(i), PICTURE + kind), mimetype="image/svg+xml")
            except IrtoolError as e:  # a folder whose step cannot be played out: the reason, as the CLI says it
                return flask.Response(f"irtool: {e}\n", status=404, mimetype="text/plain")
        if rel_path.startswith("irtool/targets/") and rel_path.endswith(".json"):
            i = rel_path[len("irtool/targets/") : -len(".json")]
            if not i.isdigit() or int(i) >= len(models) or not models[int(i)].targets:
                flask.abort(404)
            try:
                return flask.Response(builder.node_data(int(i), TARGETS), mimetype="application/json")
            except IrtoolError as e:
                return flask.Response(f"irtool: {e}\n", status=404, mimetype="text/plain")
        if rel_path.startswith("irtool/part/") and file.endswith(".json"):  # a part's graph, when the page opens it
            i, _, k = file.removesuffix(".json").partition("/")
            text = builder.part(int(i), int(k)) if i.isdigit() and int(i) < len(models) and k.isdigit() else None
            if text is None:
                flask.abort(404)
            return flask.Response(text, mimetype="application/json")
        if rel_path in ("irtool/view.js", "irtool/view.css"):
            return flask.send_from_directory(STATIC, rel_path.removeprefix("irtool/"))
        if rel_path != "index.html":
            return original(rel_path)
        with open(os.path.join(web, "index.html"), encoding="utf-8") as f:
            page = f.read()
        opening = _opening_script(flask.request.args.get(NODE_PARAM), models, builder)
        return flask.Response(page.replace("<head>", "<head>" + seed + opening, 1), mimetype="text/html")

    serve_asset.irtool = True  # type: ignore[attr-defined]
    server._serve_static_asset = serve_asset


def _pane_states(models: list[Model], opened: dict[str, tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """Model Explorer's `uiState` panes: each model's first graph (a folder's pipeline graph with every
    column expanded, Model Explorer's `___all___`: `Model.lanes`), two models side by side; `opened`: model label ->
    (graph, node) a pane opens on, the node selected (Model Explorer expands the groups around it)."""
    firsts = [m for m in models if m.first_graph][:2]
    states = []
    for m in firsts:
        graph, node = (opened or {}).get(m.label, (m.first_graph, ""))
        expand = ["___all___"] if graph in m.lanes else []
        states.append({"deepestExpandedGroupNodeIds": expand, "selectedNodeId": node, "selectedGraphId": graph,
                       "selectedCollectionLabel": m.label, "widthFraction": 1 / len(firsts)})
    return states


def _opening_script(spec: str | None, models: list[Model], builder: _Builder) -> str:
    """A script opening the panes on their nodes before Model Explorer reads the address (its
    `uiState`: the graph, the node selected) and naming them to the page's script (`IRTOOL_OPEN`,
    static/view.js: Model Explorer drops a selection its first layouts race with): the node `spec`
    names in each model holding it, else a folder's first pipeline box; "" when there is none. The graph
    of a node of a split graph is known once the graphs are built: this waits for them."""
    opened: dict[str, tuple[str, str]] = {}
    for i, m in enumerate(models):
        if spec:
            try:
                whole, node = m.find(spec)
            except InputError:
                pass
            else:
                opened[m.label] = (graph_of(json.loads(builder.node_data(i, INDEX)), whole, node) or whole, node)
                continue
        first = m.first_node() if m.first_node is not None else None
        if first and m.first_graph:
            opened[m.label] = (m.first_graph, first)
    if not opened:
        return ""
    states = _pane_states(models, opened)
    opens = [[i, s["selectedGraphId"], s["selectedNodeId"], s["selectedCollectionLabel"]] for i, s in enumerate(states)
             if s["selectedNodeId"]]
    return ("<script>(() => { const p = new URLSearchParams(location.search);"
            "const d = JSON.parse(p.get('data') || '{}');"
            f"d.uiState = {{paneStates: {json.dumps(states)}}}; p.set('data', JSON.stringify(d));"
            f"p.delete({json.dumps(NODE_PARAM)}); history.replaceState(null, '', '?' + p.toString());"
            f"window.IRTOOL_OPEN = {json.dumps(opens)}; }})();</script>")


def url_for(config: Any, host: str, port: int, models: list[Model] | None = None, node: str | None = None) -> str:
    """The page's address. Model Explorer opens the largest graph unless the address names one (its
    `uiState`): each model's first graph (a folder's `pipeline` graph, a file's entry graph or its
    overview), two models side by side. `node`: the page opens on it (NODE_PARAM)."""
    value = config.to_url_param_value()
    states = _pane_states(models or [])
    if states:
        data = json.loads(unquote(value))
        data["uiState"] = {"paneStates": states}
        value = quote(json.dumps(data))
    return f"http://{host}:{port}/?data={value}" + (f"&{NODE_PARAM}={quote(node)}" if node else "")


def serve(models: list[Model], host: str, port: int, open_browser: bool, announce: Callable[[str], None],
          node: str | None = None) -> None:
    """Run Model Explorer's server on `host:port` until interrupted; `announce` gets the URL first.
    `node` (`--node`, checked by the caller with `Model.find`): the page opens on it."""
    builder = _Builder(models)  # from now on: Model Explorer starts and the page loads meanwhile
    try:
        me = _model_explorer()
        prebuilt = _send_as_built(me)
        config = config_for(models, builder if prebuilt else None)
        _add_to_page(me, models, builder)
        announce(url_for(config, host, port, models, node))
        me.visualize_from_config(config=config, host=host, port=port, no_open_in_browser=not open_browser)
    finally:
        builder.close()
