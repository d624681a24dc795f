"""`irtool view` and `irtool export --format model-explorer`: Model Explorer graphs of real dumps,
checked as JSON and in a real browser (Debian's Chromium driven by Playwright, WebGL through
Mesa's llvmpipe). Every server is stopped at the end of the module."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import fixture

from irtool.cli import main
from irtool.diff import diff_rank
from irtool.errors import InputError
from irtool.parallel.logical import LogicalDiff
from irtool.present.palette import CATEGORY_COLORS, CAUSE_COLORS, DIFF_COLORS, HEAT, P2P_COLORS, UNIT_COLORS
from irtool.selection import Selection
from irtool.view import graphs
from irtool.view.graphs import INPUTS, LINK_KEYS, MAX_CHILDREN, PART_SIZE, STUB, STUB_NODES, _Context, _reads
from irtool.view.models import Model, compare_models, models_for
from irtool.view.pipeline import ORDER, PAIRS
from irtool.view.serve import _placed

SEMI = fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz")
PIPE = str(Path(fixture("pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz")).parents[1])
GPT = fixture("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz")
LAYOUT = fixture("layout_8p/rank_0/19_validate_0078.ir.xz")
EDITED = str(Path(__file__).resolve().parents[1] / "fixtures" / "edited" / "semi_auto_8p_rank_0_validate_fc1_strategy.ir")
# semi_auto_8p's network compiled with fc1's shard ((4, 1), (1, 2)) -> ((2, 1), (1, 4)) and its last ReLU -> Sigmoid
CHANGED = fixture("semi_auto_8p_changed/rank_0/19_validate_0078.ir.xz")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As root Chromium needs --no-sandbox; no background traffic (this machine reaches no other host). WebGL (Model
# Explorer draws with it) on the CPU: through ANGLE's OpenGL ES backend on Mesa's llvmpipe (Debian's libegl-mesa0
# and libgl1-mesa-dri, `make system`), drawing on the GPU process' own thread (LP_NUM_THREADS=0, `browser`). The
# browser tests then took 76-87 CPU-s against 95-103 with Chromium's own SwiftShader, whose worker threads spin
# waiting for work on a machine the tests keep busy.
CHROMIUM_ARGS = ["--no-sandbox", "--use-angle=gl-egl", "--ignore-gpu-blocklist", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# What WebGL draws on (the `browser` fixture checks it is llvmpipe, not a fallback).
WEBGL_RENDERER = """() => { const gl = document.createElement('canvas').getContext('webgl');
  const info = gl && gl.getExtension('WEBGL_debug_renderer_info');
  return gl ? String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER)) : 'no WebGL'; }"""
# How often Model Explorer's layout worker answered (and what), and the settings of what it draws on the boxes.
WORKER_HOOK = """
(() => {
  const Orig = window.Worker;
  window.__me = {events: 0, showOnNode: null, answers: []};
  window.Worker = function (url, opts) {
    const w = new Orig(url, opts);
    const post = w.postMessage.bind(w);
    w.postMessage = (m, ...rest) => {
      if (m && m.showOnNodeItemTypes) window.__me.showOnNode = m.showOnNodeItemTypes;
      return post(m, ...rest); };
    w.addEventListener('message', (e) => {
      const d = e.data || {};
      window.__me.events += 1;
      window.__me.answers.push(d.eventType);
    });
    return w;
  };
  window.Worker.prototype = Orig.prototype;
})();
"""


def pairs_drawn(graph: dict, overlay: str = PAIRS) -> list[tuple[str, str]]:
    """(Send box, Receive box) of each line of a pipeline graph: its edge overlay of pairs (or of `overlay`)."""
    (data,) = graph["tasksData"]["edgeOverlaysDataListLeftPane"]
    return [(e["sourceNodeId"], e["targetNodeId"]) for o in data["overlays"] if o["name"] == overlay for e in o["edges"]]


@cache
def _model(path: str, part_size: int = PART_SIZE) -> Model:
    """`models_for(path, part_size)`, made once for the module's tests that only read it."""
    return models_for(path, part_size)


def _graph_nodes(doc: dict, graph_id: str) -> list[dict]:
    return next(g for g in doc["graphs"] if g["id"] == graph_id)["nodes"]


# --- the graphs, as JSON -------------------------------------------------------------------------

