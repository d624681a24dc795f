"""Unit tests of the classification rules R1-R10 (docs/parallel.md §2-§4) on real statements.

Every block below is pasted unchanged from the fixture dump its comment names: the statement line
and the lines printed under it (type line, scope line); `test_pasted_lines_are_real` checks them
against the files. Each expected (category, rule, phase) is read off the rule tables of
docs/parallel.md against the evidence the comment quotes. R2 (`_MicroStepAllGather` /
`_MiniStepAllGather`) has no test: no real dump here has one of these nodes.
"""
from __future__ import annotations

from test_units_ir import assert_real

from irtool.ir import Dump, Subgraph
from irtool.ir.parse import parse_node
from irtool.parallel import analyze
from irtool.parallel.facts import own_phase
from irtool.parallel.rules import classify

REAL: list[tuple[str, str, int]] = []

# auto_parallel_8p/rank_0/step_parallel_end_0020.ir.xz:115-117
R1_MIRROR = (
    '  %5(CNode_670) = _MirrorOperator(%4) {instance name: _MirrorOperator} primitive_attrs: {group: '
    '"nccl_world_group", fusion: I64(1), order_enforce_skip: Bool(1), group_ranks: "WORLD_GROUP", '
    'mirror_user_id: "blocks.0.norm.gamma", keep_value_node_input: Bool(1), dev_num: I64(8), '
    'mean_flag: Bool(0)} cnode_primal_attrs: {mirror_user_id: "blocks.0.norm.gamma"}\n'
    '      : (<Tensor[Float32], (64)>) -> (<null>)\n'
    '      # Scope: (Default/network-WithLossCell/_backbone-Net/blocks-CellList/0-Block/norm-LayerNor'
    'm)'
)
REAL.append((R1_MIRROR, 'auto_parallel_8p/rank_0/step_parallel_end_0020.ir.xz', 115))

# gpt_large_perf/rank_0/step_parallel_end_0019.ir.xz:56810-56812
R1_MICRO_STEP = (
    '  %0(CNode_35786) = _MirrorMicroStepOperator($(@1_mindspore_nn_wrap_cell_wrapper__TrainGradAccuS'
    'tepCell_construct_60:para3_embedding.tok), '
    '$(@1_mindspore_nn_wrap_cell_wrapper__TrainGradAccuStepCell_construct_60:para533_accu_grads.embed'
    'ding.tok)) {instance name: _MirrorMicroStepOperator} primitive_attrs: {group: '
    '"2-5208665662337742843", fusion: I64(1), order_enforce_skip: Bool(1), group_ranks: "0-2", '
    'mirror_user_id: "embedding.tok", keep_value_node_input: Bool(1), side_effect_backprop_mem: '
    'Bool(1), dev_num: I64(2), mean_flag: Bool(0)} cnode_primal_attrs: {mirror_user_id: '
    '"embedding.tok"}\n'
    '      : (<Ref[Tensor[Float32]], (16000, 512), ref_key=embedding.tok, is_parameter>, '
    '<Ref[Tensor[Float32]], (16000, 512), ref_key=accu_grads.embedding.tok, is_parameter>) -> '
    '(<null>)\n'
    '      # Scope: (Default/network-PipelineCell/network-GPT)'
)
REAL.append((R1_MICRO_STEP, 'gpt_large_perf/rank_0/step_parallel_end_0019.ir.xz', 56810))

# opt_parallel_8p/rank_0/19_validate_0078.ir.xz:73-75
R3_ALLGATHER = (
    '  %0(equiv_12_CNode_634) = AllGather(%para3_l1.w) {instance name: '
    'parallel_optimizer_allgather_not_recompute} primitive_attrs: {with_mirror_operator: Bool(0), '
    'group: "nccl_world_group", fusion: I64(1), group_ranks: "WORLD_GROUP", recompute: Bool(0), '
    'group_rank_ids: (0, 1, 2, 3, 4, 5, 6, 7), mirror_user_id: "l1.w", rank_size: I64(8), '
    'keep_value_node_input: Bool(1), no_eliminate: Bool(1), mean_flag: Bool(1)} cnode_attrs: '
    '{checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6558", forward_comm_node_unique_id: '
    '"5879", mirror_user_id: "l1.w"}\n'
    '      : (<Ref[Tensor[Float32]], (8, 256), ref_key=l1.w, is_parameter, is_inplace>) -> '
    '(<Tensor[Float32], (64, 256)>)\n'
    '      # Fullname with scope: (Default/network-WithLossCell/_backbone-MLP/AllGather-op0)'
)
REAL.append((R3_ALLGATHER, 'opt_parallel_8p/rank_0/19_validate_0078.ir.xz', 73))

