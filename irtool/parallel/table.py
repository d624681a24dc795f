"""The fact table of one dump: per-node facts filled by an ordered tuple of passes, each computed when
first asked for (the passes themselves: `irtool.parallel.facts`, docs/parallel.md §17)."""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal

from ..ir import Dump, Node

Level = Literal["dump", "node", "column"]


@dataclass(frozen=True)
class Pass:
    """One analysis pass. `level`: `dump` computes dump facts once (`run(table)` -> one value per
    provided fact); `node` one node's value of its one fact when asked (`run(table, node)`);
    `column` its one fact for every node at once (`run(table)` -> {node: value}, absent = None)."""

    name: str
    provides: tuple[str, ...]
    needs: tuple[str, ...]
    level: Level
    run: Callable[..., Any]


# Check that every pass asks only for the facts it declares (`needs`): on in the test suite
# (tests/conftest.py), off otherwise: the check costs a few microseconds per node and fact.
CHECK = os.environ.get("IRTOOL_CHECK_FACTS") == "1"


class NodeFacts:
    """The fact table of one dump (see the module docstring). `rank` is the global rank the dump is
    of (its `rank_N` folder), which tells a Send/Receive peer printed as a group index (§7)."""

    def __init__(self, dump: Dump, passes: tuple[Pass, ...], rank: int | None = None) -> None:
        self.dump = dump
        self.rank = rank
        self._provider_of = _providers(passes)
        self._values: dict[str, Any] = {}  # dump facts
        self._cells: dict[str, dict[Node, Any]] = {}  # node facts computed so far, by fact
        self._complete: set[str] = set()  # node facts computed for every node (absent = None)
        self._threads = threading.local()  # with CHECK: the passes running in each thread (`irtool view` serves
        # requests in threads that ask one table), innermost last

    # -- asking
    def get(self, fact: str) -> Any:
        """A dump fact."""
        try:
            return self._values[fact]
        except KeyError:
            p = self._provider(fact, "dump")
            values = self._run(p)
            for name, value in zip(p.provides, values if len(p.provides) > 1 else (values,)):
                self._values[name] = value
            return self._values[fact]

    def __call__(self, fact: str, node: Node) -> Any:
        """One node's fact (asked per node on every node of large dumps: the usual path is two lookups)."""
        cells = self._cells.get(fact)
        if cells is not None:
            value = cells.get(node, _MISSING)
            if value is not _MISSING:
                return value
            if fact in self._complete:
                return None
        p = self._provider(fact, None) if CHECK else self._provider_of.get(fact)
        if p is None or p.level == "dump":  # not a node fact: `_provider` says so
            p = self._provider(fact, None)
        if p.level == "column":
            return self.column(fact).get(node)
        value = self._run(p, node) if CHECK else p.run(self, node)
        self._cells.setdefault(fact, {})[node] = value
        return value

    def column(self, fact: str) -> dict[Node, Any]:
        """Every node's fact (for a `column` pass only the nodes it has a value for)."""
        if fact in self._complete:
            return self._cells[fact]
        p = self._provider(fact, None)
        if p.level == "column":
            self._cells[fact] = self._run(p)
            self._complete.add(fact)
            return self._cells[fact]
        if CHECK:
            return {n: self(fact, n) for n in self.dump.nodes()}
        cells, run, out = self._cells.setdefault(fact, {}), p.run, {}
        for n in self.dump.nodes():  # `__call__`'s work without its call per node
            value = cells.get(n, _MISSING)
            if value is _MISSING:
                value = cells[n] = run(self, n)
            out[n] = value
        return out

    def of(self, fact: str, nodes: Iterable[Node]) -> list[Any]:
        return [self(fact, n) for n in nodes]

    # -- running
    @property
    def _running(self) -> list[Pass]:
        running = getattr(self._threads, "running", None)
        if running is None:
            running = self._threads.running = []
        return running

    def _provider(self, fact: str, level: Level | None) -> Pass:
        p = self._provider_of.get(fact)
        if p is None:
            raise KeyError(f"no pass provides {fact!r}; facts: {', '.join(sorted(self._provider_of))}")
        if (level == "dump") != (p.level == "dump"):
            raise KeyError(f"{fact} is a fact of {'each node' if level == 'dump' else 'the dump'}")
        if CHECK and self._running and fact not in self._running[-1].needs + self._running[-1].provides:
            raise KeyError(f"pass {self._running[-1].name!r} asked for {fact!r}, which it does not declare")
        return p

    def _run(self, p: Pass, *args: Any) -> Any:
        if not CHECK:
            return p.run(self, *args)
        self._running.append(p)
        try:
            return p.run(self, *args)
        finally:
            self._running.pop()


_MISSING = object()
_PROVIDERS: dict[int, dict[str, Pass]] = {}


def _providers(passes: tuple[Pass, ...]) -> dict[str, Pass]:
    """fact -> the one pass providing it; a fact provided twice, or needed before any pass provides it,
    is a programming error caught here."""
    found = _PROVIDERS.get(id(passes))
    if found is None:
        found = {}
        for p in passes:
            for need in p.needs:
                if need not in found and need not in p.provides:
                    raise KeyError(f"pass {p.name!r} needs {need!r}, which no earlier pass provides")
            for fact in p.provides:
                if fact in found:
                    raise KeyError(f"{fact!r} is provided by both {found[fact].name!r} and {p.name!r}")
                found[fact] = p
        _PROVIDERS[id(passes)] = found
    return found
