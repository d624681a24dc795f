"""Communication records of one dump (docs/parallel.md §2-§8): the `groups` and `communication`
passes of the fact table, with what they need (sizes, peers, what a node serves, exchange pairs,
the peer stage of each Send/Receive: `stage.peer_stages`)."""
from __future__ import annotations

from dataclasses import replace

from ..ir import Node
from .dynamic import VARIABLE_ALL_TO_ALL, sent_elements
from .groups import group_name, group_table
from .links import NodeIndex, param_through, walk_to_strategy
from .peer import global_peer, group_members
from .records import CommNode, FileKind, Group, Strategy
from .rules import EXCHANGES, GATHERS, MIRRORS, P2P
from .scope import attributed_scope
from .sizes import DTYPE_SIZE, Sized, attr_bytes, input_type, type_bytes
from .stage import as_int, peer_stages
from .table import NodeFacts

# Attributes that name ranks: they differ between two ranks of one stage by construction.
RANK_ATTRS = ("dest_rank", "src_rank", "dst_global_rank", "src_global_rank", "send_rank_ids", "recv_rank_ids")


def groups_of(t: NodeFacts) -> dict[str, Group]:
    """The groups the data-moving communication nodes name (§6), members completed from a 2-rank
    group's name where the dump lists none (parallel/peer.py)."""
    silent = t.get("silent")
    nodes = [n for n in t.get("comm_nodes") if n not in silent]
    printed = group_table(nodes, t.rank, [n for n in t.get("comm_nodes") if n in silent])
    return {name: g if g.ranks is not None else replace(g, ranks=group_members(name, t.rank))
            for name, g in printed.items()}


def comm_records(t: NodeFacts) -> dict[Node, CommNode]:
    """The `CommNode` of every communication node (§2-§8), in print order; those moving no data
    (`silent`) see the groups with members from their names, the others the printed members (a
    printed peer on a listed group may be global, parallel/peer.py)."""
    dump, kind = t.dump, t.get("file_kind")
    silent = t.get("silent")
    found = t.get("comm_nodes")
    nodes = [n for n in found if n not in silent]
    printed = group_table(nodes, t.rank, [n for n in found if n in silent])
    index = t.get("node_index")
    strats = {s.node: s for s in t.column("strategy").values()}
    params = {p.name: p for p in dump.params}
    out: dict[Node, CommNode] = {}
    for node in nodes:
        out[node] = global_peer(_record(t, node, printed, kind, strats, index, params), t.rank)
    if silent:
        groups = t.get("groups")
        for node in found:
            if node in silent:
                out[node] = _record(t, node, groups, kind, strats, index, params)
    data = [(n, c) for n, c in out.items() if n not in silent]
    if kind != "pre":
        peer_stages(kind, [c for _, c in data], {c.node: n.primal_attrs for n, c in data if c.direction}, t.rank)
    return {n: out[n] for n in found}  # print order


def _record(t: NodeFacts, node: Node, groups: dict[str, Group], kind: FileKind, strats: dict[str, Strategy],
            index: NodeIndex, params: dict) -> CommNode:
    inst, pa, pr = node.instance_name or "", node.primitive_attrs, node.primal_attrs
    category, rule = t("category", node)
    fwd = t("forward", node)
    shape, dtype, nbytes = _bytes(node, pa, pr, kind, params)
    if nbytes is None and kind == "post":
        nbytes = _sent(t, node, dtype)
    group = group_name(pa)
    c = CommNode(op=node.op, category=category, phase=t("phase", node), group=group,
                 group_ranks=groups[group].ranks if group in groups else None,
                 shape=shape, dtype=dtype, bytes=nbytes, micro=t("micro", node), runs=t("runs", node),
                 bytes_bound=_bound(t, node, dtype) if nbytes is None and kind == "post" else None,
                 reduce_op=pa["op"] if isinstance(pa.get("op"), str) else None,
                 scope=node.scope or "", rule=rule, instance=inst or None, node=node.uid, line=node.line,
                 rank_attrs={k: pa[k] for k in RANK_ATTRS if k in pa})
    if c.group_ranks is not None and len(c.group_ranks) == 1 and node.op not in P2P | EXCHANGES:
        c.bytes, c.bytes_bound = 0, None  # a collective of one rank moves nothing (its group decided so: §6)
    _p2p(t, c, node, pa, pr, kind)
    fwd_comm = fwd if fwd is not None and t("kind", fwd) == "communication" else None
    _serves(c, node, pa, pr, index, fwd_comm)
    if c.serves_op is not None and c.serves in strats:
        c.serves_strategy = strats[c.serves].shown
    c.cell_scope = attributed_scope(c.scope, fwd_comm.scope if fwd_comm is not None else None)
    return c