# opt_parallel_8p/rank_0/19_validate_0078.ir.xz:642-644
R3_REDUCE_SCATTER = (
    '  %55(dx) = ReduceScatter(%54) {instance name: grad_parallel_optimizer_allgather_not_recompute} '
    'primitive_attrs: {group: "nccl_world_group", rank_size: I64(8), fusion: I64(1), op: "sum", '
    'no_eliminate: Bool(1), group_rank_ids: (0, 1, 2, 3, 4, 5, 6, 7)} cnode_attrs: {checkpoint: '
    'Bool(1)} cnode_primal_attrs: {forward_comm_node_unique_id: "5879", forward_node_name: '
    '"AllGather_6558", forward_unique_id: "6558", mirror_user_id: "l1.w"}\n'
    '      : (<Tensor[Float32], (64, 256)>) -> (<Tensor[Float32], (8, 256)>)\n'
    '      # Fullname with scope: '
    '(Gradients/Default/network-WithLossCell/_backbone-MLP/Grad_AllGather/ReduceScatter-op0)'
)
REAL.append((R3_REDUCE_SCATTER, 'opt_parallel_8p/rank_0/19_validate_0078.ir.xz', 642))

# auto_parallel_8p/rank_0/19_validate_0079.ir.xz:1248-1250
R4_GRAD_MIRROR = (
    '  %104(dx) = AllReduce(%103) {instance name: grad_mirror_MirrorOperator} primitive_attrs: '
    '{group: "4-14708839615993409827", fusion: I64(1), op: "sum", no_eliminate: Bool(1), index: '
    'I64(0), group_rank_ids: (0, 1, 4, 5)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: '
    '{forward_node_name: "_MirrorOperator_10029", forward_unique_id: "10029", mirror_user_id: '
    '"head.w"}\n'
    '      : (<Tensor[Float32], (64, 5)>) -> (<Tensor[Float32], (64, 5)>)\n'
    '      # Fullname with scope: '
    '(Gradients/Default/network-WithLossCell/_backbone-Net/Grad__MirrorOperator/AllReduce-op0)'
)
REAL.append((R4_GRAD_MIRROR, 'auto_parallel_8p/rank_0/19_validate_0079.ir.xz', 1248))

# gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz:189-191
R5_RECEIVE = (
    '  %0(equiv_329_CNode_3257) = Receive(%para3_2.attention_norm.gamma) {instance name: Receive} '
    'primitive_attrs: {shape: [128, 128], group: "nccl_world_group", group_rank_ids: (0, 1, 2, 3, 4, '
    '5, 6, 7), src_rank: I64(0), group_back: "nccl_world_group", sr_tag: I64(0), no_eliminate: '
    'Bool(1), dtype: F32} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: '
    '"52574", forward_comm_node_unique_id: "48185", need_grad: I32(1), micro: I64(0), '
    'pipeline_begin: I64(0), src_rank: I64(0), freeze: Bool(0)} {in_strategy: ((2, 1), (2, 1))}\n'
    '      : (<Ref[Tensor[Float32]], (128), ref_key=2.attention_norm.gamma, is_parameter, '
    'is_inplace>) -> (<Tensor[Float32], (128, 128)>)\n'
    '      # Fullname with scope: (Default/Receive-op0)'
)
REAL.append((R5_RECEIVE, 'gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz', 189))

# gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz:4188-4190
R5_GRAD_SEND = (
    '  %342(send_out) = Send(%341) primitive_attrs: {shape: [128, 128], dest_rank: I64(0), group: '
    '"nccl_world_group", group_rank_ids: (0, 1, 2, 3, 4, 5, 6, 7), group_back: "hccl_world_group", '
    'sr_tag: I64(0), no_eliminate: Bool(1), dtype: Tensor(F32)} cnode_attrs: {checkpoint: Bool(1)} '
    'cnode_primal_attrs: {forward_comm_node_unique_id: "48185", need_grad: I32(1), micro: I64(0), '
    'forward_node_name: "Receive_52574", pipeline_begin: I64(0), src_rank: I64(0), freeze: Bool(0), '
    'forward_unique_id: "52574"}\n'
    '      : (<Tensor[Float32], (128, 128)>) -> (<Tensor[Float32], (128, 128)>)\n'
    '      # Fullname with scope: (Gradients/Default/Grad_Receive/Send-op0)'
)
REAL.append((R5_GRAD_SEND, 'gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz', 4188))

