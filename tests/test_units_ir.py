"""Unit tests of the format layer on real statements: `parse_node`, the argument scanner
(`scan_args`) and the value and type parsers (`parse_value`, `parse_tail`, `parse_type_sig`,
`parse_type`).

Every block below is pasted unchanged from the fixture dump its comment names (statement line,
then any lines printed under it); values and types cut from a line are listed in CUTS with the
line they come from. `test_pasted_lines_are_real` checks both against the files. Expected values
are read off the pasted text by hand.

Not covered because no real dump here has one: a string constant holding a comma or bracket inside
an argument list, and references nested inside a constant argument (`Input.nested`).
"""
from __future__ import annotations

from collections import defaultdict
from itertools import takewhile

import pytest
from conftest import KEPT, fixture

from irtool.errors import DumpError
from irtool.ir import Input, Ref, TypeInfo, Unreadable
from irtool.ir.grammar import transforming_parser
from irtool.ir.parse import parse_node
from irtool.ir.records import CALL
from irtool.ir.source import read_lines
from irtool.ir.values import (
    _TYPES,
    Apply,
    Name,
    _tensor_type,
    parse_tail,
    parse_type,
    parse_type_sig,
    parse_value,
    scan_args,
)


def assert_real(blocks: list[tuple[str, str, int]], cuts: list[tuple[str, str, int]] = ()) -> None:
    """Each block equals the lines of its fixture from its line number on; each cut is part of its line."""
    wanted: dict[str, set[int]] = defaultdict(set)
    for text, rel, start in [*blocks, *cuts]:
        wanted[rel].update(range(start, start + text.count("\n") + 1))
    lines = {}
    for rel, numbers in wanted.items():  # reading stops after the last line wanted
        last = max(numbers)
        lines[rel] = {n: t for n, t in takewhile(lambda nt: nt[0] <= last, read_lines(fixture(rel))) if n in numbers}  # noqa: B023
    for text, rel, start in blocks:
        got = "\n".join(lines[rel].get(start + k, "") for k in range(text.count("\n") + 1))
        assert got == text, f"{rel}:{start} differs from the pasted block"
    for text, rel, line in cuts:
        assert text in lines[rel].get(line, ""), f"{text!r} is not on {rel}:{line}"


REAL: list[tuple[str, str, int]] = []
CUTS: list[tuple[str, str, int]] = []

# cnn_cpu/rank_0/11_pipeline_split_0012.ir.xz:2100
UNPACK_CALL = (
    '  %1(CNode_128) = call @48_UnpackCall_129(@49_flatten_109, %0, {"start_dim": I64(1), "end_dim": '
    'I64(-1)})'
)
REAL.append((UNPACK_CALL, 'cnn_cpu/rank_0/11_pipeline_split_0012.ir.xz', 2100))

# auto_parallel_8p/rank_0/11_pipeline_split_0015.ir.xz:89
LOAD_FREE = (
    '  %2(CNode_590$h) = Load($(@1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_33:para3'
    '_blocks.0.norm.gamma), %para58_u)'
)
REAL.append((LOAD_FREE, 'auto_parallel_8p/rank_0/11_pipeline_split_0015.ir.xz', 89))

# auto_parallel_8p/rank_0/11_pipeline_split_0015.ir.xz:191
RESHAPE = (
    '  %8(CNode_592) = PrimFunc_Reshape(%7, (I64(8), I64(32), I64(4), I64(16))) {instance name: '
    'reshape} cnode_attrs: {op_info_created: Bool(1)}'
)
REAL.append((RESHAPE, 'auto_parallel_8p/rank_0/11_pipeline_split_0015.ir.xz', 191))

# auto_parallel_8p/rank_0/11_pipeline_split_0015.ir.xz:1241
CALL_NODE = (
    '  %5(CNode_238) = %4(%para1_inputs0, %para2_inputs1, %3)'
)
REAL.append((CALL_NODE, 'auto_parallel_8p/rank_0/11_pipeline_split_0015.ir.xz', 1241))

# cnn_cpu/rank_0/11_pipeline_split_0012.ir.xz:9055
PARAM_CALLEE = (
    '  %2(CNode_516) = Parameter_517[@@197_grad_mindspore_nn_wrap_cell_wrapper_WithLossCell_construct'
    '_518](%0, %1, %para500_u)'
)
REAL.append((PARAM_CALLEE, 'cnn_cpu/rank_0/11_pipeline_split_0012.ir.xz', 9055))

# cnn_cpu/rank_0/11_pipeline_split_0012.ir.xz:9124
FREE_CALLEE = (
    '  %0(CNode_523) = $(@196_grad_mindspore_nn_wrap_cell_wrapper_WithLossCell_construct_524:CNode_52'
    '2)(%para506_grad_mindspore_nn_wrap_cell_wrapper_WithLossCell_construct, '
    '%para507_grad_mindspore_nn_wrap_cell_wrapper_WithLossCell_construct, %para508_u)'
)
REAL.append((FREE_CALLEE, 'cnn_cpu/rank_0/11_pipeline_split_0012.ir.xz', 9124))