def test_export_of_a_sharded_dump(tmp_path: Path) -> None:
    out = tmp_path / "semi.json"
    res = CliRunner().invoke(main, ["export", SEMI, "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    (graph,) = doc["graphs"]
    # header: `Total number of cnodes: 290` (%0..%288 and Return), `# Total params: 25`, all read by some node
    ops = [n for n in graph["nodes"] if not n["id"].startswith("%para")]
    assert len(ops) == 290 and len(graph["nodes"]) == 290 + 25
    # `xzcat ... | grep -c '= AllGather('` -> 14
    gathers = [n for n in ops if n["label"] == "AllGather"]
    assert len(gathers) == 14
    first = next(n for n in gathers if n["id"] == "%5")
    attrs = {a["key"]: a["value"] for a in first["attrs"]}
    # line 104: `%5(equiv_90_CNode_533) = AllGather(%4) {instance name: redistribution_op_1806...}
    #            primitive_attrs: {... group: "4-6301172352641561019", ... rank_list: (0, 1, 2, 3) ...`
    assert attrs["file"] == "19_validate_0078.ir.xz:104"
    assert attrs["comm category"] == "redistribution" and attrs["comm group"] == "ranks 0-3"
    assert attrs["comm group name"] == "4-6301172352641561019" and attrs["phase"] == "forward"
    # the rule in words (docs/parallel.md §2 R6: a `redistribution_op` instance name), its code after them
    assert attrs["comm rule"] == "redistribution between two strategies (redistribution_op) (R6)"
    assert attrs["instance name"].startswith("redistribution_op_18061495112778206992AllGather")
    assert first["incomingEdges"] == [{"sourceNodeId": "%4", "sourceNodeOutputId": "0", "targetNodeInputId": "0"}]
    assert first["namespace"] == "Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP"
    # the qkv MatMul (line 86) shows its strategy as MindInsight did
    qkv = next(n for n in ops if any(a["key"] == "file" and a["value"].endswith(":86") for a in n["attrs"]))
    assert {"key": "in strategy", "value": "(2,1)(1,4)"} in qkv["attrs"]
    # a folded scope counts what is inside it
    body = graph["groupNodeAttributes"]["Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP"]
    assert int(body["redistribution"]) > 0 and int(body["with strategy"]) > 0
    # node data files next to the graph: every communication node coloured by category
    category = json.loads((tmp_path / "semi.comm_category.json").read_text())
    assert set(category) == {graph["id"]} and category[graph["id"]]["results"]["%5"]["bgColor"]
    assert len(category[graph["id"]]["results"]) == sum(1 for n in ops if "style" in n)


def _attrs(node: dict) -> dict:
    return {a["key"]: a["value"] for a in node["attrs"]}


def test_a_flat_scope_gets_levels_model_explorer_can_lay_out() -> None:
    (graph,) = _model(GPT).graphs
    nodes = graph["nodes"]
    direct: Counter = Counter(n["namespace"] for n in nodes)
    children: dict[str, set] = defaultdict(set)
    for ns in direct:
        parts = ns.split("/") if ns else []
        for i in range(len(parts)):
            children["/".join(parts[:i])].add("/".join(parts[: i + 1]))
    assert max(direct[ns] + len(children[ns]) for ns in set(direct) | set(children)) <= MAX_CHILDREN
    # `xzcat ... | grep -cE 'Fullname with scope: \(Default/[^/]*\)$'` -> 487 operators directly in `Default`
    flat = [n for n in nodes if re.fullmatch(r"Default/[^/]+", _attrs(n).get("scope", ""))]
    assert len(flat) == 487
    levels = graph["groupNodeAttributes"]
    # each sits one level down, in a group named for what it shares (micro batch, operator, dump lines),
    # except an operator type that occurs once: a group of one would save nothing
    moved = [n for n in flat if n["namespace"] != "Default"]
    assert {levels["/".join(n["namespace"].split("/")[:2])]["level"] for n in moved} == {"micro batch", "operator"}
    assert set(Counter(n["label"] for n in flat if n["namespace"] == "Default").values()) == {1}
    # `grep -nE '^  %[0-9]+\(.*= Send\('`: %154 (line 2446, `micro: I64(0)`) and %255 (line 3749, micro 1),
    # both in scope `Default/Send-opN`
    by_id = {n["id"]: n for n in nodes}
    assert by_id["%154"]["namespace"] == "Default/micro 0" and by_id["%255"]["namespace"] == "Default/micro 1"
    assert levels["Default/micro 0"]["level"] == "micro batch"
    depends = [n for n in flat if n["label"] == "Depend"]
    assert all(re.match(r"Default/(Depend|micro \d)", n["namespace"]) for n in depends)
    # each root's phase as the fact table says it, not as its name suggests: `grep -c 'Fullname with scope:
    # (Gradients'` 590; `(Default` 716, of them 69 in an optimizer's scope; `(recompute_Default` 194, of them 70
    # copies (`duplicated: Bool(1)`), the others the recomputed cells' forward run
    assert levels["Gradients"]["phase"] == "backward" and levels["Default"]["phase"] == "forward 647, optimizer 69"
    assert levels["recompute_Default"]["phase"] == "forward 124, recompute 70"


def test_a_large_graph_comes_as_an_overview_and_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (whole,) = _model(GPT).graphs  # 1500 operators: one graph at the default part size
    model = _model(GPT, 300)
    overview, *parts = model.graphs
    assert model.first_graph == overview["id"] == f"{whole['id']}: overview"
    # every node of the whole graph is in exactly one part, as it is there (its attribute list shared)
    mine = [n for g in parts for n in g["nodes"] if not n["namespace"].startswith(INPUTS)]
    own = {n["id"]: n for n in mine}
    assert len(mine) == len(own) == len(whole["nodes"])
    assert all(own[n["id"]]["attrs"] == n["attrs"] for n in whole["nodes"])
    # the parts follow the model: its phases, then its layers (the `phase` and `layer` facts), the scope a layer's
    # nodes share taken off the namespaces below it. `xzcat ... | grep -c 'scope: (Default/network-PipelineCell/
    # network-GPT/layers-CellList/1-DecoderLayer/'` -> 128 operators printed in layer 1's forward, 20 of them
    # plumbing (`Depend-op`, `MakeTuple-op`, `UpdateState-op`) that no layer's data flow holds: the other 108 are
    # in the part of layer 1's forward, with what else its data flow holds (its weights, their loads)
    layer = "forward/layer 1"
    part = next(g for g in parts if g["id"] == f"{whole['id']}: {layer}")
    mine = [n for n in part["nodes"] if not n["namespace"].startswith(INPUTS)]
    printed = "Default/network-PipelineCell/network-GPT/layers-CellList/1-DecoderLayer/"
    scoped = [n for g in parts for n in g["nodes"] if _attrs(n).get("scope", "").startswith(printed)
              and not n["namespace"].startswith(INPUTS)]
    plumbing = [n for n in scoped if n["label"] in ("Depend", "MakeTuple", "UpdateState")]
    assert (len(scoped), len(plumbing)) == (128, 20)
    assert {n["id"] for n in scoped if n not in plumbing} <= {n["id"] for n in mine}
    assert any(n["namespace"].startswith("network-PipelineCell/network-GPT/layers-CellList/1-DecoderLayer/")
               for n in mine)  # the scope the layer's nodes share, `Default`, taken off
    loaded = Selection.of(GPT).first()
    facts = {n.key: (loaded.facts.table("phase", n), loaded.facts.table("layer", n)) for n in loaded.dump.nodes()}
    assert {facts[n["id"]] for n in mine if n["id"] in facts} == {("forward", 1)}
    assert part["groupNodeAttributes"][""]["scope"] == layer
    # a node of no layer too many to lay out among its kind is put with the others reading the layer it reads (the
    # 68 MB dump's 3 142 `Depend`s of the gradient accumulation, 128 per layer): line 7115 `%604 = Depend(Tensor(...),
    # %603)`, line 7110 `%603 = PrimFunc_AssignAdd(%para43_accu_grads.1.attention.wq.weight, ...)`: layer 1's; line
    # 5152 `%393 = Depend(%392, %255)` reads a Reshape of layer 0 and a Send of layer 1: none
    nodes = {n.key: n for n in loaded.dump.subgraph(loaded.dump.entry).nodes}
    ctx = _Context(loaded.dump, loaded.facts)
    reads, param = _reads(ctx, list(nodes.values()))
    assert (facts["%604"][1], facts["%603"][1], reads(nodes["%604"])) == (None, 1, "reads layer 1")
    assert ({facts["%392"][1], facts["%255"][1]}, reads(nodes["%393"])) == ({0, 1}, None)
    # one reading no operator of a layer goes with the layer those it reads read: line 7171 `%610 = PrimFunc_Cast(%609,
    # I64(43))` of line 7168 `%609 = Depend(Tensor(...), %608)`, line 7163 `%608 = PrimFunc_AssignAdd(%para43_accu_grads
    # .1.attention.wq.weight, ...)` (the 68 MB dump's 2 016 such `Cast`s were in 17 runs of dump lines)
    assert (facts["%610"][1], facts["%609"][1], facts["%608"][1], reads(nodes["%610"])) == (None, None, 1, "reads layer 1")
    # ... and when a layer's are too many still (the 68 MB dump's 128-150, one per micro batch of each weight), with
    # those of the weight they wait for: %603's own parameter; `grep -c 'AssignAdd(%para[0-9]*_accu_grads.1.attention.wq
    # .weight'` -> 2 (micro batches), so 2 `Depend`s, at a limit of 30; a group per weight of layer 1 (`grep -oE
    # '^%para[0-9]+_accu_grads\.1\.' | sort -u`: 16)
    assert param(nodes["%604"]) == param(nodes["%603"]) == "reads accu_grads.1.attention.wq.weight"
    monkeypatch.setattr(graphs, "MAX_CHILDREN", 30)
    levels = graphs.subgraph_graph(ctx, loaded.dump.entry, by_layer=True)["groupNodeAttributes"]
    group = "forward/no layer/Default/Depend (86)/reads layer 1"
    assert int(levels[group]["operators"]) > 30
    weights = {ns.rpartition("/")[2]: a["operators"] for ns, a in levels.items() if ns.startswith(group + "/")}
    assert len(weights) == 16 and weights["reads accu_grads.1.attention.wq.weight"] == "2"
    assert {levels[f"{group}/{w}"]["level"] for w in weights} == {"parameter read"}
    monkeypatch.undo()
    assert part["groupNodeAttributes"][""]["operators"] == str(sum(n["id"] in facts for n in mine))
    # what it reads from other parts, and what its panel links to there, is there too, each saying its
    # part; the edges into the layer are kept, and every link names a node of the part's graph
    where = {n["id"]: g["groupNodeAttributes"][""]["scope"] for g in parts for n in g["nodes"]
             if not n["namespace"].startswith(INPUTS)}
    inputs = [n for n in part["nodes"] if n["namespace"].startswith(INPUTS)]
    assert inputs and all(_attrs(n)["in part"] == where[n["id"]] != layer for n in inputs)
    ids = {n["id"] for n in part["nodes"]}
    read = {e["sourceNodeId"] for n in mine for e in n["incomingEdges"]} - {n["id"] for n in mine}
    assert read and read <= {n["id"] for n in inputs}
    for g in parts:
        links = [i for n in g["nodes"] for a in n["attrs"] if isinstance(a["value"], dict) for i in a["value"]["nodeIds"]]
        assert set(links) <= {n["id"] for n in g["nodes"]}, g["id"]
    assert any(isinstance(a["value"], dict) for n in mine for a in n["attrs"])  # `comm serves` of the AllReduces
    # the overview: one box per part, at its scope's place, with its counts, opening it; an edge from
    # each part another part reads
    boxes = {n["subgraphIds"][0]: n for n in overview["nodes"]}
    assert set(boxes) == {g["id"] for g in parts}
    box = boxes[part["id"]]
    assert box["label"] == "layer 1" and box["namespace"] == "forward"
    assert _attrs(box)["operators"] == part["groupNodeAttributes"][""]["operators"]
    assert _attrs(box)["nodes read from other parts"] == str(len(read))
    # the overview reads as the model: under each phase a box per layer (a part, or one of its scopes when
    # larger than the part size), no runs of dump lines
    assert {f"forward/layer {k}" for k in (0, 1)} <= {g["groupNodeAttributes"][""]["scope"] for g in parts}
    assert {b["namespace"].split("/")[0] for b in overview["nodes"]} >= {"forward", "backward", "optimizer"}
    assert not any("lines " in g["id"] for g in parts)
    scope_id = {g["groupNodeAttributes"][""]["scope"]: g["id"] for g in parts}
    assert {e["sourceNodeId"] for e in box["incomingEdges"]} == {scope_id[where[i]] for i in read}
    # `export --part-size` writes the same graphs, the overview first, and the overlays of every part
    out = tmp_path / "gpt.json"
    res = CliRunner().invoke(main, ["export", GPT, "--part-size", "300", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert [g["id"] for g in json.loads(out.read_text())["graphs"]] == [overview["id"]] + [g["id"] for g in parts]
    assert set(json.loads((tmp_path / "gpt.comm_category.json").read_text())) == {g["id"] for g in parts}
    # `irtool view`'s page gets each part as a stub (no nodes, its number, the count of its nodes and of those it
    # reads), the part's graph when it opens it
    def counted(g: dict) -> int:
        own = [n for n in g["nodes"] if not n["namespace"].startswith(INPUTS)]
        return len(own) + len({e["sourceNodeId"] for n in own for e in n["incomingEdges"]} - {n["id"] for n in own})

    page = json.loads(model.page_json())["graphs"]
    assert page[0] == overview and [g["id"] for g in page] == [overview["id"]] + [g["id"] for g in parts]
    assert [(len(g["nodes"]), g["groupNodeAttributes"][""][STUB], g["groupNodeAttributes"][""][STUB_NODES])
            for g in page[1:]] == [(0, str(k), str(counted(g))) for k, g in enumerate(parts)]
    assert json.loads(model.part_json(7)) == parts[7] and model.part_json(len(parts)) is None
    # node data: each part gets the whole graph's results for its nodes
    category = model.node_data["comm category"]
    whole_results = _model(GPT).node_data["comm category"][whole["id"]]["results"]
    assert category[part["id"]]["results"] == {k: v for k, v in whole_results.items() if k in ids}
    assert sum(len(category[g["id"]]["results"]) for g in parts) >= len(whole_results)
    # ... the same made before the parts are (`irtool view` sends the overlay shown first before it makes them),
    # and without making them: no part has its nodes yet
    fresh = models_for(GPT, 300)
    fresh.page_json()
    assert {name: fresh.node_data_of(name) for name in fresh.overlays} == model.node_data
    assert not any(g["nodes"] for g in fresh._built()[1:])


def test_a_call_opens_the_graph_of_its_callee_also_in_a_folder_and_when_split() -> None:
    # gpt_small_dp2mp2pp2_lazyinline: the entry calls its lazily inlined cells (`call @...` nodes)
    folder = str(Path(fixture("gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz")).parents[1])
    for part_size in (PART_SIZE, 100):  # the folder's graphs are `stage S rank R: ...`; with 100, callees are split too
        graphs = models_for(folder, part_size).graphs
        ids = {g["id"] for g in graphs}
        called = [sub for g in graphs for n in g["nodes"] for sub in n.get("subgraphIds", ())]
        assert called and set(called) <= ids, sorted(set(called) - ids)[:3]
        if part_size == 100:
            assert any(sub.endswith(": overview") for g in graphs if not g["id"].endswith(": overview")
                       for n in g["nodes"] if not n["namespace"].startswith(INPUTS) for sub in n.get("subgraphIds", ()))


def test_the_panel_says_what_summarize_says() -> None:
    (graph,) = _model(SEMI).graphs
    by_id = {n["id"]: n for n in graph["nodes"]}
    gather = _attrs(by_id["%5"])
    # line 104's AllGather is in the chain %4 Reshape .. %14 StridedSlice (instance names
    # `redistribution_op_1806...`), between the qkv MatMul (%3, line 86, strategy (2,1)(1,4)) and the
    # Split at line 146 (`%15 = PrimFunc_Split(%14, ...)`, gen_strategy ((8, 1)))
    assert gather["producer"] == "MatMul qkv (line 86)"
    assert gather["producer node"] == {"type": "node_ids", "nodeIds": ["%3"]}
    assert gather["consumers (1)"] == {"type": "node_ids", "nodeIds": ["%15"]}
    assert gather["from -> to"] == "split (2,4) -> strategy (8,1)"
    assert gather["chain (11 nodes)"]["nodeIds"] == [f"%{i}" for i in range(4, 15)]
    assert gather["comm serves"] == {"type": "node_ids", "nodeIds": ["%15"]}
    qkv = _attrs(by_id["%3"])
    # line 86's source block: its last `# In file` frame is make.py:58, the user's own line
    keys = [a["key"] for a in by_id["%3"]["attrs"]]
    assert qkv["source"] == "/home/user/models/semi_auto_8p/make.py:58 qkv = self.qkv(x, self.w_in)"
    # then every call it comes from, outermost first, without the `def` lines (`:423~438`) and repeats
    # (lines 89-100 of the dump: cell_wrapper.py 425, 442, 122, 122, make.py 90, 90, 58)
    assert keys.index("source") < keys.index("call stack")
    assert qkv["call stack"] == "cell_wrapper.py:425 > cell_wrapper.py:442 > cell_wrapper.py:122 > make.py:90 > make.py:58"
    # the instance name is its own row, not repeated at the head of the attributes (line 86)
    assert qkv["instance name"] == "qkv" and qkv["attributes"].startswith("primitive_attrs: {in_strategy: ((2, 1), (1, 4))")
    assert qkv["in 0 split"] == "2 x 1 (pieces per dimension)" and qkv["in 1 split"] == "1 x 4 (pieces per dimension)"
    (lay,) = _model(LAYOUT).graphs
    up = _attrs(next(n for n in lay["nodes"] if n["id"] == "%2"))
    # `%2 = MatMul(...)` of layout_8p rank 0: in_layout device_matrix (2, 2, 2), tensor_map ((2, 1), -1) and (-1, 0)
    assert up["in 0 layout"] == "dev (2,2,2) map ((2,1),-1)" and up["in 1 layout"] == "dev (2,2,2) map (-1,0)"


def test_pipeline_graph_pairs_every_send_with_its_receive() -> None:
    model = _model(PIPE)
    ids = [g["id"] for g in model.graphs]
    # one rank per stage (manifest: ranks 0-3 stage 0, 4-7 stage 1), the pipeline graph first, the execution order
    assert ids[:2] == ["pipeline", "execution order"]
    assert [i.split(":")[0] for i in ids[2:]] == ["stage 0 rank 0", "stage 1 rank 4"]
    graph = model.graphs[0]
    nodes = graph["nodes"]
    # `grep -cE '= (Send|Receive)\\('`: 8 on rank 0 (4 Send, 4 Receive), 8 on rank 4; a column per stage, in stage order
    assert len(nodes) == 16 and [n["namespace"] for n in nodes] == ["stage 0 rank 0"] * 8 + ["stage 1 rank 4"] * 8
    assert graph["groupNodeConfigs"] == [{"namespaceRegex": "^stage ", "layoutDirection": 1}]
    # no edges between boxes: rank 0's 4 forward Sends reach rank 4's 4 Receives and rank 4's 4 backward Sends
    # rank 0's Receives as lines of an edge overlay (Model Explorer draws lines between columns only so)
    assert all(n["incomingEdges"] == [] for n in nodes)
    edges = pairs_drawn(graph)
    assert len(edges) == 8 == int(graph["groupNodeAttributes"][""]["pairs"])
    label = {n["id"]: n["label"] for n in nodes}
    assert all(re.match(r"r[04] #\d+ Send m", label[a]) and re.match(r"r[04] #\d+ Receive m", label[b])
               and a.split("/")[0] != b.split("/")[0] for a, b in edges)
    for a, b in edges:  # `r0 #1 Send m0 tag 0 -> r4 F`: same micro batch, tag and phase on both boxes
        src, dst = a.split("/")[0][4:], b.split("/")[0][4:]
        assert f"-> r{dst} " in label[a] and f"<- r{src} " in label[b]
        assert label[a].split(" ")[3:6] == label[b].split(" ")[3:6] and label[a][-1] == label[b][-1]
    # line 1060 of rank 0: `%43 = Send(%42) ... sr_tag: I64(0) ... micro: I64(0)` in the entry graph
    # `@..._TrainGradAccuStepCell_construct_2413`: its box named by the viewer's name of that graph, its line labelled
    # with its unit and tag
    (data,) = graph["tasksData"]["edgeOverlaysDataListLeftPane"]
    pair_overlay = next(o for o in data["overlays"] if o["name"] == PAIRS)
    first = next(e for e in pair_overlay["edges"] if e["sourceNodeId"] == "rank0/TrainGradAccuStepCell/%43")
    assert first["label"] == "F0 tag 0" and not pair_overlay["showEdgesConnectedToSelectedNodeOnly"]
    a, b = edges[0]
    send, receive = (_attrs(next(n for n in nodes if n["id"] == x)) for x in (a, b))
    assert send["pairs with"] == {"type": "node_ids", "nodeIds": [b]}
    assert receive["pairs with"] == {"type": "node_ids", "nodeIds": [a]}
    # rank 4's column in execution order (the order the dependencies fix, parallel/order.py): forward Receive
    # and backward Send alternating, as 1F1B runs them; the order edges, another overlay, from each box to the next
    rank4 = [n for n in nodes if n["id"].startswith("rank4/")]
    assert [n["label"].split()[2] for n in rank4] == ["Receive", "Send"] * 4
    assert [int(n["label"].split()[1][1:]) for n in rank4] == list(range(1, 9))
    order = pairs_drawn(graph, ORDER)
    assert len(order) == 14 and [(a["id"], b["id"]) for a, b in zip(rank4, rank4[1:])] == order[7:]
    assert next(o for o in data["overlays"] if o["name"] == ORDER)["edgeColor"] != pair_overlay["edgeColor"]
    # Send red, Receive green, the backward's paler; each box opens its node in its stage graph, and the node it
    # serves there (line 1060: the Send reads the Depend `%42`)
    colour = {(n["label"].split()[2], n["label"][-1]): n["style"]["backgroundColor"] for n in nodes}
    assert len(set(colour.values())) == 4
    assert all(_attrs(n)["stage graph"].startswith(n["subgraphIds"][0]) for n in nodes)
    assert model.index()["links"]["pipeline"]["rank0/TrainGradAccuStepCell/%43"] == {
        "stage graph": ["stage 0 rank 0: TrainGradAccuStepCell", "%43"],
        "comm serves": ["stage 0 rank 0: TrainGradAccuStepCell", "%42"]}
    # tags as the integers they are (`sr_tag: I64(0)`), not `1,048,576`
    assert all(re.search(r" tag \d+ ", n["label"]) for n in nodes)
    # the folder opens on the pipeline graph (Model Explorer sorts by name: `pipeline` < `stage ...`), its first
    # box selected
    assert json.loads(model.graphs_json())["graphSorting"] == "name_asc"
    assert model.first_node() == nodes[0]["id"] == "rank0/TrainGradAccuStepCell/%43"


def test_the_execution_order_graph() -> None:
    (graph,) = [g for g in _model(PIPE4).graphs if g["id"] == "execution order"]
    rows = {ns: [n for n in graph["nodes"] if n["namespace"] == ns] for ns in
            ("stage 0 rank 0", "stage 1 rank 2", "stage 2 rank 4", "stage 3 rank 6")}
    assert sum(len(c) for c in rows.values()) == len(graph["nodes"])
    # a row per rank, one under another (the top level laid out left to right: its groups in a column), each
    # row's boxes left to right (Model Explorer's default)
    assert graph["groupNodeConfigs"] == [{"namespaceRegex": "^$", "layoutDirection": 1}]
    units = {ns: [n["label"] for n in c] for ns, c in rows.items()}
    # pipeline_4stage_8p: 8 micro batches (manifest), 1F1B: stage s runs 4 - s forward before its first backward
    for s, (ns, order) in enumerate(units.items()):
        warm = 4 - s
        assert order == [f"F{m}" for m in range(warm)] + [x for m in range(8 - warm) for x in (f"B{m}", f"F{m + warm}")] \
            + [f"B{m}" for m in range(8 - warm, 8)], (ns, order)
    # the micro batches in flight of each row, read with the folder's job (`Selection.job()`, as summarize reads it):
    # in the order each stage's dump fixes, 1F1B over 4 stages, stage s holds 4 - s at once
    held = graph["groupNodeAttributes"]
    assert [held[ns]["micro batches in flight"] for ns in rows] == ["4", "3", "2", "1"]
    # each unit says the Receive it waits for and the Send after it (the boxes are the pipeline graph's): stage 1
    # (rank 2) receives F0 from rank 0 (line 87 `%0 = Receive(...)`, `src_rank: I64(0)`, `sr_tag: I64(0)`), runs it,
    # sends it to rank 4 (line 825 `%26 = Send(%25)`, `dest_rank: I64(4)`); when it runs in the step played out (the
    # timeline's): after rank 0's F0, before rank 4's
    f0 = {k: _attrs(next(n for n in rows[ns] if n["label"] == "F0")) for k, ns in ((0, "stage 0 rank 0"),
                                                                                    (1, "stage 1 rank 2"),
                                                                                    (2, "stage 2 rank 4"))}
    assert f0[1]["waits for"] == "Receive tag 0 <- rank 0 (rank_2/19_validate_0078.ir.xz:87)"
    assert f0[1]["then"] == "Send tag 0 -> rank 4 (rank_2/19_validate_0078.ir.xz:825)"
    assert "/%" not in "".join(n["id"] for n in graph["nodes"])  # no Send/Receive boxes: a row reads at fit
    ends = [re.fullmatch(r"([\d.]+) µs to ([\d.]+) µs", f0[k]["time"]).groups() for k in range(3)]
    assert float(ends[0][1]) <= float(ends[1][0]) and float(ends[1][1]) <= float(ends[2][0]), ends
    # the layers a unit's operators read, for the highlight: stage 2 (rank 4) holds layers 4 and 5
    # (`grep -o '%para[0-9]*_layers\.[0-9]*\.' rank_4/... | sort -u` -> layers.4., layers.5.)
    assert {k for k in f0[2] if k.startswith("layer-")} == {"layer-4", "layer-5"}
    assert f0[2]["stage graph"].startswith("stage 2 rank 4: TrainStep %")
    # each pair a line from the unit sending to the unit receiving: rank 0's F0 to rank 2's F0
    assert len(pairs_drawn(graph)) == 48 and ("rank0/F0", "rank2/F0") in pairs_drawn(graph)
    # forward, backward and backward recomputing forward work in three colours: pipeline_unequal_8p recomputes
    # layers 1 and 3 (manifest), both on stage 0 (layers 0-4): its backward units hold `recompute_Default/...`
    # operators (`grep -c 'scope: (recompute_Default' rank_0/...validate...` > 0), stage 1 (layer 5) none
    unequal = _model(str(Path(fixture("pipeline_unequal_8p/rank_0/19_validate_0078.ir.xz")).parents[1])).graphs[1]
    look = {(n["namespace"], n["label"][0], _attrs(n)["recomputed operators"] != "0"): n["style"]["backgroundColor"]
            for n in unequal["nodes"]}
    assert {k for k in look if k[0] == "stage 0 rank 0"} == {("stage 0 rank 0", "F", False), ("stage 0 rank 0", "B", True)}
    assert {k for k in look if k[0] == "stage 1 rank 2"} == {("stage 1 rank 2", "F", False), ("stage 1 rank 2", "B", False)}
    assert len(set(look.values())) == 3
    # none of them a Send's or a Receive's colour (a backward unit was a red beside the red Sends)
    assert not set(look.values()) & {c.lower() for c in P2P_COLORS.values()}


def test_only_a_folder_of_stages_has_pictures() -> None:
    # the page links a folder's timeline and memory (test_a_folder_links_its_timeline_and_memory); a file has none
    assert list(_model(PIPE4).pictures) == ["timeline", "memory"] and _model(SEMI).pictures == {}


def test_canvas_labels_say_what_is_not_known_in_words() -> None:
    # Model Explorer's canvas font has no `—` (it draws `?`): inference_pp_4p_m2 rank 2's Receives (lines 212 and
    # 221, `src_rank: I64(0)`, micro 0 and 1) are in no order this pass fixes: no `#N`, and nothing else left unsaid
    from irtool.view.pipeline import _unit_text

    graph = models_for(str(Path(fixture("inference_pp_4p_m2/rank_0/19_validate_0082.ir.xz")).parents[1])).graphs[0]
    labels = {_attrs(n)["file"]: n["label"] for n in graph["nodes"]}
    assert labels["rank_2/19_validate_0082.ir.xz:212"] == "r2 Receive m0 tag 2 <- r0 F"
    assert labels["rank_2/19_validate_0082.ir.xz:221"] == "r2 Receive m1 tag 1 <- r0 F"
    assert all(label.isascii() for label in labels.values())
    # a unit of no micro batch the dump marks says so (`F—` was drawn `F?`)
    assert (_unit_text(("B", 3, 1)), _unit_text(("F", None, None)), _unit_text(("B", None, 1))) == (
        "B3.c1", "F, micro unknown", "B.c1, micro unknown")


def test_pipeline_peers_outside_the_folder_are_said(tmp_path: Path) -> None:
    four = Path(fixture("pipeline_4stage_8p/rank_0/19_validate_0078.ir.xz")).parents[1]
    for r in (0, 4):  # stage 0 and stage 2 only: rank 0's peer (rank 2, stage 1) is not in this folder
        (tmp_path / f"rank_{r}").symlink_to(four / f"rank_{r}")
    graph = models_for(str(tmp_path)).graphs[0]
    assert graph["id"] == "pipeline"
    rank0 = [_attrs(n) for n in graph["nodes"] if n["id"].startswith("rank0/")]
    # `grep -cE '= (Send|Receive)\('` on rank 0 -> 16, every one with `dest_rank: I64(2)` / `src_rank: I64(2)`
    # on nccl_world_group (8 each)
    assert len(rank0) == 16 and all(a["peer"] == "peer rank 2: not in the folder" for a in rank0)
    assert "2" in graph["groupNodeAttributes"][""]["peers not in the folder"].split(", ")


def test_compare_marks_the_changed_strategy() -> None:
    # fixtures/edited: the fc1 MatMul's in_strategy of semi_auto_8p rank 0 changed by hand (README there)
    old, new = compare_models(str(Path(SEMI).parent), EDITED, diff_rank)
    marks_old = [r for g in old.node_data["diff"].values() for r in g["results"].values()]
    marks_new = [r for g in new.node_data["diff"].values() for r in g["results"].values()]
    assert len(marks_old) == len(marks_new) == 1 and marks_new[0]["bgColor"] == DIFF_COLORS["changed"]
    # on the right node (line 512, `%73`, fc1) with old -> new in its panel, on both sides
    assert [k for g in new.node_data["diff"].values() for k in g["results"]] == ["%73"]
    for model, side in ((old, "old"), (new, "new")):
        fc1 = _attrs(next(n for g in model.graphs for n in g["nodes"] if n["id"] == "%73"))
        assert fc1["diff"] == f"changed ({side} side)" and fc1["diff in strategy"] == "(4,1)(1,2) -> (2,1)(1,4)"
    # split into parts (290 operators, parts of at most 100): the mark and the rows on the part holding %73
    old, new = compare_models(str(Path(SEMI).parent), EDITED, diff_rank, part_size=100)
    for model, side in ((old, "old"), (new, "new")):
        assert model.first_graph and model.first_graph.endswith(": overview")
        (part,) = [g for g in model.graphs if any(n["id"] == "%73" and not n["namespace"].startswith(INPUTS)
                                                  for n in g["nodes"])]
        assert list(model.node_data["diff"][part["id"]]["results"]) == ["%73"]
        fc1 = _attrs(next(n for n in part["nodes"] if n["id"] == "%73"))
        assert fc1["diff"] == f"changed ({side} side)" and fc1["diff in strategy"] == "(4,1)(1,2) -> (2,1)(1,4)"


def test_the_diff_view_marks_what_irtool_diff_reports() -> None:
    # semi_auto_8p against semi_auto_8p_changed (fc1's shard and ReLU -> Sigmoid, compiled): `irtool diff` reports
    # 3 AllGather and 3 ReduceScatter added, AllGather-op7, ReduceScatter-op6 and the AllReduce-op2 of fc1's weight
    # changed; strategies: fc1 changed, ReLU removed, Sigmoid added; operator counts: ReluGrad 1 -> 0, SigmoidGrad
    # 0 -> 1, Reshape 42 -> 50 (`grep -c 'Reshape('`), ...
    old, new = compare_models(SEMI, CHANGED, diff_rank)
    (a,), (b,) = old.graphs, new.graphs
    marks = [{k: r["value"] for k, r in m.node_data_of("diff")[g["id"]]["results"].items()} for m, g in ((old, a), (new, b))]
    # each coloured by why, as the two-configuration diff colours its operators (`OperatorPair.cause`): fc1's own
    # strategy, three collectives' communication (`irtool diff`'s rows: AllGather-op7's shape (256, 32) -> (2, 128, 32),
    # ReduceScatter-op6's shape, bytes and ranks, AllReduce-op2's group size 4 -> 2)
    assert Counter(marks[0].values()) == {"strategy changed": 1, "communication changed": 3, "removed": 2}
    assert Counter(marks[1].values()) == {"strategy changed": 1, "communication changed": 3, "added": 8}
    # old line 512 `%73 = PrimFunc_MatMul(...) {instance name: fc1}`, 725 `%112 = PrimFunc_ReLU(...)`, 1021 `%157 =
    # PrimFunc_ReluGrad(...)` (the one ReluGrad: an operator the other side has none of); new line 521 `%76 = ...
    # {instance name: fc1}`, 794 `%131 = PrimFunc_Sigmoid`, 1090 `%176 = PrimFunc_SigmoidGrad`
    assert (marks[0]["%73"], marks[0]["%112"], marks[0]["%157"]) == ("strategy changed", "removed", "removed")
    assert (marks[1]["%76"], marks[1]["%131"], marks[1]["%176"]) == ("strategy changed", "added", "added")
    colours = {r["value"]: r["bgColor"] for r in new.node_data_of("diff")[b["id"]]["results"].values()}
    assert colours == {"strategy changed": CAUSE_COLORS["strategy"], "communication changed": CAUSE_COLORS[
        "communication"], "added": CAUSE_COLORS["added"]}
    # folded boxes count the marks below them; the graph's info says the operator counts, and an operator on
    # both sides whose count changed says it in its panel, unmarked (which of its nodes are new is not known)
    assert {k: v for k, v in b["groupNodeAttributes"][""].items() if k.startswith("diff ") and k != "diff operator counts"} \
        == {"diff added": "8", "diff changed": "4"}
    assert b["groupNodeAttributes"]["Default"]["diff added"] == "4"  # the 3 AllGathers and the Sigmoid
    assert "ReluGrad 1 -> 0" in b["groupNodeAttributes"][""]["diff operator counts"]
    reshape = next(n for n in b["nodes"] if n["label"] == "Reshape")
    assert _attrs(reshape)["diff operator count"] == "Reshape 42 -> 50" and reshape["id"] not in marks[1]
    fc1 = _attrs(next(n for n in b["nodes"] if n["id"] == "%76"))
    assert fc1["diff"] == "changed (new side)" and fc1["diff in strategy"] == "(4,1)(1,2) -> (2,1)(1,4)"
    # a changed node in a colour no category uses, nor one near it (the amber of before was a shade off the
    # redistribution orange next to it)
    def rgb(c: str) -> tuple[int, ...]:
        return tuple(int(c[i : i + 2], 16) for i in (1, 3, 5))

    for kind, colour in {**DIFF_COLORS, "communication": CAUSE_COLORS["communication"]}.items():
        near = min(sum((x - y) ** 2 for x, y in zip(rgb(colour), rgb(c))) ** 0.5 for c in CATEGORY_COLORS.values())
        assert near > 100, (kind, near)
    # the diff overlay is loaded last: the one Model Explorer shows
    assert list(old.overlays)[-1] == list(new.overlays)[-1] == "diff"
    # one network twice: no "nothing matched"; two networks side by side (the MLP of semi_auto_8p, the GPT), every
    # node with a strategy or communication added or removed: the page's first line says nothing matched
    assert old.headline is None and new.headline is None
    other = compare_models(SEMI, GPT, diff_rank)[0].headline
    assert other is not None and other["lines"][0].startswith("Nothing matched: "), other
    # ... then what their jobs differ in, as `irtool diff` says it: the model's and data's sizes apart from the layout
    # (the GPT's manifest: batch 8, pp 2, 2 micro batches; semi_auto_8p one stage)
    assert other["lines"][2].startswith("Model and data changed, not the parallel layout: global batch ")
    assert other["lines"][2].endswith(" → 8 (the marks below change with it)")
    assert "pipeline stages 1 → 2; micro batches 1 → 2" in other["lines"][3] and other["lines"][3].startswith(
        "Configuration: ")


def test_cost_overlays() -> None:
    model = _model(SEMI)
    (graph,) = model.graphs
    flops = model.node_data_of("FLOPs")[graph["id"]]
    # line 512 `%73 = PrimFunc_MatMul(...)` fc1: (128, 64) x (64, 128) -> 2 * 128 * 64 * 128 FLOPs, the largest
    # operator of the dump (with qkv's and the others of its size): in the darkest colour
    assert flops["results"]["%73"]["value"] == 2 * 128 * 64 * 128 == max(r["value"] for r in flops["results"].values())
    assert flops["thresholds"][-1]["value"] == 2 * 128 * 64 * 128 and flops["thresholds"][-1]["bgColor"] == HEAT[-1]
    # an operator of unknown cost has no value (line 104's AllGather moves data, it computes nothing: none either)
    assert "%5" not in flops["results"]
    # bytes held: line 26 `%para6_body.w1: <Ref[Tensor[Float32]], (64, 128), ...> : has_default` -> 64 * 128 * 4
    held = model.node_data_of("bytes held")[graph["id"]]["results"]
    assert held["%para6_body.w1"]["value"] == 64 * 128 * 4
    # activation bytes: what the backward keeps of a forward output: line 725 `%112 = PrimFunc_ReLU(%111)`, output
    # `(512, 8)` Float32 (line 726), read by line 1021 `PrimFunc_ReluGrad(%156, %112)`; fc1's output is not kept
    # (line 539's Add alone reads it)
    kept = model.node_data_of("activation bytes")[graph["id"]]["results"]
    assert kept["%112"]["value"] == 512 * 8 * 4 and "%73" not in kept
    # an overview's part boxes carry the sum of their nodes' FLOPs (each part on the same footing)
    parts = _model(GPT, 300)
    data = parts.node_data_of("FLOPs")
    overview, *rest = parts.graphs
    boxes = data[overview["id"]]["results"]
    for part in rest[:3]:
        mine = {n["id"] for n in part["nodes"] if not n["namespace"].startswith(INPUTS)}
        assert boxes[part["id"]]["value"] == sum(v["value"] for k, v in data[part["id"]]["results"].items() if k in mine)
    # a folder's execution-order graph: each unit of work its operators' FLOPs, one scale for every stage (the stage
    # load); pipeline_4stage_8p's micro batches are alike: every forward unit of stages 0-2 the same, each backward
    # more (on the last stage F1-F7 each hold one scalar Add more than F0, 1 FLOP: the loss added to the sum F0 starts)
    units = _model(PIPE4).node_data_of("FLOPs")["execution order"]["results"]
    for rank in (0, 2, 4, 6):
        f = {units[f"rank{rank}/F{m}"]["value"] for m in range(8)}
        b = {units[f"rank{rank}/B{m}"]["value"] for m in range(8)}
        assert (len(f) == 1 or rank == 6) and len(b) == 1 and min(b) > max(f) > 0
    # a lazy-inline stage's units are calls (gpt_small_dp2mp2pp2_lazyinline rank 0: `%1 = call @..._GPT_construct_7592`
    # for micro 0, `%9` the same for micro 1; GPT forward calls DecoderLayer forward #7388 and #7389): a forward unit
    # is one call of GPT forward, its own and its callees' FLOPs in the step over their 2 calls each; a backward unit
    # calls GPT backward #7590 (line 6447, `%19[@Partial(@..._7590)]`), which calls the layers' bprops by the
    # closures it is given (line 3784, `Parameter_7392[@Partial(@..._7336)]`): #7336, #7520 and #7558 (the
    # recomputed layer's)
    lazy = _model(str(Path(LAZY).parents[1]))
    data = lazy.node_data_of("FLOPs")

    def per_step(*graphs: str) -> int:
        return sum(v["value"] for g in graphs for v in data[f"stage 0 rank 0: {g}"]["results"].values())

    units = data["execution order"]["results"]
    assert units["rank0/F0"]["value"] == units["rank0/F1"]["value"] == per_step(
        "GPT forward #7592", "DecoderLayer forward #7388", "DecoderLayer forward #7389") // 2
    assert units["rank0/B0"]["value"] == units["rank0/B1"]["value"] == per_step(
        "GPT backward #7590", "DecoderLayer backward #7336", "DecoderLayer backward #7520",
        "DecoderLayer backward #7558") // 2
    assert data["execution order"]["legend"]["scale"].startswith("linear")
    # ... and a backward unit recomputes forward work through those calls (#7558's `recompute_Default` operators, as
    # the timeline times it): coloured so, as a unit holding them itself is (it was plain backward)
    order = next(g for g in lazy.graphs if g["id"] == "execution order")
    assert {(n["label"], n["style"]["backgroundColor"]) for n in order["nodes"]} == {
        ("F0", UNIT_COLORS["F"]), ("F1", UNIT_COLORS["F"]), ("B0", UNIT_COLORS["recompute"]),
        ("B1", UNIT_COLORS["recompute"])}
    assert all(_attrs(n)["recomputed operators"] != "0" for n in order["nodes"] if n["label"][0] == "B")
    # an overview's parts on a log scale from the least part to the largest (a linear one left one dark box among
    # pale ones): gpt_small in parts of 300, each part a colour of its size
    boxes = parts.node_data_of("FLOPs")[overview["id"]]
    sums = [v["value"] for v in boxes["results"].values() if v["value"] > 0]
    edges = [t["value"] for t in boxes["thresholds"]]
    assert edges[-1] == max(sums) and edges[0] > min(sums) and all(b / a > 2 for a, b in zip(edges, edges[1:]))
    assert len({next(i for i, e in enumerate(edges) if v <= e) for v in sums}) >= 3
    assert boxes["legend"]["scale"] == "log scale from the least part to the largest"


def test_compare_marks_the_one_changed_node_of_a_pipeline_rank(tmp_path: Path) -> None:
    # issue 20 item 5: a copy of pipeline_4stage_8p rank 2 with only `%6`'s strategy changed (line 398,
    # fc1, micro 0; grep -c 'instance name: fc1' = 16 copies, one per micro batch and phase)
    from test_diff import P4_RANK2, edited_copy

    new_file = edited_copy(tmp_path, 398, "in_strategy: ((1, 1), (1, 2))", "in_strategy: ((2, 1), (1, 1))")
    old, new = compare_models(str(P4_RANK2), str(new_file), diff_rank)
    for model, side in ((old, "old"), (new, "new")):
        marked = [k for g in model.node_data["diff"].values() for k in g["results"]]
        assert [k.rsplit("/", 1)[-1] for k in marked] == ["%6"], marked
        node = _attrs(next(n for g in model.graphs for n in g["nodes"] if n["id"] == marked[0]))
        assert node["diff"] == f"changed ({side} side)" and node["diff in strategy"] == "(1,1)(1,2) -> (2,1)(1,1)"


LLAMA_OLD = str(Path(fixture("mindformers_llama_dp2mp2pp2/rank_0/19_validate_0089.ir.xz")).parents[1])
LLAMA_NEW = str(Path(fixture("mindformers_llama_dp1mp4pp2/rank_0/19_validate_0089.ir.xz")).parents[1])
WQ = "LlamaForCausalLM/model-LlamaModel/layers-CellList/0-LLamaDecodeLayer/attention-LLamaAttention/wq-Linear"


@cache
def _logical_diff() -> LogicalDiff:
    from irtool.diff import logical_diff

    across = logical_diff(Selection.of(LLAMA_OLD), Selection.of(LLAMA_NEW))
    assert across is not None
    return across


@cache
def _logical() -> Model:
    from irtool.view.logical import logical_model

    return logical_model(_logical_diff())


def test_two_configurations_open_as_one_logical_graph() -> None:
    from irtool.diff import logical_diff
    from irtool.view.logical import headline

    # two compilations of one configuration (semi_auto_8p, fc1's strategy and a ReLU changed): rank with rank
    assert logical_diff(Selection.of(SEMI), Selection.of(CHANGED)) is None
    # mindformers_llama_dp2mp2pp2 against the same Llama as dp1 x mp4 (the diff's rule: a structural change of the
    # job, tests/test_logical.py reads it from both dumps): one graph, a box per user operator in its cell
    model = _logical()
    (graph,) = model.graphs
    info = graph["groupNodeAttributes"][""]
    assert info["configuration"] == "dp 2 -> 1; mp 2 -> 4; optimizer sharding 2 -> 1"  # ASCII: the canvas' font
    # wq's MatMul: `in_strategy: ((2, 1), (2, 1))` at old rank 0 line 3730, `((1, 1), (4, 1))` at new line 3767;
    # (512, 512) x (256, 512)^T on one side, (1024, 512) x (128, 512)^T on the other: 2 * 512 * 512 * 256 FLOPs per
    # micro batch on both, 4 micro batches, forward, its recomputed copy and the backward's two MatMuls (dx, dw)
    box = next(n for n in graph["nodes"] if n["id"] == f"{WQ}/MatMul")
    rows = _attrs(box)
    assert box["namespace"] == WQ and box["label"] == "MatMul"
    assert rows["in strategy"] == rows["diff strategy"] == "(2,1)(2,1) -> (1,1)(4,1)"
    assert (rows["old at"], rows["new at"]) == ("rank 0 line 3730", "rank 0 line 3767")
    assert rows["FLOPs"] == f"{4 * 4 * 2 * 512 * 512 * 256:,} -> {4 * 4 * 2 * 512 * 512 * 256:,}"
    # `# Params` line of rank 0: wq's (128, 512) slice on both sides (mp 2 halved by the optimizer shard over dp 2,
    # against mp 4); its optimizer shard's AllGather (old line 129's kind, on `group_rank_ids: (0, 2)`) of the slice
    # to (256, 512) fp16, 262,144 bytes, and the ReduceScatter of its fp32 gradient, 524,288 bytes, vanish: the box
    # says so (`diff ...` rows are drawn on it) and is coloured as a change the layout explains (mp 2 -> 4, dp 2 -> 1)
    listed = [(a["key"], a["value"]) for a in box["attrs"]]
    assert ("weight", "model.layers.0.attention.wq.weight (128, 512) -> (128, 512)") in listed
    assert any(k == "comm" and v.startswith("AllGather optimizer-parallel forward: count 1 -> -") for k, v in listed)
    assert (rows["diff comm"], rows["diff comm bytes"]) == ("-AllGather -ReduceScatter", "786,432 -> 0 (gone)")
    assert rows["change"] == "changed: strategy, comm (cause: layout)"
    assert box["style"]["backgroundColor"] == CAUSE_COLORS["layout"]
    # wo's MatMul: its row-parallel AllReduce's group grows with mp 2 -> 4 (old `group_rank_ids: (0, 1)`)
    wo = _attrs(next(n for n in graph["nodes"] if n["id"] == f"{WQ[: -len('wq-Linear')]}wo-Linear/MatMul"))
    assert "AllReduce group 2 -> 4" in wo["diff comm"]
    assert not any(ch in str(n["attrs"]) + str(graph["groupNodeAttributes"]) for n in graph["nodes"] for ch in "→—×")
    # the top cell's Cast before the layers (the embedding's) and after them (the head's, reading layer 3): two
    # operators of one cell and type, each id saying where it is in words
    ids = {n["id"] for n in graph["nodes"]}
    assert {"LlamaForCausalLM/Cast (before the layers)", "LlamaForCausalLM/Cast (after layer 3)"} <= ids
    # its input, wq's Reshape of the activations, an edge; the diff overlay marks it; the page opens on a change
    assert box["incomingEdges"][0]["sourceNodeId"] == f"{WQ}/Reshape"
    assert model.node_data_of("diff")["logical"]["results"][box["id"]]["value"] == "layout"
    assert list(model.overlays)[-1] == "diff" and model.first_node() in model.node_data_of("diff")["logical"]["results"]
    # layer 0's box: its 2,953,216 weight bytes on both sides, its 20 tensor-parallel AllReduces per step at
    # 524,288 -> 1,048,576 bytes each (test_logical.py: rank 0 lines 5182, 5761, 14828, 15244, 16140 x 4 calls)
    layer0 = graph["groupNodeAttributes"]["LlamaForCausalLM/model-LlamaModel/layers-CellList/0-LLamaDecodeLayer"]
    assert layer0["weights"] == "2,953,216 -> 2,953,216"
    assert layer0["comm operator-forward"] == "count 20 -> 20; bytes 10,485,760 -> 20,971,520 (x2.00)"
    # the page's first line: the configuration change, said once; then the causes, each a colour, the layout's
    # change counting every operator whose strategy follows the degrees (`OperatorPair.follows`, as `irtool diff`)
    head = model.headline
    assert head["lines"][0] == "Configuration: dp 2 → 1; mp 2 → 4; optimizer sharding 2 → 1"
    across = _logical_diff()
    layout = sum(bool(p.follows) for p in across.ops)
    # ... and the two whose strategy did not change, only their communication, as a degree did (`comm_follows`): the
    # embedding's Mul, its AllReduce's group 2 -> 4 (old `group_rank_ids: (0, 1)`, mp 2 -> 4), and the loss's Mul,
    # its AllGather of a group of 2 gone (dp 2 -> 1); a pipeline Receive moving twice the bytes stays `communication`
    follow = {p.key.text: p.comm_follows for p in across.ops if p.comm_follows}
    assert follow == {"LlamaForCausalLM/model-LlamaModel/tok_embeddings-LlamaEmbedding/Mul": ("mp",),
                      "LlamaForCausalLM/loss-CrossEntropyLoss/Mul": ("dp",)}
    assert {p.cause for p in across.ops if p.comm_follows} == {"layout"}
    assert head["legend"][0][0] == CAUSE_COLORS["layout"]
    assert head["legend"][0][1].startswith(f"layout {layout + 2}: its strategy follows dp 2 → 1 (")
    assert head["legend"][0][1].endswith("; only its communication follows dp 2 → 1 (1), mp 2 → 4 (1)")
    assert sum(int(t.split()[1].rstrip(":")) for _, t in head["legend"]) == len(across.changed_ops)
    assert head["lines"][1] == f"{len(across.changed_ops)} of {len(across.ops)} user operators changed; the colours say why:"
    # two different networks (semi_auto_8p's 2-layer MLP, the GPT): no user operator on both sides, said first;
    # the GPT's rank 0 alone holds stage 0 of its 2: stage 1's operators are not removed, they were not read
    other = headline(logical_diff(Selection.of(SEMI), Selection.of(GPT)))
    assert other["lines"][0].startswith("Nothing matched: no user operator of ")
    assert other["lines"][1].startswith("Model and data changed, not the parallel layout: global batch ")
    assert other["lines"][2].startswith("Configuration: ")
    assert other["lines"][3] == f"new: stage 1 not read ({GPT} holds no rank of it): its operators show as only in old"
    assert [t.split(":")[0] for _, t in other["legend"]] == ["added 97", "removed 33"]


PIPE4 = str(Path(fixture("pipeline_4stage_8p/rank_0/19_validate_0078.ir.xz")).parents[1])
INTERLEAVED = str(Path(fixture("pipeline_interleaved_4stage_8p/rank_0/19_validate_0087.ir.xz")).parents[1])
LAZY = fixture("gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz")


def test_ordering_edges_are_an_overlay_not_edges() -> None:
    (graph,) = _model(SEMI).graphs
    by_id = {n["id"]: n for n in graph["nodes"]}
    # line 878 `%135 = UpdateState(UMonad[U], %134)`, 881 `%136 = AssignAdd(%para10_global_step, Tensor(...), %135)`
    # (input 2 typed `<UMonad, NoShape>`), 891 `%137 = UpdateState(%135, %136, %3)`, 1913 `%288 = Depend(%133, %287)`
    sources = {k: [e["sourceNodeId"] for e in by_id[k]["incomingEdges"]] for k in ("%135", "%136", "%137", "%288")}
    assert sources == {"%135": [], "%136": ["%para10_global_step"], "%137": [], "%288": ["%133"]}
    # drawn on demand: Model Explorer's edge overlay of this graph, for the node selected
    (data,) = graph["tasksData"]["edgeOverlaysDataListLeftPane"]
    assert graph["tasksData"]["edgeOverlaysDataListRightPane"] == [data] and data["graphName"] == graph["id"]
    (overlay,) = data["overlays"]
    assert overlay["showEdgesConnectedToSelectedNodeOnly"] is True
    edges = {(e["sourceNodeId"], e["targetNodeId"]) for e in overlay["edges"]}
    assert {("%134", "%135"), ("%135", "%136"), ("%135", "%137"), ("%136", "%137"), ("%3", "%137"),
            ("%287", "%288")} <= edges
    drawn = {(e["sourceNodeId"], n["id"]) for n in graph["nodes"] for e in n["incomingEdges"]}
    assert not edges & drawn
    # split into parts: each part keeps its own ordering edges, for its own graph
    for g in _model(SEMI, 100).graphs:
        for d in g.get("tasksData", {}).get("edgeOverlaysDataListLeftPane", ()):
            ids = {n["id"] for n in g["nodes"]}
            assert d["graphName"] == g["id"] and all(
                e["sourceNodeId"] in ids and e["targetNodeId"] in ids for e in d["overlays"][0]["edges"])


def test_repeated_operators_stack_and_graphs_are_named_by_their_cell() -> None:
    (graph,) = _model(SEMI).graphs
    levels = graph["groupNodeAttributes"]
    # `grep -c 'Fullname with scope: (Default/optimizer-AdamWeightDecay/UpdateState-op'` -> 7, beside 7
    # AdamWeightDecay and 1 AssignAdd in that scope (15 children): the 7 in a stack of their own
    stack = "Default/optimizer-AdamWeightDecay/UpdateState (7)"
    assert levels[stack]["level"] == "operator"
    assert sum(n["namespace"] == stack for n in graph["nodes"]) == 7
    assert [n["label"] for n in graph["nodes"] if n["namespace"] == "Default/optimizer-AdamWeightDecay"
            and not n["id"].startswith("%para")] == ["AssignAdd"]
    # communication nodes, operators with a strategy and redistribution chains stay in sight: body's 13
    # AllGathers (`grep -A2 '= AllGather(' | grep -c 'scope: (Default/.../body-ShardedAttentionMLP/AllGather'`)
    body = "Default/network-WithLossCell/_backbone-Net/body-ShardedAttentionMLP"
    assert sum(n["label"] == "AllGather" and n["namespace"] == body for n in graph["nodes"]) == 13
    # the entry graph `@930_929_90_88_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_822` is named
    # by its cell; its info keeps the dump's name
    assert graph["id"] == "TrainOneStepCell"
    assert levels[""]["subgraph"] == "930_929_90_88_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_822"
    # lazy inline: `grep '^subgraph @'` -> 8 subgraphs, 5 of cell DecoderLayer (numbers 7389, 7336, 7388, 7520,
    # 7558), 2 of GPT (7592, 7590), 1 TrainGradAccuStepCell: the repeated cells told apart by their number
    ids = [g["id"] for g in _model(LAZY).graphs]
    assert ids[0] == "TrainGradAccuStepCell" and len(set(ids)) == 8
    assert sorted(i.split()[0] + " " + i.split()[-1] for i in ids[1:]) == [
        "DecoderLayer #7336", "DecoderLayer #7388", "DecoderLayer #7389", "DecoderLayer #7520", "DecoderLayer #7558",
        "GPT #7590", "GPT #7592"]
    # `%1 = call @..._GPT_construct_7592(...)` in the entry graph, `cnode_attrs: {... is_bp: Bool(0)}`: forward
    assert "GPT forward #7592" in ids
    # the call's box and panel name its callee as the graph selector does, the dump's name in a row of its own
    entry = _model(LAZY).graphs[0]
    call = next(n for n in entry["nodes"] if n["id"] == "%1")
    assert call["label"] == "call GPT forward #7592" and call["subgraphIds"] == ["GPT forward #7592"]
    assert _attrs(call)["callee"] == "GPT forward #7592"
    assert re.fullmatch(r"@\S+_GPT_construct_7592", _attrs(call)["callee in the dump"])
    # line 6447 `%22(CNode_7596) = %19[@Partial(@..._GPT_construct_7590)](%21, UMonad[U])`, `is_bp: Bool(1)`: a call
    # of the closure %19 holds, named by that graph (it was `call %19`)
    back = next(n for n in entry["nodes"] if n["id"] == "%22")
    assert back["label"] == "call GPT backward #7590" and back["subgraphIds"] == ["GPT backward #7590"]
    assert re.fullmatch(r"%19 holding @\S+_GPT_construct_7590", _attrs(back)["callee in the dump"])


def test_the_panel_reads_values_as_a_person_does() -> None:
    (graph,) = _model(SEMI).graphs
    by_id = {n["id"]: n for n in graph["nodes"]}
    # line 86 `%3 = PrimFunc_MatMul(%1, %2, Bool(0), Bool(0))`: the constants as their type reads them
    qkv = _attrs(by_id["%3"])
    assert qkv["input 2"] == qkv["input 3"] == "false"
    # line 108, the Split after line 104's AllGather: `-> (<Tuple[Tensor[Float32]*4], TupleShape((1, 256, 48), ...x4)>)`
    split = next(n for n in graph["nodes"] if _attrs(n).get("file", "").endswith(":107"))
    assert split["outputsMetadata"][0]["attrs"] == [{"key": "type", "value": "tuple of 4: 4 × Float32 (1, 256, 48)"}]
    # overlays valued by name (`comm category redistribution`), a folded box counting each
    category = _model(SEMI).node_data["comm category"][graph["id"]]
    assert category["results"]["%5"]["value"] == "redistribution" and category["showExpandedSummaryOnGroupNode"]
    # dynamic_shape_pp_4p rank 0: `grep -o '<Tensor\[[A-Za-z0-9]*\], ([^)]*-1[^)]*)>'` -> (-1, 64) x100,
    # (-1, 128) x38, (-1) x13 (and one (-1, 16), an input): a dimension of unknown size as `—`, said once when none is
    dyn = _model(fixture("dynamic_shape_pp_4p/rank_0/19_validate_0087.ir.xz")).graphs
    shapes = {a["value"] for g in dyn for n in g["nodes"] for m in n["outputsMetadata"] for a in m["attrs"]
              if a["key"] == "shape"}
    # known
    assert {"(—, 64)", "(—, 128)", "1 dimension of unknown size"} <= shapes
    assert not any("-1" in x for x in shapes)


def test_find_a_node_by_id_or_file_and_line() -> None:
    semi = _model(SEMI)
    # line 86: `%3 = PrimFunc_MatMul(...)`; `%3`, `FILE:86` and `:86` name it
    assert semi.find("%3") == semi.find("19_validate_0078.ir.xz:86") == semi.find(":86") == ("TrainOneStepCell", "%3")
    for spec, said in (("%99999", "no node %99999"), ("other.ir:86", "the files are 19_validate_0078.ir.xz"),
                       ("19_validate_0078.ir.xz:87", "the statement before it is %3 at line 86"),
                       ("x", "expected %N or FILE:LINE")):
        with pytest.raises(InputError, match=re.escape(said)):
            semi.find(spec)
    # a folder: the panel names files `rank_N/...`; line 398 of rank 2 is `%6 = PrimFunc_MatMul(...)`, and line
    # 87 holds a node on ranks 0, 2 and 4 (stages 0-2)
    four = _model(PIPE4)
    assert four.find("rank_2/19_validate_0078.ir.xz:398") == ("stage 1 rank 2: TrainStep", "%6")
    with pytest.raises(InputError, match="names 3 nodes"):
        four.find("19_validate_0078.ir.xz:87")
    # the CLI says it in one line, before serving
    res = CliRunner().invoke(main, ["view", SEMI, "--node", "%99999", "--no-browser"])
    assert res.exit_code == 2 and "no node %99999" in res.output


def test_the_node_index_finds_every_node_where_it_is() -> None:
    model = _model(GPT, 300)
    index = model.index()
    graphs = model.graphs
    # every operator and parameter once, in the graph holding it (1500 operators, 139 parameters: the whole graph)
    (whole,) = _model(GPT).graphs
    assert sorted(n[1] for n in index["nodes"]) == sorted(n["id"] for n in whole["nodes"])
    held = {g["id"]: {n["id"] for n in g["nodes"] if not n["namespace"].startswith(INPUTS)} for g in graphs}
    assert all(n[1] in held[index["graphs"][n[0]]] for n in index["nodes"])
    # line 2446 `%154 = Send(...)`: found by its file and line, in the part of layer 1's forward (the data flow's
    # layer of the Send after it)
    (send,) = [n for n in index["nodes"] if n[3] >= 0 and f"{index['files'][n[3]]}:{n[4]}" == "19_validate_0078.ir.xz:2446"]
    assert send[1:3] == ["%154", "Send"] and index["graphs"][send[0]] == "TrainGradAccuStepCell: forward/layer 1"
    # each node a part shows from another part links to that part's own node
    stubs = [(g["id"], n["id"]) for g in graphs for n in g["nodes"] if n["namespace"].startswith(INPUTS)]
    assert stubs and all(index["links"][g][n]["in part"] == [next(h for h, ids in held.items() if n in ids), n]
                     for g, n in stubs)


def test_every_panel_link_names_a_node_of_its_graph() -> None:
    # a link to a node the graph does not hold leaves Model Explorer "Processing" (issue 28: `comm serves %42`
    # of a pipeline box): every link of every panel of a folder's graphs, the pipeline graph's too; and every row
    # the page makes a link to another graph (`stage graph`, `comm serves` of a pipeline box, `in part`) finds its
    # node there
    for path in (PIPE4, str(Path(fixture("pipeline_folded_8p/rank_0/19_validate_0078.ir.xz")).parents[1]),
                 str(Path(fixture("pipeline_interleaved_4stage_8p/rank_0/19_validate_0087.ir.xz")).parents[1]),
                 str(Path(GPT).parent)):
        model = _model(path, 300)
        graphs = model.graphs
        assert graphs[0]["id"] == "pipeline" or "rank" in graphs[0]["id"]
        index = model.index()
        nodes = {g["id"]: {n["id"] for n in g["nodes"]} for g in graphs}
        for g in graphs:
            ids = nodes[g["id"]]
            links = [(n["id"], a["key"], t) for n in g["nodes"] for a in n["attrs"] if isinstance(a["value"], dict)
                     for t in a["value"]["nodeIds"]]
            assert all(t in ids for _, _, t in links), (g["id"], [x for x in links if x[2] not in ids][:3])
            rows = [(n["id"], a["key"]) for n in g["nodes"] for a in n["attrs"] if a["key"] in LINK_KEYS
                    and isinstance(a["value"], str) and (a["key"] == "in part" or " %" in a["value"])]
            targets = [index["links"].get(g["id"], {}).get(n, {}).get(key) for n, key in rows]
            assert all(t is not None and t[1] in nodes[t[0]] for t in targets), (g["id"], rows[:3], targets[:3])
        assert any(index["links"].get("pipeline", {}).values()) or "pipeline" not in nodes
        # the timeline's units and the memory peaks open nodes their graphs hold (a split graph's part), every unit
        # of the timeline (interleaved: `F0.c1`) one; a node's `unit of work` row is of a node its graph holds
        if model.targets:
            placed = _placed(model)
            opened = [*placed["units"].values(), *placed["peaks"].values()]
            assert opened and all(node in nodes[graph] for graph, node in opened), path
            assert all(node in nodes[graph] for graph, rows in placed["nodes"].items() for node in rows), path
            drawn = re.findall(r'class="unit" data-stage="(\d+)" data-unit="([^"]+)"', model.pictures["timeline"]())
            assert drawn and all(f"{s} {u}" in placed["units"] for s, u in drawn), path


def test_adapter_extension_converts_a_dump() -> None:
    from irtool.view.main import MindIRAdapter  # imports Model Explorer (a second): here, not at collection

    graphs = MindIRAdapter().convert(SEMI, {})["graphs"]
    assert len(graphs) == 1 and len(graphs[0].nodes) == 290 + 25


def test_stage_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["export", PIPE, "--stage", "7", "-o", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "stages 0, 1" in res.output and not (tmp_path / "x.json").exists()


# --- in a real browser ---------------------------------------------------------------------------
# The browser tests share one Chromium and one server per model, all started at once (their start-ups
# overlap), and one page per server where the tests only read (each leaves the page where the next can
# find its way back); in one xdist group so that all of this happens once (`make test`: --dist loadgroup).
# They wait for what they check, never for a time.

BROWSER = pytest.mark.xdist_group("view_browser")
SERVED = {"semi": (SEMI,), "gpt": (GPT, "--part-size", "300"), "pipe": (PIPE4,), "interleaved": (INTERLEAVED,),
          "diff": (SEMI, CHANGED),
          "logical": (LLAMA_OLD, LLAMA_NEW)}
OPENING = {"gpt": "&irtool_node=19_validate_0078.ir.xz%3A3761"}  # the page of GPT opens on a node (`--node`)
SHOTS = os.environ.get("IRTOOL_SCREENSHOTS")  # README's pictures are written there when set


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """`irtool view PATHS --no-browser` on a free port, started at once; `url()` waits until it answers."""

    def __init__(self, *paths: str) -> None:
        self.port = _free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "irtool.cli", "view", *paths, "--no-browser", "--port",
                                      str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self._url: str | None = None

    def url(self) -> str:
        if self._url is None:
            said = []
            for line in self.proc.stderr:  # type: ignore[union-attr]
                said.append(line)
                m = re.search(r"Model Explorer at (\S+)", line)
                if m:
                    self._url = m.group(1)
                    break
            assert self._url, "irtool view printed no URL: " + "".join(said)[-2000:]
            # the server's request log goes on to stderr: read, so that a full pipe never stops it
            threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # type: ignore[union-attr]
            deadline = time.time() + 120
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/check_health", timeout=2) as r:
                        if r.read() == b"model_explorer_ok":
                            break
                except OSError:
                    assert self.proc.poll() is None and time.time() < deadline, "the server did not start"
                    time.sleep(0.1)
        return self._url

    def stop(self) -> None:
        """Stopped (SIGTERM, SIGKILL after 10 s) once `signal_stop` asked every server to stop."""
        self.signal_stop()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def signal_stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)


class _Servers(dict):
    """The `irtool view` server of each of SERVED, started when first asked for (the pages ask one ahead)."""

    def __missing__(self, name: str) -> _Server:
        self[name] = _Server(*SERVED[name])
        return self[name]


@pytest.fixture(scope="module")
def servers() -> Iterator[_Servers]:
    started = _Servers()
    try:
        yield started
    finally:
        for server in started.values():  # all at once, then each waited for
            server.signal_stop()
        for server in started.values():
            server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                              env={**os.environ, "LP_NUM_THREADS": "0"})
        try:
            page = b.new_page()
            gl = page.evaluate(WEBGL_RENDERER)
            page.close()
            assert "llvmpipe" in gl, f"WebGL draws on {gl}, not Mesa's llvmpipe: `make system` installs it"
            yield b
        finally:
            b.close()


# llvmpipe draws on the CPU the machine shares with the tests: the page's canvas at the size README's pictures
# want only when they are taken, and without multisampling otherwise (Model Explorer asks WebGL for it; the
# picture is the same but for its edges, and every frame cost a third less on SwiftShader)
SIZE = {"width": 1600, "height": 1000} if SHOTS else {"width": 800, "height": 560}
NO_MULTISAMPLING = """
(() => { const getContext = HTMLCanvasElement.prototype.getContext;
  HTMLCanvasElement.prototype.getContext = function (type, attrs) {
    if (String(type).startsWith('webgl')) attrs = Object.assign({}, attrs, {antialias: false});
    return getContext.call(this, type, attrs); }; })();
"""


def _load(browser: object, url: str) -> object:
    """A new page (its own browser context) loading `url` (returns once the browser has it)."""
    # the canvas drawn at half the page's resolution, a quarter of the pixels (the README's pictures at full)
    ctx = browser.new_context(viewport=SIZE, device_scale_factor=1 if SHOTS else 0.5)  # type: ignore[attr-defined]
    ctx.add_init_script(WORKER_HOOK + ("" if SHOTS else NO_MULTISAMPLING))
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    local = url.split("/?")[0]
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
    page.goto(url, wait_until="commit")
    return page


def _wait_for(page: object, expression: str, arg: object = None, timeout: float | None = None) -> object:
    """`page.wait_for_function`, its condition tried every 100 ms: Playwright's default tries it at every animation
    frame, which keeps the page drawing frames (on the CPU, llvmpipe) for as long as a test waits."""
    return page.wait_for_function(expression, arg=arg, timeout=timeout, polling=100)  # type: ignore[attr-defined]


def _ready(page: object) -> object:
    """`page` once its graph is drawn and its panel shown."""
    _wait_for(page, f"{GRAPH} !== undefined")
    page.locator("info-panel table.info-attrs").first.wait_for()  # type: ignore[attr-defined]
    return page


class _Pages:
    """The page of each server (SERVED, in the order of the tests reading them), opened when a test first asks for
    it and kept for the tests after it that read the same server; while they run the next server's page loads
    (a page load is mostly the browser's work: the two overlap), and a page is closed when the tests move on
    (llvmpipe draws every page's frames in the one GPU process, for seconds after each step)."""

    def __init__(self, browser: object, servers: dict[str, _Server]) -> None:
        self.browser, self.servers = browser, servers
        self.name: str | None = None
        self.page: object = None
        self.loading: dict[str, object] = {}

    def _load(self, name: str) -> object:
        return _load(self.browser, self.servers[name].url() + OPENING.get(name, ""))

    def get(self, name: str) -> object:
        if self.name != name:
            self._close(self.page)
            after = list(SERVED)[list(SERVED).index(name) + 1 :]
            for started in after[:2]:  # their servers start while this page loads (a process each: no wait)
                self.servers[started]  # noqa: B018
            self.page, self.name = _ready(self.loading.pop(name, None) or self._load(name)), name
            if after and after[0] not in self.loading:
                self.loading[after[0]] = self._load(after[0])
        return self.page

    @staticmethod
    def _close(page: object) -> None:
        if page is not None:
            page.context.close()  # type: ignore[attr-defined]

    def close(self) -> None:
        for page in [self.page, *self.loading.values()]:
            self._close(page)
        self.page = self.name = None
        self.loading.clear()


@pytest.fixture(scope="module")
def pages(browser: object, servers: dict[str, _Server]) -> Iterator[_Pages]:
    opened = _Pages(browser, servers)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def semi_page(pages: _Pages) -> object:
    """`irtool view SEMI`, for the tests that read it."""
    return pages.get("semi")


@pytest.fixture
def gpt_page(pages: _Pages) -> object:
    """`irtool view GPT --part-size 300` (1500 operators in parts of at most 300 nodes), the page opened on a node
    (`--node 19_validate_0078.ir.xz:3761`: test_opening_on_a_node)."""
    return pages.get("gpt")


@pytest.fixture
def pipe_page(pages: _Pages) -> object:
    """`irtool view PIPE4`: the folder's pipeline graph first."""
    return pages.get("pipe")


@pytest.fixture
def interleaved_page(pages: _Pages) -> object:
    """`irtool view INTERLEAVED`: 4 stages of 2 chunks, 8 micro batches."""
    return pages.get("interleaved")


@pytest.fixture
def diff_page(pages: _Pages) -> object:
    """`irtool view SEMI CHANGED`: two compilations side by side."""
    return pages.get("diff")


@pytest.fixture
def logical_page(pages: _Pages) -> object:
    """`irtool view LLAMA_OLD LLAMA_NEW`: two configurations as one logical graph."""
    return pages.get("logical")


def _shot(page: object, name: str) -> None:
    """README's picture `docs/img/view_<name>.png`, when IRTOOL_SCREENSHOTS names the folder: taken once no
    tooltip covers the picture."""
    if SHOTS:
        page.mouse.move(10, 990)  # type: ignore[attr-defined]
        page.wait_for_timeout(1000)  # type: ignore[attr-defined]
        page.screenshot(path=str(Path(SHOTS) / f"view_{name}.png"))  # type: ignore[attr-defined]


def _info(page: object) -> dict[str, str]:
    """Key -> value rows of the side panel's graph info."""
    return page.evaluate("""() => {  // type: ignore[attr-defined]
      const out = {};
      for (const tr of document.querySelectorAll('info-panel table.metadata-table tr')) {
        const td = tr.querySelectorAll('td');
        if (td.length >= 2) out[td[0].innerText.trim()] = td[1].innerText.trim();
      }
      return out; }""")


# the graph the first pane shows, as Model Explorer holds it (its nodes with their group, each group expanded or not)
GRAPH = "(window.me_test && window.me_test.renderers[0] && window.me_test.renderers[0].curModelGraph)"
# the nodes of that graph drawn now: every enclosing group expanded
SHOWN_JS = f"""() => {{ const g = {GRAPH};
  return g.nodes.filter(n => {{ let p = n.nsParentId;
    while (p) {{ const q = g.nodesById[p]; if (!q || !q.expanded) return false; p = q.nsParentId; }} return true; }})
    .map(n => n.id); }}"""


def _drawn(page: object) -> dict:
    """Ids of the nodes drawn now, the op node count and the edge count."""
    return page.evaluate(f"""() => {{ const g = {GRAPH};  // type: ignore[attr-defined]
      return {{id: g.id, ops: g.nodes.filter(n => n.nodeType === 0).length, shown: ({SHOWN_JS})(),
               edges: g.nodes.reduce((s, n) => s + (n.incomingEdges || []).length, 0)}}; }}""")


def _until_drawn(page: object, node: str) -> None:
    """Wait until `node` is drawn."""
    _wait_for(page, f"(node) => {GRAPH} && ({SHOWN_JS})().includes(node)", arg=node)


def _go(page: object, graph: str, node: str | None = None, pane: int = 0) -> None:
    """Open `graph` in a pane (and select `node`), as a link of the page does; wait until it is drawn."""
    page.evaluate("([p, g, n]) => window.irtool.openNode(p, g, n)", [pane, graph, node])  # type: ignore[attr-defined]
    if node is None:
        try:
            _wait_for(page, """([g, p]) => { const r = window.me_test.renderers[p];  // type: ignore[attr-defined]
              return r && r.curModelGraph && r.curModelGraph.id === g && r.nodesToRender && r.nodesToRender.length; }""",
                                   arg=[graph, pane], timeout=60_000)
        except Exception as e:  # what the page showed instead
            state = page.evaluate("""(p) => { const r = Object.values(window.me_test.renderers);
              const app = r[p] && r[p].appService;
              return {renderers: r.length, shown: r.map(x => x.curModelGraph && x.curModelGraph.id),
                      nodes: r.map(x => x.nodesToRender && x.nodesToRender.length),
                      asked: app && Object.values(app.paneIdToGraph).map(g => g.id),
                      processing: app && app.processing && app.processing(),
                      opens: (window.IRTOOL_OPEN || []).length, selected: r.map(x => x.selectedNodeId)}; }""", pane)
            raise AssertionError(f"{graph} not shown: {state}") from e
    else:
        assert _selected(page, graph, pane, node) == node


def _selected(page: object, graph: str, pane: int = 0, node: str = "") -> str:
    """The node a pane shows selected (`node` if given), once it shows `graph` and its panel says the node."""
    try:  # the node as the condition saw it (a layout running may drop the selection a moment later)
        found = _wait_for(page, """([graph, pane, node]) => { const r = window.me_test && window.me_test.renderers[pane];
          const panel = document.querySelectorAll('.pane-container')[pane];
          return r && r.curModelGraph && r.curModelGraph.id === graph && r.selectedNodeId && panel &&
            (!node || r.selectedNodeId === node) &&
            [...panel.querySelectorAll('info-panel td')].some(
              td => td.innerText.trim().split('\\n')[0] === r.selectedNodeId) && r.selectedNodeId; }""",
                          arg=[graph, pane, node], timeout=120_000)  # the page asks for about 100 s
    except Exception as e:  # what the pane showed instead
        state = page.evaluate("""(pane) => { const r = window.me_test && window.me_test.renderers[pane];
          const panel = document.querySelectorAll('.pane-container')[pane];
          return {graph: r && r.curModelGraph && r.curModelGraph.id, selected: r && r.selectedNodeId,
                  panel: panel && [...panel.querySelectorAll('info-panel td')].slice(0, 6).map(td => td.innerText)}; }""",
                              pane)  # type: ignore[attr-defined]
        raise AssertionError(f"{node or 'a node'} of {graph} not selected: {state}") from e
    return found.json_value()  # type: ignore[attr-defined]


def _panel(page: object, pane: int = 0) -> dict[str, str]:
    """Key -> value rows of a pane's side panel."""
    return page.evaluate("""(pane) => {  // type: ignore[attr-defined]
      const out = {};
      const panel = document.querySelectorAll('.pane-container')[pane];
      for (const row of panel.querySelectorAll('info-panel .attrs-table-container tr, info-panel table tr')) {
        const td = row.querySelectorAll('td');
        const key = td.length >= 2 && td[0].innerText.trim();
        const value = key && td[1].innerText.replace(/\\n?unfold_(more|less)$/, '').trim();  // a long value's expander
        if (key) out[key] = key in out ? `${out[key]} | ${value}` : value;  // a row and an overlay of one name
      }
      return out; }""", pane)


def _overlay(page: object, name: str, pane: int = 0) -> dict[str, dict]:
    """Show the node data overlay `name` in a pane (its eye in the panel's list); its results by node id."""
    row = page.locator(".pane-container").nth(pane).locator(  # type: ignore[attr-defined]
        "node-data-provider-summary-panel .index-row",
        has=page.locator(".run-name", has_text=re.compile(f"^{re.escape(name)}$")))  # type: ignore[attr-defined]
    _click(page, row.locator(".icon-container.visibility"))
    _wait_for(page, """([name, pane]) => { const s = window.me_test.renderers[pane].webglRendererNdpService;
      const run = s.curNodeDataProviderRun(); return run && run.runName === name; }""", arg=[name, pane])
    return page.evaluate(f"window.me_test.renderers[{pane}].webglRendererNdpService.curNodeDataProviderResults()")


def _click(page: object, locator: object, alt: bool = False) -> None:
    """Click `locator` with the mouse (Alt held: Model Explorer selects the node a panel link names, a plain click
    only shows it); Playwright's own click waits for the picture to settle, seconds on llvmpipe."""
    locator.wait_for()  # type: ignore[attr-defined]
    # a panel row below its fold scrolled to (Playwright's own scrolling waits for frames to settle too)
    locator.evaluate("e => e.scrollIntoView({block: 'nearest'})")  # type: ignore[attr-defined]
    box = locator.bounding_box()  # type: ignore[attr-defined]
    if alt:
        page.keyboard.down("Alt")  # type: ignore[attr-defined]
    page.mouse.click(box["x"] + min(20, box["width"] / 2), box["y"] + box["height"] / 2)  # type: ignore[attr-defined]
    if alt:
        page.keyboard.up("Alt")  # type: ignore[attr-defined]


def _clear_search(page: object) -> None:
    """Clear the search box with its button. Model Explorer clears the results at once and again 300 ms later (its
    search box's input is debounced), which also drops the node a test selected meanwhile: waited out."""
    _click(page, page.locator("search-bar .btn-clear-container").first)
    page.wait_for_timeout(400)  # type: ignore[attr-defined]


def _link(page: object, key: str, node: str, graph: str) -> object:
    """The value of the panel's row `key` once the page made it a link to `node` of `graph` (static/view.js)."""
    return page.locator("info-panel tr", has=page.locator("td.key").get_by_text(key, exact=True)).locator(
        f'td.value.irtool-link[title="open {node} in {graph}"]').first  # type: ignore[attr-defined]


def _rgb(colour: str) -> str:
    """`#9fa8da` as the browser computes it: `rgb(159, 168, 218)`."""
    return "rgb({}, {}, {})".format(*(int(colour[i : i + 2], 16) for i in (1, 3, 5)))


def _expand_all(page: object) -> None:
    events = page.evaluate("window.__me.events")  # type: ignore[attr-defined]
    _click(page, page.locator("div.expand-all").first)
    _wait_for(page, f"window.__me.events > {events}")


@BROWSER
def test_a_dump_in_model_explorer(semi_page: object) -> None:
    page = semi_page
    info = _info(page)
    # header: 290 cnodes, 25 parameters; Model Explorer counts both as op nodes
    assert info["nodes"] == "290" and info["op node count"] == str(290 + 25), info
    # a regex search for AllGather finds the dump's 14 AllGathers (`grep -c '= AllGather('`)
    box = page.locator("search-bar input")
    box.fill("^AllGather$")
    box.press("Enter")
    results = page.locator(".search-results-container")
    results.wait_for()
    kinds = [results.locator(".option-container", has_text=kind) for kind in ("Attrs", "Inputs", "Outputs")]
    for option in kinds:  # match node labels only, not attribute values
        if "selected" in (option.get_attribute("class") or ""):
            _click(page, option)
    _wait_for(page, """() => { const t = document.querySelector('.search-results-container .title-label');
      return t && t.innerText.trim().startsWith('14 '); }""")
    for option in kinds:  # as they were, for the tests after this one
        _click(page, option)
    _clear_search(page)
    # expanding the scopes reveals the operators inside them
    before = _drawn(page)
    assert "%5" not in before["shown"]  # line 104's AllGather, inside body-ShardedAttentionMLP
    _expand_all(page)
    _until_drawn(page, "%5")
    assert len(_drawn(page)["shown"]) > len(before["shown"])
    # the node data overlays are loaded with the graph
    assert page.get_by_text("comm category").count() and page.get_by_text("comm bytes").count()
    # a file has no timeline: no picture links (a folder's: test_a_folder_links_its_timeline_and_memory)
    assert page.locator(".irtool-pictures").count() == 0
    _shot(page, "semi_auto")


@BROWSER
def test_cost_overlays_in_model_explorer(semi_page: object) -> None:
    page = semi_page
    # the FLOPs overlay (test_cost_overlays): fc1's MatMul, line 512 `%73`, the largest, in the darkest colour;
    # Model Explorer's own table sums it per root scope (its "Root-level nodes stats")
    results = _overlay(page, "FLOPs")
    assert results["%73"]["value"] == 2 * 128 * 64 * 128 and results["%73"]["bgColor"] == HEAT[-1]
    # its legend beside the graph: what is coloured, the unit, the scale (a colour per decade) and the range
    legend = page.locator(".pane-container .irtool-legend")
    _wait_for(page, "() => { const l = document.querySelector('.irtool-legend'); return l && "
                    "l.innerText.startsWith('FLOPs\\n'); }")
    text = legend.inner_text()
    assert "each operator's FLOPs in the step" in text and "by decade below the model's largest, 2,097,152" in text
    assert text.rstrip().endswith("max 2,097,152") and legend.locator(".irtool-swatch").count() == len(HEAT), text
    _shot(page, "cost")
    _overlay(page, "comm category")  # the page as it opened: its legend a colour per category
    _wait_for(page, "() => document.querySelector('.irtool-legend').innerText.includes('redistribution')")
    # the phase selector (the `phase` fact of every node): backward off, the graph of the other phases shown
    # (`grep -c 'scope: (Gradients'` counts the backward operators MindSpore names so; the fact decides here)
    phases = page.locator(".pane-container .irtool-phases input")
    assert [phases.nth(i).get_attribute("data-phase") for i in range(phases.count())] == [
        "forward", "backward", "optimizer"]
    (graph,) = _model(SEMI).graphs
    kept = {n["id"] for n in graph["nodes"] if _attrs(n).get("phase", "forward") != "backward"}
    phases.nth(1).uncheck()
    _wait_for(page, f"() => {{ const g = {GRAPH}; return g && g.id === 'TrainOneStepCell [forward, optimizer]'; }}")
    drawn = set(page.evaluate(f"{GRAPH}.nodes.filter(n => n.nodeType === 0).map(n => n.id)"))
    assert drawn and drawn <= {n["id"] for n in graph["nodes"]} and not any(
        _attrs(n).get("phase") == "backward" for n in graph["nodes"] if n["id"] in drawn)
    assert {k for k in kept if not k.startswith("%para")} <= drawn
    # the counts on the boxes are of the phases shown: the graph's operators of the forward and the optimizer, none
    # of the 6 gradient AllReduces (all backward); each root's phase row its phases left on
    shown_ops = sum(_attrs(n).get("phase") in ("forward", "optimizer") for n in graph["nodes"])
    # the counts follow the graph's relayout (a loaded machine saw them a frame late): waited for, then read
    _wait_for(page, f"() => ({GRAPH}.groupNodeAttributes[''] || {{}}).operators === '{shown_ops}'")
    counts = page.evaluate(f"{GRAPH}.groupNodeAttributes")
    assert counts[""]["operators"] == str(shown_ops) and "gradient aggregation" not in counts[""], counts[""]
    assert counts["Default"]["phase"] == graph["groupNodeAttributes"]["Default"]["phase"] == "forward 139, optimizer 15"
    _shot(page, "phases")
    # the legend's range is of the graph shown: the FLOPs of the forward and optimizer operators, not the backward's
    flops = _overlay(page, "FLOPs")
    shown = [flops[k]["value"] for k in drawn if isinstance(flops.get(k, {}).get("value"), int)]
    valued = [v["value"] for v in flops.values() if isinstance(v.get("value"), int)]
    assert len(shown) < len(valued)
    _wait_for(page, "(t) => document.querySelector('.irtool-legend').innerText.trim().endsWith(t)",
              f"{len(shown):,} valued: min {min(shown):,}, max {max(shown):,}")
    # ... and a category's colour only where the graph shown has one: no gradient aggregation without the backward
    _overlay(page, "comm category")
    _wait_for(page, "() => { const t = document.querySelector('.irtool-legend').innerText; "
                    "return t.includes('redistribution') && !t.includes('gradient-aggregation'); }")
    phases.nth(1).check()
    _wait_for(page, f"() => {{ const g = {GRAPH}; return g && g.id === 'TrainOneStepCell'; }}")


@BROWSER
def test_the_panel_in_model_explorer(semi_page: object) -> None:
    page = semi_page
    # the AllGather at line 104, found by its `file` attribute (Model Explorer's search), and selected
    box = page.locator("search-bar input")
    box.fill("19_validate_0078[.]ir[.]xz:104")
    box.press("Enter")
    found = page.locator(".search-results-container mat-tree-node:not(:has(.expandable-tree-node))")
    found.first.wait_for()
    assert found.all_inner_texts()[0].split()[0] == "AllGather"
    _clear_search(page)
    _go(page, "TrainOneStepCell", "%5")
    # the page writes each link's operator before its id (once the panel is drawn)
    _wait_for(page, """() => [...document.querySelectorAll('info-panel .node-id-attribute')].some(
      e => e.innerText.startsWith('Split'))""")
    panel = _panel(page)
    # what test_the_panel_says_what_summarize_says pins in the JSON, as the panel shows it
    assert panel.get("producer") == "MatMul qkv (line 86)", panel
    assert panel.get("from -> to") == "split (2,4) -> strategy (8,1)", panel
    # links (Model Explorer's `node_ids` values): the id, and its locate icon
    # each link says its node's operator before its id (line 146 `%15 = PrimFunc_Split(...)`)
    assert panel["consumers (1)"].split()[:2] == panel["comm serves"].split()[:2] == ["Split", "%15"], panel
    assert panel["comm group"] == "ranks 0-3" and panel["phase"] == "forward", panel
    row = page.locator("info-panel tr", has=page.locator("td", has_text="consumers (1)")).first
    assert row.get_by_text("my_location").count() == 1  # drawn as a link with its locate icon
    _shot(page, "panel")


@BROWSER
def test_opening_on_a_node(gpt_page: object) -> None:
    # what `irtool view GPT --part-size 300 --node FILE:3761` announces (the module's page of GPT opens so): the
    # page opens on that node's part, the node selected: line 3761 `%259 = PrimFunc_Cast(...)`, scope
    # `Gradients/Default/network-PipelineCell/.../1-DecoderLayer/Grad_Cast/Cast-op0`: layer 1's backward, more than
    # 300 nodes, cut by scope below it
    layer = "TrainGradAccuStepCell: backward/layer 1/Default/network-PipelineCell"
    assert _selected(gpt_page, layer) == "%259"


@BROWSER
def test_a_large_graph_opens_on_its_overview_with_counts_and_a_part_behind_it(gpt_page: object) -> None:
    # 1500 operators in parts of at most 300 nodes: test_a_large_graph_comes_as_an_overview_and_parts
    overview, *parts = _model(GPT, 300).graphs
    page = gpt_page
    _go(page, overview["id"])  # where the page opened (another test may have left it elsewhere)
    # the overview first, no choosing in the graph selector: a box per part
    boxes = page.evaluate(f"{GRAPH}.nodes.filter(n => n.nodeType === 0).map(n => n.label)")
    assert len(boxes) == len(parts) and "layer 1" in boxes, boxes
    # the page got the parts as stubs, and the graph of each part it opened when it opened it: the page opened on a
    # node of layer 1's backward (test_opening_on_a_node); layer 0's forward was not opened yet
    loaded = page.evaluate("""() => Object.fromEntries(window.me_test.renderers[0].appService.curGraphCollections()
      .flatMap(c => c.graphs).map(g => [g.id, g.nodes.length]))""")
    assert loaded["TrainGradAccuStepCell: forward/layer 0"] == 0
    assert loaded["TrainGradAccuStepCell: backward/layer 1/Default/network-PipelineCell"] == next(
        len(g["nodes"]) for g in parts if g["id"] == "TrainGradAccuStepCell: backward/layer 1/Default/network-PipelineCell")
    # Model Explorer draws group attributes on boxes when "Layer node attributes" is on: irtool seeds it
    shown = page.evaluate("window.__me.showOnNode")
    assert shown["Layer node attributes"]["selected"] is True, shown
    assert shown["Op node attributes"]["selected"] is True, shown  # the same counts on the part boxes
    _shot(page, "counts")
    if SHOTS:  # README's picture of the parts drawn with their counts
        _expand_all(page)
        _shot(page, "overview")


@BROWSER
def test_find_any_node_from_the_overview_and_open_it(gpt_page: object) -> None:
    # line 2446: `%154 = Send(...)`, scope `Default/Send-op0`: in the part of layer 1's forward
    part = "TrainGradAccuStepCell: forward/layer 1"
    page = gpt_page
    _go(page, "TrainGradAccuStepCell: overview")
    # two actions: type `%154` in the overview's search box (Model Explorer finds no part box), choose the result
    page.locator("search-bar input").fill("%154")
    row = page.locator(".irtool-find-row").first
    row.wait_for()
    assert row.inner_text().split("\n") == ["Send %154 19_validate_0078.ir.xz:2446", part]
    _shot(page, "find")
    # the part not opened yet: while its graph is fetched (held here) the page says so, beside Model Explorer's own
    # "Processing graph", and while Model Explorer lays it out; then nothing
    held: list = []
    page.route("**/irtool/part/**", lambda r: held.append(r))
    try:
        _click(page, row)
        waiting = page.locator(".irtool-waiting")
        waiting.wait_for()
        assert re.fullmatch(rf'irtool: fetching the graph of part "{part}" \(\d+ nodes\) from the server, \d+ s',
                            waiting.inner_text()), waiting.inner_text()
    finally:
        page.unroute("**/irtool/part/**")
        for r in held:
            r.continue_()
    assert _selected(page, part, node="%154") == "%154"
    waiting.wait_for(state="detached")
    # its attributes drawn after its id, once every overlay is loaded (the builder makes the 68 MB dump's last: over
    # a minute when the machine is loaded)
    _wait_for(page, "() => [...document.querySelectorAll('info-panel td')].some(td => td.innerText.trim() === 'file')",
              timeout=150_000)
    assert _panel(page)["file"] == "19_validate_0078.ir.xz:2446"
    # the part: the Send at its top (its scope `Default`, what the layer's nodes share, taken off), the nodes it
    # reads from other parts in a group of their own
    top = page.evaluate(f"{GRAPH}.nodes.filter(n => n.nodeType === 1 && !n.nsParentId).map(n => n.label)")
    assert INPUTS in top, top
    assert page.evaluate(f"{GRAPH}.nodesById['%154'].namespace") == ""
    # a node the part reads from another part is a link: `%82`, layer 0's last Add (line 1325, `{instance name:
    # add2}`) that layer 1 reads, opens where it is, selected
    _go(page, part, "%82")
    where = "TrainGradAccuStepCell: " + _panel(page)["in part"].removesuffix("my_location").strip()
    assert where == "TrainGradAccuStepCell: forward/layer 0"
    _click(page, _link(page, "in part", "%82", where))
    assert _selected(page, where, node="%82") == "%82"
    assert "in part" not in _panel(page)
    # a search in a part lists the operators of the other graphs too (Model Explorer lists its own graph's):
    # line 10293 `%1000 = PrimFunc_SumExt(...)`, in `Gradients/...`
    page.locator("search-bar input").fill("%1000$")
    page.locator(".irtool-find-row").first.wait_for()
    assert page.locator(".irtool-find-title").inner_text() == "1 in other graphs"
    assert page.locator(".irtool-find-row").inner_text().startswith("SumExt %1000 19_validate_0078.ir.xz:10293")
    _clear_search(page)
    # a node deep in a group of a part not opened yet (line 4423 `%307(CNode_3670) = PrimFunc_MatMul(...)`, scope
    # `.../w2-Linear/Grad_MatMul` under recompute): the part fetched, its group opened, the node selected
    page.locator("search-bar input").fill("%307$")
    row = page.locator(".irtool-find-row").first
    row.wait_for()
    _click(page, row)
    assert _selected(page, "TrainGradAccuStepCell: backward/layer 0/recompute_Default", node="%307") == "%307"
    # a part whose graph does not come (the request failing here): the page says why, and the pane draws the part
    # empty instead of turning Model Explorer's spinner for ever
    empty = "TrainGradAccuStepCell: optimizer (own operators)"
    page.route("**/irtool/part/**", lambda r: r.abort())
    try:
        page.evaluate("(g) => window.irtool.openNode(0, g, null)", empty)
        failed = page.locator(".irtool-waiting.irtool-waiting-failed")
        failed.wait_for()
        assert failed.inner_text().startswith(f'irtool: the graph of part "{empty}" (') and "could not be fetched" in \
            failed.inner_text(), failed.inner_text()
        _wait_for(page, """(g) => { const r = window.me_test.renderers[0];
          return r.curModelGraph.id === g && !r.appService.processing(); }""", empty)
    finally:
        page.unroute("**/irtool/part/**")


@BROWSER
def test_the_title_bar_on_one_line(gpt_page: object) -> None:
    # on a 1280-pixel screen the title bar stays one line, its icons in view (the last test of this page: Model
    # Explorer lays the graph out again after a resize, which may drop a graph asked for meanwhile)
    page = gpt_page
    page.set_viewport_size({**SIZE, "width": 1280})  # type: ignore[attr-defined]
    bar = page.evaluate("""() => { const t = document.querySelector('title-bar');
      const leaves = [...t.querySelectorAll('mat-icon, .option-label, .collection-label')].filter(e => e.offsetParent);
      return {height: t.getBoundingClientRect().height,
              tops: leaves.map(e => Math.round(e.getBoundingClientRect().top + e.getBoundingClientRect().height / 2)),
              right: Math.max(...leaves.map(e => e.getBoundingClientRect().right))}; }""")
    page.set_viewport_size(SIZE)  # type: ignore[attr-defined]
    assert bar["height"] <= 48 and max(bar["tops"]) - min(bar["tops"]) <= 4 and bar["right"] <= 1280, bar


@BROWSER
def test_the_pipeline_graph_of_a_folder(pipe_page: object) -> None:
    # pipeline_4stage_8p (manifest: stage s = ranks 2s, 2s+1; 8 micro batches, 1F1B): ranks 0, 2, 4, 6 drawn
    page = pipe_page
    # the folder opens on the pipeline graph, no choosing in the graph selector, every column expanded and its
    # first box selected: the lines from each Send to its Receive and the box's order edges drawn (the graph's
    # two edge overlays)
    first = _model(PIPE4).graphs[0]["nodes"][0]["id"]
    assert _selected(page, "pipeline") == first == "rank0/TrainStep/%43"
    _wait_for(page, "window.me_test.renderers[0].webglRendererEdgeOverlaysService.curOverlays.length === 2")
    # `grep -cE '= (Send|Receive)\\('` -> 16 on ranks 0 and 6, 32 on ranks 2 and 4: 96 boxes, 48 pairs
    page.locator("info-panel .node-id-attribute").first.wait_for()
    assert _drawn(page)["ops"] == 96
    # stages as columns, left to right in stage order
    columns = _wait_for(page, """() => { const g = window.me_test.renderers[0].curModelGraph;
      const x = ['stage 0 rank 0', 'stage 1 rank 2', 'stage 2 rank 4', 'stage 3 rank 6'].map(
        ns => { const n = g.nodesById[ns + '___group___']; return n.globalX ?? n.x; });
      return x.every(v => typeof v === 'number') && x; }""").json_value()
    assert columns == sorted(columns) and len(set(columns)) == 4, columns
    # the graph selector: the pipeline graph, the stage graphs its boxes open under it in stage order (Model
    # Explorer lists them by node count: 972, 956, 780, 773 nodes for stages 0, 3, 2, 1), the execution order graph
    # no overlay has values here: the legend says the boxes' own colours
    key = _wait_for(page, """() => { const l = document.querySelector('.pane-container .irtool-legend');
      return l && l.innerText.startsWith('Send/Receive') && [...l.querySelectorAll('.irtool-legend-row')].map(
        r => r.innerText.trim()); }""").json_value()
    assert key == ["Send, forward", "Receive, forward", "Send, backward", "Receive, backward"], key
    _click(page, page.locator("graph-selector .graph-selector-label"))
    page.locator(".graph-selector-panel .graph-label").first.wait_for()
    options = page.locator(".graph-selector-panel .graph-label").all_inner_texts()
    _click(page, page.locator(".cdk-overlay-backdrop"))  # closes the selector
    page.locator(".cdk-overlay-backdrop").wait_for(state="detached")
    stages = [f"stage {s} rank {2 * s}: TrainStep" for s in range(4)]
    assert options == ["pipeline", *stages, "execution order", *stages], options
    _shot(page, "pipeline")
    # a box's panel links name nodes of this graph (every link of every panel of the folder's graphs:
    # test_every_panel_link_names_a_node_of_its_graph): its pair, chosen (Alt+click), is selected (a link to a node
    # the graph does not hold left the page "Processing")
    # test_every_panel_link_names_a_node_of_its_graph): its pair, named by its label, selected by a plain click
    # (Model Explorer only pans to a link's node unless Alt is held)
    (pair,) = page.locator("info-panel .node-id-attribute").all_inner_texts()
    assert pair.split("\n")[:2] == ["r2 #1 Receive m0 tag 0 <- r0 F", "rank2/TrainStep/%0"], pair
    _click(page, page.locator("info-panel .node-id-attribute").first)
    assert _selected(page, "pipeline", node="rank2/TrainStep/%0") == "rank2/TrainStep/%0"
    # the columns aligned at the top (stages 0 and 3 hold half the boxes of stages 1 and 2)
    tops = page.evaluate(f"""() => ['stage 0 rank 0', 'stage 1 rank 2', 'stage 2 rank 4', 'stage 3 rank 6'].map(
      ns => {GRAPH}.nodesById[ns + '___group___'].y)""")
    assert len(set(tops)) == 1, tops
    # nothing selected (a click on empty space): every pair's line still drawn
    page.evaluate("window.me_test.renderers[0].handleSelectNode('')")
    _wait_for(page, f"""() => {{ const r = window.me_test.renderers[0]; const s = r.webglRendererEdgeOverlaysService;
      return !r.selectedNodeId && s.curOverlays.map(o => o.name).join() === {json.dumps(PAIRS)} &&
        s.overlaysEdgesList.length === 1; }}""")
    # each column's box says what its stage costs, drawn on it ("Layer node attributes"): the stage's FLOPs the sum
    # of its stage graph's FLOPs overlay
    groups = page.evaluate(f"{GRAPH}.groupNodeAttributes")
    flops = _model(PIPE4).node_data_of("FLOPs")
    for s in range(4):
        mine = groups[f"stage {s} rank {2 * s}"]
        total = sum(v["value"] for v in flops[f"stage {s} rank {2 * s}: TrainStep"]["results"].values()
                    if v["value"] is not None)
        assert mine["stage FLOPs"] == f"{total:,}" and mine["stage load"].endswith("heaviest stage"), mine
    assert re.search(page.evaluate("window.__me.showOnNode")["Layer node attributes"]["filterRegex"], "stage FLOPs")
    # rank 6's first box (line 91 of rank 6: `%0 = Receive(...)`) serves the LayerNorm `%3` (line 280, `LayerNorm(%0,
    # ...)`): a link opening the stage graph on it, as its `stage graph` row opens its own node there (the page
    # opening a node of another graph from a link: test_find_any_node_from_the_overview_and_open_it)
    _go(page, "pipeline", "rank6/TrainStep/%0")
    _link(page, "comm serves", "%3", "stage 3 rank 6: TrainStep").wait_for()
    _link(page, "stage graph", "%0", "stage 3 rank 6: TrainStep").wait_for()


@BROWSER
def test_the_execution_order_view(pipe_page: object) -> None:
    page = pipe_page
    _go(page, "execution order")
    # a row per stage, one under another in stage order; each row's units left to right in execution order, each
    # where it runs in the step (test_the_execution_order_graph: its `time` row)
    place = _wait_for(page, """() => { const g = window.me_test.renderers[0].curModelGraph;
      const at = (id) => { const n = g.nodesById[id]; return n && [n.x, n.y]; };  // in its group (a row), or on top
      const rows = ['stage 0 rank 0', 'stage 1 rank 2', 'stage 2 rank 4', 'stage 3 rank 6'].map(
        ns => at(ns + '___group___'));
      const row1 = ['rank2/F0', 'rank2/F1', 'rank2/B0'].map(at);
      const expanded = Object.values(g.nodesById).every(n => n.nodeType !== 1 || n.expanded);
      return expanded && new Set(row1.map(p => p && p[0])).size === 3 && {rows, row1}; }""").json_value()
    ys = [p[1] for p in place["rows"]]
    xs = [p[0] for p in place["row1"]]
    assert ys == sorted(ys) and len(set(ys)) == 4 and xs == sorted(xs) and len(set(xs)) == 3, place
    # rows aligned in time: rank 2's F0 starts once rank 0's F0 (whose output it receives) ended
    box = page.evaluate(f"""() => Object.fromEntries(['rank0/F0', 'rank2/F0'].map(id => {{
      const n = {GRAPH}.nodesById[id]; return [id, [n.globalX + n.x, n.width]]; }}))""")
    assert box["rank2/F0"][0] >= sum(box["rank0/F0"]) - 1, box
    # the namespace (layer) highlight: `layer-4:` lights up the 16 units whose operators read layer 4, all of stage 2
    # (rank 4 holds layers 4 and 5)
    box = page.locator("search-bar input")
    box.fill("layer-4:")
    box.press("Enter")
    _wait_for(page, """() => { const t = document.querySelector('.search-results-container .title-label');
      return t && t.innerText.trim().startsWith('16 '); }""")
    found = page.locator(".search-results-container mat-tree-node:not(:has(.expandable-tree-node))").all_inner_texts()
    assert len(found) == 16 and all(f.split()[0][0] in "FB" for f in found), found
    # rows aligned at the left (Model Explorer centres them), opened in the units' own colours (no overlay has
    # values for this graph but FLOPs, which is not the one shown)
    lefts = page.evaluate(f"""() => ['stage 0 rank 0', 'stage 1 rank 2', 'stage 2 rank 4', 'stage 3 rank 6'].map(
      ns => {GRAPH}.nodesById[ns + '___group___'].x)""")
    assert len(set(lefts)) == 1, lefts
    assert page.evaluate("window.me_test.renderers[0].webglRendererNdpService.curNodeDataProviderRun()") is None
    # ... their legend those colours (no recompute here: pipeline_4stage_8p recomputes nothing)
    own = _wait_for(page, """() => { const l = document.querySelector('.pane-container .irtool-legend');
      return l && l.innerText.startsWith('units of work') && [...l.querySelectorAll('.irtool-legend-row')].map(
        r => [r.innerText.trim(), getComputedStyle(r.querySelector('.irtool-swatch')).backgroundColor]); }""").json_value()
    assert own == [["forward", _rgb(UNIT_COLORS["F"])], ["backward", _rgb(UNIT_COLORS["B"])]], own
    # the units' FLOPs: one scale for every stage, each stage's load (test_cost_overlays), its legend saying so
    results = _overlay(page, "FLOPs")
    assert results["rank0/B0"]["value"] > results["rank0/F0"]["value"] > 0
    _wait_for(page, "() => { const l = document.querySelector('.irtool-legend'); return l && "
                    "l.innerText.includes(\"each unit of work: the sum of its operators' FLOPs\"); }")
    _shot(page, "execution")
    # readable at fit on a 1600 x 1000 window: the stage's 16 units on lines of one stretch of time each
    fit = _at_fit(page)
    assert fit["font"] >= 9 and fit["lines"] == 2, fit
    # back on the pipeline graph with nothing selected (as the graph selector opens it): its pair lines drawn
    _go(page, "pipeline")
    _wait_for(page, """() => { const r = window.me_test.renderers[0]; const s = r.webglRendererEdgeOverlaysService;
      return r.curModelGraph.id === 'pipeline' && !r.selectedNodeId && s.overlaysEdgesList.length === 1; }""")
    # the overlay chosen stays whatever opens the next graph: a unit's link into its stage graph
    _go(page, "stage 0 rank 0: TrainStep", "%43")
    _wait_for(page, """() => { const run = window.me_test.renderers[0].webglRendererNdpService.curNodeDataProviderRun();
      return run && run.runName === 'FLOPs'; }""")


@BROWSER
def test_a_folder_links_its_timeline_and_memory(pipe_page: object) -> None:
    # pipeline_4stage_8p (manifest: stages 0-3 on ranks 0, 2, 4, 6; 8 micro batches, 1F1B): the page links the
    # pictures `irtool render DIR --timeline` and `--memory` draw (test_timing, test_render), each in a new tab
    page = pipe_page
    links = page.locator(".irtool-pictures a")
    assert links.all_inner_texts() == ["timeline", "memory"]
    assert {links.nth(k).get_attribute("target") for k in range(2)} == {"_blank"}
    fetched = page.evaluate("""async () => Promise.all([...document.querySelectorAll('.irtool-pictures a')].map(
      async (a) => { const r = await fetch(a.href); return [r.status, r.headers.get('content-type'), await r.text()]; }))""")
    assert [(status, kind.split(";")[0]) for status, kind, _ in fetched] == [(200, "image/svg+xml")] * 2, fetched
    (_, _, timeline), (_, _, memory) = fetched
    svg, ns = ET.fromstring(timeline), {"s": "http://www.w3.org/2000/svg"}
    # a lane per stage, a box per unit (forward and backward of 8 micro batches), an arrow per Send (`grep -cE
    # ' = Send\('`: 8 on ranks 0 and 6, 16 on ranks 2 and 4)
    assert [g.get("data-stage") for g in svg.findall(".//s:g[@class='lane']", ns)] == ["0", "1", "2", "3"]
    assert len(svg.findall(".//s:g[@class='unit']", ns)) == 4 * 2 * 8
    assert len(svg.findall(".//s:line[@class='arrow']", ns)) == 8 + 16 + 16 + 8
    stages = ET.fromstring(memory).findall(".//s:g[@class='stage']", ns)
    assert [(g.get("data-stage"), g.get("data-rank")) for g in stages] == [("0", "0"), ("1", "2"), ("2", "4"), ("3", "6")]
    # a plain click shows the picture on a sheet below the graphs (linked both ways), not in a tab
    _click(page, links.nth(0))
    sheet = page.locator(".irtool-sheet")
    sheet.locator("g.unit").first.wait_for()
    assert sheet.locator("g.unit").count() == 4 * 2 * 8
    box = page.evaluate("""() => [document.querySelector('app-root').getBoundingClientRect().bottom,
                                  document.querySelector('.irtool-sheet').getBoundingClientRect().top]""")
    assert box[0] <= box[1] + 1, box  # the graphs above it, not under it
    # stage 1's B2 opens its first node in the stage graph: rank_2 line 2460 `%162 = PrimFunc_MatMul(...)`, `micro:
    # I64(2)`, the first node printed of micro batch 2's backward; the node says its unit and its time, as the
    # timeline's own tooltip of the unit says it
    _click(page, sheet.locator('g.unit[data-stage="1"][data-unit="B2"] rect.unit-box'))
    assert _selected(page, "stage 1 rank 2: TrainStep", node="%162") == "%162"
    # ... and the unit's other nodes marked as search results are (a folded group holding one marked): backward work
    marked = _wait_for(page, f"""() => {{ const r = window.me_test.renderers[0];
      const s = r.appService.panes()[0].searchResults; const ids = s && Object.keys(s.results);
      return ids && ids.length > 1 && ids.map(id => [id, {GRAPH}.nodesById[id].attrs.phase]); }}""").json_value()
    assert "%162" in dict(marked) and {phase for _, phase in marked} == {"backward"}, marked
    tip = next(g.find("s:title", ns).text for g in svg.iter(f"{{{ns['s']}}}g")
               if g.get("class") == "unit" and (g.get("data-stage"), g.get("data-unit")) == ("1", "B2"))
    row = page.locator("tr.irtool-unit td.value")
    row.wait_for()
    assert row.inner_text() == tip.split(" (")[0].replace(": ", ", ", 1) + " of the step", (row.inner_text(), tip)
    assert _panel(page)["file"] == "rank_2/19_validate_0078.ir.xz:2460"
    # the row opens the timeline on that unit, marked (the row scrolled to the middle of the panel: at its top the
    # panel's section header covers it)
    row.evaluate("e => e.scrollIntoView({block: 'center'})")
    _click(page, row)
    _wait_for(page, "() => [...document.querySelectorAll('g.unit.irtool-current')].map(g => g.dataset.stage + ' ' + "
              "g.dataset.unit).join() === '1 B2'")
    # the memory's peak of stage 2 opens the node it names (`peak ... at OP, line L`) in stage 2's graph
    _click(page, sheet.locator(".irtool-sheet-head a", has_text="memory"))
    label = sheet.locator('g.stage[data-stage="2"] text.peak-label')
    line = re.search(r"line (\d+)", label.text_content()).group(1)
    _click(page, label)
    _selected(page, "stage 2 rank 4: TrainStep")
    _wait_for(page, "(f) => [...document.querySelectorAll('info-panel td')].some(td => td.innerText.trim() === f)",
              f"rank_4/19_validate_0078.ir.xz:{line}")
    _shot(page, "timeline")
    _click(page, sheet.locator(".irtool-sheet-close"))


# Each unit box of the graph shown, at fit (Model Explorer's fit button) on a window of README's pictures, 1600 x 1000:
# the size its label is drawn at (Model Explorer's op label font, `Op node label font size`, in scene units, times
# the screen pixels a scene unit takes), its rectangle on the screen, and the graph area's size.
AT_FIT = """() => { const r = window.me_test.renderers[0]; const t = r.webglRendererThreejsService;
  const at = (x, z) => t.convertScenePosToScreen(x, z);
  const px = Math.abs(at(100, 0).x - at(0, 0).x) / 100;
  const el = r.container.nativeElement;
  const boxes = r.curModelGraph.nodes.filter(n => n.nodeType === 0).map(n => {
    const x = n.globalX + n.x, y = n.globalY + n.y, a = at(x, y), b = at(x + n.width, y + n.height);
    return [n.id, Math.min(a.x, b.x), Math.min(a.y, b.y), Math.max(a.x, b.x), Math.max(a.y, b.y)]; });
  const rows = {};  // a row's lines: the tops of its boxes
  r.curModelGraph.nodes.filter(n => n.nodeType === 0).forEach(n => (rows[n.nsParentId] ||= new Set()).add(n.y));
  return {font: (r.appService.config().opNodeLabelFontSize || 11) * px, area: [el.clientWidth, el.clientHeight],
          lines: Math.max(...Object.values(rows).map(s => s.size)), boxes}; }"""


def _at_fit(page: object) -> dict[str, Any]:
    """AT_FIT of the graph shown, the page's window made 1600 x 1000 for it (and set back), every box on the screen
    and none overlapping another."""
    page.set_viewport_size({"width": 1600, "height": 1000})  # type: ignore[attr-defined]
    try:
        # the renderer drawing at the new size (it follows its container a frame later), then fitted
        _wait_for(page, """() => { const r = window.me_test.renderers[0], t = r.webglRendererThreejsService;
          const w = r.container.nativeElement.clientWidth;
          return w > 1000 && t.renderer.domElement.width === Math.floor(w * t.renderer.getPixelRatio()); }""")
        page.evaluate("""() => { window.__fit = null;  // type: ignore[attr-defined]
          window.me_test.renderers[0].webglRendererThreejsService.zoomFitGraph(0.9, 0); }""")
        # the fit drawn: its boxes where they were 100 ms before (a loaded machine draws the frames late)
        fit = _wait_for(page, f"""() => {{ const now = JSON.stringify(({AT_FIT})());
          const same = window.__fit === now; window.__fit = now; return same && JSON.parse(now); }}""").json_value()  # type: ignore[attr-defined]
    finally:
        page.set_viewport_size(SIZE)  # type: ignore[attr-defined]
    width, height = fit["area"]
    boxes = fit.pop("boxes")
    assert all(0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height for _, x0, y0, x1, y1 in boxes), fit
    crossing = [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1 :]
                if a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5 and a[2] < b[4] - 0.5 and b[2] < a[4] - 0.5]
    assert not crossing, crossing
    return fit


@BROWSER
def test_an_interleaved_execution_order_reads_at_fit(interleaved_page: object) -> None:
    # pipeline_interleaved_4stage_8p: 4 stages of 2 chunks and 8 micro batches, 32 units a stage (`F3.c1`): placed in
    # time, a row as wide as before would draw its labels at 3.7 px at fit; wrapped onto 3 lines of one stretch of
    # time each, every unit's label is drawn at 9 px or more, none over another, the whole step on the screen
    page = interleaved_page
    _go(page, "execution order")
    _wait_for(page, f"() => {GRAPH}.nodes.filter(n => n.nodeType === 0).length === 128")
    fit = _at_fit(page)
    assert fit["font"] >= 9 and fit["lines"] == 3, fit


@BROWSER
def test_the_diff_view(diff_page: object) -> None:
    page = diff_page
    # both sides, each with the diff overlay shown (test_the_diff_view_marks_what_irtool_diff_reports)
    shown = _wait_for(page, """() => { const rs = window.me_test.renderers;
      const out = [0, 1].map(i => { const r = rs[i]; const run = r && r.curModelGraph && r.webglRendererNdpService
        .curNodeDataProviderRun(); return run ? [r.curModelGraph.id, run.runName] : null; });
      return out.every(x => x) && out; }""").json_value()
    assert shown == [["old: TrainOneStepCell", "diff"], ["new: TrainOneStepCell", "diff"]], shown
    # each pane's side panel narrowed (Model Explorer's own is 370 px however narrow the pane): the graph the wider
    widths = _wait_for(page, """() => { const w = [...document.querySelectorAll('.pane-container')].map(p =>
      ['graph-panel', 'info-panel'].map(t => Math.round(p.querySelector(t).getBoundingClientRect().width)));
      return w.every(([g, i]) => g > i) && w; }""").json_value()
    assert all(i < 370 for _, i in widths) and (not SHOTS or all(g > 370 for g, _ in widths)), widths
    # folded boxes count the changes below them (`diff changed`, drawn with the other counts)
    assert "diff" in page.evaluate("window.__me.showOnNode")["Layer node attributes"]["filterRegex"]
    # fc1 (new line 521, `%76`) in the changed colour, its old -> new strategy in its panel
    results = _wait_for(page, """() => { const r = window.me_test.renderers[1].webglRendererNdpService
      .curNodeDataProviderResults(); return r && r['%76'] && r; }""").json_value()
    assert results["%76"]["bgColor"] == DIFF_COLORS["changed"] and results["%131"]["value"] == "added"
    # the pane's legend says why each colour: fc1's strategy, three collectives' communication, nodes only here
    legend = _wait_for(page, """() => { const rows = [...document.querySelectorAll('.pane-container')[1]
      .querySelectorAll('.irtool-legend-row')].map(r => [r.innerText.trim(),
        getComputedStyle(r.querySelector('.irtool-swatch')).backgroundColor]); return rows.length === 3 && rows; }""")
    assert dict(legend.json_value()) == {w: _rgb(CAUSE_COLORS[c]) for w, c in (
        ("strategy changed", "strategy"), ("communication changed", "communication"), ("added", "added"))}
    _go(page, "new: TrainOneStepCell", "%76", pane=1)
    panel = _panel(page, pane=1)
    assert "changed (new side)" in panel["diff"].split(" | "), panel
    assert panel["diff in strategy"] == "(4,1)(1,2) -> (2,1)(1,4)", panel
    _shot(page, "diff")


@BROWSER
def test_two_configurations_in_model_explorer(logical_page: object) -> None:
    # `irtool view` of the Llama as dp2 x mp2 and as dp1 x mp4 (test_two_configurations_open_as_one_logical_graph):
    # one pane, the logical graph, the diff overlay shown, opened on a changed operator (the first of the graph)
    page = logical_page
    first = _logical().first_node()
    assert _selected(page, "logical", node=first) == first
    run = page.evaluate("window.me_test.renderers[0].webglRendererNdpService.curNodeDataProviderRun().runName")
    assert run == "diff" and page.evaluate("document.querySelectorAll('.pane-container').length") == 1
    assert _panel(page)["change"].startswith("changed")
    # the page's first line, above Model Explorer, the configuration change; then the causes' colours
    head = page.evaluate("""() => { const h = document.querySelector('.irtool-headline');
      return {top: h.getBoundingClientRect().top, app: document.querySelector('app-root').getBoundingClientRect().top,
              bottom: document.querySelector('app-root').getBoundingClientRect().bottom,
              lines: [...h.querySelectorAll('div')].map(e => e.innerText),
              keys: [...h.querySelectorAll('.irtool-swatch')].map(e => getComputedStyle(e).backgroundColor)}; }""")
    assert head["top"] == 0 and head["app"] > 0 and head["bottom"] <= SIZE["height"], head
    assert head["lines"][0] == "Configuration: dp 2 → 1; mp 2 → 4; optimizer sharding 2 → 1", head
    assert head["keys"][0] == "rgb(159, 168, 218)" == _rgb(CAUSE_COLORS["layout"]), head
    _shot(page, "logical")
    # wq's MatMul: both sides' strategies in its panel, in the layout's colour; its `diff ...` rows drawn on its box
    # (the setting the layout worker got draws them: the box is taller than an unchanged one)
    _go(page, "logical", f"{WQ}/MatMul")
    panel = _panel(page)
    assert panel["in strategy"] == panel["diff strategy"] == "(2,1)(2,1) -> (1,1)(4,1)", panel
    assert panel["old at"] == "rank 0 line 3730", panel
    results = page.evaluate("window.me_test.renderers[0].webglRendererNdpService.curNodeDataProviderResults()")
    assert results[f"{WQ}/MatMul"]["bgColor"] == CAUSE_COLORS["layout"]
    regex = page.evaluate("window.__me.showOnNode")["Op node attributes"]["filterRegex"]
    assert all(re.search(regex, f"{k}: {panel[k]}") for k in panel if k.startswith("diff ") and k != "diff"), regex
    same = f"{WQ}/Reshape"  # unchanged, beside it
    heights = page.evaluate("""(ids) => ids.map(i => window.me_test.renderers[0].curModelGraph.nodesById[i].height)""",
                            [f"{WQ}/MatMul", same])
    assert heights[0] > heights[1], heights
    # the text drawn on its box, as Model Explorer's renderer lays out a box's rows (`key:` and the value, cut at 60
    # characters): each change its panel names, whole
    drawn = page.evaluate("""(id) => { const r = window.me_test.renderers[0];
      return r.webglRendererAttrsTableService.generateAttrsTableDataForNode(r.curModelGraph.nodesById[id], 0, 11, 1, 14)
        .rows.map(x => [x.keyLabelData.label, x.valueLabelData.label]); }""", f"{WQ}/MatMul")
    changes = [[f"{k}:", v] for k, v in panel.items() if k.startswith("diff ") and k != "diff"]
    assert changes and all(c in drawn for c in changes), (changes, drawn)
