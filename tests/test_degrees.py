"""The job's degrees from what its collectives do (issue 37): tensor parallelism is the communication of an operator
splitting a weight, not any operator-forward collective; each figure below is read from the dump's text."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from irtool.cli import main


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
    # (line 7545). No MatMul weight is split (mp 1): it read dp 1 x mp 2.
    ("mindformers_deepseek3_dp2pp4", {"world_size": 8, "pipeline_stages": 4, "dp": 2, "mp": 1}),
])
def test_a_reduction_over_the_batch_is_not_tensor_parallelism(path: str, want: dict) -> None:
    job = _job(str(FIXTURES / path))
    assert {k: job[k]["value"] for k in want} == want