# control_flow_cpu/rank_0/11_pipeline_split_0012.ir.xz:5842
HYPER_MAP = (
    '  %58(success) = call @122_hyper_map_296(%para204_Parameter_297, %0, %1, %2, %3, '
    'SGD[output_names: ["output"], weight_decay: F32(0), dampening: F32(0), side_effect_mem: '
    'Bool(1), input_names: ["parameters", "gradient", "learning_rate", "accum", "momentum", "stat"], '
    'nesterov: Bool(0)], %57)'
)
REAL.append((HYPER_MAP, 'control_flow_cpu/rank_0/11_pipeline_split_0012.ir.xz', 5842))

# gpt_small_dp2mp2pp2_lazyinline/rank_0/step_parallel_end_0019.ir.xz:7771
DTYPE_TO_ENUM = (
    '  %9(CNode_4195) = DtypeToEnum("DtypeToEnum", "dtype", %8) {instance name: 53231728838148748787}'
)
REAL.append((DTYPE_TO_ENUM, 'gpt_small_dp2mp2pp2_lazyinline/rank_0/step_parallel_end_0019.ir.xz', 7771))

# gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz:189
RECEIVE = (
    '  %0(equiv_329_CNode_3257) = Receive(%para3_2.attention_norm.gamma) {instance name: Receive} '
    'primitive_attrs: {shape: [128, 128], group: "nccl_world_group", group_rank_ids: (0, 1, 2, 3, 4, '
    '5, 6, 7), src_rank: I64(0), group_back: "nccl_world_group", sr_tag: I64(0), no_eliminate: '
    'Bool(1), dtype: F32} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: '
    '"52574", forward_comm_node_unique_id: "48185", need_grad: I32(1), micro: I64(0), '
    'pipeline_begin: I64(0), src_rank: I64(0), freeze: Bool(0)} {in_strategy: ((2, 1), (2, 1))}'
)
REAL.append((RECEIVE, 'gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz', 189))

# gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz:4188
GRAD_SEND = (
    '  %342(send_out) = Send(%341) primitive_attrs: {shape: [128, 128], dest_rank: I64(0), group: '
    '"nccl_world_group", group_rank_ids: (0, 1, 2, 3, 4, 5, 6, 7), group_back: "hccl_world_group", '
    'sr_tag: I64(0), no_eliminate: Bool(1), dtype: Tensor(F32)} cnode_attrs: {checkpoint: Bool(1)} '
    'cnode_primal_attrs: {forward_comm_node_unique_id: "48185", need_grad: I32(1), micro: I64(0), '
    'forward_node_name: "Receive_52574", pipeline_begin: I64(0), src_rank: I64(0), freeze: Bool(0), '
    'forward_unique_id: "52574"}'
)
REAL.append((GRAD_SEND, 'gpt_small_dp2mp2pp2/rank_4/19_validate_0078.ir.xz', 4188))

# semi_auto_8p/rank_0/19_validate_0078.ir.xz:419
NORM_MUL = (
    '  %53(equiv_63_h) = PrimFunc_Mul(%51, %52) {instance name: norm_mul} primitive_attrs: '
    '{in_strategy: ((4, 2), (2)), mirror_user_id: "body.gamma"} cnode_attrs: {related_comm_node_id: '
    '"6734", checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "7595", related_fusion_key: '
    '"all_reduce_4-5226697808808137312_1", related_node_id: "4435", mirror_user_id: "body.gamma"} '
    '{in_strategy: ((4, 2), (2))}'
)
REAL.append((NORM_MUL, 'semi_auto_8p/rank_0/19_validate_0078.ir.xz', 419))

# layout_8p/rank_0/19_validate_0078.ir.xz:62
LAYOUT_UP = (
    '  %2(equiv_42_CNode_389) = PrimFunc_MatMul(%0, %1, Bool(0), Bool(0)) {instance name: up} '
    "primitive_attrs: {in_layout: ({'device_matrix': (2, 2, 2), 'tensor_map': ((2, 1), -1), "
    "'interleaved_parallel': false, 'alias_name': (dp, sp, mp)}, {'device_matrix': (2, 2, 2), "
    "'tensor_map': (-1, 0), 'interleaved_parallel': false, 'alias_name': (dp, sp, mp)}), "
    'mirror_user_id: "w_up"} cnode_attrs: {related_comm_node_id: "3119", checkpoint: Bool(1)} '
    'cnode_primal_attrs: {unique_id: "3627", related_fusion_key: '
    '"all_reduce_4-5226697808808137312_1", origin_output_shape: (64, 128), origin_input_shapes: '
    '((64, 32), (32, 128)), related_node_id: "2234", mirror_user_id: "w_up"}'
)
REAL.append((LAYOUT_UP, 'layout_8p/rank_0/19_validate_0078.ir.xz', 62))

