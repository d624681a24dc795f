"""Dumps as Model Explorer graphs: plain JSON-ready dicts in Model Explorer's graph format.

One graph per subgraph of a dump: a node per operator (id `graph/%N`, label the operator,
namespace the name scope without the operator's own `Op-opN`, so forward `Default/...`, backward
`Gradients/...` and recompute `recompute_Default/...` parts are separate trees), a node per
parameter or free variable it reads, data edges from arguments, `subgraphIds` for the graphs a
node calls. The side panel shows the dump's own text (file, line, attributes, types, source lines)
and irtool's facts (strategy, communication category, phase, rule, group, bytes, peer, what it
serves). Folded scopes carry counts of operators with strategies, redistribution and
gradient-aggregation nodes. A subgraph too large for Model Explorer to open in seconds comes as
an overview with a graph per scope behind it (`split_large`). Node data (Model Explorer's per-node
overlay) colours nodes by category and by bytes; for a diff, by added / removed / changed.

Nothing here imports Model Explorer: the dicts are its JSON format, so `irtool export` works
without it, and `irtool view` serves them as JSON text (no dataclass copies of 40 k nodes).
"""
from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from functools import partial
from typing import Any, Callable, Iterable, Iterator

from ..ir import Dump, Node, TypeInfo
from ..ir.values import literal_value
from ..parallel import CommNode, ParallelFacts
from ..parallel.chains import user_source
from ..parallel.records import ChainEnd, RedistributionChain
from ..parallel.table import NodeFacts
from ..present import DASH, cell, chain_end_layout, literal_text, rank_list, shape_text, strategy_text, type_text
from ..present.palette import CATEGORY_COLORS, CAUSE_COLORS, CAUSE_TEXT, DIFF_COLORS, DIFF_TEXT
from ..present.rules import rule_text
from . import PART_SIZE

MAX_VALUE = 2000  # characters of one attribute shown in the side panel (the dump line has them all)


# Model Explorer draws a box's text in a canvas font without these (each a `?`): their ASCII spelling
_CANVAS = str.maketrans({"→": "->", "—": "-", "×": "x", "…": "..."})


def canvas_text(value: Any) -> Any:
    """Text as Model Explorer's canvas can draw it (`1,024 → 2,048 (×2.00)` -> `1,024 -> 2,048 (x2.00)`); other
    values (a panel's node links) as they are."""
    return value.translate(_CANVAS) if isinstance(value, str) else value


def namespace_of(scope: str | None) -> str:
    """`Default/network-Net/fc1-Dense/MatMul-op0` -> `Default/network-Net/fc1-Dense`."""
    parts = [p for p in (scope or "").split("/") if p]
    return "/".join(parts[:-1])


def _kv(key: str, value: Any) -> dict[str, Any]:
    """A panel row. Integers are written plain (`tag 1048576`, `micro 0`): byte counts come as text
    (`cell`, `65,536`)."""
    if type(value) is not str:
        if isinstance(value, dict):  # a special value (node links)
            return {"key": key, "value": value}
        value = str(value) if type(value) is int else cell(value)
    if len(value) > MAX_VALUE:
        value = value[:MAX_VALUE] + f" (+{len(value) - MAX_VALUE} characters, see the dump line)"
    return {"key": key, "value": value}


# a `# In file` line's place: `# In file /x/make.py:58, 14~36/code/`; `:56~70` is a function's lines
_FRAME = re.compile(r"# In file (?:[^,]*/)?([^/,]+):(\d+)(~\d+)?, ")


def call_stack(sources: tuple[str, ...]) -> str:
    """The calls a node comes from, outermost first, as `file:line`: `cell_wrapper.py:425 > make.py:90 >
    make.py:58` (the lines of the functions themselves and repeats left out)."""
    out: list[str] = []
    for line in sources:
        m = _FRAME.match(line)
        if m and not m.group(3):
            place = f"{m.group(1)}:{m.group(2)}"
            if not out or out[-1] != place:
                out.append(place)
    return " > ".join(out)


def _graph_refs(node: Node, args: list[str], names: set[str]) -> list[str]:
    """Subgraphs this node refers to: `@g` arguments (`args`), `call @g`, `[@FuncUnion(@a, @b)]` callees."""
    return [g for g in dict.fromkeys([*args, *node.called_graphs]) if g in names]


def link(uids: Iterable[str], graph: str | None = None) -> dict[str, Any]:
    """Model Explorer's `node_ids` attribute value: the panel shows the ids as links that jump to
    the nodes. `graph`: keep only uids of that subgraph, as node keys (`%N`)."""
    ids = [u.rpartition("/")[2] if graph is not None else u for u in uids
           if graph is None or u.rpartition("/")[0] == graph]
    return {"type": "node_ids", "nodeIds": list(dict.fromkeys(ids))}


def _end_text(end: ChainEnd | None) -> str:
    if end is None:
        return DASH
    text = f"{end.op} {end.name}".strip() + (f" (line {end.line})" if end.line else "")
    if end.input_index is not None:
        text += f" input {end.input_index}"
    return text


def chain_attrs(ch: RedistributionChain, graph: str) -> list[dict[str, Any]]:
    """What `summarize` says about the redistribution a node belongs to, with links to its nodes."""
    phase = ch.phase + (f" (bprop of chain {ch.of_chain})" if ch.of_chain is not None else "")
    rows: list[tuple[str, Any]] = [("redistribution chain", f"{ch.id}, {phase}")]
    if ch.producer is not None:
        rows += [("producer", _end_text(ch.producer)), ("producer node", link([ch.producer.node], graph))]
    consumers = ch.consumers or ([ch.consumer.node] if ch.consumer else [])
    if ch.consumer is not None:
        rows.append(("consumer", _end_text(ch.consumer)))
    if consumers:
        rows.append((f"consumers ({len(consumers)})", link(consumers, graph)))
    rows.append(("from -> to", f"{chain_end_layout(ch.producer)} -> {chain_end_layout(ch.consumer)}"))
    rows.append((f"chain ({len(ch.nodes)} nodes)", link([f"{graph}/{n.split()[0]}" for n in ch.nodes], graph)))
    if ch.bytes is not None:
        rows.append(("chain bytes", cell(ch.bytes)))
    if ch.consumer is not None and ch.consumer.source:
        rows.append(("consumer source", ch.consumer.source))
    return [_kv(k, v) for k, v in rows if v not in (None, "", DASH)]


def strategy_matrix(s: Any) -> list[dict[str, Any]]:
    """The strategy as a small table, one row per input (and output): the device matrix and tensor map
    of a layout, else the pieces each dimension is cut into."""
    rows: list[dict[str, Any]] = []
    for side, strategy, layout in (("in", s.in_strategy, s.in_layout), ("out", s.out_strategy, s.out_layout)):
        if isinstance(layout, (tuple, list)) and layout and all(isinstance(x, dict) for x in layout):
            for i, lay in enumerate(layout):
                rows.append(_kv(f"{side} {i} layout", strategy_text(lay)))  # device matrix, tensor map
        elif isinstance(strategy, (tuple, list)) and strategy and all(isinstance(x, (tuple, list)) for x in strategy):
            for i, dims in enumerate(strategy):
                rows.append(_kv(f"{side} {i} split", " x ".join(str(d) for d in dims) + " (pieces per dimension)"))
    return rows


def comm_attrs(c: CommNode, graph: str | None = None) -> list[dict[str, str]]:
    """What irtool derived about a communication node, for the side panel. `serves` is a link when it
    names a node of `graph` (the subgraph the panel's graph shows), else the node's uid as text."""
    serves: Any = c.serves
    if c.serves and "/%" in c.serves and c.serves.rpartition("/")[0] == graph:
        serves = link([c.serves], graph)
    # the group as the ranks in it (its name, a hash like `4-6301172352641561019`, is for grepping the dump)
    group = f"ranks {rank_list(c.group_ranks)}" if c.group_ranks else c.group
    rows = [("category", c.category), ("phase", c.phase), ("rule", rule_text(c.rule) if c.rule else None),
            ("group", group), ("group name", c.group if c.group_ranks and c.group != group else None),
            ("shape", shape_text(c.shape) if c.shape is not None else None),
            ("dtype", c.dtype), ("bytes", cell(c.bytes) if c.bytes is not None else None),
            ("runs a step", cell(c.runs)), ("micro", c.micro),
            ("peer rank", c.peer_rank), ("peer stage", c.peer_stage), ("segment", c.segment),
            ("serves", serves),
            ("serves op", c.serves_op), ("serves strategy", strategy_text(c.serves_strategy) if c.serves_strategy
                                          is not None else None),
            ("parameter", c.parameter)]
    return [_kv(f"comm {k}", v) for k, v in rows if v is not None and v != ""]


