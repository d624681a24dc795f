"""Peak device memory of one rank from tensor lifetimes (docs/cost.md §2.1): the step's work walked in
execution order, keeping the set of live tensors.

The order: the units of work (`F0 F1 B0 ...`) in the order the `order` fact fixes, and within that MindSpore's
default kernel order (breadth first over the nodes whose inputs have run; what reads a communication node's
result only once nothing else is ready), each node after what it reads. A kernel graph (`graph_build_0_*`,
`hwopt_*`: one flat `kernel_graph` with every micro batch inlined) is walked so as it is; in a front-end pass
(validate) a call runs its subgraph's nodes in place, once per call (a lazy-inline layer once per layer and
micro batch; the bprop closure a forward call returns runs with the tensors its `Partial` holds).

What is live: every parameter from the start (by its `param_roles` role; inputs without a default as
`input`); each kernel's outputs from the kernel on, each a block of MindSpore's device pool (Ascend rounds a
tensor's bytes up to 512 after adding 32: `((n + 31) // 512 + 1) * 512`), until the last kernel reading it
has run. Values that are not kernels' outputs pass through: `Load`, `Depend` (its first input), the shape
views MindSpore runs in place (`Reshape`, `ExpandDims`, `Squeeze`, `Flatten`: unless they read a constant
only), in-place updates (`Assign`, `AssignAdd`, an operator marked `side_effect_mem`: `ApplyMomentum`,
`Adam`: their first input), tuples (`MakeTuple`, `TupleGetItem`), closures (`Partial` holds what it binds
until its call). A tensor constant whose values the dump does not print (`Tensor(shape=[512, 512],
dtype=Float16, value=[...])`: a mask, a rotary table) is a block of its own for the whole step, once per
place it is printed. Communication runs on streams of its own: a `Send`'s input and output stay until the
next `Send` or `Receive` runs, a collective's inputs until the first kernel reading its result runs (the
compute stream waits for it there).

What scales with the configuration (`Lifetimes.points`, `recompute_shares`: read by the plan, docs/plan.md
"What splits a working set's tensor"): each kernel output is marked with whether it is made from the step's
data (the input, or what a Receive brings: it grows with the micro-batch size) and into how many pieces its
whole tensor is split (`_pieces`): the whole shape the parallel pass prints over the rank's
(`origin_output_shape` of a forward operator), else its strategy's (the largest split of an input of the
output's rank: an elementwise operator's output is split as its inputs), else the pieces of what it reads of
as many elements (a Cast, Reshape or collective passes its input's layout on); unknown otherwise.

Not counted: scalar and small constants (MindSpore gives each a 512-byte block: 0.4 to 1.7 % of the dry
run's peaks), operator workspace, what the runtime and HCCL reserve outside the pool, fragmentation.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from functools import cached_property
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any, Union

from ..ir import Node, TypeInfo
from ..ir.values import parse_value
from .order import unit_label, unit_nodes
from .records import Bytes
from .sizes import DTYPE_SIZE, elements, type_bytes

if TYPE_CHECKING:
    from .table import NodeFacts

# roles of live memory, in the order pictures stack them (parameters first, then what a step makes)
LIVE_ROLES = ("weight", "optimizer-state", "accumulation", "hyperparameter", "unused", "other", "input",
              "constant", "activation", "recompute", "backward", "communication", "optimizer", "temporary")
ROLE_MEANING = {
    "input": "inputs of the step (data, parameters without a default)",
    "constant": "tensor constants too large for the dump to print their values (masks, rotary tables)",
    "activation": "forward outputs a backward or recomputed node reads later (kept per micro batch in flight)",
    "recompute": "outputs of recomputed forward nodes",
    "backward": "gradients and backward intermediates",
    "communication": "outputs of communication nodes (gathered weights, reduced gradients, pipeline buffers)",
    "optimizer": "outputs of the optimizer's kernels (clipped gradients, update terms)",
    "temporary": "other kernel outputs (forward intermediates freed within the forward)",
}
# how far below the dry run's used peak the walk came (bench/memory_bench.py: at most 0.72 % on kernel graphs,
# 1.03 % on validate), with room for what it does not count: "fits" is said only with this much headroom
MARGIN = {"kernel": 0.01, "front-end": 0.03}
NOT_COUNTED = ("operator workspace, scalar and small constants, what the runtime and HCCL reserve outside "
               "MindSpore's memory pool, fragmentation")

_THROUGH = frozenset({"Load", "Depend"})
_VIEWS = frozenset({"Reshape", "ExpandDims", "Squeeze", "Flatten"})
_IN_PLACE = frozenset({"Assign", "AssignAdd", "AssignSub", "_VirtualAssignAdd"})
_NO_VALUE = frozenset({"UpdateState", "Return", "make_tuple"})
_PHASE_ROLE = {"recompute": "recompute", "backward": "backward", "optimizer": "optimizer"}  # forward: decided later
_MAX_DEPTH = 64  # calls nested deeper (recursion) are counted as one kernel


def block(nbytes: int) -> int:
    """The block of MindSpore's Ascend pool a tensor of `nbytes` takes (8 MiB: 8,389,120 B; a scalar: 512 B)."""
    return ((nbytes + 31) // 512 + 1) * 512


Share = tuple[str, bool, int | None]  # (role, made from the step's input, pieces of its whole tensor: None unknown)


@dataclass(frozen=True)
class _Trace:
    """Each block of the walk after the static ones: its Share (an index into `keys`), bytes, first and last step;
    and the first step of the optimizer."""

    keys: tuple[Share, ...]
    share: array  # per block (arrays of ints: a rank's cost record keeps its trace, 15 000 blocks and more)
    size: array
    born: array
    ends: array
    optimizer: int

    def points(self) -> list[dict[Share, int]]:
        allocs: list[list[int]] = [[] for _ in range(self.optimizer)]
        frees: list[list[int]] = [[] for _ in range(self.optimizer)]
        for b, (s, e) in enumerate(zip(self.born, self.ends)):
            if 0 <= s < self.optimizer:
                allocs[s].append(b)
                frees[min(e, self.optimizer - 1)].append(b)
        live = [0] * len(self.keys)
        seen: dict[tuple[int, ...], int] = {}  # each live set, the first step it is seen at
        for s in range(self.optimizer):
            for b in allocs[s]:
                live[self.share[b]] += self.size[b]
            seen.setdefault(tuple(live), s)
            for b in frees[s]:
                live[self.share[b]] -= self.size[b]
        front: list[tuple[int, ...]] = []  # the largest first (of equal ones, the earliest: `Lifetimes.parts`)
        for v in sorted(seen, key=lambda v: (-sum(v), seen[v])):
            if not any(all(a >= x for a, x in zip(f, v)) for f in front):
                front.append(v)
        return [{k: x for k, x in zip(self.keys, v) if x} for v in front]


@dataclass(frozen=True)
class PeakAt:
    """Where the peak happens: the kernel being run when the live bytes are highest."""

    step: int  # position in the walk (kernels run, 0-based)
    node: str  # `graph/%N`
    op: str
    line: int
    scope: str | None
    unit: str | None  # `B0`: the unit of work the node (or the call it runs under) belongs to
    micro: int | None


@dataclass
class Lifetimes:
    """The rank's peak of live tensors and what is live there (`walk`)."""

    how: str  # which order was walked
    peak: Bytes  # known bytes live at the peak, and how many live tensors are of unknown size
    at: PeakAt | None
    by_role: dict[str, int]  # live bytes at the peak by role (LIVE_ROLES)
    steps: int  # kernels run in the walk
    complete: bool  # the walk is the step: a pass after autodiff whose units of work the dump orders
    margin: float  # how far below MindSpore's own peak the walk may be (MARGIN): "fits" keeps this much headroom
    static: int  # bytes live all step: parameters (every role) and large constants, as blocks
    notes: list[str] = field(default_factory=list)
    curve: list[tuple[int, ...]] | None = None  # per step, live bytes per role (LIVE_ROLES order), when asked
    units: list[tuple[int, str]] = field(default_factory=list)  # (step, unit label) where each unit begins
    # live bytes per role (LIVE_ROLES order) at the largest point before the optimizer and in it (None: no step there)
    parts: tuple[tuple[int, ...] | None, tuple[int, ...] | None] = (None, None)
    most: dict[str, int] = field(default_factory=dict)  # the most live bytes of each role at any step
    # the recomputed copies live where they are the most (one layer's recompute working set), by Share
    recompute_shares: dict[Share, int] = field(default_factory=dict)
    trace: _Trace | None = field(default=None, repr=False, compare=False)  # what `points` is read from

    @cached_property
    def points(self) -> list[dict[Share, int]]:
        """What is live (parameters and constants apart) at each step before the optimizer that no other such step
        exceeds in every Share, by Share, the compute peak first (`parts[0]`): the candidates for the largest point
        when each Share grows by its own factor (the plan scales them to another configuration). Worked out when
        first asked."""
        return self.trace.points() if self.trace is not None else []

    @property
    def peak_bytes(self) -> int:
        return self.peak.total


# --- values: what a node's result is in the walk
@dataclass(frozen=True)
class _Seq:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class _Closure:
    graph: str
    bound: tuple[Any, ...]


_Value = Union[tuple, _Seq, _Closure, None]  # a tuple of block ids: a tensor (or an operator's outputs)


def _blocks(v: _Value, out: list[int]) -> None:
    if v is None:
        return
    if isinstance(v, tuple):
        out.extend(v)
    elif isinstance(v, _Seq):
        for x in v.items:
            _blocks(x, out)
    else:
        for x in v.bound:
            _blocks(x, out)


def _item(v: _Value, i: int | None) -> _Value:
    if i is None:
        return v
    if isinstance(v, _Seq):
        return v.items[i] if 0 <= i < len(v.items) else None
    if isinstance(v, tuple) and len(v) > 1:
        return (v[i],) if 0 <= i < len(v) else v
    return v


def _constant_bytes(text: str) -> int | None:
    """Bytes of a tensor constant printed without its values (`Tensor(shape=[512, 64], dtype=Float32,
    value=[...])`), None for any other constant."""
    v = parse_value(text)
    kw = getattr(v, "kwargs", {})
    if kw.get("value") != ["..."] or not isinstance(kw.get("shape"), list) or kw.get("dtype") not in DTYPE_SIZE:
        return None
    n = elements(tuple(kw["shape"]))
    return None if n is None else n * DTYPE_SIZE[kw["dtype"]]


def _out_sizes(t: TypeInfo | None) -> list[int | None]:
    """The bytes of each output of a kernel of output type `t` (a tuple: one per element), None when unknown."""
    if t is None:
        return [None]
    if t.kind == "Tuple":
        if not isinstance(t.shape, tuple) or t.dtype not in DTYPE_SIZE:
            return [None]
        return [None if (e := elements(s)) is None else e * DTYPE_SIZE[t.dtype] for s in t.shape]
    if t.kind in ("UMonad", "IOMonad", "Func", "Problem"):
        return []
    return [type_bytes(t)[2]]


# opcodes of a node compiled for the walk (`_Walk.compile`): what it does with the values it reads
_RET, _NONE, _FIRST, _TUPLE, _ITEM, _PARTIAL, _CALL, _IN_PLACE_OP, _VIEW, _KERNEL = range(10)


@dataclass(frozen=True)
class _Kernel:
    """What a kernel's step is, whatever call runs it: its output blocks' sizes, role and phase, and what of their
    Share (`_Walk.mark`) the node alone says."""

    blocks: tuple[int | None, ...]  # block sizes (`block`), None when unknown
    roles: list[str]  # the role of each output block
    phases: list[str | None]
    held: bool  # a collective: its inputs are held until its result is read
    op: str
    reads: bool  # a Receive, or a kernel naming one of the step's inputs: made from the step's data
    elems: int | None  # elements of its (not tuple) output
    pieces: int | None  # `_pieces` of its output, None when the node does not tell


class _Walk:
    """One walk: the trace of kernels run (what each allocates and reads), then the sweep. A reused graph's
    nodes run once per call: what does not depend on the call (which values a node reads, its outputs' sizes,
    role and phase) is worked out once per node (`compile`, `kernel_of`), and a call of a graph called before with
    arguments of the same form (`form`: a layer's call for each micro batch) replays the steps that call made
    (`run_call`, `_Call`: its blocks offset, its arguments' blocks put in), not walked again."""

    def __init__(self, t: NodeFacts, replay: bool = True) -> None:
        self.t = t
        self.replay_calls = replay  # False: every call walked (tests hold the replay against it)
        self.graphs = {g.name: g for g in t.dump.subgraphs}
        self.size: list[int | None] = []  # per block
        self.role: list[str] = []
        # per step: the first block it makes (it makes those up to the next step's first), and where its blocks read
        # begin in `used` (they end where the next step's begin): flat arrays, not a list per step
        self.starts = array("q")
        self.use_at = array("q")
        self.used = array("q")
        self.where: list[tuple[Node, Node]] = []  # per step: the kernel, and the top-level node it runs under
        self.params: dict[str, tuple[int, ...]] = {}
        self.pending_send: list[int] = []  # blocks of the last Send, kept until the next
        self.phase_of_block: list[str | None] = []
        self.static = 0
        self.waits: dict[int, list[int]] = {}  # a collective's first output -> its inputs, until read
        self.code: dict[Node, tuple] = {}  # node -> its instruction (`compile`)
        self.kernels: dict[Node, _Kernel] = {}
        # a type line -> the output type, its blocks and elements (a layer's kernels print the same types in each layer)
        self.types: dict[str | None, tuple[TypeInfo | None, tuple[int | None, ...], int | None]] = {}
        self.phase: dict[Node, str | None] = {}  # of every node a step runs
        # per block: made from the step's input, its whole tensor's pieces and its elements (`Share`)
        self.reads: list[bool] = []
        self.pieces: list[int | None] = []
        self.elems: list[int | None] = []
        self.inputs: set[str] = set()  # the step's inputs as kernels name them (`%para1_inputs0`)
        self.calls: dict[tuple, _Call | None] = {}  # (graph, depth, the arguments' form) -> its steps (`run_call`)
        self.replays = 0  # calls replayed

    def new_block(self, size: int | None, role: str, phase: str | None) -> int:
        self.size.append(None if size is None else block(size))
        self.role.append(role)
        self.phase_of_block.append(phase)
        self.reads.append(role == "input")
        self.pieces.append(None)
        self.elems.append(None)
        return len(self.size) - 1

    def header_params(self) -> None:
        roles = self.t.get("param_roles")
        for p in self.t.dump.params:
            r = roles.get(p.name)
            role = (r.role if r is not None else "other") if p.has_default else "input"
            self.params[p.name] = (self.new_block(type_bytes(p.type)[2], role, None),)
            if role == "input":
                self.inputs.add(p.ref)
        for n in self.t.dump.nodes():
            for i in n.inputs if "value=[...]" in n.text else ():
                if i.ref is None and i.text.startswith("Tensor("):
                    size = _constant_bytes(i.text)
                    if size is not None:
                        self.new_block(size, "constant", None)
        self.static = len(self.size)  # blocks live all step: parameters, constants

    def run_graph(self, name: str, args: tuple[_Value, ...], top: Node | None, depth: int,
                  order: list[Node] | None = None) -> _Value:
        g = self.graphs[name]
        env: dict[str, _Value] = dict(zip(g.params, args))
        params, code, compile_ = self.params, self.code, self.compile
        result: _Value = None
        for n in order if order is not None else g.nodes:
            c = code.get(n) or compile_(n)
            op = c[0]
            if op == _KERNEL:  # the usual node: what it reads, by reference
                args_ = [env.get(r) for r in c[2]]
                if c[3]:
                    args_ += [env.get(r, params.get(r)) for r in c[3]]
                env[c[1]] = self.kernel(n, top or n, args_)
            elif op == _NONE:
                env[c[1]] = None
            elif op == _FIRST:
                env[c[1]] = self.value(c[2], env)
            elif op == _RET:
                result = self.value(c[1], env)
            elif op == _IN_PLACE_OP or op == _VIEW:
                args_ = [env.get(r) for r in c[2]] + [env.get(r, params.get(r)) for r in c[3]]
                first = self.value(c[4], env)
                if op == _IN_PLACE_OP:
                    self.step(n, top or n, len(self.size), [a for a in args_ if a is not first])
                    env[c[1]] = first
                else:
                    env[c[1]] = first if first is not None else self.kernel(n, top or n, args_)
            elif op == _TUPLE:
                env[c[1]] = _Seq(tuple(self.value(s, env) for s in c[2]))
            elif op == _ITEM:
                env[c[1]] = None if c[2] is None else _item(self.value(c[2], env), c[3])
            elif op == _PARTIAL:
                args_ = [self.value(s, env) for s in c[2]]
                g0 = args_[0] if args_ else None
                env[c[1]] = _Closure(g0.graph, tuple(args_[1:])) if isinstance(g0, _Closure) else None
            else:  # _CALL
                env[c[1]] = self.call(n, [self.value(s, env) for s in c[2]], env, top or n, depth)
        return result

    def compile(self, n: Node) -> tuple:
        """The node's instruction: (opcode, its key, what it reads); what a call would read again each time."""
        op, key = n.op, n.key
        if op == "Return":
            c: tuple = (_RET, _spec(n.inputs[0]) if n.inputs else None)
        elif op in _NO_VALUE:
            c = (_NONE, key)
        elif op in _THROUGH:
            c = (_FIRST, key, _first_spec(n))
        elif op in ("MakeTuple", "Partial", "(call)"):
            c = ({"MakeTuple": _TUPLE, "Partial": _PARTIAL}.get(op, _CALL), key, tuple(map(_spec, n.inputs)))
        elif op == "TupleGetItem":
            i = n.input_value(1)
            c = (_ITEM, key, _spec(n.inputs[0]) if n.inputs else None,
                 i if isinstance(i, int) and not isinstance(i, bool) else None)
        else:
            refs, prefs = n.node_refs, n.param_refs
            if op in _IN_PLACE or (n.mentions("side_effect_mem") and n.scalar_attr("side_effect_mem") is True):
                self.phase[n] = self.t("phase", n)
                c = (_IN_PLACE_OP, key, refs, prefs, _first_spec(n))
            elif op in _VIEWS and (refs or prefs):
                c = (_VIEW, key, refs, prefs, _first_spec(n))
            else:
                c = (_KERNEL, key, refs, prefs)
        self.code[n] = c
        return c

    def value(self, spec: tuple[str, str] | None, env: dict[str, _Value]) -> _Value:
        """The value an input names (`_spec`)."""
        if spec is None:
            return None
        kind, name = spec
        if kind == "node":
            return env.get(name)
        if kind == "param":
            return env.get(name, self.params.get(name))
        return _Closure(name, ())

    def call(self, n: Node, args: list[_Value], env: dict[str, _Value], top: Node, depth: int) -> _Value:
        if n.callee[0] == "@":
            graph, bound = n.callee[1:], ()
        else:
            target = env.get(n.callee)
            graph, bound = (target.graph, target.bound) if isinstance(target, _Closure) else (None, ())
        if graph is None or graph not in self.graphs or depth >= _MAX_DEPTH:
            return self.kernel(n, top, args)
        return self.run_call(graph, bound + tuple(args), top, depth + 1)

    def run_call(self, graph: str, args: tuple[_Value, ...], top: Node, depth: int) -> _Value:
        """A call: its steps replayed when the graph was called before with arguments of the same form (`form`),
        else walked and kept for the next such call."""
        form = self.form(args) if self.replay_calls else None
        if form is None:  # an argument a collective's inputs wait for: walked
            return self.run_graph(graph, args, top, depth)
        key, flat = (graph, depth, form[0]), form[1]
        if key in self.calls:
            kept = self.calls[key]
            if kept is not None:
                return self.replay(kept, flat, top)
            return self.run_graph(graph, args, top, depth)
        first, steps, uses, pending = len(self.size), len(self.starts), len(self.used), self.pending_send
        result = self.run_graph(graph, args, top, depth)
        self.calls[key] = _Call.record(self, first, steps, uses, pending, flat, result)
        return result

    def form(self, args: tuple[_Value, ...]) -> tuple[tuple, list[int]] | None:
        """What a call's steps depend on in its arguments: their structure, which static block (parameters,
        constants) each is, which of them are the same block, and of the others what `mark` reads; with those
        others in order of first appearance. None when a collective's inputs wait for one of them."""
        flat: list[int] = []
        first: dict[int, int] = {}
        static, reads, pieces, elems = self.static, self.reads, self.pieces, self.elems

        def code(b: int) -> Any:
            if b < static:
                return b
            i = first.get(b)
            if i is None:
                i = first[b] = len(flat)
                flat.append(b)
            return (i, reads[b], pieces[b], elems[b])

        key = tuple(_encode(a, code) for a in args)  # (a module function: no cycle of closures left to collect)
        if self.waits and any(b in self.waits for b in flat):
            return None
        return key, flat

    def replay(self, c: _Call, flat: list[int], top: Node) -> _Value:
        """The kept steps of a call again (`_Call`), for the blocks of this call."""
        self.replays += 1
        s = len(self.size)
        ext = [flat[x] if arg else x for arg, x in c.ext]
        self.size += c.size
        self.role += c.role
        self.phase_of_block += c.phase
        self.reads += c.reads
        self.pieces += c.pieces
        self.elems += c.elems
        u = len(self.used)
        self.starts.extend([x + s for x in c.starts])
        self.use_at.extend([x + u for x in c.use_at])
        self.used.extend([x + s if x >= 0 else ext[~x] for x in c.used])
        self.where += [(n, top) for n in c.nodes]
        for k, held in c.waits:
            self.waits[k + s] = [x + s if x >= 0 else ext[~x] for x in held]
        return _decode(c.result, s, ext)

    def kernel_of(self, n: Node) -> _Kernel:
        t = self.t
        phase = self.phase[n] = t("phase", n)
        role = "communication" if t("kind", n) == "communication" else _PHASE_ROLE.get(phase, "temporary")
        line = n.type_lines[0] if n.type_lines else None
        typed = self.types.get(line)
        if typed is None:
            ty = n.output_type
            typed = self.types[line] = (ty, tuple(None if s is None else block(s) for s in _out_sizes(ty)),
                                        elements(ty.shape) if ty is not None and ty.kind != "Tuple" else None)
        ty, blocks, elems = typed
        k = self.kernels[n] = _Kernel(blocks, [role] * len(blocks), [phase] * len(blocks),
                                      role == "communication" and n.op not in ("Send", "Receive") and bool(blocks),
                                      n.op, n.op == "Receive" or any(r in self.inputs for r in n.param_refs), elems,
                                      _pieces(n, t("strategy", n), ty))
        return k

    def kernel(self, n: Node, top: Node, args: list[_Value]) -> _Value:
        k = self.kernels.get(n) or self.kernel_of(n)
        start = len(self.size)
        self.size += k.blocks
        self.role += k.roles
        self.phase_of_block += k.phases
        out = tuple(range(start, len(self.size)))
        self.mark(k, args)
        self.step(n, top, start, args)
        if k.held:  # its inputs are released when the first kernel reading its result waits for it
            held: list[int] = []
            for a in args:
                _blocks(a, held)
            self.waits[out[0]] = held
        elif k.op in ("Send", "Receive"):  # a Send's buffers are kept until the next Send or Receive runs
            if self.pending_send:  # read by this step, the last
                self.used.extend(self.pending_send)
            held = []
            if k.op == "Send":
                for a in args:
                    _blocks(a, held)
                held.extend(out)
            self.pending_send = held
        return out

    def mark(self, k: _Kernel, args: list[_Value]) -> None:
        """Whether the kernel's new outputs are made from the step's input and the pieces of their whole tensor
        (module doc)."""
        read: list[int] = []
        for a in args:
            _blocks(a, read)
        # made from the step's data: its input, or what a Receive brings (a micro batch's activations or gradients)
        reads = k.reads or any(self.reads[b] for b in read)
        pieces = k.pieces
        if pieces is None and k.elems is not None:  # a Cast, Reshape, collective: its input's layout
            pieces = next((self.pieces[b] for b in read if self.elems[b] == k.elems and self.pieces[b]), None)
        self.reads += [reads] * len(k.blocks)
        self.pieces += [pieces] * len(k.blocks)
        self.elems += [k.elems] * len(k.blocks)

    def step(self, n: Node, top: Node, start: int, args: list[_Value]) -> None:
        """A step running kernel `n` (under `top`), making the blocks from `start` on, reading `args`."""
        used: list[int] = []
        for a in args:
            if type(a) is tuple:
                used += a
            elif a is not None:
                _blocks(a, used)
        if self.waits:
            for b in [b for b in used if b in self.waits]:
                used.extend(self.waits.pop(b))
        self.starts.append(start)
        self.use_at.append(len(self.used))
        self.used.extend(used)
        self.where.append((n, top))


@dataclass(frozen=True)
class _Call:
    """The steps one call of a graph made (`_Walk.run_call`), to replay at a later call with arguments of the same
    form: a block made in the call by its offset from the call's first (`x >= 0`), any other by its index in `ext`
    (`~x`), an argument's (its position among the call's argument blocks) or a static one."""

    ext: list[tuple[bool, int]]  # (an argument's: its position, else the static block)
    size: list[int | None]  # of the blocks made in the call, as `_Walk` keeps them
    role: list[str]
    phase: list[str | None]
    reads: list[bool]
    pieces: list[int | None]
    elems: list[int | None]
    starts: list[int]  # per step: its first block's offset (`_Walk.starts`)
    use_at: list[int]  # per step: where its blocks read begin in `used`
    used: list[int]
    nodes: list[Node]
    waits: list[tuple[int, list[int]]]  # collectives whose inputs still wait after the call
    result: Any

    @classmethod
    def record(cls, w: _Walk, first: int, steps: int, uses: int, pending: list[int], flat: list[int],
               result: _Value) -> _Call | None:
        """The steps from `steps` on (what they read from `uses` on in `_Walk.used`), the blocks from `first` on
        (`flat`: the call's argument blocks; `pending`: the Send's buffers before it, which a Send or Receive in it
        would release); None when it cannot be replayed."""
        static, arg = w.static, {b: i for i, b in enumerate(flat)}
        index: dict[int, int] = {}
        ext: list[tuple[bool, int]] = []
        # a block neither made in the call, nor an argument's, nor static (none can be, as the walk reads values:
        # kept so that a rule added to the walk later makes a call walked each time, not replayed wrong)
        outside: list[int] = []

        def code(b: int) -> int:
            if b >= first:
                return b - first
            x = index.get(b)
            if x is None:
                if b < static:
                    ext.append((False, b))
                elif b in arg:
                    ext.append((True, arg[b]))
                else:
                    outside.append(b)
                    return 0
                x = index[b] = ~(len(ext) - 1)
            return x

        if w.pending_send is not pending:  # a Send or Receive ran in it (none does in a fixture's): walked each time
            return None
        call = cls(ext, w.size[first:], w.role[first:], w.phase_of_block[first:], w.reads[first:],
                   w.pieces[first:], w.elems[first:],
                   [x - first for x in w.starts[steps:]], [x - uses for x in w.use_at[steps:]],
                   [code(b) for b in w.used[uses:]], [n for n, _ in w.where[steps:]],
                   [(k - first, [code(b) for b in v]) for k, v in w.waits.items() if k >= first],
                   _encode(result, code))
        return None if outside else call


def _encode(v: _Value, code: Any) -> Any:
    if v is None or type(v) is tuple:
        return v if not v else tuple(map(code, v))
    if isinstance(v, _Seq):
        return _Seq(tuple(_encode(x, code) for x in v.items))
    return _Closure(v.graph, tuple(_encode(x, code) for x in v.bound))


def _decode(v: Any, s: int, ext: list[int]) -> _Value:
    if v is None or type(v) is tuple:
        return v if not v else tuple(x + s if x >= 0 else ext[~x] for x in v)
    if isinstance(v, _Seq):
        return _Seq(tuple(_decode(x, s, ext) for x in v.items))
    return _Closure(v.graph, tuple(_decode(x, s, ext) for x in v.bound))


def _spec(i: Any) -> tuple[str, str] | None:
    """What an input names, for `_Walk.value`: a node or parameter by name, a graph (a closure), else None."""
    r = i.ref
    if r is None or r.kind not in ("node", "param", "graph"):
        return None
    return (r.kind, r.name[1:] if r.kind == "graph" else r.name)


def _first_spec(n: Node) -> tuple[str, str] | None:
    """What the node's first argument names (`_spec`), found without splitting the arguments where it can."""
    ref = n.first_node_ref
    if ref is not None:
        return ("node", ref)
    ref = n.first_param_ref
    if ref is not None:
        return ("param", ref)
    return _spec(n.inputs[0]) if n.inputs else None


def _pieces(n: Node, strategy: Any, ty: TypeInfo | None) -> int | None:
    """Into how many pieces the node's output is split over the ranks: its whole shape as the parallel pass prints it
    over its own (`origin_output_shape`; a backward copy prints its forward operator's, so not read there), else the
    largest split of an input of the output's rank in its strategy (elementwise: the output split as its inputs);
    None when neither tells (`ty`: the node's output type)."""
    shape = ty.shape if ty is not None and ty.kind != "Tuple" and isinstance(ty.shape, tuple) else None
    if shape is None or not all(isinstance(d, int) and d > 0 for d in shape):
        return None
    if n.mentions("origin_output_shape") and not n.mentions("forward_unique_id"):
        whole = n.primal_attrs.get("origin_output_shape")
        if isinstance(whole, tuple) and len(whole) == len(shape) and all(
                isinstance(w, int) and w % d == 0 for w, d in zip(whole, shape)):
            return math.prod(w // d for w, d in zip(whole, shape))
    given = strategy.in_strategy if strategy is not None else None
    if isinstance(given, tuple):
        splits = [math.prod(e) for e in given if isinstance(e, tuple) and len(e) == len(shape)
                  and all(isinstance(x, int) for x in e)]
        if splits:
            return max(splits)
    return None


def _entry_order(t: NodeFacts, graph: str) -> tuple[list[Node] | None, str]:
    """The graph's nodes in execution order (None: the dump does not fix it): units of work in the order of the
    `order` fact, and within that MindSpore's default kernel order (`KernelGraph::SetExecOrderByDefault`):
    breadth first over the nodes whose inputs have run, in the order they became ready, what reads a
    communication node's result only once nothing else is ready. A node of no unit runs with the latest unit
    it reads. The print order is not the launch order: it runs each parameter's optimizer update right after
    its clipped gradient, where MindSpore clips every gradient first (dryrun_llama dp1 x mp4: 13 % below the
    dry run's peak that way)."""
    order = t.get("order")
    nodes = t.get("by_key")[graph]
    if order.units and not order.fixed:
        return None, "print order (this pass does not fix the order of the units of work)"
    rank = {u.key: i for i, u in enumerate(order.units)}
    of: dict[Node, int] = {}
    for key, ns in unit_nodes(t).items():
        for n in ns:
            if n.graph == graph and key in rank:
                of[n] = rank[key]
    seq = list(nodes.values())
    if rank:  # the optimizer runs after every unit (a node that reads nothing computed, m * beta1, too)
        for n in seq:
            if n not in of and t("phase", n) == "optimizer":
                of[n] = len(rank)
    preds = {n: [nodes[r] for r in n.node_refs if r in nodes] for n in seq}
    users: dict[Node, list[Node]] = {n: [] for n in seq}
    for n, ps in preds.items():
        for p in dict.fromkeys(ps):
            users[p].append(n)
    waiting = {n: len(set(ps)) for n, ps in preds.items()}
    comm = t.column("kind")
    level: dict[Node, int] = {}
    ready = 0
    heap: list[tuple[int, int, Node]] = []
    held: list[tuple[int, int, Node]] = []  # communication run, its users not yet released

    def release(n: Node, lv: int) -> None:
        nonlocal ready
        for u in users[n]:
            level[u] = max(level.get(u, 0), lv)
            waiting[u] -= 1
            if not waiting[u]:
                level[u] = of.get(u, level[u])
                ready += 1
                heappush(heap, (level[u], ready, u))

    for n in seq:
        if not waiting[n]:
            level[n] = of.get(n, 0)
            ready += 1
            heap.append((level[n], ready, n))
    heapify(heap)
    out: list[Node] = []
    while heap or held:
        if held and (not heap or heap[0][0] > held[0][0]):  # nothing else ready: what waits for communication
            lv, _, n = heappop(held)
            release(n, lv)
            continue
        lv, k, n = heappop(heap)
        out.append(n)
        if comm.get(n) == "communication":
            heappush(held, (lv, k, n))
        else:
            release(n, lv)
    if len(out) != len(seq):  # a cycle: keep print order
        return None, "print order (the graph's dependencies form a cycle)"
    units = f"the units of work in the order this dump fixes ({' '.join(order.work)}), " if order.units else ""
    return out, units + "ready kernels breadth first, communication's readers last" + (", calls run in place"
                                                                              if len(t.dump.subgraphs) > 1 else "")


def walk(t: NodeFacts, curve: bool = False) -> Lifetimes:
    """Walk the rank's step in execution order keeping the live tensors (module docstring); `curve` keeps
    the live bytes by role after every kernel (for a picture)."""
    dump = t.dump
    w = _Walk(t)
    w.header_params()
    entry = dump.entry or (dump.subgraphs[0].name if dump.subgraphs else None)
    notes: list[str] = []
    if entry is None or entry not in w.graphs:
        return Lifetimes("no graph", Bytes(), None, {}, 0, False, 0.0, 0, ["the dump holds no graph"])
    kernel_graph = t.get("kernel")  # the one answer to "is this a kernel graph" (facts.py)
    order, how = _entry_order(t, entry)
    complete = order is not None
    if t.get("file_kind") != "post":
        complete = False
        notes.append("a pass before autodiff has no backward yet: the walk is the forward only (read validate)")
    elif not complete:
        notes.append("this pass does not fix the order of the units of work: the walk is not the step")
    result = w.run_graph(entry, (), None, 0, order)
    tail: list[int] = list(w.pending_send)
    _blocks(result, tail)
    if tail:  # graph outputs and the last Send's buffers live to the end of the step
        w.where.append(w.where[-1] if w.where else (None, None))  # type: ignore[arg-type]
        w.starts.append(len(w.size))
        w.use_at.append(len(w.used))
        w.used.extend(tail)
    margin = MARGIN["kernel" if kernel_graph else "front-end"]
    return _sweep(t, w, how, (complete, margin), notes, curve)


def _sweep(t: NodeFacts, w: _Walk, how: str, complete: tuple[bool, float], notes: list[str],
           curve: bool) -> Lifetimes:
    nsteps = len(w.starts)
    nparams = w.static
    size, role, used = w.size, w.role, w.used
    bounds = [*w.starts, len(size)]  # step s makes the blocks from bounds[s] to bounds[s + 1]
    at = [*w.use_at, len(used)]
    born = [-1] * nparams + [s for s in range(nsteps) for _ in range(bounds[s + 1] - bounds[s])]
    end = born[:]  # the step after which each block is freed: its last reader's, else its own
    backward_read: set[int] = set()
    late = {"backward", "recompute"}
    phase, block_phase = w.phase, w.phase_of_block
    for s, (n, _) in enumerate(w.where):
        read = used[at[s]:at[s + 1]]
        for b in read:
            end[b] = s
        if n is not None and phase[n] in late:
            backward_read.update(b for b in read if block_phase[b] == "forward")
    for b in range(nparams, len(size)):
        if role[b] == "temporary" and b in backward_read:
            role[b] = "activation"
    by_end = sorted(range(nparams, len(size)), key=end.__getitem__)
    role_index = {r: i for i, r in enumerate(LIVE_ROLES)}
    ri = [role_index[r] for r in role]
    live = [0] * len(LIVE_ROLES)
    unknown = 0
    for b in range(nparams):
        if size[b] is None:
            unknown += 1
        else:
            live[ri[b]] += size[b]
    params = total = sum(live)
    peak, peak_unknown, at_step, at_live = total, unknown, -1, list(live)
    series: list[tuple[int, ...]] | None = [] if curve else None
    starts = _unit_starts(t, w)
    optimizer = next((s for s, u in starts if u == "optimizer"), nsteps)
    tops: list[int] = [-1, -1]
    # the most of each role at any step (after its allocations): a role grows only where a step allocates it
    most = list(live) if nsteps else [0] * len(live)
    parts: list[tuple[int, ...] | None] = [None, None]
    rec = role_index["recompute"]
    most_rec = -1  # where the recomputed copies are the most
    freed, nfree = 0, len(by_end)
    for s in range(nsteps):
        rec_before = most[rec]
        for b in range(bounds[s], bounds[s + 1]):
            z = size[b]
            if z is None:
                unknown += 1
            else:
                r = ri[b]
                live[r] += z
                total += z
                if live[r] > most[r]:
                    most[r] = live[r]
        if total > peak:
            peak, peak_unknown, at_step, at_live = total, unknown, s, list(live)
        part = int(s >= optimizer)
        if total > tops[part]:
            tops[part], parts[part] = total, tuple(live)
        if live[rec] > rec_before:
            most_rec = s
        if series is not None:
            series.append(tuple(live))
        while freed < nfree and end[by_end[freed]] == s:
            z = size[by_end[freed]]
            freed += 1
            if z is None:
                unknown -= 1
            else:
                live[ri[by_end[freed - 1]]] -= z
                total -= z
    where = None
    if at_step >= 0:
        n, top = w.where[at_step]
        key = _unit(t, top)
        where = PeakAt(at_step, n.uid, n.op, n.line, n.scope, key[0], key[1])
    by_role = {r: at_live[i] for i, r in enumerate(LIVE_ROLES) if at_live[i]}
    trace = _trace(w, born, end, optimizer)
    recompute: dict[Share, int] = {}
    for k, n, s, e in zip(trace.share, trace.size, trace.born, trace.ends):
        if trace.keys[k][0] == "recompute" and s <= most_rec <= e:
            recompute[trace.keys[k]] = recompute.get(trace.keys[k], 0) + n
    return Lifetimes(how, Bytes(peak, 1, peak_unknown), where, by_role, nsteps, *complete, params, notes, series,
                     starts, (parts[0], parts[1]), {r: most[i] for i, r in enumerate(LIVE_ROLES) if most[i]},
                     recompute, trace)


def _trace(w: _Walk, born: list[int], end: list[int], optimizer: int) -> _Trace:
    """The blocks after the static ones (of a known, non-zero size) by Share, with their lives."""
    keys: dict[Share, int] = {}
    blocks = [b for b in range(w.static, len(w.size)) if w.size[b]]
    share = array("q", [keys.setdefault((w.role[b], w.reads[b], w.pieces[b]), len(keys)) for b in blocks])
    return _Trace(tuple(keys), share, array("q", [w.size[b] or 0 for b in blocks]), array("q", [born[b] for b in blocks]),
                  array("q", [end[b] for b in blocks]), optimizer)


def _unit(t: NodeFacts, n: Node) -> tuple[str | None, int | None]:
    """The label of the node's unit of work (the `unit` fact), `optimizer` for the optimizer's; its micro batch."""
    key = t("unit", n)
    if key is not None:
        return unit_label(key), key[1]
    return ("optimizer" if t("phase", n) == "optimizer" else None), t("micro", n)


def _unit_starts(t: NodeFacts, w: _Walk) -> list[tuple[int, str]]:
    """Where each unit of work begins in the walk (for a picture): the first step of each run of one unit (a
    node's unit looked up once: the nodes of a call share the calling node's)."""
    out: list[tuple[int, str]] = []
    last = None
    memo: dict[Node, tuple[str | None, int | None]] = {}
    prev = None
    for s, (_, top) in enumerate(w.where):
        if top is None or top is prev:
            continue
        prev = top
        if top not in memo:
            memo[top] = _unit(t, top)
        label = memo[top][0]
        if label is not None and label != last:
            out.append((s, label))
            last = label
    return out


def lifetimes(t: NodeFacts) -> Lifetimes:
    """The `lifetimes` pass: the walk without the curve."""
    return walk(t)
