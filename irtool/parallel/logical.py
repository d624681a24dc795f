"""The logical graph of a folder, and two of them compared (docs/logical.md).

The network as the user wrote it: one record per user operator (`operators.OperatorKey`: cell,
operator, layer, occurrence; ranks, micro batches, recompute copies and pipeline wrappers
folded away), carrying for the configuration compiled its strategy, the communication inserted
around it (operator, category, phase, group size; count and bytes per device per step), its FLOPs
per device per step and the bytes a rank holds for it (its weights' slices, their optimizer states,
the activations it keeps for backward). Then per layer (the `layer` fact: data flow, never printed
scopes) and per stage what one rank holds, computes and sends, and each side's stage balance.

Read from one rank per stage (ranks of a stage hold the same work) and the folder's `Job`. The cost
figures are the cost records' (`balance.stage_cost`, `balance.in_flight`, `cost.compute_cost`, `memory`): read, never
worked out again here. `compare_logical` pairs two graphs of one network compiled under two
configurations by operator key and layer: what `irtool diff` says across configurations and what a
viewer marks (`OperatorPair.changed`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..ir import Dump, Node
from .balance import Balance, StageCost, balance, in_flight, stage_cost, stage_memory
from .chains import user_source
from .cost import compute_cost
from .job import Job, JobChange, job_changes
from .operators import OperatorKey
from .params import data_refs, layer_index
from .records import PHASES, Bytes, CommNode, ParallelFacts, plain

SCHEMA = "irtool.logical/1"
_DEPTH = 10  # nodes of no operator walked through between two operators


def _bytes(b: Bytes) -> dict[str, Any]:
    """A byte sum as JSON: the known sum (null when nothing is known) and the tensors of unknown size."""
    return {"bytes": b.total if b.known or not b.unknown else None, "unknown": b.unknown}


@dataclass
class CommUse:
    """Communication of one kind (operator, category, phase) per device per step: nodes times the
    times their graph runs, their bytes, the sizes of the groups they use."""

    op: str
    category: str
    phase: str
    count: int | None = 0  # runs over the step; None when a node's runs are unknown
    bytes: Bytes = field(default_factory=Bytes)
    group_sizes: tuple[int, ...] = ()  # distinct sizes, ascending; () when unknown

    @property
    def kind(self) -> tuple[str, str, str]:
        return (self.op, self.category, self.phase)

    def add(self, c: CommNode, size: int | None) -> None:
        self.count = None if self.count is None or c.runs is None else self.count + c.runs
        self.bytes += c.step_bytes
        if size is not None and size not in self.group_sizes:
            self.group_sizes = tuple(sorted((*self.group_sizes, size)))

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "category": self.category, "phase": self.phase, "count": self.count,
                **_bytes(self.bytes), "group_sizes": list(self.group_sizes)}


def comm_bytes(holder: Any) -> Bytes | None:
    """The bytes of every communication a `LogicalOp` or `Figures` (its `comm`) moves per device per step; None
    for no holder (one side of a pair)."""
    if holder is None:
        return None
    out = Bytes()
    for u in holder.comm.values():
        out += u.bytes
    return out


def _tally(uses: dict[tuple[str, str, str], CommUse], c: CommNode, size: int | None) -> None:
    key = (c.op, c.category, c.phase)
    if key not in uses:
        uses[key] = CommUse(c.op, c.category, c.phase)
    uses[key].add(c, size)


def _after_layer(key: OperatorKey, layer: int | None) -> int | None:
    """Where work of no layer after the layers is (the head, the loss): the last layer it reads, part of its key."""
    return key.layer if layer is None and key.layer >= 0 else None


@dataclass
class Held:
    """One parameter as a rank holds it (the `# Params` slice)."""

    name: str
    shape: Any
    dtype: str | None
    bytes: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shape": plain(self.shape), "dtype": self.dtype, "bytes": self.bytes}


@dataclass
class LogicalOp:
    """One user operator under one configuration (module docstring); figures per device per step."""

    key: OperatorKey
    source: str | None  # the user's line, `make.py:58 x = self.fc1(h, self.w1)`
    layer: int | None
    stage: int
    rank: int | None  # the rank read for its stage
    line: int  # of its first forward node in that rank's dump
    strategy: dict[str, Any]  # STRATEGY_KEYS that it has
    flops: dict[str, int] = field(default_factory=lambda: {p: 0 for p in PHASES})
    flops_unknown: int = 0  # its nodes whose FLOPs are unknown (never counted as 0)
    params: list[Held] = field(default_factory=list)  # the weights it is the first to read
    weights: Bytes = field(default_factory=Bytes)
    optimizer_states: Bytes = field(default_factory=Bytes)
    activations: Bytes = field(default_factory=Bytes)  # kept for backward, times the micro batches in flight
    comm: dict[tuple[str, str, str], CommUse] = field(default_factory=dict)
    nodes: int = 0  # dump nodes folded into it (micro-batch copies, recompute copies, backward)
    recomputed: bool = False
    inputs: list[OperatorKey] = field(default_factory=list)  # the user operators whose outputs it reads (its stage's)

    @property
    def total_flops(self) -> int:
        return sum(self.flops.values())

    def as_dict(self) -> dict[str, Any]:
        return {**self.key.as_dict(), "source": self.source, "layer": self.layer,
                "after_layer": _after_layer(self.key, self.layer), "stage": self.stage,
                "rank": self.rank, "line": self.line, "strategy": {k: plain(v) for k, v in self.strategy.items()},
                "flops": dict(self.flops), "flops_unknown": self.flops_unknown,
                "params": [p.as_dict() for p in self.params], "weights": _bytes(self.weights),
                "optimizer_states": _bytes(self.optimizer_states), "activations": _bytes(self.activations),
                "comm": [u.as_dict() for u in self.comm.values()], "nodes": self.nodes,
                "recomputed": self.recomputed, "inputs": [k.as_dict() for k in self.inputs]}


@dataclass
class Figures:
    """What one rank holds, computes and sends for a layer (or a stage): per device per step."""

    stage: int
    rank: int | None
    weights: Bytes = field(default_factory=Bytes)
    optimizer_states: Bytes = field(default_factory=Bytes)
    activations: Bytes = field(default_factory=Bytes)
    flops: dict[str, int] = field(default_factory=lambda: {p: 0 for p in PHASES})
    comm: dict[tuple[str, str, str], CommUse] = field(default_factory=dict)

    @property
    def total_flops(self) -> int:
        return sum(self.flops.values())

    def by_category(self) -> dict[str, CommUse]:
        """Communication per category: count, bytes, group sizes (operators and phases summed)."""
        out: dict[str, CommUse] = {}
        for u in self.comm.values():
            cat = out.setdefault(u.category, CommUse("", u.category, ""))
            cat.count = None if cat.count is None or u.count is None else cat.count + u.count
            cat.bytes += u.bytes
            cat.group_sizes = tuple(sorted(set(cat.group_sizes) | set(u.group_sizes)))
        return dict(sorted(out.items()))

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "rank": self.rank, "weights": _bytes(self.weights),
                "optimizer_states": _bytes(self.optimizer_states), "activations": _bytes(self.activations),
                "flops": dict(self.flops), "total_flops": self.total_flops,
                "comm_by_category": {k: {"count": u.count, **_bytes(u.bytes), "group_sizes": list(u.group_sizes)}
                                     for k, u in self.by_category().items()},
                "comm": [u.as_dict() for u in self.comm.values()]}


@dataclass
class LayerFigures(Figures):
    """A layer (its index), or the work of no layer on one stage (`layer` None; `label` says which)."""

    layer: int | None = None
    label: str = ""  # `layer 3`, `no layer (stage 0)`, `no layer (last stage)`: what pairs across configurations

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "layer": self.layer, **super().as_dict()}


@dataclass
class StageFigures(Figures):
    """A stage, from its rank read: its totals, the layers it holds and its memory estimate."""

    layers: list[int] = field(default_factory=list)
    memory: Bytes = field(default_factory=Bytes)  # the cost records' estimate of the rank's peak (docs/cost.md)
    in_flight: int | float | None = None  # micro batches whose activations are held at once (None: unknown)

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "layers": self.layers, "memory": _bytes(self.memory),
                "micro_batches_in_flight": self.in_flight}


@dataclass
class LogicalGraph:
    """One folder's logical graph (module docstring)."""

    path: str
    job: Job
    ops: list[LogicalOp]
    layers: list[LayerFigures]
    stages: list[StageFigures]
    unplaced: dict[tuple[str, str, str], CommUse]  # communication around no user operator (every stage's)
    balance: Balance | None  # the stage balance (the cost records'; None: no stage read)
    notes: list[str] = field(default_factory=list)

    def as_dict(self, ops: bool = True) -> dict[str, Any]:
        """`irtool.logical/1`; without `ops` when they are given elsewhere (a comparison's pairs)."""
        return {"schema": SCHEMA, "path": self.path, "job": self.job.as_dict(),
                **({"ops": [o.as_dict() for o in self.ops]} if ops else {}),
                "layers": [x.as_dict() for x in self.layers],
                "stages": [x.as_dict() for x in self.stages],
                "unplaced_comm": [u.as_dict() for u in self.unplaced.values()],
                "balance": None if self.balance is None else {
                    "compute_ratio": self.balance.compute_ratio, "heaviest_stage": self.balance.heaviest,
                    "lightest_stage": self.balance.lightest, "measure": self.balance.measure},
                "notes": self.notes}


