"""What `irtool view` and `irtool export --format model-explorer` show: models (a label, its graphs
and node data overlays) for a dump file, a rank folder (one rank per stage plus the pipeline graph)
or two compilations side by side with the diff marked."""
from __future__ import annotations

import itertools
import json
import os
import re
import threading
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator, Protocol

import orjson

from ..errors import InputError, SelectionError
from ..ir import Dump
from ..parallel import ParallelFacts
from ..parallel.hardware import load_profile
from ..parallel.job import Job, job_changes
from ..parallel.order import StageOrder, stage_order, unit_label, unit_nodes
from ..present import cell
from ..present.job import changes_line
from ..present.memory import memory_svg, panel
from ..present.timeline import Timeline, stage_timings, timeline, timeline_svg
from ..present.timing import seconds_text
from ..selection import Loaded, Selection
from .cost import COST_OVERLAYS, NodeCost, heat_node_data, node_cost
from .graphs import (
    PART_OF,
    PART_SIZE,
    bytes_node_data,
    category_node_data,
    complete,
    diff_node_data,
    diff_panel,
    dump_graphs,
    first_graph,
    for_parts,
    graph_names,
    node_index,
    overview_id,
    part_stub,
)
from .pipeline import LANES, StageRank, UnitTimes, execution_graph, first_box, pipeline_graph, unit_values

Side = tuple[Dump, ParallelFacts]
Graphs = list[dict[str, Any]]


class DiffMarks(Protocol):
    """What `irtool diff` found in two analysed dumps, as the view reads it: node uid -> added /
    removed / changed per side, its strategy and communication entries (`node_scope`, `field` or
    `fields`, `old`, `new`) for the panel's old -> new rows, and its operator counts (`op`, `old`, `new`); node uid
    -> why a changed one changed (`strategy`, `communication`) per side."""

    old_marks: dict[str, str]
    new_marks: dict[str, str]
    old_causes: dict[str, str]
    new_causes: dict[str, str]
    strategy: list[Any]
    comm: list[Any]
    ops: list[Any]


# The diff of two analysed dumps and their ranks. The CLI passes the diff command's function
# (`diff_rank`): the view never imports another command.
Differ = Callable[[Side, Side, "int | None", "int | None"], DiffMarks]


