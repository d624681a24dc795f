"""Two parallel configurations of one network: the configuration change first, then one logical graph
(issue 25 item 6, issue 27). Every expected number below was read from the dumps' text (the grep is
beside it), never from irtool's output.

The pair: pipeline_unequal_sgd_8p (old: 5/1/1/1 layers, nn.SGD, 8 micro batches, no recompute) and
pipeline_even_adamw_8p (new: 2/2/2/2, nn.AdamWeightDecay, 4 micro batches, recompute on blocks 0, 1, 4),
one network (make.py of each), dp1 x mp2 x pp4, ranks 0, 2, 4, 6 (stages 0-3). Then gpt_small_dp2mp2pp2 against
gpt_small_dp1mp4pp2 and gpt_small_dp2mp2pp2_m8, and the MindFormers Llama mindformers_llama_dp2mp2pp2 against
mindformers_llama_dp1mp4pp2 (dp2 x mp2 -> dp1 x mp4).
"""
from __future__ import annotations

import json
import lzma
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import reads

from irtool import analyze, load
from irtool.cli import main
from irtool.diff import diff, diff_dirs
from irtool.diff.report import MARKDOWN_LIMIT, to_json, to_markdown, to_text
from irtool.parallel.logical import strategy_follows
from irtool.parallel.operators import OperatorKey
from irtool.parallel.scope import user_cell
from irtool.present.job import change_text
from irtool.selection import Selection, job_of, logical_of

F = Path(__file__).resolve().parent.parent / "fixtures" / "mindir"
OLD, NEW = F / "pipeline_unequal_sgd_8p", F / "pipeline_even_adamw_8p"
VALIDATE = "19_validate_0078.ir.xz"


# the tests of one pair run on the worker that read it (conftest.py): each pair is diffed once there (`compared`,
# `llama_pair`)
PAIR = pytest.mark.xdist_group("logical_pair")


def run(*args: object) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["diff", *map(str, args)])
    return res.exit_code, res.output


@cache
def compared(by_rank: bool = False):
    return diff_dirs(str(OLD), str(NEW), by_rank=by_rank)


# The configuration block, each line from the dumps:
# - micro batches: `grep -o 'micro: I64([0-9]*)' | sort -u` gives 0-7 on every old rank, 0-3 on every new one;
# - the layers each stage holds: the `# Params` lines `%paraN_layers.K.*` of each rank: old rank 0 layers 0-4,
#   rank 2 layer 5, rank 4 layer 6, rank 6 layer 7; new ranks 0/2/4/6 layers 0-1, 2-3, 4-5, 6-7;
# - recompute: `grep 'duplicated: Bool(1)' -A2` scopes: new rank 0 `0-Block` and `1-Block`, rank 4 `4-Block`;
#   none on any old rank;
# - optimizer: old `= SGD(` (21 nodes on rank 0), new `= PrimFunc_AdamWeightDecay(`.
CONFIG_LINES = [
    "Configuration changed (old → new), so the two are compared as one logical graph (--by-rank: rank with rank):",
    "  micro batches 8 → 4",
    "  stage 0 layers 0-4 → 0-1",
    "  stage 1 layers 5 → 2-3",
    "  stage 2 layers 6 → 4-5",
    "  stage 3 layers 7 → 6-7",
    "  recompute none → layers 0-1, 4",
    "  optimizer SGD → AdamWeightDecay",
]


@PAIR
def test_the_configuration_change_is_said_first_in_one_block() -> None:
    code, text = run(OLD, NEW)
    assert code == 1
    lines = text.splitlines()
    # the verdict first, the configuration its first reason, then the block, before any table
    assert lines[0].startswith("FAIL: configuration: micro batches 8 → 4; stage 0 layers 0-4 → 0-1; stage 1 layers "
                               "5 → 2-3; stage 2 layers 6 → 4-5; stage 3 layers 7 → 6-7; recompute none → layers 0-1, "
                               "4; optimizer SGD → AdamWeightDecay")
    assert lines[1:9] == CONFIG_LINES
    assert lines[-1] == lines[0]  # and again last, for a CI log's tail
    # the old answer was 1,191 lines rank by rank; the logical one fits a screen or two
    assert len(lines) < 120


@PAIR
def test_markdown_and_json_say_the_configuration_first() -> None:
    md = to_markdown(compared())
    assert len(md) <= MARKDOWN_LIMIT
    head = md.split("\n\n")
    assert head[0] == "### :x: irtool diff: 2 failing difference(s)"
    assert head[1].startswith("- **configuration: micro batches 8 → 4; stage 0 layers 0-4 → 0-1;")
    assert "| micro batches | 8 | 4 |" in md and "| recompute | none | layers 0-1, 4 |" in md
    assert "| optimizer | SGD | AdamWeightDecay |" in md and "| stage 0 layers | 0-4 | 0-1 |" in md
    code, out = run(OLD, NEW, "--format", "json")
    doc = json.loads(out)
    assert list(doc)[:4] == ["schema", "verdict", "failed", "failures"] and doc["schema"] == "irtool.diff/2"
    assert doc["mode"] == "logical" and doc["ranks"] == []
    changes = {(c["field"], c["stage"]): (c["old"], c["new"]) for c in doc["configuration"]["changes"]}
    assert changes == {("micro_batches", None): (8, 4), ("stage_layers", 0): ([0, 1, 2, 3, 4], [0, 1]),
                       ("stage_layers", 1): ([5], [2, 3]), ("stage_layers", 2): ([6], [4, 5]),
                       ("stage_layers", 3): ([7], [6, 7]), ("recompute_layers", None): ([], [0, 1, 4]),
                       ("optimizer", None): ("SGD", "AdamWeightDecay")}
    assert doc["failures"][0].startswith("configuration: micro batches 8 → 4")


@PAIR
def test_fail_on_config_alone_and_without_it() -> None:
    assert compared().failures(["config"]) == [compared().failures()[0]]
    # no user operator is on one side only (the same network): `ops` alone passes
    assert compared().failures(["ops"]) == []


def _pair(result, layer: int, op: str, occurrence: int):
    return next(p for p in result.logical.ops
                if p.key == OperatorKey(f"Net/layers-CellList/{layer}-Block", op, layer, occurrence))


