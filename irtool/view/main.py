"""Model Explorer adapter extension: `model-explorer graph.ir.xz --extensions=irtool.view`.

Model Explorer imports `<extension>.main` and registers the `Adapter` classes defined there.
"""
from __future__ import annotations

from typing import Any

from model_explorer import Adapter, AdapterMetadata, ModelExplorerGraphs, graph_builder

from .models import models_for


class MindIRAdapter(Adapter):
    """MindSpore MindIR text dumps (`.ir`, `.ir.gz`, `.ir.xz`) read by irtool."""

    metadata = AdapterMetadata(
        id="irtool_mindir",
        name="MindIR dump (irtool)",
        description="MindSpore MindIR text dumps (.ir, .ir.gz, .ir.xz) with irtool's parallel facts",
        source_repo="",
        # The web app matches the text after the last dot: `x.ir.xz` -> `xz`.
        fileExts=["ir", "gz", "xz"],
    )

    def __init__(self) -> None:
        super().__init__()

    def convert(self, model_path: str, settings: dict[str, Any]) -> ModelExplorerGraphs:
        model = models_for(model_path)
        # Model Explorer copies dataclasses into JSON; the nodes are already JSON-ready dicts.
        return {"graphs": [graph_builder.Graph(id=g["id"], nodes=g["nodes"], groupNodeAttributes=g["groupNodeAttributes"])
                           for g in model.graphs]}
