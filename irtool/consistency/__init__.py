"""Cross-rank consistency of a dump folder (`irtool check DIR`): what makes a distributed job hang,
found in the compiled graphs before it runs. Each check folds the ranks' digests one by one
(`digest.rank_digest`, in rank order as workers finish them) and returns typed findings at the end;
docs/check.md says what each one compares."""
from __future__ import annotations

from functools import partial
from typing import Callable, Iterable

from ..dumpdir import Progress, RankFacts, RankFile, Unreadable, iter_ranks
from ..selection import Policy, Selection
from .causes import causes
from .collectives import Collectives
from .digest import RankDetails, RankDigest, details, of_facts, rank_details, rank_digest
from .folder import Folder
from .groups import Membership
from .p2p import Pairing
from .records import CHECK_TITLES, CHECKS, Cause, CheckResult, Coverage, Finding, RankEntry, Side, Unchecked
from .stage import Stages

__all__ = ["check_dir", "check_ranks", "check_digests", "Cause", "CheckResult", "Coverage", "Finding", "Side",
           "Unchecked", "CHECKS", "CHECK_TITLES"]


def check_ranks(path: str, facts: list[RankFacts], pass_name: str = "validate") -> CheckResult:
    """Every check over the analysed ranks of the folder at `path`."""
    by_rank = {f.rank: f for f in facts}
    return check_digests(path, map(of_facts, facts), lambda ranks: [details(by_rank[r].facts) for r in ranks],
                         pass_name)


def check_digests(path: str, digests: Iterable[RankDigest], load: Callable[[list[int]], list[RankDetails]],
                  pass_name: str = "validate", unreadable: list[Unreadable] | None = None) -> CheckResult:
    """Every check over the ranks' digests of the folder at `path`, folded as they come (in rank
    order); `load` reads some ranks' details again. No digest is kept. `unreadable`: the ranks the
    folder holds that were not read (filled while `digests` is read: a partial selection's list)."""
    unreadable = unreadable if unreadable is not None else []
    folder = Folder.of(path, load, unreadable)
    pairing, collectives, membership, stages = Pairing(), Collectives(), Membership(), Stages()
    result = CheckResult(path, pass_name, unreadable=unreadable)
    for d in digests:
        if d.rank is None:
            result.ranks.append(RankEntry(None, d.path, d.stage))
            folder.unchecked.add((0, len(result.ranks)), Unchecked(
                "p2p", None, d.path, "the rank is unknown (not in a rank_N folder): this file is left out of every check"))
            continue
        folder.arrive(d.rank, d.path, d.stage)
        result.ranks.append(RankEntry(d.rank, folder.files[d.rank], d.stage))
        pairing.add(folder, d)
        collectives.add(d.rank, d)
        membership.add(folder, d.rank, d)
        stages.add(folder, d.rank, d)
    pairs = pairing.finish(folder)
    groups = collectives.finish(folder)
    membership.finish(folder)
    stages.finish(folder)
    result.findings = folder.findings.drain(pairing.keeps)
    result.unchecked = folder.unchecked.drain()
    result.causes = causes(folder, stages, result.findings)
    result.coverage = Coverage(pairs, groups, stages.peers(folder))
    return result


def check_dir(sel: str | Selection, pass_name: str | None = None, jobs: int | None = None,
              scheduler: str | None = None, progress: Progress | None = None) -> CheckResult:
    """Analyse every rank of the CLI's selection (or of a path with this pass, in `jobs` processes or
    on the Dask cluster at `scheduler`) into its digest, folded into the checks as it comes; the ranks
    whose digests differ are read again for their details. A rank whose dump does not parse raises
    its DumpError (a partial selection records it in `sel.unreadable`): a check over part of a dump
    proves nothing; the result says which ranks were not read (`unreadable`) and which dump files
    were ignored."""
    if not isinstance(sel, Selection):
        sel = Selection.of(sel, None, pass_name, Policy(jobs, scheduler))
    read = partial(rank_details, lenient=sel.policy.lenient)
    result = check_digests(sel.path, sel.stream(progress, of=rank_digest),
                           lambda ranks: list(iter_ranks(read, [RankFile(r, sel.files[r]) for r in ranks],
                                                         sel.policy.jobs, None, sel.policy.scheduler)),
                           sel.pass_name, sel.unreadable)
    result.ignored = sel.ignored
    return result

