"""`analyze(dump) -> ParallelFacts`: communication nodes, groups, strategies and stage of one dump.

Rules are documented in docs/parallel.md (section numbers in comments refer to it). The dump is
only read: facts and warnings are returned, and the caller keeps them as long as it needs them.
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import partial

from ..ir import Dump, DumpWarning, Node, pass_name
from .chains import redistribution_chains
from .groups import group_name, group_table
from .links import NodeIndex, ordered_with, param_through, walk_to_strategy
from .peer import global_peer, group_members, rank_of
from .records import CommNode, FileKind, Group, ParallelFacts, Strategy
from .rules import COMM_OPS, EXCHANGES, GATHERS, MIRRORS, classify, file_kind, moves_no_data, phase
from .scope import attributed_scope
from .sizes import Sized, attr_bytes, input_type, type_bytes
from .stage import as_int, stage_info
from .strategies import strategies

# Attributes that name ranks: they differ between two ranks of one stage by construction.
RANK_ATTRS = ("dest_rank", "src_rank", "dst_global_rank", "src_global_rank", "send_rank_ids", "recv_rank_ids")


def analyze(dump: Dump, rank: int | None = None) -> ParallelFacts:
    """The parallel facts of `dump` (docs/parallel.md) on `rank` (default: the `rank_N` folder of
    its path), which tells a Send/Receive peer printed as a group index from a global rank (§7)."""
    kind = file_kind(pass_name(dump.path or ""))
    found = [n for n in dump.nodes() if n.op in COMM_OPS]
    silent = {n.uid for n in found if moves_no_data(n, n.instance_name or "", n.primitive_attrs)}
    nodes = [n for n in found if n.uid not in silent]
    own = rank if rank is not None else rank_of(dump.path or "")
    printed = group_table(n.primitive_attrs for n in nodes)
    # members the dump does not list, from the group's name (2-rank groups, parallel/peer.py)
    groups = {name: g if g.ranks is not None else replace(g, ranks=group_members(name, own))
              for name, g in printed.items()}
    strats = strategies(dump)
    by_uid = {s.node: s for s in strats}
    index = NodeIndex(dump, found)
    # the nodes see the printed members: a printed peer on a listed group may be global (peer.py)
    comm = [global_peer(c, own) for c in comm_nodes(dump, nodes, printed, kind, by_uid, index)]
    no_ops = comm_nodes(dump, [n for n in found if n.uid in silent], groups, kind, by_uid, index) if silent else []
    warnings = [DumpWarning(n.line, f"attributes of {n.key} kept as raw text ({n.unreadable_attrs.reason}): "
                                    "its classification may be incomplete")
                for n in found if n.unreadable_attrs is not None]
    stage = stage_info(kind, comm, {n.uid: n.primal_attrs for n in nodes})
    return ParallelFacts(kind=kind, comm=comm, groups=groups, strategies=strats, stage_info=stage,
                         warnings=warnings, no_op_gathers=no_ops,
                         _make_chains=partial(redistribution_chains, dump, comm, groups, strats, kind, index))


def comm_nodes(dump: Dump, nodes: list[Node], groups: dict[str, Group], kind: FileKind,
               strats: dict[str, Strategy] | None = None, index: NodeIndex | None = None) -> list[CommNode]:
    """The communication `nodes` of `dump`, classified; `strats` are the operators with a strategy by
    uid; `index` one shared with other analyses of the dump."""
    attrs = [(n.instance_name or "", n.primitive_attrs, n.cnode_attrs, n.primal_attrs) for n in nodes]
    by_uid = {str(a[3]["unique_id"]): i for i, a in enumerate(attrs) if "unique_id" in a[3]}
    own = [classify(n, a[0], a[1], a[3]) for n, a in zip(nodes, attrs)]
    if index is None:
        index = NodeIndex(dump, nodes)
    else:
        index.cover(nodes)
    params = {p.name: p for p in dump.params}
    out: list[CommNode] = []
    for i, (node, (inst, pa, ca, pr)) in enumerate(zip(nodes, attrs)):
        category, rule = own[i]
        fwd = by_uid.get(forward_id(pr) or "")
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
        if c.serves_op is not None and strats and c.serves in strats:
            c.serves_strategy = strats[c.serves].shown
        c.cell_scope = attributed_scope(c.scope, nodes[fwd].scope if fwd is not None and fwd != i else None)
        out.append(c)
    _pair_exchanges(out, nodes, index)
    if kind != "pre":
        fold_wraps(out, {c.node: a[3] for c, a in zip(out, attrs)})
    return out


def _pair_exchanges(comm: list[CommNode], nodes: list[Node], index: NodeIndex) -> None:
    """R9 (§2): a Send/Receive with no attribute of its own (R5b) that is chained by `Depend` to a
    sequence-parallel Send/Receive is the other half of that exchange step, in the same phase
    (flash_sp_sendrecv_8p: a `Send` in `Default/` scope ordered before a Receive marked `flash_tag`)."""
    by_uid = {c.node: c for c in comm}
    for c, node in zip(comm, nodes):
        if c.rule != "R5b":
            continue
        for n in ordered_with(node, index):
            other = by_uid.get(n.uid)
            if other is not None and other.rule.startswith("R9"):
                c.category, c.rule = "operator-forward", "R9-paired"
                if other.phase == "backward":  # one exchange step runs in one phase
                    c.phase = "backward"
                break


def fold_wraps(comm: list[CommNode], primal: dict[str, dict]) -> None:
    """Peer stages of the hops that wrap around a folded pipeline (§7, `pipeline_segments` > 1).

    With `pr.stage` the peer stage is the own stage ± 1, except where the pipeline folds: the last
    stage's downstream hop goes to stage 0 of the next segment, and stage 0's upstream hop comes from
    the last stage of the previous segment. MindSpore places stage s on the global ranks
    [s·n/S, (s+1)·n/S), so a downstream hop to a lower rank (or an upstream hop from a higher rank,
    or upstream from stage 0) wraps. `pa.dest_rank`/`pa.src_rank` are then the peer's index in the
    2-rank p2p group, whose ranks are in ascending order: index 0 = the lower rank. The last stage is
    the stage of the same peer rank on a hop that does not wrap, else (own rank known from the group)
    own stage + (peer rank − own rank) / ranks per stage; never a negative or made-up number.
    """
    hops = [c for c in comm if c.category == "pipeline" and c.direction and "stage" in primal.get(c.node, {})]
    stage_of: dict[int, int] = {}
    step: set[int] = set()
    wraps: list[tuple[CommNode, bool]] = []
    for c in hops:
        own = as_int(primal[c.node]["stage"])
        if own is None:
            continue
        downstream = (c.op == "Send") != (c.phase == "backward")
        index = as_int(c.rank_attrs.get("dest_rank" if c.op == "Send" else "src_rank"))
        lower = index == 0 if index is not None else None  # peer is the lower rank of the pair
        if (downstream and lower) or (not downstream and (own == 0 or lower is False)):
            wraps.append((c, downstream))
            continue
        if c.peer_rank is not None and c.peer_stage is not None:
            stage_of[c.peer_rank] = c.peer_stage
            own_rank = _own_rank(c)
            if own_rank is not None and c.peer_stage != own:
                step.add(abs(c.peer_rank - own_rank))
    for c, downstream in wraps:
        own = as_int(primal[c.node]["stage"])
        if downstream:
            c.peer_stage = 0
        elif c.peer_rank in stage_of:
            c.peer_stage = stage_of[c.peer_rank]
        else:
            own_rank = _own_rank(c)
            d = next(iter(step)) if len(step) == 1 else None
            diff = None if own_rank is None or c.peer_rank is None else c.peer_rank - own_rank
            c.peer_stage = own + diff // d if d and diff is not None and diff > 0 and diff % d == 0 else None


def _own_rank(c: CommNode) -> int | None:
    """This rank in a 2-rank p2p group: the member that is not the peer."""
    ranks = c.group_ranks
    if ranks is None or len(ranks) != 2 or c.peer_rank not in ranks:
        return None
    return ranks[0] if ranks[1] == c.peer_rank else ranks[1]


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
    c.segment = as_int(pr.get("segment", pr.get("chunk")))
    c.chunk = as_int(pr.get("chunk"))  # as printed: the segment of a folded pipeline, the chunk of an interleaved one
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
        c.parameter = param if isinstance(param, str) else param_through(node, index)
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


_TRAILING_ID = re.compile(r"_(\d+)$")


def forward_id(pr: dict) -> str | None:
    """The `unique_id` of a backward node's forward counterpart: `pr.forward_unique_id`, else the
    number ending `pr.forward_node_name` (`AllGather_6979` is the node whose unique_id is 6979)."""
    if "forward_unique_id" in pr:
        return str(pr["forward_unique_id"])
    m = _TRAILING_ID.search(str(pr.get("forward_node_name", "")))
    return m.group(1) if m else None
