"""Parallel semantics of a dump: communication nodes, their category and cost, strategies, stage.

Rules are documented in docs/parallel.md (section numbers in comments refer to it).
"""
from __future__ import annotations

import re
from collections import Counter, deque
from dataclasses import dataclass, field, fields
from typing import Any

from .model import Dump, Node, TypeInfo, Warning_
from .values import parse_value

# Collective and point-to-point primitives, and the virtual operators that become communication.
COMM_OPS = frozenset({
    "AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "AllToAll", "AlltoAllV", "AllToAllv", "AllToAllV",
    "AlltoAllVC", "AllGatherV", "ReduceScatterV", "Broadcast", "Send", "Receive", "NeighborExchange",
    "NeighborExchangeV2", "CollectivePermute", "BatchISendIRecv", "Reduce", "Barrier",
    "InnerCommAllReduce", "InnerCommAllGather", "InnerCommReduceScatter", "InnerCommIrecv", "InnerCommIsend",
    "_MirrorOperator", "_MirrorMicroStepOperator", "_MirrorMiniStepOperator",
    "_MicroStepAllGather", "_MiniStepAllGather", "_HostAllGather", "_HostReduceScatter",
})

CATEGORIES = ("redistribution", "operator-forward", "gradient-aggregation", "optimizer-parallel",
              "pipeline", "other")
PHASES = ("forward", "backward", "recompute", "optimizer")

MIRRORS = frozenset({"_MirrorOperator", "_MirrorMicroStepOperator", "_MirrorMiniStepOperator"})
STEP_GATHERS = frozenset({"_MicroStepAllGather", "_MiniStepAllGather"})
P2P = frozenset({"Send", "Receive", "BatchISendIRecv", "CollectivePermute", "InnerCommIsend", "InnerCommIrecv"})
GATHERS = frozenset({"AllGather", "AllGatherV", "_HostAllGather", "InnerCommAllGather"}) | STEP_GATHERS
EXCHANGES = frozenset({"NeighborExchange", "NeighborExchangeV2", "BatchISendIRecv", "CollectivePermute"})
PIPE_KEYS = frozenset({"pipeline_begin", "pipeline_end", "micro", "stage", "chunk", "src_rank", "dest_rank"})

DTYPE_SIZE = {"Float32": 4, "Int32": 4, "UInt32": 4, "Float16": 2, "BFloat16": 2, "Int16": 2, "UInt16": 2,
              "Float64": 8, "Int64": 8, "UInt64": 8, "Int8": 1, "UInt8": 1, "Bool": 1,
              "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "F64": 8, "I64": 8, "U64": 8,
              "I8": 1, "U8": 1}
SHORT_DTYPE = {"F32": "Float32", "F16": "Float16", "BF16": "BFloat16", "F64": "Float64", "I32": "Int32",
               "I64": "Int64", "I16": "Int16", "I8": "Int8", "U8": "UInt8", "U32": "UInt32", "U64": "UInt64"}

# Passes before validate: types are logical/stale (docs/parallel.md §1).
PRE_SHARDING_PASSES = ("bootstrap", "pipeline_split", "merge_send_receive", "step_parallel_begin")
STEP_PARALLEL_END = "step_parallel_end"
_REPLACE_GRAPH = re.compile(r"^\d+[A-Za-z]+\d+$")
_OPTIMIZER_SCOPE = re.compile(r"(^|/)(optimizer|optim)[-_]|Optimizer")


def is_comm(node: Node) -> bool:
    """True for a communication node (see COMM_OPS)."""
    return node.op in COMM_OPS