def _group_size(c: CommNode, facts: ParallelFacts) -> int | None:
    if c.group_ranks:
        return len(c.group_ranks)
    g = facts.groups.get(c.group) if c.group else None
    return g.size if g is not None else None


def layer_label(layer: int | None, stage: int, stages: int | None) -> str:
    """What pairs a layer across configurations: its index; work of no layer by the stage's place
    (the first stage holds the embedding, the last the head and loss, whatever the stage count)."""
    if layer is not None:
        return f"layer {layer}"
    last = stages is not None and stages > 1 and stage == stages - 1
    return "no layer (last stage)" if last else f"no layer (stage {stage})"


def logical_graph(stages: Iterable[tuple[int | None, Dump, ParallelFacts]], job: Job, path: str = "") -> LogicalGraph:
    """The logical graph of the ranks given (one per stage: `(rank, dump, facts)`, facts not
    released) under `job` (the folder's, of every rank)."""
    build = _Builder(job)
    for rank, dump, facts in stages:
        _Stage(build, rank, dump, facts).add()
    bal = balance(build.measured, job) if build.measured else None
    return LogicalGraph(path, job, sorted(build.ops.values(), key=lambda o: (o.stage, o.layer is None, o.layer or 0,
                                                                             o.line)),
                        sorted(build.layers.values(), key=lambda x: (x.layer is None, x.layer or 0, x.stage)),
                        sorted(build.stages, key=lambda x: x.stage), build.unplaced,
                        bal, build.notes)