# mlp_cpu/rank_0/graph_build_0_0090.ir:46-50
BACKEND_MATMUL = (
    '  %1(equiv_9_x) = PrimFunc_MatMul(%para2_inputs0, %0, Bool(0), Bool(1)) primitive_attrs: '
    '{IsFeatureMapOutput: Bool(1), IsFeatureMapInputList: (0, 2, 3), right_format: "DefaultFormat", '
    'dst_type: F32, left_format: "DefaultFormat"} cnode_attrs: {checkpoint: Bool(1), is_dynamic_len: '
    'Bool(0)} cnode_primal_attrs: {unique_id: "6157"}\n'
    '      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (64, 32)>, <Bool, NoShape>, <Bool, '
    'NoShape>) -> (<Tensor[Float32], (16, 64)>)\n'
    '      : (<Float32xDefaultFormat[const vector]{16, 32}>, <Float32xDefaultFormat[const '
    'vector]{64, 32}>, <BoolxDefaultFormat[const vector]{}>, <BoolxDefaultFormat[const vector]{}>) '
    '-> (<Float32xDefaultFormat[const vector]{16, 64}>)\n'
    '      : (Tensor, Tensor, Scalar, Scalar) -> (Tensor)\n'
    '      # Fullname with scope: (Default/network-WithLossCell/_backbone-MLP/fc1-Dense/MatMul-op0)'
)
REAL.append((BACKEND_MATMUL, 'mlp_cpu/rank_0/graph_build_0_0090.ir', 46))

# flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz:173-174
EXCHANGE = (
    '  %30(equiv_42_CNode_311) = NeighborExchange(%29) primitive_attrs: {comm_reuse: Bool(1), '
    'recv_shapes: (4, 32, 32), group: "nccl_world_group", recv_rank_ids: 2, rank_list: (0, 1, 2, 3, '
    '4, 5, 6, 7), send_rank_ids: 2, FLASH_INDEX: "0_0", recv_type: F16, send_shapes: (4, 32, 32)} '
    'cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "3814"}\n'
    '      : (<Tuple[Tensor[Float16]], TupleShape((4, 32, 32)), elements_use_flags={[const '
    'vector]{1}}>) -> (<Tuple[Tensor[Float16]], TupleShape((4, 32, 32))>)'
)
REAL.append((EXCHANGE, 'flash_attention_sp_8p/rank_0/19_validate_0078.ir.xz', 173))

# auto_parallel_8p/rank_0/step_parallel_end_0020.ir.xz:115-116
MIRROR = (
    '  %5(CNode_670) = _MirrorOperator(%4) {instance name: _MirrorOperator} primitive_attrs: {group: '
    '"nccl_world_group", fusion: I64(1), order_enforce_skip: Bool(1), group_ranks: "WORLD_GROUP", '
    'mirror_user_id: "blocks.0.norm.gamma", keep_value_node_input: Bool(1), dev_num: I64(8), '
    'mean_flag: Bool(0)} cnode_primal_attrs: {mirror_user_id: "blocks.0.norm.gamma"}\n'
    '      : (<Tensor[Float32], (64)>) -> (<null>)'
)
REAL.append((MIRROR, 'auto_parallel_8p/rank_0/step_parallel_end_0020.ir.xz', 115))

# callees printed with the closure they hold: every form the fixtures print (grammar `node_callee`, `value_callee`)
# control_flow_cpu/rank_0/19_validate_0075.ir.xz:112
NODE_FUNC_UNION = (
    '  %4(▲CNode_1015) = %3[@FuncUnion(@473_458_199_▸25_↻↓__main___ControlFlowNet_construct_983, @475'
    '_460_251_▸41_2↓__main___ControlFlowNet_construct_1008)]()'
)
REAL.append((NODE_FUNC_UNION, 'control_flow_cpu/rank_0/19_validate_0075.ir.xz', 112))

# control_flow_cpu/rank_0/19_validate_0075.ir.xz:937
NODE_GRAPH_CLOSURE = (
    '  %26(CNode_1095) = %22[@@472_457_183_◂24_↵↓__main___ControlFlowNet_construct_982](%25) cnode_at'
    'trs: {checkpoint: Bool(1)}'
)
REAL.append((NODE_GRAPH_CLOSURE, 'control_flow_cpu/rank_0/19_validate_0075.ir.xz', 937))

# control_flow_cpu/rank_0/19_validate_0075.ir.xz:608
PARAM_FUNC_UNION = (
    '  %0(CNode_1018) = Parameter_1129[@FuncUnion(@476_461_252_◂41_2↓__main___ControlFlowNet_construc'
    't_1013, @474_459_200_◂25_↻↓__main___ControlFlowNet_construct_1004)](%para66_Parameter_1019)'
)
REAL.append((PARAM_FUNC_UNION, 'control_flow_cpu/rank_0/19_validate_0075.ir.xz', 608))

