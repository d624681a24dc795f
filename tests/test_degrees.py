"""The job's degrees from what its collectives do (issue 37): tensor parallelism is the communication of an operator
splitting a weight, not any operator-forward collective; each figure below is read from the dump's text."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

import irtool
from irtool.cli import main
from irtool.parallel import analyze


def _job(path: str) -> dict:
    r = CliRunner().invoke(main, ["summarize", path, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["job"]


@pytest.mark.parametrize(("path", "want"), [
    # make.py: 32 devices, pipeline_stages 4, every MatMul ((8, 1), (1, 1)): the batch split over a stage's 8 ranks,
    # no weight split. rank_24 line 301 `PrimFunc_ReduceMean(%13, (I64(0)), Bool(0))` with `in_strategy: ((8))` (the
    # loss's mean over the batch split 8 ways), line 319 `AllReduce(%14) {instance name: forward_op_...}` on
    # `rank_list: (24, ..., 31)`, once per micro batch (lines 319, 601, 897, 1176): the same 8 ranks as the gradient
    # AllReduce `grad_mirror_MirrorMicroStepOperator` (line 1457). rank_0 line 293 `Send` to `dest_rank: I64(8)`: 8
    # ranks a stage, so dp 8 x mp 1 (it read dp 1 x mp 8).
    ("pipeline_4stage_32p_loss", {"world_size": 32, "pipeline_stages": 4, "dp": 8, "mp": 1}),
    ("pipeline_4stage_32p_loss/rank_24", {"world_size": 32, "pipeline_stages": 4, "dp": 8, "mp": 1}),
    # make.py: MindFormers' DeepSeek-V3 (mcore) dp 2 x mp 1 x pp 4 on 8 devices. rank_2 (stage 1, the first MoE
    # layer) line 7493 `PrimFunc_MeanExt(%185, (I64(0)), ...) {instance name: afb_reduce_mean}` (the router's expert
    # load: the mean over the tokens) with `in_layout` tensor map `((1, 0), -1)` on device matrix `(2, 1)`: the tokens
    # split 2 ways, the mean's AllReduce `forward_op_...` on `rank_list: (2, 3)` (line 7541), then `RealDiv` by 2
    # (line 7545). No MatMul weight is split (mp 1): it read dp 1 x mp 2. Its token dispatcher's expert group
    # "d4735e3a...c51f90" (sha256 of "2": the one rank 2, ep 1) prints the world's `rank_list: (0, ..., 7)`; its
    # AlltoAll (line 7160, moving nothing) says `rank_size: I64(1)`, its AlltoAllVs (7248, 7280) no size: ep 1 (it read 8).
    # Hidden size 256: rank_0 line 2047 `PrimFunc_Embedding(%1, %para58_▸CR_embedding.word_embeddings.weight, ...)` with
    # no in_strategy reads the table `(1024, 256)` by `masked_input` (the vocabulary-parallel rows); it was unknown (no
    # Gather); the vocabulary is not: this rank's rows of a split no strategy prints.
    ("mindformers_deepseek3_dp2pp4", {"world_size": 8, "pipeline_stages": 4, "dp": 2, "mp": 1, "ep": 1,
                                      "hidden_size": 256, "vocab_size": None}),
])
def test_a_reduction_over_the_batch_is_not_tensor_parallelism(path: str, want: dict) -> None:
    job = _job(str(FIXTURES / path))
    assert {k: job[k]["value"] for k in want} == want


SP = "mindformers_deepseek3_sp_dp2mp2pp2"


def _categories(rank: int) -> dict[int, str]:
    """Line -> category of the rank's AllGather and ReduceScatter nodes."""
    facts = analyze(irtool.load(str(FIXTURES / SP / f"rank_{rank}/19_validate_0091.ir.xz")))
    return {c.line: c.category for c in facts.comm if c.op in ("AllGather", "ReduceScatter")}


