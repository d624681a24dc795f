"""The records of parallel analysis: one typed record per concept, turned into JSON at output.

Records hold plain data (no reference to the `Dump` or its nodes), so per-rank facts travel
between processes cheaply; `uid` (`graph/%N`) and `line` locate the node in its dump.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterable, Literal, get_args

from ..ir import DumpWarning

Category = Literal["redistribution", "operator-forward", "gradient-aggregation", "optimizer-parallel",
                   "pipeline", "expert-parallel", "sequence-parallel", "context-parallel", "other"]
Phase = Literal["forward", "backward", "recompute", "optimizer"]
# Where a dump sits relative to the parallel pass (docs/parallel.md §1): `pre` before
# step_parallel_end (types logical or stale), `spe` step_parallel_end itself, `post` after it.
FileKind = Literal["pre", "spe", "post"]
Direction = Literal["send", "receive"]

CATEGORIES: tuple[str, ...] = get_args(Category)
PHASES: tuple[str, ...] = get_args(Phase)


# Values of exactly these types are already JSON-ready (checked by `type`, not isinstance: fast,
# and subclasses such as named tuples still go through `plain`).
_READY = frozenset({str, int, bool, type(None)})


class NonFinite(float):
    """inf or nan in a value read from a dump (`inf`, `-inf`, a number beyond the float range):
    JSON has no number for it; marked so that the JSON writer (`irtool.present.json_pieces`)
    writes it as Python's encoder does (`Infinity`, `NaN`) and not as `null`, which means unknown."""


def plain(value: Any) -> Any:
    """JSON-ready data: tuples become lists, dict keys text, unknown objects their text, inf and
    nan `NonFinite`."""
    if type(value) in _READY:
        return value
    if type(value) is float:
        return value if value - value == 0 else NonFinite(value)
    if type(value) is tuple:  # strategies, shapes, rank lists: few distinct among many records
        text = repr(value)
        done = _PLAIN_TUPLES.get(text)
        if done is None:
            done = [x if type(x) in _READY else plain(x) for x in value]
            if len(_PLAIN_TUPLES) < 1 << 14:
                _PLAIN_TUPLES[text] = done
        return done
    if isinstance(value, (tuple, list)):
        return [x if type(x) in _READY else plain(x) for x in value]
    if isinstance(value, dict):
        return {str(k): plain(x) for k, x in value.items()}
    if isinstance(value, (int, float, bool, str)):
        return value
    return str(value)


# `plain` of tuples by their repr (`(1, 2)` and `(1.0, 2.0)` are equal tuples, not the same JSON):
# strategies, shapes and rank lists recur across thousands of records; the JSON writer only reads them.
_PLAIN_TUPLES: dict[str, list] = {}


# Field annotations whose values are JSON-ready as they are: copied, not walked by `plain`.
_SCALAR_TYPES = frozenset({"str", "int", "bool", "str | None", "int | None", "bool | None", "Category", "Phase",
                           "Direction | None"})
_FIELDS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _as_dict(record: Any, skip: tuple[str, ...] = (), given: dict[str, Any] | None = None) -> dict[str, Any]:
    """A record's fields (but `skip`; those in `given` with that value) as JSON-ready data. Not
    dataclasses.asdict: it deep-copies, which costs seconds on thousands of strategies; and only
    the fields not typed as text or numbers go through `plain` (a large dump's summary holds 200 k
    field values)."""
    spec = _FIELDS.get(type(record))
    if spec is None:
        spec = _FIELDS[type(record)] = (tuple(f.name for f in fields(record)),
                                        tuple(f.name for f in fields(record) if f.type not in _SCALAR_TYPES))
    names, walked = spec
    d = {name: getattr(record, name) for name in names if name not in skip} if skip else \
        {name: getattr(record, name) for name in names}
    if given:
        d.update(given)
    for name in walked:
        if name in d and type(d[name]) not in _READY and not (given and name in given):
            d[name] = plain(d[name])
    return d