class _Builder:
    """What the stages add up to, as they are read."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.n_stages = job.pipeline_stages.value if job.pipeline_stages.known else None
        self.ops: dict[OperatorKey, LogicalOp] = {}
        self.layers: dict[str, LayerFigures] = {}
        self.stages: list[StageFigures] = []
        self.unplaced: dict[tuple[str, str, str], CommUse] = {}
        self.measured: list[StageCost] = []
        self.notes: list[str] = []


class _Stage:
    """One stage's rank read into the graph: its operators, their FLOPs, the bytes held, the
    activations kept and the communication, each from the records that decide them."""

    def __init__(self, build: _Builder, rank: int | None, dump: Dump, facts: ParallelFacts) -> None:
        self.build, self.rank, self.dump, self.facts, self.t = build, rank, dump, facts, facts.table
        self.cost = stage_cost(facts, walk=False)  # the cost records of the stage (its balance: FLOPs, no peak)
        job = build.job
        self.memory = stage_memory(self.cost.memory, in_flight(self.cost.order, self.cost.stage, job))
        self.stage = self.cost.stage  # None: a rank of unknown stage (drawn only alone: `Selection.per_stage`)
        self.keys: dict[Node, OperatorKey] = self.t.column("operator")
        self.owners: dict[str, OperatorKey] = self.t.get("operator_params")
        self.by_uid = {n.uid: n for n in dump.nodes()}
        self.mine: dict[OperatorKey, LogicalOp] = {}  # the operators this stage holds

    def add(self) -> None:
        self.build.measured.append(self.cost)
        self._operators()
        self._flops()
        weights, states = self._held()
        acts = self._activations()
        comm = self._comm()
        if states.unknown:  # the memory records recognise no optimizer update: no layer's or operator's is known
            for row in self.build.layers.values():
                if row.stage == self.stage:
                    row.optimizer_states = states
            for o in self.mine.values():
                if o.params:
                    o.optimizer_states = states
        self.build.stages.append(StageFigures(
            self.stage, self.rank, weights, states, acts, dict(self.cost.cost.flops), comm,
            layers=self.build.job.stage_layers.get(self.stage, []),  # the job's answer, not a second rule
            memory=self.memory.total, in_flight=self.memory.in_flight.count))

    def layer_row(self, layer: int | None) -> LayerFigures:
        label = layer_label(layer, self.stage, self.build.n_stages)
        row = self.build.layers.get(label)
        if row is None:
            row = self.build.layers[label] = LayerFigures(self.stage, self.rank, layer=layer, label=label)
        return row

    def op_of(self, n: Node | None) -> LogicalOp | None:
        key = self.keys.get(n) if n is not None else None
        return self.mine.get(key) if key is not None else None

    def _operators(self) -> None:
        """One record per key; its first forward node (print order) gives its line, strategy, source, inputs."""
        t, ops, first = self.t, self.build.ops, {}
        for n, key in self.keys.items():
            o = self.mine.get(key)
            if o is None:
                if key in ops:  # on another stage too (a shared operator): its first stage keeps it
                    self.build.notes.append(f"{key.text}: on stages {ops[key].stage} and {self.stage}; "
                                            f"figures of stage {ops[key].stage}")
                    continue
                s = t("strategy", n)
                o = self.mine[key] = ops[key] = LogicalOp(
                    key, user_source(n), t("layer", n), self.stage, self.rank, n.line,
                    {k: v for k, v in s.values().items() if v is not None} if s is not None else {})
                first[key] = n
            o.nodes += 1
            o.recomputed |= bool(t("copy", n))
        by_key = t.get("by_key")
        for key, n in first.items():
            self.mine[key].inputs = _inputs(n, self.keys, by_key[n.graph])

    def _flops(self) -> None:
        """Per operator the cost records' FLOPs of its nodes; per layer their own split (`layer` fact)."""
        for oc in compute_cost(self.t, keep_ops=True).ops:
            o = self.op_of(self.by_uid.get(oc.node))
            if o is not None:
                if oc.flops is None:
                    o.flops_unknown += 1
                else:
                    o.flops[oc.phase] += oc.flops
        for layer, phases in self.cost.cost.by_layer.items():
            row = self.layer_row(layer)
            for ph, f in phases.items():
                row.flops[ph] += f

    def _held(self) -> tuple[Bytes, Bytes]:
        """Weights and optimizer states as the memory records size them: a weight is a parameter a user
        operator reads (placed with it) or one the memory records call a weight (in its layer); its states
        are those the memory records find for it. Where those records take a weight for something else (an
        optimizer they do not recognise), the states are unknown, never 0."""
        mem = self.cost.memory
        weights, states = Bytes(), Bytes()
        known = all(p.role in ("weight", "unused") for p in mem.params if p.name in self.owners)
        for p in mem.params:
            # a weight no user operator is found to read first (an MoE layer's expert weights, passed to the
            # experts' call) is still held in its layer
            if p.name in self.owners or (known and p.role == "weight"):
                self.layer_row(layer_index(p.name)).weights += p.bytes
                weights += p.bytes
                owner = self.mine.get(self.owners[p.name]) if p.name in self.owners else None
                if owner is not None:
                    owner.weights += p.bytes
                    owner.params.append(Held(p.name, p.shape, p.dtype, p.bytes))
            elif p.role == "optimizer-state" and known:
                weight = p.of or p.name
                self.layer_row(layer_index(weight)).optimizer_states += p.bytes
                states += p.bytes
                owner = self.mine.get(self.owners.get(weight))  # type: ignore[arg-type]
                if owner is not None:
                    owner.optimizer_states += p.bytes
        if known:
            return weights, states
        self.build.notes.append(f"stage {self.stage}: optimizer states unknown: the memory records recognise no "
                                "optimizer update of the weights (docs/cost.md)")
        return weights, Bytes(0, 0, 1)

    def _activations(self) -> Bytes:
        """What each kept tensor holds for one micro batch (memory records), times the micro batches in flight."""
        flight = self.memory.in_flight.count
        total = Bytes()
        for uid, b in self.cost.memory.kept.items():
            n = self.by_uid.get(uid)
            held = None if b is None or flight is None else round(b * flight)
            total += held
            self.layer_row(self.t("layer", n) if n is not None else None).activations += held
            o = self.op_of(n)
            if o is not None:
                o.activations += held
        return total

    def _comm(self) -> dict[tuple[str, str, str], CommUse]:
        """Each communication node around its operator, in that operator's layer (else the node's own);
        the stage's total."""
        placed: dict[Node, OperatorKey] = self.t.column("placement")
        total: dict[tuple[str, str, str], CommUse] = {}
        for c in self.facts.comm:
            n = self.by_uid.get(c.node)
            if n is None:
                continue
            size = _group_size(c, self.facts)
            o = self.mine.get(placed[n]) if n in placed else None
            if o is not None:
                _tally(o.comm, c, size)
                layer = o.layer
            else:
                _tally(self.build.unplaced, c, size)
                layer = self.t("layer", n)
            _tally(self.layer_row(layer).comm, c, size)
            _tally(total, c, size)
        return total


