"""What `irtool view` and `irtool export --format model-explorer` show: models (a label, its graphs
and node data overlays) for a dump file, a rank folder (one rank per stage plus the pipeline graph)
or two compilations side by side with the diff marked."""
from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import orjson

from ..errors import InputError
from ..ir import Dump
from ..parallel import ParallelFacts
from ..parallel.order import stage_order
from ..selection import Selection, selected_stage
from .graphs import (
    PART_SIZE,
    bytes_node_data,
    category_node_data,
    diff_node_data,
    diff_panel,
    dump_graphs,
    first_graph,
    for_parts,
    graph_names,
    node_index,
    pipeline_graph,
)

Side = tuple[Dump, ParallelFacts]
Graphs = list[dict[str, Any]]


class DiffMarks(Protocol):
    """What `irtool diff` found in two analysed dumps, as the view reads it: node uid -> added /
    removed / changed per side, and its strategy and communication entries (`node_scope`, `field`
    or `fields`, `old`, `new`) for the panel's old -> new rows."""

    old_marks: dict[str, str]
    new_marks: dict[str, str]
    strategy: list[dict[str, Any]]
    comm: list[dict[str, Any]]


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
                 first_graph: str | None = None, finder: Callable[[str], tuple[str, str]] | None = None) -> None:
        self.label = label
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
        self._index: dict[str, Any] | None = None
        self._lock = threading.Lock()

    @property
    def graphs(self) -> list[dict[str, Any]]:
        with self._lock:
            if self._graphs is None:
                self._graphs = self._build()  # type: ignore[misc]
            return self._graphs

    def node_data_of(self, name: str) -> dict[str, Any]:
        """The overlay `name`: Model Explorer's node data by graph id."""
        graphs = self.graphs
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
        graphs = self.graphs
        with self._lock:
            if self._json is None:
                doc: dict[str, Any] = {"label": self.label, "graphs": graphs}
                if self.sorting:
                    doc["graphSorting"] = self.sorting
                try:  # orjson (C) writes 50 MB in a fraction of a second, json.dumps in about two
                    self._json = orjson.dumps(doc).decode()
                except TypeError:  # an integer beyond 64 bits, a lone surrogate: Python's encoder
                    self._json = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
            return self._json


@dataclass
class _Rank:
    rank: int | None
    file: str
    dump: Dump
    facts: ParallelFacts
    prefix: str = ""
    shown: str | None = None  # the file's name in the panel (`rank_4/x.ir`; default its base name)
    _names: dict[str, str] | None = None

    def graph_id(self, subgraph: str) -> str:
        """The id of a subgraph's graph (before a split): `prefix` + its name in the viewer."""
        if self._names is None:
            self._names = graph_names(self.dump, self.facts)
        return self.prefix + self._names[subgraph]

    def graphs(self, part_size: int, annotate: Any = None) -> Graphs:
        return dump_graphs(self.dump, self.facts, self.prefix, part_size, annotate, self.shown)


def _overlays(ranks: list[_Rank]) -> dict[str, Callable[[Graphs], dict[str, Any]]]:
    parts = [(r.graph_id(g.name), r.facts, g.name) for r in ranks for g in r.dump.subgraphs]
    # Model Explorer shows the overlay loaded last: the categories, as the nodes' own colours say them
    return {"comm bytes": lambda graphs: for_parts(bytes_node_data(parts), graphs),
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
    picked = [_Rank(p.rank, p.file, p.dump, p.facts) for p in sel.per_stage()]
    if sel.is_file:
        return _file_model(picked[0], label, part_size)
    # Model Explorer sorts the graph selector by name: stages numbered to one width (`stage 02` before `stage 10`)
    width = len(str(max(selected_stage(r.facts.stage) for r in picked)))
    for r in picked:
        r.prefix = f"stage {selected_stage(r.facts.stage):0{width}d} rank {r.rank}: "
        r.shown = os.path.relpath(r.file, sel.path)
    if len(picked) == 1:
        return _file_model(picked[0], label, part_size)

    def build() -> list[dict[str, Any]]:
        orders = {r.rank: [c.node for c in o.hops] for r in picked if (o := stage_order(r.facts.table)).fixed}
        pipe = pipeline_graph([(r.rank, os.path.relpath(r.file, sel.path), r.facts) for r in picked],
                              folder=[r for r in sel.files if r is not None], orders=orders,
                              unreadable=sel.unreadable)
        return [pipe] + [g for r in picked for g in r.graphs(part_size)]

    return Model(label, build, _overlays(picked), sorting="name_asc", first_graph="pipeline", finder=_finder(picked))


def compare_models(old: str | Selection, new: str | Selection, differ: Differ, part_size: int = PART_SIZE) -> list[Model]:
    """Two dump files (or the lowest rank of two folders, of the selected stage if any) as two models,
    each with a `diff` overlay marking the communication and strategy nodes `irtool diff` reports
    added, removed or changed (`differ`: the diff command's function, passed by the CLI)."""
    a, b = (_Rank(p.rank, p.file, p.dump, p.facts)
            for p in ((s if isinstance(s, Selection) else Selection.of(s)).first() for s in (old, new)))
    rd = differ((a.dump, a.facts), (b.dump, b.facts), a.rank, b.rank)
    a.prefix, b.prefix = "old: ", "new: "  # Model Explorer renames a graph whose id another model has
    models = []
    for side, marks, tag in ((a, rd.old_marks, "old"), (b, rd.new_marks, "new")):
        overlay: dict[str, Any] = {}
        for g in side.dump.subgraphs:
            overlay.update(diff_node_data(side.graph_id(g.name), _changes(marks, g.name)))

        def build(side: _Rank = side, marks: dict[str, str] = marks, tag: str = tag) -> Graphs:
            def annotate(subgraph: str, graph: dict[str, Any]) -> None:  # before a split: parts share the rows
                diff_panel(graph, _changes(marks, subgraph), rd.strategy + rd.comm, tag)

            return side.graphs(part_size, annotate)

        models.append(Model(f"{tag}: {os.path.basename(side.file)}", build,
                            {**_overlays([side]), "diff": lambda graphs, overlay=overlay: for_parts(overlay, graphs)},
                            first_graph=first_graph(side.dump, side.facts, side.prefix, part_size),
                            finder=_finder([side])))
    return models


def _changes(marks: dict[str, str], subgraph: str) -> dict[str, str]:
    """The marks of one subgraph, by node key (`%N`)."""
    return {uid.rpartition("/")[2]: kind for uid, kind in marks.items() if uid.rpartition("/")[0] == subgraph}
