"""The facts of one dump's nodes, each decided by exactly one pass (docs/parallel.md §17).

As torch.fx passes fill `node.meta` and sqlglot's optimizer runs a tuple of rules, `PASSES` is an
ordered tuple of analysis passes over one table (`NodeFacts`). Each pass declares the facts it
needs (provided by passes before it) and the facts it provides, is the only code that reads a
node's attributes for those facts, and runs when one of them is first asked for: per node for the
cheap ones (a plain summary asks the communication nodes only), over the whole dump for those that
follow data flow. Every command reads the table; none decides a fact of its own. The dump is only
read.

Facts of a node (`table(fact, node)`):
  kind      communication | compute | call | plumbing (orders, routes or packs values: Depend, Load, ...)
  copy      a recomputed copy of a forward node (`duplicated`)
  forward   the forward node a backward node is the gradient of (`forward_unique_id`), or the forward call whose
            bprop closure a call runs (lazy-inline), else None
  evidence  the phase the node's own evidence other than a category says (§3), None when it says nothing
  own_category (category, rule) of a communication node by its own evidence (rules R1-R13, §2), else None
  exchange  the R9 Send/Receive an R5b one is the other half of (one exchange step), else None
  category  (category, rule) of a communication node (`own_category`, or R9-paired), else None
  phase     forward | backward | recompute | optimizer (§3)
  micro     the pipeline micro batch the node runs for: of the work it reads (data flow), else as printed (`micro`; a
            primitive `pipeline_end`/`pipeline_begin`; a bprop call's forward call's), None when not one or when it
            reads the work of several
  chunk     the model chunk of an interleaved pipeline (`chunk`), or the segment of a folded one (a bprop call:
            its forward call's)
  printed_chunk `chunk` as printed (§7)
  unit      the unit of work the node runs in (`order.UnitKey`: F or B, micro batch, chunk; `order.units`), None for
            the optimizer's and work of no micro batch: what the order, the lifetime walk and the timing read
  layer     the repeated layer (index) whose parameters or activations the node reads (data flow), None for
            work of no layer (embedding, head, loss, optimizer bookkeeping)
  stream    the stream a kernel graph's kernel is launched on (`stream_id`), None when it prints none
  runs      how many times the node runs in one training step: its graph's runs, the sum over the calls of it
            (a reused cell's graph once per layer, micro batch and chunk; a kernel graph's nodes once), None
            when unknown (`runs.py`)
  out_bytes bytes of the node's outputs as printed (a tuple summed), None when unknown
  order_inputs the positions of the inputs that only order the node (monads, `Depend`'s second, ...)
  comm      the `CommNode` record of a communication node (§2-§8), None otherwise
  strategy  the `Strategy` record of an operator with a strategy or layout (§9), None otherwise
  rows      the token rows `-1` dimensions stand for (`dynamic.Rows`: the expert-parallel all-to-all they come
            from, its group's mean and bound), None when the node has none or they come from elsewhere
  operator  the user operator (`operators.OperatorKey`: cell, op, layer, occurrence) a compute node is work of,
            its recomputed copies and backward counterparts folded into it (§19), None for no user operator's
  placement the user operator a communication node is inserted around (§19), None when it serves none
Facts of the dump (`table.get(fact)`): file_kind, by_key, unique_ids, calls, graph_runs (graph -> `runs.Runs`),
copies, graph_phases, comm_nodes, kernel (the dump is a kernel graph), kernels (a kernel graph's kernels in
execution order and its streams: `kernels.Kernels`, None for other dumps),
silent (communication nodes that move no data, §2 R2), groups (§6), stage_info (§7), stage_chunks (the chunks the
stage's work runs, [] with one: `order.stage_chunks`), folded (they are a folded pipeline's segments:
`order.stage_folded`), order (the stage's units
of work in execution order, its schedule and micro batches in flight: `order.StageOrder`, docs/cost.md §4),
parameters (which header parameter each reference names, who reads it: `params.Params`), layer_flow (the `layer`
column and where each forward node of no layer is: `params.LayerFlow`),
param_roles (weight, optimizer state, accumulation, ... of each parameter, by use: `roles.ParamRole`),
lifetimes (the step walked in execution order keeping the live tensors: the peak and what is live there,
`lifetime.Lifetimes`, docs/cost.md §2.1),
param_shapes, node_index (nodes and users by key, each subgraph's users built when first asked),
operator_params (header parameter -> the user operator reading it, §19), marked_outputs (the outputs a recompute may
read sliced, `slicing.MarkedOutput`), rank_job (what the dump shows of the job, `job.RankJob`, each field by one of
`job.JOB_PASSES`; asked as `ParallelFacts.job`).
"""
from __future__ import annotations

