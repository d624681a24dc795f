"""What failed in a compile that stopped at type or shape inference (`analyze_fail.ir`): the failing node,
the operator it applies, where it is in the dump and in the user's code, its inputs' abstract values, and the
calls that led to it (docs/failure.md).

Before inference succeeds a node rarely names its operator: `%2(CNode_20) = %0(%para0_x, %1)` calls what
`%0 = resolve(NameSpace[ClassMember: ...], matmul)` resolved, `self.matmul`. The compiler's message names
the primitive (`For 'MatMul' ...`); where it does not, the operator is the name the callee resolves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..ir import Dump, Node, SourceRef, Subgraph, TraceFrame
from ..ir.records import CALL
from .params import param_name
from .records import _as_dict
from .strategies import attr_value

# `For 'MatMul' the input ...`, `For 'BiasAdd', bias[0] ...`, `For primitive[MatMul], the input ...`
_NAMED = re.compile(r"For (?:'(\w+)'|primitive\[(\w+)\])")
_RESOLVERS = frozenset({"resolve", "getattr"})  # a callee computed from a name: the name it resolves
# debug names the compiler makes up (`CNode_12`, `[CNode]7`, `equiv_9_x`); others are the user's variables (`a`, `x`)
_GENERATED = re.compile(r"\[?CNode\]?_?\d+|equiv_\d+_.*|\d+")


@dataclass(frozen=True)
class FailedInput:
    """One input of the failing node: as printed, its abstract value (`<Tensor[Float32], (4, 32)>`, or
    `<null>` when inference never reached it) read into type and shape, its strategy when the node
    prints one, and what it is (a parameter's name, the name a resolved node takes)."""

    index: int
    text: str
    abstract: str | None
    dtype: str | None
    shape: Any
    strategy: Any
    what: str | None


@dataclass(frozen=True)
class StackCall:
    """One frame of the evaluation stack: the node of `graph` it was evaluating and what that calls."""

    depth: int
    graph: str
    node: str  # `%5`
    line: int  # in the dump
    calls: str  # the callee as resolved: `fc2`, `@__main___Block_construct_7`, `MatMul`
    source: str | None  # `path:line`


@dataclass(frozen=True)
class FailureRecord:
    """The failing node of an `analyze_fail.ir` and what the file says about it. `operator_from` says
    where the operator's name comes from: `message` (the compiler names the primitive), `callee` (the
    name the callee resolves), `node` (the node applies a primitive)."""

    path: str
    message: tuple[str, ...]
    operator: str
    operator_from: str
    graph: str
    node: str  # `%2`
    statement: str  # `%2(CNode_20) = %0(%para0_x, %1)`, from the parsed node (attributes left out)
    line: int
    marker_line: int
    depth: int
    scope: str | None
    source: SourceRef | None
    inputs: tuple[FailedInput, ...]
    output: str | None
    stack: tuple[StackCall, ...]
    traceback: tuple[TraceFrame, ...]
    stack_note: str | None
    form: str
    unreached: tuple[str, ...] = field(default=())  # markers followed by no node, `file:line`

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def as_dict(self) -> dict[str, Any]:
        d = _as_dict(self, ("source", "traceback", "inputs", "stack"))
        s = self.source
        d["source"] = None if s is None else {"path": s.path, "line": s.line, "end_line": s.end_line, "code": s.code}
        d["inputs"] = [_as_dict(i) for i in self.inputs]
        d["stack"] = [_as_dict(c) for c in self.stack]
        d["traceback"] = [{"index": t.index, "path": t.path, "line": t.line, "end_line": t.end_line, "code": list(t.code)}
                          for t in self.traceback]
        return d


def failure_record(dump: Dump) -> FailureRecord | None:
    """The failure an `analyze_fail.ir` reports; None for any other dump, or one with no marked node."""
    f = dump.failure
    failing = f.failing if f is not None else None
    if f is None or failing is None or failing.node is None:
        return None
    node = failing.node
    graph = _graph_of(dump, node)
    operator, how = _operator(f.message, node, graph)
    strategy = attr_value(node, "in_strategy") if node.mentions("in_strategy") else None
    types = node.input_types
    inputs = []
    for i, inp in enumerate(node.inputs):
        t = types[i] if i < len(types) else None
        inputs.append(FailedInput(i, inp.text.strip(), t.text if t else None, t.dtype if t else None,
                                  t.shape if t else None, _item(strategy, i), _what(inp.text.strip(), graph)))
    out = node.output_type
    stack = []
    for m in f.stack:
        if m.node is None:
            continue
        g = _graph_of(dump, m.node)
        src = m.node.source_refs
        stack.append(StackCall(m.depth, m.node.graph, m.node.key, m.node.line, _callee_name(m.node, g),
                               src[0].where if src else None))
    refs = node.source_refs
    head = f"{node.key}({node.name})" if node.name else node.key
    statement = f"{head} = {node.callee}({', '.join(i.text for i in inputs)})"
    return FailureRecord(dump.path, f.message, operator, how, node.graph, node.key, statement, node.line,
                         failing.line, failing.depth, node.scope, refs[0] if refs else None, tuple(inputs),
                         out.text if out is not None else None, tuple(stack), f.traceback, f.stack_note, f.form,
                         tuple(f"{dump.path}:{m.line}" for m in f.markers if m.node is None))


def _graph_of(dump: Dump, node: Node) -> Subgraph | None:
    """The subgraph holding `node` (analyze_fail.ir may print two graphs of one name)."""
    return next((g for g in dump.subgraphs if any(n is node for n in g.nodes)), None)


def _operator(message: tuple[str, ...], node: Node, graph: Subgraph | None) -> tuple[str, str]:
    for line in message:
        m = _NAMED.search(line)
        if m is not None:
            return m.group(1) or m.group(2), "message"
    if node.op != CALL:
        return node.op, "node"
    return _callee_name(node, graph), "callee"


def _callee_name(node: Node, graph: Subgraph | None) -> str:
    """What a node calls, as the dump lets one name it: a primitive, a graph, or the name its callee
    node resolves (`resolve(..., matmul)` -> `matmul`, `getattr(%0, "bias_add")` -> `bias_add`)."""
    if node.op != CALL:
        return node.op
    if node.callee.startswith("%") and graph is not None:
        named = _what(node.callee, graph)
        if named is not None:
            return named
    return node.callee


def _what(text: str, graph: Subgraph | None) -> str | None:
    """What an input is: a parameter's name, or the name a `resolve` / `getattr` node takes."""
    if text.startswith("%para"):
        return param_name(text)
    if graph is None or not text.startswith("%") or not text[1:].isdigit():
        return None
    producer = next((n for n in graph.nodes if n.key == text), None)
    if producer is None:
        return None
    if producer.op in _RESOLVERS and producer.inputs:
        return producer.inputs[-1].text.strip().strip('"')
    variable = producer.name if producer.name and not _GENERATED.fullmatch(producer.name) else None
    if producer.op == CALL:
        return variable
    return f"{variable} ({producer.op})" if variable else producer.op


def _item(strategy: Any, i: int) -> Any:
    return strategy[i] if isinstance(strategy, tuple) and i < len(strategy) else None


@dataclass(frozen=True)
class StrategyMisfit:
    """An operator whose sharding strategy splits a dimension of an input's full shape into pieces that do not
    divide it: MindSpore refuses such a strategy in its parallel pass (`... shape value 12 at dim index 0 cannot
    be divisible by strategy value 8`, `operator MatMul init failed`) and writes no analyze_fail.ir; the last
    pass it dumped (step_parallel_begin) shows the operator. `dims`: (dimension, size, pieces) of each misfit."""

    node: str  # uid
    op: str
    name: str
    line: int
    scope: str
    input: int
    shape: tuple[int, ...]
    strategy: tuple[int, ...]
    dims: tuple[tuple[int, int, int], ...]

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self)


