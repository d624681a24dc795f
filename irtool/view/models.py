"""What `irtool view` and `irtool export --format model-explorer` show: models (a label, its graphs
and node data overlays) for a dump file, a rank folder (one rank per stage plus the pipeline graph)
or two compilations side by side with the diff marked."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from ..ir import Dump
from ..parallel import ParallelFacts
from ..selection import Selection, selected_stage
from .graphs import bytes_node_data, category_node_data, diff_node_data, diff_panel, dump_graphs, pipeline_graph

Side = tuple[Dump, ParallelFacts]


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


@dataclass
class Model:
    """One model of Model Explorer: a label, its graphs, and node data overlays by name."""

    label: str
    graphs: list[dict[str, Any]]
    node_data: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Model Explorer's graph order (it opens the first): `name_asc` puts `pipeline` before the
    # `stage S rank R: ...` graphs; None keeps its default, the largest graph first.
    sorting: str | None = None
    first_graph: str | None = None  # the graph to open on (else Model Explorer opens the largest)

    def graphs_json(self) -> str:
        """Model Explorer's graph JSON: `{"label": ..., "graphs": [...]}` (its file loader's form)."""
        doc: dict[str, Any] = {"label": self.label, "graphs": self.graphs}
        if self.sorting:
            doc["graphSorting"] = self.sorting
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


@dataclass
class _Rank:
    rank: int | None
    file: str
    dump: Dump
    facts: ParallelFacts
    prefix: str = ""


def _overlays(ranks: list[_Rank]) -> dict[str, dict[str, Any]]:
    parts = [(r.prefix + g.name, r.facts, g.name) for r in ranks for g in r.dump.subgraphs]
    return {"comm category": category_node_data(parts), "comm bytes": bytes_node_data(parts)}


def _file_model(r: _Rank, label: str) -> Model:
    return Model(label, dump_graphs(r.dump, r.facts, r.prefix), _overlays([r]))


def models_for(sel: str | Selection) -> Model:
    """The model of the CLI's selection (or a path): a file, or of a folder one rank per stage (the
    lowest, picked without reading every rank), each graph named `stage S rank R: <subgraph>`, and
    with several stages a `pipeline` graph of every Send/Receive paired across them; a selected stage
    keeps only that stage's rank."""
    sel = sel if isinstance(sel, Selection) else Selection.of(sel)
    label = os.path.basename(os.path.normpath(sel.path))
    picked = [_Rank(p.rank, p.file, p.dump, p.facts) for p in sel.per_stage()]
    if sel.is_file:
        return _file_model(picked[0], label)
    for r in picked:
        r.prefix = f"stage {selected_stage(r.facts.stage)} rank {r.rank}: "
    graphs = [g for r in picked for g in dump_graphs(r.dump, r.facts, r.prefix)]
    if len(picked) > 1:
        from ..parallel.schedule import stage_schedule

        scheds = {r.rank: stage_schedule(r.dump, r.facts) for r in picked}
        orders = {rank: [e.node for e in s.events] for rank, s in scheds.items() if s.fixed}
        graphs.insert(0, pipeline_graph([(r.rank, os.path.relpath(r.file, sel.path), r.facts) for r in picked],
                                         folder=[r for r in sel.files if r is not None], orders=orders))
        return Model(label, graphs, _overlays(picked), sorting="name_asc", first_graph="pipeline")
    return Model(label, graphs, _overlays(picked))


def compare_models(old: str | Selection, new: str | Selection, differ: Differ) -> list[Model]:
    """Two dump files (or the lowest rank of two folders, of the selected stage if any) as two models,
    each with a `diff` overlay marking the communication and strategy nodes `irtool diff` reports
    added, removed or changed (`differ`: the diff command's function, passed by the CLI)."""
    a, b = (_Rank(p.rank, p.file, p.dump, p.facts)
            for p in ((s if isinstance(s, Selection) else Selection.of(s)).first() for s in (old, new)))
    rd = differ((a.dump, a.facts), (b.dump, b.facts), a.rank, b.rank)
    models = []
    for side, marks, tag in ((a, rd.old_marks, "old"), (b, rd.new_marks, "new")):
        m = _file_model(side, f"{tag}: {os.path.basename(side.file)}")
        overlay: dict[str, Any] = {}
        graphs = {g["id"]: g for g in m.graphs}
        for g in side.dump.subgraphs:
            changes = {uid.rpartition("/")[2]: kind for uid, kind in marks.items() if uid.rpartition("/")[0] == g.name}
            overlay.update(diff_node_data(g.name, changes))
            diff_panel(graphs[g.name], changes, rd.strategy + rd.comm, tag)
        m.node_data = {"diff": overlay, **m.node_data}
        models.append(m)
    return models
