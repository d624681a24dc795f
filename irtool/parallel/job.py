"""The job a dump or a folder of dumps compiles (docs/parallel.md §18): world size, rank layout,
pipeline stages and what each holds, micro batches, recompute, optimizer and its sharding,
gradient accumulation — each value with its evidence (`file:line`) or why it is unknown.

One rank tells what its own dump shows (`RankJob`, made in the worker that read the rank, from the
fact table); a folder's `Job` folds its ranks' (`job_of`), and names the stages no rank read is on.
Every command reads the job from here; none works these figures out again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any, Callable, Iterable

from .model_dims import ModelDims, ffn_size, heads, kv_heads, model_dims
from .params import WEIGHT_VALUE, follow_value, layer_index
from .records import CommNode, Strategy, _as_dict, placed_stage
from .rules import MIRRORS
from .stage import as_int
from .table import Pass

# Update primitives of the optimizers MindSpore ships, by the name the job record gives them.
OPTIMIZER_OPS = {"SGD": "SGD", "ApplyMomentum": "Momentum", "Momentum": "Momentum", "Adam": "Adam",
                 "ApplyAdam": "Adam", "FusedAdam": "Adam", "AdamWeightDecay": "AdamWeightDecay",
                 "FusedAdamWeightDecay": "AdamWeightDecay", "FusedCastAdamWeightDecay": "AdamWeightDecay",
                 "AdamW": "AdamW", "Lamb": "Lamb", "LAMB": "Lamb", "ApplyAdagrad": "Adagrad",
                 "ApplyAdagradV2": "Adagrad", "ApplyRMSProp": "RMSProp", "ApplyCenteredRMSProp": "RMSProp",
                 "ApplyAdaMax": "AdaMax", "ApplyFtrl": "FTRL", "ApplyProximalAdagrad": "ProximalAdagrad",
                 "FusedSparseLazyAdam": "LazyAdam", "SparseApplyLazyAdam": "LazyAdam"}
_WORLD = ("_world_group",)


def _optimizer_cell(scope: str | None) -> str | None:
    """`LazyAdam` of a scope `Default/optimizer-LazyAdam/...`: the optimizer cell's class."""
    part = next((p for p in (scope or "").split("/") if "optim" in p.lower() and "-" in p), None)
    return part.split("-", 1)[1] if part else None
Sizes = dict[int, tuple[int, str]]  # group size -> (communication nodes using such a group, evidence of the first)


@dataclass(frozen=True)
class Evidence:
    """A value and where the dump shows it (`file:line`, what it is), or why it is unknown (value None)."""

    value: Any
    where: str  # `rank_0/19_validate_0089.ir:257 (Send to rank 4)`, or the reason it is unknown

    @property
    def known(self) -> bool:
        return self.value is not None

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "evidence" if self.known else "unknown": self.where}


def _at(file: str, c: CommNode | None, what: str) -> str:
    return f"{file}:{c.line} ({what})" if c is not None else what


def _unknown(why: str) -> Evidence:
    return Evidence(None, why)


@dataclass
class RankJob:
    """What one rank's dump shows of the job (picklable: made where the rank was read)."""

    rank: int | None
    file: str
    stage: int | None
    stage_sizes: Sizes  # collective groups within its stage (the largest spans it: dp x mp)
    world: Evidence
    span: Evidence  # ranks per stage from a pipeline peer's rank and stage (`stage_span`)
    mp: Sizes  # operator-forward (tensor-parallel) groups
    ep: Sizes  # expert-parallel (all-to-all dispatch and combine) groups
    sp: Sizes  # sequence-parallel (gather/scatter of sequence-split activations) groups
    cp: Sizes  # context-parallel (ring attention exchange, Ulysses all-to-all) groups
    micro: Evidence  # number of micro batches
    chunks: list[int]  # the chunks (segments) its stage runs, [] with one (`order.stage_chunks`)
    folded: bool  # they are a folded pipeline's segments (`segment` printed, no `chunk`), not interleaved chunks
    layers: list[int]  # layers whose parameters the rank's work reads
    layers_where: str
    recompute: list[int]  # layers with recomputed work
    dims: ModelDims  # the model's and the data's sizes (`model_dims`)
    optimizer: Evidence
    opt_shard: Sizes  # optimizer-parallel groups
    accumulation: Evidence  # gradient accumulation buffers (`accu_grads.*`) or micro-step mirrors
    training: bool  # the dump has an optimizer, accumulation or backward work
    hops: int = 0  # pipeline Send/Receive (a pass before step_parallel_end has them, but no stage yet)
    last: int | None = None  # the last stage this rank tells (`_hops_of`), and where (`last_where`)
    last_where: str = ""
    backward: bool = False  # the dump has backward work (recomputed copies come with it: before, recompute is unknown)
    parallel: bool = True  # the parallel pass has inserted its communication (no group degree is known before)
    split: bool = True  # the pipeline split has run (`rules.pipeline_split_done`): before, no Send/Receive or micro
    # batch mark is inserted and no optimizer inlined, so their absence says nothing
    recompute_where: str = ""  # the first recomputed copy, `file:line (op)`

    @property
    def placed(self) -> int | None:
        """The stage every command files the rank under (`records.placed_stage`): None, unknown, never 0."""
        return placed_stage(self.stage, self.hops, self.split)


def stage_span(comm: list[CommNode], rank: int | None, stage: int | None, name: str) -> Evidence:
    """Ranks per stage from a pipeline peer: MindSpore numbers the ranks stage by stage (stage s holds ranks
    s*n to s*n+n-1), so a Send/Receive of rank r on stage s with rank p on stage t says n = (p - r) / (t - s).
    A group of the stage cannot say it: its largest may be a loss mean over the data-parallel ranks alone."""
    if rank is None or stage is None:
        return _unknown("the rank or its stage unknown")
    for c in comm:
        if c.category == "pipeline" and c.peer_rank is not None and c.peer_stage not in (None, stage):
            n, rest = divmod(c.peer_rank - rank, c.peer_stage - stage)
            if rest == 0 and n > 0:
                return Evidence(n, _at(name, c, f"{c.op} with rank {c.peer_rank} on stage {c.peer_stage}"))
    return _unknown("no pipeline peer of known rank and stage")


def _records(t: Any) -> list[CommNode]:
    """The rank's communication records that move data (`ParallelFacts.comm`)."""
    silent = t.get("silent")
    return [c for n, c in t.column("comm").items() if n not in silent]


