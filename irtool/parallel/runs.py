"""How many times each subgraph, and so each node, runs in one training step (the `graph_runs` and
`runs` facts, docs/parallel.md §17): the one rule every per-step figure reads (FLOPs, activations
kept, communication bytes).

A compiled step is one run of the entry graph. Every other graph runs once per run of each call of
it: `call @g(...)`, and a closure's call naming its graph (`%53 = %35[@Partial(@g)](...)`: the bprop
closure of a lazy-inline or cell-reuse forward call). A reused cell (lazy inline, cell reuse) is one
graph called once per layer and micro batch and chunk: MindSpore unrolls the pipeline's micro
batches and an interleaved stage's chunks into separate calls (or separate nodes), so those calls
count them and nothing multiplies by the micro batch count again. A recomputed copy is a node of its
own (`duplicated`) and runs as its graph does. A kernel graph (`graph_build_*`, `hwopt_*`,
`*_execute`, `task_emit`) has every micro batch inlined into one flat graph: each of its nodes runs
once. A graph no node calls but which a node takes as an argument (`Partial(@g, ...)`, `J(@g)`: a
closure called where the dump prints no graph name) runs once per run of each such node. A branch of
a `Switch` (a call naming several graphs, `[@FuncUnion(...)]`, or `Switch(c, @a, @b)`) runs at most
as often as its call: it is counted as taken (`Runs.branch` says so). Unknown (None): a graph in a
call cycle (a loop: its trip count is not printed) and a graph nothing calls or binds that is not
the entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..ir import Node
    from .table import NodeFacts


_CYCLE = "in a call cycle (a loop: its trip count is not printed)"
_SWITCHES = frozenset({"Switch", "SwitchLayer", "switch", "switch_layer"})


@dataclass(frozen=True)
class Runs:
    """How many times one graph runs in a step (None: unknown), and how that is known."""

    count: int | None
    how: str
    branch: bool = False  # reached through a Switch branch: counted as taken (at most `count`)


def graph_runs(t: NodeFacts) -> dict[str, Runs]:
    """The `graph_runs` pass (see the module docstring): graph name -> `Runs`."""
    dump = t.dump
    calls = t.get("calls")
    out: dict[str, Runs] = {}

    def of(graph: str, path: frozenset[str]) -> Runs:
        if graph in out:
            return out[graph]
        if graph == dump.entry:
            return Runs(1, "the entry graph: one run per step")
        if graph in path:
            return Runs(None, _CYCLE)
        sites = calls.sites.get(graph, [])
        via = sites or calls.bound.get(graph, [])
        if not via:
            found = Runs(None, "no node calls it or takes it as an argument")
        else:
            found = _sum(via, lambda n: of(n.graph, path | {graph}), bool(sites))
        out[graph] = found
        return found

    return {g.name: of(g.name, frozenset()) for g in dump.subgraphs}


def _sum(via: list[Node], caller: Callable[[Node], Runs], called: bool) -> Runs:
    """Runs over the call sites (`called`) or the nodes taking a graph as an argument: the sum of their
    graphs' runs (`caller`)."""
    total = 0
    branch = False
    for n in via:
        r = caller(n)
        if r.count is None:
            return Runs(None, r.how if r.how == _CYCLE else f"called from @{n.graph}, whose runs are unknown")
        total += r.count
        branch |= r.branch or (len(n.called_graphs) > 1 if called else n.op in _SWITCHES)
    what = "call" if called else "binding"  # `Partial(@g, ...)`, `J(@g)`, `Switch(c, @a, @b)`
    how = f"{len(via)} {what}{'s' if len(via) > 1 else ''}" + (", a branch counted as taken" if branch else "")
    return Runs(total, how, branch)


def node_runs(t: NodeFacts, n: Node) -> int | None:
    """The `runs` pass: how many times the node runs in one step, its graph's runs (None: unknown)."""
    return t.get("graph_runs")[n.graph].count
