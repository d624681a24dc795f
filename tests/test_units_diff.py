"""Unit tests of node matching in `irtool diff` (irtool/diff/match.py): scope normalisation, the
`-opN` creation counter, and `match` (same signature first, then by position).

Scopes are cut unchanged from the fixture lines their comments name (`test_scopes_are_real`
checks them). No real scope holds `CNode_N`, `0x...` or a long number outside the node's own
`Op-opN` component, so those substitutions are only seen removing a whole own component here.
"""
from __future__ import annotations

import random
from typing import NamedTuple

from test_units_ir import assert_real

from irtool.diff.compare import pass_of
from irtool.diff.match import match, normalise_name, normalise_scope
from irtool.parallel.scope import op_number

CUTS: list[tuple[str, str, int]] = []


def cut(text: str, rel: str, line: int) -> str:
    CUTS.append((text, rel, line))
    return text


# `# Fullname with scope: (...)` of the optimizer-sharding AllGather and of its bprop ReduceScatter
AG_SCOPE = cut("Default/network-WithLossCell/_backbone-MLP/AllGather-op0",
               "opt_parallel_8p/rank_0/19_validate_0078.ir.xz", 75)
RS_SCOPE = cut("Gradients/Default/network-WithLossCell/_backbone-MLP/Grad_AllGather/ReduceScatter-op0",
               "opt_parallel_8p/rank_0/19_validate_0078.ir.xz", 644)
# the recompute copy of a row-parallel AllReduce
RECOMPUTE_SCOPE = cut("recompute_Default/network-PipelineCell/network-GPT/layers-CellList/22-DecoderLayer/"
                      "attention-Attention/wo-Linear/AllReduce-op2", "gpt_large_perf/rank_0/19_validate_0078.ir.xz",
                      45438)
# the fc1 MatMul printed in default order (`Fullname with scope`, own component) and sorted order (`Scope`)
MATMUL_DEFAULT = cut("Default/network-WithLossCell/_backbone-MLP/fc1-Dense/MatMul-op0",
                     "mlp_cpu/rank_0/19_validate_0072.ir", 74)
MATMUL_SORTED = cut("(Default/network-WithLossCell/_backbone-MLP/fc1-Dense)",
                    "mlp_cpu_sorted/rank_0/19_validate_0072.ir.xz", 70)[1:-1]
# one lazy-inline cell call on two ranks: the Python object id in the name differs per process
CALL_RANK0 = cut("Default/network-PipelineCell/network-GPT/CR_172___main___DecoderLayer_ID140485396613744_2985-op1",
                 "gpt_small_dp2mp2pp2_lazyinline/rank_0/11_pipeline_split_0014.ir.xz", 635)
CALL_RANK4 = cut("Default/network-PipelineCell/network-GPT/CR_172___main___DecoderLayer_ID139840031672944_2985-op1",
                 "gpt_small_dp2mp2pp2_lazyinline/rank_4/11_pipeline_split_0014.ir.xz", 632)
UPDATE_STATE = cut("(Default/UpdateState-op699)", "gpt_small_dp2mp2pp2_lazyinline/rank_0/11_pipeline_split_0014.ir.xz",
                   632)[1:-1]

# one forward AllReduce's instance name in two passes of pipeline_4stage_8p rank 2: a hash per pass
INSTANCE_VALIDATE = cut("forward_op_10546112788216059064", "pipeline_4stage_8p/rank_2/19_validate_0078.ir.xz", 463)
INSTANCE_SPE = cut("forward_op_1168943699204535004", "pipeline_4stage_8p/rank_2/step_parallel_end_0019.ir.xz", 1278)
FC1 = cut("{instance name: fc1}", "pipeline_4stage_8p/rank_2/19_validate_0078.ir.xz", 398)[len("{instance name: "):-1]


def test_scopes_are_real() -> None:
    assert_real([], CUTS)


def test_normalise_scope_drops_the_own_component() -> None:
    assert normalise_scope(AG_SCOPE) == "Default/network-WithLossCell/_backbone-MLP"
    assert normalise_scope(RS_SCOPE) == "Gradients/Default/network-WithLossCell/_backbone-MLP/Grad_AllGather"
    assert normalise_scope(RECOMPUTE_SCOPE) == ("recompute_Default/network-PipelineCell/network-GPT/layers-CellList/"
                                                "22-DecoderLayer/attention-Attention/wo-Linear")
    assert normalise_scope(UPDATE_STATE) == "Default"
    assert normalise_scope(None) == normalise_scope("") == ""