def test_sequence_parallelism_of_a_mindformers_mla_moe_model() -> None:
    # make.py: MindFormers' DeepSeek-V3 (mcore: MLA, MoE), dp 2 x mp 2 x pp 2, use_seq_parallel=True. Its layers hold
    # (sequence, batch, hidden) activations with `in_layout` tensor map `((1, 0), 2, -1)` on device matrix `(2, 1, 2)`,
    # alias `(dp, cp, tp)`: the sequence on the rightmost axis (stride 1: ranks 0, 1), the batch on dp, hidden whole.
    # rank_0: line 2106 the embedding's user-written `ReduceScatter` (no instance name, rank_size 2) read by line 2116's
    # `Transpose` with `in_strategy: ((2, 2, 1))`; lines 2430, 3549, 5183 `AllGather` `redistribution_op_...` on
    # `tp-0-1` after `split_3d` (`SplitWithSize`, that layout) before the column-parallel `linear_qb`, `linear_kvb`,
    # `linear_fc1`; 3741 likewise; 4969 and 5536 `ReduceScatter` `forward_op_row_parallel` after the row-parallel
    # MatMuls, read by the residual `AddExt` of that layout; the rest their backward (5642 ... 8403): all 14 on the
    # tensor-parallel pair. It read sp 1 (the gathers redistribution, the scatters operator-forward, the embedding's other).
    rank0 = _categories(0)
    assert sorted(rank0) == [2106, 2430, 3549, 3741, 4969, 5183, 5536, 5642, 5974, 6156, 7313, 7331, 7953, 8403]
    assert set(rank0.values()) == {"sequence-parallel"}
    # rank_4 (the MoE layer, head and loss): 10 on `tp-4-5` sequence-parallel; lines 10405, 10585 (and their backward
    # 11495) gather the loss's batch over `(4, 6)`, the data-parallel pair: a redistribution.
    rank4 = _categories(4)
    assert [line for line, c in sorted(rank4.items()) if c != "sequence-parallel"] == [10405, 10585, 11495]
    assert {rank4[line] for line in (10405, 10585, 11495)} == {"redistribution"}
    assert len(rank4) == 13
    job = _job(str(FIXTURES / SP))
    # ep 1: rank 4's dispatcher group "4b227777...28cb0" (sha256 of "4"), line 7734 `AlltoAll` with `rank_size: I64(1)`
    want = {"dp": 2, "mp": 2, "pipeline_stages": 2, "sp": 2, "ep": 1}
    assert {k: job[k]["value"] for k in want} == want
    # the embedding of MindFormers' mcore models: rank_0 line 2068 `PrimFunc_Embedding(%4, %para58_▸CR_embedding.
    # word_embeddings.weight, ...)`, no in_strategy (a Morph of self-defined shard laying the table out (tp, None)),
    # header line 27 `(512, 256)`: make.py's vocabulary 1024 split over tp 2, hidden 256 whole (it read both unknown,
    # as no Gather). The vocabulary stays unknown: the dump prints no split for the rows
    assert (job["hidden_size"]["value"], job["vocab_size"]["value"]) == (256, None)


def test_a_collective_of_the_one_rank_expert_group_moves_nothing() -> None:
    # mindformers_deepseek3_dp2pp4 rank_2: the AlltoAllVs of the dispatcher's group "d4735e3a..." (sha256 of "2"; its
    # AlltoAll, line 7160, says `rank_size: I64(1)`) at lines 7248, 7280 (dispatch), 7902 (combine) and their backward
    # 9928, 12226: ep 1, the tokens stay on the rank. They print the world's 8 ranks and token rows of -1: they counted
    # `expert-parallel 1,073,280 (+12 unknown) B (5)` (12: the runs of those of unknown size).
    r = CliRunner().invoke(main, ["summarize", "--format", "json",
                                  str(FIXTURES / "mindformers_deepseek3_dp2pp4/rank_2/19_validate_0091.ir.xz")])
    doc = json.loads(r.stdout)
    comm = [c for c in doc["comm"] if c["category"] == "expert-parallel"]
    assert [(c["line"], c["group_ranks"], c["bytes"]) for c in comm] == [
        (7248, [2], 0), (7280, [2], 0), (7902, [2], 0), (9928, [2], 0), (12226, [2], 0)]
    # the AlltoAll itself (line 7160, `rank_size: I64(1)` beside the world's `group_rank_ids`, (1, 4) Float32 in and
    # out) moves nothing: 0 bytes, not 16, said among the collectives that move no data
    (alltoall,) = [c for c in doc["no_op_gathers"] if c["line"] == 7160]
    assert (alltoall["op"], alltoall["group_ranks"], alltoall["shape"], alltoall["bytes"]) == ("AlltoAll", [2], [1, 4], 0)
    assert doc["comm_totals"]["by_category"]["expert-parallel"]["bytes"] == 0
