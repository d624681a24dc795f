"""`irtool view` and `irtool export --format model-explorer`: Model Explorer graphs of real dumps,
checked as JSON and in a real browser (Debian's Chromium driven by Playwright, WebGL through
SwiftShader). Every server is stopped at the end of its test."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import fixture

from irtool.cli import main
from irtool.diff import diff_rank
from irtool.errors import InputError
from irtool.view.graphs import INPUTS, MAX_CHILDREN, PART_SIZE
from irtool.view.main import MindIRAdapter
from irtool.view.models import compare_models, models_for

SEMI = fixture("semi_auto_8p/rank_0/19_validate_0078.ir.xz")
PIPE = str(Path(fixture("pipeline_2stage_8p/rank_0/19_validate_0078.ir.xz")).parents[1])
GPT = fixture("gpt_small_dp2mp2pp2/rank_0/19_validate_0078.ir.xz")
LAYOUT = fixture("layout_8p/rank_0/19_validate_0078.ir.xz")
EDITED = str(Path(__file__).resolve().parents[1] / "fixtures" / "edited" / "semi_auto_8p_rank_0_validate_fc1_strategy.ir")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As root Chromium needs --no-sandbox; WebGL (Model Explorer draws with it) runs on SwiftShader; no
# background traffic (this machine reaches no other host).
CHROMIUM_ARGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# What the layout worker hands the renderer: per graph its nodes (id, label, op or group, expanded,
# parent group, incoming edges), so a test can tell which nodes are drawn.
WORKER_HOOK = """
(() => {
  const Orig = window.Worker;
  window.__me = {events: 0, graph: null, showOnNode: null, answers: []};
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
      const g = d.modelGraph;
      if (g && g.nodes) {
        window.__me.graph = {id: g.id, nodes: g.nodes.map(n => [n.id, n.label, n.nodeType, n.expanded === true,
          n.nsParentId || '', (n.incomingEdges || []).length])};
      }
    });
    return w;
  };
  window.Worker.prototype = Orig.prototype;
})();
"""


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
    assert attrs["comm category"] == "redistribution" and attrs["comm group ranks"] == "0-3"
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
    (graph,) = models_for(GPT).graphs
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
    assert levels["Default"]["phase"] == "forward" and levels["Gradients"]["phase"] == "backward"
    assert levels["recompute_Default"]["phase"] == "recompute"


def test_a_large_graph_comes_as_an_overview_and_parts(tmp_path: Path) -> None:
    (whole,) = models_for(GPT).graphs  # 1500 operators: one graph at the default part size
    model = models_for(GPT, part_size=300)
    overview, *parts = model.graphs
    assert model.first_graph == overview["id"] == f"{whole['id']}: overview"
    # every node of the whole graph is in exactly one part, as it is there (its attribute list shared)
    mine = [n for g in parts for n in g["nodes"] if not n["namespace"].startswith(INPUTS)]
    own = {n["id"]: n for n in mine}
    assert len(mine) == len(own) == len(whole["nodes"])
    assert all(own[n["id"]]["attrs"] == n["attrs"] for n in whole["nodes"])
    # `xzcat ... | grep -c 'scope: (Gradients/Default/network-PipelineCell/network-GPT/layers-CellList/1-DecoderLayer/'`
    # -> 272 operators: the layer's backward is one part, its scope taken off the namespaces below it
    layer = "Gradients/Default/network-PipelineCell/network-GPT/layers-CellList/1-DecoderLayer"
    part = next(g for g in parts if g["id"] == f"{whole['id']}: {layer}")
    mine = [n for n in part["nodes"] if not n["namespace"].startswith(INPUTS)]
    assert len(mine) == 272 and all(_attrs(n)["scope"].startswith(layer + "/") for n in mine)
    assert {n["namespace"].split("/")[0] for n in mine} >= {"feed_forward-MLP", "attention-Attention"}
    assert part["groupNodeAttributes"][""]["scope"] == layer and part["groupNodeAttributes"][""]["operators"] == "272"
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
    assert box["label"] == "1-DecoderLayer" and box["namespace"] == layer.rpartition("/")[0]
    assert _attrs(box)["operators"] == "272" and _attrs(box)["nodes read from other parts"] == str(len(read))
    scope_id = {g["groupNodeAttributes"][""]["scope"]: g["id"] for g in parts}
    assert {e["sourceNodeId"] for e in box["incomingEdges"]} == {scope_id[where[i]] for i in read}
    # `export --part-size` writes the same graphs, the overview first, and the overlays of every part
    out = tmp_path / "gpt.json"
    res = CliRunner().invoke(main, ["export", GPT, "--part-size", "300", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert [g["id"] for g in json.loads(out.read_text())["graphs"]] == [overview["id"]] + [g["id"] for g in parts]
    assert set(json.loads((tmp_path / "gpt.comm_category.json").read_text())) == {g["id"] for g in parts}
    # node data: each part gets the whole graph's results for its nodes
    category = model.node_data["comm category"]
    whole_results = models_for(GPT).node_data["comm category"][whole["id"]]["results"]
    assert category[part["id"]]["results"] == {k: v for k, v in whole_results.items() if k in ids}
    assert sum(len(category[g["id"]]["results"]) for g in parts) >= len(whole_results)


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
    (graph,) = models_for(SEMI).graphs
    by_id = {n["id"]: n for n in graph["nodes"]}
    gather = _attrs(by_id["%5"])
    # line 104's AllGather is in the chain %4 Reshape .. %14 StridedSlice (instance names
    # `redistribution_op_1806...`), between the qkv MatMul (%3, line 86, strategy (2,1)(1,4)) and the
    # Split at line 146 (`%15 = PrimFunc_Split(%14, ...)`, gen_strategy ((8, 1)))
    assert gather["producer"] == "MatMul qkv (line 86)"
    assert gather["producer node"] == {"type": "node_ids", "nodeIds": ["%3"]}
    assert gather["consumers (1)"] == {"type": "node_ids", "nodeIds": ["%15"]}
    assert gather["from -> to"] == "split (2,4) -> strategy (8,1)"
    assert gather["chain nodes"]["nodeIds"] == [f"%{i}" for i in range(4, 15)]
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
    (lay,) = models_for(LAYOUT).graphs
    up = _attrs(next(n for n in lay["nodes"] if n["id"] == "%2"))
    # `%2 = MatMul(...)` of layout_8p rank 0: in_layout device_matrix (2, 2, 2), tensor_map ((2, 1), -1) and (-1, 0)
    assert up["in 0 layout"] == "dev (2,2,2) map ((2,1),-1)" and up["in 1 layout"] == "dev (2,2,2) map (-1,0)"


def test_pipeline_graph_pairs_every_send_with_its_receive() -> None:
    model = models_for(PIPE)
    ids = [g["id"] for g in model.graphs]
    # one rank per stage (manifest: ranks 0-3 stage 0, 4-7 stage 1) and the pipeline graph first
    assert ids[0] == "pipeline" and [i.split(":")[0] for i in ids[1:]] == ["stage 0 rank 0", "stage 1 rank 4"]
    nodes = _graph_nodes({"graphs": model.graphs}, "pipeline")
    # `grep -cE '= (Send|Receive)\\('`: 8 on rank 0 (4 Send, 4 Receive), 8 on rank 4
    assert len(nodes) == 16
    edges = [(e["sourceNodeId"], n["id"]) for n in nodes for e in n["incomingEdges"] if e["targetNodeInputId"] != "order"]
    # rank 0's 4 forward Sends reach rank 4's 4 Receives; rank 4's 4 backward Sends reach rank 0's Receives
    assert len(edges) == 8
    # validate fixes each stage's order (docs/cost.md §4): its 8 Send/Receive chained by 7 `order` edges
    order = [(e["sourceNodeId"], n["id"]) for n in nodes for e in n["incomingEdges"] if e["targetNodeInputId"] == "order"]
    assert len(order) == 14 and all(a.split("/")[0] == b.split("/")[0] for a, b in order)
    label = {n["id"]: n["label"] for n in nodes}
    assert all(re.match(r"r[04] #\d+ Send m", label[a]) and re.match(r"r[04] #\d+ Receive m", label[b])
               and a.split("/")[0] != b.split("/")[0] for a, b in edges)
    # each box says micro batch, tag and peer; the pair is linked both ways
    for a, b in edges:  # `rank0/graph/%N` -> `rank4/graph/%M`: same micro batch and tag on both boxes
        src, dst = a.split("/")[0][4:], b.split("/")[0][4:]
        assert label[a].endswith(f"-> r{dst}") and label[b].endswith(f"<- r{src}")
        assert label[a].split(" ")[3:6] == label[b].split(" ")[3:6]
    a, b = edges[0]
    send, receive = (_attrs(next(n for n in nodes if n["id"] == x)) for x in (a, b))
    assert send["pairs with"] == {"type": "node_ids", "nodeIds": [b]}
    assert receive["pairs with"] == {"type": "node_ids", "nodeIds": [a]}
    # rank 4's execution order as the dump prints it, forward Receive and backward Send interleaved (1F1B):
    # `xzcat rank_4/19_validate_0078.ir.xz | grep -oE '= (Send|Receive)\('` -> Receive Send x4
    rank4 = sorted((n for n in nodes if n["id"].startswith("rank4/")), key=lambda n: int(n["label"].split()[1][1:]))
    assert [n["label"].split()[2] for n in rank4] == ["Receive", "Send"] * 4
    # the folder opens on the pipeline graph (Model Explorer sorts by name: `pipeline` < `stage ...`)
    assert json.loads(model.graphs_json())["graphSorting"] == "name_asc"


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
    assert len(marks_old) == len(marks_new) == 1 and marks_new[0]["bgColor"] == "#ffe082"  # one `changed`
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


def test_compare_two_configurations_opens_rank_with_rank() -> None:
    # mindformers_llama_dp2mp2pp2 against the same Llama as dp1 x mp4 (folders: rank 0 of each, stage 0): wq's
    # MatMul prints `in_strategy: ((2, 1), (2, 1))` (old line 3730, `%32`) and `((1, 1), (4, 1))` (new line 3767,
    # `%31`), both in the forward graph the main graph calls per micro batch; the panel says so on both sides
    folders = [str(Path(fixture("mindformers_llama_dp2mp2pp2/rank_0/19_validate_0089.ir.xz")).parents[1]),
               str(Path(fixture("mindformers_llama_dp1mp4pp2/rank_0/19_validate_0089.ir.xz")).parents[1])]
    old, new = compare_models(*folders, diff_rank)
    for model, side, key in ((old, "old", "%32"), (new, "new", "%31")):
        (wq,) = [n for g in model.graphs for n in g["nodes"]
                 if n["id"] == key and n["namespace"].endswith("wq-Linear")]
        assert _attrs(wq)["diff"] == f"changed ({side} side)"
        assert _attrs(wq)["diff in strategy"] == "(2,1)(2,1) -> (1,1)(4,1)"


PIPE4 = str(Path(fixture("pipeline_4stage_8p/rank_0/19_validate_0078.ir.xz")).parents[1])
LAZY = fixture("gpt_small_dp2mp2pp2_lazyinline/rank_0/19_validate_0087.ir.xz")


def test_ordering_edges_are_an_overlay_not_edges() -> None:
    (graph,) = models_for(SEMI).graphs
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
    for g in models_for(SEMI, part_size=100).graphs:
        for d in g.get("tasksData", {}).get("edgeOverlaysDataListLeftPane", ()):
            ids = {n["id"] for n in g["nodes"]}
            assert d["graphName"] == g["id"] and all(
                e["sourceNodeId"] in ids and e["targetNodeId"] in ids for e in d["overlays"][0]["edges"])


def test_repeated_operators_stack_and_graphs_are_named_by_their_cell() -> None:
    (graph,) = models_for(SEMI).graphs
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
    ids = [g["id"] for g in models_for(LAZY).graphs]
    assert ids[0] == "TrainGradAccuStepCell" and len(set(ids)) == 8
    assert sorted(i.split()[0] + " " + i.split()[-1] for i in ids[1:]) == [
        "DecoderLayer #7336", "DecoderLayer #7388", "DecoderLayer #7389", "DecoderLayer #7520", "DecoderLayer #7558",
        "GPT #7590", "GPT #7592"]
    # `%1 = call @..._GPT_construct_7592(...)` in the entry graph, `cnode_attrs: {... is_bp: Bool(0)}`: forward
    assert "GPT forward #7592" in ids


def test_the_panel_reads_values_as_a_person_does() -> None:
    (graph,) = models_for(SEMI).graphs
    by_id = {n["id"]: n for n in graph["nodes"]}
    # line 86 `%3 = PrimFunc_MatMul(%1, %2, Bool(0), Bool(0))`: the constants as their type reads them
    qkv = _attrs(by_id["%3"])
    assert qkv["input 2"] == qkv["input 3"] == "false"
    # line 108, the Split after line 104's AllGather: `-> (<Tuple[Tensor[Float32]*4], TupleShape((1, 256, 48), ...x4)>)`
    split = next(n for n in graph["nodes"] if _attrs(n).get("file", "").endswith(":107"))
    assert split["outputsMetadata"][0]["attrs"] == [{"key": "type", "value": "tuple of 4: 4 × Float32 (1, 256, 48)"}]
    # overlays valued by name (`comm category redistribution`), a folded box counting each
    category = models_for(SEMI).node_data["comm category"][graph["id"]]
    assert category["results"]["%5"]["value"] == "redistribution" and category["showExpandedSummaryOnGroupNode"]
    # dynamic_shape_pp_4p rank 0: `grep -o '<Tensor\[[A-Za-z0-9]*\], ([^)]*-1[^)]*)>'` -> (-1, 64) x100,
    # (-1, 128) x38, (-1) x13 (and one (-1, 16), an input): a dimension of unknown size as `—`, said once when none is
    dyn = models_for(fixture("dynamic_shape_pp_4p/rank_0/19_validate_0087.ir.xz")).graphs
    shapes = {a["value"] for g in dyn for n in g["nodes"] for m in n["outputsMetadata"] for a in m["attrs"]
              if a["key"] == "shape"}
    # known
    assert {"(—, 64)", "(—, 128)", "1 dimension of unknown size"} <= shapes
    assert not any("-1" in x for x in shapes)


def test_find_a_node_by_id_or_file_and_line() -> None:
    semi = models_for(SEMI)
    # line 86: `%3 = PrimFunc_MatMul(...)`; `%3`, `FILE:86` and `:86` name it
    assert semi.find("%3") == semi.find("19_validate_0078.ir.xz:86") == semi.find(":86") == ("TrainOneStepCell", "%3")
    for spec, said in (("%99999", "no node %99999"), ("other.ir:86", "the files are 19_validate_0078.ir.xz"),
                       ("19_validate_0078.ir.xz:87", "the statement before it is %3 at line 86"),
                       ("x", "expected %N or FILE:LINE")):
        with pytest.raises(InputError, match=re.escape(said)):
            semi.find(spec)
    # a folder: the panel names files `rank_N/...`; line 398 of rank 2 is `%6 = PrimFunc_MatMul(...)`, and line
    # 87 holds a node on ranks 0, 2 and 4 (stages 0-2)
    four = models_for(PIPE4)
    assert four.find("rank_2/19_validate_0078.ir.xz:398") == ("stage 1 rank 2: TrainStep", "%6")
    with pytest.raises(InputError, match="names 3 nodes"):
        four.find("19_validate_0078.ir.xz:87")
    # the CLI says it in one line, before serving
    res = CliRunner().invoke(main, ["view", SEMI, "--node", "%99999", "--no-browser"])
    assert res.exit_code == 2 and "no node %99999" in res.output


def test_the_node_index_finds_every_node_where_it_is() -> None:
    model = models_for(GPT, part_size=300)
    index = model.index()
    graphs = model.graphs
    # every operator and parameter once, in the graph holding it (1500 operators, 139 parameters: the whole graph)
    (whole,) = models_for(GPT).graphs
    assert sorted(n[1] for n in index["nodes"]) == sorted(n["id"] for n in whole["nodes"])
    held = {g["id"]: {n["id"] for n in g["nodes"] if not n["namespace"].startswith(INPUTS)} for g in graphs}
    assert all(n[1] in held[index["graphs"][n[0]]] for n in index["nodes"])
    # line 2446 `%154 = Send(...)`: found by its file and line, in the part of `Default`'s own operators
    (send,) = [n for n in index["nodes"] if n[3] >= 0 and f"{index['files'][n[3]]}:{n[4]}" == "19_validate_0078.ir.xz:2446"]
    assert send[1:3] == ["%154", "Send"] and index["graphs"][send[0]] == "TrainGradAccuStepCell: Default (own operators)"
    # each node a part shows from another part links to that part's own node
    stubs = [(g["id"], n["id"]) for g in graphs for n in g["nodes"] if n["namespace"].startswith(INPUTS)]
    assert stubs and all(index["links"][g][n] == [next(h for h, ids in held.items() if n in ids), n] for g, n in stubs)


def test_every_panel_link_names_a_node_of_its_graph() -> None:
    # a link to a node the graph does not hold leaves Model Explorer "Processing" (issue 28: `comm serves %42`
    # of a pipeline box): every link of every panel of a folder's graphs, the pipeline graph's too
    for path in (PIPE4, str(Path(fixture("pipeline_folded_8p/rank_0/19_validate_0078.ir.xz")).parents[1]),
                 str(Path(GPT).parent)):
        graphs = models_for(path, part_size=300).graphs
        assert graphs[0]["id"] == "pipeline" or "rank" in graphs[0]["id"]
        for g in graphs:
            ids = {n["id"] for n in g["nodes"]}
            links = [(n["id"], a["key"], t) for n in g["nodes"] for a in n["attrs"] if isinstance(a["value"], dict)
                     for t in a["value"]["nodeIds"]]
            assert all(t in ids for _, _, t in links), (g["id"], [x for x in links if x[2] not in ids][:3])


def test_adapter_extension_converts_a_dump() -> None:
    graphs = MindIRAdapter().convert(SEMI, {})["graphs"]
    assert len(graphs) == 1 and len(graphs[0].nodes) == 290 + 25


def test_stage_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["export", PIPE, "--stage", "7", "-o", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "stages 0, 1" in res.output and not (tmp_path / "x.json").exists()


# --- in a real browser -----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(*paths: str) -> Iterator[str]:
    """`irtool view PATHS --no-browser` on a free port; yields the page URL; always stops the server."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "irtool.cli", "view", *paths, "--no-browser", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = None
        for line in proc.stderr:  # type: ignore[union-attr]
            m = re.search(r"Model Explorer at (\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "irtool view printed no URL"
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/check_health", timeout=2) as r:
                    if r.read() == b"model_explorer_ok":
                        break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, "the server did not start"
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def semi_url() -> Iterator[str]:
    """One `irtool view SEMI` server for the module's tests that read SEMI: each opens its own page (its own
    browser context), so what one test expands or searches does not reach the other; only the start-up
    (parse, Model Explorer's server) is shared."""
    with served(SEMI) as url:
        yield url


def _open(browser: object, url: str, width: int = 1600) -> object:
    ctx = browser.new_context(viewport={"width": width, "height": 1000})  # type: ignore[attr-defined]
    ctx.add_init_script(WORKER_HOOK)
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    local = url.split("/?")[0]
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
    page.goto(url)
    page.wait_for_function("window.__me.graph !== null")
    page.locator("info-panel table.info-attrs").first.wait_for()
    page.wait_for_timeout(1000)
    return page


def _info(page: object) -> dict[str, str]:
    """Key -> value rows of the side panel's graph info."""
    return page.evaluate("""() => {  // type: ignore[attr-defined]
      const out = {};
      for (const tr of document.querySelectorAll('info-panel table.metadata-table tr')) {
        const td = tr.querySelectorAll('td');
        if (td.length >= 2) out[td[0].innerText.trim()] = td[1].innerText.trim();
      }
      return out; }""")


def _drawn(page: object) -> dict:
    """Labels of the nodes drawn now (every enclosing scope expanded), and the edge count."""
    return page.evaluate("""() => {  // type: ignore[attr-defined]
      const g = window.__me.graph, byId = {};
      for (const n of g.nodes) byId[n[0]] = n;
      const shown = g.nodes.filter(n => { let p = n[4];
        while (p) { const q = byId[p]; if (!q || !q[3]) return false; p = q[4]; } return true; });
      return {id: g.id, ops: g.nodes.filter(n => n[2] === 0).length, shown: shown.map(n => n[0]),
              edges: g.nodes.reduce((s, n) => s + n[5], 0)}; }""")


def test_a_dump_in_model_explorer(browser: object, semi_url: str, tmp_path: Path) -> None:
    page = _open(browser, semi_url)
    page.screenshot(path=str(tmp_path / "01_loaded.png"))
    info = _info(page)
    # header: 290 cnodes, 25 parameters; Model Explorer counts both as op nodes
    assert info["nodes"] == "290" and info["op node count"] == str(290 + 25), info
    # a regex search for AllGather finds the dump's 14 AllGathers (`grep -c '= AllGather('`)
    box = page.locator("search-bar input")
    box.fill("^AllGather$")
    box.press("Enter")
    results = page.locator(".search-results-container")
    results.wait_for()
    for kind in ("Attrs", "Inputs", "Outputs"):  # match node labels only, not attribute values
        option = results.locator(".option-container", has_text=kind)
        if "selected" in (option.get_attribute("class") or ""):
            option.click()
    page.wait_for_timeout(500)
    assert results.locator(".title-label").inner_text().strip().startswith("14 "), \
        results.locator(".title-label").inner_text()
    page.screenshot(path=str(tmp_path / "02_search.png"))
    page.locator("search-bar .btn-clear-container").click()
    # expanding the scopes reveals the operators inside them
    before = _drawn(page)
    assert "%5" not in before["shown"]  # line 104's AllGather, inside body-ShardedAttentionMLP
    events = page.evaluate("window.__me.events")
    page.locator("div.expand-all").click()
    page.wait_for_function(f"window.__me.events > {events}")
    page.wait_for_timeout(1000)
    after = _drawn(page)
    assert "%5" in after["shown"] and len(after["shown"]) > len(before["shown"])
    # the node data overlays are loaded with the graph
    assert page.get_by_text("comm category").count() and page.get_by_text("comm bytes").count()
    page.screenshot(path=str(tmp_path / "03_expanded.png"))
    if os.environ.get("IRTOOL_SCREENSHOTS"):  # how README's picture is made
        shutil.copy(tmp_path / "03_expanded.png", Path(os.environ["IRTOOL_SCREENSHOTS"]) / "view_semi_auto.png")


def test_the_pipeline_graph_of_a_folder(browser: object, tmp_path: Path) -> None:
    with served(PIPE) as url:
        page = _open(browser, url)
        # the folder opens on the pipeline graph, no choosing in the graph selector; one layer: every edge drawn
        assert page.evaluate("window.__me.graph.id") == "pipeline"
        drawn = _drawn(page)
        labels = page.evaluate("window.__me.graph.nodes.filter(n => n[2] === 0).map(n => n[1])")
        # boxes say micro batch, tag and peer (rank 0 sends to rank 4 and back: manifest stages)
        assert all(re.fullmatch(r"r[04] #\d+ ((Send m\d+ tag \d+ -> r[04])|(Receive m\d+ tag \d+ <- r[04]))", x)
                   for x in labels), labels
        # 8 Send/Receive on rank 0 and 8 on rank 4 (grep), 8 pairs: an edge from each Send to its Receive, and
        # each stage's 8 chained in execution order by 7 edges (docs/cost.md §4)
        assert drawn["ops"] == 16 and drawn["edges"] == 8 + 2 * 7, drawn
        info = _info(page)
        assert info["Send/Receive"] == "16" and info["pairs"] == "8", info
        page.mouse.move(10, 990)  # no tooltip over the picture
        page.wait_for_timeout(1500)
        page.screenshot(path=str(tmp_path / "pipeline.png"))
        if os.environ.get("IRTOOL_SCREENSHOTS"):
            shutil.copy(tmp_path / "pipeline.png", Path(os.environ["IRTOOL_SCREENSHOTS"]) / "view_pipeline.png")


def _panel(page: object) -> dict[str, str]:
    """Key -> value rows of the side panel of the selected node."""
    return page.evaluate("""() => {  // type: ignore[attr-defined]
      const out = {};
      for (const row of document.querySelectorAll('info-panel .attrs-table-container tr, info-panel table tr')) {
        const td = row.querySelectorAll('td');
        if (td.length >= 2) out[td[0].innerText.trim()] = td[1].innerText.trim();
      }
      return out; }""")


def _search(page: object, text: str, alt: bool = False) -> None:
    """Type a regex in Model Explorer's search box and click its first node result."""
    box = page.locator("search-bar input")  # type: ignore[attr-defined]
    box.fill(text)
    box.press("Enter")
    result = page.locator(".search-results-container mat-tree-node:not(:has(.expandable-tree-node))").first
    result.click(modifiers=["Alt"] if alt else [])


def test_the_panel_in_model_explorer(browser: object, semi_url: str, tmp_path: Path) -> None:
    page = _open(browser, semi_url)
    events = page.evaluate("window.__me.events")
    # the AllGather at line 104, found by its `file` attribute and revealed (Alt+click: Model Explorer's locate)
    _search(page, "19_validate_0078[.]ir[.]xz:104", alt=True)
    page.wait_for_function(f"window.__me.answers.slice({events}).includes(7)")
    page.wait_for_timeout(1000)
    panel = _panel(page)
    # what test_the_panel_says_what_summarize_says pins in the JSON, as the panel shows it
    assert panel.get("producer") == "MatMul qkv (line 86)", panel
    assert panel.get("from -> to") == "split (2,4) -> strategy (8,1)", panel
    # links (Model Explorer's `node_ids` values): the id, and its locate icon
    assert panel["consumers (1)"].split()[0] == "%15" and panel["comm serves"].split()[0] == "%15", panel
    row = page.locator("info-panel tr", has=page.locator("td", has_text="consumers (1)")).first
    assert row.get_by_text("my_location").count() == 1  # drawn as a link with its locate icon
    page.screenshot(path=str(tmp_path / "panel.png"))
    if os.environ.get("IRTOOL_SCREENSHOTS"):
        shutil.copy(tmp_path / "panel.png", Path(os.environ["IRTOOL_SCREENSHOTS"]) / "view_panel.png")


def _opening(url: str, graph_id: str) -> str:
    """`url` opening on another graph of its model (the address's `uiState`, as `irtool view` names the first)."""
    from urllib.parse import quote, unquote

    base, _, query = url.partition("/?data=")
    data = json.loads(unquote(query))
    data["uiState"]["paneStates"][0]["selectedGraphId"] = graph_id
    return f"{base}/?data={quote(json.dumps(data))}"


@pytest.fixture(scope="module")
def gpt_url() -> Iterator[str]:
    """One `irtool view GPT --part-size 300` server for the module's tests of a graph in parts."""
    with served(GPT, "--part-size", "300") as url:
        yield url


def test_a_large_graph_opens_on_its_overview_with_counts_and_a_part_behind_it(browser: object, gpt_url: str,
                                                                              tmp_path: Path) -> None:
    # 1500 operators in parts of at most 300 nodes: test_a_large_graph_comes_as_an_overview_and_parts
    overview, *parts = models_for(GPT, part_size=300).graphs
    url = gpt_url
    if True:  # (one server for the module)
        page = _open(browser, url)
        # the overview first, no choosing in the graph selector: a box per part
        assert page.evaluate("window.__me.graph.id") == overview["id"]
        boxes = page.evaluate("window.__me.graph.nodes.filter(n => n[2] === 0).map(n => n[1])")
        assert len(boxes) == len(parts) and "1-DecoderLayer" in boxes, boxes
        # Model Explorer draws group attributes on boxes when "Layer node attributes" is on: irtool seeds it
        shown = page.evaluate("window.__me.showOnNode")
        assert shown["Layer node attributes"]["selected"] is True, shown
        assert shown["Op node attributes"]["selected"] is True, shown  # the same counts on the part boxes
        page.mouse.move(10, 990)
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path / "counts.png"))
        events = page.evaluate("window.__me.events")
        page.locator("div.expand-all").click()
        page.wait_for_function(f"window.__me.events > {events}")
        page.mouse.move(10, 990)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(tmp_path / "overview.png"))
        # the part of `Default`'s own operators, opened as a link to it opens it. The 487 operators directly in
        # `Default` (grep in test_a_flat_scope_gets_levels...) are in levels there: expanding everything
        # finishes and shows the Send %154 (line 2446) inside `micro 0`; the nodes the part reads from
        # other parts are in a group of their own
        page = _open(browser, _opening(url, next(g["id"] for g in parts if g["id"].endswith(": Default (own operators)"))))
        top = page.evaluate("window.__me.graph.nodes.filter(n => n[2] === 1 && !n[4]).map(n => n[1])")
        assert {"micro 0", INPUTS} <= set(top), top
        events = page.evaluate("window.__me.events")
        page.locator("div.expand-all").click()
        page.wait_for_function(f"window.__me.events > {events}")
        drawn = _drawn(page)
        assert "%154" in drawn["shown"], drawn["shown"][:50]
    if os.environ.get("IRTOOL_SCREENSHOTS"):
        for name in ("counts", "overview"):
            shutil.copy(tmp_path / f"{name}.png", Path(os.environ["IRTOOL_SCREENSHOTS"]) / f"view_{name}.png")


