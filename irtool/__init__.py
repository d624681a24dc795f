"""irtool: read MindSpore MindIR `.ir` dumps and show what a distributed graph really does."""
from __future__ import annotations

from .dumpdir import load_dir
from .errors import DumpError
from .model import Dump, Input, Node, Param, Ref, Subgraph, TypeInfo
from .parse import load

__all__ = ["load", "load_dir", "Dump", "DumpError", "Input", "Node", "Param", "Ref", "Subgraph", "TypeInfo"]
__version__ = "0.1.0"
