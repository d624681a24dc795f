"""`analyze(dump) -> ParallelFacts`: communication nodes, groups, strategies and stage of one dump.

Rules are documented in docs/parallel.md (section numbers in comments refer to it). The dump is
only read: facts and warnings are returned, and the caller keeps them as long as it needs them.
"""
from __future__ import annotations

from functools import partial

from ..ir import Dump, DumpWarning
from .chains import redistribution_chains
from .facts import node_facts
from .peer import rank_of
from .records import ParallelFacts


def analyze(dump: Dump, rank: int | None = None) -> ParallelFacts:
    """The parallel facts of `dump` (docs/parallel.md) on `rank` (default: the `rank_N` folder of
    its path), which tells a Send/Receive peer printed as a group index from a global rank (§7).
    Every fact comes from the dump's fact table (`facts.NodeFacts`), kept on the result as `table`."""
    t = node_facts(dump, rank if rank is not None else rank_of(dump.path or ""))
    records = t.column("comm")
    silent = t.get("silent")
    comm = [c for n, c in records.items() if n not in silent]
    no_ops = [c for n, c in records.items() if n in silent]
    warnings = [DumpWarning(n.line, f"attributes of {n.key} kept as raw text ({n.unreadable_attrs.reason}): "
                                    "its classification may be incomplete")
                for n in records if n.unreadable_attrs is not None]
    return ParallelFacts(kind=t.get("file_kind"), comm=comm, groups=t.get("groups"),
                         strategies=list(t.column("strategy").values()), stage_info=t.get("stage_info"),
                         warnings=warnings, no_op_gathers=no_ops, table=t,
                         _make_chains=partial(redistribution_chains, t))