class _Column:
    """A node fact as a function of the node, read for every node at once (`NodeFacts.column`) when first
    asked for: the graphs ask it of every node, and a dict lookup costs a tenth of the table's call."""

    __slots__ = ("table", "fact", "cells")

    def __init__(self, table: NodeFacts, fact: str) -> None:
        self.table, self.fact, self.cells = table, fact, None

    def __call__(self, node: Node) -> Any:
        cells = self.cells
        if cells is None:
            cells = self.cells = self.table.column(self.fact)
        return cells.get(node)


class _Context:
    """Per dump: facts by node uid, parameters, subgraph names. `file`: the dump's name as the panel
    says it (`rank_4/19_validate_0078.ir.xz` in a folder)."""

    def __init__(self, dump: Dump, facts: ParallelFacts, file: str | None = None) -> None:
        self.dump = dump
        self.comm = {c.node: c for c in facts.comm}
        self.strategy = {s.node: s for s in facts.strategies}
        self.chains: dict[int, RedistributionChain] = {ch.id: ch for ch in facts.chains}
        self.params = {p.ref: p for p in dump.params}
        self.names = {g.name for g in dump.subgraphs}
        self.graph_ids = {n: n for n in self.names}  # the graph a call opens: `dump_graphs` names them
        self.shown = {n: n for n in self.names}  # each subgraph's name in the viewer (`graph_names`): `dump_graphs`
        # the `source` and `call stack` rows of a node's `# In file` lines, shared by nodes
        self.stacks: dict[tuple[str, ...], tuple[dict[str, str] | None, dict[str, str] | None]] = {}
        self.outputs: dict[str, list[dict[str, Any]]] = {}  # output metadata, shared by type
        self.file = file or os.path.basename(dump.path)
        # node uid -> id of the redistribution chain it belongs to
        self.micro: Micro = _Column(facts.table, "micro")
        self.layer: Callable[[Node], int | None] = _Column(facts.table, "layer")
        self.order_inputs: Callable[[Node], tuple[int, ...]] = _Column(facts.table, "order_inputs")
        self.kind: Callable[[Node], str] = _Column(facts.table, "kind")
        self.phase: Callable[[Node], str] = _Column(facts.table, "phase")
        # a kernel graph's kernels: their place in the order the device runs them, and their streams
        kernels = facts.table.get("kernels")
        self.stream: Callable[[Node], int | None] = _Column(facts.table, "stream")
        self.streams = {s.id: s.kind for s in kernels.streams} if kernels is not None else {}
        self.executed = {n: i for i, n in enumerate(kernels.order, 1)} if kernels is not None else {}
        self.chain_of: dict[str, int] = {}
        for ch in facts.chains:
            graph = ch.comm[0].rpartition("/")[0] if ch.comm else ""
            for entry in ch.nodes:
                self.chain_of[f"{graph}/{entry.split()[0]}"] = ch.id


PHASES = ("forward", "backward", "recompute", "optimizer")  # the `phase` fact's values (`records.Phase`)
PHASE_ROWS = {p: {"key": "phase", "value": p} for p in PHASES}


def _callee(node: Node, ctx: _Context) -> str:
    """A call's callee as the graph selector names it (`DecoderLayer forward #7389`, not the dump's
    `@7389_..._DecoderLayer_construct_7389`), a closure by the graph it holds (`%19[@Partial(@..._GPT_..._7590)]`:
    `GPT backward #7590`); a closure naming no graph (`%5`) as the dump says it."""
    own = ctx.shown.get(node.callee.lstrip("@"))
    held = [ctx.shown.get(g, g) for g in node.called_graphs] if own is None else []
    return own or " | ".join(held) or node.callee


def _callee_in_dump(node: Node, ctx: _Context) -> str | None:
    """The dump's name of a call's callee where the viewer's differs: `@..._construct_7592`, a closure with the
    graphs it holds (`%19 holding @..._construct_7590`)."""
    if node.callee.lstrip("@") in ctx.shown:
        return node.callee
    held = [f"@{g}" for g in node.called_graphs]
    return f"{node.callee} holding {', '.join(held)}" if held else None


def _node_attrs(node: Node, uid: str, ctx: _Context) -> list[dict[str, str]]:
    attrs = [{"key": "name", "value": node.name}, {"key": "file", "value": f"{ctx.file}:{node.line}"}]
    if node.scope:
        attrs.append({"key": "scope", "value": node.scope})
    phase = ctx.phase(node)  # the fact (the page's phase selector reads it): one row dict per phase, shared
    attrs.append(PHASE_ROWS.get(phase) or _kv("phase", cell(phase)))
    if node in ctx.executed:  # a kernel graph's kernel
        stream = ctx.stream(node)
        attrs.append(_kv("execution order", f"{ctx.executed[node]:,} of {len(ctx.executed):,}"))
        if stream is not None:
            attrs.append(_kv("stream", f"{stream} ({ctx.streams.get(stream, '—')})"))
    if node.is_call:
        attrs[:0] = [_kv("operator", node.op)]  # the box says `call <the callee's name in the viewer>`
        attrs.append(_kv("callee", _callee(node, ctx)))
        in_dump = _callee_in_dump(node, ctx)
        if in_dump:
            attrs.append(_kv("callee in the dump", in_dump))
    inst = node.instance_name
    if inst:
        attrs.append(_kv("instance name", inst))
    # the user's own line first, the whole call stack at the end; both read once per distinct stack
    rows = ctx.stacks.get(node.sources)
    if rows is None:
        mine, stack = user_source(node), call_stack(node.sources)
        rows = ctx.stacks[node.sources] = (_kv("source", mine) if mine else None,
                                           _kv("call stack", stack) if stack else None)
    if rows[0] is not None:
        attrs.append(rows[0])
    s = ctx.strategy.get(uid)
    if s is not None:
        for key, value in s.values().items():
            if value is not None:
                attrs.append(_kv(key.replace("_", " "), strategy_text(value)))
        attrs += strategy_matrix(s)
    c = ctx.comm.get(uid)
    if c is not None:
        attrs += comm_attrs(c, node.graph)
    chain = ctx.chains.get(ctx.chain_of.get(uid, -1))
    if chain is not None:
        attrs += chain_attrs(chain, node.graph)
    for inp in node.inputs:
        if inp.ref is None and not inp.nested:  # constants are not edges: show them, typed (`false`, `0`)
            value = literal_value(inp.text)
            attrs.append(_kv(f"input {inp.index}", inp.text if value is None else literal_text(value)))
    tail = node.tail.strip()
    if inst and tail.startswith("{instance name: "):  # said above
        tail = tail[len(inst) + 17 :].strip()
    if tail:  # as printed: parsing every operator's attributes would cost seconds on a large dump
        attrs.append(_kv("attributes", tail))
    if rows[1] is not None:
        attrs.append(rows[1])
    return attrs


