"""The dump model: Dump -> Subgraph -> Node / Param.

A node keeps the text of its statement line; its inputs, attributes and types are parsed from
that text the first time they are asked for (see `irtool.ir.values`), so reading a dump costs one
pass over its lines and a caller pays only for what it looks at. The model knows the format only:
graphs, checks and parallel facts are computed by functions that take a `Dump` and return values
(`irtool.ir.graph`, `irtool.ir.check`, `irtool.parallel`), and nothing writes into it after
`irtool.load` built it.
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

from .records import CALL, DumpWarning, Input, Ref, SourceRef, TypeInfo, Unreadable, param_number, source_ref
from .values import (
    Apply,
    _group_ends,
    param_refs,
    parse_tail,
    parse_type,
    parse_type_sig,
    parse_value,
    read_group,
    read_instance_name,
    scan_args,
)

_SCALAR = re.compile(r'I64\((-?\d+)\)|Bool\(([01])\)|"([^"\\]*)"')  # Node.scalar_attr's value forms
# A tuple nested at most three deep holding no other brackets: the usual strategy, matched in C (Node.bracket_attr).
_TUPLE = re.compile(r"\((?:[^()\[\]{}]|\((?:[^()\[\]{}]|\([^()\[\]{}]*\))*\))*\)")
_NODE_REF = re.compile(r"%\d+(?![\w.])")  # a node reference inside a statement (Node.node_refs)
# A subgraph named after the cell whose `construct` it is (Subgraph.cell):
# `..._mindspore_nn_wrap_cell_wrapper__TrainGradAccuStepCell_construct_4586`,
# `..._▸382_2CR_143_CR___main___DecoderLayer_construct_7389`
_CELL_GRAPH = re.compile(r"(?:^|_)([A-Z][A-Za-z0-9]*)_construct(?:_(\d+))?$")
MONADS = frozenset(("UMonad", "IOMonad"))


@dataclass
class Param:
    """A graph parameter: `%para3_fc1.weight: <Ref[Tensor[Float32]], (64, 32), ...>  :  has_default`."""

    ref: str  # "%para3_fc1.weight"
    line: int
    type_text: str = ""
    rest: str = ""
    graph: str | None = None  # owning subgraph for subgraph parameters, None for header ones

    @property
    def index(self) -> int:
        return int(param_number(self.ref))

    @property
    def name(self) -> str:
        """The parameter's own name, e.g. `fc1.weight`."""
        return self.ref[self.ref.index("_") + 1 :]

    @property
    def type(self) -> TypeInfo | None:
        return parse_type(self.type_text) if self.type_text else None

    @property
    def has_default(self) -> bool:
        return "has_default" in self.rest

    @property
    def full_shape(self) -> tuple[int, ...] | None:
        """A data input's shape over all ranks, printed after its own (`(8, 64)> : [64, 64]` under
        `dataset_strategy="data_parallel"`; the same under `full_batch`); None when not printed."""
        text = self.rest.strip().lstrip(":").strip()
        if not (text.startswith("[") and text.endswith("]")):
            return None
        dims = [d.strip() for d in text[1:-1].split(",") if d.strip()]
        return tuple(int(d) for d in dims) if all(d.lstrip("-").isdigit() for d in dims) else None