def _inputs(n: Node, keys: dict[Node, OperatorKey], local: dict[str, Node]) -> list[OperatorKey]:
    """The user operators whose outputs `n` reads, through nodes of none (plumbing, communication, a
    redistribution), in its graph: the edges of the logical graph."""
    out: list[OperatorKey] = []
    todo, seen = [(n, 0)], {n}
    while todo:
        m, depth = todo.pop()
        for ref in data_refs(m):
            src = local.get(ref)
            if src is None or src in seen:
                continue
            seen.add(src)
            key = keys.get(src)
            if key is not None:
                if key != keys[n] and key not in out:
                    out.append(key)
            elif depth < _DEPTH:
                todo.append((src, depth + 1))
    return sorted(out)


# --- two graphs compared ---------------------------------------------------------------------------

# What of an operator is compared, in the order said.
OP_FIELDS = ("stage", "strategy", "comm", "flops", "weights", "optimizer_states", "activations")


def _known_differ(a: Bytes, b: Bytes) -> bool:
    """Two byte sums differ when both are exact and differ (an unknown size is no change)."""
    return a.exact is not None and b.exact is not None and a.exact != b.exact


def _fields(a: LogicalOp, b: LogicalOp) -> tuple[str, ...]:
    out = []
    if a.stage != b.stage:
        out.append("stage")
    if a.strategy != b.strategy:
        out.append("strategy")
    if _comm_key(a) != _comm_key(b):
        out.append("comm")
    if a.flops != b.flops:
        out.append("flops")
    for name in ("weights", "optimizer_states", "activations"):
        if _known_differ(getattr(a, name), getattr(b, name)):
            out.append(name)
    return tuple(out)


