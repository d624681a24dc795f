"""What `irtool view` and `irtool export --format model-explorer` show: models (a label, its graphs
and node data overlays) for a dump file, a rank folder (one rank per stage plus the pipeline graph)
or two compilations side by side with the diff marked."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from ..dumpdir import load_dir
from ..errors import SelectionError
from ..ir import Dump, load
from ..parallel import ParallelFacts, analyze
from .graphs import bytes_node_data, category_node_data, diff_node_data, diff_panel, dump_graphs, pipeline_graph

Loader = Callable[[str], Dump]
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


def _ranks(path: str, pass_name: str | None, loader: Loader) -> list[_Rank]:
    out = []
    for rf in load_dir(path, pass_name):
        dump = loader(rf.path)
        out.append(_Rank(rf.rank, rf.path, dump, analyze(dump, rf.rank)))
    return out


def _stages(ranks: list[_Rank]) -> str:
    known = sorted({r.facts.stage for r in ranks if r.facts.stage is not None})
    return "no pipeline stages" if not known else "stages " + ", ".join(map(str, known))


def models_for(path: str, stage: int | None = None, pass_name: str | None = None,
               loader: Loader = load) -> Model:
    """The model of a dump file or rank folder. A folder gives one rank per stage (the lowest),
    each graph named `stage S rank R: <subgraph>`, and with several stages a `pipeline` graph of
    every Send/Receive paired across them; `stage` keeps only that stage's rank."""
    label = os.path.basename(os.path.normpath(path))
    ranks = _ranks(path, pass_name, loader)
    if stage is not None:
        ranks = [r for r in ranks if (r.facts.stage or 0) == stage]
        if not ranks:
            raise SelectionError(f"{path}: no rank is on stage {stage} ({_stages(_ranks(path, pass_name, loader))})")
    if len(ranks) == 1 and os.path.isfile(path):
        return _file_model(ranks[0], label)
    chosen: dict[int | None, _Rank] = {}
    for r in ranks:
        chosen.setdefault(r.facts.stage, r)
    picked = list(chosen.values())
    for r in picked:
        r.prefix = f"stage {'-' if r.facts.stage is None else r.facts.stage} rank {r.rank}: "
    graphs = [g for r in picked for g in dump_graphs(r.dump, r.facts, r.prefix)]
    if len(picked) > 1:
        base = path if os.path.isdir(path) else os.path.dirname(path)
        from ..parallel.schedule import stage_schedule

        scheds = {r.rank: stage_schedule(r.dump, r.facts) for r in picked}
        orders = {rank: [e.node for e in s.events] for rank, s in scheds.items() if s.fixed}
        graphs.insert(0, pipeline_graph([(r.rank, os.path.relpath(r.file, base), r.facts) for r in picked],
                                         folder=[r.rank for r in ranks if r.rank is not None], orders=orders))
        return Model(label, graphs, _overlays(picked), sorting="name_asc", first_graph="pipeline")
    return Model(label, graphs, _overlays(picked))


def compare_models(old: str, new: str, differ: Differ, pass_name: str | None = None,
                   loader: Loader = load) -> list[Model]:
    """Two dump files (or the lowest rank of two folders) as two models, each with a `diff` overlay
    marking the communication and strategy nodes `irtool diff` reports added, removed or changed."""
    sides = []
    for path in (old, new):
        r = _ranks(path, pass_name, loader)[0]
        sides.append(r)
    a, b = sides
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
