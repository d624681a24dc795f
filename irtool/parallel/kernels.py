"""What only a kernel graph shows (the `stream` and `kernels` facts, docs/parallel.md §17): the order the
device runs its kernels in, the stream each runs on (compute, or a communication stream that overlaps it),
and, per kernel, the front-end scope and source line behind it.

A kernel graph (`graph_build_*`, `hwopt_*`, `task_emit`: the `kernel` fact) is one flat `@kernel_graphN`
printed in the execution order the backend set: its kernels are its compute and communication nodes in
print order (the plumbing, `Depend`, `Load`, `MakeTuple`, ..., launches nothing). A later pass may still
move a kernel (stream assignment inserts its `StreamSend`/`StreamRecv` and can shift a Send a few places:
dryrun_llama_dp2mp2pp2 rank 0's `execute_order.csv` against graph_build_0). Each kernel prints the stream it
is launched on (`stream_id` among its primitive attributes); a stream launching only communication kernels is
a communication stream.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .chains import user_source

if TYPE_CHECKING:
    from ..ir import Node
    from .table import NodeFacts

StreamKind = Literal["compute", "communication"]


@dataclass
class Stream:
    """One stream of a kernel graph: what it launches."""

    id: int
    kind: StreamKind
    kernels: int = 0
    ops: Counter = field(default_factory=Counter)  # op -> kernels of it

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "kernels": self.kernels,
                "ops": dict(sorted(self.ops.items(), key=lambda kv: (-kv[1], kv[0])))}


@dataclass(frozen=True)
class Kernel:
    """One kernel in the order the device runs them (1: the first) and what is behind it."""

    index: int
    node: str  # uid
    line: int
    op: str
    stream: int | None
    micro: int | None
    phase: str
    scope: str | None  # the front-end scope it was compiled from (`# Fullname with scope`)
    source: str | None  # the user's line (`# In file`)

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class Kernels:
    """A kernel graph's kernels in execution order and its streams."""

    graph: str
    order: list[Node]  # compute and communication nodes, in the order the device runs them
    streams: list[Stream]  # by id
    no_stream: int  # kernels printing no stream
    # the communication kernels with their place in the order (every kernel would be thousands of rows: when
    # communication runs against compute is what a reader asks)
    communication: list[Kernel] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"graph": self.graph, "kernels": len(self.order), "no_stream": self.no_stream,
                "streams": [s.as_dict() for s in self.streams], "communication": [k.as_dict() for k in self.communication]}


def stream_of(t: NodeFacts, n: Node) -> int | None:
    """The `stream` pass: the stream a kernel is launched on (`stream_id`), None when it prints none."""
    if not n.mentions("stream_id"):
        return None
    v = n.primitive_attrs.get("stream_id")
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def kernels(t: NodeFacts) -> Kernels | None:
    """The `kernels` pass (module docstring); None for a dump that is no kernel graph."""
    if not t.get("kernel"):
        return None
    graph = next((g for g in t.dump.subgraphs if g.name == t.dump.entry), None)
    if graph is None:
        return None
    order = [n for n in graph.nodes if t("kind", n) in ("compute", "communication")]
    streams: dict[int, Stream] = {}
    comm: dict[int, bool] = {}
    missing = 0
    for n in order:
        s = t("stream", n)
        if s is None:
            missing += 1
            continue
        e = streams.setdefault(s, Stream(s, "compute"))
        e.kernels += 1
        e.ops[n.op] += 1
        comm[s] = comm.get(s, True) and t("kind", n) == "communication"
    for s, e in streams.items():
        e.kind = "communication" if comm[s] else "compute"
    micro = t.column("micro")
    calls = [Kernel(i, n.uid, n.line, n.op, t("stream", n), micro.get(n), t("phase", n), n.scope, user_source(n))
             for i, n in enumerate(order, 1) if t("kind", n) == "communication"]
    return Kernels(graph.name, order, [streams[k] for k in sorted(streams)], missing, calls)