# pipeline_interleaved_4stage_8p/rank_0/19_validate_0087.ir.xz:705
NODE_PARTIAL = (
    '  %67(CNode_3476) = %64[@Partial(@1012_1003_636_◂444_CR_78_CR___main___Net_construct_3369)](%66,'
    ' UMonad[U]) cnode_primal_attrs: {order: I64(1572864)}'
)
REAL.append((NODE_PARTIAL, 'pipeline_interleaved_4stage_8p/rank_0/19_validate_0087.ir.xz', 705))

# gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz:3784
PARAM_PARTIAL = (
    '  %0(CNode_7391) = Parameter_7392[@Partial(@2000_1992_1984_846_◂382_2CR_143_CR___main___DecoderL'
    'ayer_construct_7336)](%para342_Parameter_7393, %para343_forward_u) cnode_attrs: {side_effect_bpr'
    'op_app_propagate: Bool(1)}'
)
REAL.append((PARAM_PARTIAL, 'gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz', 3784))

# mindformers_llama_dp2mp2pp2_m8/rank_0/19_validate_0089.ir.xz:3556
UNION_OF_PARTIALS = (
    '  %540(CNode_15074) = %539[@FuncUnion(Partial(@3310_3297_3286_3233_3176_1343_1310_✓mindformers_c'
    'ore_lr_lr_schedule_CosineWithWarmUpLR_construct_15054), Partial(@3311_3298_3287_3234_3177_1344_1'
    '314_✗mindformers_core_lr_lr_schedule_CosineWithWarmUpLR_construct_15072))]()'
)
REAL.append((UNION_OF_PARTIALS, 'mindformers_llama_dp2mp2pp2_m8/rank_0/19_validate_0089.ir.xz', 3556))

# values and types cut from real lines
STRATEGY_2D = "((2, 1), (1, 4))"  # semi_auto_8p/rank_0/19_validate_0078.ir.xz:86 `qkv` in_strategy
CUTS.append((STRATEGY_2D, "semi_auto_8p/rank_0/19_validate_0078.ir.xz", 86))
STRATEGY_1_TUPLE = "((4, 2), (2))"  # NORM_MUL in_strategy
CUTS.append((STRATEGY_1_TUPLE, "semi_auto_8p/rank_0/19_validate_0078.ir.xz", 419))
TENSOR_TYPE = "<Tensor[Float32], (16, 32)>"  # mlp_cpu/rank_0/19_validate_0072.ir:17 `%para1_inputs0: <...> : [16, 32]`
CUTS.append((TENSOR_TYPE, "mlp_cpu/rank_0/19_validate_0072.ir", 17))
# mlp_cpu/rank_0/19_validate_0072.ir:19 `%para3_fc1.weight: <...>  :  has_default`
REF_TYPE = "<Ref[Tensor[Float32]], (64, 32), ref_key=fc1.weight, is_parameter, is_inplace>"
CUTS.append((REF_TYPE, "mlp_cpu/rank_0/19_validate_0072.ir", 19))

# gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz:313, a MatMul's input signature: a weight of a cell list's layer 0
DIGIT_REF_SIG = ("      : (<Ref[Tensor[Float32]], (64, 128), ref_key=0.attention.wq.weight, is_parameter, is_inplace>, "
                 "<UMonad, NoShape>) -> (<Tensor[Float32], (64, 128)>)")
CUTS.append((DIGIT_REF_SIG, "gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz", 313))


def test_pasted_lines_are_real() -> None:
    assert_real(REAL, CUTS)


# --- parse_node: one statement through the lexer and Builder of `load`

def test_parse_node_reads_head_inputs_attributes_and_the_lines_under_it() -> None:
    node = parse_node(BACKEND_MATMUL, graph="kernel_graph0")
    assert (node.id, node.name, node.callee, node.op, node.graph) == (1, "equiv_9_x", "PrimFunc_MatMul", "MatMul",
                                                                      "kernel_graph0")
    assert node.uid == "kernel_graph0/%1"
    assert node.scope == "Default/network-WithLossCell/_backbone-MLP/fc1-Dense/MatMul-op0"
    assert len(node.type_lines) == 3 and len(node.sources) == 0  # the block stops before the `# In file` lines
    assert [i.text for i in node.inputs] == ["%para2_inputs0", "%0", "Bool(0)", "Bool(1)"]
    assert node.primitive_attrs["IsFeatureMapInputList"] == (0, 2, 3)
    assert node.primitive_attrs["right_format"] == "DefaultFormat"


def test_parse_node_scope_argument_stands_for_a_scope_line() -> None:
    statement = BACKEND_MATMUL.split("\n")[0].strip()  # indentation is optional
    node = parse_node(statement, scope="Default/network-WithLossCell/_backbone-MLP/fc1-Dense/MatMul-op0")
    assert node.scope == parse_node(BACKEND_MATMUL).scope
    assert node.graph == "g" and node.type_lines == ()