import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..ir import Dump, Node, kept, pass_name
from ..ir.kept import Kept
from .comm import comm_records, groups_of
from .dynamic import rows
from .flowrules import ALL_TO_ALL, all_to_all_purpose, sequence_parallel
from .job import JOB_PASSES
from .kernels import kernels, stream_of
from .links import node_index, ordered_with
from .operators import operator_keys, operator_params, placements
from .order import build_order, stage_chunks, stage_folded, units
from .params import Params, layer_flow, param_shapes, parameters
from .records import FileKind, Phase, Strategy
from .roles import param_roles
from .rules import COMM_OPS, KERNEL_PASSES, borrowed_name, classify, file_kind, moves_no_data, pipeline_split_done
from .runs import graph_runs, node_runs
from .scope import in_grad_reducer, in_gradients
from .sizes import type_bytes
from .slicing import marked_outputs
from .stage import stage_info
from .strategies import strategy_records
from .table import NodeFacts, Pass

if TYPE_CHECKING:
    from .lifetime import Lifetimes

NodeKind = Literal["communication", "compute", "call", "plumbing"]
# Operators that only order, route or pack values: no work of their own, and not where a unit of work is placed.
PLUMBING = frozenset({
    "Return", "Load", "Depend", "UpdateState", "MakeTuple", "TupleGetItem", "make_tuple", "tuple_getitem",
    "TupleGetItemV2", "ListGetItem", "MakeList", "Partial", "Switch", "J", "env_setitem", "env_getitem",
    "EnvironCreate", "EnvironSet", "EnvironGet", "StopGradient", "stop_gradient", "resolve", "DoUnpackCall",
})

# --- the passes ----------------------------------------------------------------------------------

def _file_kind(t: NodeFacts) -> tuple[FileKind, bool]:
    name = pass_name(t.dump.path or "")
    if name == "analyze_fail":
        # a failed compile's stack names no pass: what the parallel pass leaves (its communication) says which side of
        # it the compile stopped; without any, type inference failed before the pipeline split (a 2-stage pipeline's
        # analyze_fail_pipeline_type read "pp 1, 1 micro batch")
        after = any(n.op in COMM_OPS for n in t.dump.nodes())
        return ("post" if after else "pre"), after
    return file_kind(name), pipeline_split_done(name)


_KERNEL_GRAPH = re.compile(r"kernel_graph\d+$")


def _kernel(t: NodeFacts) -> bool:
    """A kernel graph: what the backend compiled for the device (`graph_build_*`, `hwopt_*`, `task_emit`, an
    `*_execute` of kernel graphs), one flat `@kernel_graphN` with every micro batch's work inlined, in execution
    order. Told by the entry graph's name, else the pass's."""
    return bool(_KERNEL_GRAPH.match(t.dump.entry or "")) or pass_name(t.dump.path or "").startswith(KERNEL_PASSES)


def _kind(t: NodeFacts, n: Node) -> NodeKind:
    op = n.op
    if op in COMM_OPS:
        return "communication"
    if op == "(call)":
        return "call"
    return "plumbing" if op in PLUMBING else "compute"


def _copy(t: NodeFacts) -> dict[Node, bool]:
    """The recomputed copies of forward nodes (`duplicated`; each keeps its original's `unique_id`), in print
    order: one search of each node's text (the copy list, the unique ids and the phase evidence ask every node)."""
    return {n: True for n in t.dump.nodes() if n.mentions("duplicated") and n.scalar_attr("duplicated") is True}


class ByKey(dict):
    """graph name -> its nodes by key (`%N`), each graph's made when first asked."""

    def __init__(self, dump: Dump) -> None:
        super().__init__()
        self._graphs = {g.name: g for g in dump.subgraphs}

    def __missing__(self, graph: str) -> dict[str, Node]:
        found = self[graph] = {sys.intern(n.key): n for n in self._graphs[graph].nodes}  # one text with `node_refs`
        return found


def _by_key(t: NodeFacts) -> ByKey:
    return ByKey(t.dump)


def _copies(t: NodeFacts) -> list[Node]:
    """The recomputed copies, in print order (one sweep: the job asks for them)."""
    return list(t.column("copy"))


def _unique_ids(t: NodeFacts) -> dict[str, Node]:
    """`unique_id` -> the node printing it (primal attributes; MindSpore's id of a node across passes):
    the original, not a recomputed copy, else the first printed."""
    out: dict[str, Node] = {}
    for n in t.dump.nodes():
        key = n.unique_id
        if key is not None and (key not in out or (t("copy", out[key]) and not t("copy", n))):
            out[key] = n
    return out