@PAIR
def test_a_weights_slices_and_a_layers_allreduces_on_each_side() -> None:
    result = compared()
    assert result.mode == "logical"
    # `%para4_layers.0.w1: <Ref[Tensor[Float32]], (64, 128), ...>` on rank 0 of both: the same slice (mp 2 of a
    # (64, 256) weight), 64 * 128 * 4 = 32,768 bytes, read by the first MatMul of block 0 (`self.fc1(h, self.w1)`)
    fc1 = _pair(result, 0, "MatMul", 0)
    for side in (fc1.old, fc1.new):
        assert [(h.name, h.shape, h.bytes) for h in side.params] == [("layers.0.w1", (64, 128), 32768)]
    # block 0 holds w1 (64, 128), w2 (128, 64), norm.gamma (64), norm.beta (64): 32,768 * 2 + 256 * 2 = 66,048
    layer0 = next(p for p in result.logical.layers if p.layer == 0)
    assert layer0.old.weights.exact == layer0.new.weights.exact == 66048
    # The model-parallel AllReduces of block 0 (group_rank_ids: (0, 1)):
    # old rank 0: `grep -A2 '= AllReduce(' | grep -c 'layers-CellList/0-Block/AllReduce'` = 8 forward (one per
    # micro batch), each `-> (<Tensor[Float32], (8, 64)>)` = 2,048 bytes; their 8 backward counterparts are among
    # the 40 printed under `4-Block/Grad_AllReduce/AllReduce` (8 micro batches x blocks 0-4): 16, 32,768 bytes.
    # new rank 0: 4 forward under `recompute_Default/.../0-Block/AllReduce`, each (16, 64) = 4,096 bytes, and 4 of
    # the 8 under `1-Block/Grad_AllReduce/AllReduce` (4 micro batches x blocks 0-1): 8, 32,768 bytes.
    old = layer0.old.by_category()["operator-forward"]
    new = layer0.new.by_category()["operator-forward"]
    assert (old.count, old.bytes.exact, old.group_sizes) == (16, 32768, (2,))
    assert (new.count, new.bytes.exact, new.group_sizes) == (8, 32768, (2,))
    text = to_text(result)
    assert "  layer 0                operator-forward  16 → 8 (×0.50)   32,768 → 32,768          2 → 2" in text


@PAIR
def test_an_operator_is_not_its_instance_name() -> None:
    # MindSpore merges primitives of equal attributes: block 6's second MatMul (`6-Block/MatMul-op1`) is named
    # `fc2` on old rank 4 (stage 2) and `proj_out` on new rank 6 (stage 3), where proj_out's MatMul is sharded alike.
    # It is one user operator, on stage 2 then 3.
    result = compared()
    fc2 = _pair(result, 6, "MatMul", 1)
    assert fc2.old is not None and fc2.new is not None
    assert (fc2.old.stage, fc2.new.stage) == (2, 3) and "stage" in fc2.fields
    assert [h.name for h in fc2.old.params] == [h.name for h in fc2.new.params] == ["layers.6.w2"]
    assert not [p for p in result.logical.ops if p.change in ("added", "removed")]


@PAIR
def test_a_top_cells_operators_before_and_after_the_layers_are_told_apart() -> None:
    # proj_in (rank 0) and proj_out (rank 6) are both printed `_backbone-Net/MatMul-op0` (grep): by cell,
    # operator and creation order they would be one operator; by layer (data flow) they are not
    keys = {}
    for rank in (0, 6):
        dump = load(str(OLD / f"rank_{rank}" / VALIDATE))
        t = analyze(dump, rank).table
        keys[rank] = {k for n, k in t.column("operator").items() if k.cell == "Net" and k.op == "MatMul"}
    assert keys[0] == {OperatorKey("Net", "MatMul", -1, 0)}  # proj_in reads x: before any layer
    assert keys[6] == {OperatorKey("Net", "MatMul", 7, 0)}  # proj_out reads block 7's output


def test_user_cells_drop_the_wrappers() -> None:
    scope = "Default/net_with_loss-PipelineCell/network-WithLossCell/_backbone-Net/layers-CellList/0-Block/MatMul-op0"
    assert user_cell(scope) == "Net/layers-CellList/0-Block"
    assert user_cell("Gradients/recompute_" + scope.replace("/MatMul-op0", "/Grad_MatMul/MatMul-op3")) == \
        "Net/layers-CellList/0-Block"
    # MindFormers: the network under its virtual dataset and pipeline cells
    assert user_cell("Default/network-_VirtualDatasetCell/_backbone-PipelineCell/network-LlamaForCausalLM/"
                     "model-LlamaModel/layers-CellList/1-LLamaDecodeLayer/attention-LLamaAttention/wq-Linear/"
                     "MatMul-op0") == "LlamaForCausalLM/model-LlamaModel/layers-CellList/1-LLamaDecodeLayer/" \
                                      "attention-LLamaAttention/wq-Linear"
    # a wrapper's own work (micro-batch slicing), and the training step's cells beside a wrapped network
    assert user_cell("Default/net_with_loss-PipelineCell/micro_inputs-CellList/0-_MicroBatch/StridedSlice-op0") is None
    assert user_cell("Default/clip_grad_norm-ClipGradNorm/Square-op0", in_wrapper=True) is None


@PAIR
def test_the_logical_graph_of_a_folder() -> None:
    g = logical_of(Selection.of(str(NEW)))
    doc = g.as_dict()
    assert doc["schema"] == "irtool.logical/1"
    assert [s["layers"] for s in doc["stages"]] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    # every block's 5 operators (LayerNorm, MatMul, ReLU, MatMul, Add: make.py Block.construct), proj_in, proj_out
    # and the loss; one record each whatever the micro batches, copies and backward nodes
    blocks = [o for o in g.ops if "/layers-CellList/" in o.key.cell]
    assert len(blocks) == 8 * 5
    fc1 = next(o for o in blocks if o.key == OperatorKey("Net/layers-CellList/0-Block", "MatMul", 0, 0))
    # forward MatMul (16, 64) x (64, 128) per micro batch (its type line): 2 * 16 * 64 * 128 = 262,144 FLOPs,
    # 4 micro batches; block 0 is recomputed (`duplicated`), so once more in recompute
    assert fc1.flops["forward"] == fc1.flops["recompute"] == 4 * 262144 and fc1.recomputed
    assert fc1.strategy == {"in_strategy": ((1, 1), (1, 2))}
    # the edges: Block.construct `self.res(x, self.fc2(self.act(self.fc1(h, self.w1)), self.w2))` with x, for
    # block 0, what Net.construct's `self.proj_in(x, self.w_in)` gave
    add = next(o for o in blocks if o.key == OperatorKey("Net/layers-CellList/0-Block", "Add", 0, 0))
    assert add.inputs == [OperatorKey("Net", "MatMul", -1, 0), OperatorKey("Net/layers-CellList/0-Block", "MatMul", 0, 1)]
    assert fc1.source.endswith("make.py:48 return self.res(x, self.fc2(self.act(self.fc1(h, self.w1)), self.w2))")