def test_parse_node_refuses_what_load_refuses() -> None:
    # error cases: the real RESHAPE statement cut inside its argument list, and a type line alone
    with pytest.raises(DumpError, match=r"^<line>:1:\d+: expected '\)' closing the '\(' at column 35, "
                                        r"found end of line$"):
        parse_node(RESHAPE[:73])
    with pytest.raises(DumpError, match=r"^<line>:1:1: expected a node line"):
        parse_node(BACKEND_MATMUL.split("\n")[1])


def test_parse_node_error_column_of_a_cut_statement() -> None:
    # RESHAPE[:73] is 73 characters long and ends inside `(`: the end of the line is column 74
    with pytest.raises(DumpError, match=r"^<line>:1:74: "):
        parse_node(RESHAPE[:73])


# --- scan_args: splitting an argument list and finding its references

def test_scan_args_graph_node_and_a_dict_of_strings() -> None:
    node = parse_node(UNPACK_CALL)
    assert (node.callee, node.op, node.is_call) == ("@48_UnpackCall_129", CALL, True)
    assert node.inputs == [
        Input(0, "@49_flatten_109", Ref("graph", "@49_flatten_109")),
        Input(1, "%0", Ref("node", "%0")),
        Input(2, '{"start_dim": I64(1), "end_dim": I64(-1)}', None, ()),  # the comma inside braces does not split
    ]
    assert node.tail == ""


def test_scan_args_free_variable_and_parameter() -> None:
    free = "$(@1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_33:para3_blocks.0.norm.gamma)"
    assert parse_node(LOAD_FREE).inputs == [Input(0, free, Ref("free", free)),
                                            Input(1, "%para58_u", Ref("param", "%para58_u"))]


def test_scan_args_constant_tuple_and_where_the_list_ends() -> None:
    text = RESHAPE.strip()
    start = text.index("PrimFunc_Reshape(") + len("PrimFunc_Reshape(")
    inputs, end = scan_args(text, start)
    assert inputs == [Input(0, "%7", Ref("node", "%7")), Input(1, "(I64(8), I64(32), I64(4), I64(16))", None, ())]
    assert text[end:] == " {instance name: reshape} cnode_attrs: {op_info_created: Bool(1)}"
    assert parse_value(inputs[1].text) == (8, 32, 4, 16)


def test_scan_args_strings_and_brackets_inside_one_argument() -> None:
    node = parse_node(HYPER_MAP)
    assert [i.text for i in node.inputs[:5]] == ["%para204_Parameter_297", "%0", "%1", "%2", "%3"]
    sgd = node.inputs[5]
    assert sgd.text.startswith('SGD[output_names: ["output"], weight_decay: F32(0),') and sgd.text.endswith(
        '"accum", "momentum", "stat"], nesterov: Bool(0)]')
    assert (sgd.index, sgd.ref, sgd.nested) == (5, None, ())
    assert node.inputs[6] == Input(6, "%57", Ref("node", "%57"))
    strings = parse_node(DTYPE_TO_ENUM)
    assert [(i.text, i.ref) for i in strings.inputs] == [('"DtypeToEnum"', None), ('"dtype"', None),
                                                         ("%8", Ref("node", "%8"))]
    assert strings.instance_name == "53231728838148748787"


@pytest.mark.parametrize("block,callee,refs", [
    (CALL_NODE, "%4", [("param", "%para1_inputs0"), ("param", "%para2_inputs1"), ("node", "%3")]),
    # the `[@@197_grad_...]` after the parameter callee is not an argument
    (PARAM_CALLEE, "Parameter_517", [("node", "%0"), ("node", "%1"), ("param", "%para500_u")]),
    (FREE_CALLEE, "$(@196_grad_mindspore_nn_wrap_cell_wrapper_WithLossCell_construct_524:CNode_522)", [
        ("param", "%para506_grad_mindspore_nn_wrap_cell_wrapper_WithLossCell_construct"),
        ("param", "%para507_grad_mindspore_nn_wrap_cell_wrapper_WithLossCell_construct"), ("param", "%para508_u")]),
])
def test_scan_args_of_computed_callees(block: str, callee: str, refs: list[tuple[str, str]]) -> None:
    node = parse_node(block)
    assert (node.callee, node.op) == (callee, CALL)
    assert [(i.index, i.ref.kind, i.ref.name) for i in node.inputs] == [(k, *r) for k, r in enumerate(refs)]


def _short(graph: str) -> str:
    return graph.rsplit("_", 1)[1]  # the graph's number: `..._construct_983` -> `983`