@dataclass
class CommNode:
    """One communication node with what irtool derived about it."""

    node: Node = field(repr=False)
    op: str
    category: str
    phase: str  # forward | backward | recompute | optimizer
    group: str | None = None
    group_ranks: list[int] | None = None
    shape: Any = None
    dtype: str | None = None
    bytes: int | None = None
    micro: int | None = None
    peer_stage: int | None = None
    scope: str = ""
    serves: str | None = None  # the operator (uid) or parameter the communication is for
    rule: str = ""  # the docs/parallel.md rule that decided the category
    instance: str | None = None
    direction: str | None = None  # "send" | "receive" for point-to-point
    peer_rank: int | None = None  # global rank of the p2p peer
    parameter: str | None = None  # mirror_user_id for gradient aggregation / optimizer parallel
    serves_op: str | None = None  # operator of `serves` when it is a node

    def as_dict(self) -> dict[str, Any]:
        d = _shallow(self)
        d["node"] = self.node.uid
        d["line"] = self.node.line
        if isinstance(d["shape"], tuple):
            d["shape"] = _listify(d["shape"])
        return d


def _shallow(obj: Any) -> dict[str, Any]:
    """Fields of a dataclass without `node`; values are immutable parsed data, so no deep copy
    (dataclasses.asdict deep-copies, which costs seconds on thousands of strategies)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj) if f.name != "node"}


@dataclass
class Strategy:
    """An operator carrying a sharding strategy or layout."""

    node: Node = field(repr=False)
    op: str
    scope: str
    in_strategy: Any = None
    out_strategy: Any = None
    in_layout: Any = None
    out_layout: Any = None
    gen_strategy: Any = None

    def as_dict(self) -> dict[str, Any]:
        d = _shallow(self)
        d["node"] = self.node.uid
        d["name"] = self.node.name
        d["line"] = self.node.line
        for key in ("in_strategy", "out_strategy", "gen_strategy", "in_layout", "out_layout"):
            d[key] = _listify(d[key])
        return d


@dataclass
class StageInfo:
    """How the stage was inferred (docs/parallel.md §7)."""

    stage: int | None
    votes: dict[int, int]
    how: list[str]
    chunks: list[int]
    peer_stages: list[int]


def _listify(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_listify(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _listify(x) for k, x in v.items()}
    if v is None or isinstance(v, (int, float, bool, str)):
        return v
    return str(v)


# ---------------------------------------------------------------------------------------------
# cache


def _cache(dump: Dump) -> dict[str, Any]:
    cache = dump.__dict__.get("_parallel_cache")
    if cache is None:
        cache = {}
        dump.__dict__["_parallel_cache"] = cache
    return cache


def pass_name(path: str) -> str:
    """The pass part of a dump file name: `19_validate_0078.ir.xz` -> `validate`."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    for ext in (".xz", ".gz", ".bz2", ".ir"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    base = re.sub(r"^\d+_", "", base)
    return re.sub(r"_\d+$", "", base)


def _file_kind(dump: Dump) -> str:
    """`pre` (before step_parallel_end), `spe` (step_parallel_end) or `post` (validate and later)."""
    name = pass_name(dump.path or "")
    if name == STEP_PARALLEL_END:
        return "spe"
    if any(p in name for p in PRE_SHARDING_PASSES):
        return "pre"
    return "post"


# ---------------------------------------------------------------------------------------------
# small helpers


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
        return int(v)
    return None


def _elements(shape: Any) -> int | None:
    if shape is None:
        return None
    if isinstance(shape, int):
        return shape
    n = 1
    for d in shape:
        if not isinstance(d, int) or d < 0:
            return None
        n *= d
    return n


def type_bytes(t: TypeInfo | None, tuple_sum: bool = False) -> tuple[Any, str | None, int | None]:
    """(shape, dtype, bytes) of one printed type; a tuple type sums its elements when `tuple_sum`."""
    if t is None or t.dtype not in DTYPE_SIZE:
        return (getattr(t, "shape", None), getattr(t, "dtype", None), None)
    size = DTYPE_SIZE[t.dtype]
    if t.kind == "Tuple":
        if not tuple_sum or not isinstance(t.shape, tuple):
            return t.shape, t.dtype, None
        counts = [_elements(s) for s in t.shape]
        if any(c is None for c in counts):
            return t.shape, t.dtype, None
        return t.shape, t.dtype, sum(counts) * size  # type: ignore[arg-type]
    shape = t.shape if t.shape is not None else ()
    n = _elements(shape)
    return shape, t.dtype, None if n is None else n * size