@PAIR
def test_a_pr_comment_never_outgrows_github() -> None:
    # rank with rank the same pair is the wall of 1,200 lines the issue measured: its Markdown is cut to fit
    result = compared(by_rank=True)
    md = to_markdown(result)
    assert len(md) <= MARKDOWN_LIMIT
    assert md.rstrip().endswith("Everything: the same command with `--format text --all`, or `--format json`._")
    assert "_Left out to fit a pull-request comment (60,000 characters): " in md
    assert md.count("<details") == md.count("</details>")  # a cut block is closed
    small = to_markdown(result, room=8000)
    assert len(small) <= 8000 and "Left out" in small and small.startswith("### :x: irtool diff: ")


# --- gpt_small_dp2mp2pp2's GPT with one change each (fixtures gpt_small_dp1mp4pp2, gpt_small_dp2mp2pp2_m8), rank 0
# of each side (stage 0: embedding, layers 0 and 1)

GPT = F / "gpt_small_dp2mp2pp2" / "rank_0" / VALIDATE


@cache
def gpt_pair(other: str):
    return diff(load(str(GPT)), load(str(F / other / "rank_0" / VALIDATE)))


@reads("gpt_small_dp2mp2pp2")
def test_tensor_parallel_2_against_4() -> None:
    result = gpt_pair("gpt_small_dp1mp4pp2")
    # dp x mp of one stage (ranks 0-3, stage of rank r = r // 4): the forward AllReduce of the row-parallel wo/w2
    # MatMuls print `group_rank_ids: (0, 1)` (mp 2, so dp 4 / 2 = 2) against `(0, 1, 2, 3)` (mp 4, dp 1)
    assert [change_text(c) for c in result.config] == ["dp 2 → 1", "mp 2 → 4"]
    assert result.mode == "logical"
    d = result.logical
    # `# Params`: %para7_0.attention.wq.weight (64, 128) -> (32, 128), read by wq's Cast (`self.cast(self.weight, fp16)`)
    wq = next(p for p in d.ops if p.side.params and p.side.params[0].name == "0.attention.wq.weight")
    assert (wq.old.params[0].shape, wq.new.params[0].shape) == ((64, 128), (32, 128))
    # block 0's 16 parameters, Float32: norms 4 x (128) = 2,048; wq, wk, wv (64, 128) 3 x 32,768 and their biases
    # (64) 3 x 256; wo (128, 64) 32,768 + bias 512; w1 (256, 128) 131,072 + bias 1,024; w2 (128, 256) 131,072 +
    # bias 512: 398,080. mp 4: (32, 128) 3 x 16,384 + 3 x 128; wo (128, 32) 16,384 + 512; w1 (128, 128) 65,536 + 512;
    # w2 (128, 128) 65,536 + 512; norms 2,048: 200,576
    layer0 = next(p for p in d.layers if p.layer == 0)
    assert (layer0.old.weights.exact, layer0.new.weights.exact) == (398080, 200576)
    # block 0's tensor-parallel AllReduces: `grep -A2 '= AllReduce('` scopes `0-DecoderLayer/.../wo-Linear/AllReduce`
    # and `.../w2-Linear/AllReduce`: 6 (wo and w2 per micro batch, 2, and wo's recomputed copy, 2: block 0 is
    # recomputed), each `-> (<Tensor[Float16], (128, 128)>)` 32,768 bytes on (0, 1); with their 4 backward
    # counterparts (the 8 `1-DecoderLayer/feed_forward-MLP/w2-Linear/Grad_AllReduce/AllReduce` are blocks 0 and 1's):
    # 10, 327,680 bytes. mp 4: the same 10, each (256, 128) 65,536 bytes on (0, 1, 2, 3): 655,360
    old, new = layer0.old.by_category()["operator-forward"], layer0.new.by_category()["operator-forward"]
    assert (old.count, old.bytes.exact, old.group_sizes) == (10, 327680, (2,))
    assert (new.count, new.bytes.exact, new.group_sizes) == (10, 655360, (4,))
    # wq's MatMul: `in_strategy: ((2, 1), (2, 1))` -> `((1, 1), (4, 1))`
    mm = next(p for p in d.ops
              if p.key.cell.endswith("0-DecoderLayer/attention-Attention/wq-Linear") and p.key.op == "MatMul")
    assert (mm.old.strategy["in_strategy"], mm.new.strategy["in_strategy"]) == (((2, 1), (2, 1)), ((1, 1), (4, 1)))
    # its 2 -> 1 is dp's change, its 2 -> 4 mp's: it follows from the layout, so it is one of the operators the
    # grouped line counts, and its row is printed only with --all (limit None)
    assert mm.follows == ("dp", "mp")
    text, every = to_text(result), to_text(result, limit=None)
    n = sum("mp" in p.follows for p in d.ops)
    assert f"mp 2 → 4: {n} operators' strategies change accordingly (their model-parallel dimension 2 → 4)" in text
    assert "(2,1)(2,1) → (1,1)(4,1)" not in text and "(2,1)(2,1) → (1,1)(4,1)" in every
    # with mp's change alone, its 2 -> 1 follows from nothing: listed
    assert strategy_follows(mm.old, mm.new, {"mp": (2, 4)}) == ()
    assert strategy_follows(mm.old, mm.new, {"dp": (2, 1), "mp": (2, 4)}) == ("dp", "mp")


