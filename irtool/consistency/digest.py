"""What `check` takes from each rank: a digest small enough to send between processes, which the
main process folds into the checks as it arrives and lets go (bench/check_bench.py). Workers read a
rank and return its `RankDigest`: the Send/Receive as small records (the p2p check pairs every one of them), the first
node on each group, and hashes of what ranks are compared on (each group's collective sequence, a
stage's operator counts and strategies). Where hashes differ, the details of only the ranks
involved are read again (`rank_details`) to locate and tell the difference."""
from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple

from ..dumpdir import RankFacts, RankFile
from ..ir import DumpWarning
from ..parallel import CommNode, ParallelFacts, Strategy, analyze
from ..parallel.rules import P2P


class Message(NamedTuple):
    """One communication node as check tells and pairs it (the fields `folder.describe` prints)."""

    op: str
    reduce_op: str | None
    micro: int | None
    sr_tag: int | None
    shape: Any
    dtype: str | None
    direction: str | None
    peer_rank: int | None
    line: int
    at: int = 0  # a Send/Receive's place in the rank's execution order (`run_order`); 0 for other nodes

    @classmethod
    def of(cls, c: CommNode, at: int = 0) -> Message:
        return cls(c.op, c.reduce_op, c.micro, c.sr_tag, c.shape, c.dtype, c.direction, c.peer_rank, c.line, at)


def signature(c: CommNode | Message) -> tuple:
    """What every member of a group must issue alike, collective by collective."""
    return (c.op, c.reduce_op, c.shape, c.dtype)


Key = tuple[str, str]  # (scope, op)


@dataclass
class Strategies:
    """One rank's strategies: per node scope and operator the distinct strategies (first node of
    each), and every (operator, strategy) the rank has anywhere."""

    by_scope: dict[Key, dict[str, Strategy]]
    anywhere: set[tuple[str, str]]

    @classmethod
    def of(cls, strategies: Iterable[Strategy]) -> Strategies:
        by_scope: dict[Key, dict[str, Strategy]] = defaultdict(dict)
        for s in strategies:
            by_scope[(s.scope, s.op)].setdefault(s.signature(), s)
        return cls(dict(by_scope), {(op, sig) for (_, op), sigs in by_scope.items() for sig in sigs})

    def copy_of(self, key: Key, sigs: dict[str, Strategy]) -> bool:
        """A node only one side has is a copy (another micro batch's) when the other side has the
        same operator with the same strategy elsewhere; the operator counts tell the rest."""
        return all((key[1], sig) in self.anywhere for sig in sigs)


class GroupUse(NamedTuple):
    """One rank's use of a group: its first node there, the member ranks every collective on it
    names (None without collectives), and the hash and length of its collective sequence."""

    first: Message
    members: tuple[int, ...] | None  # group_ranks of `first`
    collective_members: tuple[int, ...] | None
    collectives: bytes | None
    count: int


@dataclass
class RankDigest:
    rank: int | None
    path: str
    stage: int | None
    cnodes: int
    pipeline: bool  # has pipeline communication (a stage is expected)
    messages: list[Message]  # Send/Receive, in dump order
    groups: dict[str, GroupUse]
    profile: tuple[bytes, bytes]  # hashes of the operator counts and of the strategies (stage.profile)
    warnings: list[DumpWarning] = field(default_factory=list)  # what `--lenient` skipped while reading
    # the relative order of a link's Sends (Receives) is compared: after step_parallel_end (docs/parallel.md §1),
    # when MindSpore has chained the micro batches; earlier passes leave it open (docs/check.md, docs/cost.md §4)
    ordered: bool = True
    placed: int | None = 0  # the stage a selection files it under (`StageInfo.placed`): None unknown, never 0


@dataclass
class RankDetails:
    """What the digest only hashes, read again for a rank that differs."""

    counted: Counter
    strategies: Strategies
    collectives: dict[str, list[Message]]