def _selected(page: object, graph: str) -> str:
    """The node the first pane shows selected, once it shows `graph` and its panel says the node."""
    page.wait_for_function("""(graph) => { const r = window.me_test.renderers[0];  // type: ignore[attr-defined]
      return r && r.curModelGraph && r.curModelGraph.id === graph && r.selectedNodeId &&
        [...document.querySelectorAll('info-panel td')].some(td => td.innerText.trim() === r.selectedNodeId); }""",
                           arg=graph, timeout=120_000)
    return page.evaluate("window.me_test.renderers[0].selectedNodeId")  # type: ignore[attr-defined]


def test_find_any_node_from_the_overview_and_open_it(browser: object, gpt_url: str, tmp_path: Path) -> None:
    # line 2446: `%154 = Send(...)`, scope `Default/Send-op0`: in the part of `Default`'s own operators
    part = "TrainGradAccuStepCell: Default (own operators)"
    page = _open(browser, gpt_url)
    assert page.evaluate("window.__me.graph.id") == "TrainGradAccuStepCell: overview"
    # two actions: type `%154` in the overview's search box (Model Explorer finds no part box), choose the result
    page.locator("search-bar input").fill("%154")
    row = page.locator(".irtool-find-row").first
    row.wait_for()
    assert row.inner_text().split("\n") == ["Send %154 19_validate_0078.ir.xz:2446", part]
    page.screenshot(path=str(tmp_path / "find.png"))
    row.click()
    assert _selected(page, part) == "%154"
    assert _panel(page)["file"] == "19_validate_0078.ir.xz:2446"
    # a node the part reads from another part is a link: `%153`, the Depend the Send reads (line 2443,
    # scope `Default/network-PipelineCell/...`), opens where it is, selected
    page.evaluate(f"window.irtool.openNode(0, {json.dumps(part)}, '%153')")
    page.wait_for_function("window.me_test.renderers[0].selectedNodeId === '%153'")
    assert _selected(page, part) == "%153"
    link = page.locator("info-panel td.value.irtool-link")
    link.wait_for()
    where = _panel(page)["in part"]
    link.click()
    assert _selected(page, f"TrainGradAccuStepCell: {where.removesuffix('my_location').strip()}") == "%153"
    assert "in part" not in _panel(page)
    # a search in a part lists the operators of the other graphs too (Model Explorer lists its own graph's):
    # line 10293 `%1000 = PrimFunc_SumExt(...)`, in `Gradients/...`
    page.locator("search-bar input").fill("%1000$")
    page.locator(".irtool-find-row").first.wait_for()
    assert page.locator(".irtool-find-title").inner_text() == "1 in other graphs"
    assert page.locator(".irtool-find-row").inner_text().startswith("SumExt %1000 19_validate_0078.ir.xz:10293")
    if os.environ.get("IRTOOL_SCREENSHOTS"):
        shutil.copy(tmp_path / "find.png", Path(os.environ["IRTOOL_SCREENSHOTS"]) / "view_find.png")