@pytest.mark.parametrize("block,called", [
    (NODE_GRAPH_CLOSURE, ["982"]),  # `%22[@@472_..._982]`: a graph, printed with its own `@`
    (NODE_PARTIAL, ["3369"]),  # `%64[@Partial(@..._3369)]`
    (PARAM_PARTIAL, ["7336"]),  # `Parameter_7392[@Partial(@..._7336)]`: a lazy-inline layer's bprop
    (PARAM_CALLEE, ["518"]),  # `Parameter_517[@@197_..._518]`
    (NODE_FUNC_UNION, ["983", "1008"]),  # `%3[@FuncUnion(@a, @b)]`: either branch
    (PARAM_FUNC_UNION, ["1013", "1004"]),
    (UNION_OF_PARTIALS, ["15054", "15072"]),  # `%539[@FuncUnion(Partial(@a), Partial(@b))]`
    (UNPACK_CALL, ["129"]),  # `call @48_UnpackCall_129`
    (CALL_NODE, []),  # `%4(...)`, `$(@g:CNode_522)(...)`: a callee printed bare names no graph
    (FREE_CALLEE, []),
], ids=["node-graph", "node-partial", "param-partial", "param-graph", "node-union", "param-union",
        "union-of-partials", "call", "node-bare", "free-bare"])
def test_called_graphs_of_every_callee_form(block: str, called: list[str]) -> None:
    node = parse_node(block)
    assert node.op == CALL and [_short(g) for g in node.called_graphs] == called
    assert all(g[0] != "@" and g in block for g in node.called_graphs)  # names as the graphs' own, without `@`


@pytest.mark.parametrize("args,inputs", [
    # references and commas only: split at once (a fast path), each argument as the scanner finds it
    ("%1, %para2_w, @3_g)", [Input(0, "%1", Ref("node", "%1")), Input(1, "%para2_w", Ref("param", "%para2_w")),
                             Input(2, "@3_g", Ref("graph", "@3_g"))]),
    (")", []),
    # an argument not one reference (`%para2` has no `_`; two references in one; a `:`): the scanner's reading
    ("%para2, %1 %2, @g:x)", [Input(0, "%para2", None, ()),
                              Input(1, "%1 %2", None, (Ref("node", "%1"), Ref("node", "%2"))),
                              Input(2, "@g:x", None, (Ref("graph", "@g"),))]),
    # a `]` or `}` ends the list where the scanner ends it
    ("%1] %2)", [Input(0, "%1", Ref("node", "%1"))]),
])
def test_scan_args_fast_path_reads_as_the_scanner(args: str, inputs: list[Input]) -> None:
    from irtool.ir.values import _scan_args

    text = "%9(x) = PrimFunc_Op(" + args + " {instance name: op}"
    start = text.index("Op(") + 3
    assert scan_args(text, start) == _scan_args(text, start)
    assert scan_args(text, start)[0] == inputs


# --- values

@pytest.mark.parametrize("text,value", [
    (STRATEGY_2D, ((2, 1), (1, 4))),
    (STRATEGY_1_TUPLE, ((4, 2), (2,))),  # `(2)` is a 1-tuple in a strategy
    ("I64(0)", 0), ("I64(-1)", -1), ("Bool(1)", True), ("Bool(0)", False), ("F32(0)", 0.0),
    ('"nccl_world_group"', "nccl_world_group"), ("[128, 128]", [128, 128]),
])
def test_parse_value(text: str, value: object) -> None:
    got = parse_value(text)
    assert got == value and type(got) is type(value)


def test_parse_tail_strategy_groups_and_the_trailing_block() -> None:
    node = parse_node(NORM_MUL)
    assert node.attrs == parse_tail(node.tail) == {
        "instance_name": "norm_mul",
        "primitive_attrs": {"in_strategy": ((4, 2), (2,)), "mirror_user_id": "body.gamma"},
        "cnode_attrs": {"related_comm_node_id": "6734", "checkpoint": True},
        "cnode_primal_attrs": {"unique_id": "7595", "related_fusion_key": "all_reduce_4-5226697808808137312_1",
                               "related_node_id": "4435", "mirror_user_id": "body.gamma"},
        "extra": {"in_strategy": ((4, 2), (2,))},
    }


def test_parse_tail_p2p_attributes() -> None:
    recv = parse_node(RECEIVE)
    pa, pr = recv.primitive_attrs, recv.primal_attrs
    assert (pa["shape"], pa["src_rank"], pa["sr_tag"], pa["group_rank_ids"]) == ([128, 128], 0, 0, tuple(range(8)))
    assert pa["dtype"] == "F32" and isinstance(pa["dtype"], Name)  # a bare word, not a string
    assert (pr["micro"], pr["pipeline_begin"], pr["need_grad"], pr["unique_id"]) == (0, 0, 1, "52574")
    assert recv.attrs["extra"] == {"in_strategy": ((2, 1), (2, 1))}
    send = parse_node(GRAD_SEND)
    assert send.instance_name is None
    assert send.primitive_attrs["dtype"] == Apply("Tensor", ["F32"], {})  # `dtype: Tensor(F32)` after autodiff
    assert send.primal_attrs["forward_unique_id"] == "52574"