@dataclass(frozen=True)
class Bytes:
    """A byte count summed over nodes some of whose sizes may be unknown: the known sum, how many
    were known and how many were not. An unknown size is never added as 0 (`irtool.present`
    writes `1,024 (+4 unknown)`, or `—` when none is known)."""

    total: int = 0
    known: int = 0
    unknown: int = 0
    bound: int | None = 0  # at most this many bytes in the unknown ones; None when one of them has no bound

    @classmethod
    def of(cls, nbytes: int | None, bound: int | None = None) -> Bytes:
        """One node's size; `bound`: at most this many when the size is unknown (dynamic token rows)."""
        return cls(0, 0, 1, bound) if nbytes is None else cls(nbytes, 1, 0)

    def __add__(self, other: Bytes | int | None) -> Bytes:
        o = other if isinstance(other, Bytes) else Bytes.of(other)
        bound = None if self.bound is None or o.bound is None else self.bound + o.bound
        return Bytes(self.total + o.total, self.known + o.known, self.unknown + o.unknown, bound)

    @property
    def exact(self) -> int | None:
        """The sum when every size is known (None when some is unknown or nothing was added)."""
        return self.total if self.known and not self.unknown else None


def per_step(nbytes: int | None, runs: int | None, bound: int | None = None) -> Bytes:
    """A node's bytes over one step: its size times how many times it runs (the `runs` fact), each run
    counted; unknown (one node of unknown size, no bound) when its runs are."""
    if runs is None:
        return Bytes(0, 0, 1, None)
    if nbytes is None:
        return Bytes(0, 0, runs, None if bound is None else bound * runs)
    return Bytes(nbytes * runs, runs, 0)


def total_bytes(values: Iterable[int | None]) -> Bytes:
    """The `Bytes` of some sizes (None = unknown)."""
    out = Bytes()
    for v in values:
        out += v
    return out


@dataclass
class CommNode:
    """One communication node with what irtool derived about it (docs/parallel.md §2-§8)."""

    op: str
    category: Category
    phase: Phase
    group: str | None = None
    group_ranks: tuple[int, ...] | None = None
    shape: Any = None
    dtype: str | None = None
    bytes: int | None = None
    bytes_bound: int | None = None  # `bytes` unknown (dynamic token rows, §5): at most this many
    micro: int | None = None
    peer_stage: int | None = None
    scope: str = ""
    serves: str | None = None  # the operator (uid) or parameter the communication is for
    rule: str = ""  # the docs/parallel.md rule that decided the category
    instance: str | None = None
    direction: Direction | None = None  # for point-to-point
    peer_rank: int | None = None  # global rank of the p2p peer
    sr_tag: int | None = None  # Send/Receive `sr_tag`: pairs a Send with its Receive between two ranks
    reduce_op: str | None = None  # the `op` attribute of a reducing collective (`sum`, `max`, ...)
    parameter: str | None = None  # for gradient aggregation / optimizer parallel
    serves_op: str | None = None  # operator of `serves` when it is a node
    serves_strategy: Any = None  # `in_strategy` (else `in_layout`) of the `serves` operator
    segment: int | None = None  # pipeline segment of a Send/Receive (`pr.segment`, folded pipelines)
    chunk: int | None = None  # `pr.chunk` as printed (MindSpore 2.7 prints the segment, or the interleave chunk, so)
    runs: int | None = None  # how many times the node runs in one step (the `runs` fact); None: unknown
    # the scope the node is attributed to: `scope`, except a backward node printed under another
    # cell than its forward counterpart's (docs/parallel.md §8)
    cell_scope: str = ""
    node: str = ""  # uid of the node, `graph/%N`
    line: int = 0
    # attributes naming ranks (`dest_rank`, `src_rank`, ...): they differ between ranks by construction
    rank_attrs: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self, ("rank_attrs",))

    @property
    def step_bytes(self) -> Bytes:
        """Its bytes over one step: `bytes` times `runs` (`per_step`)."""
        return per_step(self.bytes, self.runs, self.bytes_bound)

    @property
    def redistributes(self) -> bool:
        """A tensor-layout conversion (R6: `redistribution_op_...`), whatever category its purpose gave it
        (a sequence-parallel gather, R12, or an expert-parallel all-to-all, R11, may be one)."""
        return self.category == "redistribution" or "redistribution_op" in (self.instance or "")


# The attributes of a sharding strategy or layout (docs/parallel.md §9), in the order every command lists them.
STRATEGY_KEYS: tuple[str, ...] = ("in_strategy", "out_strategy", "gen_strategy", "in_layout", "out_layout")


