"""What `irtool view` and `irtool export --format model-explorer` show: models (a label, its graphs
and node data overlays) for a dump file, a rank folder (one rank per stage plus the pipeline graph)
or two compilations side by side with the diff marked."""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import orjson

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
                 first_graph: str | None = None) -> None:
        self.label = label
        self.overlays = overlays or {}
        self._node_data: dict[str, dict[str, Any]] = {}
        # Model Explorer's graph order (it opens the first): `name_asc` puts `pipeline` before the
        # `stage S rank R: ...` graphs; None keeps its default, the largest graph first.
        self.sorting = sorting
        self.first_graph = first_graph  # the graph to open on (else Model Explorer opens the largest)
        self._build = graphs if callable(graphs) else None
        self._graphs = None if callable(graphs) else graphs
        self._json: str | None = None
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


def _overlays(ranks: list[_Rank]) -> dict[str, Callable[[Graphs], dict[str, Any]]]:
    parts = [(r.prefix + g.name, r.facts, g.name) for r in ranks for g in r.dump.subgraphs]
    return {"comm category": lambda graphs: for_parts(category_node_data(parts), graphs),
            "comm bytes": lambda graphs: for_parts(bytes_node_data(parts), graphs)}


def _file_model(r: _Rank, label: str, part_size: int) -> Model:
    return Model(label, lambda: dump_graphs(r.dump, r.facts, r.prefix, part_size), _overlays([r]),
                 first_graph=first_graph(r.dump, r.prefix, part_size))


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
    for r in picked:
        r.prefix = f"stage {selected_stage(r.facts.stage)} rank {r.rank}: "
    if len(picked) == 1:
        return _file_model(picked[0], label, part_size)

    def build() -> list[dict[str, Any]]:
        orders = {r.rank: [c.node for c in o.hops] for r in picked if (o := stage_order(r.facts.table)).fixed}
        pipe = pipeline_graph([(r.rank, os.path.relpath(r.file, sel.path), r.facts) for r in picked],
                              folder=[r for r in sel.files if r is not None], orders=orders,
                              unreadable=sel.unreadable)
        return [pipe] + [g for r in picked for g in dump_graphs(r.dump, r.facts, r.prefix, part_size)]

    return Model(label, build, _overlays(picked), sorting="name_asc", first_graph="pipeline")


def compare_models(old: str | Selection, new: str | Selection, differ: Differ, part_size: int = PART_SIZE) -> list[Model]:
    """Two dump files (or the lowest rank of two folders, of the selected stage if any) as two models,
    each with a `diff` overlay marking the communication and strategy nodes `irtool diff` reports
    added, removed or changed (`differ`: the diff command's function, passed by the CLI)."""
    a, b = (_Rank(p.rank, p.file, p.dump, p.facts)
            for p in ((s if isinstance(s, Selection) else Selection.of(s)).first() for s in (old, new)))
    rd = differ((a.dump, a.facts), (b.dump, b.facts), a.rank, b.rank)
    models = []
    for side, marks, tag in ((a, rd.old_marks, "old"), (b, rd.new_marks, "new")):
        overlay: dict[str, Any] = {}
        for g in side.dump.subgraphs:
            overlay.update(diff_node_data(g.name, _changes(marks, g.name)))

        def build(side: _Rank = side, marks: dict[str, str] = marks, tag: str = tag) -> Graphs:
            def annotate(subgraph: str, graph: dict[str, Any]) -> None:  # before a split: parts share the rows
                diff_panel(graph, _changes(marks, subgraph), rd.strategy + rd.comm, tag)

            return dump_graphs(side.dump, side.facts, side.prefix, part_size, annotate)

        models.append(Model(f"{tag}: {os.path.basename(side.file)}", build,
                            {"diff": lambda graphs, overlay=overlay: for_parts(overlay, graphs), **_overlays([side])},
                            first_graph=first_graph(side.dump, side.prefix, part_size)))
    return models


def _changes(marks: dict[str, str], subgraph: str) -> dict[str, str]:
    """The marks of one subgraph, by node key (`%N`)."""
    return {uid.rpartition("/")[2]: kind for uid, kind in marks.items() if uid.rpartition("/")[0] == subgraph}