def strategy_misfits(dump: Dump, kind: str) -> list[StrategyMisfit]:
    """Every input of an operator with a strategy whose full shape the strategy does not divide. The full shapes
    are the printed types in a pass before the parallel pass (`kind` `pre`, the `file_kind` fact), else the
    `origin_input_shapes` the parallel pass records: from step_parallel_end on, the nodes it inserts print their
    slices (MindFormers' embedding `Sub` of a lazy-inline layer: `(1, 512)` under `((2, 1), (1, 1))`)."""
    out: list[StrategyMisfit] = []
    for node in dump.nodes():
        if not node.mentions("in_strategy") or node.op.startswith("_Virtual"):
            continue
        strategy = attr_value(node, "in_strategy")
        if not isinstance(strategy, tuple):
            continue
        origin = attr_value(node, "origin_input_shapes") if node.mentions("origin_input_shapes") else None
        if isinstance(origin, (tuple, list)):
            shapes = [tuple(s) if isinstance(s, (tuple, list)) else None for s in origin]
        elif kind == "pre":
            shapes = [t.shape for t in node.input_types]
        else:
            continue
        for i, (shape, split) in enumerate(zip(shapes, strategy)):
            if not (isinstance(shape, tuple) and isinstance(split, tuple) and len(shape) == len(split)):
                continue
            dims = tuple((d, size, n) for d, (size, n) in enumerate(zip(shape, split))
                         if isinstance(size, int) and isinstance(n, int) and size > 0 and n > 0 and size % n)
            if dims:
                out.append(StrategyMisfit(node.uid, node.op, node.instance_name or node.name, node.line,
                                          node.scope or "", i, shape, split, dims))
    return out