def _attr_bytes(pa: dict[str, Any]) -> tuple[Any, str | None, int | None] | None:
    """Send/Receive `shape`/`dtype` primitive attributes (`dtype: F32` or `Tensor(F32)`)."""
    if "shape" not in pa or "dtype" not in pa:
        return None
    m = re.search(r"\b(BF16|F16|F32|F64|I8|I16|I32|I64|U8|U32|U64|Float32|Float16|BFloat16|Int32|Int64)\b",
                  str(pa["dtype"]))
    shape = pa["shape"]
    if not m or not isinstance(shape, (list, tuple)):
        return None
    dt = m.group(1)
    n = _elements(tuple(shape))
    return tuple(shape), SHORT_DTYPE.get(dt, dt), None if n is None else n * DTYPE_SIZE[dt]


def _param_of(node: Node) -> str | None:
    ins = node.inputs
    ref = ins[0].ref if ins else None
    if ref is None or ref.kind not in ("param", "free"):
        return None
    name = ref.name.rstrip(")").split(":")[-1].lstrip("%")
    return name.split("_", 1)[1] if name.startswith("para") and "_" in name else name


# ---------------------------------------------------------------------------------------------
# classification (§2, §3)


def _classify(node: Node, inst: str, pa: dict, pr: dict) -> tuple[str, str]:
    """(category, rule) from the node's own evidence."""
    op, scope = node.op, node.scope or ""
    fwd_name = str(pr.get("forward_node_name", ""))
    if op in MIRRORS:
        return "gradient-aggregation", "R1"
    if op in STEP_GATHERS:
        return "optimizer-parallel", "R2"
    if "parallel_optimizer" in inst:
        return "optimizer-parallel", "R3"
    if inst.startswith("grad_mirror") or fwd_name.startswith("_Mirror"):
        return "gradient-aggregation", "R4"
    if op in P2P:
        return ("pipeline", "R5") if PIPE_KEYS & set(pr) else ("other", "R5b")
    core = re.sub(r"^grad_?", "", inst)
    if core.startswith("redistribution_op"):
        return "redistribution", "R6"
    if core.startswith("forward_op"):
        return "operator-forward", "R7"
    if _REPLACE_GRAPH.match(inst):
        return "operator-forward", "R7b"
    if re.search(r"grad_reducer|GradReducer", scope) or "tensors_allreduce" in node.graph:
        return "gradient-aggregation", "R8"
    if op in ("NeighborExchange", "NeighborExchangeV2") and (
            "FLASH_INDEX" in pa or fwd_name.startswith("NeighborExchange")):
        return "operator-forward", "R9"
    return "other", "R10"


def _phase(node: Node, inst: str, pr: dict, ca: dict, category: str, rule: str) -> str:
    scope = node.scope or ""
    if rule in ("R1", "R4", "R8") or category == "gradient-aggregation":
        return "backward"
    if rule == "R2":
        return "forward"
    if scope.startswith("Gradients/") or "forward_unique_id" in pr or "forward_node_name" in pr \
            or inst.startswith("grad"):
        return "backward"
    if ca.get("duplicated") is True:
        return "recompute"
    if _OPTIMIZER_SCOPE.search(scope):
        return "optimizer"
    return "forward"


# ---------------------------------------------------------------------------------------------
# groups (§6)


def _ranks_of(pa: dict[str, Any]) -> list[int] | None:
    for key in ("group_rank_ids", "rank_list"):
        v = pa.get(key)
        if isinstance(v, (tuple, list)) and all(isinstance(x, int) for x in v):
            return list(v)
        if isinstance(v, int):
            return [v]
    v = pa.get("group_ranks")
    if isinstance(v, str) and re.fullmatch(r"\d+(-\d+)*", v):
        return [int(x) for x in v.split("-")]
    return None


def group_table(dump: Dump) -> dict[str, dict[str, Any]]:
    """Group name -> {"ranks": [...] or None, "size": int or None, "comm_nodes": n}."""
    cache = _cache(dump)
    if "groups" not in cache:
        comm_nodes(dump)
    return cache["groups"]