# auto_parallel_8p/rank_0/19_validate_0079.ir.xz:1031-1033
R6_ALLGATHER = (
    '  %70(equiv_33_CNode_700) = AllGather(%69) {instance name: '
    'redistribution_op_10439614810922515702AllGather_} primitive_attrs: {comm_reuse: Bool(1), group: '
    '"2-5208665662337742843", fusion: I64(0), rank_list: (0, 2), group_ranks: "0-2", group_rank_ids: '
    '(0, 2), rank_size: I64(2), keep_value_node_input: Bool(1), no_eliminate: Bool(1), mean_flag: '
    'Bool(0)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "10021", '
    'forward_comm_node_unique_id: "9091"}\n'
    '      : (<Tensor[Float32], (1, 2, 64, 5)>) -> (<Tensor[Float32], (2, 2, 64, 5)>)\n'
    '      # Fullname with scope: (Default/network-WithLossCell/_loss_fn-Loss/AllGather-op0)'
)
REAL.append((R6_ALLGATHER, 'auto_parallel_8p/rank_0/19_validate_0079.ir.xz', 1031))

# auto_parallel_8p/rank_0/19_validate_0079.ir.xz:1207-1209
R6_GRAD_REDUCE_SCATTER = (
    '  %99(dx) = ReduceScatter(%98) {instance name: '
    'grad_redistribution_op_10439614810922515702AllGather_} primitive_attrs: {comm_reuse: Bool(1), '
    'group: "2-5208665662337742843", fusion: I64(0), op: "sum", rank_list: (0, 2), group_rank_ids: '
    '(0, 2), rank_size: I64(2), no_eliminate: Bool(1)} cnode_attrs: {checkpoint: Bool(1)} '
    'cnode_primal_attrs: {forward_comm_node_unique_id: "9091", forward_node_name: "AllGather_10021", '
    'forward_unique_id: "10021"}\n'
    '      : (<Tensor[Float32], (2, 2, 64, 5)>) -> (<Tensor[Float32], (1, 2, 64, 5)>)\n'
    '      # Fullname with scope: '
    '(Gradients/Default/network-WithLossCell/_loss_fn-Loss/Grad_AllGather/ReduceScatter-op0)'
)
REAL.append((R6_GRAD_REDUCE_SCATTER, 'auto_parallel_8p/rank_0/19_validate_0079.ir.xz', 1207))

# moe_8p/rank_0/19_validate_0078.ir.xz:1487-1489
R6_GRAD_ALLTOALL = (
    '  %124(dx) = AlltoAll(%123) {instance name: gradredistribution_op_1255207578175138711} '
    'primitive_attrs: {comm_reuse: Bool(1), group: "nccl_world_group", rank_list: (0, 1, 2, 3, 4, 5, '
    '6, 7), split_count: I64(8), group_rank_ids: (0, 1, 2, 3, 4, 5, 6, 7), split_dim: I64(1), '
    'concat_dim: I64(0), rank_size: I64(8), no_eliminate: Bool(1)} cnode_attrs: {checkpoint: '
    'Bool(1)} cnode_primal_attrs: {forward_comm_node_unique_id: "9525", forward_node_name: '
    '"AlltoAll_10276", forward_unique_id: "10276"}\n'
    '      : (<Tensor[Float32], (1, 8, 8, 64)>) -> (<Tensor[Float32], (8, 1, 8, 64)>)\n'
    '      # Fullname with scope: '
    '(Gradients/Default/network-WithLossCell/_backbone-Net/moe-CellList/1-MoEFFN/Grad_AlltoAll/AlltoA'
    'll-op0)'
)
REAL.append((R6_GRAD_ALLTOALL, 'moe_8p/rank_0/19_validate_0078.ir.xz', 1487))