def _name(t: Any) -> str:
    return t.dump.path or ""


def _sizes(name: str, keep: Iterable[CommNode], label: str) -> Sizes:
    out: Sizes = {}
    for c in keep:
        n = len(c.group_ranks) if c.group_ranks else None
        if n:
            count, where = out.get(n, (0, _at(name, c, f"{c.op} {label} on group {c.group}")))
            out[n] = (count + 1, where)
    return out


def _collectives(comm: list[CommNode]) -> list[CommNode]:
    return [c for c in comm if c.op not in ("Send", "Receive") and c.group_ranks]


def _world_of(t: Any) -> Evidence:
    """The world size: the size of a group named the world's; one device when nothing communicates."""
    comm, name = _records(t), _name(t)
    worlds = [c for c in _collectives(comm) if (c.group or "").endswith(_WORLD)] + \
             [c for c in comm if (c.group or "").endswith(_WORLD) and c.group_ranks]
    if worlds:
        return Evidence(len(worlds[0].group_ranks), _at(name, worlds[0], f"{worlds[0].op} on {worlds[0].group}"))
    if not comm and not t.get("silent") and t.get("file_kind") != "pre" and not t.rank:
        return Evidence(1, f"{name}: no communication after the parallel pass: one device")
    return _unknown("no node of this rank uses the world group")


def _span_of(t: Any) -> Evidence:
    return stage_span(_records(t), t.rank, t.get("stage_info").stage, _name(t))


def _groups_of(t: Any) -> tuple[Sizes, Sizes, Sizes, Sizes, Sizes, Sizes]:
    """The group sizes each degree is read from: within the stage, tensor, expert, sequence, context and
    optimizer parallel."""
    comm, name = _records(t), _name(t)
    collectives = _collectives(comm)

    def inside(c: CommNode) -> bool:
        return not (c.group or "").endswith(_WORLD)

    stage = _sizes(name, [c for c in collectives if c.category in (
        "gradient-aggregation", "operator-forward", "optimizer-parallel", "redistribution") and inside(c)],
        "within the stage")
    gradients = {c.group_ranks for c in comm if c.category == "gradient-aggregation" and c.group_ranks}
    mp = _sizes(name, [c for c in collectives if c.category in ("operator-forward", "sequence-parallel")
                       and c.op not in ("AlltoAll", "AllToAll") and inside(c) and _tensor_parallel(t, c, gradients)],
                "tensor parallel")
    ep = _sizes(name, [c for c in collectives if c.category == "expert-parallel"], "expert-parallel all-to-all")
    sp = _sizes(name, [c for c in collectives if c.category == "sequence-parallel"], "sequence-parallel")
    cp = _sizes(name, [c for c in comm if c.category == "context-parallel" and c.group_ranks and inside(c)],
                "context-parallel") or _sequence_split(t, name, comm)
    shard = _sizes(name, [c for c in comm if c.category == "optimizer-parallel"], "optimizer shard")
    return stage, mp, ep, sp, cp, shard


def _micro_of(t: Any) -> Evidence:
    """The number of micro batches: the micro batches the rank's nodes run for (the `micro` fact)."""
    marked = t.column("micro")
    if not marked:
        return _unknown("no node carries a micro batch (`micro`)")
    top = max(marked.values())
    last = next(n for n, m in marked.items() if m == top)
    return Evidence(len(set(marked.values())), f"{_name(t)}:{last.line} (micro {top}, {last.op})")


def _layers_of(t: Any) -> tuple[list[int], str]:
    """The layers the rank's work is of (the `layer` fact of every node not only updating weights), and where
    the first parameter of one is read."""
    layers: set[int] = set()
    for n, i in t.column("layer").items():  # a layer's first node not updating weights: not every node's phase
        if i not in layers and t("phase", n) != "optimizer":
            layers.add(i)
    params = t.get("parameters")
    where = next((f"{_name(t)}:{n.line} (reads {p})" for p, readers in params.readers.items()
                  if (i := layer_index(p)) is not None
                  for n in readers if t("phase", n) != "optimizer" and t("layer", n) == i), "")
    return sorted(layers), where


def _recompute_of(t: Any) -> tuple[list[int], str]:
    """The layers with recomputed work (the `layer` fact of the recomputed copies), and the first copy."""
    copies = t.get("copies")
    layers = {i for n in copies if (i := t("layer", n)) is not None}
    return sorted(layers), f"{_name(t)}:{copies[0].line} ({copies[0].op}, `duplicated`)" if copies else ""


def _optimizer_of(t: Any) -> Evidence:
    name, params = _name(t), t.get("parameters")
    updates = [n for n in t.dump.nodes() if n.op in OPTIMIZER_OPS and t("phase", n) == "optimizer"]
    if updates:
        # the optimizer class the user chose, when the update's scope names its cell (nn.LazyAdam updates its
        # dense parameters with `Adam`: `optimizer-LazyAdam/Adam-op0`), else the update primitive's optimizer
        u = updates[0]
        cell = _optimizer_cell(u.scope)
        named = cell or OPTIMIZER_OPS[u.op]
        how = u.op if named == OPTIMIZER_OPS[u.op] else f"{u.op} in {cell}"
        return Evidence(named, f"{name}:{u.line} ({how})")
    # without an update primitive (MindFormers' AdamW is written out), the optimizer cell whose nodes read the weights
    found = next((n for readers in params.readers.values() for n in readers
                  if n.scope and t("phase", n) == "optimizer"), None)
    if found is not None:
        cell = _optimizer_cell(found.scope)
        return Evidence(cell or found.scope, f"{name}:{found.line} (scope {found.scope})")
    return _unknown("no optimizer update in this pass")


def _accumulation_of(t: Any) -> Evidence:
    name, params = _name(t), t.get("parameters")
    accu = next((n for n in params.readers if n.startswith("accu_grads.")), None)
    if accu:
        return Evidence(True, f"{name}:{params.readers[accu][0].line} (buffer {accu})")
    step = next((c for c in _records(t) if c.op.startswith("_Mirror") and "Step" in c.op), None)
    if step is not None:
        return Evidence(True, _at(name, step, f"{step.op}"))
    return _unknown("no accumulation buffer (`accu_grads.*`) or micro-step mirror")


def _backward_of(t: Any) -> bool:
    return any(c.phase == "backward" for c in _records(t)) or any(t("phase", n) == "backward" for n in t.dump.nodes())