def _bytes(node: Node, pa: dict, pr: dict, kind: FileKind, params: dict) -> Sized:
    """(shape, dtype, bytes) per docs/parallel.md §5."""
    op = node.op
    if op in MIRRORS:
        name = pa.get("mirror_user_id", pr.get("mirror_user_id"))
        p = params.get(name) if isinstance(name, str) else None
        return type_bytes(p.type if p else None)
    if kind == "pre":
        return None, None, None
    if op in ("Send", "Receive"):
        a = attr_bytes(pa)
        if a is not None:
            return a
    if kind == "spe":
        return None, None, None
    if op in GATHERS or op == "Receive":
        return type_bytes(node.output_type)
    if op in EXCHANGES:
        return type_bytes(input_type(node, 0), tuple_sum=True)
    return type_bytes(input_type(node, 0))


def _sent(t: NodeFacts, node: Node, dtype: str | None) -> int | None:
    """The bytes an all-to-all of variable size sends when its input prints `-1` but is a reshape of a
    tensor of known size (§5)."""
    if node.op not in VARIABLE_ALL_TO_ALL or dtype not in DTYPE_SIZE:
        return None
    n = sent_elements(t, node)
    return None if n is None else n * DTYPE_SIZE[dtype]


def _bound(t: NodeFacts, node: Node, dtype: str | None) -> int | None:
    """At most how many bytes an all-to-all of variable size sends when what it sends is dynamic (§5):
    the rows it can hold (`dynamic.Rows.bound`) times its `block_size` (elements per row)."""
    if node.op not in VARIABLE_ALL_TO_ALL or dtype not in DTYPE_SIZE:
        return None
    rows = t("rows", node)
    block = node.scalar_attr("block_size")
    block = block if isinstance(block, int) and block > 0 else 1
    return None if rows is None else rows.bound * block * DTYPE_SIZE[dtype]


def _p2p(t: NodeFacts, c: CommNode, node: Node, pa: dict, pr: dict, kind: FileKind) -> None:
    """Direction, peer global rank, tag, chunk and segment of a Send/Receive (§7; its peer stage: `peer_stages`)."""
    if c.op not in ("Send", "Receive"):
        return
    c.direction = "send" if c.op == "Send" else "receive"
    c.sr_tag = as_int(pa.get("sr_tag"))
    if c.op == "Send":
        peer = pa.get("dst_global_rank", pa.get("dest_rank") if "dst_global_rank" not in pa else None)
    else:
        peer = pa.get("src_global_rank", pa.get("src_rank") if "src_global_rank" not in pa else None)
    c.peer_rank = as_int(peer)
    c.segment = t("chunk", node)
    c.chunk = t("printed_chunk", node)


def _accumulated(node: Node, index: NodeIndex) -> str | None:
    """The accumulation buffer a gradient is added into: optimizer level 2/3 reduce-scatters each micro step's gradient
    and adds it to its shard, `AssignAdd(%para_accu_grads.w, ReduceScatter(...))` (R3a), naming no parameter itself;
    in a lazy-inline graph the buffer comes in ordered, `AssignAdd(Depend(%para_▸accu_grads.w, ...), ...)`."""
    return next((p.lstrip("▸") for u in index.users(node) if u.op == "AssignAdd" and (p := param_through(u, index))),
                None)


def _serves(c: CommNode, node: Node, pa: dict, pr: dict, index: NodeIndex, fwd: Node | None) -> None:
    """The operator or parameter the communication is for (§8)."""
    param = pa.get("mirror_user_id", pr.get("mirror_user_id"))
    if c.category in ("gradient-aggregation", "optimizer-parallel"):
        c.parameter = param if isinstance(param, str) else param_through(node, index) or _accumulated(node, index)
        if c.parameter and c.parameter.startswith("accu_grads."):
            c.parameter = c.parameter[len("accu_grads."):]
        c.serves = c.parameter
        return
    if c.redistributes and c.phase != "backward":
        target = walk_to_strategy(node, index)
    elif c.op == "Receive":
        target = walk_to_strategy(node, index, through_all=True)
    else:
        target = index.producer(fwd if fwd is not None else node)
    if target is not None:
        c.serves, c.serves_op = target.uid, target.op
