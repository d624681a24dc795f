"""Which operators communicate, and the rules R1-R10 that say why from its own evidence (docs/parallel.md §2-§4;
R11-R13, which read its neighbourhood, are in flowrules.py).

Each rule reads one node's own evidence: operator, instance name, scope and attributes. The
forward-counterpart rule (§2, `-inherited`) needs the whole dump and lives in `analyze`.
"""
from __future__ import annotations

import re

from ..ir import Node
from .groups import GATHERS, STEP_GATHERS, ranks_of
from .records import Category, FileKind
from .stage import as_int

# Collective and point-to-point primitives, and the virtual operators that become communication.
COMM_OPS = frozenset({
    "AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "AllToAll", "AlltoAllV", "AllToAllv", "AllToAllV",
    "AlltoAllVC", "AllGatherV", "ReduceScatterV", "Broadcast", "Send", "Receive", "NeighborExchange",
    "NeighborExchangeV2", "CollectivePermute", "BatchISendIRecv", "Reduce", "Barrier",
    "InnerCommAllReduce", "InnerCommAllGather", "InnerCommReduceScatter", "InnerCommIrecv", "InnerCommIsend",
    "_MirrorOperator", "_MirrorMicroStepOperator", "_MirrorMiniStepOperator",
    "_MicroStepAllGather", "_MiniStepAllGather", "_HostAllGather", "_HostReduceScatter",
})
MIRRORS = frozenset({"_MirrorOperator", "_MirrorMicroStepOperator", "_MirrorMiniStepOperator"})
P2P = frozenset({"Send", "Receive", "BatchISendIRecv", "CollectivePermute", "InnerCommIsend", "InnerCommIrecv"})
EXCHANGES = frozenset({"NeighborExchange", "NeighborExchangeV2", "BatchISendIRecv", "CollectivePermute"})
PIPE_KEYS = frozenset({"pipeline_begin", "pipeline_end", "micro", "stage", "chunk", "src_rank", "dest_rank"})
# Attributes FlashAttentionScore puts on the p2p it generates for sequence/context parallelism (ring
# attention): they say why the exchange exists, so they win over the `micro` pipeline marks a
# node inside a pipeline stage also gets (docs/parallel.md §2 R9).
SP_KEYS = frozenset({"FLASH_SP_COMM_TYPE", "FLASH_INDEX", "RING_ATTENTION_INDEX", "flash_tag"})

# Passes before step_parallel_end: types are logical or stale (docs/parallel.md §1).
PRE_SHARDING_PASSES = ("bootstrap", "pipeline_split", "merge_send_receive", "step_parallel_begin")
# The front end's other passes before the parallel pass, by exact name (`pass_name`): later passes reuse these
# words (`15_auto_monad_reorder`, `opt_pass_47_begin_end_overlap_inline`, `opt_pass_3_py_interpret_to_execute_
# after_opt_a`). A compile that fails in the parallel pass dumps only these (a zero_bubble_v stage order: its last
# file is `10_dataset_repeat_opt`).
PRE_PARALLEL_FRONT_END = frozenset({
    "type_inference", "auto_monad", "graph_reusing", "inline", "add_attr", "parallel-infer-symbol",
    "pre_auto_parallel", "insert-virtual-dataset", "parallel-infer-symbol-second", "dataset_repeat_opt",
    "opt_pass_0_rewriter_before_opt_a", "opt_pass_1_a1a2", "opt_pass_0_add_attr_with_inline",
    "opt_pass_0_py_interpret_to_execute", "opt_pass_1_rewriter_before_opt_a"})
STEP_PARALLEL_END = "step_parallel_end"
# Kernel-graph passes (the backend's one flat `@kernel_graphN`), graph_build first (`dumpdir.kernel_file`).
KERNEL_PASSES = ("graph_build", "hwopt_d_end_acl_graph_final", "hwopt_", "task_emit")
_REPLACE_GRAPH = re.compile(r"^\d+[A-Za-z]+\d+$")
_NAMED_OP = re.compile(r"(AllGather|ReduceScatter|AllReduce|AlltoAll|Broadcast|Send|Receive)_?\d*$")


def borrowed_name(node: Node) -> bool:
    """The instance name is another node's: MindSpore shares one primitive between equal communication
    nodes (`comm_reuse`) and prints the name of its first user, so a forward `AllGather` of 2D tensor
    parallelism (two_d_tp_8p) can print `grad...ReduceScatter8`, the name of the backward node it shares
    a primitive with. Told by the name ending with another communication operator than the node's."""
    inst = node.instance_name or ""
    m = _NAMED_OP.search(inst)
    return m is not None and m.group(1) != node.op and node.scalar_attr("comm_reuse") is True


