"""`analyze(dump) -> ParallelFacts`: communication nodes, groups, strategies and stage of one dump.

Rules are documented in docs/parallel.md (section numbers in comments refer to it). The dump is
only read: facts and warnings are returned, and the caller keeps them as long as it needs them.
"""
from __future__ import annotations

from ..ir import Dump, DumpWarning, Node, pass_name
from .chains import redistribution_chains
from .groups import group_name, group_table
from .links import NodeIndex, param_of, walk_to_strategy
from .records import CommNode, FileKind, Group, ParallelFacts
from .rules import COMM_OPS, EXCHANGES, GATHERS, MIRRORS, classify, file_kind, phase
from .sizes import Sized, attr_bytes, type_bytes
from .stage import as_int, stage_info
from .strategies import strategies

# Attributes that name ranks: they differ between two ranks of one stage by construction.
RANK_ATTRS = ("dest_rank", "src_rank", "dst_global_rank", "src_global_rank", "send_rank_ids", "recv_rank_ids")


def analyze(dump: Dump) -> ParallelFacts:
    """The parallel facts of `dump` (docs/parallel.md)."""
    kind = file_kind(pass_name(dump.path or ""))
    nodes = [n for n in dump.nodes() if n.op in COMM_OPS]
    groups = group_table(n.primitive_attrs for n in nodes)
    comm = comm_nodes(dump, nodes, groups, kind)
    warnings = [DumpWarning(n.line, f"attributes of {n.key} kept as raw text ({n.unreadable_attrs.reason}): "
                                    "its classification may be incomplete")
                for n in nodes if n.unreadable_attrs is not None]
    stage = stage_info(kind, comm, {n.uid: n.primal_attrs for n in nodes})
    strats = strategies(dump)
    return ParallelFacts(kind=kind, comm=comm, groups=groups, strategies=strats, stage_info=stage,
                         warnings=warnings, chains=redistribution_chains(dump, comm, groups, strats, kind))


def comm_nodes(dump: Dump, nodes: list[Node], groups: dict[str, Group], kind: FileKind) -> list[CommNode]:
    """The communication `nodes` of `dump`, classified."""
    attrs = [(n.instance_name or "", n.primitive_attrs, n.cnode_attrs, n.primal_attrs) for n in nodes]
    by_uid = {str(a[3]["unique_id"]): i for i, a in enumerate(attrs) if "unique_id" in a[3]}
    own = [classify(n, a[0], a[1], a[3]) for n, a in zip(nodes, attrs)]
    index = NodeIndex(dump, nodes)
    params = {p.name: p for p in dump.params}
    out: list[CommNode] = []
    for i, (node, (inst, pa, ca, pr)) in enumerate(zip(nodes, attrs)):
        category, rule = own[i]
        fwd = by_uid.get(str(pr.get("forward_unique_id"))) if "forward_unique_id" in pr else None
        if fwd is not None and fwd != i and own[fwd][0] != category:
            # §2: the forward counterpart's category wins; a grad_mirror name on a p2p counterpart contradicts itself
            category, rule = ("other", "R10-contradiction") if rule == "R4" else (own[fwd][0], own[fwd][1] + "-inherited")
        ph = phase(node, inst, pr, ca, category, rule)
        shape, dtype, nbytes = _bytes(node, pa, pr, kind, params)
        group = group_name(pa)
        c = CommNode(op=node.op, category=category, phase=ph, group=group,
                     group_ranks=groups[group].ranks if group in groups else None,
                     shape=shape, dtype=dtype, bytes=nbytes, micro=as_int(pr.get("micro", ca.get("micro"))),
                     reduce_op=pa["op"] if isinstance(pa.get("op"), str) else None,
                     scope=node.scope or "", rule=rule, instance=inst or None, node=node.uid, line=node.line,
                     rank_attrs={k: pa[k] for k in RANK_ATTRS if k in pa})
        _p2p(c, pa, pr, kind)
        _serves(c, node, pa, pr, index, nodes[fwd] if fwd is not None else None)
        out.append(c)
    return out


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
    ins, out = node.input_types, node.output_type
    if op in GATHERS or op == "Receive":
        return type_bytes(out)
    if op in EXCHANGES:
        return type_bytes(ins[0] if ins else None, tuple_sum=True)
    return type_bytes(ins[0] if ins else None)


def _p2p(c: CommNode, pa: dict, pr: dict, kind: FileKind) -> None:
    """Direction, peer global rank and peer stage of a Send/Receive (§7)."""
    if c.op not in ("Send", "Receive"):
        return
    c.direction = "send" if c.op == "Send" else "receive"
    c.sr_tag = as_int(pa.get("sr_tag"))
    if c.op == "Send":
        peer = pa.get("dst_global_rank", pa.get("dest_rank") if "dst_global_rank" not in pa else None)
    else:
        peer = pa.get("src_global_rank", pa.get("src_rank") if "src_global_rank" not in pa else None)
    c.peer_rank = as_int(peer)
    if kind == "pre":
        return
    if "stage" in pr:
        own = as_int(pr["stage"])
        if own is not None:
            downstream = (c.op == "Send") != (c.phase == "backward")
            c.peer_stage = own + 1 if downstream else own - 1
    elif "dest_rank" in pr:
        c.peer_stage = as_int(pr["dest_rank"])
    elif "src_rank" in pr:
        c.peer_stage = as_int(pr["src_rank"])


def _serves(c: CommNode, node: Node, pa: dict, pr: dict, index: NodeIndex, fwd: Node | None) -> None:
    """The operator or parameter the communication is for (§8)."""
    param = pa.get("mirror_user_id", pr.get("mirror_user_id"))
    if c.category in ("gradient-aggregation", "optimizer-parallel"):
        c.parameter = param if isinstance(param, str) else param_of(node)
        src = index.producer(node) if c.parameter is None else None
        if src is not None and src.op in ("Cast", "Load"):  # fp16 weights: AllGather(Cast(%para7_w))
            c.parameter = param_of(src)
        if c.parameter and c.parameter.startswith("accu_grads."):
            c.parameter = c.parameter[len("accu_grads."):]
        c.serves = c.parameter
        return
    if c.category == "redistribution" and c.phase != "backward":
        target = walk_to_strategy(node, index)
    elif c.op == "Receive":
        target = walk_to_strategy(node, index, through_all=True)
    else:
        target = index.producer(fwd if fwd is not None else node)
    if target is not None:
        c.serves, c.serves_op = target.uid, target.op