def _resolve_groups(prim_attrs: list[dict]) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for pa in prim_attrs:
        name = pa.get("group")
        if not isinstance(name, str):
            continue
        e = table.setdefault(name, {"ranks": None, "size": None, "comm_nodes": 0})
        e["comm_nodes"] += 1
        ranks = _ranks_of(pa)
        if ranks is not None and e["ranks"] is None:
            e["ranks"] = ranks
    for name, e in table.items():
        m = re.match(r"^(\d+)-", name)
        e["size"] = len(e["ranks"]) if e["ranks"] else (int(m.group(1)) if m else None)
    return table


# ---------------------------------------------------------------------------------------------
# main entry


def comm_nodes(dump: Dump) -> list[CommNode]:
    """Every communication node of the dump, classified (cached per dump)."""
    cache = _cache(dump)
    if "comm" in cache:
        return cache["comm"]
    kind = _file_kind(dump)
    nodes = [n for n in dump.nodes() if n.op in COMM_OPS]
    attrs = [(n.instance_name or "", n.primitive_attrs, n.cnode_attrs, n.primal_attrs) for n in nodes]
    for n in nodes:  # never classify from attributes the grammar could not read without saying so
        if "error" in n.attrs:
            dump.warnings.append(Warning_(n.line, f"attributes of {n.key} kept as raw text "
                                                  f"({n.attrs['error']}): its classification may be incomplete"))
    cache["groups"] = groups = _resolve_groups([a[1] for a in attrs])
    by_uid = {str(a[3]["unique_id"]): i for i, a in enumerate(attrs) if "unique_id" in a[3]}
    own = [_classify(n, a[0], a[1], a[3]) for n, a in zip(nodes, attrs)]
    index = _Index(dump, nodes)
    params = {p.name: p for p in dump.params}
    out: list[CommNode] = []
    for i, (node, (inst, pa, ca, pr)) in enumerate(zip(nodes, attrs)):
        category, rule = own[i]
        fwd = by_uid.get(str(pr.get("forward_unique_id"))) if "forward_unique_id" in pr else None
        if fwd is not None and fwd != i and own[fwd][0] != category:
            # §2: the forward counterpart's category wins; a grad_mirror name on a p2p counterpart contradicts itself
            category, rule = ("other", "R10-contradiction") if rule == "R4" else (own[fwd][0], own[fwd][1] + "-inherited")
        phase = _phase(node, inst, pr, ca, category, rule)
        shape, dtype, nbytes = _bytes(node, pa, pr, kind, params)
        group = pa.get("group") if isinstance(pa.get("group"), str) else None
        c = CommNode(node=node, op=node.op, category=category, phase=phase, group=group,
                     group_ranks=groups[group]["ranks"] if group in groups else None,
                     shape=shape, dtype=dtype, bytes=nbytes, micro=_int(pr.get("micro", ca.get("micro"))),
                     scope=node.scope or "", rule=rule, instance=inst or None)
        _p2p(c, pa, pr, ca, kind)
        _serves(c, pa, pr, index, nodes[fwd] if fwd is not None else None)
        out.append(c)
    cache["comm"] = out
    return out


def _bytes(node: Node, pa: dict, pr: dict, kind: str, params: dict) -> tuple[Any, str | None, int | None]:
    """(shape, dtype, bytes) per docs/parallel.md §5."""
    op = node.op
    if op in MIRRORS:
        name = pa.get("mirror_user_id", pr.get("mirror_user_id"))
        p = params.get(name) if isinstance(name, str) else None
        return type_bytes(p.type if p else None)
    if kind == "pre":
        return None, None, None
    if op in ("Send", "Receive"):
        a = _attr_bytes(pa)
        if a is not None:
            return a
    if kind == "spe":
        return None, None, None
    ins, out = node.input_types, node.output_type
    if op in GATHERS or op == "Receive":
        return type_bytes(out)
    if op in EXCHANGES:
        return type_bytes(ins[0] if ins else None, tuple_sum=True)
    return type_bytes(ins[0] if ins else None)