# auto_parallel_8p/rank_0/19_validate_0079.ir.xz:441-443
R7_ALLREDUCE = (
    '  %25(equiv_67_CNode_680) = AllReduce(%24) {instance name: forward_op_9811406008570872731} '
    'primitive_attrs: {comm_reuse: Bool(1), group: "4-6301172352641561019", fusion: I64(0), op: '
    '"sum", rank_list: (0, 1, 2, 3), group_ranks: "0-1-2-3", index: I64(0), group_rank_ids: (0, 1, '
    '2, 3), no_eliminate: Bool(1)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: '
    '{unique_id: "10007", forward_comm_node_unique_id: "9062"}\n'
    '      : (<Tensor[Float32], (128, 64)>) -> (<Tensor[Float32], (128, 64)>)\n'
    '      # Fullname with scope: '
    '(Default/network-WithLossCell/_backbone-Net/blocks-CellList/0-Block/AllReduce-op0)'
)
REAL.append((R7_ALLREDUCE, 'auto_parallel_8p/rank_0/19_validate_0079.ir.xz', 441))

# auto_parallel_8p/rank_0/19_validate_0079.ir.xz:1264-1266
R7_GRAD_ALLREDUCE = (
    '  %106(dx) = AllReduce(%101) {instance name: gradforward_op_9811406008570872731} '
    'primitive_attrs: {comm_reuse: Bool(1), group: "4-6301172352641561019", fusion: I64(0), op: '
    '"sum", rank_list: (0, 1, 2, 3), index: I64(0), group_rank_ids: (0, 1, 2, 3), no_eliminate: '
    'Bool(1)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_comm_node_unique_id: '
    '"9084", forward_node_name: "AllReduce_10018", forward_unique_id: "10018"}\n'
    '      : (<Tensor[Float32], (128, 64)>) -> (<Tensor[Float32], (128, 64)>)\n'
    '      # Fullname with scope: '
    '(Gradients/Default/network-WithLossCell/_backbone-Net/blocks-CellList/1-Block/Grad_AllReduce/All'
    'Reduce-op0)'
)
REAL.append((R7_GRAD_ALLREDUCE, 'auto_parallel_8p/rank_0/19_validate_0079.ir.xz', 1264))

# gpt_large_perf/rank_0/19_validate_0078.ir.xz:45436-45438
R7_RECOMPUTE = (
    '  %2709(CNode_69411) = AllReduce(%2708) {instance name: forward_op_1443747339582716748} '
    'primitive_attrs: {comm_reuse: Bool(1), group: "2-5004544844489628105", fusion: I64(0), op: '
    '"sum", rank_list: (0, 1), group_ranks: "0-1", index: I64(0), group_rank_ids: (0, 1), '
    'no_eliminate: Bool(1)} cnode_attrs: {send_recv_rely: "6726642", recompute_sub_graph: U64(11), '
    'recompute_id: I64(479), duplicated: Bool(1), need_cse_after_recompute: Bool(1)} '
    'cnode_primal_attrs: {forward_comm_node_unique_id: "410527", micro: I64(0)}\n'
    '      : (<Tensor[Float16], (256, 512)>) -> (<Tensor[Float16], (256, 512)>)\n'
    '      # Fullname with scope: '
    '(recompute_Default/network-PipelineCell/network-GPT/layers-CellList/22-DecoderLayer/attention-At'
    'tention/wo-Linear/AllReduce-op2)'
)
REAL.append((R7_RECOMPUTE, 'gpt_large_perf/rank_0/19_validate_0078.ir.xz', 45436))

# gpt_large_perf/rank_0/19_validate_0078.ir.xz:1642-1644
R7B_EMBEDDING = (
    '  %11(equiv_16494_CNode_35799) = AllReduce(%10) {instance name: 5323172883814874878AllReduce11} '
    'primitive_attrs: {comm_reuse: Bool(1), group: "2-5004544844489628105", fusion: I64(0), op: '
    '"sum", rank_list: (0, 1), index: I64(0), group_rank_ids: (0, 1), no_eliminate: Bool(1)} '
    'cnode_attrs: {send_recv_rely: "6726642", checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: '
    '"462495", related_fusion_key: "all_reduce_2-5208665662337742843_1", '
    'forward_comm_node_unique_id: "411633", micro: I64(0), mirror_user_id: "embedding.tok", segment: '
    'I64(0), related_node_id: "404095", parameter_start: I64(0)}\n'
    '      : (<Tensor[Float32], (1, 256, 512)>) -> (<Tensor[Float32], (1, 256, 512)>)\n'
    '      # Fullname with scope: '
    '(Default/network-PipelineCell/network-GPT/embedding-Embedding/AllReduce-op0)'
)
REAL.append((R7B_EMBEDDING, 'gpt_large_perf/rank_0/19_validate_0078.ir.xz', 1642))