def _comm_key(o: LogicalOp) -> dict:
    return {k: (u.count, u.bytes.total, u.bytes.unknown, u.group_sizes) for k, u in o.comm.items()}


# Why a user operator changed, as one word (`OperatorPair.cause`), the first that applies: on one side only, moved
# to another stage, its strategy changed on its own, its strategy or only the communication around it changed as the
# job's degrees did (the layout: `follows`, `comm_follows`), the communication around it changed otherwise, or only
# its figures did (FLOPs, bytes held).
CAUSES = ("added", "removed", "stage", "strategy", "layout", "communication", "figures")


@dataclass
class OperatorPair:
    """One user operator under the old and the new configuration (None: not in that one)."""

    key: OperatorKey
    old: LogicalOp | None
    new: LogicalOp | None
    fields: tuple[str, ...] = ()  # OP_FIELDS that differ
    # the degrees (`DEGREES`) whose change every changed strategy value follows from; () when some value does not
    follows: tuple[str, ...] = ()
    # the degrees whose change explains every change of the communication around it (`comm_follows`)
    comm_follows: tuple[str, ...] = ()

    @property
    def change(self) -> str:
        if self.old is None:
            return "added"
        if self.new is None:
            return "removed"
        return "changed" if self.fields else "same"

    @property
    def changed(self) -> bool:
        return self.change != "same"

    @property
    def cause(self) -> str | None:
        """Why it changed (CAUSES), None when it did not: the viewer colours a box by it."""
        change = self.change
        if change != "changed":
            return None if change == "same" else change
        if "stage" in self.fields:
            return "stage"
        if "strategy" in self.fields:
            return "layout" if self.follows else "strategy"
        if "comm" in self.fields:
            return "layout" if self.comm_follows else "communication"
        return "figures"

    @property
    def side(self) -> LogicalOp:
        side = self.new or self.old
        assert side is not None
        return side

    def comm_changes(self) -> list[tuple[str, CommUse | None, CommUse | None]]:
        """The communication around it that appeared, vanished or changed: (change, old, new)."""
        a = self.old.comm if self.old else {}
        b = self.new.comm if self.new else {}
        out = []
        for k in sorted(set(a) | set(b)):
            ua, ub = a.get(k), b.get(k)
            if ua is None or ub is None:
                out.append(("appeared" if ua is None else "vanished", ua, ub))
            elif (ua.count, ua.bytes, ua.group_sizes) != (ub.count, ub.bytes, ub.group_sizes):
                out.append(("changed", ua, ub))
        return out

    def as_dict(self) -> dict[str, Any]:
        return {**self.key.as_dict(), "text": self.key.text, "source": self.side.source,
                "layer": self.side.layer, "after_layer": _after_layer(self.key, self.side.layer),
                "change": self.change, "changed": self.changed, "fields": list(self.fields),
                "strategy_follows": list(self.follows), "old": self.old.as_dict() if self.old else None,
                "new": self.new.as_dict() if self.new else None}