def _hops_of(t: Any) -> tuple[int, int | None, str]:
    """The pipeline Send/Receive, and the last stage the rank tells, with where: its own when it sends no forward
    work to a later stage (a folded or interleaved one sends it round to stage 0), else on stage 0 the peer stage
    of a forward Receive from a later stage: nothing is upstream of stage 0 but the last stage, whose work an
    interleaved or folded pipeline sends round to stage 0's next chunk."""
    stage = t.get("stage_info").stage
    hops = [c for c in _records(t) if c.category == "pipeline" and c.direction]
    forward = [c for c in hops if c.phase == "forward"]
    if stage is not None and forward and not any(
            c.op == "Send" and (c.peer_stage is None or c.peer_stage > stage) for c in forward):
        return len(hops), stage, f"it sends no forward work to a later stage ({_name(t)})"
    wrap = [c for c in forward if stage == 0 and c.op == "Receive" and c.peer_stage is not None and c.peer_stage > 0]
    if wrap:
        c = wrap[0]
        part = "chunk" if c.chunk is not None else "segment"  # a folded pipeline's hops print `segment` alone
        return len(hops), c.peer_stage, _at(_name(t), c, f"forward Receive from rank {c.peer_rank} on stage "
                                                         f"{c.peer_stage}, into stage 0's {part} {c.segment}")
    return (len(hops), *_one_rank_per_stage(hops, t.rank, stage, _name(t)))


def _one_rank_per_stage(hops: list[CommNode], rank: int | None, stage: int | None, name: str) -> tuple[int | None, str]:
    """The last stage a p2p group of one rank per stage tells (a lazy-inline pipeline's, `(0, 2, 4, 6)`): where the
    rank is the member at its own stage's index and each hop's peer index (`pa.dest_rank`/`pa.src_rank`, an index
    into the group on this path) is its peer stage, the group's k members are the k stages' (None, "" otherwise: a
    group of two says nothing a pair does not, and a stage's several ranks in one group break the index)."""
    if rank is None or stage is None:
        return None, ""
    for c in hops:
        ranks = c.group_ranks
        index = as_int(c.rank_attrs.get("dest_rank" if c.op == "Send" else "src_rank"))
        if not ranks or len(ranks) < 3 or rank not in ranks or ranks.index(rank) != stage or c.peer_stage is None \
                or index != c.peer_stage or index >= len(ranks) or ranks[index] != c.peer_rank:
            return None, ""
    c = hops[0] if hops else None
    if c is None or not c.group_ranks:
        return None, ""
    return len(c.group_ranks) - 1, _at(name, c, f"{c.op} on the group {c.group_ranks} of one rank per stage: rank "
                                                f"{rank} at index {stage} on stage {stage}, rank {c.peer_rank} at index "
                                                f"{c.peer_stage} on stage {c.peer_stage}")


def _chunks_of(t: Any) -> tuple[list[int], bool]:
    """The chunks the rank's stage runs (the order's: `order.stage_chunks`, [] with one), and whether they are a
    folded pipeline's segments (`order.stage_folded`)."""
    return t.get("stage_chunks"), t.get("folded")


def _dims_of(t: Any) -> ModelDims:
    return model_dims(t, t.dump, _name(t), whole=t.get("file_kind") == "pre")


def _rank_job(t: Any) -> RankJob:
    """The `RankJob` of the rank: the facts the passes before decided, put together."""
    layers, where = t.get("job_layers")
    recompute, recompute_where = t.get("job_recompute")
    chunks, folded = t.get("job_chunks")
    hops, last, last_where = t.get("job_hops")
    stage, mp, ep, sp, cp, shard = (t.get(f) for f in _GROUP_FACTS)
    optimizer, accumulation, backward = t.get("job_optimizer"), t.get("job_accumulation"), t.get("job_backward")
    return RankJob(rank=t.rank, file=_name(t), stage=t.get("stage_info").stage, stage_sizes=stage,
                   world=t.get("job_world"), span=t.get("job_span"), mp=mp, ep=ep, sp=sp, cp=cp,
                   micro=t.get("job_micro"), chunks=chunks, folded=folded, layers=layers, layers_where=where,
                   recompute=recompute, dims=t.get("job_dims"), optimizer=optimizer, opt_shard=shard,
                   accumulation=accumulation, training=optimizer.known or accumulation.known or backward,
                   hops=hops, last=last, last_where=last_where, backward=backward, parallel=t.get("file_kind") != "pre",
                   split=t.get("split_done"),
                   recompute_where=recompute_where)


_COMM = ("comm", "silent")
_GROUP_FACTS = ("job_stage_sizes", "job_mp", "job_ep", "job_sp", "job_cp", "job_opt_shard")
# The rank's job, each field decided by one pass over the rank's fact table (appended to `facts.PASSES`): asked
# for once (`ParallelFacts.job`) and read by every command.
JOB_PASSES: tuple[Pass, ...] = (
    Pass("job world", ("job_world",), (*_COMM, "file_kind"), "dump", _world_of),
    Pass("job span", ("job_span",), (*_COMM, "stage_info"), "dump", _span_of),
    Pass("job groups", _GROUP_FACTS, (*_COMM, "strategy", "by_key", "parameters"), "dump", _groups_of),
    Pass("job micro", ("job_micro",), ("micro",), "dump", _micro_of),
    Pass("job layers", ("job_layers",), ("layer", "phase", "parameters"), "dump", _layers_of),
    Pass("job recompute", ("job_recompute",), ("copies", "layer"), "dump", _recompute_of),
    Pass("job optimizer", ("job_optimizer",), ("parameters", "phase"), "dump", _optimizer_of),
    Pass("job accumulation", ("job_accumulation",), ("parameters", *_COMM), "dump", _accumulation_of),
    Pass("job backward", ("job_backward",), (*_COMM, "phase"), "dump", _backward_of),
    Pass("job hops", ("job_hops",), (*_COMM, "stage_info"), "dump", _hops_of),
    Pass("job chunks", ("job_chunks",), ("stage_chunks", "folded"), "dump", _chunks_of),
    Pass("job dims", ("job_dims",), ("file_kind", "strategy", "parameters", "by_key", "phase"), "dump", _dims_of),
    Pass("rank job", ("rank_job",), ("split_done", "job_world", "job_span", *_GROUP_FACTS, "job_micro", "job_layers",
                                     "job_recompute", "job_optimizer", "job_accumulation", "job_backward",
                                     "job_hops", "job_chunks", "job_dims", "stage_info", "file_kind"),
         "dump", _rank_job),
)