def test_parse_tail_layout_dicts() -> None:
    node = parse_node(LAYOUT_UP)
    dp_sp_mp = ("dp", "sp", "mp")
    assert node.primitive_attrs["in_layout"] == (
        {"device_matrix": (2, 2, 2), "tensor_map": ((2, 1), -1), "interleaved_parallel": False, "alias_name": dp_sp_mp},
        {"device_matrix": (2, 2, 2), "tensor_map": (-1, 0), "interleaved_parallel": False, "alias_name": dp_sp_mp},
    )
    assert node.primal_attrs["origin_input_shapes"] == ((64, 32), (32, 128))
    assert node.primal_attrs["origin_output_shape"] == (64, 128)


def test_unreadable_values_are_kept_with_a_reason() -> None:
    # error cases: real values cut short (STRATEGY_1_TUPLE without its last `)`, NORM_MUL's tail without its last `}`)
    cut = STRATEGY_1_TUPLE[:-1]
    assert parse_value(cut) == Unreadable(cut, "expected COMMA or RPAR, found end of text")
    tail = parse_node(NORM_MUL).tail[:-1]
    got = parse_tail(tail)
    assert isinstance(got, Unreadable) and got.text == tail.strip()
    # the group is named; what lark lists as expected after a value is longer than `,` or `}`
    assert got.reason.startswith("in_strategy: expected COMMA or ") and got.reason.endswith(", found end of text")
    assert isinstance(parse_value(""), Unreadable)


# --- types

def test_parse_type_sig_frontend_line() -> None:
    ins, outs = parse_node(BACKEND_MATMUL).signature  # the first type line
    assert [(t.kind, t.dtype, t.shape) for t in ins] == [
        ("Tensor", "Float32", (16, 32)), ("Tensor", "Float32", (64, 32)), ("Bool", None, None), ("Bool", None, None)]
    assert outs == [TypeInfo("<Tensor[Float32], (16, 64)>", "Tensor", "Float32", (16, 64))]


def test_parse_type_sig_kernel_line() -> None:
    ins, outs = parse_type_sig(parse_node(BACKEND_MATMUL).type_lines[2])  # `: (Tensor, Tensor, Scalar, Scalar) -> (Tensor)`
    assert [t.kind for t in ins] == ["Tensor", "Tensor", "Scalar", "Scalar"]
    assert outs == [TypeInfo("Tensor", "Tensor")]


def test_parse_type_sig_backend_line() -> None:
    ins, outs = parse_type_sig(parse_node(BACKEND_MATMUL).type_lines[1])
    assert [(t.text, t.dtype) for t in ins[:2]] == [("<Float32xDefaultFormat[const vector]{16, 32}>", "Float32"),
                                                    ("<Float32xDefaultFormat[const vector]{64, 32}>", "Float32")]
    assert outs[0].dtype == "Float32"


def test_parse_type_tensor_ref_tuple_and_null() -> None:
    assert parse_type(TENSOR_TYPE) == TypeInfo(TENSOR_TYPE, "Tensor", "Float32", (16, 32))
    assert parse_type(REF_TYPE) == TypeInfo(REF_TYPE, "Ref", "Float32", (64, 32))
    # `(<Tuple[Tensor[Float16]], TupleShape((4, 32, 32)), elements_use_flags=...>) -> (<Tuple[...], TupleShape(...)>)`
    ins, outs = parse_node(EXCHANGE).signature
    assert [(t.kind, t.dtype, t.shape) for t in ins + outs] == [("Tuple", "Float16", ((4, 32, 32),))] * 2
    # `: (<Tensor[Float32], (64)>) -> (<null>)`: a 1-D shape and the null type of an inserted node
    ins, outs = parse_node(MIRROR).signature
    assert ins == [TypeInfo("<Tensor[Float32], (64)>", "Tensor", "Float32", (64,))]
    assert outs == [TypeInfo("<null>", "null")]


@pytest.mark.parametrize("text", [TENSOR_TYPE, REF_TYPE, "<Tensor[Float32], ()>", "<Tensor[Int64], (-1, 0, 8)>",
                                  "<Ref[Tensor[Float16]], (512), ref_key=l1.w, is_parameter, is_inplace>"])
def test_plain_tensor_types_read_by_regex_as_by_the_grammar(text: str) -> None:
    assert _tensor_type(text) is not None and _tensor_type(text) == parse_type(text)


@pytest.mark.parametrize("text", ["<Tensor[Float32], (2,3)>", "<Tensor[Float32], (01)>", "<Tensor[Float32]], (1)>",
                                  "<Ref[Tensor[Float32], (1)>", "<Tensor[TensorF], (1)>",
                                  "<Tuple[Tensor[F32]*2], TupleShape((1), (2))>"])
def test_other_types_are_left_to_the_grammar(text: str) -> None:
    assert _tensor_type(text) is None



@pytest.mark.parametrize("rel", ["semi_auto_8p/rank_0/19_validate_0078.ir.xz",
                                 "pipeline_4stage_8p/rank_0/19_validate_0078.ir.xz",
                                 "dynamic_shape_pp_4p/rank_0/19_validate_0087.ir.xz"])