def _p2p(c: CommNode, pa: dict, pr: dict, ca: dict, kind: str) -> None:
    """Direction, peer global rank and peer stage of a Send/Receive (§7)."""
    if c.op not in ("Send", "Receive"):
        return
    c.direction = "send" if c.op == "Send" else "receive"
    if c.op == "Send":
        peer = pa.get("dst_global_rank", pa.get("dest_rank") if "dst_global_rank" not in pa else None)
    else:
        peer = pa.get("src_global_rank", pa.get("src_rank") if "src_global_rank" not in pa else None)
    c.peer_rank = _int(peer)
    if kind == "pre":
        return
    if "stage" in pr:
        own = _int(pr["stage"])
        if own is not None:
            downstream = (c.op == "Send") != (c.phase == "backward")
            c.peer_stage = own + 1 if downstream else own - 1
    elif "dest_rank" in pr:
        c.peer_stage = _int(pr["dest_rank"])
    elif "src_rank" in pr:
        c.peer_stage = _int(pr["src_rank"])


_NODE_REF = re.compile(r"%\d+(?![\w.])")


class _Index:
    """Nodes by key, and users by key (built on demand), for the subgraphs holding communication."""

    def __init__(self, dump: Dump, comm: list[Node]) -> None:
        graphs = {n.graph for n in comm}
        self.nodes = {g.name: {n.key: n for n in g.nodes} for g in dump.subgraphs if g.name in graphs}
        self._users: dict[str, dict[str, list[Node]]] = {}

    def producer(self, node: Node) -> Node | None:
        ins = node.inputs
        ref = ins[0].ref if ins else None
        if ref is None or ref.kind != "node":
            return None
        return self.nodes.get(node.graph, {}).get(ref.name)

    def users(self, node: Node) -> list[Node]:
        if node.graph not in self._users:
            users: dict[str, list[Node]] = {}
            # A regex over the text after the callee finds the `%N` a node uses far faster than
            # splitting the arguments of every node; a `%N` inside a string attribute would only
            # add a spurious user, and MindSpore prints none.
            for n in self.nodes.get(node.graph, {}).values():
                for key in dict.fromkeys(_NODE_REF.findall(n.text, n.args_start)):
                    users.setdefault(key, []).append(n)
            self._users[node.graph] = users
        return self._users[node.graph].get(node.key, [])


def _has_strategy(node: Node) -> bool:
    return "in_strategy" in node.text or "in_layout" in node.text


def _serves(c: CommNode, pa: dict, pr: dict, index: _Index, fwd: Node | None) -> None:
    """The operator or parameter the communication is for (§8)."""
    node = c.node
    param = pa.get("mirror_user_id", pr.get("mirror_user_id"))
    if c.category in ("gradient-aggregation", "optimizer-parallel"):
        c.parameter = param if isinstance(param, str) else _param_of(node)
        if c.parameter and c.parameter.startswith("accu_grads."):
            c.parameter = c.parameter[len("accu_grads."):]
        c.serves = c.parameter
        return
    if c.category == "redistribution" and c.phase != "backward":
        target = _walk_to_strategy(node, index)
    elif c.op == "Receive":
        target = _walk_to_strategy(node, index, through_all=True)
    else:
        target = index.producer(fwd if fwd is not None else node)
    if target is not None:
        c.serves, c.serves_op = target.uid, target.op


def _walk_to_strategy(node: Node, index: _Index, through_all: bool = False) -> Node | None:
    """First user (breadth first, through redistribution chains) that has a strategy; else the first user."""
    seen = {node.key}
    queue = deque([node])
    first: Node | None = None
    steps = 0
    while queue and steps < 64:
        steps += 1
        for u in index.users(queue.popleft()):
            if u.key in seen:
                continue
            seen.add(u.key)
            first = first or u
            if _has_strategy(u) and u.op not in COMM_OPS:
                return u
            if through_all or "redistribution_op" in u.text or u.op in ("TupleGetItem", "Depend", "Reshape"):
                queue.append(u)
    return first


