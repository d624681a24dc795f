"""Ranks of one pipeline stage alike: they run the same program on other data, so they have the same
operators and the same strategies (node ids and group names aside). A difference means a config
or code path that depends on the rank."""
from __future__ import annotations

from collections import Counter, defaultdict

from ..parallel import STRATEGY_KEYS, Strategy
from ..present import rank_list, strategy_text
from .digest import Key, RankDigest, Strategies
from .folder import Folder, reference
from .records import Compared, Finding, Side, Unchecked

_BATCH = 24  # ranks whose details are read in one batch


Profile = tuple[bytes, bytes]  # hashes of a rank's operator counts and strategies (`RankDigest.profile`)


class Stages:
    """The stage check, folded: per stage the ranks of each distinct profile, and the node and
    micro-batch counts of the lowest rank of each (what a finding or a cause headline shows)."""

    def __init__(self) -> None:
        self.profiles: dict[int | None, dict[Profile, list[int]]] = defaultdict(dict)
        self.counts: dict[int, tuple[int, int]] = {}  # lowest rank of a profile -> (nodes, micro batches)

    def add(self, folder: Folder, rank: int, d: RankDigest) -> None:
        if d.stage is None and d.pipeline:
            # pipeline communication but no stage (a pass before step_parallel_end, docs/parallel.md §7):
            # comparing it with ranks of other stages would report every difference between stages
            folder.unchecked.add((4, rank), Unchecked("stage", rank, folder.files[rank], f"rank {rank} has pipeline "
                                                      "Send/Receive but no known stage: not compared with other ranks"))
            return
        ranks = self.profiles[d.stage].setdefault(d.profile, [])
        if ranks and rank > ranks[0]:
            ranks.append(rank)
            return
        if ranks:
            del self.counts[ranks[0]]
        ranks.insert(0, rank)  # the lowest first
        self.counts[rank] = (d.cnodes, len({c.micro for c in d.messages if c.micro is not None}))

    def stages(self) -> list[tuple[int | None, dict[Profile, list[int]]]]:
        """Each stage (None first: ranks without pipeline) with the ranks of each profile."""
        return sorted(self.profiles.items(), key=lambda kv: -1 if kv[0] is None else kv[0])

    def peers(self, folder: Folder) -> Compared:
        """Coverage: ranks with another rank of their stage, out of all ranks."""
        sizes = [sum(map(len, by.values())) for by in self.profiles.values()]
        return Compared(sum(n for n in sizes if n > 1), len(folder.stages))

    def finish(self, folder: Folder) -> None:
        for stage, by in self.stages():
            if sum(map(len, by.values())) < 2:
                continue
            subject = f"stage {stage}" if stage is not None else "all ranks (no pipeline stage)"
            _ops(folder, self, subject, _part(by, 0))
            _strategies(folder, subject, _part(by, 1))

    def micros(self, rank: int) -> int:
        return self.counts[rank][1]


def _part(by: dict[Profile, list[int]], i: int) -> dict[bytes, list[int]]:
    """The ranks of each distinct operator-count hash (0) or strategy hash (1)."""
    out: dict[bytes, list[int]] = defaultdict(list)
    for profile, ranks in by.items():
        out[profile[i]] += ranks
    return out


def _ops(folder: Folder, stages: Stages, subject: str, ops: dict[bytes, list[int]]) -> None:
    """Ranks compared by the hash of their operator counts (`digest.counted`); the counts themselves
    are read again for the two ranks each finding shows."""
    ref, by = reference(ops)
    base = by[ref][0]
    shown = [(by[ref], others) for variant, others in by.items() if variant != ref]
    for i in range(0, len(shown), _BATCH):
        folder.fetch([base] + [others[0] for _, others in shown[i:i + _BATCH]])
        for alike, others in shown[i:i + _BATCH]:
            a, b = folder.details(base).counted, folder.details(others[0]).counted
            ops_ = sorted(op for op in set(a) | set(b) if a[op] != b[op])
            folder.findings.add((3,), Finding("stage", subject, "operator counts differ", [
                _count_side(folder, stages, base, alike, a, ops_),
                _count_side(folder, stages, others[0], others, b, ops_)]))


def _count_side(folder: Folder, stages: Stages, rank: int, alike: list[int], counted: Counter, ops: list[str]) -> Side:
    also = f" (also ranks {rank_list(alike[1:])})" if alike[1:] else ""
    return folder.side(rank, None, f"{stages.counts[rank][0]:,} nodes{also}, communicating "
                       "or sharded: " + ", ".join(f"{op} {counted[op]:,}" for op in ops))


def strategy_differences(a: Strategies, b: Strategies) -> list[tuple[Key, dict[str, Strategy], dict[str, Strategy]]]:
    """Per (scope, operator) where two ranks' strategies differ, the strategies only each side has."""
    out = []
    for key in sorted(set(a.by_scope) | set(b.by_scope)):
        sa, sb = a.by_scope.get(key, {}), b.by_scope.get(key, {})
        if set(sa) == set(sb) or (not sa and a.copy_of(key, sb)) or (not sb and b.copy_of(key, sa)):
            continue
        out.append((key, _own(sa, sb), _own(sb, sa)))
    return out


def _strategies(folder: Folder, subject: str, strategies: dict[bytes, list[int]]) -> None:
    """Ranks compared by the hash of their strategies per scope; the strategies themselves are read
    again for the two ranks each finding shows."""
    ref, by = reference(strategies)
    base = by[ref][0]
    odd = [others for variant, others in by.items() if variant != ref]
    for i in range(0, len(odd), _BATCH):
        folder.fetch([base] + [others[0] for others in odd[i:i + _BATCH]])
        for others in odd[i:i + _BATCH]:
            for key, own_a, own_b in strategy_differences(folder.details(base).strategies,
                                                          folder.details(others[0]).strategies):
                folder.findings.add((3,), Finding("stage", subject, "strategy differs", [
                    _strategy_side(folder, base, by[ref], key, own_a),
                    _strategy_side(folder, others[0], others, key, own_b)]))


def strategy_text_of(found: dict[str, Strategy]) -> str:
    """`in_strategy (2,1)(1,4)` of the strategies at one scope, joined by `; `."""
    return "; ".join(" ".join(f"{k} {strategy_text(getattr(s, k))}" for k in STRATEGY_KEYS
                              if getattr(s, k) is not None) for s in found.values())


def _own(mine: dict[str, Strategy], theirs: dict[str, Strategy]) -> dict[str, Strategy]:
    """The strategies only this side has at a scope (a scope can hold several operators), else all."""
    return {k: v for k, v in mine.items() if k not in theirs} or mine


def _strategy_side(folder: Folder, rank: int, alike: list[int], key: Key, found: dict[str, Strategy]) -> Side:
    also = f" (also ranks {rank_list(alike[1:])})" if alike[1:] else ""
    scope, op = key
    if not found:
        return folder.side(rank, None, f"no {op} with a strategy at {scope}{also}")
    first = min(found.values(), key=lambda s: s.line)
    text = strategy_text_of(found)
    name = f" {first.instance}" if first.instance and first.instance != op else ""
    return folder.side(rank, first.line, f"{op}{name} {text} at {scope}{also}")