@reads("gpt_small_dp2mp2pp2")
def test_two_micro_batches_against_eight() -> None:
    result = gpt_pair("gpt_small_dp2mp2pp2_m8")
    # `grep -o 'micro: I64([0-9]*)' | sort -u`: 0-1 against 0-7; and the global batch, said first as it is not the
    # layout: `%para1_inputs0: <Tensor[Int32], (8, 64)> : [8, 64]` against `(16, 64)> : [16, 64]` (line 22 of each;
    # make.py's GPT_BATCH 8 -> 16)
    assert [change_text(c) for c in result.config] == ["global batch 8 → 16", "micro batches 2 → 8"]
    assert [c.model for c in result.config] == [True, False]
    text = to_text(result).splitlines()
    assert text[1:5] == ["Model and data changed (old → new), not the parallel layout: the figures below change with it:",
                         "  global batch 8 → 16",
                         "Configuration changed (old → new), so the two are compared as one logical graph (--by-rank: "
                         "rank with rank):", "  micro batches 2 → 8"]
    # 8 = 2 per data-parallel rank and micro batch x dp 2 x 2 micro batches; 16 = 1 x 2 x 8
    assert result.old_job.global_batch.where.endswith("2 per data-parallel rank and micro batch x dp 2 x 2 micro batches")
    assert result.new_job.global_batch.where.endswith("1 per data-parallel rank and micro batch x dp 2 x 8 micro batches")
    d = result.logical
    assert not [p for p in d.ops if p.change in ("added", "removed")] and not [p for p in d.ops if "strategy" in p.fields]
    # block 0's tensor-parallel AllReduces (as above): 10 of (128, 128) Float16 = 32,768 bytes against 4 times as
    # many of (64, 128) = 16,384 bytes (the global batch goes 8 -> 16: 4 samples per micro batch, 2 per dp rank,
    # against 2 and 1): 40, 655,360 bytes
    layer0 = next(p for p in d.layers if p.layer == 0)
    old, new = layer0.old.by_category()["operator-forward"], layer0.new.by_category()["operator-forward"]
    assert (old.count, old.bytes.exact) == (10, 327680) and (new.count, new.bytes.exact) == (40, 655360)
    assert layer0.old.weights.exact == layer0.new.weights.exact == 398080


# --- the MindFormers Llama (mindformers_llama_dp2mp2pp2) against the same network as dp1 x mp4 x pp2
# (mindformers_llama_dp1mp4pp2: batch 2 per micro batch, global batch 8 on both), ranks 0 and 4 (stages 0, 1),
# validate (19_validate_0089). Every figure below is read from `xz -dc rank_N/19_validate_0089.ir.xz` of both sides
# (old line -> new line); the manifest of mindformers_llama_dp1mp4pp2 lists the same hand counts.

LLAMA_OLD, LLAMA_NEW = F / "mindformers_llama_dp2mp2pp2", F / "mindformers_llama_dp1mp4pp2"


@cache
def llama_pair():
    return diff_dirs(str(LLAMA_OLD), str(LLAMA_NEW))


def _holding(result, name: str):
    """The user operator that holds a weight (the first reading it), and that weight on each side."""
    pair = next(p for p in result.logical.ops if any(h.name == name for h in p.side.params))
    held = [next(h for h in side.params if h.name == name) for side in (pair.old, pair.new)]
    return pair, held


@reads("mindformers_llama_dp2mp2pp2")
def test_llama_tensor_parallel_2_against_4_configuration_first() -> None:
    result = llama_pair()
    # mp: the row-parallel wo's forward AllReduce prints `group_rank_ids: (0, 1)` (rank 0 line 5182) against
    # `(0, 1, 2, 3)` (line 5219); dp = 4 ranks per stage / mp. Optimizer sharding: old line 129 `AllGather` of
    # `parallel_optimizer_allgather_not_recompute` on `group_rank_ids: (0, 2)` (15 on rank 0, 17 on rank 4), none
    # on the new side (`grep -c '= AllGather('` 0 on both ranks: dp 1 leaves nothing to shard)
    assert [change_text(c) for c in result.config] == ["dp 2 → 1", "mp 2 → 4", "optimizer sharding 2 → 1"]
    assert result.mode == "logical" and result.failures()[0] == "configuration: dp 2 → 1; mp 2 → 4; optimizer sharding 2 → 1"
    # what did not change: micro batches (`grep -o 'micro: I64([0-9]*)' | sort -u`: 0-3 on both ranks of both
    # sides), the recompute set (`grep -c 'duplicated: Bool(1)'` 164 on every rank, 82 under each of
    # `layers-CellList/0-` and `1-` on rank 0, `2-` and `3-` on rank 4), the layers of each stage
    for side in (result.logical.old, result.logical.new):
        assert side.job.micro_batches.value == 4
        assert side.job.recompute == {0: [0, 1], 1: [2, 3]} and side.job.stage_layers == {0: [0, 1], 1: [2, 3]}


