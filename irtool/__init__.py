"""irtool: read MindSpore MindIR `.ir` dumps and show what a distributed graph really does.

Layers, imports going down only: `ir` (the dump format) <- `parallel` (analysis) <- `present`
(text, tables, colours), `dumpdir` (rank folders) and `selection` (what a command reads) <- the
commands side by side, never importing one another (`report` = summarize, `render`, `diff`,
`consistency` = check, `view`) <- `cli`.
"""
from __future__ import annotations

from .dumpdir import RankFacts, RankFile, load_dir
from .errors import DumpError, InputError, IrtoolError
from .ir import Dump, DumpWarning, Input, Node, Param, Ref, Subgraph, TypeInfo, build_graph, check, load
from .parallel import ParallelFacts, analyze

__all__ = ["load", "load_dir", "analyze", "build_graph", "check", "Dump", "DumpError", "DumpWarning", "InputError",
           "IrtoolError", "Input", "Node", "ParallelFacts", "Param", "RankFacts", "RankFile", "Ref", "Subgraph",
           "TypeInfo"]
__version__ = "0.1.0"