# gpt_large_perf/rank_0/19_validate_0078.ir.xz:44686-44688
R7B_GRAD = (
    '  %2634(dx) = AllReduce(%2633) {instance name: 5323172883814874878AllReduce11} primitive_attrs: '
    '{comm_reuse: Bool(1), group: "2-5004544844489628105", fusion: I64(0), op: "sum", rank_list: (0, '
    '1), index: I64(0), group_rank_ids: (0, 1), no_eliminate: Bool(1)} cnode_attrs: {send_recv_rely: '
    '"6726642", checkpoint: Bool(1)} cnode_primal_attrs: {forward_comm_node_unique_id: "410569", '
    'micro: I64(0), forward_node_name: "AllReduce_462077", forward_unique_id: "462077"}\n'
    '      : (<Tensor[Float16], (256, 512)>) -> (<Tensor[Float16], (256, 512)>)\n'
    '      # Fullname with scope: '
    '(Gradients/Default/network-PipelineCell/network-GPT/layers-CellList/23-DecoderLayer/feed_forward'
    '-MLP/w2-Linear/Grad_AllReduce/AllReduce-op0)'
)
REAL.append((R7B_GRAD, 'gpt_large_perf/rank_0/19_validate_0078.ir.xz', 44686))

# data_parallel_8p/rank_0/11_pipeline_split_0012.ir.xz:8097-8099
R8_GRAD_REDUCER = (
    '  %0(new_grad) = AllReduce($(@151__tensors_allreduce_497:para432_grad)) {instance name: '
    'allreduce} primitive_attrs: {group: "nccl_world_group", fusion: I64(1), op: "sum", '
    'no_eliminate: Bool(1), index: I64(0)}\n'
    '      : (<Tensor[Float32], (16, 3, 5, 5)>) -> (<Tensor[Float32], (16, 3, 5, 5)>)\n'
    '      # Fullname with scope: (Default/grad_reducer-DistributedGradReducer/AllReduce-op0)'
)
REAL.append((R8_GRAD_REDUCER, 'data_parallel_8p/rank_0/11_pipeline_split_0012.ir.xz', 8097))

# flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz:173-175
R9_EXCHANGE = (
    '  %30(equiv_42_CNode_311) = NeighborExchange(%29) primitive_attrs: {comm_reuse: Bool(1), '
    'recv_shapes: (4, 32, 32), group: "nccl_world_group", recv_rank_ids: 2, rank_list: (0, 1, 2, 3, '
    '4, 5, 6, 7), send_rank_ids: 2, FLASH_INDEX: "0_0", recv_type: F16, send_shapes: (4, 32, 32)} '
    'cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "3814"}\n'
    '      : (<Tuple[Tensor[Float16]], TupleShape((4, 32, 32)), elements_use_flags={[const '
    'vector]{1}}>) -> (<Tuple[Tensor[Float16]], TupleShape((4, 32, 32))>)\n'
    '      # Fullname with scope: '
    '(Default/network-WithLossCell/_backbone-SeqParallelAttention/NeighborExchange-op0)'
)
REAL.append((R9_EXCHANGE, 'flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz', 173))

# flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz:753-755
R9_GRAD_EXCHANGE = (
    '  %152(CNode_439) = NeighborExchange(%151) {instance name: grad} primitive_attrs: {comm_reuse: '
    'Bool(1), recv_shapes: (4, 32, 32), group: "nccl_world_group", recv_rank_ids: 2, rank_list: (0, '
    '1, 2, 3, 4, 5, 6, 7), send_rank_ids: 2, recv_type: F16, send_shapes: (4, 32, 32)} cnode_attrs: '
    '{checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "NeighborExchange_3814", '
    'forward_unique_id: "3814"}\n'
    '      : (<Tuple[Tensor[Float16]], TupleShape((4, 32, 32)), elements_use_flags={[const '
    'vector]{1}}>) -> (<Tuple[Tensor[Float16]], TupleShape((4, 32, 32))>)\n'
    '      # Fullname with scope: '
    '(Gradients/Default/network-WithLossCell/_backbone-SeqParallelAttention/Grad_NeighborExchange/Nei'
    'ghborExchange-op0)'
)
REAL.append((R9_GRAD_EXCHANGE, 'flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz', 753))