_TRAILING_ID = re.compile(r"_(\d+)$")


def forward_id(n: Node) -> str | None:
    """The `unique_id` of a backward node's forward counterpart: `forward_unique_id`, else the number
    ending `forward_node_name` (`AllGather_6979` is the node whose unique_id is 6979)."""
    fid = n.scalar_attr("forward_unique_id")
    if fid is not None:
        return str(fid)
    name = n.scalar_attr("forward_node_name")
    m = _TRAILING_ID.search(str(name)) if name is not None else None
    return m.group(1) if m else None


def _forward(t: NodeFacts, n: Node) -> Node | None:
    if n.op == "(call)" and n.callee[0] == "%":
        return _bprop_of(t, n)
    if not (n.mentions("forward_unique_id") or n.mentions("forward_node_name")):
        return None
    fid = forward_id(n)
    found = t.get("unique_ids").get(fid) if fid is not None else None
    return found if found is not n else None


def _bprop_of(t: NodeFacts, n: Node) -> Node | None:
    """The forward call whose backward a call of a computed closure runs: a lazy-inline cell's call
    returns (outputs, bprop closure), and `%67 = %64[@Partial(@...bprop...)](dout, U)` with
    `%64 = TupleGetItem(%25, I64(1))` calls the closure of the forward call `%25`
    (pipeline_interleaved_4stage_8p rank_0 validate lines 693, 705: the call prints no `micro`, `chunk`
    nor `is_bp` of its own)."""
    local = t.get("by_key")[n.graph]
    closure = local.get(n.callee)
    if closure is None or closure.op not in ("TupleGetItem", "tuple_getitem"):
        return None
    refs = closure.node_refs
    call = local.get(refs[0]) if refs else None
    return call if call is not None and call.op == "(call)" else None


@dataclass
class Calls:
    """Who calls each subgraph: `sites` (nodes calling it: `call @g`, `%35[@Partial(@g)](...)`) and
    `bound` (nodes taking it as an argument without calling it: `Partial(@g, ...)`, `J(@g)`, `Switch(c, @a, @b)`),
    by graph name."""

    sites: dict[str, list[Node]]
    bound: dict[str, list[Node]]

    def callers(self, graph: str) -> list[Node]:
        return self.sites.get(graph, []) + self.bound.get(graph, [])


def _calls(t: NodeFacts) -> Calls:
    sites: dict[str, list[Node]] = defaultdict(list)
    bound: dict[str, list[Node]] = defaultdict(list)
    for n in t.dump.nodes():
        if n.op == "(call)":
            for g in n.called_graphs:
                sites[g].append(n)
        else:
            for g in n.graph_args:
                bound[g].append(n)
    return Calls(dict(sites), dict(bound))


def _own_category(t: NodeFacts, n: Node) -> tuple[str, str] | None:
    """Rules R1-R10 on the node's own evidence, R11-R13 on its neighbourhood (what an all-to-all feeds,
    how the activation of a tensor-parallel gather or scatter is split; not asked of backward work, by its
    own evidence), then §2's inheritance: a backward node takes its forward communication counterpart's
    category (a grad_mirror name on a p2p counterpart contradicts itself)."""
    if t("kind", n) != "communication":
        return None
    category, rule = classify(n, n.instance_name or "", n.primitive_attrs, n.primal_attrs, t.get("kernel"))
    if rule in ("R6", "R6k", "R10") and n.op in ALL_TO_ALL and t("evidence", n) != "backward":
        found = all_to_all_purpose(n, t.get("node_index"), lambda m: _three_d_weight(t, m))
        if found is not None:
            category, rule = found
    elif n.op in ("AllGather", "ReduceScatter") and rule in ("R6", "R6k", "R7", "R7k", "R10") and \
            t("evidence", n) != "backward":
        seq = sequence_parallel(n, rule, t.get("node_index"))
        if seq is not None:
            category, rule = "sequence-parallel", seq
    fwd = t("forward", n)
    if fwd is not None and t("kind", fwd) == "communication":
        own = t("own_category", fwd)
        if own is not None and own[0] != category:
            return ("other", "R10-contradiction") if rule == "R4" else (own[0], own[1] + "-inherited")
    return category, rule