def moves_no_data(node: Node, inst: str, pa: dict) -> bool:
    """A collective that communicates nothing (docs/parallel.md §2, R2). MindSpore inserts
    `_MicroStepAllGather`/`_MiniStepAllGather` for every parameter under pipeline or gradient accumulation,
    with an empty group when the parameter is not sharded (norms, biases, small embeddings); its bprop skips
    the reduction for `group == ""`. Any collective on a group of one rank moves nothing either (a sequence-
    parallel recompute gather of `rank_size 1` where the model-parallel group has one rank on that axis)."""
    if node.op in P2P or node.op in EXCHANGES:
        return False
    ranks = ranks_of(pa)
    if as_int(pa.get("rank_size")) == 1 or (ranks is not None and len(ranks) == 1):
        return True
    if node.op not in STEP_GATHERS and not (node.op in GATHERS and "parallel_optimizer" in inst):
        return False
    group = pa.get("group")
    return not isinstance(group, str) or not group


def file_kind(pass_name: str) -> FileKind:
    """Where a pass sits relative to the parallel pass."""
    if pass_name == STEP_PARALLEL_END:
        return "spe"
    if pass_name in PRE_PARALLEL_FRONT_END or any(p in pass_name for p in PRE_SHARDING_PASSES):
        return "pre"
    return "post"


def pipeline_split_done(pass_name: str) -> bool:
    """The pipeline split has run: a pipeline's Send/Receive and micro-batch marks are in place, and a train step's
    optimizer is inlined. Before it (bootstrap, the front end's first passes) no Send/Receive says no pipeline."""
    return "bootstrap" not in pass_name and pass_name not in PRE_PARALLEL_FRONT_END


# Collectives that reduce: in the forward, only a sharded operator's partial results are reduced (R7k).
REDUCING = frozenset({"AllReduce", "ReduceScatter", "ReduceScatterV", "Reduce", "InnerCommAllReduce",
                      "InnerCommReduceScatter"})


def classify(node: Node, inst: str, pa: dict, pr: dict, kernel: bool = False) -> tuple[Category, str]:
    """(category, rule) from the node's own evidence: instance name `inst`, primitive attributes
    `pa` and primal attributes `pr`; `kernel`: the dump is a kernel graph (the `kernel` fact)."""
    op, scope = node.op, node.scope or ""
    fwd_name = str(pr.get("forward_node_name", ""))
    if op in MIRRORS:
        return "gradient-aggregation", "R1"
    if op in STEP_GATHERS:
        return "optimizer-parallel", "R2"
    if "parallel_optimizer" in inst:
        return "optimizer-parallel", "R3"
    if inst.startswith("_grad_accumulation_shard") or fwd_name.startswith("_VirtualAssignAdd"):
        # optimizer level 2/3 (`gradient_accumulation_shard`): `_VirtualAssignAdd`'s bprop reduce-scatters each micro
        # step's gradient into the sharded accumulation buffer (grad_comm_ops.py), in place of the mirror AllReduce
        return "optimizer-parallel", "R3a"
    if inst.startswith("grad_mirror") or fwd_name.startswith("_Mirror"):
        return "gradient-aggregation", "R4"
    if (op in P2P or op in EXCHANGES) and (SP_KEYS & (set(pa) | set(pr)) or fwd_name.startswith("NeighborExchange")):
        return "context-parallel", "R9"
    if op in P2P:
        return ("pipeline", "R5") if PIPE_KEYS & set(pr) else ("other", "R5b")
    if inst == "PARALLEL_RESULT_BROADCAST":
        # `pipeline_result_broadcast=True` (inference): the last stage's output summed over one rank of each stage,
        # the others adding zeros, so that every stage returns it: traffic between the stages, not within one
        return "pipeline", "R5r"
    if node.cnode_attrs.get("recompute_allgather") is True or inst == "recompute_slice_allgather":
        # a layer output kept sliced until its recompute (MindFormers' recompute_slice_activation) gathered back to
        # the layout the recompute reads: MindSpore marks the gather `recompute_allgather`, in validate and in the
        # kernel graph alike (parallel/slicing.py)
        return "redistribution", "R6s"
    if kernel and not inst and "forward_comm_node_unique_id" in pr:
        # a kernel graph drops the instance names (`forward_op_*`, `redistribution_op_*`) of the collectives the
        # parallel pass put in the forward graph, which MindSpore marks `forward_comm_node_unique_id` before autodiff
        # (set_forward_comm_id_for_comm_node.cc): a reduction there sums a sharded operator's partial results, a
        # gather or all-to-all converts a layout (R11/R12 may tell an expert or sequence exchange after)
        return ("operator-forward", "R7k") if op in REDUCING else ("redistribution", "R6k")
    core = re.sub(r"^grad_?", "", inst)
    if core.startswith("redistribution_op"):
        return "redistribution", "R6"
    if core.startswith("forward_op"):
        return "operator-forward", "R7"
    if _REPLACE_GRAPH.match(inst) or _REPLACE_GRAPH.match(core):
        return "operator-forward", "R7b"
    if re.search(r"grad_reducer|GradReducer", scope) or "tensors_allreduce" in node.graph:
        return "gradient-aggregation", "R8"
    return "other", "R10"
