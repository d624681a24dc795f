"""Ranks of one pipeline stage alike: they run the same program on other data, so they have the same
operators and the same strategies (node ids and group names aside). A difference means a config
or code path that depends on the rank."""
from __future__ import annotations

from collections import Counter, defaultdict

from ..parallel import STRATEGY_KEYS, Strategy
from ..present import rank_list, strategy_text
from .digest import Key, Strategies
from .folder import Folder, variants
from .records import Finding, Side, Unchecked


def stage_findings(folder: Folder) -> tuple[list[Finding], list[Unchecked]]:
    stages, unchecked = stage_ranks(folder)
    out: list[Finding] = []
    for stage, ranks in sorted(stages.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        if len(ranks) < 2:
            continue
        subject = f"stage {stage}" if stage is not None else "all ranks (no pipeline stage)"
        out += _ops(folder, subject, ranks)
        out += _strategies(folder, subject, ranks)
    return out, unchecked


def stage_ranks(folder: Folder) -> tuple[dict[int | None, list[int]], list[Unchecked]]:
    """The ranks of each stage that are compared with each other (all ranks without pipeline)."""
    stages: dict[int | None, list[int]] = defaultdict(list)
    unchecked: list[Unchecked] = []
    for rank, rf in sorted(folder.ranks.items()):
        if rf.stage is None and rf.pipeline:
            # pipeline communication but no stage (a pass before step_parallel_end, docs/parallel.md §7):
            # comparing it with ranks of other stages would report every difference between stages
            unchecked.append(Unchecked("stage", rank, folder.files[rank], f"rank {rank} has pipeline Send/Receive "
                                       "but no known stage: not compared with other ranks"))
        else:
            stages[rf.stage].append(rank)
    return dict(stages), unchecked


def _ops(folder: Folder, subject: str, ranks: list[int]) -> list[Finding]:
    """Ranks compared by the hash of their operator counts (`digest.counted`); the counts themselves
    are read again for the two ranks each finding shows."""
    ref, by = variants({r: folder.ranks[r].profile[0] for r in ranks})
    base = by[ref][0]
    shown = [(by[ref], others) for variant, others in by.items() if variant != ref]
    if shown:
        folder.fetch([base] + [others[0] for _, others in shown])
    out = []
    for alike, others in shown:
        a, b = folder.details(base).counted, folder.details(others[0]).counted
        ops = sorted(op for op in set(a) | set(b) if a[op] != b[op])
        out.append(Finding("stage", subject, "operator counts differ", [
            _count_side(folder, base, alike, a, ops), _count_side(folder, others[0], others, b, ops)]))
    return out


def _count_side(folder: Folder, rank: int, alike: list[int], counted: Counter, ops: list[str]) -> Side:
    also = f" (also ranks {rank_list(alike[1:])})" if alike[1:] else ""
    return folder.side(rank, None, f"{folder.ranks[rank].cnodes:,} nodes{also}, communicating "
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


def _strategies(folder: Folder, subject: str, ranks: list[int]) -> list[Finding]:
    """Ranks compared by the hash of their strategies per scope; the strategies themselves are read
    again for the two ranks each finding shows."""
    ref, by = variants({r: folder.ranks[r].profile[1] for r in ranks})
    base = by[ref][0]
    odd = [others for variant, others in by.items() if variant != ref]
    if odd:
        folder.fetch([base] + [others[0] for others in odd])
    out = []
    for others in odd:
        for key, own_a, own_b in strategy_differences(folder.details(base).strategies,
                                                      folder.details(others[0]).strategies):
            out.append(Finding("stage", subject, "strategy differs", [
                _strategy_side(folder, base, by[ref], key, own_a),
                _strategy_side(folder, others[0], others, key, own_b)]))
    return out


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