def test_opening_on_a_node_and_the_title_bar_on_one_line(browser: object, gpt_url: str) -> None:
    from urllib.parse import quote

    # what `irtool view GPT --part-size 300 --node FILE:2446` announces: the page opens on that node's part, selected
    page = _open(browser, gpt_url + "&irtool_node=" + quote("19_validate_0078.ir.xz:2446"))
    assert _selected(page, "TrainGradAccuStepCell: Default (own operators)") == "%154"
    # the longest part's name on a 1280-pixel screen: the title bar stays one line, its icons in view
    layer = "TrainGradAccuStepCell: Gradients/Default/network-PipelineCell/network-GPT/layers-CellList/1-DecoderLayer"
    page = _open(browser, _opening(gpt_url, layer), width=1280)
    assert page.evaluate("window.__me.graph.id") == layer
    bar = page.evaluate("""() => { const t = document.querySelector('title-bar');
      const leaves = [...t.querySelectorAll('mat-icon, .option-label, .collection-label')].filter(e => e.offsetParent);
      return {height: t.getBoundingClientRect().height,
              tops: leaves.map(e => Math.round(e.getBoundingClientRect().top + e.getBoundingClientRect().height / 2)),
              right: Math.max(...leaves.map(e => e.getBoundingClientRect().right))}; }""")
    assert bar["height"] <= 48 and max(bar["tops"]) - min(bar["tops"]) <= 4 and bar["right"] <= 1280, bar