# ---------------------------------------------------------------------------------------------
# strategies (§9)

_STRATEGY_KEYS = ("in_strategy", "out_strategy", "gen_strategy", "in_layout", "out_layout")


def format_strategy(value: Any) -> str:
    """`((2, 1), (1, 4))` -> `(2,1)(1,4)`, as MindInsight shows strategies (lists from JSON too);
    empty string for no strategy."""
    if value is None:
        return ""
    if isinstance(value, (tuple, list)):
        if value and all(isinstance(v, (tuple, list)) for v in value):
            return "".join("(" + ",".join(str(x) for x in v) + ")" for v in value)
        return "(" + ",".join(str(x) for x in value) + ")"
    return str(value).replace(" ", "")


def _extract(text: str, key: str) -> Any:
    """Fast path: the bracketed value after the last `key: `, found by bracket matching and read
    with the grammar's `value` rule (cached: strategies recur); `...` when that fails."""
    k = text.rfind(key + ": ")
    if k < 0:
        return None
    i = k + len(key) + 2
    if i >= len(text) or text[i] not in "([":
        return ...
    depth, j = 0, i
    while j < len(text):
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    try:
        return parse_value(text[i : j + 1])
    except ValueError:
        return ...


def strategies(dump: Dump) -> list[Strategy]:
    """Every operator with a strategy or layout (`_Virtual*` bookkeeping operators excluded)."""
    cache = _cache(dump)
    if "strategies" in cache:
        return cache["strategies"]
    out: list[Strategy] = []
    for node in dump.nodes():
        text = node.text
        if ("in_strategy" not in text and "in_layout" not in text) or node.op.startswith("_Virtual"):
            continue
        values: dict[str, Any] = {}
        for key in _STRATEGY_KEYS:
            if key + ": " not in text:
                continue
            v = _extract(text, key)
            if v is ...:  # layouts (unquoted names, true/false): the full attribute parser
                v = node.attr(key)
            values[key] = v
        out.append(Strategy(node=node, op=node.op, scope=node.scope or "", **values))
    cache["strategies"] = out
    return out


# ---------------------------------------------------------------------------------------------
# stage (§7)


def stage_info(dump: Dump) -> StageInfo:
    """Stage votes of the pipeline Send/Receive nodes of a step_parallel_end-or-later dump."""
    cache = _cache(dump)
    if "stage" in cache:
        return cache["stage"]
    votes: Counter = Counter()
    how: set[str] = set()
    chunks: set[int] = set()
    peers: set[int] = set()
    if _file_kind(dump) != "pre":
        for c in comm_nodes(dump):
            if c.op not in ("Send", "Receive") or c.category != "pipeline":
                continue
            pr = c.node.primal_attrs
            if "stage" in pr and _int(pr["stage"]) is not None:
                votes[_int(pr["stage"])] += 1
                how.add("primal stage")
                if _int(pr.get("chunk")) is not None:
                    chunks.add(_int(pr["chunk"]))  # type: ignore[arg-type]
            else:
                if _int(pr.get("dest_rank")) is not None:
                    votes[_int(pr["dest_rank"]) - 1] += 1  # type: ignore[operator]
                    how.add("primal dest_rank-1")
                if _int(pr.get("src_rank")) is not None:
                    votes[_int(pr["src_rank"]) + 1] += 1  # type: ignore[operator]
                    how.add("primal src_rank+1")
            if c.peer_stage is not None:
                peers.add(c.peer_stage)
    stage = next(iter(votes)) if len(votes) == 1 else None
    info = StageInfo(stage=stage, votes=dict(votes), how=sorted(how), chunks=sorted(chunks), peer_stages=sorted(peers))
    cache["stage"] = info
    return info


def infer_stage(dump: Dump) -> int | None:
    """This rank's pipeline stage, or None when the dump has no pipeline communication (or the votes disagree)."""
    return stage_info(dump).stage