def _exchange(t: NodeFacts, n: Node) -> Node | None:
    """R9 (§2): the sequence-parallel Send/Receive (its own rule R9) a Send/Receive with no attribute of its
    own (R5b) is chained to by `Depend`, the other half of one exchange step (flash_sp_sendrecv_8p: a `Send`
    in `Default/` scope ordered before a Receive marked `flash_tag`); None for any other node."""
    own = t("own_category", n)
    if own is None or own[1] != "R5b" or n in t.get("silent"):
        return None
    for m in ordered_with(n, t.get("node_index")):
        other = t("own_category", m) if t("kind", m) == "communication" and m not in t.get("silent") else None
        if other is not None and other[1].startswith("R9"):
            return m
    return None


def _category(t: NodeFacts, n: Node) -> tuple[str, str] | None:
    """The node's own category (`own_category`), or context parallelism for the other half of an exchange
    step (`exchange`)."""
    return ("context-parallel", "R9-paired") if t("exchange", n) is not None else t("own_category", n)


def _three_d_weight(t: NodeFacts, n: Node) -> bool:
    """`n` reads a three-dimensional parameter (experts x in x out) as its second input."""
    params: Params = t.get("parameters")
    shapes = t.get("param_shapes")
    ins = n.inputs
    if len(ins) < 2 or ins[1].ref is None:
        return False
    local = t.get("by_key")[n.graph]
    src = local.get(ins[1].ref.name) if ins[1].ref.kind == "node" else None
    names = params.reached_by(src, local) if src is not None else \
        [x for x in [params.name_of(ins[1].ref.name)] if x is not None]
    return any(len(shapes.get(x) or ()) == 3 for x in names)


_OPTIMIZER_SCOPE = re.compile(r"(^|/)(optimizer|optim)[-_]|Optimizer")


def own_phase(n: Node, category: tuple[str, str] | None, copy: bool, bprop: bool = False) -> Phase | None:
    """The phase the node's own evidence decides (§3), given its (category, rule) when it
    communicates, whether it is a recomputed copy and whether it calls a forward call's bprop closure
    (`_bprop_of`); None when it says nothing."""
    return category_phase(category) or evidence_phase(n, copy, bprop)


def category_phase(category: tuple[str, str] | None) -> Phase | None:
    """The phase a communication node's (category, rule) decides (§3): a gradient's reduction runs in the
    backward (R1, R4, R8), an optimizer-parallel gather moving no data is forward (R2)."""
    if category is None:
        return None
    cat, rule = category
    if rule in ("R1", "R4", "R8") or cat == "gradient-aggregation":
        return "backward"
    return "forward" if rule == "R2" else None


def evidence_phase(n: Node, copy: bool, bprop: bool = False) -> Phase | None:
    """The phase the node's own evidence other than its category decides (§3): backward evidence first (a
    recomputed copy in a bprop, `Gradients/recompute_Default/.../Grad_LayerNorm/TupleGetItem`, is backward
    work), then the copy, then the optimizer's scope or a gradient reducer's (`scope.in_grad_reducer`: the gradients
    scaled once per step after the last backward, read by the update alone, as the optimizer's own work)."""
    scope = n.scope or ""
    if (in_gradients(scope) or n.mentions("forward_unique_id") or n.mentions("forward_node_name")
            or ((n.instance_name or "").startswith("grad") and not borrowed_name(n))
            or (not copy and n.mentions("is_bp") and n.scalar_attr("is_bp") is True) or bprop):  # a copy runs in the
        return "backward"  # backward: `is_bp` on it
    if copy:
        return "recompute"
    if ("ptim" in scope and _OPTIMIZER_SCOPE.search(scope)) or in_grad_reducer(scope):  # text first: every scope
        return "optimizer"
    return None


def _evidence(t: NodeFacts, n: Node) -> Phase | None:
    if in_gradients(n.scope or ""):  # `evidence_phase`'s first rule, which half of a training graph meets
        return "backward"
    # only a call can run a bprop closure: `forward` is not asked of the 40 000 others
    return evidence_phase(n, t("copy", n), n.op == "(call)" and t("forward", n) is not None)