# gpt_large_perf/rank_0/19_validate_0078.ir.xz:29966-29968
R7_FWD_OF_R7B_GRAD = (
    '  %1641(equiv_15392_CNode_36736) = AllReduce(%1640) {instance name: '
    'forward_op_1443747339582716748} primitive_attrs: {comm_reuse: Bool(1), group: '
    '"2-5004544844489628105", fusion: I64(0), op: "sum", rank_list: (0, 1), group_ranks: "0-1", '
    'index: I64(0), group_rank_ids: (0, 1), no_eliminate: Bool(1)} cnode_attrs: {send_recv_rely: '
    '"6726642", checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "462077", '
    'forward_comm_node_unique_id: "410569", micro: I64(0)}\n'
    '      : (<Tensor[Float16], (256, 512)>) -> (<Tensor[Float16], (256, 512)>)\n'
    '      # Fullname with scope: '
    '(Default/network-PipelineCell/network-GPT/layers-CellList/23-DecoderLayer/feed_forward-MLP/w2-Li'
    'near/AllReduce-op0)'
)
REAL.append((R7_FWD_OF_R7B_GRAD, 'gpt_large_perf/rank_0/19_validate_0078.ir.xz', 29966))


def classified(block: str, graph: str = "g") -> tuple[str, str, str]:
    """(category, rule, phase) from the node's own evidence, as `analyze` reads it."""
    node = parse_node(block, graph=graph)
    inst = node.instance_name or ""
    category, rule = classify(node, inst, node.primitive_attrs, node.primal_attrs)
    return category, rule, own_phase(node, (category, rule), node.scalar_attr("duplicated") is True) or "forward"


def test_pasted_lines_are_real() -> None:
    assert_real(REAL)


def test_r1_virtual_mirror_is_gradient_aggregation_and_backward() -> None:
    # `= _MirrorOperator(`, scope `Default/...` (forward graph of step_parallel_end): R1, and backward (§3: its
    # bytes move in the bprop)
    assert classified(R1_MIRROR) == ("gradient-aggregation", "R1", "backward")
    assert classified(R1_MICRO_STEP) == ("gradient-aggregation", "R1", "backward")


def test_r3_optimizer_sharded_parameter() -> None:
    # `{instance name: parallel_optimizer_allgather_not_recompute}`, scope `Default/...`, no forward_* primal attrs
    assert classified(R3_ALLGATHER) == ("optimizer-parallel", "R3", "forward")
    # its bprop: `{instance name: grad_parallel_optimizer_allgather_not_recompute}`, scope `Gradients/...`
    assert classified(R3_REDUCE_SCATTER) == ("optimizer-parallel", "R3", "backward")


def test_r4_materialised_mirror() -> None:
    # `{instance name: grad_mirror_MirrorOperator}` and `forward_node_name: "_MirrorOperator_10029"`
    assert classified(R4_GRAD_MIRROR) == ("gradient-aggregation", "R4", "backward")
    # either piece of evidence is enough: without the instance name the primal attribute still decides
    node = parse_node(R4_GRAD_MIRROR)
    assert classify(node, "", node.primitive_attrs, node.primal_attrs) == ("gradient-aggregation", "R4")


def test_r5_pipeline_p2p() -> None:
    # Receive with `cnode_primal_attrs: {..., micro: I64(0), pipeline_begin: I64(0), src_rank: I64(0), ...}`,
    # scope `Default/Receive-op0`
    assert classified(R5_RECEIVE) == ("pipeline", "R5", "forward")
    # Send with no instance name, scope `Gradients/Default/Grad_Receive/Send-op0`, `forward_unique_id: "52574"`
    assert classified(R5_GRAD_SEND) == ("pipeline", "R5", "backward")


def test_r5b_p2p_without_pipeline_primal_attrs_is_other() -> None:
    # The same Receive with its primal attributes stripped (§4: evidence stripped). Its primitive attrs still hold
    # `src_rank: I64(0)`, the peer's global rank, which is no pipeline evidence.
    node = parse_node(R5_RECEIVE)
    assert node.primitive_attrs["src_rank"] == 0
    assert classify(node, node.instance_name or "", node.primitive_attrs, {}) == ("other", "R5b")