class Model:
    """One model of Model Explorer: a label, its graphs, and node data overlays by name.

    The graphs may be given as a function that builds them: they are built once, on first use
    (`irtool view` serves the page while they are being built), under a lock so that a request
    and a background build share one result. An overlay is a function of the built graphs (a split
    graph's parts get their nodes' data), made once when first asked for."""

    def __init__(self, label: str, graphs: Graphs | Callable[[], Graphs],
                 overlays: dict[str, Callable[[Graphs], dict[str, Any]]] | None = None, sorting: str | None = None,
                 first_graph: str | None = None, finder: Callable[[str], tuple[str, str]] | None = None,
                 first_node: Callable[[], str | None] | None = None, lanes: tuple[str, ...] = (),
                 pictures: dict[str, Callable[[], str]] | None = None, headline: dict[str, Any] | None = None,
                 targets: Callable[[], dict[str, Any]] | None = None) -> None:
        self.label = label
        self.targets = targets  # where the pictures' units and peaks open, what a node says of them (`_targets`)
        # the page's first lines (`lines`) and a colour key (`legend`: [colour, text]): two configurations' change
        self.headline = headline
        self.pictures = pictures or {}  # a folder's `timeline` and `memory` (SVG text, made when asked for)
        # a folder's pipeline graph opens with its columns expanded and its first box selected (what draws
        # the lines between Sends and Receives): that box, found when the page is asked for
        self.first_node = first_node
        self.lanes = lanes  # graphs whose groups are a folder's ranks (columns, rows): shown expanded
        self.finder = finder  # `--node` text -> (graph id before a split, node id): `find`
        self.overlays = overlays or {}
        self._node_data: dict[str, dict[str, Any]] = {}
        # Model Explorer's graph order (it opens the first): `name_asc` puts `pipeline` before the
        # `stage S rank R: ...` graphs; None keeps its default, the largest graph first.
        self.sorting = sorting
        self.first_graph = first_graph  # the graph to open on (else Model Explorer opens the largest)
        self._build = graphs if callable(graphs) else None
        self._graphs = None if callable(graphs) else graphs
        self._json: str | None = None
        self._complete = False
        self._index: dict[str, Any] | None = None
        self._lock = threading.Lock()

    @property
    def graphs(self) -> list[dict[str, Any]]:
        """Every graph, each part of a split graph made (`graphs.complete`)."""
        graphs = self._built()
        with self._lock:
            if not self._complete:
                complete(graphs)
                self._complete = True
            return graphs

    def _built(self) -> list[dict[str, Any]]:
        """The graphs as built: a split graph's parts may be left to be made (`dump_graphs(later=True)`)."""
        with self._lock:
            if self._graphs is None:
                self._graphs = self._build()  # type: ignore[misc]
            return self._graphs

    def node_data_of(self, name: str) -> dict[str, Any]:
        """The overlay `name`: Model Explorer's node data by graph id (a split graph's parts need not be made:
        `graphs.node_ids`)."""
        graphs = self._built()
        with self._lock:
            if name not in self._node_data:
                self._node_data[name] = self.overlays[name](graphs)
            return self._node_data[name]

    @property
    def node_data(self) -> dict[str, dict[str, Any]]:
        return {name: self.node_data_of(name) for name in self.overlays}

    def index(self) -> dict[str, Any]:
        """What the page searches across the model's graphs and where its links to other graphs go
        (`graphs.node_index`), made once."""
        graphs = self.graphs
        with self._lock:
            if self._index is None:
                self._index = node_index(graphs)
            return self._index

    def find(self, spec: str) -> tuple[str, str]:
        """The node `--node` names (`%154`, `FILE:LINE`, `:LINE`), as (graph id before a split, node id);
        InputError when it names none, or several."""
        if self.finder is None:
            raise InputError(f"--node: {self.label} has no dump nodes to find")
        return self.finder(spec)

    def graphs_json(self) -> str:
        """Model Explorer's graph JSON: `{"label": ..., "graphs": [...]}` (its file loader's form), made once."""
        doc = self._doc()
        with self._lock:
            if self._json is None:
                try:  # orjson (C) writes 50 MB in a fraction of a second, json.dumps in about two
                    self._json = orjson.dumps(doc).decode()
                except TypeError:  # an integer beyond 64 bits, a lone surrogate: Python's encoder
                    self._json = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
            return self._json

    def page_json(self) -> bytes:
        """The graph JSON the page loads first (`graphs_json` with each part of a split graph a stub: `part_stub`); a
        part's graph is sent when the page opens it (`part_jsons`). Model Explorer loads every graph of a model in one
        request: the 68 MB dump's parts were 54 MB of JSON the page read before it drew the overview."""
        number = itertools.count()
        return _dumps(self._doc([part_stub(g, next(number)) if _is_part(g) else g for g in self._built()]))

    def part_jsons(self) -> Iterator[bytes]:
        """The JSON of each part of the split graphs, in their order (a stub's number)."""
        for g in self.graphs:
            if _is_part(g):
                yield _dumps(g)

    def part_json(self, number: int) -> bytes | None:
        """The JSON of part `number` (`part_jsons`), None when there is none."""
        parts = [g for g in self.graphs if _is_part(g)]
        return _dumps(parts[number]) if 0 <= number < len(parts) else None

    def graphs_file(self) -> bytes | str:
        """`graphs_json` as `export` writes it: orjson's UTF-8 bytes as they come, not made text and encoded again
        (a folder's graph JSON is tens of MB: held once, not three times), else the text."""
        if self._json is None:
            try:
                return orjson.dumps(self._doc())
            except TypeError:
                pass
        return self.graphs_json()

    def _doc(self, graphs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        doc: dict[str, Any] = {"label": self.label, "graphs": self.graphs if graphs is None else graphs}
        if self.sorting:
            doc["graphSorting"] = self.sorting
        return doc


def _is_part(graph: dict[str, Any]) -> bool:
    return PART_OF in graph["groupNodeAttributes"].get("", {})


def _dumps(doc: Any) -> bytes:
    try:  # orjson (C) writes 50 MB in a fraction of a second, json.dumps in about two
        return orjson.dumps(doc)
    except TypeError:  # an integer beyond 64 bits, a lone surrogate: Python's encoder
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class _Rank:
    rank: int | None
    file: str
    dump: Dump
    facts: ParallelFacts
    prefix: str = ""
    shown: str | None = None  # the file's name in the panel (`rank_4/x.ir`; default its base name)
    _names: dict[str, str] | None = None
    _cost: NodeCost | None = None
    order_of: Callable[[], StageOrder] | None = None  # a folder's rank: its order as every folder command shows it
    _order: StageOrder | None = None

    def cost(self) -> NodeCost:
        """The cost records of the rank by node, made once (when a cost overlay is first asked for)."""
        if self._cost is None:
            self._cost = node_cost(self.facts, self.rank, self.file)
        return self._cost

    def graph_id(self, subgraph: str) -> str:
        """The id of a subgraph's graph (before a split): `prefix` + its name in the viewer."""
        if self._names is None:
            self._names = graph_names(self.dump, self.facts)
        return self.prefix + self._names[subgraph]

    def graphs(self, part_size: int, annotate: Any = None) -> Graphs:
        return dump_graphs(self.dump, self.facts, self.prefix, part_size, annotate, self.shown, later=annotate is None)

    def stage_rank(self, part_size: int) -> StageRank:
        """This rank as the pipeline and execution order graphs draw it: each subgraph's graph ids."""
        split = {g.name for g in self.dump.subgraphs if len(g.nodes) > part_size}

        def ids(subgraph: str) -> tuple[str, str]:
            gid = self.graph_id(subgraph)
            return gid, overview_id(gid) if subgraph in split else gid

        return StageRank(self.rank if self.rank is not None else 0, self.shown or os.path.basename(self.file),
                         self.facts, ids, lambda subgraph: self.graph_id(subgraph)[len(self.prefix):],
                         self.order())

    def order(self) -> StageOrder:
        """The rank's order (`order_of`, read once: a kernel graph beside the dump is parsed), else its dump's."""
        if self._order is None:
            self._order = self.order_of() if self.order_of else stage_order(self.facts.table)
        return self._order


def _overlays(ranks: list[_Rank], drawn: Callable[[], list[StageRank]] | None = None
              ) -> dict[str, Callable[[Graphs], dict[str, Any]]]:
    """The node data overlays of the ranks' graphs (`drawn`: a folder's ranks as its execution-order graph draws
    them, whose units get their operators' FLOPs)."""
    parts = [(r.graph_id(g.name), r.facts, g.name) for r in ranks for g in r.dump.subgraphs]

    def cost(name: str, pick: Callable[[NodeCost], dict[str, int]], what: str, unit: str
             ) -> Callable[[Graphs], dict[str, Any]]:
        def data(graphs: Graphs) -> dict[str, Any]:
            values: dict[str, dict[str, int]] = {}
            for r in ranks:
                for ref, value in pick(r.cost()).items():
                    if ref.startswith("%para"):  # a parameter: a node of every graph reading it
                        for g in r.dump.subgraphs:
                            values.setdefault(r.graph_id(g.name), {})[ref] = value
                    else:
                        graph, _, key = ref.rpartition("/")
                        values.setdefault(r.graph_id(graph), {})[key] = value
            sums = None
            if drawn is not None and name == "FLOPs":
                sums = {"execution order": {k: v for r, s in zip(ranks, drawn())
                                            for k, v in unit_values(s, r.cost().flops).items()}}
            return heat_node_data(name, values, graphs, sums, what, unit)

        return data

    # Model Explorer shows the overlay loaded last: the categories, as the nodes' own colours say them
    return {**{name: cost(name, *spec) for name, spec in COST_OVERLAYS.items()},
            "comm bytes": lambda graphs: for_parts(bytes_node_data(parts), graphs),
            "comm category": lambda graphs: for_parts(category_node_data(parts), graphs)}


_SPEC = re.compile(r"(?:(?P<file>.*):(?P<line>\d+))|(?P<key>%\d+)")


def _finder(ranks: list[_Rank]) -> Callable[[str], tuple[str, str]]:
    """`--node`: `%N` is the node of that id in the first graph holding one (the entry graph first, the
    lowest stage first), `FILE:LINE` (or `:LINE`) the node whose statement starts on that line of the
    file the panel names so (`19_validate_0078.ir.xz`, in a folder `rank_4/19_validate_0078.ir.xz`)."""
    def find(spec: str) -> tuple[str, str]:
        m = _SPEC.fullmatch(spec.strip())
        if m is None:
            raise InputError(f"--node {spec}: expected %N or FILE:LINE (as the panel's `file` row says it)")
        if m["key"]:
            for r in ranks:
                for g in sorted(r.dump.subgraphs, key=lambda g: g.name != r.dump.entry):
                    if any(n.key == m["key"] for n in g.nodes):
                        return r.graph_id(g.name), m["key"]
            raise InputError(f"--node {spec}: no node {m['key']} in {', '.join(r.file for r in ranks)}")
        files = [r for r in ranks if not m["file"] or _names_file(r, m["file"])]
        if not files:
            raise InputError(f"--node {spec}: no file {m['file']} here; the files are "
                             + ", ".join(_shown(r) for r in ranks))
        line = int(m["line"])
        found = [(r, n) for r in files for n in r.dump.nodes() if n.line == line]
        if len(found) > 1:
            raise InputError(f"--node {spec} names {len(found)} nodes: "
                             + ", ".join(f"{_shown(r)}:{line}" for r, _ in found) + "; say which file")
        if not found:
            before = [(n.line, n.key) for r in files for n in r.dump.nodes() if n.line < line]
            near = f"; the statement before it is {max(before)[1]} at line {max(before)[0]}" if before else ""
            raise InputError(f"--node {spec}: no node's statement starts at line {line}{near}")
        r, n = found[0]
        return r.graph_id(n.graph), n.key

    return find


def _shown(r: _Rank) -> str:
    return r.shown or os.path.basename(r.file)


def _names_file(r: _Rank, name: str) -> bool:
    shown = _shown(r)
    return shown == name or shown.endswith("/" + name) or os.path.abspath(r.file) == os.path.abspath(name)


def _file_model(r: _Rank, label: str, part_size: int) -> Model:
    return Model(label, lambda: r.graphs(part_size), _overlays([r]),
                 first_graph=first_graph(r.dump, r.facts, r.prefix, part_size), finder=_finder([r]))


def models_for(sel: str | Selection, part_size: int = PART_SIZE) -> Model:
    """The model of the CLI's selection (or a path): a file, or of a folder one rank per stage (the
    lowest, picked without reading every rank), each graph named `stage S rank R: <subgraph>`, and
    with several stages a `pipeline` graph of every Send/Receive paired across them; a selected stage
    keeps only that stage's rank. A graph of more than `part_size` operators comes as an overview
    and parts (`graphs.split_large`), and a file opens on the overview."""
    sel = sel if isinstance(sel, Selection) else Selection.of(sel)
    label = os.path.basename(os.path.normpath(sel.path))
    loaded = sel.per_stage()
    picked = [_Rank(p.rank, p.file, p.dump, p.facts, order_of=partial(p.order, sel.policy.lenient)) for p in loaded]
    if sel.is_file:
        return _file_model(picked[0], label, part_size)
    # Model Explorer sorts the graph selector by name: stages numbered to one width (`stage 02` before `stage 10`)
    width = len(str(max(p.stage or 0 for p in loaded)))  # a rank of unknown stage is drawn alone (`per_stage`)
    for r, p in zip(picked, loaded):
        r.prefix = ("stage unknown" if p.stage is None else f"stage {p.stage:0{width}d}") + f" rank {r.rank}: "
        r.shown = os.path.relpath(r.file, sel.path)
    if len(picked) == 1:
        return _file_model(picked[0], label, part_size)

    pictures, played = _pictures(loaded, sel.path)
    # the folder's job, of every rank (the ranks drawn are read already): folded here, in this process, since the
    # graphs are built in a forked daemon process (`serve._Builder`), which may not start the ranks' workers
    job = sel.job(have=loaded)

    def drawn() -> list[StageRank]:
        return stage_figures([r.stage_rank(part_size) for r in picked], [r.cost() for r in picked])

    def build() -> list[dict[str, Any]]:
        ranks = drawn()
        pipe = pipeline_graph(ranks, folder=[r for r in sel.files if r is not None], unreadable=sel.unreadable)
        return [pipe, execution_graph(ranks, job, times=_unit_times(played()))] + [
            g for r in picked for g in r.graphs(part_size)]

    return Model(label, build, _overlays(picked, drawn), sorting="name_asc", first_graph="pipeline",
                 finder=_finder(picked), first_node=lambda: first_box(drawn()), lanes=LANES,
                 pictures=pictures, targets=lambda: _targets(picked, played))


def stage_figures(ranks: list[StageRank], costs: list[NodeCost]) -> list[StageRank]:
    """The drawn ranks with what each stage costs, as the boxes of its column and row say it (the cost records:
    its operators' FLOPs in the step, the bytes of the parameters it holds) and its load beside the heaviest
    stage's."""
    flops = [sum(c.flops.values()) for c in costs]
    top = max(flops, default=0)
    out = []
    for r, c, f in zip(ranks, costs, flops):
        figures = {"stage FLOPs": cell(f) + (f" (+{c.unknown} operators of unknown cost)" if c.unknown else ""),
                   "stage load": "the heaviest stage" if f == top else f"{f / top:.0%} of the heaviest stage"
                   if top else "no FLOPs known",
                   "stage bytes held": cell(sum(c.held.values()))}
        out.append(r._replace(figures=figures))
    return out


def _unit_times(tl: Timeline | None) -> UnitTimes | None:
    """When each unit of each drawn rank runs in the step as `render --timeline` plays it out (the default
    hardware profile); None when the step cannot be played out (the execution-order graph is then in order)."""
    if tl is None:
        return None
    out: UnitTimes = {}
    for b in tl.step.boxes:
        rank = tl.ranks.get(b.stage)
        if rank is not None:
            out.setdefault(rank, {})[b.unit] = (b.start, b.end)
    return out


def _pictures(loaded: list[Loaded], path: str) -> tuple[dict[str, Callable[[], str]], Callable[[], Timeline | None]]:
    """A folder's pictures as `irtool render DIR --timeline` and `--memory` draw them (the default hardware
    profile), each SVG text made when asked for (`irtool view`'s builder asks once), and the step played out
    (None when it cannot be: the timeline says why), played once for both the picture and the targets."""
    ranks = [(p.facts, p.rank, p.file) for p in loaded]
    kept: list[Timeline] = []

    def played() -> Timeline:
        if not kept:
            kept.append(timeline(stage_timings(ranks, load_profile(None))))
        return kept[0]

    def cannot(tl: Timeline) -> str | None:
        return tl.step.cannot or ("fewer than two pipeline stages timed" if len(tl.ranks) < 2 else None)

    def step() -> str:
        tl = played()
        if cannot(tl):
            raise SelectionError(f"{path}: no timeline: {cannot(tl)}")
        return timeline_svg(tl, f"{path}: the step, stage by stage")

    return ({"timeline": step,
             "memory": lambda: memory_svg([panel(*r) for r in ranks], f"{path}: device memory over the step")},
            lambda: None if cannot(played()) else played())


def _targets(picked: list[_Rank], played: Callable[[], Timeline | None]) -> dict[str, Any]:
    """Where the pictures' marks open in the stage graphs, and what a stage graph's node says of them (the page's
    script, static/view.js): `units` ({"<stage> <unit>": [graph, node]}: a timeline unit's first node, the order's
    `unit_nodes`), `peaks` ({"<stage>": [graph, node]}: the node at the memory walk's peak), `nodes` ({graph: {node:
    [unit, its time on the timeline, stage]}}); graphs before a split (the server finds the part)."""
    step = played()
    boxes = {(b.stage, unit_label(b.unit)): b for b in step.step.boxes} if step is not None else {}
    units: dict[str, list[str]] = {}
    nodes: dict[str, dict[str, list[str]]] = {}
    peaks: dict[str, list[str]] = {}
    for r in picked:
        stage = r.facts.stage if r.facts.stage is not None else 0
        for key, members in unit_nodes(r.facts.table).items():
            label = unit_label(key)
            b = boxes.get((stage, label))
            when = f"{seconds_text(b.start)} to {seconds_text(b.end)} of the step" if b else "not on the timeline"
            first = min(members, key=lambda n: n.line)
            units[f"{stage} {label}"] = [r.graph_id(first.graph), first.key]
            for n in members:
                nodes.setdefault(r.graph_id(n.graph), {})[n.key] = [label, when, str(stage)]
        at = r.facts.table.get("lifetimes").at  # the `lifetimes` fact: the walk the memory picture draws
        if at is not None:
            graph, _, key = at.node.rpartition("/")
            peaks[str(stage)] = [r.graph_id(graph), key]
    return {"units": units, "peaks": peaks, "nodes": nodes}


def compare_models(old: str | Selection, new: str | Selection, differ: Differ, part_size: int = PART_SIZE) -> list[Model]:
    """Two dump files (or the lowest rank of two folders, of the selected stage if any) as two models
    side by side, each with a `diff` overlay (loaded last: the one shown) marking the communication
    and strategy nodes `irtool diff` reports added, removed or changed, and the nodes of an operator
    the other side has none of (its operator counts); a node of an operator whose count changed says
    the counts in its panel (`differ`: the diff command's function, passed by the CLI). The page's first lines say
    what the two jobs differ in, as `irtool diff` does (a hidden size, the optimizer: `_changed`)."""
    sels = [s if isinstance(s, Selection) else Selection.of(s) for s in (old, new)]
    firsts = [s.first() for s in sels]
    a, b = (_Rank(p.rank, p.file, p.dump, p.facts) for p in firsts)
    rd = differ((a.dump, a.facts), (b.dump, b.facts), a.rank, b.rank)
    counts = {o.op: (o.old, o.new) for o in rd.ops}
    a.prefix, b.prefix = "old: ", "new: "  # Model Explorer renames a graph whose id another model has
    models = []
    head = _headline(_nothing_matched(a, b, rd), _changed(*(s.job(have=[p]) for s, p in zip(sels, firsts))))
    for side, marks, why, tag in ((a, rd.old_marks, rd.old_causes, "old"), (b, rd.new_marks, rd.new_causes, "new")):
        changes = {g.name: _changes(marks, g.name, g.nodes, counts, tag) for g in side.dump.subgraphs}
        overlay: dict[str, Any] = {}
        for g in side.dump.subgraphs:
            causes = {uid.rpartition("/")[2]: c for uid, c in why.items() if uid.rpartition("/")[0] == g.name}
            overlay.update(diff_node_data(side.graph_id(g.name), changes[g.name], causes))

        def build(side: _Rank = side, changes: dict[str, dict[str, str]] = changes, tag: str = tag) -> Graphs:
            def annotate(subgraph: str, graph: dict[str, Any]) -> None:  # before a split: parts share the rows
                diff_panel(graph, changes[subgraph], rd.strategy + rd.comm, tag, counts)

            return side.graphs(part_size, annotate)

        models.append(Model(f"{tag}: {os.path.basename(side.file)}", build,
                            {**_overlays([side]), "diff": lambda graphs, overlay=overlay: for_parts(overlay, graphs)},
                            first_graph=first_graph(side.dump, side.facts, side.prefix, part_size),
                            finder=_finder([side]), headline=head if tag == "old" else None))
    return models


def _changed(old: Job, new: Job) -> list[str]:
    """What two jobs compared rank with rank differ in (`parallel.job.job_changes`), as `irtool diff` says it: the
    model and data's change first (the marks change with it), then the rest of the configuration's."""
    changes = job_changes(old, new)
    model = [c for c in changes if c.model]
    rest = [c for c in changes if not c.model]
    return ([f"Model and data changed, not the parallel layout: {changes_line(model)} (the marks below change with "
             "it)"] if model else []) + ([f"Configuration: {changes_line(rest)}"] if rest else [])


def _headline(matched: dict[str, Any] | None, changed: list[str]) -> dict[str, Any] | None:
    """The page's first lines: "nothing matched" (`_nothing_matched`), then what the jobs differ in."""
    if matched is None and not changed:
        return None
    head = matched or {"lines": [], "legend": []}
    return {**head, "lines": [*head["lines"], *changed]}


def _nothing_matched(a: _Rank, b: _Rank, rd: DiffMarks) -> dict[str, Any] | None:
    """The page's first lines when the two dumps share nothing the diff matches (two networks, not two compilations of
    one): nodes with a strategy or communication on each side, and the diff marks each added or removed; else None."""
    sides = [([f.node for f in (*r.facts.strategies, *r.facts.comm)], marks)
             for r, marks in ((a, rd.old_marks), (b, rd.new_marks))]
    if not all(nodes for nodes, _ in sides) or any(marks.get(uid) not in ("added", "removed")
                                                  for nodes, marks in sides for uid in nodes):
        return None
    return {"lines": [f"Nothing matched: {a.file} and {b.file} share no operator with a strategy or communication",
                      "Two different networks? Every such node is marked added or removed."], "legend": []}


def _changes(marks: dict[str, str], subgraph: str, nodes: list[Any], counts: dict[str, tuple[int, int]],
             side: str) -> dict[str, str]:
    """The marks of one subgraph by node key (`%N`): the diff's own, and the nodes of an operator the other side
    has none of (the diff's operator counts) added or removed (where an operator is on both sides, which of its
    nodes are new is not known: the panel says its counts)."""
    out = {uid.rpartition("/")[2]: kind for uid, kind in marks.items() if uid.rpartition("/")[0] == subgraph}
    for n in nodes:
        old, new = counts.get(n.op, (1, 1))
        if n.key not in out and (new if side == "old" else old) == 0:
            out[n.key] = "removed" if side == "old" else "added"
    return out