def _tensor_parallel(t: Any, c: CommNode, gradients: set[tuple[int, ...]]) -> bool:
    """The collective does tensor-parallel work: a sequence-parallel gather or scatter, the communication of an
    operator splitting a weight (a MatMul's contracted dimension, an embedding's vocabulary: one of its inputs is a
    parameter's value, `_weight_input`, split over ranks), or one of an operator of no weight on other ranks than the
    gradients are reduced over (a vocabulary-parallel loss's maximum and sum). The mean of a loss or a MoE router's
    expert load reduces activations split by batch over the ranks the gradients are reduced over, the data-parallel
    ones (`gradients`): an operator-forward AllReduce, not tensor parallelism (issue 37). Where the operator served
    shows no strategy (a kernel graph) the collective counts."""
    if c.category == "sequence-parallel" or not c.serves or "/%" not in c.serves or c.group_ranks not in gradients:
        return True
    graph, _, key = c.serves.rpartition("/")
    try:
        local = t.get("by_key")[graph]
    except KeyError:  # not a graph of this dump
        return True
    n = local.get(key)
    s = t.column("strategy").get(n) if n is not None else None
    if s is None:
        return True
    splits = _input_splits(s)
    params = t.get("parameters")
    return any(k is None or k > 1 for i, k in enumerate(splits) if _weight_input(n, i, local, params))


def _input_splits(s: Strategy) -> list[int | None]:
    """Into how many pieces each input of an operator is split: the product of its `in_strategy` row, or of the
    device-matrix dimensions its `in_layout` tensor map names (counted from the right, -1 none); None unreadable."""
    out: list[int | None] = []
    if isinstance(s.in_strategy, (tuple, list)):
        for row in s.in_strategy:
            ok = isinstance(row, (tuple, list)) and all(isinstance(x, int) for x in row)
            out.append(prod(row) if ok else None)
        return out
    for layout in s.in_layout if isinstance(s.in_layout, (tuple, list)) else ():
        matrix = layout.get("device_matrix") if isinstance(layout, dict) else None
        tmap = layout.get("tensor_map") if isinstance(layout, dict) else None
        if not isinstance(matrix, (tuple, list)) or not isinstance(tmap, (tuple, list)):
            out.append(None)
            continue
        axes = [a for m in tmap for a in (m if isinstance(m, (tuple, list)) else (m,))]
        ok = all(isinstance(a, int) and -1 <= a < len(matrix) for a in axes)
        out.append(prod([matrix[len(matrix) - 1 - a] for a in axes if a != -1]) if ok else None)
    return out


def _weight_input(n: Any, index: int, local: dict, params: Any) -> bool:
    """Input `index` of `n` is a parameter's value: a header parameter, or a `Load` (which reads a Parameter, not an
    activation: a lazy-inline layer's weights come in as its graph's parameters and are loaded there), through what
    passes a weight's value on (casts, the optimizer-parallel gather of its shard, before autodiff a mirror or
    `_VirtualAssignAdd`)."""
    ref, src = follow_value(n, index, local, _passes_weight_on)
    if src is not None:
        return src.op == "Load"
    return ref is not None and ref.kind != "node" and params.name_of(ref.name) is not None


def _passes_weight_on(n: Any) -> bool:
    return n.op != "Load" and (n.op in WEIGHT_VALUE or n.op in MIRRORS or n.op.startswith("_Virtual"))


def _sequence_split(t: Any, file: str, comm: list[CommNode]) -> Sizes:
    """Context parallelism over the world group (ring attention's Send/Receive or NeighborExchange name their
    peers on `nccl_world_group`: the group says nothing of the ring): the split of the sequence dimension of
    the attention's query in its `in_strategy` (flash_attention_sp_8p: BSH `(2, 2, 2)`, 2)."""
    if not any(c.category == "context-parallel" for c in comm):
        return {}
    from .cost import ATTENTION, SEQUENCE_DIM, attention_layout  # the cost model: not imported by a plain summary

    out: Sizes = {}
    for n, s in t.column("strategy").items():
        if n.op not in ATTENTION or not isinstance(s.in_strategy, (tuple, list)) or not s.in_strategy:
            continue
        dim = SEQUENCE_DIM.get(attention_layout(n))
        first = s.in_strategy[0]
        if dim is not None and isinstance(first, (tuple, list)) and dim < len(first) and isinstance(first[dim], int):
            count, where = out.get(first[dim], (0, f"{file}:{n.line} ({n.op} splits the sequence {first[dim]} ways: "
                                                      f"in_strategy {s.in_strategy[0]})"))
            out[first[dim]] = (count + 1, where)
    return out


@dataclass
class Job:
    """A folder's job (or one file's, as far as it tells), every field an `Evidence`."""

    ranks: list[int | None]  # read
    world_size: Evidence
    pipeline_stages: Evidence
    stages_read: list[int]
    stages_absent: list[int]  # stages of the pipeline no rank read is on
    dp: Evidence
    mp: Evidence
    ep: Evidence
    sp: Evidence
    cp: Evidence
    micro_batches: Evidence
    chunks: Evidence  # model chunks per stage (interleaved) or pipeline segments (folded); 1 without either
    folded: bool  # `chunks` are a folded pipeline's segments (`pipeline_segments`), not interleaved model chunks
    stage_ranks: dict[int, list[int | None]]  # ranks read on each stage (not those of `stage_unknown`)
    stage_layers: dict[int, list[int]]
    stage_layers_where: dict[int, str]
    recompute: dict[int, list[int]]  # stage -> layers with recomputed work
    recompute_layers: Evidence  # every stage's, sorted; unknown in a pass without backward work
    optimizer: Evidence
    optimizer_shard: Evidence  # group size of the optimizer-parallel shards (1: not sharded)
    gradient_accumulation: Evidence
    # the model's and the data's sizes (`model_dims`): what changes the work besides the parallel layout
    global_batch: Evidence  # samples per training step, every micro batch and data-parallel rank
    num_layers: Evidence  # the layers of every stage, when every stage was read
    hidden_size: Evidence
    ffn_size: Evidence
    heads: Evidence  # attention heads
    kv_heads: Evidence  # key-value heads (fewer than the heads: grouped-query attention)
    vocab_size: Evidence
    sequence_length: Evidence
    training: bool | None  # None: no rank's pass is past the pipeline split (nothing says training or not yet)
    notes: list[str] = field(default_factory=list)
    micro_seen: list[int] = field(default_factory=list)  # every count of micro batches a rank read says (JSON: notes)
    # ranks read whose dumps do not decide their stage in a pipelined job (never filed under a stage), and the
    # layers they read
    stage_unknown: list[int | None] = field(default_factory=list)
    stage_unknown_layers: list[int] = field(default_factory=list)

    def folder_stage(self, stage: int | None) -> int | None:
        """The folder's stage of a rank whose dump decides `stage` (None: its dump shows none): stage 0 when no
        rank shows a pipeline (MindSpore's default of one stage, `stage_ranks`), else unknown (`stage_unknown`)."""
        return 0 if stage is None and not self.stage_unknown else stage

    def as_dict(self) -> dict[str, Any]:
        # the ranks of unknown stage only where there are some (optional since version 2 of the summary JSON)
        d = _as_dict(self, skip=("micro_seen",) + (() if self.stage_unknown else ("stage_unknown", "stage_unknown_layers")))
        for k, v in vars(self).items():
            if isinstance(v, Evidence):
                d[k] = v.as_dict()
        d["stage_ranks"] = {str(k): v for k, v in self.stage_ranks.items()}
        d["stage_layers"] = {str(k): v for k, v in self.stage_layers.items()}
        d["stage_layers_where"] = {str(k): v for k, v in self.stage_layers_where.items()}
        d["recompute"] = {str(k): v for k, v in self.recompute.items()}
        return d