@reads("mindformers_llama_dp2mp2pp2")
def test_llama_tensor_parallel_2_against_4_per_layer() -> None:
    d = llama_pair().logical
    # `# Params` of rank 0 (line 22 on): wq (128, 512) on both sides (the mp 2 slice (256, 512) halved again by the
    # optimizer shard over dp 2, against the mp 4 slice); wo (256, 256) -> (512, 128); w1 (352, 512) both;
    # w2 (256, 704) -> (512, 352); rank 4: lm_head (1024, 512) both
    for name, old, new in (("model.layers.0.attention.wq.weight", (128, 512), (128, 512)),
                           ("model.layers.0.attention.wo.weight", (256, 256), (512, 128)),
                           ("model.layers.0.feed_forward.w1.weight", (352, 512), (352, 512)),
                           ("model.layers.0.feed_forward.w2.weight", (256, 704), (512, 352)),
                           ("lm_head.weight", (1024, 512), (1024, 512))):
        _, held = _holding(llama_pair(), name)
        assert [h.shape for h in held] == [old, new], name
    # the weight bytes a rank holds per layer, Float32: wq 262,144 + wk, wv (64, 512) 131,072 each + wo 262,144 +
    # w1, w2, w3 720,896 each + the two norms (512) 2,048 each = 2,953,216 on both sides, every layer
    assert [p.label for p in d.layers[:4]] == ["layer 0", "layer 1", "layer 2", "layer 3"]
    for p in d.layers[:4]:
        assert (p.old.weights.exact, p.new.weights.exact) == (2953216, 2953216), p.label
    # Each layer's tensor-parallel AllReduces, 5 nodes: the forward one after wo and after w2, wo's recomputed one
    # in the bprop graph, the gradients of the two (`%N(dx) = AllReduce`). Old rank 0: layer 0 lines 5182, 5761,
    # 14828, 15244, 16140; layer 1 7402, 7981, 9743, 10159, 11055 (MindSpore prints layer 1's gradients under
    # `0-LLamaDecodeLayer/.../w2-Linear/Grad_AllReduce`; 10159 reduces `Reshape(%para164_Parameter_13442)`, the
    # gradient arriving at layer 1's output); rank 4: layer 2 5442, 6021, 16405, 16821, 17717; layer 3 7662, 8241,
    # 11320, 11736, 12632. The forward graph is called and its bprop bound 4 times (once per micro batch): 20 per
    # layer per step, each `-> (<Tensor[Float16], (512, 512)>)` 524,288 bytes on (0, 1) / (4, 5) against
    # `(1024, 512)` 1,048,576 bytes on (0, 1, 2, 3) / (4, 5, 6, 7).
    # The optimizer shard's AllGather and ReduceScatter of each layer's 7 sharded weights vanish.
    for p in d.layers[:4]:
        old, new = p.old.by_category(), p.new.by_category()
        tp_old, tp_new = old["operator-forward"], new["operator-forward"]
        assert (tp_old.count, tp_old.bytes.exact, tp_old.group_sizes) == (20, 10485760, (2,)), p.label
        assert (tp_new.count, tp_new.bytes.exact, tp_new.group_sizes) == (20, 20971520, (4,)), p.label
        assert old["optimizer-parallel"].count == 14 and "optimizer-parallel" not in new
    # the head and the loss are no layer's: the loss's vocab-parallel AllReduces (rank 4 lines 8512, 8584, 8906 ->
    # 8744, 8816, 9148, once per micro batch) `(512, 1)` / `(512)` Float32 2,048 bytes -> `(1024, 1)` / `(1024)`
    # 4,096 bytes: 12 per step, 24,576 -> 49,152, counted with the head, not in layer 3
    head = next(p for p in d.layers if p.label == "no layer (last stage)")
    loss_old, loss_new = head.old.by_category()["operator-forward"], head.new.by_category()["operator-forward"]
    assert (loss_old.count, loss_old.bytes.exact, loss_new.count, loss_new.bytes.exact) == (12, 24576, 12, 49152)
    # Send/Receive: 4 + 4 per rank on both sides (`grep -c '= Send('`, `'= Receive('`), `shape: [1, 512, 512]` ->
    # `[2, 512, 512]` Float16: 524,288 -> 1,048,576 bytes each, 4,194,304 -> 8,388,608 per rank per step
    for old, new in zip(d.old.stages, d.new.stages):
        p_old, p_new = old.by_category()["pipeline"], new.by_category()["pipeline"]
        assert (p_old.count, p_old.bytes.exact, p_new.count, p_new.bytes.exact) == (8, 4194304, 8, 8388608)
    # ClipGradNorm's two AllReduces and the overflow flag's (rank 0 lines 2508, 2511, 3072 on both sides) reduce
    # every gradient: around no operator, so no operator's communication 'vanished' or 'appeared' with them
    assert not [p for p in d.ops for _, a, b in p.comm_changes() if (a or b).category == "other"]  # type: ignore[union-attr]


@reads("mindformers_llama_dp2mp2pp2")
def test_llama_wq_matmul_changes_strategy_not_flops() -> None:
    d = llama_pair().logical
    # wq's MatMul (rank 0 old line 3730, new 3767): `in_strategy: ((2, 1), (2, 1))`, (512, 512) x (256, 512)^T ->
    # (512, 256), against `((1, 1), (4, 1))`, (1024, 512) x (128, 512)^T -> (1024, 128): 2 * 512 * 512 * 256 =
    # 2 * 1024 * 512 * 128 = 134,217,728 FLOPs per micro batch on both, 4 micro batches, recomputed alike
    mm = next(p for p in d.ops if p.key == OperatorKey(
        "LlamaForCausalLM/model-LlamaModel/layers-CellList/0-LLamaDecodeLayer/attention-LLamaAttention/wq-Linear",
        "MatMul", 0, 0))
    assert (mm.old.strategy, mm.new.strategy) == ({"in_strategy": ((2, 1), (2, 1))}, {"in_strategy": ((1, 1), (4, 1))})
    assert mm.old.flops["forward"] == mm.new.flops["forward"] == mm.old.flops["recompute"] == 4 * 134217728
    assert "strategy" in mm.fields and "flops" not in mm.fields


@reads("mindformers_llama_dp2mp2pp2")
def test_llama_markdown_and_json() -> None:
    result = llama_pair()
    md = to_markdown(result)
    assert len(md) <= MARKDOWN_LIMIT
    head = md.split("\n\n")
    assert head[1].startswith("- **configuration: dp 2 → 1; mp 2 → 4; optimizer sharding 2 → 1**")
    assert "| dp | 2 | 1 |" in md and "| mp | 2 | 4 |" in md
    # the per-layer communication (above): layer 0's 20 tensor-parallel AllReduces double in bytes, group 2 -> 4
    assert "| layer 0 | operator-forward | 20 → 20 | 10,485,760 → 20,971,520 (×2.00) | 2 → 4 |" in md
    doc = json.loads(to_json(result))
    assert doc["mode"] == "logical" and doc["ranks"] == []
    assert [(c["field"], c["old"], c["new"]) for c in doc["configuration"]["changes"]] == [
        ("dp", 2, 1), ("mp", 2, 4), ("optimizer_shard", 2, 1)]
    layer3 = next(x for x in doc["logical"]["layers"] if x["label"] == "layer 3")
    assert layer3["old"]["weights"] == layer3["new"]["weights"] == {"bytes": 2953216, "unknown": 0}
    assert layer3["old"]["comm_by_category"]["operator-forward"] == {"count": 20, "bytes": 10485760, "unknown": 0,
                                                                     "group_sizes": [2]}
    assert layer3["new"]["comm_by_category"]["operator-forward"] == {"count": 20, "bytes": 20971520, "unknown": 0,
                                                                     "group_sizes": [4]}
    # the head is keyed after layer 3 (it reads layer 3's output) but is no layer's
    lm_head = next(o for o in doc["logical"]["ops"]
                   if o["cell"] == "LlamaForCausalLM/lm_head-Linear" and o["op"] == "MatMul")
    assert (lm_head["layer"], lm_head["after_layer"]) == (None, 3)