@dataclass
class Strategy:
    """An operator carrying a sharding strategy or layout (docs/parallel.md §9)."""

    op: str
    scope: str
    in_strategy: Any = None
    out_strategy: Any = None
    in_layout: Any = None
    out_layout: Any = None
    gen_strategy: Any = None
    node: str = ""  # uid
    name: str = ""  # the node's debug name
    line: int = 0
    instance: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self, ("instance",))

    def values(self) -> dict[str, Any]:
        """Every strategy key (STRATEGY_KEYS) and its value, None when the node has none."""
        return {k: getattr(self, k) for k in STRATEGY_KEYS}

    def signature(self) -> str:
        """What "the same strategy" means in every command (diff, check): equal values under every
        key of STRATEGY_KEYS, `gen_strategy` included."""
        return json.dumps([plain(getattr(self, k)) for k in STRATEGY_KEYS])

    @property
    def shown(self) -> Any:
        """The strategy a one-column view shows: `in_strategy`, else `in_layout`."""
        return self.in_strategy if self.in_strategy is not None else self.in_layout


@dataclass
class Group:
    """A communication group as the dump's nodes name it (docs/parallel.md §6)."""

    name: str
    ranks: tuple[int, ...] | None
    size: int | None
    comm_nodes: int
    evidence: str | None = None  # the printed member list contradicted: which evidence decided (§6)

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self)


def placed_stage(stage: int | None, hops: int, split: bool = True) -> int | None:
    """A rank's stage as every command files it (`StageInfo.placed`): the stage its dump decides; stage 0 for a dump
    without pipeline Send/Receive (`hops`) past the pipeline split (`split`: before it no Send/Receive is inserted
    yet); None, unknown, for a pipelined dump that does not decide it."""
    return stage if stage is not None or hops or not split else 0


@dataclass
class StageInfo:
    """This rank's pipeline stage and the evidence for it (docs/parallel.md §7)."""

    stage: int | None
    votes: dict[int, int]
    how: list[str]
    peer_stages: list[int]
    hops: int = 0  # pipeline Send/Receive, whatever the pass (before step_parallel_end they carry no stage)
    split: bool = True  # the pass is past the pipeline split (the `split_done` fact)

    @property
    def placed(self) -> int | None:
        """The stage every command files this rank under: its own when the dump decides it, stage 0 when the dump
        has no pipeline Send/Receive (MindSpore's default of one stage), else unknown (None), never stage 0."""
        return placed_stage(self.stage, self.hops, self.split)


@dataclass
class ChainEnd:
    """The operator on one side of a redistribution chain (docs/parallel.md §13)."""

    node: str  # uid
    op: str
    name: str = ""  # instance name, else the node's debug name
    line: int = 0
    input_index: int | None = None  # consumer: which input the chain feeds; producer: tuple item taken
    strategy: Any = None  # in_strategy (producer: out_strategy when given, else in_strategy)
    layout: Any = None  # in_layout[i] / out_layout when the dump gives them (device_matrix, tensor_map)
    full_shape: Any = None  # unsharded shape: origin_output_shape / origin_input_shapes[i]
    slice_shape: Any = None  # this rank's shape entering (producer) or leaving (consumer) the chain
    split: Any = None  # pieces per dimension: full_shape / slice_shape
    source: str | None = None  # the user's `# In file` line: `path:line code`
    scope: str = ""

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self)


@dataclass
class RedistributionChain:
    """One redistribution: the nodes MindSpore inserted between a producer and a consumer whose
    layouts differ, in order (docs/parallel.md §13). A backward chain is the bprop of the forward
    chain `of_chain` and reports that chain's producer and consumer."""

    id: int
    phase: Phase
    nodes: list[str]  # `%N Op` in order
    comm: list[str]  # uids of the communication nodes in the chain
    comm_ops: list[str]
    groups: list[str]
    group_ranks: list[Any]
    dtype: str | None
    bytes: int | None  # tensor bytes (docs/parallel.md §5) summed over the chain's communication
    wire_bytes: int | None  # per-rank traffic estimate (docs/parallel.md §14)
    producer: ChainEnd | None
    consumer: ChainEnd | None
    consumers: list[str] = field(default_factory=list)  # every consumer's uid when the chain forks
    of_chain: int | None = None  # backward: the forward chain this is the bprop of
    first_line: int = 0
    scope: str = ""
    lines: list[int] = field(default_factory=list)  # dump line of each entry of `nodes`

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self, given={"producer": self.producer.as_dict() if self.producer else None,
                                     "consumer": self.consumer.as_dict() if self.consumer else None})