class Node:
    """One CNode: `%N(name) = Op(args) {instance name: ...} primitive_attrs: {...} ...`.

    Eager fields come from one regex over the statement line; `inputs`, `attrs` and the types are
    parsed on first use and cached.
    """

    # The debug name is read from the text and the scope kept as its cell and its last component, each
    # interned (a 68 MB dump: 42 000 distinct scopes, 18 000 distinct parts): 7 MB fewer held (issue 42).
    __slots__ = ("graph", "id", "callee", "op", "text", "args_start", "line", "type_lines",
                 "_cell", "_last", "sources", "notes", "_inputs", "_attrs", "_args_end", "_refs", "_params",
                 "__weakref__")

    def __init__(self, graph: str, id: int | None, callee: str, op: str, text: str,
                 args_start: int, line: int, type_lines: tuple[str, ...], scope: str | None,
                 sources: tuple[str, ...], notes: tuple[str, ...]) -> None:
        self.graph = graph
        self.id = id  # None for the Return node
        self.callee = callee  # "PrimFunc_MatMul", "@g" for `call @g`, "%3" for a computed callee
        self.op = op  # primitive name without PrimFunc_, "Return", or "(call)"
        self.text = text  # the statement without its indentation (lines joined by "\n" when it spans several)
        self.args_start = args_start  # offset in `text` just after the callee's "("
        self.line = line
        self.type_lines = type_lines
        if scope is None:
            self._cell, self._last = "", None
        else:  # `Default/network-GPT/` and `MatMul-op3`
            cut = scope.rfind("/") + 1
            self._cell, self._last = sys.intern(scope[:cut]), sys.intern(scope[cut:])
        self.sources = sources
        self.notes = notes
        self._inputs: list[Input] | None = None
        self._attrs: dict[str, Any] | Unreadable | None = None
        self._args_end = -1
        self._refs: tuple[str, ...] | None = None
        self._params: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        """The debug name printed after the node's number (`%5(CNode_12) = ...` -> `CNode_12`), "" when none is."""
        if self.id is None:
            return "Return"
        text = self.text
        end = text.find(" = ")  # a debug name holds no space nor bracket
        return text[text.index("(") + 1 : end - 1] if end > 0 and text[end - 1] == ")" else ""

    @property
    def scope(self) -> str | None:
        """The scope its `# Fullname with scope:` line prints (`Default/network-GPT/MatMul-op3`), None when none."""
        last = self._last
        return None if last is None else self._cell + last

    # --- identity
    @property
    def key(self) -> str:
        """Unique within its subgraph: `%N`, or `Return`."""
        return "Return" if self.id is None else f"%{self.id}"

    @property
    def uid(self) -> str:
        """Unique within the dump: `graph/%N`."""
        return f"{self.graph}/{self.key}"

    @property
    def is_call(self) -> bool:
        return self.op == CALL

    @property
    def signature_set(self) -> list[tuple[str, ...]] | None:
        """The signatures printed after a callee of several not yet resolved to one
        (`MultitypeFuncGraph_lazy_adam_opt{(Func, Bool, ...), (Func, ..., RowTensor, ...)}`): one
        tuple of type names per signature; None for any other callee."""
        if self.id is None or self.text[self.args_start - 2] != "}":  # the set ends `}(`
            return None
        begin = self.text.index(") = ") + len(") = ") + len(self.callee)
        signatures = scan_args(self.text, begin + 1)[0]
        return [tuple(i.text for i in scan_args(s.text, 1)[0]) for s in signatures]

    def __repr__(self) -> str:
        return f"<Node {self.key}({self.name}) = {self.callee} line {self.line}>"

    @property
    def source_refs(self) -> tuple[SourceRef, ...]:
        """Its `# In file` lines read (path, line, code), in print order; lines of another form left out."""
        return tuple(r for r in map(source_ref, self.sources) if r is not None)

    # --- lazily parsed parts
    @property
    def inputs(self) -> list[Input]:
        """The arguments by position; references resolved to their kind."""
        if self._inputs is None:
            self._inputs, self._args_end = scan_args(self.text, self.args_start)
        return self._inputs

    @property
    def tail(self) -> str:
        """The text after the argument list: instance name and attribute groups."""
        if self._args_end < 0:
            self.inputs  # noqa: B018 - computes _args_end
        return self.text[self._args_end :]

    def _tail(self) -> dict[str, Any] | Unreadable:
        if self._attrs is None:
            self._attrs = parse_tail(self.tail)
        return self._attrs

    @property
    def attrs(self) -> dict[str, Any]:
        """Attribute groups: `instance_name`, `primitive_attrs`, `cnode_attrs`,
        `cnode_primal_attrs`, and `extra` for trailing `{in_strategy: ...}` blocks; empty when the
        grammar could not read them (then `unreadable_attrs` says why)."""
        tail = self._tail()
        return {} if isinstance(tail, Unreadable) else tail

    @property
    def unreadable_attrs(self) -> Unreadable | None:
        """The attribute text kept raw, and why, when the grammar could not read it."""
        tail = self._tail()
        return tail if isinstance(tail, Unreadable) else None

    @property
    def instance_name(self) -> str | None:
        """`{instance name: X}`: a fixed form, read from the text without parsing the attributes."""
        if isinstance(self._attrs, dict):
            return self._attrs.get("instance_name")
        return read_instance_name(self.text, self.args_start)

    @property
    def primitive_attrs(self) -> dict[str, Any]:
        return self.attrs.get("primitive_attrs", {})

    @property
    def cnode_attrs(self) -> dict[str, Any]:
        return self.attrs.get("cnode_attrs", {})

    @property
    def primal_attrs(self) -> dict[str, Any]:
        return self.attrs.get("cnode_primal_attrs", {})

    def attr(self, key: str, default: Any = None) -> Any:
        """First value of `key` in primitive, cnode, primal, then trailing attribute blocks."""
        for group in ("primitive_attrs", "cnode_attrs", "cnode_primal_attrs", "extra"):
            values = self.attrs.get(group)
            if values and key in values:
                return values[key]
        return default

    # --- cheap reads for facts asked of every node (analysis passes run over whole dumps)
    def mentions(self, key: str) -> bool:
        """Whether an attribute `key` is printed on the node, without parsing its attributes; a
        `True` may still come from a longer name ending so (`forward_unique_id` for `unique_id`)."""
        return key + ": " in self.text

    def scalar_attr(self, key: str) -> Any:
        """`attr(key)` for the usual scalar forms (`I64(3)` -> 3, `Bool(1)` -> True, `"461583"`), read
        from the statement without parsing its attribute groups (the first group printing `key`, as
        `attr` takes it); any other form through `attr`. None when the node does not print `key`."""
        text, probe = self.text, key + ": "
        i = text.find(probe, self.args_start)
        while i >= 0:
            before = text[i - 1]
            if before == "{" or (before == " " and text[i - 2] == ","):  # a key, not the end of a longer one
                m = _SCALAR.match(text, i + len(probe))
                if m is None:
                    return self.attr(key)
                number, flag, quoted = m.groups()
                return int(number) if number is not None else (flag == "1" if flag is not None else quoted)
            i = text.find(probe, i + 1)
        return None

    def bracket_attr(self, key: str) -> Any:
        """The bracketed value after the last `key: ` (a strategy `((2, 1), (1, 4))`), found by bracket
        matching and read with the grammar's `value` rule (cached: strategies recur), without parsing
        the other attributes of large operators; None when not printed, `...` when it cannot be read so
        (`attr` then decides)."""
        text = self.text
        k = text.rfind(key + ": ")
        if k < 0:
            return None
        i = k + len(key) + 2
        if i >= len(text) or text[i] not in "([":
            return ...
        m = _TUPLE.match(text, i)  # the usual value, found by one regex
        if m is not None:
            value = parse_value(m.group())
        else:
            end = next(_group_ends(text, i), None)
            value = parse_value(text[i:end]) if end is not None else Unreadable(text[i:], "unbalanced")
        return ... if isinstance(value, Unreadable) else value

    def input_value(self, index: int) -> Any:
        """The constant an input is (`Bool(1)` -> True, `I64(2)` -> 2), None for a reference or no such
        input, `Unreadable` for text the grammar does not read."""
        ins = self.inputs
        if index >= len(ins) or ins[index].ref is not None:
            return None
        return parse_value(ins[index].text.strip())

    @property
    def unique_id(self) -> str | None:
        """`unique_id` (MindSpore's id of a node across passes; a recomputed copy prints its original's),
        as text; None when the node prints none."""
        if not self.mentions("unique_id"):
            return None
        uid = self.scalar_attr("unique_id")
        return None if uid is None else str(uid)

    def attr_group(self, group: str) -> dict[str, Any]:
        """One attribute group (`cnode_primal_attrs`, ...) read alone when it can be, else from the
        full parse; empty when the node prints none."""
        if group + ": {" not in self.text:
            return {}
        values = read_group(self.text, group)
        return self.attrs.get(group, {}) if values is None else values

    @property
    def called_graphs(self) -> tuple[str, ...]:
        """The subgraphs (names without `@`) this node calls: `call @g(...)`, and a callee printed with
        the closure it holds (the grammar's `node_callee` and `value_callee`), read as a `value`: each graph
        it names, whatever wraps it: `%41[@@g]`, `%35[@Partial(@g)]`, `Parameter_9[@Partial(@g)]`,
        `Parameter_9[@FuncUnion(@a, @b)]`, `%539[@FuncUnion(Partial(@a), Partial(@b))]`. A callee printed
        bare (`%3(...)`, `$(@g:CNode_5)(...)`) names none. `Partial(@g, ...)` binds @g without calling it
        (`bound_graph`)."""
        callee = self.callee
        if callee[0] == "@":
            return (callee[1:],)
        if self.op != CALL:
            return ()
        head = " = " + callee + "["
        at = self.text.find(head)
        if at < 0 or at > self.args_start:
            return ()
        closure = parse_value(self.text[at + len(head) : self.args_start - 2])  # `%5(x) = %3[@Partial(@g)](`
        return tuple(dict.fromkeys(r.name.lstrip("@") for r in _graph_refs(closure)))

    @property
    def node_refs(self) -> tuple[str, ...]:
        """The `%N` other nodes of its subgraph this node names after its callee, each once, in order:
        a regex over the text, far faster than splitting the arguments (`inputs`); a `%N` inside a
        string attribute would add a spurious one, and MindSpore prints none. Read once (every pass
        following data flow asks for them), each text kept once (interned: a node is named by all its readers)."""
        if self._refs is None:
            refs = _NODE_REF.findall(self.text, self.args_start)
            # most nodes name each input once: the duplicates dropped only where there are some
            self._refs = tuple(map(sys.intern, refs if len(refs) < 2 or len(set(refs)) == len(refs) else
                                   dict.fromkeys(refs)))
        return self._refs

    @property
    def first_node_ref(self) -> str | None:
        """The `%N` node the first argument is, when it is exactly one node reference (`Depend(%5, %7)` ->
        `%5`), without splitting the arguments."""
        m = _NODE_REF.match(self.text, self.args_start)
        if m is None:
            return None
        rest = self.text[m.end():m.end() + 1]
        return m.group() if rest in (",", ")") else None

    @property
    def first_param_ref(self) -> str | None:
        """The parameter the first argument is, when it is exactly one parameter reference (`Load(%para3_w, U)`
        -> `%para3_w`), without splitting the arguments."""
        refs = self.param_refs
        if not refs or not self.text.startswith(refs[0], self.args_start):
            return None
        return refs[0] if self.text[self.args_start + len(refs[0]):][:1] in (",", ")") else None

    @property
    def param_refs(self) -> tuple[str, ...]:
        """The parameters (`%paraN_x`, a free variable `$(@g:paraN_x)`) this node names after its
        callee, each once, in order, without splitting its arguments. Read once (the parameter, layer,
        role and lifetime passes ask it of every node, a lifetime walk once per call of its graph)."""
        if self._params is None:
            self._params = tuple(param_refs(self.text, self.args_start))
        return self._params

    @property
    def bound_graph(self) -> str | None:
        """The graph a `Partial(@g, ...)` binds (name without `@`), else None."""
        if self.op != "Partial":
            return None
        ins = self.inputs
        ref = ins[0].ref if ins else None
        return ref.name[1:] if ref is not None and ref.kind == "graph" else None

    @property
    def graph_args(self) -> tuple[str, ...]:
        """The graphs among the node's arguments (names without `@`): `Partial(@g, ...)`, `J(@g)`,
        `Switch(%c, @a, @b)` take a graph without calling it."""
        if self.text.find("@", self.args_start) < 0:  # most nodes: no argument parsed (nor the text copied)
            return ()
        return tuple(i.ref.name[1:] for i in self.inputs if i.ref is not None and i.ref.kind == "graph")

    @property
    def signature(self) -> tuple[list[TypeInfo], list[TypeInfo]] | None:
        """(input types, output types) from the first type line, if the dump printed one."""
        if not self.type_lines:
            return None
        return parse_type_sig(self.type_lines[0])

    @property
    def input_types(self) -> list[TypeInfo]:
        sig = self.signature
        return sig[0] if sig else []

    @property
    def monad_inputs(self) -> tuple[int, ...]:
        """The positions of the inputs whose printed type is a monad (`<UMonad, NoShape>`,
        `<IOMonad, ...>`): state threaded through only to order side effects. Read from the type
        line, parsed only when it names a monad; () when the dump prints no types."""
        if not self.type_lines or "Monad" not in self.type_lines[0]:
            return ()
        return tuple(i for i, t in enumerate(self.input_types) if t.kind in MONADS)

    @property
    def output_type(self) -> TypeInfo | None:
        """The first output type. Only the part after the last `->` is parsed: input lists of
        large graphs are long and rarely repeat, outputs are short and recur (cached)."""
        if not self.type_lines:
            return None
        line = self.type_lines[0]
        if "->" in line:
            outs = parse_type_sig(": () -> " + line.rsplit("->", 1)[1].strip())[1]
            if outs and outs[0].kind != "?":
                return outs[0]
        sig = parse_type_sig(line)
        return sig[1][0] if sig[1] else None