def test_an_moe_layers_expert_weights_are_in_its_weights() -> None:
    # mindformers_moe_dp2mp2pp2_ep2 rank 0 `# Params` lines 27-35, Float32: the two norms (512) 2,048 each, wq
    # (128, 512) 262,144, wk and wv (64, 512) 131,072 each, wo (256, 256) 262,144, router_dense (4, 512) 8,192, the
    # experts' ffn.w1 (1, 512, 2816) 5,767,168 and ffn.w2 (1, 1408, 512) 2,883,584: 9,449,472 for layer 0 and alike
    # for layer 1 (lines 36-44). ffn.w1 is read by a Cast passed into the experts' call (line 191), by no user
    # operator first: it was left out (3,682,304)
    g = logical_of(Selection.of(str(F / "mindformers_moe_dp2mp2pp2_ep2")))
    rows = {x.label: x.weights.exact for x in g.layers}
    assert rows["layer 0"] == rows["layer 1"] == 9449472
    # moe_8p rank 0: moe.0.router.w_gate (64, 8) 2,048, moe.0.w1 (1, 64, 128) and moe.0.w2 (1, 128, 64) 32,768 each
    g = logical_of(Selection.of(str(F / "moe_8p")))
    assert {x.label: x.weights.exact for x in g.layers}["layer 0"] == 67584


# --- the model's and data's sizes, said before the layout (issue 37): the MindFormers Llama above compiled again with
# one size changed (`make.py` of each: the MFL_* default that differs), ranks 0 and 4, validate (19_validate_0089)

LLAMA_L8, LLAMA_H1024 = F / "mindformers_llama_dp2mp2pp2_l8", F / "mindformers_llama_dp2mp2pp2_h1024"


@reads("mindformers_llama_dp2mp2pp2")
def test_a_wider_model_is_said_first_not_as_the_layouts_doing() -> None:
    result = diff_dirs(str(LLAMA_OLD), str(LLAMA_H1024))
    # the embedding's Gather, rank 0 line 3279 on both, reading `Load(%para117_▸CR_model.tok_embeddings.embedding_weight`
    # (the cell-reuse graph's parameter): `in_strategy: ((2, 1), (2, 1))` over
    # `(<Tensor[Float32], (2048, 512)>, <Tensor[Int32], (1, 512)>` against `(2048, 1024)`: a (4096, 512) table against
    # (4096, 1024), sequences of 512 on both; line 23 `%para1_inputs0: <Tensor[Int32], (8, 513)> : [8, 513]` on both
    assert [change_text(c) for c in result.config] == ["hidden size 512 → 1024"]
    assert result.mode == "logical" and result.config[0].model
    # `irtool view` of the two says it once, as its page's first line, not as the layout's change
    from irtool.view.logical import headline

    assert headline(result.logical)["lines"][0] == ("Model and data changed, not the parallel layout: hidden size "
                                                    "512 → 1024 (every figure below changes with it)")
    # the feed-forward size: w3 `(704, 512)` -> `(704, 1024)` split `((2, 1), (2, 1))` (line 5513): 1408 on both
    for job, hidden in ((result.old_job, 512), (result.new_job, 1024)):
        assert (job.hidden_size.value, job.vocab_size.value, job.sequence_length.value) == (hidden, 4096, 512)
        assert job.ffn_size.value == 1408 and job.ffn_size.where.endswith(
            f":5513 (▸CR_model.layers.0.feed_forward.w3.weight (1408, {hidden}) whole: 1408 beside the hidden "
            f"size {hidden})")
        assert job.global_batch.value == 8 and job.hidden_size.where.endswith(
            f"19_validate_0089.ir.xz:3279 (Gather of ▸CR_model.tok_embeddings.embedding_weight (2048, {hidden}) "
            f"split (2, 1): {hidden} wide)")
    lines = to_text(result).splitlines()
    assert lines[1:3] == ["Model and data changed (old → new), not the parallel layout: the figures below change with it, "
                          "so the two are compared as one logical graph (--by-rank: rank with rank):",
                          "  hidden size 512 → 1024"]
    # layer 0's weights on rank 0 (`# Params` lines 27-35), Float32: norms (512) -> (1024) 2 x 2,048 -> 2 x 4,096; wq
    # (128, 512) -> (256, 1024) 262,144 -> 1,048,576; wk, wv (64, 512) -> (128, 1024) 2 x 131,072 -> 2 x 524,288; wo
    # (256, 256) -> (512, 512) 262,144 -> 1,048,576; w1, w3 (352, 512) -> (352, 1024) and w2 (256, 704) -> (512, 704)
    # 3 x 720,896 -> 3 x 1,441,792: 2,953,216 -> 7,479,296 (x2.53), the hidden size's doing
    layer0 = next(p for p in result.logical.layers if p.label == "layer 0")
    assert (layer0.old.weights.exact, layer0.new.weights.exact) == (2953216, 7479296)
    md = to_markdown(result)
    assert "| hidden size | 512 | 1024 |" in md


@reads("mindformers_llama_dp2mp2pp2")
def test_more_layers_and_the_recompute_of_the_new_ones() -> None:
    result = diff_dirs(str(LLAMA_OLD), str(LLAMA_L8))
    # `# Params` `%paraN_model.layers.K.*`: rank 0 layers 0-1 -> 0-3, rank 4 2-3 -> 4-7 (both stages read on both
    # sides: 4 -> 8 layers); `grep -A2 'duplicated: Bool(1)'` scopes: 82 under each of `layers-CellList/0-` .. `3-`
    # (old) and `0-` .. `7-` (new): layers 0-7 recomputed, 4-7 only in the new job, once left out ("0-3 → 0-3": no change)
    assert [change_text(c) for c in result.config] == [
        "layers 4 → 8", "stage 0 layers 0-1 → 0-3", "stage 1 layers 2-3 → 4-7", "recompute layers 0-3 → layers 0-7"]
    assert [c.model for c in result.config] == [True, False, False, False]
    lines = to_text(result).splitlines()
    assert lines[1:4] == ["Model and data changed (old → new), not the parallel layout: the figures below change with it:",
                          "  layers 4 → 8",
                          "Configuration changed (old → new), so the two are compared as one logical graph (--by-rank: "
                          "rank with rank):"]
    assert result.new_job.recompute == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
    # one stage read on the new side: its layers 4-7 may be more, the count unknown; recompute is compared on the
    # layers both sides know, 4-7 (the old job read every stage: it has none of them)
    one = diff_dirs(str(LLAMA_OLD), str(LLAMA_L8 / "rank_4"))
    assert not one.new_job.num_layers.known and one.new_job.num_layers.where == "layers 4-7 read; stage 0 not read"
    assert [change_text(c) for c in one.config if c.field == "recompute_layers"] == ["recompute none → layers 4-7"]