@dataclass
class ParallelFacts:
    """Everything `irtool.parallel.analyze` found in one dump. The dump is left as it was; the
    warnings are about what the analysis could not read."""

    kind: FileKind
    comm: list[CommNode]
    groups: dict[str, Group]
    strategies: list[Strategy]
    stage_info: StageInfo
    warnings: list[DumpWarning]
    # optimizer-parallel gathers on an empty or one-rank group: they move no data, so they are not
    # in `comm` (docs/parallel.md §2 R2)
    no_op_gathers: list[CommNode] = field(default_factory=list)
    # the dump's fact table (`facts.NodeFacts`): every per-node fact, computed when first asked; it holds
    # the dump, so pickling (facts travel between processes) and `release` drop it, never the records above
    table: Any = field(default=None, repr=False, compare=False)
    # Facts computed when first asked for (`check` never builds redistribution chains): `analyze`
    # leaves the function that computes them, which holds the dump until it has run. Pickling
    # (facts travel between processes) and `release` drop it, never the facts already computed.
    _chains: list[RedistributionChain] | None = field(default=None, repr=False, compare=False)
    _make_chains: Callable[[], list[RedistributionChain]] | None = field(default=None, repr=False, compare=False)
    _job: Any = field(default=None, repr=False, compare=False)  # `job.RankJob`, once asked for

    @property
    def stage(self) -> int | None:
        return self.stage_info.stage

    @property
    def job(self) -> Any:
        """What the rank's dump shows of the job (`job.RankJob`, the `rank_job` fact), made when first asked
        and kept: every command reads this one (ask before `release`, or in the worker that read the rank)."""
        if self._job is None:
            if self.table is None:
                raise ValueError("the rank's job is made from its dump: ask for it before the facts are released "
                                 "or sent to another process")
            self._job = self.table.get("rank_job")
        return self._job

    @property
    def chains(self) -> list[RedistributionChain]:
        """The redistribution chains (chains.py, docs/parallel.md §13), built on first access."""
        if self._chains is None:
            if self._make_chains is None:
                raise ValueError("redistribution chains are built from the dump: ask for them before the facts "
                                 "are released or sent to another process")
            self._chains, self._make_chains = self._make_chains(), None
        return self._chains

    def release(self) -> ParallelFacts:
        """Let go of the dump: facts not computed yet are no longer available. Returns `self`."""
        self._make_chains = self.table = None
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_make_chains": None, "table": None}


@dataclass
class OptimizerShard:
    """One optimizer-sharded parameter: its forward gather and backward reduce-scatter (or what
    the dump shows instead), with the group and the slice and full shapes (docs/parallel.md §15)."""

    parameter: str
    forward_ops: list[str]  # e.g. ["AllGather"] (one per node: micro batches repeat it)
    backward_ops: list[str]  # e.g. ["ReduceScatter"]
    groups: list[str]
    group_ranks: Any
    full_shape: Any  # the gathered parameter
    slice_shape: Any  # this rank's piece: full_shape with dimension 0 divided by the group size
    dtype: str | None  # of the forward gather (of the backward nodes when there is none)
    forward_bytes: int | None
    backward_bytes: int | None
    wire_bytes: int | None
    nodes: list[str]  # uids
    backward_dtype: str | None = None  # the gradient's: Float32 accumulation under a Float16 gather

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self)


@dataclass
class LayerComm:
    """Communication of one layer (`layer 3`: the nodes the `layer` fact puts in layer 3), of the cell
    a node of no layer serves (`Default/net/embedding-Embedding`), or of a scope prefix of
    `--by-scope-depth` components, split by phase and category (docs/parallel.md §16)."""

    layer: str
    count: int
    bytes: int
    wire_bytes: int
    bytes_unknown: int  # nodes whose size is unknown
    by_phase: dict[str, int]  # phase -> bytes
    by_category: dict[str, int]  # category -> bytes
    wire_unknown: int = 0  # nodes whose wire bytes are unknown (size, group or formula unknown)
    index: int | None = None  # the layer index (`layer` fact), None for a cell or scope row

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self)