def _graph_refs(value: Any) -> Iterator[Ref]:
    """The graph references inside a value (a closure `@FuncUnion(Partial(@a), Partial(@b))`), in order."""
    if isinstance(value, Ref):
        if value.kind == "graph":
            yield value
    elif isinstance(value, Apply):
        for v in (*value.args, *value.kwargs.values()):
            yield from _graph_refs(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _graph_refs(v)


@dataclass(frozen=True)
class Marker:
    """`#------------------------> N`: frame N of the evaluation stack was evaluating `node` (the node
    printed after the marker; None when no node follows it, which is reported)."""

    depth: int
    line: int
    node: Node | None


@dataclass(frozen=True)
class TraceFrame:
    """One frame of `- The Traceback of Net Construct Code:`: the user's source place and its code."""

    index: int
    path: str
    line: int
    end_line: int | None
    columns: str  # `15~46`
    code: tuple[str, ...]  # the source lines printed under it, without the `^~~~` line


@dataclass
class Failure:
    """The failure an `analyze_fail.ir` reports. `form` names the banner: `2.3` (the `# ====` log with
    the compiler's message) or `2.0` (`# 1.This file shows the parsed IR info ...`, no log)."""

    form: str
    line: int  # of the first banner
    message: tuple[str, ...] = ()  # `- Caught exception:`, as printed
    cpp_stack: tuple[str, ...] = ()
    traceback: tuple[TraceFrame, ...] = ()
    stack_note: str | None = None  # `3/5 (Ignored 2 internal frames)`
    markers: list[Marker] = field(default_factory=list)  # in print order
    log: tuple[str, ...] = ()  # every line of the banners and the log, as printed

    @property
    def failing(self) -> Marker | None:
        """The marker of the deepest frame: the node whose evaluation failed (the markers are not
        always printed in the order of their depth)."""
        marked = [m for m in self.markers if m.node is not None]
        return max(marked, key=lambda m: m.depth) if marked else None

    @property
    def stack(self) -> list[Marker]:
        """The markers by depth, outermost first: the calls that led to the failing node."""
        return sorted(self.markers, key=lambda m: m.depth)


@dataclass
class SymbolLine:
    """One operation of a symbol engine: `s25<[8,inf]|8N|=s1> = ScalarMul(s24<[4,inf]|4N|=s1/2>, 2)`."""

    line: int
    text: str  # without its indentation
    # 0 for an operation of the engine; 1 for one that the operation printed above it built to
    # derive a symbol of its result (printed two spaces deeper), and so on
    depth: int = 0

    @property
    def target(self) -> str:
        """The symbol or shape it defines: `s25<[8,inf]|8N|=s1>`, `[s18<...>, 16]`."""
        return self.text.partition(" = ")[0]

    @property
    def op(self) -> str:
        """The operation: `ScalarMul`, `StridedSlice`."""
        return self.text.partition(" = ")[2].split("(", 1)[0]


@dataclass
class SymbolEngine:
    """`SymbolEngine_<graph> { ... }` of a `symbol engine details:` block (dynamic shapes)."""

    name: str  # "SymbolEngine_<graph>"
    line: int
    symbols: list[SymbolLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # unknown lines inside it, raw

    @property
    def graph(self) -> str:
        """The graph that owns the engine (its name without the `SymbolEngine_` prefix)."""
        return self.name.removeprefix("SymbolEngine_")

    def op_histogram(self) -> Counter:
        """Operation -> number of symbol lines using it."""
        return Counter(s.op for s in self.symbols)


@dataclass
class Subgraph:
    """A function graph: `subgraph @name(%para..) { nodes }` and what is printed before it."""

    name: str
    line: int
    params: list[str] = field(default_factory=list)  # parameter references, in order
    parent: str | None = None
    attrs: dict[str, str] = field(default_factory=dict)
    instance: str | None = None
    symbol_engine: str | None = None  # `subgraph symbol engine: SymbolEngine_<graph> : 0x...`
    preamble: list[str] = field(default_factory=list)  # other lines printed before it, raw
    nodes: list[Node] = field(default_factory=list)
    body_notes: list[str] = field(default_factory=list)  # unknown lines among its nodes, raw
    markers: list[Marker] = field(default_factory=list)  # analyze_fail.ir: `#------------------------> N` lines

    @property
    def cell(self) -> tuple[str, str | None] | None:
        """(cell class, MindSpore's graph number) of a graph that is a cell's `construct` (its name
        ends `<module>_<Class>_construct_<N>`: `DecoderLayer`, `7389`), else None (`kernel_graph0`)."""
        m = _CELL_GRAPH.search(self.name)
        return (m.group(1), m.group(2)) if m else None


@dataclass
class Dump:
    """One `.ir` file."""

    path: str
    entry: str | None = None
    declared: dict[str, int] = field(default_factory=dict)  # counts the header states
    attrs: dict[str, str] = field(default_factory=dict)
    jit_config: dict[str, str] = field(default_factory=dict)
    params: list[Param] = field(default_factory=list)  # header parameters (`# Params:`)
    subgraphs: list[Subgraph] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # `# Order:` lines, raw
    symbol_engines: list[SymbolEngine] = field(default_factory=list)  # `symbol engine details:` blocks
    sorted_order: bool = False  # printed with MS_DEV_SAVE_GRAPHS_SORT_MODE=1
    warnings: list[DumpWarning] = field(default_factory=list)  # found while reading
    size: int = 0  # bytes of the file read, after decompression (its text may hold multi-byte characters)
    failure: Failure | None = None  # analyze_fail.ir: the failure log and the marked nodes

    # --- navigation
    def nodes(self) -> Iterator[Node]:
        """Every node of every subgraph, in print order (Return nodes included)."""
        for g in self.subgraphs:
            yield from g.nodes

    def subgraph(self, name: str) -> Subgraph:
        name = name.lstrip("@")
        for g in self.subgraphs:
            if g.name == name:
                return g
        raise KeyError(name)

    @property
    def counts(self) -> dict[str, int]:
        """What was parsed, counted as MindSpore counts it in the header: `cnodes` includes each
        subgraph's Return node, `params` the header's `# Params:` lines only."""
        return {"subgraphs": len(self.subgraphs), "params": len(self.params),
                "cnodes": sum(len(g.nodes) for g in self.subgraphs)}

    def op_histogram(self) -> Counter:
        """Operator -> count over all nodes (Return included; calls of graphs as `(call)`)."""
        return Counter(n.op for n in self.nodes())