def _one(sizes: Sizes, what: str, default: int | None = None, default_why: str = "") -> Evidence:
    """One degree from the group sizes the ranks show: the size most of the nodes use (the others said)."""
    if not sizes:
        return Evidence(default, default_why) if default is not None else _unknown(default_why or f"no {what} group")
    ranked = sorted(sizes.items(), key=lambda kv: (-kv[1][0], kv[0]))
    (size, (count, where)), rest = ranked[0], ranked[1:]
    if rest and rest[0][1][0] == count:
        return _unknown(f"{what} groups of sizes {', '.join(str(k) for k, _ in ranked)}, as many nodes each")
    also = "; also " + ", ".join(f"groups of {k} ({n} nodes)" for k, (n, _) in rest) if rest else ""
    return Evidence(size, f"{where}, {count} nodes{also}")


def _add(into: Sizes, sizes: Sizes) -> None:
    for k, (n, where) in sizes.items():
        into[k] = (into.get(k, (0, where))[0] + n, into.get(k, (0, where))[1])


class JobFold:
    """The job of a folder folded rank by rank as the ranks arrive (`add`), holding sets and the first
    evidence of each value, never the ranks' records: a thousand ranks cost what eight do."""

    def __init__(self) -> None:
        self.ranks: list[int | None] = []
        self.world: Evidence | None = None
        self.span: Evidence | None = None
        self.top_rank: int | None = None
        self.stage_sizes: Sizes = {}
        self.mp: Sizes = {}
        self.ep: Sizes = {}
        self.sp: Sizes = {}
        self.cp: Sizes = {}
        self.opt_shard: Sizes = {}
        self.micro: dict[int, Evidence] = {}
        self.chunks: set[int] = set()
        self.folded = False
        # by stage, None for a rank whose dump does not decide its stage: stage 0 when no rank shows a pipeline,
        # else a stage unknown (`Job.stage_unknown`), never filed under one
        self.stage_ranks: dict[int | None, list[int | None]] = {}
        self.stage_layers: dict[int | None, set[int]] = {}
        self.where: dict[int | None, str] = {}
        self.recompute: dict[int | None, set[int]] = {}
        self.staged = False
        self.optimizer: Evidence | None = None
        self.accumulation: Evidence | None = None
        self.first: RankJob | None = None
        self.training = False
        self.backward = False
        self.parallel = False
        self.split = False
        self.recompute_where = ""
        self.last: Evidence | None = None  # the stage count a rank of the last stage (or stage 0's wrap) tells
        self.last_own = False
        self.dims: dict[str, Evidence] = {}  # ModelDims field -> the first rank's that knows it
        self.per_rank = False  # the data input printed is one data-parallel rank's
        self.layer_weights: tuple = ()  # the lowest layer's 2-D MatMul weights a rank read (`ModelDims.layer_weights`)
        self.attention: tuple = ()  # the 4-D BatchMatMuls the ranks read (`ModelDims.attention`), each shape once

    def add(self, r: RankJob) -> None:
        self.first = self.first or r
        self.ranks.append(r.rank)
        if r.rank is not None:
            self.top_rank = max(r.rank, self.top_rank or 0)
        if self.world is None and r.world.known:
            self.world = r.world
        if self.span is None and r.span.known:
            self.span = r.span
        for mine, theirs in ((self.stage_sizes, r.stage_sizes), (self.mp, r.mp), (self.ep, r.ep), (self.sp, r.sp),
                             (self.cp, r.cp), (self.opt_shard, r.opt_shard)):
            _add(mine, theirs)
        if r.micro.known:
            self.micro.setdefault(r.micro.value, r.micro)
        self.chunks.update(r.chunks)
        self.folded |= r.folded
        self.staged |= r.stage is not None or bool(r.chunks) or r.hops > 0
        if r.last is not None and (self.last is None or r.last == r.stage and not self.last_own):
            self.last_own = r.last == r.stage  # the first rank of the last stage says it, else stage 0's wrap
            self.last = Evidence(r.last + 1, f"rank {r.rank} {'is on' if r.last == r.stage else 'names'} the last stage, "
                                             f"{r.last}: {r.last_where}")
        s = r.stage
        self.stage_ranks.setdefault(s, []).append(r.rank)
        if r.layers:
            self.stage_layers.setdefault(s, set()).update(r.layers)
            self.where.setdefault(s, r.layers_where)
        if r.recompute:
            self.recompute.setdefault(s, set()).update(r.recompute)
        if self.optimizer is None and r.optimizer.known:
            self.optimizer = r.optimizer
        if self.accumulation is None and r.accumulation.known:
            self.accumulation = r.accumulation
        self.training |= r.training
        self.backward |= r.backward
        self.parallel |= r.parallel
        self.split |= r.split
        self.recompute_where = self.recompute_where or r.recompute_where
        for name, seen in vars(r.dims).items():
            if name == "per_rank":
                self.per_rank |= seen
            elif name == "layer_weights":  # the lowest layer's of every rank's
                if seen and (not self.layer_weights or seen[0][0] < self.layer_weights[0][0]):
                    self.layer_weights = seen
            elif name == "attention":
                self.attention += tuple(a for a in seen if all(a[:2] != b[:2] for b in self.attention))
            elif name not in self.dims or (seen[0] is not None and not self.dims[name].known):
                self.dims[name] = Evidence(*seen)

    def job(self) -> Job:
        """The folder's job: `FOLD_PASSES` over what the ranks told, each field decided by one pass, never after."""
        d: dict[str, Any] = {}
        for p in FOLD_PASSES:
            missing = [n for n in p.needs if n not in d]
            if missing:
                raise KeyError(f"fold pass {p.name!r} needs {', '.join(missing)}, which no earlier pass decides")
            found = p.run(self, d)
            for name, value in zip(p.provides, found if len(p.provides) > 1 else (found,)):
                if name in d:
                    raise KeyError(f"{name!r} is decided by two fold passes")
                d[name] = value
        return Job(**{k: v for k, v in d.items() if not k.startswith("_")})

    def _dim(self, name: str) -> Evidence:
        return self.dims.get(name) or _unknown("no rank read")

    def _with_hidden(self, rule: Any, seen: tuple) -> Evidence:
        """A size read beside the hidden size (`model_dims.ffn_size`, `model_dims.heads`, `model_dims.kv_heads`)."""
        hidden = self._dim("hidden")
        return Evidence(*rule(hidden.value, seen)) if hidden.known else _unknown("the hidden size unknown")

    def _batch(self, dp: Evidence, micro: Evidence) -> Evidence:
        """The global batch, and what it is made of: per data-parallel rank and micro batch x dp x micro batches."""
        e = self._dim("global_batch")
        if e.known and self.per_rank:
            e = Evidence(e.value * dp.value, f"{e.where}: one data-parallel rank's, x dp {dp.value}") if dp.known else \
                _unknown(f"{e.where}: one data-parallel rank's; dp unknown")
        if e.known and dp.known and micro.known and e.value % (dp.value * micro.value) == 0:
            return Evidence(e.value, f"{e.where}: {e.value // (dp.value * micro.value)} per data-parallel rank and "
                                     f"micro batch x dp {dp.value} x {micro.value} micro batches")
        return e

    def _layer_count(self, stages: Evidence, absent: list[int]) -> Evidence:
        held = sorted(set().union(*self.stage_layers.values()))
        if not held:
            return _unknown("no parameter of a numbered layer read")
        if not stages.known or absent:
            why = f"stage{'s' if len(absent) > 1 else ''} {', '.join(map(str, absent))} not read" if absent \
                else "the stage count unknown"
            return _unknown(f"layers {_ranges(held)} read; {why}")
        first = self.where[min(self.where, key=lambda s: (s is None, s or 0))]
        return Evidence(len(held), f"layers {_ranges(held)} on the {stages.value} stage(s) read ({first})")


