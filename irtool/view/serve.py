"""Serve models in Google's Model Explorer (`ai-edge-model-explorer`, the `irtool[view]` extra).

The graphs go to the server as JSON text (`graphs://` model sources), so nothing is converted
again on the way; node data overlays are loaded with them.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import InputError
from .models import Model


def _model_explorer() -> Any:
    try:
        import model_explorer
    except ImportError:
        raise InputError("Model Explorer is not installed: pip install 'irtool[view]'") from None
    return model_explorer


def config_for(models: list[Model]) -> Any:
    """A Model Explorer config holding the models and their node data."""
    me = _model_explorer()
    config = me.config()
    for m in models:
        index = len(config.graphs_list)
        config.graphs_list.append(m.graphs_json())
        config.model_sources.append({"url": f"graphs://{m.label}/{index}"})
        for name, data in m.node_data.items():
            config.add_node_data(name, _node_data_json(data), model_name=m.label)
    return config


def _node_data_json(data: dict[str, Any]) -> str:
    import json

    return json.dumps(data, separators=(",", ":"))


def url_for(config: Any, host: str, port: int) -> str:
    return f"http://{host}:{port}/?data={config.to_url_param_value()}"


def serve(models: list[Model], host: str, port: int, open_browser: bool, announce: Callable[[str], None]) -> None:
    """Run Model Explorer's server on `host:port` until interrupted; `announce` gets the URL first."""
    me = _model_explorer()
    config = config_for(models)
    announce(url_for(config, host, port))
    me.visualize_from_config(config=config, host=host, port=port, no_open_in_browser=not open_browser)
