"""Stable identities for matching nodes of two compilations (used by `irtool.diff`).

Nothing here looks at `%N`, `CNode_123` names, unique ids, addresses or file paths: a node is
identified by its normalised scope, its operator and its position among the nodes of the same
(scope, operator) that have the same signature (shapes, category, ...).
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar

from ..parallel.scope import Scope, stable_name

T = TypeVar("T")

_OP_SUFFIX = re.compile(r"-op\d+")


def normalise_scope(scope: str | None) -> str:
    """Scope without the node's own `Op-opN` component and without numeric ids.

    Default-order dumps print `.../fc1-Dense/MatMul-op0` (`Fullname with scope`), sorted-order
    ones `.../fc1-Dense`; both normalise to `.../fc1-Dense`.
    """
    if not scope:
        return ""
    return stable_name(_OP_SUFFIX.sub("-op", Scope(scope).cell))


def normalise_name(name: str | None) -> str | None:
    """An instance name without generated ids: `forward_op_10546112788216059064` (a hash that
    changes per compilation and per pass) -> `forward_op_?`; `fc1` stays."""
    return stable_name(name) if name else name


def match(old: Sequence[T], new: Sequence[T], group: Callable[[T], Hashable],
          signature: Callable[[T], Hashable], order: Callable[[T], Any]) -> tuple[
              list[tuple[T, T]], list[tuple[T, T]], list[T], list[T]]:
    """Match two lists of items.

    Items are grouped by `group` (e.g. stage, scope, operator); inside a group they are sorted by
    `order`, items with equal `signature` are paired first (in order), and the leftovers are
    paired by position. Returns (same, changed, removed, added), each in a deterministic order.
    """
    old_groups: dict[Hashable, list[T]] = defaultdict(list)
    new_groups: dict[Hashable, list[T]] = defaultdict(list)
    for item in old:
        old_groups[group(item)].append(item)
    for item in new:
        new_groups[group(item)].append(item)
    same: list[tuple[T, T]] = []
    changed: list[tuple[T, T]] = []
    removed: list[T] = []
    added: list[T] = []
    keys = list(old_groups) + [k for k in new_groups if k not in old_groups]
    for key in keys:
        olds = sorted(old_groups.get(key, []), key=order)
        news = sorted(new_groups.get(key, []), key=order)
        by_sig: dict[Hashable, list[int]] = defaultdict(list)
        for i, item in enumerate(news):
            by_sig[signature(item)].append(i)
        taken = [False] * len(news)
        rest_old: list[T] = []
        for item in olds:
            slots = by_sig.get(signature(item))
            if slots:
                j = slots.pop(0)
                taken[j] = True
                same.append((item, news[j]))
            else:
                rest_old.append(item)
        rest_new = [item for j, item in enumerate(news) if not taken[j]]
        for a, b in zip(rest_old, rest_new):
            changed.append((a, b))
        removed.extend(rest_old[len(rest_new):])
        added.extend(rest_new[len(rest_old):])
    return same, changed, removed, added


def freeze(value: Any) -> Hashable:
    """A hashable version of a parsed attribute value (lists, dicts, tuples nested)."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(freeze(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


_INDEXED = re.compile(r"^\d+(-|$)|^[A-Za-z_]\w*\.\d+(-|$)")  # a repeated cell's index: `3-Block`, `layers.3`


def _suffix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def align_scopes(old: Iterable[str], new: Iterable[str]) -> dict[str, str]:
    """Old scope -> new scope for scopes renamed by wrapper cells (docs/diff.md "Wrapper cells").

    Building a network through another API adds, drops or renames cells above the network
    (`Default/network-PipelineCell/network-WithLossCell/...` against
    `Default/network-TrainStep/net_with_loss-Pipeline/network-WithLossCell/...`), which changes
    every scope's prefix while the part under the network stays. Each old scope with no exact
    counterpart is paired with the new scopes sharing its last component; each pair votes for
    the prefix rewrite that makes them equal (the old prefix before their common suffix -> the
    new one). Rewrites are tried by votes, most first; one applies to an old scope when its old
    prefix starts the scope and the rewritten scope exists on the new side. A rewrite that adds,
    drops or renames a repeated cell's index (`3-Block`) is never used: that is a real change.
    """
    old_set, new_set = set(old), set(new)
    lonely = sorted(old_set - new_set)
    if not lonely:
        return {}
    by_last: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for s in new_set - old_set:
        parts = tuple(s.split("/"))
        by_last[parts[-1]].append(parts)
    votes: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = defaultdict(int)
    for s in lonely:
        o = tuple(s.split("/"))
        for n in by_last.get(o[-1], []):
            k = _suffix(o, n)
            rule = (o[: len(o) - k], n[: len(n) - k])
            lead = 0
            while lead < min(len(rule[0]), len(rule[1])) and rule[0][lead] == rule[1][lead]:
                lead += 1
            if any(_INDEXED.match(p) for p in rule[0][lead:] + rule[1][lead:]):
                continue
            votes[rule] += 1
    rules = sorted(votes, key=lambda r: (-votes[r], -len(r[0]), r))
    out: dict[str, str] = {}
    for s in lonely:
        o = tuple(s.split("/"))
        for src, dst in rules:
            if o[: len(src)] == src:
                cand = "/".join(dst + o[len(src):])
                if cand in new_set:
                    out[s] = cand
                    break
    return out