@dataclass
class LayerPair:
    label: str
    layer: int | None
    old: LayerFigures | None
    new: LayerFigures | None

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "layer": self.layer, "old": self.old.as_dict() if self.old else None,
                "new": self.new.as_dict() if self.new else None}


@dataclass
class LogicalDiff:
    """Two logical graphs of one network compiled under two configurations, paired."""

    old: LogicalGraph
    new: LogicalGraph
    changes: list[JobChange]  # the configuration change
    ops: list[OperatorPair]
    layers: list[LayerPair]

    @property
    def changed_ops(self) -> list[OperatorPair]:
        return [p for p in self.ops if p.changed]

    def as_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "configuration": [c.as_dict() for c in self.changes],
                "ops": [p.as_dict() for p in self.ops], "layers": [x.as_dict() for x in self.layers],
                "old": self.old.as_dict(ops=False), "new": self.new.as_dict(ops=False)}


# The degrees a strategy splits a dimension by: a strategy value that changes as one of them changes follows from
# the layout, not from the operator.
DEGREES = ("dp", "mp", "cp", "ep")


def _ints(v: Any) -> list[int] | None:
    """The whole numbers of a strategy (`((2, 1), (1, 2))` -> [2, 1, 1, 2]); None for anything else (a layout)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    if isinstance(v, (tuple, list)):
        out: list[int] = []
        for x in v:
            inner = _ints(x)
            if inner is None:
                return None
            out += inner
        return out
    return None


def _shape(v: Any) -> Any:
    return tuple(_shape(x) for x in v) if isinstance(v, (tuple, list)) else None


def strategy_follows(a: LogicalOp, b: LogicalOp, degrees: dict[str, tuple[int, int]]) -> tuple[str, ...]:
    """The degrees whose change (`degrees`: name -> (old, new)) explains every strategy value of `a` that `b`
    changes: each changed split `x → y` is one degree's `old → new` (both, when two changed alike); () when some
    value changes otherwise (a dimension split by dp x mp, say), or a strategy is not a nesting of whole numbers."""
    used: set[str] = set()
    moves: dict[tuple[int, int], set[str]] = {}
    for k, move in degrees.items():
        moves.setdefault(move, set()).add(k)
    for k in set(a.strategy) | set(b.strategy):
        x, y = a.strategy.get(k), b.strategy.get(k)
        if x == y:
            continue
        xs, ys = _ints(x), _ints(y)
        if xs is None or ys is None or _shape(x) != _shape(y):
            return ()
        for i, j in zip(xs, ys):
            if i != j:
                if (i, j) not in moves:
                    return ()
                used.update(moves[(i, j)])
    return tuple(d for d in DEGREES if d in used)


def comm_follows(changes: list[tuple[str, CommUse | None, CommUse | None]], degrees: dict[str, tuple[int, int]]
                 ) -> tuple[str, ...]:
    """The degrees whose change (`degrees`: name -> (old, new)) explains every change of the communication around an
    operator (`OperatorPair.comm_changes`): a kind whose groups changed size as one degree did (`AllReduce group 2 ->
    4` as mp 2 -> 4), vanished as its degree fell to 1 (a group of one rank moves nothing: a weight's gradient
    AllReduce as dp 2 -> 1), or appeared as it rose from 1; () when some change is not so (a count or bytes alone, a
    group size no degree had, sizes unknown)."""
    moves: dict[tuple[int, int], set[str]] = {}
    for k, move in degrees.items():
        moves.setdefault(move, set()).add(k)
    used: set[str] = set()
    for change, ua, ub in changes:
        if change == "changed":
            assert ua is not None and ub is not None
            pairs = list(zip(ua.group_sizes, ub.group_sizes)) if len(ua.group_sizes) == len(ub.group_sizes) else []
            pairs = [m for m in pairs if m[0] != m[1]]
        else:
            u = ua or ub
            assert u is not None
            pairs = [(size, 1) if change == "vanished" else (1, size) for size in u.group_sizes]
        if not pairs or any(m not in moves for m in pairs):
            return ()
        for m in pairs:
            used.update(moves[m])
    return tuple(d for d in DEGREES if d in used)


def compare_logical(old: LogicalGraph, new: LogicalGraph) -> LogicalDiff:
    """Pair two logical graphs by operator key and by layer label (module docstring)."""
    a, b = {o.key: o for o in old.ops}, {o.key: o for o in new.ops}
    changes = job_changes(old.job, new.job)
    degrees = {c.field: (c.old, c.new) for c in changes if c.field in DEGREES}
    pairs = []
    for key in [*a, *(k for k in b if k not in a)]:
        x, y = a.get(key), b.get(key)
        fields = _fields(x, y) if x and y else ()
        follows = strategy_follows(x, y, degrees) if x and y and "strategy" in fields and degrees else ()
        pair = OperatorPair(key, x, y, fields, follows)
        if "comm" in fields and "strategy" not in fields and degrees:
            pair.comm_follows = comm_follows(pair.comm_changes(), degrees)
        pairs.append(pair)
    pairs.sort(key=lambda p: (p.side.layer is None, p.side.layer or 0, p.key))
    la, lb = {x.label: x for x in old.layers}, {x.label: x for x in new.layers}
    layer_pairs = [LayerPair(label, (la.get(label) or lb[label]).layer, la.get(label), lb.get(label))
                   for label in [*la, *(k for k in lb if k not in la)]]
    layer_pairs.sort(key=lambda p: (p.layer is None, p.layer or 0, p.label))
    return LogicalDiff(old, new, changes, pairs, layer_pairs)