def _graph_phases(t: NodeFacts) -> dict[str, Phase]:
    """The phase of each subgraph every call of which is in one phase (a lazy-inline bprop graph is
    called only from backward call nodes); of a closure no node calls by name (a lazy-inline cell's bprop,
    `Partial(@...bprop...)` returned to its forward call's caller and called as `%64(...)`), backward when
    its nodes' own evidence says backward (gpt_small_dp2mp2pp2_lazyinline rank_0 validate
    line 1270 binds the DecoderLayer's bprop: 85 nodes in `Gradients/` scope, 18 plumbing nodes saying
    nothing). The entry graph and graphs called in several phases have none. A call from inside a
    recursion (control_flow_cpu rank_0 validate: a while loop's bprop ◂24, line 607, calls the bprops ◂25 and
    ◂41 that call it back, line 314) says nothing of the phase the recursion is entered in: left out."""
    sites = t.get("calls").sites
    out: dict[str, Phase | None] = {}

    def of(graph: str, seen: frozenset[str]) -> tuple[Phase | None | object, bool]:
        """(the graph's phase, `_UNDECIDED` when all its calls come from the recursion in `seen`; whether a call
        was left out so, when the answer holds for this path only and is not kept)."""
        if graph in out:
            return out[graph], False
        if graph == t.dump.entry:
            return None, False
        if not sites.get(graph):
            out[graph] = found = _closure_phase(t, graph)
            return found, False
        phases, cut, inside = set(), False, seen | {graph}
        for s in sites[graph]:
            found = t("evidence", s)
            if found is None:
                found, deeper = of(s.graph, inside) if s.graph not in inside else (_UNDECIDED, True)
                cut |= deeper
                if found is _UNDECIDED:
                    continue
            phases.add(found or "forward")
        found = _UNDECIDED if not phases else phases.pop() if len(phases) == 1 else None
        if not cut:
            out[graph] = found
        return found, cut

    return {g.name: ph for g in t.dump.subgraphs
            if (ph := of(g.name, frozenset())[0]) is not None and ph is not _UNDECIDED}


_UNDECIDED = object()  # a graph called only from inside a recursion being followed


def _closure_phase(t: NodeFacts, graph: str) -> Phase | None:
    """Backward for a graph only bound (`Partial`), never called by name, whose nodes' own evidence says
    backward and, besides, at most recompute (a recomputed copy runs in the backward: dryrun_llama_dp2mp2pp2
    rank_4 validate line 5615 binds the model's bprop, 256 backward nodes and 164 copies); else None."""
    if not t.get("calls").bound.get(graph):
        return None
    said = {t("evidence", n) for n in t.get("by_key")[graph].values()} - {None}
    return "backward" if "backward" in said and said <= {"backward", "recompute"} else None


def _phase(t: NodeFacts, n: Node) -> Phase:
    """What the node's category decides (§3), else the phase of the exchange step it is half of (one step
    runs in one phase: the other half's when backward), else its own evidence, else the phase of its
    subgraph's calls, else forward."""
    if n.op in COMM_OPS:  # only communication has a category
        found = category_phase(t("category", n))
        if found is not None:
            return found
        other = t("exchange", n)
        if other is not None and t("phase", other) == "backward":
            return "backward"
    own = _evidence(t, n)  # the phase pass is its one reader for most nodes: not kept per node for nothing
    if own is not None:
        return own
    return t.get("graph_phases").get(n.graph, "forward")