def _rank_words(ranks: list[int | None]) -> str:
    """`rank 4`, `ranks 0, 4` (a rank of no `rank_N` folder: `—`)."""
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join("—" if r is None else str(r) for r in ranks)


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 4] -> `0-2, 4`."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# --- the folder's job, field by field ------------------------------------------------------------

@dataclass(frozen=True)
class FoldPass:
    """One step of `JobFold.job`: decides `provides` (Job fields; `_`-named ones are only read by later passes) from
    the fold and the fields `needs` names, decided by the passes before it."""

    name: str
    provides: tuple[str, ...]
    needs: tuple[str, ...]
    run: Callable[[JobFold, dict[str, Any]], Any]


def _by_stage(f: JobFold, d: dict[str, Any]) -> dict[str, dict[int | None, Any]]:
    """The ranks, layers, where and recomputed layers by stage, the stages in order: a rank of no stage is of stage 0
    when no rank shows a pipeline (MindSpore's default of one stage) past the pipeline split, else of a stage unknown
    (None, last)."""
    def by(values: dict[int | None, Any]) -> dict[int | None, Any]:
        keyed = {(0 if s is None and not f.staged and f.split else s): v for s, v in values.items()}
        return dict(sorted(keyed.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))

    return {"ranks": by(f.stage_ranks), "layers": by(f.stage_layers), "where": by(f.where),
            "recompute": by(f.recompute)}


def _known(by: dict[int | None, Any]) -> dict[int, Any]:
    return {s: v for s, v in by.items() if s is not None}


def _read(f: JobFold, d: dict[str, Any]) -> tuple[list[int | None], list[int], list[int | None], list[str]]:
    ranks = d["_by_stage"]["ranks"]
    notes = ["ranks disagree on the number of micro batches: " + "; ".join(
        f"{m} ({e.where})" for m, e in sorted(f.micro.items()))] if len(f.micro) > 1 else []
    return list(f.ranks), list(_known(ranks)), ranks.get(None, []), notes


def _world_seen(f: JobFold, d: dict[str, Any]) -> Evidence:
    """The world group's size, as a rank's node shows it."""
    return f.world or _unknown("no node uses the world group" + (
        f"; at least {f.top_rank + 1} (rank {f.top_rank} read)" if f.top_rank is not None else ""))


def _stage_size_seen(f: JobFold, d: dict[str, Any]) -> Evidence:
    """Ranks per stage from a pipeline peer, without one the largest group within a stage; more when the folder
    shows more ranks on one stage."""
    top = max(f.stage_sizes, default=None)
    size = f.span or (Evidence(top, f.stage_sizes[top][1]) if top is not None else _unknown("no collective group"))
    read = max((len(v) for v in _known(d["_by_stage"]["ranks"]).values()), default=0)
    if size.known and read > size.value:
        return Evidence(read, f"{read} ranks read on one stage")
    if not size.known and read:
        return _unknown(f"at least {read} (ranks read on one stage); " + size.where)
    return size