def _hash(value: Any) -> bytes:
    """A hash that is the same in every process (Python's `hash` of a str is not)."""
    return hashlib.blake2b(repr(value).encode(), digest_size=16).digest()


def counted(facts: ParallelFacts) -> Counter:
    """Per operator, the nodes that communicate or carry a strategy. Other local computation may
    depend on the rank's place (causal sequence parallelism: flash_sp_sendrecv_8p's ranks 0 and 2
    differ in 86 elementwise nodes and run the same plan), so it is not compared."""
    nodes = {c.node: c.op for c in facts.comm}
    nodes.update((s.node, s.op) for s in facts.strategies)
    return Counter(nodes.values())


def run_order(facts: ParallelFacts) -> dict[str, int]:
    """Each Send/Receive's place in the order the rank runs them: the pipeline hops in the `order` fact's order
    (`StageOrder.hops`, placed by their units and dependencies, never by where they are printed), the others after
    them in print order. Without the dump (facts released), print order."""
    hops = [c.node for c in facts.comm if c.direction is not None]
    if facts.table is None or facts.kind != "post" or not any(c.category == "pipeline" for c in facts.comm):
        return {node: i for i, node in enumerate(hops)}
    placed = [c.node for c in facts.table.get("order").hops]
    out = {node: i for i, node in enumerate(placed)}
    for node in hops:
        out.setdefault(node, len(out))
    return out


def digest(rank: int | None, path: str, cnodes: int, facts: ParallelFacts, at: dict[str, int] | None = None) -> RankDigest:
    first: dict[str, CommNode] = {}
    seqs: dict[str, list[tuple]] = defaultdict(list)
    members: dict[str, set[int]] = defaultdict(set)
    for c in facts.comm:
        if c.group is None:
            continue
        first.setdefault(c.group, c)
        if c.op not in P2P:
            seqs[c.group].append(signature(c))
            members[c.group].update(c.group_ranks or ())
    groups = {g: GroupUse(Message.of(c), c.group_ranks,
                          tuple(sorted(members[g])) if g in seqs else None,
                          _hash(seqs[g]) if g in seqs else None, len(seqs.get(g, ())))
              for g, c in first.items()}
    table = Strategies.of(facts.strategies)
    shape = sorted((k, sorted(v)) for k, v in table.by_scope.items())
    return RankDigest(rank, path, facts.stage, cnodes, any(c.category == "pipeline" for c in facts.comm),
                      [Message.of(c, at.get(c.node, i) if at else i)
                       for i, c in enumerate(c for c in facts.comm if c.direction is not None)], groups,
                      (_hash(sorted(counted(facts).items())), _hash(shape)), ordered=facts.kind == "post",
                      placed=facts.stage_info.placed)


def details(facts: ParallelFacts) -> RankDetails:
    seqs: dict[str, list[Message]] = defaultdict(list)
    for c in facts.comm:
        if c.group is not None and c.op not in P2P:
            seqs[c.group].append(Message.of(c))
    return RankDetails(counted(facts), Strategies.of(facts.strategies), dict(seqs))


def rank_digest(rank: RankFile, lenient: bool = False, deep: bool = False) -> RankDigest:
    """Read and analyse one rank, keep its digest (runs in a worker process; `deep` is for
    `Selection.stream`'s signature: check reports no warnings)."""
    dump = rank.load(lenient)
    facts = analyze(dump, rank.rank)
    d = digest(rank.rank, rank.path, dump.counts.get("cnodes", 0), facts, run_order(facts))
    facts.release()
    d.warnings = list(dump.warnings)
    return d


def rank_details(rank: RankFile, lenient: bool = False) -> RankDetails:
    """Read and analyse one rank again, for the details its digest only hashes (runs in a worker)."""
    return details(analyze(rank.load(lenient), rank.rank).release())


def of_facts(rf: RankFacts) -> RankDigest:
    return digest(rf.rank, rf.path, rf.counts.get("cnodes", 0), rf.facts)
