"""Serve models in Google's Model Explorer (`ai-edge-model-explorer`, the `irtool[view]` extra).

The page is served while the graphs are built (in a thread: the browser loads Model Explorer
meanwhile), and the graph JSON goes to the browser as irtool wrote it: Model Explorer's own
handler would parse it and write it again (seconds for a large dump). Node data overlays are
loaded with the graphs.
"""
from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable
from urllib.parse import quote, unquote

from ..errors import InputError
from .models import Model


def _model_explorer() -> Any:
    try:
        import model_explorer
    except ImportError:
        raise InputError("Model Explorer is not installed: pip install 'irtool[view]'") from None
    return model_explorer


class _Prebuilt:
    """A model's graph JSON in Model Explorer's config, sent as it is (see `_send_as_built`)."""

    def __init__(self, model: Model) -> None:
        self.model = model


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
    import flask

    def convert_response(resp: Any) -> Any:
        return resp if isinstance(resp, _Prebuilt) else convert(resp)

    def json_response(obj: Any) -> Any:
        if isinstance(obj, _Prebuilt):
            return flask.Response(obj.model.graphs_json(), mimetype="application/json")
        return respond(obj)

    json_response.irtool = True  # type: ignore[attr-defined]
    server.convert_adapter_response = convert_response
    server._make_json_response = json_response
    return True


def config_for(models: list[Model], as_built: bool = False) -> Any:
    """A Model Explorer config holding the models and their node data; `as_built`: the graphs as
    `_Prebuilt` entries (built on first request), else as JSON text."""
    me = _model_explorer()
    config = me.config()
    for m in models:
        index = len(config.graphs_list)
        config.graphs_list.append(_Prebuilt(m) if as_built else m.graphs_json())
        config.model_sources.append({"url": f"graphs://{m.label}/{index}"})
        for name, data in m.node_data.items():
            config.add_node_data(name, _node_data_json(data), model_name=m.label)
    return config


def _node_data_json(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


# Model Explorer draws a group's attributes on its box when its "View on node" setting "Layer node
# attributes" is on, and keeps that setting in the browser's local storage (key below). The page is
# seeded with it on, filtered to the counts MindInsight showed on folded scopes, unless the user has
# chosen a setting for this address already.
SHOW_ON_NODE_KEY = "model_explorer_show_on_node_item_types_v2"
SHOW_COUNTS = {"Layer node attributes": {"selected": True, "filterRegex": "strategy|redistribution|gradient"}}


def _show_counts_on_groups(me: Any) -> None:
    """Serve Model Explorer's page with the setting above seeded; if its server module changed shape,
    leave it alone (the counts stay in the side panel of each group)."""
    server = getattr(me, "server", None)
    original = getattr(server, "_serve_static_asset", None)
    web = getattr(server, "OSS_WEB_APP_DIR", None)
    if original is None or web is None or getattr(original, "irtool", False):
        return
    import flask

    seed = (f"<script>if (!localStorage.getItem({json.dumps(SHOW_ON_NODE_KEY)})) localStorage.setItem("
            f"{json.dumps(SHOW_ON_NODE_KEY)}, {json.dumps(json.dumps(SHOW_COUNTS))});</script>")

    def serve_asset(rel_path: str) -> Any:
        if rel_path != "index.html":
            return original(rel_path)
        with open(os.path.join(web, "index.html"), encoding="utf-8") as f:
            page = f.read()
        return flask.Response(page.replace("<head>", "<head>" + seed, 1), mimetype="text/html")

    serve_asset.irtool = True  # type: ignore[attr-defined]
    server._serve_static_asset = serve_asset


def url_for(config: Any, host: str, port: int, models: list[Model] | None = None) -> str:
    """The page's address. Model Explorer opens the largest graph unless the address names one (its
    `uiState`): a folder names its `pipeline` graph."""
    value = config.to_url_param_value()
    first = next((m for m in models or [] if m.first_graph), None)
    if first is not None:
        data = json.loads(unquote(value))
        data["uiState"] = {"paneStates": [{"deepestExpandedGroupNodeIds": [], "selectedNodeId": "",
                                           "selectedGraphId": first.first_graph, "selectedCollectionLabel": "",
                                           "widthFraction": 1}]}
        value = quote(json.dumps(data))
    return f"http://{host}:{port}/?data={value}"


def _build_in_background(models: list[Model]) -> None:
    """Build every model's graph JSON now, in a thread; a request for it waits for the same build
    (the model's lock). An error is left for that request to meet again."""
    def build() -> None:
        for m in models:
            try:
                m.graphs_json()
            except Exception:  # noqa: BLE001 - raised again, and reported, where the page asks for the graphs
                return

    threading.Thread(target=build, name="irtool-graphs", daemon=True).start()


def serve(models: list[Model], host: str, port: int, open_browser: bool, announce: Callable[[str], None]) -> None:
    """Run Model Explorer's server on `host:port` until interrupted; `announce` gets the URL first."""
    _build_in_background(models)  # from now on: Model Explorer starts and the page loads meanwhile
    me = _model_explorer()
    config = config_for(models, _send_as_built(me))
    _show_counts_on_groups(me)
    announce(url_for(config, host, port, models))
    me.visualize_from_config(config=config, host=host, port=port, no_open_in_browser=not open_browser)