def _stage_count(f: JobFold, d: dict[str, Any]) -> Evidence:
    world, size = d["_world_seen"], d["_stage_size_seen"]
    if f.first is None:
        return _unknown("no rank read")
    if not f.staged:
        return Evidence(1, "no pipeline Send/Receive: one stage") if f.split else _unknown(_BEFORE_SPLIT)
    if f.last is not None:
        return f.last
    if world.known and size.known and world.value % size.value == 0:
        return Evidence(world.value // size.value, f"world size {world.value} / {size.value} ranks per stage ({size.where})")
    seen = ", ".join(map(str, d["stages_read"]))
    unknown = d["stage_unknown"]
    of = f"; {_rank_words(unknown)} of unknown stage" if unknown else ""
    return _unknown(f"{'stages ' + seen if seen else 'no stage'} seen{of}; the world size, the ranks per stage and "
                    "the last stage unknown")


def _stage_size(f: JobFold, d: dict[str, Any]) -> Evidence:
    """Ranks per stage: the world over the stages where the two are known and what was seen does not multiply up."""
    world, stages, size = d["_world_seen"], d["pipeline_stages"], d["_stage_size_seen"]
    if stages.known and world.known and stages.value and world.value % stages.value == 0 and \
            (not size.known or size.value * stages.value != world.value):
        return Evidence(world.value // stages.value, f"world size {world.value} / {stages.value} stages")
    return size


def _world(f: JobFold, d: dict[str, Any]) -> Evidence:
    """The world group's size, else ranks per stage x stages in a pipeline."""
    world, stages, size = d["_world_seen"], d["pipeline_stages"], d["_stage_size"]
    if not world.known and f.staged and stages.known and size.known:
        return Evidence(size.value * stages.value, f"{size.value} ranks per stage x {stages.value} stages; {size.where}")
    return world


_BEFORE_SPLIT = "a pass before the pipeline split: no Send/Receive or micro batch inserted yet"


def _why(f: JobFold, text: str) -> str:
    return text if f.parallel else "a pass before the parallel pass: no communication inserted yet"


def _degrees(f: JobFold, d: dict[str, Any]) -> tuple[Evidence, ...]:
    """mp, ep, sp, cp and the optimizer sharding: each the group size most of its nodes use; before the parallel
    pass no group is inserted yet: a degree is unknown, not 1."""
    one = 1 if f.parallel else None
    return (_one(f.mp, "tensor-parallel", one, _why(f, "no tensor-parallel collective")),
            _one(f.ep, "expert-parallel", one, _why(f, "no expert-parallel all-to-all")),
            _one(f.sp, "sequence-parallel", one, _why(f, "no sequence-parallel gather or scatter")),
            _one(f.cp, "context-parallel", one, _why(f, "no context-parallel exchange")),
            _one(f.opt_shard, "optimizer-parallel", one, _why(f, "no optimizer-parallel communication")))


def _dp(f: JobFold, d: dict[str, Any]) -> Evidence:
    """Ranks per stage (without pipeline: the world) over mp x cp: context parallelism splits the sequence over
    ranks of its own; sequence parallelism runs on the tensor-parallel group and expert parallelism within the
    data-parallel ranks: neither takes ranks."""
    mp, cp, size, world = d["mp"], d["cp"], d["_stage_size"], d["world_size"]
    split = mp.value * cp.value if mp.known and cp.known else None
    what = f"mp {mp.value}" + (f" x cp {cp.value}" if cp.value != 1 else "") if split else ""
    if f.staged and size.known and split and size.value % split == 0:
        return Evidence(size.value // split, f"{size.value} ranks per stage / {what}")
    if not f.staged and world.known and split and world.value % split == 0:
        return Evidence(world.value // split, f"world size {world.value} / {what}")
    return _unknown("the ranks per stage, mp or cp unknown")


def _micro_batches(f: JobFold, d: dict[str, Any]) -> tuple[Evidence, list[int]]:
    """The most micro batches a rank runs (ranks that disagree: said in `notes`), and every count read."""
    if f.micro:
        return f.micro[max(f.micro)], sorted(f.micro)
    if not f.staged:
        return (Evidence(1, "no pipeline and no node carries a micro batch (`micro`): the batch at once") if f.split
                else _unknown(_BEFORE_SPLIT)), []
    return _unknown("no node carries a micro batch (`micro`)"), []


def _chunks(f: JobFold, d: dict[str, Any]) -> tuple[Evidence, bool]:
    kind = "segments" if f.folded else "chunks"
    if f.chunks:
        return Evidence(len(f.chunks), f"{kind} {', '.join(map(str, sorted(f.chunks)))}: the `chunk` a stage's "
                                       "work prints"), f.folded
    if not f.split and not f.staged:
        return _unknown(_BEFORE_SPLIT), f.folded
    return Evidence(1, "no stage's work prints two chunks or segments" if f.staged else "no pipeline"), f.folded


def _stages_held(f: JobFold, d: dict[str, Any]) -> tuple[Any, ...]:
    """Per stage read its ranks, layers and where; the stages no rank read is on; the layers of ranks of no stage."""
    stages, by = d["pipeline_stages"], d["_by_stage"]
    known = _known(by["ranks"])
    absent = [s for s in range(stages.value) if s not in known] if stages.known else []
    return (known, {s: sorted(v) for s, v in _known(by["layers"]).items()}, _known(by["where"]), absent,
            sorted(by["layers"].get(None, ())))


def _recompute(f: JobFold, d: dict[str, Any]) -> tuple[dict[int, list[int]], Evidence]:
    layers = sorted({i for v in f.recompute.values() for i in v})
    every = Evidence(layers, f.recompute_where) if layers else \
        Evidence([], "no recomputed copy (`duplicated`) in a pass with backward work") if f.backward else \
        _unknown("no backward work in this pass: recomputed copies come with it")
    return {s: sorted(v) for s, v in _known(d["_by_stage"]["recompute"]).items()}, every


def _training(f: JobFold, d: dict[str, Any]) -> tuple[Evidence, Evidence, bool]:
    first = f.first
    return (f.optimizer or (first.optimizer if first else _unknown("no rank read")),
            f.accumulation or (first.accumulation if first else _unknown("no rank read")),
            f.training or (False if f.split else None))


def _model(f: JobFold, d: dict[str, Any]) -> tuple[Evidence, ...]:
    """The model's and the data's sizes (`model_dims`)."""
    return (f._batch(d["dp"], d["micro_batches"]), f._layer_count(d["pipeline_stages"], d["stages_absent"]),
            f._dim("hidden"), f._with_hidden(ffn_size, f.layer_weights), f._with_hidden(heads, f.attention),
            f._with_hidden(kv_heads, f.attention), f._dim("vocab"), f._dim("sequence"))


FOLD_PASSES: tuple[FoldPass, ...] = (
    FoldPass("by stage", ("_by_stage",), (), _by_stage),
    FoldPass("ranks read", ("ranks", "stages_read", "stage_unknown", "notes"), ("_by_stage",), _read),
    FoldPass("world seen", ("_world_seen",), (), _world_seen),
    FoldPass("stage size seen", ("_stage_size_seen",), ("_by_stage",), _stage_size_seen),
    FoldPass("stage count", ("pipeline_stages",), ("_world_seen", "_stage_size_seen", "stages_read", "stage_unknown"),
             _stage_count),
    FoldPass("ranks per stage", ("_stage_size",), ("_world_seen", "pipeline_stages", "_stage_size_seen"), _stage_size),
    FoldPass("world", ("world_size",), ("_world_seen", "pipeline_stages", "_stage_size"), _world),
    FoldPass("degrees", ("mp", "ep", "sp", "cp", "optimizer_shard"), (), _degrees),
    FoldPass("dp", ("dp",), ("mp", "cp", "_stage_size", "world_size"), _dp),
    FoldPass("micro batches", ("micro_batches", "micro_seen"), (), _micro_batches),
    FoldPass("chunks", ("chunks", "folded"), (), _chunks),
    FoldPass("stages held", ("stage_ranks", "stage_layers", "stage_layers_where", "stages_absent",
                             "stage_unknown_layers"), ("pipeline_stages", "_by_stage"), _stages_held),
    FoldPass("recompute", ("recompute", "recompute_layers"), ("_by_stage",), _recompute),
    FoldPass("training", ("optimizer", "gradient_accumulation", "training"), (), _training),
    FoldPass("model", ("global_batch", "num_layers", "hidden_size", "ffn_size", "heads", "kv_heads", "vocab_size",
                       "sequence_length"), ("dp", "micro_batches", "pipeline_stages", "stages_absent"), _model),
)


def job_of(ranks: Iterable[RankJob]) -> Job:
    """The job of some ranks' evidence (`JobFold` over them)."""
    fold = JobFold()
    for r in ranks:
        fold.add(r)
    return fold.job()


# --- two jobs compared (`irtool diff` says this first, docs/diff.md) --------------------------------

# Fields whose change makes two compilations different parallel configurations of one network: the
# diff then compares them as one logical graph (`irtool.parallel.logical`), not rank with rank.
# The model's and the data's sizes: not the parallel layout, said before it (a FLOPs or weight ratio is theirs first).
MODEL = ("global_batch", "num_layers", "hidden_size", "ffn_size", "heads", "kv_heads", "vocab_size", "sequence_length")
STRUCTURAL = frozenset({*MODEL, "world_size", "dp", "mp", "pipeline_stages", "ep", "sp", "cp", "chunks",
                        "micro_batches", "stage_layers", "recompute_layers", "optimizer_shard"})
# The compared fields, in the order they are said.
_COMPARED = (*MODEL, "world_size", "dp", "mp", "pipeline_stages", "ep", "sp", "cp", "chunks", "micro_batches",
             "stage_layers", "recompute_layers", "optimizer", "optimizer_shard", "gradient_accumulation")


@dataclass(frozen=True)
class JobChange:
    """One field of the job that differs between two compilations, both values known (an unknown is
    never a change). `stage_layers` is per stage (`stage`); there a side without that stage at all
    (fewer pipeline stages) has the value None."""

    field: str  # a Job field name: micro_batches, stage_layers, recompute_layers, optimizer, dp, ...
    old: Any
    new: Any
    old_where: str = ""  # the evidence of each value
    new_where: str = ""
    stage: int | None = None
    # micro batches: every count a side's ranks read when they disagree (its value is then the most, `Job.micro_seen`)
    old_seen: tuple[int, ...] = ()
    new_seen: tuple[int, ...] = ()

    @property
    def structural(self) -> bool:
        # the same most micro batches where only one side's ranks disagree: the same configuration, a rank differs
        # (compared rank with rank, where that rank shows it)
        return self.field in STRUCTURAL and self.old != self.new

    @property
    def model(self) -> bool:
        """A size of the model or its data (`MODEL`), not of the parallel layout."""
        return self.field in MODEL

    def as_dict(self) -> dict[str, Any]:
        seen = {k: list(v) for k, v in (("old_seen", self.old_seen), ("new_seen", self.new_seen)) if v}
        return {"field": self.field, "stage": self.stage, "old": self.old, "new": self.new,
                "old_evidence": self.old_where, "new_evidence": self.new_where, "structural": self.structural,
                "model": self.model, **seen}


def _stage_value(job: Job, stage: int) -> tuple[bool, list[int] | None, str]:
    """(known, layers, evidence) of one stage's layers: its layers when a rank on it was read; None
    when the pipeline has no such stage; unknown when the stage exists and was not read."""
    if stage in job.stage_ranks:
        return True, job.stage_layers.get(stage, []), job.stage_layers_where.get(stage, "")
    if job.pipeline_stages.known and stage >= job.pipeline_stages.value:
        return True, None, f"{job.pipeline_stages.value} pipeline stages ({job.pipeline_stages.where})"
    return False, None, ""


def _layers_known(job: Job) -> set[int] | None:
    """The layers whose recompute the job knows: those of the stages read; None (all) when every stage was read."""
    if job.pipeline_stages.known and not job.stages_absent:
        return None
    return set().union(*job.stage_layers.values())


def job_changes(old: Job, new: Job) -> list[JobChange]:
    """The fields of two jobs that differ, both values known, in the order they are said
    (configuration first: ranks, degrees, micro batches, stages and their layers, recompute, optimizer)."""
    out: list[JobChange] = []
    for name in _COMPARED:
        if name == "stage_layers":
            if old.stage_layers or new.stage_layers:  # a pass that shows what stages hold
                for s in sorted(set(old.stage_ranks) | set(new.stage_ranks)):
                    (ka, a, wa), (kb, b, wb) = _stage_value(old, s), _stage_value(new, s)
                    if ka and kb and a != b:
                        out.append(JobChange(name, a, b, wa, wb, stage=s))
            continue
        ea, eb = getattr(old, name), getattr(new, name)
        a, b = ea.value, eb.value
        if name == "recompute_layers" and ea.known and eb.known:
            # a layer's recompute is known where a stage holding it was read, or where every stage was read (a layer
            # the job does not have is not recomputed): the layers only one side's unread stages may hold are left out
            ka, kb = _layers_known(old), _layers_known(new)
            a = sorted(i for i in a if kb is None or i in kb)
            b = sorted(i for i in b if ka is None or i in ka)
        sa, sb = ((tuple(j.micro_seen) if len(j.micro_seen) > 1 else ()) for j in (old, new)) \
            if name == "micro_batches" else ((), ())
        if ea.known and eb.known and (a, sa) != (b, sb):
            out.append(JobChange(name, a, b, ea.where, eb.where, old_seen=sa, new_seen=sb))
    return out