def _micro(t: NodeFacts) -> dict[Node, int]:
    """The micro batch each node runs for, data flow deciding where a printed mark contradicts it.

    MindSpore's pipeline pass prints `micro` on the nodes it copies per micro batch, and on nodes it
    inserts after them (a redistribution's `StridedSlice`, PipelineCell's output accumulation `Add`s,
    PipelineCellInference's `Concat`) a `micro` copied from elsewhere, often 0: a label, not the work.
    So a node runs for the micro batch of the work it reads (data inputs, transitively; never an ordering
    input: UpdateState, a monad, a Depend's second) when that work is of one micro batch, and for its
    printed mark only where what it reads has none (a micro batch's first slice, work on weights or
    constants alone). The data's micro batches start at the pipeline's Send/Receive (the micro batch a hop
    carries is what pairs it with its peer's; not a hop of a parameter shared between stages, marked
    `pipeline_param`, which every micro batch reads though it prints `micro: I64(0)`: ut_pipeline_split_shared_32p
    rank 16 validate line 57) and pass through every node; a mark only printed places its node but tells its
    readers nothing (the sens slice `StridedSliceGrad(Tensor)` MindSpore prints once,
    `micro: I64(0)`, for every micro batch's backward: ut_pipeline_split_32p rank_16 validate line 262).
    A node reading the work of several micro batches joins them and runs for none, whatever it prints,
    and so does a node reading it; except where a primitive `pipeline_end` / `pipeline_begin` names one
    of those it reads (PipelineCell's accumulation `Add` ending micro batch k adds k's output to the sum of
    those before). Only nodes printing a mark get one (and a bprop closure's call: its forward call's);
    a Send/Receive keeps its own (its micro batch names the hop).
    ut_pipeline_split_32p rank_16 validate line 634 `StridedSlice(%52)` prints `micro: I64(0)` and reads
    micro 3's MatMul (line 617): micro 3. inference_pp_4p_m2 rank_2 line 233 `Concat(%5)` prints
    `micro: I64(0)` and joins both micro batches' calls: none."""
    if not any(n.mentions("micro") for n in t.dump.nodes()):
        return {}  # no node prints a micro batch (`_micro_mark`): none runs for one, without a sweep
    by_key = t.get("by_key")
    out: dict[Node, int] = {}
    carries: dict[Node, int] = {}  # bit k: micro batch k's work reaches the node's readers through it
    expanding: set[Node] = set()

    def settle(n: Node, found: int) -> None:
        """`n`'s micro batch and what it carries, once every node it reads has settled (`found`: their bits)."""
        if not n.mentions("micro") and (n.op != "(call)" or n.callee[0] != "%"):  # most nodes: no mark, no call
            carries[n] = found
            return
        mark = _micro_mark(t, n)
        m = None if mark is None else _runs_for(n, mark, found)
        if m is None:
            carries[n] = found
            return
        out[n] = m
        # a mark only the print gives (nothing it reads says) places the node, its readers go by their own;
        # a Send/Receive's names its hop's micro batch, unless it carries a shared parameter (`pipeline_param`)
        carries[n] = 1 << m if found or (n.op in _HOPS and not n.mentions("pipeline_param")) else found

    for g in t.dump.subgraphs:  # print order: a node's inputs are mostly settled before it
        local = by_key[g.name]
        get, bits_of = local.get, carries.get
        for root in g.nodes:
            if root in carries:  # read by a node printed before it
                continue
            # `_data_inputs` read in place, without its list: the usual node's inputs are all settled
            op = root.op
            found = 0
            for r in () if op == "UpdateState" else (root.first_node_ref,) if op == "Depend" else root.node_refs:
                p = get(r)
                if p is None or p.op == "UpdateState":
                    continue
                bits = bits_of(p)
                if bits is None:
                    break
                found |= bits
            else:  # the usual case: no walk
                settle(root, found)
                continue
            ins = _data_inputs(root, local)
            expanding.add(root)
            stack: list[tuple[Node, list[Node] | None]] = [(root, ins), *((p, None) for p in ins if p not in carries)]
            while stack:
                n, ins = stack.pop()
                if n in carries or (ins is None and n in expanding):  # done, or a cycle (a malformed graph)
                    continue
                if ins is None:
                    ins = _data_inputs(n, by_key[n.graph])
                    pending = [(p, None) for p in ins if p not in carries]
                    if pending:
                        expanding.add(n)
                        stack.append((n, ins))
                        stack.extend(pending)
                        continue
                found = 0
                for p in ins:
                    found |= carries.get(p, 0)
                settle(n, found)
    return out


def _micro_mark(t: NodeFacts, n: Node) -> int | None:
    """The micro batch `n` prints (`micro`, or a primitive `pipeline_end` / `pipeline_begin`'s), or a bprop
    closure's call its forward call's; None when it prints none."""
    v = _int_attr(n, "micro")
    if v is not None:
        return _pipeline_mark(n, v)
    if n.op == "(call)" and n.callee[0] == "%":
        fwd = t("forward", n)
        if fwd is not None:
            return _int_attr(fwd, "micro")
    return None


_HOPS = frozenset({"Send", "Receive"})


def _runs_for(n: Node, mark: int | None, found: int) -> int | None:
    """`_micro`'s rule for one node printing `mark` and reading the work of the micro batches whose bits
    `found` sets."""
    if mark is None:
        return None
    if not found or n.op in _HOPS:
        return mark
    if found & (found - 1) == 0:  # one micro batch
        return found.bit_length() - 1
    return mark if found >> mark & 1 and _pipeline_mark(n, None) == mark else None


def _pipeline_mark(n: Node, default: int | None) -> int | None:
    """The micro batch a primitive `pipeline_end` / `pipeline_begin` names, else `default`."""
    if not (n.mentions("pipeline_end") or n.mentions("pipeline_begin")):
        return default
    pa = n.attr_group("primitive_attrs")
    marked = pa.get("pipeline_end", pa.get("pipeline_begin"))
    return marked if isinstance(marked, int) and not isinstance(marked, bool) else default


def _data_inputs(n: Node, local: dict[str, Node]) -> list[Node]:
    """The nodes of its subgraph whose values a node reads: not UpdateState (it only records what ran)
    nor what it reads only to be ordered (a Depend's inputs after its first, a monad)."""
    if n.op == "UpdateState":
        return []
    refs = (n.first_node_ref,) if n.op == "Depend" else n.node_refs
    return [p for r in refs if r and (p := local.get(r)) is not None and p.op != "UpdateState"]