def test_the_global_batch_from_the_inputs_whole_shape() -> None:
    # opt_parallel_8p (`dataset_strategy="data_parallel"`, 8 samples per device): line 21
    # `%para1_inputs0: <Tensor[Float32], (8, 64)> : [64, 64]`; semi_auto_8p (full batch): `(512, 64)> : [512, 64]`
    for folder, batch in (("opt_parallel_8p", 64), ("semi_auto_8p", 512)):
        job = job_of(Selection.of(str(F / folder / "rank_0")))
        assert job.global_batch.value == batch, folder
    # parallel_mode="data_parallel" (no operator has a strategy) prints the device's own input twice, `(16, 3, 32, 32)>
    # : [16, 3, 32, 32]` (make.py: 16 per device on 8): not the global batch; times dp, unknown from these ranks
    job = job_of(Selection.of(str(F / "data_parallel_8p")))
    assert not job.global_batch.known and "one data-parallel rank's; dp unknown" in job.global_batch.where


@reads("mindformers_llama_dp2mp2pp2")
def test_a_larger_batch_is_said_first() -> None:
    # line 23: `%para1_inputs0: <Tensor[Int32], (8, 513)> : [8, 513]` against `(16, 513)> : [16, 513]`; dp 2 and 4
    # micro batches on both (make.py's MFL_BATCH 1 -> 2)
    result = diff_dirs(str(LLAMA_OLD), str(F / "mindformers_llama_dp2mp2pp2_b2"))
    assert [change_text(c) for c in result.config] == ["global batch 8 → 16"]
    assert result.old_job.global_batch.where.endswith(
        "(%para1_inputs0 (8, 513) on this rank, whole shape (8, 513)): 1 per data-parallel rank and micro batch x dp 2 "
        "x 4 micro batches")
    assert result.new_job.global_batch.where.endswith(": 2 per data-parallel rank and micro batch x dp 2 x 4 micro batches")
    assert result.failures()[0] == "configuration: global batch 8 → 16"
    # layer 0's FLOPs double with it: wq's MatMul (rank 0) reads (512, 512) x (256, 512)^T against (1024, 512): the
    # rows are batch x sequence, 1 x 512 -> 2 x 512 per rank and micro batch
    mm = next(p for p in result.logical.ops if p.key == OperatorKey(
        "LlamaForCausalLM/model-LlamaModel/layers-CellList/0-LLamaDecodeLayer/attention-LLamaAttention/wq-Linear",
        "MatMul", 0, 0))
    assert (mm.old.flops["forward"], mm.new.flops["forward"]) == (4 * 134217728, 4 * 2 * 134217728)


@reads("mindformers_llama_dp2mp2pp2")
def test_markdown_puts_the_stages_and_cost_before_the_operators() -> None:
    code, md = run(LLAMA_OLD, LLAMA_NEW, "--format", "markdown", "--cost")
    assert code == 1 and len(md) <= MARKDOWN_LIMIT
    order = ["**Configuration changed (old → new)**", "**Old configuration per stage", "**New configuration per stage",
             "Stage balance, old: ", "Stage balance, new: ", "**Stage cost and memory, old -> new",
             "**Per layer, per rank holding it", "mp 2 → 4: ", "**Communication around user operators"]
    at = [md.index(x) for x in order]
    assert at == sorted(at)
    # every strategy row (each 2 -> 1 is dp's, each 2 -> 4 mp's: wq's MatMul `((2, 1), (2, 1))` -> `((1, 1), (4, 1))`)
    # is in the two lines; --all lists them again, one row each
    assert "(2,1)(2,1) → (1,1)(4,1)" not in md and "Strategies that changed" not in md
    code, every = run(LLAMA_OLD, LLAMA_NEW, "--all")
    assert "(2,1)(2,1) → (1,1)(4,1)" in every
    doc = json.loads(run(LLAMA_OLD, LLAMA_NEW, "--format", "json")[1])
    follows = [o["strategy_follows"] for o in doc["logical"]["ops"] if "strategy" in o["fields"]]
    assert follows and all(f in (["dp"], ["dp", "mp"]) for f in follows)



def test_the_feed_forward_size_from_the_layers_weights() -> None:
    # make.py of each: gpt_small_dp2mp2pp2 GPT_HIDDEN 128, GPT_FFN 512 (w1 `(256, 128)` split (2, 1) at rank 0);
    # pipeline_2stage_8p H 64, F 256 (`w1` (H, F) unsplit); the MoE's experts are 3-D `ffn.w1 (1, 512, 2816)`
    for folder, hidden, ffn in (("gpt_small_dp2mp2pp2", 128, 512), ("pipeline_2stage_8p", 64, 256),
                                ("mindformers_moe_dp2mp2pp2_ep2", 512, None)):
        job = job_of(Selection.of(str(F / folder)))
        assert (job.hidden_size.value, job.ffn_size.value) == (hidden, ffn), folder
    # a rank without the embedding does not know the hidden size, so neither this
    assert not job_of(Selection.of(str(LLAMA_OLD / "rank_4"))).ffn_size.known


def test_the_attention_heads_from_the_scores_batchmatmul() -> None:
    # rank 0's first BatchMatMul of layer 0 (`score = self.batch_matmul_q_k(query, key)`): Llama line 4677
    # `(<Tensor[Float16], (1, 4, 512, 64)>` split `((2, 2, 1, 1), ...)`: 8 heads of 64 = 512 (make.py MFL_HEADS 8);
    # hidden 1024: `(1, 4, 512, 128)`, 8 heads of 128; gpt_small line 584 `(2, 2, 64, 32)` split (2, 2, 1, 1): 4 of 32
    # = 128 (GPT_HEADS 4); flash attention (BNSD): sp_fa line 4733's query `(1, 4, 512, 64)` split (2, 2, 1, 1):
    # (2, 8, 512, 64), 8 heads of 64 (the compiler's `origin_input_shapes` print the same)
    for folder, n in (("mindformers_llama_dp2mp2pp2", 8), ("mindformers_llama_dp2mp2pp2_h1024", 8),
                      ("gpt_small_dp2mp2pp2", 4), ("mindformers_llama_sp_fa_dp2mp2pp2", 8)):
        assert job_of(Selection.of(str(F / folder))).heads.value == n, folder


