"""The dump format: grammar, reading, the model, the graph, the deep check.

Imports nothing from the layers above (parallel analysis, reports, diff, CLI).
"""
from __future__ import annotations

from .check import check
from .graph import build_graph, data_graph
from .model import Dump, Failure, Marker, Node, Param, Subgraph, SymbolEngine, SymbolLine, TraceFrame
from .parse import load
from .records import DumpWarning, Input, Ref, SourceRef, TypeInfo, Unreadable, source_ref
from .source import pass_name

__all__ = ["check", "build_graph", "data_graph", "load", "pass_name", "Dump", "Node", "Param", "Subgraph",
           "SymbolEngine", "SymbolLine", "Failure", "Marker", "TraceFrame", "DumpWarning", "Input", "Ref", "SourceRef",
           "source_ref", "TypeInfo", "Unreadable"]