def test_default_and_sorted_order_scopes_normalise_alike() -> None:
    assert normalise_scope(MATMUL_DEFAULT) == normalise_scope(MATMUL_SORTED) == MATMUL_SORTED


def test_object_ids_of_two_processes_normalise_alike() -> None:
    assert CALL_RANK0 != CALL_RANK4
    assert normalise_scope(CALL_RANK0) == normalise_scope(CALL_RANK4) == "Default/network-PipelineCell/network-GPT"


def test_op_number() -> None:
    assert [op_number(s) for s in (AG_SCOPE, RS_SCOPE, RECOMPUTE_SCOPE, UPDATE_STATE, CALL_RANK0)] == [0, 0, 2, 699, 1]
    assert op_number(MATMUL_SORTED) == op_number(None) == -1  # sorted dumps print no `-opN`


class Item(NamedTuple):
    name: str
    group: str
    sig: str
    order: int


def run(old: list[Item], new: list[Item]) -> tuple[list, list, list, list]:
    same, changed, removed, added = match(old, new, lambda i: i.group, lambda i: i.sig, lambda i: i.order)
    return ([(a.name, b.name) for a, b in same], [(a.name, b.name) for a, b in changed],
            [i.name for i in removed], [i.name for i in added])


def test_match_pairs_equal_signatures_first_then_by_position() -> None:
    old = [Item("a", "g", "X", 0), Item("b", "g", "Y", 1), Item("c", "g", "Z", 2)]
    new = [Item("d", "g", "Y", 0), Item("e", "g", "W", 1)]
    # b and d share Y although their positions differ; a and e are left and paired by position; c has no partner
    assert run(old, new) == ([("b", "d")], [("a", "e")], ["c"], [])
    assert run(new, old) == ([("d", "b")], [("e", "a")], [], ["c"])


def test_match_pairs_repeated_signatures_in_order_whatever_the_input_order() -> None:
    old = [Item("a1", "g", "X", 0), Item("a2", "g", "X", 1), Item("a3", "g", "X", 2)]
    new = [Item("b2", "g", "X", 5), Item("b1", "g", "X", 3)]
    expected = ([("a1", "b1"), ("a2", "b2")], [], ["a3"], [])
    assert run(old, new) == expected
    shuffled = old[:]
    random.Random(9).shuffle(shuffled)
    assert run(shuffled, new[::-1]) == expected


def test_match_never_pairs_across_groups() -> None:
    old = [Item("a", "stage0", "X", 0), Item("b", "stage0", "Y", 1)]
    new = [Item("c", "stage1", "X", 0)]
    assert run(old, new) == ([], [], ["a", "b"], ["c"])


def test_match_with_scope_keys_pairs_default_and_sorted_order_prints() -> None:
    # the fc1 MatMul of mlp_cpu (default order) and mlp_cpu_sorted: group by normalised scope, order by -opN;
    # both type lines (73 and 69) end `-> (<Tensor[Float32], (16, 64)>)`
    old = [Item("%1", normalise_scope(MATMUL_DEFAULT), "(16, 64)", op_number(MATMUL_DEFAULT))]
    new = [Item("%1", normalise_scope(MATMUL_SORTED), "(16, 64)", op_number(MATMUL_SORTED))]
    assert run(old, new) == ([("%1", "%1")], [], [], [])


def test_instance_names_lose_generated_ids_only() -> None:
    assert normalise_name(INSTANCE_VALIDATE) == normalise_name(INSTANCE_SPE) == "forward_op_?"
    assert normalise_name(FC1) == "fc1" and normalise_name(None) is None


def test_pass_of_file_names() -> None:
    # file names as MindSpore writes them (ls fixtures/mindir/*/rank_0), and one it did not give
    assert [pass_of(n) for n in ("19_validate_0078.ir.xz", "step_parallel_end_0019.ir.xz", "00_bootstrap_0000.ir",
                                 "graph_build_0_0090.ir", "dir/11_pipeline_split_0014.ir.gz")] == [
        "validate", "step_parallel_end", "bootstrap", "graph_build_0", "pipeline_split"]
    assert pass_of("semi_auto_8p_rank_0_validate_fc1_strategy.ir") is None