def test_the_key_value_heads_from_the_keys_repeat() -> None:
    # dryrun_llama_dp2mp2pp2 rank 0 (make.py MFL_HEADS 8, MFL_KV_HEADS 4): the scores BatchMatMul line 1547 reads
    # the key `(1, 4, 512, 64)` (line 1548); followed back: Reshape line 1544, `tile_kv` Tile line 1507 `(1, 1, 2, 1)`
    # of `(1, 2, 1, 32768)`, Reshape line 1504 of the Cast line 1472 of the rotary Add line 1441 `(1, 2, 512, 64)`:
    # 65,536 elements computed, 131,072 read, 8 x 65536 / 131072 = 4. dp1 x mp4: `(1, 1, 512, 64)` read as
    # `(1, 2, 512, 64)`, 8 x 1/2 = 4 again (a quarter of the heads on the rank, the same ratio)
    for folder in ("dryrun_llama_dp2mp2pp2", "dryrun_llama_dp1mp4pp2", "mindformers_llama_dp2mp2pp2_h1024",
                   "mindformers_moe_dp2mp2pp2_ep2"):
        job = job_of(Selection.of(str(F / folder)))
        assert (job.heads.value, job.kv_heads.value) == (8, 4), folder
    job = job_of(Selection.of(str(F / "dryrun_llama_dp2mp2pp2")))
    assert "19_validate_0089.ir.xz:1547" in job.kv_heads.where and "Tile line 1507" in job.kv_heads.where
    # gpt_small_dp2mp2pp2 rank 0 (GPT_HEADS 4, multi-head): the scores BatchMatMul line 584 reads `(2, 2, 64, 32)`
    # (line 585) from the Transpose line 568 of the Reshape line 565 of the bias Add line 545 `(128, 64)`: 8,192
    # elements both, nothing repeated, 4 x 8192 / 8192 = 4 key-value heads, as many as the heads
    job = job_of(Selection.of(str(F / "gpt_small_dp2mp2pp2")))
    assert (job.heads.value, job.kv_heads.value) == (4, 4) and "gpt_small_dp2mp2pp2/rank_0" in job.kv_heads.where
    # flash attention: its key, line 4733 `(1, 2, 512, 64)` split (2, 2, 1, 1): (2, 4, 512, 64), 4 key-value heads
    job = job_of(Selection.of(str(F / "mindformers_llama_sp_fa_dp2mp2pp2")))
    assert (job.heads.value, job.kv_heads.value) == (8, 4) and "FlashAttentionScore" in job.kv_heads.where


def test_the_heads_of_a_bsh_flash_attention_from_its_head_num() -> None:
    # flash_attention_sp_8p (make.py: BSH layout, HEADS 4 of HDIM 16, hidden 64): line 158's query `(2, 32, 32)` split
    # (2, 2, 2) is (4, 64, 64) whole, hidden last; its `head_num` input `I64(2)` is this rank's heads, x the hidden
    # dimension's split 2 = 4 heads of 64 / 4 = 16; the key (4, 64, 64): 64 / 16 = 4 key-value heads
    from irtool.parallel.model_dims import heads, kv_heads, model_dims

    got = Selection.of(str(F / "flash_attention_sp_8p")).read(0)
    dims = model_dims(got.facts.table, got.dump, got.file)
    assert heads(64, dims.attention)[0] == 4 and kv_heads(64, dims.attention)[0] == 4
    assert "19_validate_0078.ir.xz:158 (FlashAttentionScore" in heads(64, dims.attention)[1]


def test_the_key_value_heads_are_unknown_behind_a_collective(tmp_path: Path) -> None:
    # the dry-run Llama's rank 0 with one edit: line 1544, the Reshape between `tile_kv` and the scores BatchMatMul
    # (`PrimFunc_Reshape(%64, (I64(1), I64(4), I64(512), I64(64)))`), printed as an AllGather of %64 (shapes kept).
    # What a collective gathers is not a repeat: unknown, not the 8 of a key that reached the scores unrepeated
    src = F / "dryrun_llama_dp2mp2pp2" / "rank_0" / "19_validate_0089.ir.xz"
    with lzma.open(src, "rt") as fh:
        lines = fh.readlines()
    assert lines[1543].startswith("  %65(CNode_18089) = PrimFunc_Reshape(%64, ")
    lines[1543] = "  %65(CNode_18089) = AllGather(%64) {instance name: gather} primitive_attrs: {rank_size: I64(2)}\n"
    edited = tmp_path / src.name
    with lzma.open(edited, "wt") as fh:
        fh.writelines(lines)
    kv = job_of(Selection.of(str(edited))).kv_heads
    assert not kv.known and "AllGather (line 1544)" in kv.where


@reads("gpt_large_perf")
def test_sizes_before_the_parallel_pass_are_whole() -> None:
    # gpt_large_perf (make.py: GPT_HIDDEN 512, GPT_FFN 2048, GPT_HEADS 8, GPT_VOCAB 32000, GPT_SEQ 256): validate's
    # embedding Gather reads `(16000, 512)` split `(2, 1)`; step_parallel_begin, before the parallel pass, the whole
    # `(32000, 512)` with the same strategy attribute: not split again (it read 64000 and an FFN of 4096)
    for name in ("step_parallel_begin_0018.ir.xz", VALIDATE):
        job = job_of(Selection.of(str(F / "gpt_large_perf" / "rank_0" / name)))
        assert (job.hidden_size.value, job.vocab_size.value, job.sequence_length.value, job.ffn_size.value,
                job.heads.value) == (512, 32000, 256, 2048, 8), name


def test_every_job_field_is_decided_by_one_pass() -> None:
    """The folder's job is made by `FOLD_PASSES`, a rank's by `JOB_PASSES` (part of the fact table's `PASSES`): each
    field decided by exactly one pass, and a pass reads only what the passes before it decided."""
    from dataclasses import fields

    from irtool.parallel.facts import PASSES
    from irtool.parallel.job import FOLD_PASSES, JOB_PASSES, Evidence, Job, JobFold


    provided = [f for p in FOLD_PASSES for f in p.provides if not f.startswith("_")]
    assert sorted(provided) == sorted(f.name for f in fields(Job))
    decided: set[str] = set()
    for p in FOLD_PASSES:
        assert set(p.needs) <= decided, p.name
        decided.update(p.provides)
    assert all(p in PASSES for p in JOB_PASSES)
    assert JobFold().job().pipeline_stages == Evidence(None, "no rank read")  # no rank: nothing known, not 1 stage