def test_r6_redistribution() -> None:
    # `{instance name: redistribution_op_10439614810922515702AllGather_}`, scope `Default/...`
    assert classified(R6_ALLGATHER) == ("redistribution", "R6", "forward")
    # `grad_redistribution_op_...` (with `_`) and moe's `gradredistribution_op_...` (without)
    assert classified(R6_GRAD_REDUCE_SCATTER) == ("redistribution", "R6", "backward")
    assert classified(R6_GRAD_ALLTOALL) == ("redistribution", "R6", "backward")


def test_r7_operator_forward() -> None:
    # `{instance name: forward_op_9811406008570872731}`, scope `Default/...`
    assert classified(R7_ALLREDUCE) == ("operator-forward", "R7", "forward")
    # `{instance name: gradforward_op_9811406008570872731}`, scope `Gradients/...`
    assert classified(R7_GRAD_ALLREDUCE) == ("operator-forward", "R7", "backward")
    # `cnode_attrs: {..., duplicated: Bool(1), ...}`, scope `recompute_Default/...`, no forward_* primal attrs
    assert classified(R7_RECOMPUTE) == ("operator-forward", "R7", "recompute")


def test_r7b_replace_graph_collective() -> None:
    # `{instance name: 5323172883814874878AllReduce11}` matches ^\d+[A-Za-z]+\d+$; it carries
    # `mirror_user_id: "embedding.tok"` in its primal attrs, which is not gradient aggregation
    node = parse_node(R7B_EMBEDDING)
    assert node.primal_attrs["mirror_user_id"] == "embedding.tok"
    assert classified(R7B_EMBEDDING) == ("operator-forward", "R7b", "forward")
    # the shared (comm_reuse) name on a backward AllReduce, scope `Gradients/...`
    assert classified(R7B_GRAD) == ("operator-forward", "R7b", "backward")


def test_r7b_keeps_its_rule_when_the_forward_counterpart_agrees() -> None:
    # R7B_GRAD has `forward_unique_id: "462077"`, the `unique_id` of R7_FWD_OF_R7B_GRAD (`forward_op_...`, R7):
    # both operator-forward, so the counterpart does not override (no `-inherited`)
    fwd, bwd = parse_node(R7_FWD_OF_R7B_GRAD), parse_node(R7B_GRAD)
    dump = Dump(path="19_validate_0078.ir", subgraphs=[Subgraph(name="g", line=1, nodes=[fwd, bwd])])
    comm = analyze(dump).comm
    assert [(c.category, c.rule, c.phase) for c in comm] == [
        ("operator-forward", "R7", "forward"), ("operator-forward", "R7b", "backward")]


def test_r8_data_parallel_grad_reducer() -> None:
    # scope `Default/grad_reducer-DistributedGradReducer/AllReduce-op0`, `{instance name: allreduce}`
    assert classified(R8_GRAD_REDUCER) == ("gradient-aggregation", "R8", "backward")
    # without the scope line, the subgraph it is printed in (line 8096:
    # `subgraph @152_✓_tensors_allreduce_498 parent: [subgraph @151__tensors_allreduce_497]() {`) decides
    statement = R8_GRAD_REDUCER.split("\n")[0]
    assert classified(statement, graph="152_✓_tensors_allreduce_498") == ("gradient-aggregation", "R8", "backward")


def test_r9_ring_attention_exchange() -> None:
    # NeighborExchange with `FLASH_INDEX: "0_0"` in primitive attrs, no instance name
    assert classified(R9_EXCHANGE) == ("context-parallel", "R9", "forward")
    # its bprop: no FLASH_INDEX, `forward_node_name: "NeighborExchange_3814"`, `{instance name: grad}`
    assert classified(R9_GRAD_EXCHANGE) == ("context-parallel", "R9", "backward")


def test_r10_collective_without_telling_evidence_is_other() -> None:
    # The grad-reducer AllReduce statement alone, outside a tensors_allreduce subgraph: `{instance name: allreduce}`
    # is an attribute name, no scope, no primal attrs (§4: better `other` than a wrong bucket)
    statement = R8_GRAD_REDUCER.split("\n")[0]
    assert classified(statement) == ("other", "R10", "forward")