def test_plain_type_lines_read_by_regex_as_by_the_grammar(rel: str) -> None:
    import irtool
    from irtool.ir.values import _TYPES, _plain_sig, transforming_parser

    lines = {line.strip() for n in irtool.load(fixture(rel)).nodes() for line in n.type_lines}
    fast = [line for line in lines if _plain_sig(line) is not None]
    # each dump has lines of plain tensor types only: the regex path is taken, not only declined
    assert fast
    for line in fast:
        assert _plain_sig(line) == transforming_parser("type_sig", _TYPES).parse(line), line
    # a Tuple output or a Bool input: the grammar reads that one type (once per distinct text), the same answer
    for line in (": (<Tensor[Float32], (2)>) -> (<Tuple[Tensor[Float32]*2], TupleShape((1), (1))>)",
                 ": (<Bool, NoShape>, <UMonad, NoShape>) -> (<Tensor[Float32], (2)>)"):
        assert _plain_sig(line) == transforming_parser("type_sig", _TYPES).parse(line)
    # a type holding another `<...>` (a nested abstract) is the grammar's to read whole
    assert _plain_sig(": (<Tuple[Tensor[Float32]], TupleShape(<Int64, NoShape>)>) -> ()") is None


TAILS = [
    '{instance name: x} primitive_attrs: {group: "hccl_world_group", rank_list: (0, 1), fusion: I64(0)} '
    'cnode_attrs: {} cnode_primal_attrs: {unique_id: "12"} {in_strategy: ((2, 1), (1, 4))}',
    'primitive_attrs: {s: "a, b: {c} (d]", t: \'q"}\', u: "esc \\" }"}',  # brackets, commas, quotes in strings
    'primitive_attrs: {d: {a: {b: {c: {e: (1)}}}}}',  # nested five deep: the loops read it
    'primitive_attrs: {a: (1, 2], b: 1}',  # mismatched brackets: the grammar's error
    'primitive_attrs: {a: 1,}', 'primitive_attrs: {a: 1} junk', '{a: 1} {b: [1, 2], c: Tensor(shape=[2], value=[1 2])}',
    'primitive_attrs: {"quoted key": 1, 3: x}', "{instance name: a(b} primitive_attrs: {a: 1}",
]


@pytest.mark.parametrize("tail", TAILS)
def test_parse_tail_regexes_read_as_the_bracket_loops(tail: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    from irtool.ir import values

    fast = parse_tail(tail)
    never = re.compile(r"(?!)")
    monkeypatch.setattr(values, "_balanced", lambda: (never, never))
    values._parse_segment.cache_clear()
    try:
        assert parse_tail(tail) == fast
    finally:
        values._parse_segment.cache_clear()


def test_unreadable_type_is_kept_as_text() -> None:
    # error case: TENSOR_TYPE cut before its closing `)>`
    cut = TENSOR_TYPE[:-2]
    assert parse_type(cut) == TypeInfo(cut, "?")
    line = parse_node(BACKEND_MATMUL).type_lines[0][:-1]
    assert parse_type_sig(line) == ([], [TypeInfo(line.strip(), "?")])


def test_a_parameter_path_starting_with_an_index_is_one_name_in_the_grammar() -> None:
    # the grammar's rule (`type_sig`), not the regex of plain tensor types, reads the line: `0.attention.wq.weight`
    # is the parameter's key as printed, not the number `0.` followed by a name (rendered `0.0attention...` before)
    ref = "<Ref[Tensor[Float32]], (64, 128), ref_key=0.attention.wq.weight, is_parameter, is_inplace>"
    ins, outs = transforming_parser("type_sig", _TYPES).parse(DIGIT_REF_SIG.strip())
    assert [t.text for t in ins] == [ref, "<UMonad, NoShape>"] and ins[0].shape == (64, 128)
    assert [t.text for t in outs] == ["<Tensor[Float32], (64, 128)>"]
    # a float's exponent is still a number, rendered as numbers are (`1.e5` is not a path)
    (t,), _ = transforming_parser("type_sig", _TYPES).parse(": (<Tensor[Float32], (1), value=1.e5>) -> ()")
    assert t.text == "<Tensor[Float32], (1), value=100000.0>"


def test_the_reader_keeps_what_it_read_but_not_a_file_just_written(tmp_path) -> None:
    # the suite runs with IRTOOL_CACHE=KEPT (conftest.py): a bundled dump read twice is one `Dump`
    from irtool.ir import kept, load

    assert kept.SIZE == KEPT
    path = fixture("mlp_cpu/rank_0/19_validate_0072.ir")
    assert load(path) is load(path) and load(path, lenient=True) is not load(path)
    # a file written now, then written again with other text of the same size: read afresh each time
    text = open(path, encoding="utf-8").read()
    copy = tmp_path / "19_validate_0072.ir"
    copy.write_text(text, encoding="utf-8")
    first = load(str(copy))
    copy.write_text(text.replace("%para1_inputs0", "%para1_inputsX"), encoding="utf-8")
    again = load(str(copy))
    assert first is not again and again.params[0].name == "inputsX" and first.params[0].name == "inputs0"