def _output_metadata(t: TypeInfo | None, cache: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """An output's shape and dtype, a tuple summarised (`tuple of 2: 2 × Float32 (256, 512)`), other
    types in a word (`Bool`, `UMonad`; as printed when not read), shared by nodes of the same type."""
    if t is None:
        return []
    meta = cache.get(t.text)
    if meta is None:
        if t.kind in ("Tensor", "Ref") and t.dtype:
            attrs = [_kv("shape", shape_text(t.shape)), _kv("dtype", t.dtype)]
            if t.kind == "Ref":
                attrs.append(_kv("type", "parameter (Ref)"))
        elif t.kind == "?" or (t.kind == "Tuple" and t.elements is None):
            attrs = [_kv("type", t.text)]
        else:
            attrs = [_kv("type", type_text(t.kind, t.dtype if t.kind != "Tuple" else None,
                                           t.shape if t.kind == "Tuple" else None, t.elements))]
        meta = cache[t.text] = [{"id": "0", "attrs": attrs}]
    return meta


# --- a hierarchy Model Explorer can lay out ---------------------------------------------------

# Direct children of one namespace at most: Model Explorer lays out every child of each namespace an
# expansion touches (its issue #50), and a namespace of thousands never finishes (bench/view_bench.py).
MAX_CHILDREN = 120
Member = tuple[dict[str, Any], "Node | None"]  # a graph node and the operator it is (parameters: their first user)


Micro = Callable[[Node], "int | None"]  # the fact table's micro batch of a node


def _micro(node: Node | None, micro: Micro) -> str | None:
    m = micro(node) if node is not None else None
    return None if m is None else f"micro {m}"


def _children(direct: Iterable[str]) -> dict[str, set[str]]:
    """Namespace -> its child namespaces, of the namespaces holding nodes (`direct`) and their parents."""
    children: dict[str, set[str]] = defaultdict(set)
    for ns in direct:  # each namespace's chain of parents once, not once per member
        parts = ns.split("/") if ns else []
        for i in range(len(parts)):
            children["/".join(parts[:i])].add("/".join(parts[: i + 1]))
    return children


def bound_namespaces(members: list[Member], chain_of: dict[str, int], micro: Micro,
                     stackable: Callable[[Node], bool] = lambda n: True,
                     reads: tuple[Reads, Reads] | None = None) -> dict[str, str]:
    """Split every namespace with more than MAX_CHILDREN direct children into levels users know,
    in this order while a group is still too big: micro batch (the `micro` attribute), the
    redistribution chain a node belongs to, operator type, the layer a node reads and the parameter the operators
    it reads read (`reads`, `_reads`: a graph drawn by layer, whose nodes of no layer are a layer's plumbing: the
    gradient accumulation's `Depend`s of each layer, one per micro batch of each of its weights),
    then runs of dump lines. Then, in any
    namespace of more than STACK_SCOPE children, the operators of a type occurring STACK_MIN times or
    more (`stackable` ones) go into a group of their own, `Depend (17)` (a stack).
    Returns each new namespace's level name (`micro batch`, `operator`, ...), for its group attributes."""
    direct: dict[str, list[Member]] = defaultdict(list)
    for m in members:
        direct[m[0]["namespace"]].append(m)
    children = _children(direct)
    levels: dict[str, str] = {}
    for ns, ms in direct.items():
        if len(ms) + len(children[ns]) > MAX_CHILDREN:
            _split(ns, ms, 0, (chain_of, micro, reads), levels)
    _stack(members, levels, stackable)
    return levels


STACK_MIN = 4  # operators of one type in one scope that make a stack
STACK_SCOPE = 8  # direct children of a scope above which its repeated operators are stacked


def _stack(members: list[Member], levels: dict[str, str], stackable: Callable[[Node], bool]) -> None:
    direct: dict[str, list[Member]] = defaultdict(list)
    for m in members:
        direct[m[0]["namespace"]].append(m)
    children = _children(direct)
    for ns, ms in direct.items():
        if levels.get(ns) == "operator" or len(ms) + len(children[ns]) <= STACK_SCOPE:
            continue
        by_op: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e, n in ms:
            if n is not None and e["id"] == n.key and stackable(n):
                by_op[e["label"]].append(e)
        for op, group in by_op.items():
            if STACK_MIN <= len(group) < len(ms):
                sub = _stack_name(ns, op, len(group))
                levels[sub] = "operator"
                for e in group:
                    e["namespace"] = sub


def _stack_name(ns: str, op: str, count: int) -> str:
    name = f"{op} ({count})"  # the box's label (Model Explorer's font has no `×`)
    return f"{ns}/{name}" if ns else name


def _lines(m: Member) -> int:
    return m[1].line if m[1] is not None else 0


Reads = Callable[[Node], "str | None"]  # an operator -> the one layer (parameter) the operators it reads are in (read)
# what the levels read: chains, micro batches, layers and parameters read
Keys = tuple[dict[str, int], Micro, "tuple[Reads, Reads] | None"]


def _keys(depth: int, by: Keys, ms: list[Member]) -> tuple[str, list[str | None]] | None:
    chain_of, micro, reads = by
    if depth == 0:
        return "micro batch", [_micro(n, micro) for _, n in ms]
    if depth == 1:
        return "redistribution chain", [f"redistribution chain {chain_of[n.uid]}" if n is not None and n.uid in chain_of
                                        else None for _, n in ms]
    if depth == 2:
        ops = [e["label"] if n is not None and e["id"] == n.key else "parameters" for e, n in ms]
        count = Counter(ops)
        return "operator", [op if op == "parameters" else f"{op} ({count[op]})" for op in ops]
    if depth in (3, 4) and reads is not None:
        read = reads[depth - 3]
        return ("layer read", "parameter read")[depth - 3], [read(n) if n is not None and e["id"] == n.key else None
                                                             for e, n in ms]
    return None


def _split(ns: str, ms: list[Member], depth: int, by: Keys, levels: dict[str, str]) -> None:
    if len(ms) <= MAX_CHILDREN:
        return
    keyed = _keys(depth, by, ms)
    if keyed is None:  # runs of dump lines, as many levels as needed
        ms = sorted(ms, key=_lines)
        size = MAX_CHILDREN
        while -(-len(ms) // size) > MAX_CHILDREN:
            size *= MAX_CHILDREN
        for i in range(0, len(ms), size):
            run = ms[i : i + size]
            lo, hi = _lines(run[0]), _lines(run[-1])
            sub = f"{ns}/lines {lo}-{hi}" if ns else f"lines {lo}-{hi}"
            levels[sub] = "dump lines"
            for e, _ in run:
                e["namespace"] = sub
            _split(sub, run, depth, by, levels)
        return
    level, keys = keyed
    groups: dict[str | None, list[Member]] = defaultdict(list)
    for m, k in zip(ms, keys):
        groups[k].append(m)
    named = [k for k in groups if k is not None]
    # a level helps when it splits: several groups, or a few big ones out of many loose nodes
    if not named or (len(groups) == 1) or len(named) > MAX_CHILDREN:
        _split(ns, ms, depth + 1, by, levels)
        return
    loose = groups.pop(None, [])
    for k, group in groups.items():
        if len(group) == 1 and depth > 0:
            loose += group  # a group of one adds a level and saves nothing
            continue
        sub = f"{ns}/{k}" if ns else k
        levels[sub] = level
        for e, _ in group:
            e["namespace"] = sub
        _split(sub, group, depth + 1, by, levels)
    _split(ns, loose, depth + 1, by, levels)


def _by_layer(ctx: _Context, nodes: list[Node]) -> tuple[dict[Node, str], dict[str, str]]:
    """Each node's namespace in a graph drawn by phase and layer (a graph split into parts: its parts follow the
    model): `<phase>/layer <N>/<scope below what the layer's nodes share>` (`no layer` for none: the `layer` fact;
    the phase: the `phase` fact), and the scope each phase's layer takes off (said in its group's info)."""
    group = {n: f"{ctx.phase(n)}/{_layer_name(ctx.layer(n))}" for n in nodes}
    scopes = {n: namespace_of(n.scope).split("/") for n in nodes}
    shared: dict[str, list[str]] = {}
    for n, parts in scopes.items():
        common = shared.setdefault(group[n], parts[:])
        if common[: len(parts)] != parts[: len(common)]:
            k = 0
            while common[k] == parts[k]:
                k += 1
            del common[k:]
        elif len(parts) < len(common):
            del common[len(parts):]
    out = {n: "/".join([group[n], *parts[len(shared[group[n]]):]]).rstrip("/") for n, parts in scopes.items()}
    return out, {g: "/".join(c) for g, c in shared.items()}


def _layer_name(layer: int | None) -> str:
    return "no layer" if layer is None else f"layer {layer}"


def subgraph_graph(ctx: _Context, name: str, graph_id: str | None = None, by_layer: bool = False,
                   later: Later | None = None) -> dict[str, Any]:
    """The Model Explorer graph of one subgraph of the dump; `by_layer`: its namespaces under its phases and
    layers (`_by_layer`), as a graph split into parts shows it; `later`: each operator's panel rows and output
    metadata are left to be made later (`_Rows`), their (empty) lists, the node and its uid put there."""
    sg = ctx.dump.subgraph(name)
    layered, taken = _by_layer(ctx, sg.nodes) if by_layer else ({}, {})
    known = {n.key for n in sg.nodes}
    own_params = set(sg.params)
    aux: dict[str, dict[str, Any]] = {}  # parameter and free-variable nodes, by reference
    nodes: list[dict[str, Any]] = []

    def source(ref_kind: str, ref_name: str, ns: str) -> str:
        if ref_name not in aux:
            p = ctx.params.get(ref_name)
            label = _param_label(ref_name) if ref_kind == "param" else ref_name
            kind = "free variable" if ref_kind == "free" else \
                ("subgraph parameter" if ref_name in own_params else "parameter")
            attrs = [_kv("operator", "Parameter" if ref_kind == "param" else "FreeVariable"), _kv("kind", kind),
                     _kv("reference", ref_name)]
            if p is not None:
                attrs.append(_kv("file", f"{ctx.file}:{p.line}"))
            aux[ref_name] = {"id": ref_name, "label": label, "namespace": ns, "attrs": attrs, "incomingEdges": [],
                             "outputsMetadata": _output_metadata(p.type if p is not None else None, ctx.outputs)}
        return ref_name

    first_user: dict[str, Node] = {}  # parameter reference -> the first operator reading it
    uids: list[str] = []
    ordering: list[dict[str, str]] = []  # edges that only order (monads, UpdateState, Depend): an edge overlay
    for node in sg.nodes:
        ns = layered[node] if by_layer else namespace_of(node.scope)
        edges = []
        called: list[str] = []
        orders = ctx.order_inputs(node)
        for inp in node.inputs:
            for ref in (inp.ref,) if inp.ref else inp.nested:
                kind = ref.kind
                if kind == "node":
                    if ref.name not in known:
                        continue
                    src = ref.name
                elif kind in ("param", "free"):
                    if inp.index in orders:  # a monad parameter: no box of its own
                        continue
                    src = source(kind, ref.name, ns)
                    first_user.setdefault(src, node)
                else:
                    if kind == "graph":
                        called.append(ref.name.lstrip("@"))
                    continue
                if inp.index in orders:
                    ordering.append({"sourceNodeId": src, "targetNodeId": node.key})
                    continue
                edges.append({"sourceNodeId": src, "sourceNodeOutputId": "0", "targetNodeInputId": str(inp.index)})
        uid = f"{node.graph}/{node.key}"
        uids.append(uid)
        c = ctx.comm.get(uid)
        entry: dict[str, Any] = {
            "id": node.key, "label": node.op if not node.is_call else f"call {_callee(node, ctx)}", "namespace": ns,
            "attrs": _node_attrs(node, uid, ctx) if later is None else [], "incomingEdges": edges,
            "outputsMetadata": _output_metadata(node.output_type, ctx.outputs) if later is None else []}
        if later is not None:
            later.append((entry["attrs"], entry["outputsMetadata"], node, uid))
        subs = _graph_refs(node, called, ctx.names)
        if subs:
            entry["subgraphIds"] = [ctx.graph_ids[g] for g in subs]
        if c is not None:
            entry["style"] = {"backgroundColor": CATEGORY_COLORS[c.category], "borderColor": "#424242"}
        nodes.append(entry)
    members = list(zip(nodes, sg.nodes)) + [(e, first_user.get(ref)) for ref, e in aux.items()]
    # communication, operators with a strategy and redistribution chains stay in sight (what the view
    # is for): the rest stack
    def stackable(n: Node) -> bool:
        uid = n.uid
        return uid not in ctx.strategy and uid not in ctx.chain_of and ctx.kind(n) != "communication"

    levels = bound_namespaces(members, ctx.chain_of, ctx.micro, stackable, _reads(ctx, sg.nodes) if by_layer else None)
    # counts of a folded scope include everything below it: per namespace, then added to its ancestors
    own: dict[tuple[str, Any], list[int]] = {}  # (namespace, phase) -> its nodes' counts
    for entry, uid, node in zip(nodes, uids, sg.nodes):
        key = (entry["namespace"], ctx.phase(node))
        box = own.get(key)
        if box is None:
            box = own[key] = [0] * len(_GROUP_COUNTS)
        box[0] += 1
        box[1] += uid in ctx.strategy
        c = ctx.comm.get(uid)
        if c is not None:
            box[2] += 1
            box[3] += c.category == "redistribution"
            box[4] += c.category == "gradient-aggregation"
    counts: dict[str, list[int]] = {}
    phased: dict[str, dict[Any, list[int]]] = defaultdict(dict)  # the same by phase: the page's phase selector's
    for (ns, phase), box in own.items():
        parts = ns.split("/") if ns else []
        for depth in range(len(parts) + 1):  # the graph's totals too (its top, "")
            above = "/".join(parts[:depth])
            for total in (counts.get(above), phased[above].get(phase)):
                if total is not None:
                    for i, v in enumerate(box):
                        total[i] += v
            counts.setdefault(above, box[:])
            phased[above].setdefault(phase, box[:])
    # counts said when not 0 (a box of `with strategy: 0` says nothing); `operators` always
    group_attrs = {ns: {k: str(v) for k, v in zip(_GROUP_COUNTS, box) if v or k == "operators"}
                   for ns, box in counts.items()}
    for ns, level in levels.items():
        if ns in group_attrs:
            group_attrs[ns]["level"] = level
    for ns, phase in _root_phases(nodes, sg.nodes, ctx.phase).items():  # by layer, the roots are the phases
        group_attrs[ns]["phase"] = phase
    for g, scope in taken.items():  # by layer: what a layer's scopes below it share
        if g in group_attrs:
            group_attrs[g].update({"level": "layer", **({"scope": scope} if scope else {})})
    group_attrs[""] = {"dump": ctx.file, "subgraph": name, "nodes": str(len(sg.nodes)),
                       "parameters": str(len(aux)), "entry": "yes" if ctx.dump.entry == name else "no",
                       **group_attrs.get("", {})}
    gid = graph_id or name
    out = {"id": gid, "nodes": list(aux.values()) + nodes, "groupNodeAttributes": group_attrs}
    if len({phase for _, phase in own}) > 1:  # the counts of the phases left on, when some are turned off
        out[PHASE_COUNTS] = {"keys": _GROUP_COUNTS, "groups": {
            ns: {p: box for p, box in by.items() if p is not None} for ns, by in phased.items()}}
    if ordering:
        out["tasksData"] = ordering_overlay(gid, ordering)
    return out


def _reads(ctx: _Context, nodes: list[Node]) -> tuple[Reads, Reads]:
    """Two functions of an operator: `reads layer N` when the operators it reads (by data or only for order: a
    `Depend` of the gradient accumulation's `AssignAdd`) are all in layer N (the `layer` fact; reading none in a
    layer: the layers those it reads read, the `Cast` of that `Depend`), and `reads P` when
    it reads one parameter, P (that `AssignAdd` its `accu_grads.0.attention.wq.weight`), or reads none and the
    operators it reads read one between them (the `Depend`); else None."""
    by_key = {n.key: n for n in nodes}

    def refs(node: Node) -> Iterator[Any]:
        return (ref for inp in node.inputs for ref in ((inp.ref,) if inp.ref else inp.nested))

    def layers(node: Node) -> set[int]:
        return {k for ref in refs(node) if ref.kind == "node" and ref.name in by_key
                if (k := ctx.layer(by_key[ref.name])) is not None}

    def layer(node: Node) -> str | None:
        # reading no operator of a layer, the layers those it reads read (a gradient's `Cast` of such a `Depend`)
        found = layers(node) or {k for ref in refs(node) if ref.kind == "node" and ref.name in by_key
                                 for k in layers(by_key[ref.name])}
        return f"reads layer {found.pop()}" if len(found) == 1 else None

    def param(node: Node) -> str | None:
        params = {r.name for r in refs(node) if r.kind == "param"} or {
            ref.name for r in refs(node) if r.kind == "node" and r.name in by_key
            for ref in refs(by_key[r.name]) if ref.kind == "param"}
        return f"reads {_param_label(params.pop())}" if len(params) == 1 else None

    return layer, param


def _param_label(ref: str) -> str:
    """A parameter as its box says it: `%para389_accu_grads.0.attention.wq.weight` -> `accu_grads.0.attention.wq.weight`."""
    return ref[ref.index("_") + 1 :] if "_" in ref else ref


_GROUP_COUNTS = ("operators", "with strategy", "communication", "redistribution", "gradient aggregation")
PHASE_COUNTS = "irtoolPhaseCounts"  # a graph's group counts by phase (`keys`; `groups`: namespace -> phase -> counts)


def _root_phases(entries: list[dict[str, Any]], nodes: list[Node], phase: Callable[[Node], str]) -> dict[str, str]:
    """The phase of each root namespace (MindSpore's `Default`, `Gradients`, `recompute_Default`) from its
    operators' in the fact table, each phase with its count where they are several (`recompute_Default` holds
    a recomputed cell's forward operators and their copies: `forward 124, recompute 70`)."""
    counts: dict[str, Counter] = {}
    for (root, ph), n in Counter((e["namespace"].partition("/")[0], phase(node)) for e, node in zip(entries, nodes)).items():
        if root:  # each root's phases in the order first met, as a Counter of its own would hold them
            counts.setdefault(root, Counter())[ph] = n
    return {root: ", ".join(f"{ph} {n}" for ph, n in c.most_common()) if len(c) > 1 else next(iter(c))
            for root, c in counts.items()}


ORDERING_EDGES = "ordering edges (monads, UpdateState, Depend)"


def ordering_overlay(graph_id: str, edges: list[dict[str, str]]) -> dict[str, Any]:
    """Model Explorer's edge overlay of the edges that only order (hidden from the graph): drawn for
    the node selected, turned off and on in its *Edge overlays* menu; for either pane of a diff."""
    data = {"type": "edge_overlays", "name": "ordering", "graphName": graph_id,
            "overlays": [{"name": ORDERING_EDGES, "edgeColor": "#8e24aa", "edgeWidth": 2, "edges": edges,
                          "showEdgesConnectedToSelectedNodeOnly": True}]}
    return {"edgeOverlaysDataListLeftPane": [data], "edgeOverlaysDataListRightPane": [data]}


def graph_names(dump: Dump, facts: ParallelFacts) -> dict[str, str]:
    """Each subgraph's name in the viewer: the cell whose `construct` it is (`TrainGradAccuStepCell`,
    `DecoderLayer`: the dump's own names run to 90 characters), where several graphs are of one cell
    with their phase and MindSpore's number (`DecoderLayer backward #7336`), else the dump's name."""
    phases = facts.table.get("graph_phases")
    cells = {g.name: g.cell for g in dump.subgraphs}
    per_cell = Counter(c[0] for c in cells.values() if c is not None)
    out: dict[str, str] = {}
    for g in dump.subgraphs:
        c = cells[g.name]
        name = g.name
        if c is not None:
            name = c[0] if per_cell[c[0]] == 1 else " ".join(
                x for x in (c[0], phases.get(g.name), f"#{c[1] or g.name}") if x)
        out[g.name] = name
    taken = Counter(out.values())
    return {k: v if taken[v] == 1 else k for k, v in out.items()}


def dump_graphs(dump: Dump, facts: ParallelFacts, prefix: str = "", part_size: int = PART_SIZE,
                annotate: Callable[[str, dict[str, Any]], None] | None = None,
                file: str | None = None, later: bool = False) -> list[dict[str, Any]]:
    """One graph per subgraph, the entry graph first; graph ids are `prefix` + its name (`graph_names`).
    A subgraph of more than `part_size` operators (PART_SIZE) comes as its overview and parts
    (`split_large`), after `annotate(subgraph, graph)` (a diff's rows) had the whole graph. `file`:
    the dump's name in the panel (default its file name). `later` (without `annotate`): a split graph's parts are
    made when `complete` is called on the graphs (its overview first: `irtool view` sends it before them)."""
    ctx = _Context(dump, facts, file)
    split = _too_large(dump, part_size)
    shown = ctx.shown = graph_names(dump, facts)
    ctx.graph_ids = {n: overview_id(prefix + shown[n]) if n in split else prefix + shown[n] for n in ctx.names}
    names = sorted((g.name for g in dump.subgraphs), key=lambda n: n != dump.entry)
    out: list[dict[str, Any]] = []
    for n in names:
        rows: Later | None = [] if n in split and later and not annotate else None
        graph = subgraph_graph(ctx, n, prefix + shown[n], n in split, rows)
        if annotate is not None:
            annotate(n, graph)
        if n not in split:
            out.append(graph)
            continue
        parts = split_large(graph, part_size, LAYERED, _Rows(rows, ctx) if rows is not None else None)
        out += parts if later else complete(parts)
    return out


# the panel rows and output metadata of a graph's operators left for later (`subgraph_graph`): (rows, outputs, node, uid)
Later = list[tuple[list[dict[str, Any]], list[dict[str, Any]], Node, str]]


class _Rows:
    """The panel rows and output metadata of a graph's operators left for later: all made by a call; `linking()` makes
    only those that can link to other nodes (a communication node's, a redistribution chain's: `comm_attrs`,
    `chain_attrs`), which say the nodes of other parts a part shows (`_part_ids`) before the parts are made."""

    def __init__(self, later: Later, ctx: _Context) -> None:
        self.later, self.ctx, self.linked = later, ctx, False

    def __call__(self) -> None:
        ctx = self.ctx
        while self.later:
            rows, outputs, node, uid = self.later.pop()
            if not rows:
                rows.extend(_node_attrs(node, uid, ctx))
            outputs.extend(_output_metadata(node.output_type, ctx.outputs))

    def linking(self) -> None:
        if not self.linked:
            self.linked = True
            ctx = self.ctx
            for rows, _, node, uid in self.later:
                if not rows and (uid in ctx.comm or uid in ctx.chain_of):
                    rows.extend(_node_attrs(node, uid, ctx))


COMPLETE = "\0complete"  # a part made by `complete`: the function making its nodes (`split_large`)
IDS = "\0ids"  # a part before `complete`: the function saying its node ids (`_part_ids`)


def complete(graphs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`graphs` with every part still to be made (`dump_graphs(later=True)`) made."""
    for g in graphs:
        make = g.pop(COMPLETE, None)
        g.pop(IDS, None)
        if make is not None:
            make()
    return graphs


def node_ids(graph: dict[str, Any]) -> set[str]:
    """The ids of a graph's nodes, a part's before it is made too (an overlay keeps its results for them: the overlay
    shown first is sent before the parts are made)."""
    ids = graph.get(IDS)
    return ids()[0] if ids is not None else {n["id"] for n in graph["nodes"]}


def own_ids(graph: dict[str, Any]) -> set[str]:
    """`node_ids` less the nodes of other parts a part shows (under INPUTS)."""
    ids = graph.get(IDS)
    return ids()[1] if ids is not None else {n["id"] for n in graph["nodes"] if not n["namespace"].startswith(INPUTS)}


def first_graph(dump: Dump, facts: ParallelFacts, prefix: str = "", part_size: int = PART_SIZE) -> str | None:
    """The graph to open a dump on: its entry graph, or that graph's overview when it is split."""
    if dump.entry is None:
        return None
    gid = prefix + graph_names(dump, facts)[dump.entry]
    return overview_id(gid) if dump.entry in _too_large(dump, part_size) else gid


def _too_large(dump: Dump, size: int) -> set[str]:
    """The subgraphs shown as an overview and parts: those of more than `size` operators."""
    return {g.name for g in dump.subgraphs if len(g.nodes) > size}


# --- large graphs: an overview first, a graph per part behind it --------------------------------

COUNTS = ("operators", "with strategy", "communication", "redistribution", "gradient aggregation",
          *(f"diff {kind}" for kind in DIFF_COLORS))
MIN_PART = 100  # nodes of the smallest scope given a graph of its own
INPUTS = "from other parts"  # the namespace of the nodes of other parts a part reads or links to
PART_OF = "part of"  # a part's info row: the graph it is a part of
STUB = "irtool part"  # a part stub's info row: its number, by which the page asks for its graph (`part_stub`)
STUB_NODES = "irtool part nodes"  # and its node count, which Model Explorer's graph selector says


def overview_id(graph_id: str) -> str:
    return f"{graph_id}: overview"


def _part_name(scope: str, own: bool = False) -> str:
    return f"{scope or 'top level'}{' (own operators)' if own else ''}"


def part_id(graph_id: str, scope: str, own: bool = False) -> str:
    return f"{graph_id}: {_part_name(scope, own)}"


def _parts(nodes: list[dict[str, Any]], size: int, levels: int = 0) -> dict[str, tuple[str, bool]]:
    """Each namespace's part, as (scope, own): the outermost scope at least `levels` deep (a graph by phase
    and layer: LAYERED) whose nodes, with the nodes of other scopes they read, number at most `size`; else
    (a scope too big, or too high) the part of the scope's own nodes and of its small scopes (fewer than
    MIN_PART nodes: a graph of a few nodes is no help)."""
    direct: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for n in nodes:
        direct[n["namespace"]].append(n)
    total: Counter = Counter()
    kids: dict[str, set[str]] = defaultdict(set)
    for ns, ms in direct.items():
        parts = ns.split("/") if ns else []
        total[""] += len(ms)
        for i in range(1, len(parts) + 1):
            total["/".join(parts[:i])] += len(ms)
            kids["/".join(parts[: i - 1])].add("/".join(parts[:i]))

    def below(ns: str) -> Iterable[str]:
        yield ns
        for child in kids[ns]:
            yield from below(child)

    def fits(ns: str) -> bool:
        if total[ns] > size:
            return False
        inside = {n["id"] for sub in below(ns) for n in direct[sub]}
        read = {e["sourceNodeId"] for sub in below(ns) for n in direct[sub] for e in n["incomingEdges"]}
        return len(inside | read) <= size

    out: dict[str, tuple[str, bool]] = {}

    def cut(ns: str) -> None:
        # a scope is one part when it fits, or when no scope inside it is big enough to be one
        deep = ns.count("/") + 1 >= levels if ns else False
        if deep and (fits(ns) or all(total[child] < MIN_PART for child in kids[ns])):
            out.update(dict.fromkeys(below(ns), (ns, False)))
            return
        out[ns] = (ns, True)
        for child in kids[ns]:
            if total[child] < MIN_PART:
                out.update(dict.fromkeys(below(child), (ns, True)))
            else:
                cut(child)

    cut("")
    return out


def _relative(ns: str, scope: str) -> str:
    return "" if ns == scope else ns[len(scope) + 1 :] if scope else ns


def _counts(attrs: dict[str, dict[str, str]], scope: str, own: bool, part_of: dict[str, tuple[str, bool]],
            children: dict[str, list[str]]) -> Counter:
    """The counts of a part, from the whole graph's group attributes: its scope's, less those of the
    scope's child scopes in other parts (a scope's own operators). `children`: the namespaces of `attrs`
    by their parent, in its order."""
    def of(ns: str) -> Counter:
        return Counter({k: int(v) for k, v in attrs.get(ns, {}).items() if k in COUNTS})

    box = of(scope)
    if own:
        for ns in children.get(scope, ()):
            if part_of.get(ns) != (scope, True):
                box.subtract(of(ns))
    return +box


_INPUT_ATTRS = frozenset(("operator", "file", "reference"))


def _stub(stubs: dict[str, dict[str, Any]], node: dict[str, Any], part: tuple[str, bool]) -> dict[str, Any]:
    """A node of another part, as a part that reads it or links to it shows it: at its scope under
    INPUTS, its operator, place, output and colour; the rest of it is in its own part's graph. One
    dict however many parts show it."""
    out = stubs.get(node["id"])
    if out is None:
        out = stubs[node["id"]] = {
            "id": node["id"], "label": node["label"], "namespace": f"{INPUTS}/{node['namespace']}".rstrip("/"),
            "attrs": [a for a in node["attrs"] if a["key"] in _INPUT_ATTRS] + [_kv("in part", _part_name(*part))],
            "incomingEdges": [], "outputsMetadata": node["outputsMetadata"]}
        if "style" in node:
            out["style"] = node["style"]
    return out


# a graph split into parts is drawn by phase and layer (`_by_layer`): its parts are scopes two levels deep at least
LAYERED = 2


def split_large(graph: dict[str, Any], size: int = PART_SIZE, levels: int = 0, rows: _Rows | None = None
                ) -> list[dict[str, Any]]:
    """A graph too large for Model Explorer to open in seconds as [overview, parts...] (`_parts`: scopes
    of at most `size` nodes with what they read, or a larger scope's own operators; `levels` deep at least),
    each part's nodes made by `complete` (`rows`: the graph's panel rows left for later, made before them; `node_ids`
    says them before).

    A part's graph holds its nodes (namespaces below its scope), and under `from other parts` the
    nodes of other parts it reads or its panel links to, with their operator, place, output and part.
    The overview has a box per part at its scope's place (the groups above it carry their counts), an
    edge where one part reads another, and each box opens its part (`subgraphIds`). A part's nodes
    share their attribute lists with the whole graph's, so what is added to those (a diff's rows)
    shows in both."""
    gid, nodes, attrs = graph["id"], graph["nodes"], graph["groupNodeAttributes"]
    part_of = _parts(nodes, size, levels)
    members: dict[tuple[str, bool], list[dict[str, Any]]] = defaultdict(list)
    where: dict[str, tuple[str, bool]] = {}
    for n in nodes:
        key = part_of[n["namespace"]]
        members[key].append(n)
        where[n["id"]] = key
    by_id = {n["id"]: n for n in nodes}
    ordering: dict[tuple[str, bool], list[dict[str, str]]] = defaultdict(list)  # a part's own ordering edges
    for data in graph.get("tasksData", {}).get("edgeOverlaysDataListLeftPane", ()):
        for overlay in data["overlays"]:
            for e in overlay["edges"]:
                if where.get(e["targetNodeId"]) == where.get(e["sourceNodeId"]):
                    ordering[where[e["targetNodeId"]]].append(e)
    stubs: dict[str, dict[str, Any]] = {}
    root = attrs.get("", {})
    by_part: dict[tuple[str, bool], list[str]] = defaultdict(list)  # the group namespaces of each part
    children: dict[str, list[str]] = defaultdict(list)
    for ns in attrs:
        if ns:
            by_part[part_of.get(ns)].append(ns)  # type: ignore[index]
            children[ns.rpartition("/")[0]].append(ns)
    parts: list[dict[str, Any]] = []
    boxes: dict[tuple[str, bool], dict[str, Any]] = {}
    for (scope, own), ms in members.items():
        pid = part_id(gid, scope, own)
        mine = {n["id"] for n in ms}
        # the nodes of other parts it reads, in order (their part's box an edge into its box)
        read = dict.fromkeys(e["sourceNodeId"] for n in ms for e in n["incomingEdges"]
                             if e["sourceNodeId"] not in mine and e["sourceNodeId"] in by_id)
        reads = {where[src] for src in read}  # the parts it reads
        n_read = len(read)
        group_attrs = {_relative(ns, scope): attrs[ns] for ns in by_part[(scope, own)]}
        counts = _counts(attrs, scope, own, part_of, children)
        group_attrs[""] = {"dump": root.get("dump", ""), PART_OF: gid, "scope": _part_name(scope, own),
                           "nodes": str(len(ms)), **{k: str(v) for k, v in counts.items()},
                           "nodes read from other parts": str(n_read)}
        part = {"id": pid, "nodes": [], "groupNodeAttributes": group_attrs}
        if ordering.get((scope, own)):
            part["tasksData"] = ordering_overlay(pid, ordering[(scope, own)])
        part[COMPLETE] = partial(_part_nodes, part, ms, scope, read, (by_id, where, stubs), rows)
        part[IDS] = _part_ids(ms, read, by_id, rows)
        parts.append(part)
        boxes[(scope, own)] = {
            "id": pid, "label": _part_name(scope.rpartition("/")[2], own),
            "namespace": scope if own else scope.rpartition("/")[0],
            # counts as the groups around the box say them (`1547`)
            "attrs": [_kv("graph", pid), _kv("scope", _part_name(scope, own)), _kv("nodes", str(len(ms))),
                      *(_kv(k, str(v)) for k, v in counts.items()), _kv("nodes read from other parts", str(n_read))],
            "subgraphIds": [pid], "incomingEdges": [
                {"sourceNodeId": part_id(gid, *src), "sourceNodeOutputId": "0", "targetNodeInputId": str(i)}
                for i, src in enumerate(sorted(reads))]}
    shown = {"/".join(parts[:i]) for parts in (b["namespace"].split("/") for b in boxes.values())
             for i in range(1, len(parts) + 1)}  # the boxes' namespaces and those around them
    over_attrs = {ns: a for ns, a in attrs.items() if ns and ns in shown}
    over_attrs[""] = {**root, "overview of": gid, "parts": str(len(parts)),
                      "whole graph": f"irtool view --part-size {len(nodes)} (Model Explorer takes seconds per open)"}
    return [{"id": overview_id(gid), "nodes": list(boxes.values()), "groupNodeAttributes": over_attrs}, *parts]


Others = tuple[dict[str, dict[str, Any]], dict[str, tuple[str, bool]], dict[str, dict[str, Any]]]


def _part_nodes(part: dict[str, Any], ms: list[dict[str, Any]], scope: str, read: dict[str, None], others: Others,
                rows: _Rows | None) -> None:
    """A part's nodes (`split_large`): the nodes of other parts it reads (`read`) and its panel links name, as stubs
    (`others`: every node by id, its part, the stubs made so far), then its own below its scope. `rows`: the whole
    graph's panel rows left for later (`dump_graphs`), made first."""
    if rows is not None:
        rows()
    by_id, where, stubs = others
    mine = {n["id"] for n in ms}
    inputs = {src: _stub(stubs, by_id[src], where[src]) for src in read}
    out = []
    for n in ms:
        out.append({**n, "namespace": _relative(n["namespace"], scope)})
        for a in n["attrs"]:
            if type(a["value"]) is dict:  # a link to a node (a chain's producer, what a node serves)
                for t in a["value"].get("nodeIds", ()):
                    if t not in mine and t in by_id and t not in inputs:
                        inputs[t] = _stub(stubs, by_id[t], where[t])
    if inputs:
        part["groupNodeAttributes"][INPUTS] = {"nodes": str(len(inputs)), "read": str(len(read)),
                                               "level": "nodes of other parts this part reads or its links name"}
    part["nodes"] = list(inputs.values()) + out


def _part_ids(ms: list[dict[str, Any]], read: dict[str, None], by_id: dict[str, dict[str, Any]],
              rows: _Rows | None) -> Callable[[], tuple[set[str], set[str]]]:
    """The ids of a part's nodes as `_part_nodes` will make them (its own, `ms`; those of other parts it reads,
    `read`, and its panel links name), and of its own nodes, worked out once when first asked for."""
    said: list[tuple[set[str], set[str]]] = []

    def ids() -> tuple[set[str], set[str]]:
        if not said:
            if rows is not None:
                rows.linking()
            mine = {n["id"] for n in ms}
            linked = {t for n in ms for a in n["attrs"] if type(a["value"]) is dict
                      for t in a["value"].get("nodeIds", ()) if t in by_id}
            said.append((mine | read.keys() | linked, mine))
        return said[0]

    return ids


def part_stub(graph: dict[str, Any], number: int) -> dict[str, Any]:
    """A part as `irtool view`'s page first gets it: its id, its info and its ordering edges (Model Explorer reads
    every graph's edge overlays when it loads a model), no nodes. The page's script (static/view.js) fetches its
    graph (`irtool/part/<model>/<number>.json`) when Model Explorer is about to lay it out."""
    info = graph["groupNodeAttributes"].get("", {})
    stub = {"id": graph["id"], "nodes": [], "groupNodeAttributes": {"": {
        **info, STUB: str(number), STUB_NODES: str(int(info["nodes"]) + int(info["nodes read from other parts"]))}}}
    if "tasksData" in graph:
        stub["tasksData"] = graph["tasksData"]
    return stub


# --- node data -------------------------------------------------------------------------------

def _node_data(name: str, results: dict[str, dict[str, Any]], thresholds: list | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "results": results}
    if thresholds:
        out["thresholds"] = thresholds
    return out


def _in_subgraph(facts: ParallelFacts, subgraph: str) -> list[tuple[CommNode, str]]:
    """The communication nodes of one subgraph, each with its node key (`%N`)."""
    out = []
    for c in facts.comm:
        graph, _, key = c.node.rpartition("/")
        if graph == subgraph:
            out.append((c, key))
    return out


def category_node_data(graphs: Iterable[tuple[str, ParallelFacts, str]]) -> dict[str, Any]:
    """Model Explorer node data: communication nodes valued by their category's name and coloured by
    it (a folded box shows how many of each it holds); `graphs` is (graph id, facts, subgraph)."""
    out = {}
    for graph_id, facts, subgraph in graphs:
        res = {key: {"value": c.category, "bgColor": CATEGORY_COLORS[c.category]}
               for c, key in _in_subgraph(facts, subgraph)}
        out[graph_id] = {**_node_data("comm category", res), "showExpandedSummaryOnGroupNode": True,
                         "legend": {"what": "communication nodes by category (the panel's `comm rule` says why)"}}
    return out


BYTES_THRESHOLDS = [{"value": 64 * 1024, "bgColor": "#c8e6c9"}, {"value": 1024 * 1024, "bgColor": "#fff59d"},
                    {"value": 16 * 1024 * 1024, "bgColor": "#ffcc80"}, {"value": 2 ** 62, "bgColor": "#ef9a9a"}]


def bytes_node_data(graphs: Iterable[tuple[str, ParallelFacts, str]]) -> dict[str, Any]:
    """Model Explorer node data: bytes each communication node moves in a step (its size times its runs, as
    summarize and diff count them) where both are known, coloured green (< 64 KiB), yellow (< 1 MiB),
    orange (< 16 MiB), red."""
    out = {}
    for graph_id, facts, subgraph in graphs:
        res = {key: {"value": c.step_bytes.total} for c, key in _in_subgraph(facts, subgraph)
               if not c.step_bytes.unknown}
        out[graph_id] = {**_node_data("comm bytes", res, BYTES_THRESHOLDS), "legend": {
            "what": "bytes each communication node moves in a step (its size times its runs)", "unit": "bytes",
            "scale": "green < 64 KiB, yellow < 1 MiB, orange < 16 MiB, red"}}
    return out


def _field(record: Any, key: str) -> Any:
    """A field of a diff entry: a dict (`as_dict` form) or the typed record itself."""
    if record is None:
        return None
    if isinstance(record, dict):
        return record.get(key)
    value = getattr(record, "value", None)  # a side's fact: `value(name)` reads one field
    return value(key) if callable(value) else getattr(record, key, None)


def diff_panel(graph: dict[str, Any], marks: dict[str, str], entries: list[Any], side: str,
               counts: dict[str, tuple[int, int]] | None = None) -> None:
    """Add to each node `irtool diff` marked (`%N` -> added / removed / changed) a `diff` row; for a change
    the diff's own entries about that node's scope as `old -> new` rows (`entries`: the diff's strategy
    and communication changes, `node_scope`, `field` or `fields`, `old`, `new`); to each node of an
    operator whose count changed (`counts`: op -> (old, new), the diff's operator counts) those counts.
    Each group counts the marks below it (`diff changed`: said on a folded box), the graph's info the
    operator counts."""
    by_scope: dict[str, list[Any]] = defaultdict(list)
    for e in entries:
        if _field(e, "change") == "changed" and _field(e, "node_scope"):
            by_scope[_field(e, "node_scope")].append(e)
    counts = counts or {}
    below: dict[str, Counter] = defaultdict(Counter)
    for node in graph["nodes"]:
        kind = marks.get(node["id"])
        attrs = {a["key"]: a["value"] for a in node["attrs"]}
        op = attrs.get("operator", node["label"])
        if kind is None and op not in counts:
            continue
        rows = [_kv("diff", f"{kind} ({side} side)")] if kind else []
        for e in by_scope.get(attrs.get("scope") or "", []) if kind == "changed" else []:
            name = _field(e, "field")
            if name:  # a strategy change: one field, its old and new values
                old, new = _value(_field(e, 'old')), _value(_field(e, 'new'))
                rows.append(_kv(f"diff {name.replace('_', ' ')}", f"{old} -> {new}"))
            for f in _field(e, "fields") or ():  # a communication change: the two sides' facts
                old, new = _field(e, "old"), _field(e, "new")
                rows.append(_kv(f"diff {f.replace('_', ' ')}", f"{_value(_field(old, f))} -> {_value(_field(new, f))}"))
        if op in counts:
            rows.append(_kv("diff operator count", f"{op} {counts[op][0]:,} -> {counts[op][1]:,}"))
        node["attrs"][:0] = rows
        if kind:
            parts = node["namespace"].split("/") if node["namespace"] else []
            for depth in range(len(parts) + 1):
                below["/".join(parts[:depth])][f"diff {kind}"] += 1
    groups = graph["groupNodeAttributes"]
    for ns, box in below.items():
        groups.setdefault(ns, {}).update({k: str(v) for k, v in sorted(box.items())})
    if counts:
        groups.setdefault("", {})["diff operator counts"] = ", ".join(
            f"{op} {a:,} -> {b:,}" for op, (a, b) in sorted(counts.items()))


def _value(v: Any) -> str:
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, (list, tuple, dict)) for x in v):
        return strategy_text(v)
    return cell(v)


def for_parts(data: dict[str, Any], graphs: list[dict[str, Any]]) -> dict[str, Any]:
    """Node data by graph id (`*_node_data`) for the graphs shown: a split graph's entry goes to its
    parts, each with the whole graph's results for its nodes."""
    shown = {g["id"] for g in graphs}
    out = {gid: d for gid, d in data.items() if gid in shown}
    for g in graphs:
        whole = g["groupNodeAttributes"].get("", {}).get(PART_OF)
        if whole in data:
            ids = node_ids(g)
            out[g["id"]] = {**data[whole], "results": {k: v for k, v in data[whole]["results"].items() if k in ids}}
    return out


# why `irtool diff` marks a node, as its overlay value says it (the legend's words): coloured as the two-configuration
# diff colours its operators' causes (`parallel.logical.CAUSES`)
DIFF_WORDS = {"added": "added", "removed": "removed", "strategy": "strategy changed",
              "communication": "communication changed"}


def diff_node_data(graph_id: str, changes: dict[str, str], causes: dict[str, str]) -> dict[str, Any]:
    """Model Explorer node data marking nodes (`%N` keys) `added`, `removed`, or changed by `causes` (`%N` -> its
    strategy or its communication), by name and colour (a folded box counts and colours the changes it holds)."""
    results = {}
    for k, change in changes.items():
        why = causes.get(k, change) if change == "changed" else change
        if why in CAUSE_COLORS:
            results[k] = {"value": DIFF_WORDS[why], "bgColor": CAUSE_COLORS[why],
                          **({"textColor": CAUSE_TEXT[why]} if why in CAUSE_TEXT else {})}
        else:  # changed, for no cause the diff says
            results[k] = {"value": change, "bgColor": DIFF_COLORS[change], "textColor": DIFF_TEXT[change]}
    return {graph_id: {**_node_data("diff", results), "showExpandedSummaryOnGroupNode": True,
                       "legend": {"what": "why `irtool diff` marks a node: only on one side, or its own strategy or "
                                          "its communication changed (the panel's `diff` rows say old -> new)"}}}


# --- finding nodes across graphs ----------------------------------------------------------------

# Panel rows the page (irtool/view/static/view.js) turns into links to a node of another graph: a
# part's node read from another part (`in part`), a pipeline box's node in its stage graph (`stage graph`)
# and the node it serves there (`comm serves`), these two valued `<graph> %N`
LINK_KEYS = ("in part", "stage graph", "comm serves")
_INDEXED = frozenset(("file", "scope", "instance name", *LINK_KEYS))


def node_index(graphs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the page searches across all graphs of a model, and where its links to other graphs go:
    `graphs` (ids, in order), `wholes` (each graph's id before a split: a part's whole graph), `files`
    and `scopes` (tables the nodes point into), `nodes` ([graph, node id, label, file, line, scope, its
    last name, instance name] of every node in the graph it belongs to: not an overview's box, not a
    part's copy of another part's node; the scope `<scope>/<last name>`, file and scope as positions in
    their tables, file -1 for none), `links` ({graph id: {node id: {row: [graph id, node id]}}}, the
    targets of the LINK_KEYS rows)."""
    home: dict[tuple[str, str], str] = {}  # (unsplit graph id, node id) -> the graph holding it
    nodes: list[list[Any]] = []
    pending: list[tuple[str, str, str, str, str]] = []  # (graph, node, row, unsplit graph, node id) of each link row
    files: dict[str, int] = {}
    scopes: dict[str, int] = {}
    ids = [g["id"] for g in graphs]
    wholes = [g["groupNodeAttributes"].get("", {}).get(PART_OF, g["id"]) for g in graphs]
    for gi, g in enumerate(graphs):
        if "overview of" in g["groupNodeAttributes"].get("", {}):
            continue
        whole = wholes[gi]
        for n in g["nodes"]:
            found = {a["key"]: a["value"] for a in n["attrs"] if a["key"] in _INDEXED}
            if "in part" in found:  # a node of another part
                pending.append((g["id"], n["id"], "in part", whole, n["id"]))
                continue
            for row in ("stage graph", "comm serves"):
                value = found.get(row)
                if isinstance(value, str) and " %" in value:
                    target, _, key = value.rpartition(" ")
                    pending.append((g["id"], n["id"], row, target, key))
            home[(whole, n["id"])] = g["id"]
            file, _, line = found.get("file", "").rpartition(":")
            outer, _, last = found.get("scope", "").rpartition("/")
            nodes.append([gi, n["id"], n["label"], files.setdefault(file, len(files)) if file else -1,
                          int(line) if line.isdigit() else 0, scopes.setdefault(outer, len(scopes)), last,
                          found.get("instance name", "")])
    links: dict[str, dict[str, dict[str, list[str]]]] = defaultdict(dict)
    for gid, nid, row, whole, key in pending:
        target = home.get((whole, key))
        if target is not None:
            links[gid].setdefault(nid, {})[row] = [target, key]
    return {"graphs": ids, "wholes": wholes, "files": list(files), "scopes": list(scopes), "nodes": nodes,
            "links": links}


def graph_of(index: dict[str, Any], whole: str, node: str) -> str | None:
    """The graph holding `node` of the graph `whole` (before a split), by a model's `node_index`."""
    return next((index["graphs"][n[0]] for n in index["nodes"] if n[1] == node and index["wholes"][n[0]] == whole),
                None)