def _int_attr(n: Node, key: str) -> int | None:
    v = n.scalar_attr(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _chunk(t: NodeFacts) -> dict[Node, int]:
    """The position of each node's work in the pipeline's model order: the fold segment (`segment`),
    else `chunk` (MindSpore 2.7 prints `chunk` for both: an interleaved pipeline's chunk, a folded
    one's segment; the job says which, §7). A column of the nodes that have one (most print none: the
    stage's chunks are read from it without asking every node)."""
    out: dict[Node, int | None] = {}

    def of(n: Node) -> int | None:
        if n in out:
            return out[n]
        out[n] = None  # a cycle of bprop calls (a malformed graph) has none
        v = _int_attr(n, "segment")
        if v is None:
            v = _int_attr(n, "chunk")
        if v is None and n.op == "(call)" and n.callee[0] == "%":  # a bprop closure's call: its forward call's
            fwd = t("forward", n)
            v = of(fwd) if fwd is not None else None
        out[n] = v
        return v

    for n in t.dump.nodes():  # a node printing neither and calling no closure has none: not read further
        if n not in out and (n.mentions("segment") or n.mentions("chunk") or (n.op == "(call)" and n.callee[0] == "%")):
            of(n)
    return {n: v for n, v in out.items() if v is not None}


def _printed_chunk(t: NodeFacts, n: Node) -> int | None:
    """`chunk` as printed (§7)."""
    return _int_attr(n, "chunk")


def _out_bytes(t: NodeFacts, n: Node) -> int | None:
    return type_bytes(n.output_type, tuple_sum=True)[2]


def _order_inputs(t: NodeFacts, n: Node) -> tuple[int, ...]:
    """The positions of the node's inputs that only order it: every input of `UpdateState` (it records
    that its inputs ran), the inputs of `Depend` after its first (the value it passes on is the
    first), a monad (typed `UMonad`/`IOMonad`, or an `UpdateState`'s result)."""
    ins = n.inputs
    if n.op == "UpdateState":
        return tuple(i.index for i in ins)
    out = set(n.monad_inputs)
    if n.op == "Depend":
        out.update(i.index for i in ins[1:])
    nodes = None
    for i in ins:
        if i.ref is not None and i.ref.kind == "node" and i.index not in out:
            nodes = nodes if nodes is not None else t.get("by_key")[n.graph]
            src = nodes.get(i.ref.name)
            if src is not None and src.op == "UpdateState":
                out.add(i.index)
    return tuple(sorted(out))


def _comm_nodes(t: NodeFacts) -> list[Node]:
    """The communication nodes, in print order (every command's first question of a dump)."""
    return [n for n in t.dump.nodes() if _kind(t, n) == "communication"]


def _silent(t: NodeFacts) -> frozenset[Node]:
    """Communication nodes that move no data (§2 R2: optimizer-parallel gathers on an empty or one-rank group)."""
    return frozenset(n for n in t.get("comm_nodes") if moves_no_data(n, n.instance_name or "", n.primitive_attrs))


def _strategy(t: NodeFacts) -> dict[Node, Strategy]:
    return strategy_records(t.dump)


def _parameters(t: NodeFacts) -> Params:
    return parameters(t.dump)


def _lifetimes(t: NodeFacts) -> Lifetimes:
    from .lifetime import lifetimes  # the cost model's walk: not imported by a plain summary

    return lifetimes(t)


def _layer(t: NodeFacts) -> dict[Node, int]:
    return t.get("layer_flow").layer


PASSES: tuple[Pass, ...] = (
    Pass("file kind", ("file_kind", "split_done"), (), "dump", _file_kind),
    Pass("kernel graph", ("kernel",), (), "dump", _kernel),
    Pass("nodes by key", ("by_key",), (), "dump", _by_key),
    Pass("kinds", ("kind",), (), "node", _kind),
    Pass("copies", ("copy",), (), "column", _copy),
    Pass("copy list", ("copies",), ("copy",), "dump", _copies),
    Pass("unique ids", ("unique_ids",), ("copy",), "dump", _unique_ids),
    Pass("counterparts", ("forward",), ("unique_ids", "by_key"), "node", _forward),
    Pass("calls", ("calls",), (), "dump", _calls),
    Pass("graph runs", ("graph_runs",), ("calls",), "dump", graph_runs),
    Pass("runs", ("runs",), ("graph_runs",), "node", node_runs),
    Pass("parameters", ("parameters",), (), "dump", _parameters),
    Pass("parameter shapes", ("param_shapes",), (), "dump", param_shapes),
    Pass("communication nodes", ("comm_nodes",), ("kind",), "dump", _comm_nodes),
    Pass("node index", ("node_index",), ("by_key",), "dump", node_index),
    Pass("silent communication", ("silent",), ("comm_nodes",), "dump", _silent),
    Pass("phase evidence", ("evidence",), ("copy", "forward"), "node", _evidence),
    Pass("own categories", ("own_category",), ("kernel", "kind", "forward", "node_index", "parameters",
                                               "param_shapes", "by_key", "evidence"), "node", _own_category),
    Pass("exchange steps", ("exchange",), ("own_category", "kind", "silent", "node_index"), "node", _exchange),
    Pass("categories", ("category",), ("own_category", "exchange"), "node", _category),
    Pass("graph phases", ("graph_phases",), ("evidence", "calls", "by_key"), "dump", _graph_phases),
    Pass("phases", ("phase",), ("category", "exchange", "evidence", "graph_phases", "copy", "forward"), "node",
         _phase),
    Pass("micro batches", ("micro",), ("forward", "by_key", "kind"), "column", _micro),
    Pass("chunks", ("chunk",), ("forward",), "column", _chunk),
    Pass("printed chunks", ("printed_chunk",), (), "node", _printed_chunk),
    Pass("sizes", ("out_bytes",), (), "node", _out_bytes),
    Pass("ordering inputs", ("order_inputs",), ("by_key",), "node", _order_inputs),
    Pass("strategies", ("strategy",), (), "column", _strategy),
    Pass("groups", ("groups",), ("comm_nodes", "silent"), "dump", groups_of),
    Pass("dynamic rows", ("rows",), ("by_key", "groups"), "node", rows),
    Pass("communication", ("comm",), ("file_kind", "kind", "comm_nodes", "forward", "category", "phase", "micro", "chunk",
                                      "runs", "printed_chunk", "silent", "groups", "strategy", "rows", "node_index",
                                      "by_key"),
         "column", comm_records),
    Pass("stage", ("stage_info",), ("file_kind", "split_done", "comm", "silent"), "dump", stage_info),
    Pass("streams", ("stream",), (), "node", stream_of),
    Pass("kernels", ("kernels",), ("kernel", "kind", "stream", "micro", "phase"), "dump", kernels),
    Pass("stage chunks", ("stage_chunks",), ("micro", "kind", "phase", "chunk"), "dump", stage_chunks),
    Pass("folded", ("folded",), ("comm",), "dump", stage_folded),
    Pass("units of work", ("unit",), ("stage_chunks", "micro", "kind", "phase", "chunk", "folded"), "column", units),
    Pass("order", ("order",), ("kernel", "by_key", "kind", "unit", "stage_chunks", "comm", "stage_info", "folded"), "dump",
         build_order),
    Pass("layer flow", ("layer_flow",), ("parameters", "phase", "forward", "by_key"), "dump", layer_flow),
    Pass("layers", ("layer",), ("layer_flow",), "column", _layer),
    Pass("parameter roles", ("param_roles",), ("parameters", "by_key", "phase"), "dump", param_roles),
    Pass("user operators", ("operator",), ("parameters", "by_key", "kind", "phase", "copy", "micro", "unique_ids",
                                           "layer", "layer_flow", "forward"), "column", operator_keys),
    Pass("operator parameters", ("operator_params",), ("parameters", "by_key", "operator", "phase", "comm", "kind"),
         "dump", operator_params),
    Pass("placements", ("placement",), ("by_key", "operator_params", "operator", "kind", "comm"), "column", placements),
    Pass("marked outputs", ("marked_outputs",), ("node_index", "strategy", "layer", "out_bytes", "runs"), "dump",
         marked_outputs),
    Pass("lifetimes", ("lifetimes",), ("kernel", "by_key", "param_roles", "phase", "kind", "micro", "unit", "order",
                                        "file_kind", "strategy"), "dump", _lifetimes),
    *JOB_PASSES,
)


def node_facts(dump: Dump, rank: int | None = None) -> NodeFacts:
    """The fact table of `dump` on global rank `rank` (which tells a Send/Receive peer printed as a
    group index, §7), filled by `PASSES` as facts are asked for. With `IRTOOL_CACHE` (ir/kept.py), a
    dump read again is analysed on the table its last reading filled."""
    if not kept.SIZE:
        return NodeFacts(dump, PASSES, rank)
    # the entry holds its dump: the id is not reused while it is kept
    return _tables.get_or_make((id(dump), rank), lambda: NodeFacts(dump, PASSES, rank))


_tables = Kept()
