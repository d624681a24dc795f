"""Cross-rank consistency of a dump folder (`irtool check DIR`): what makes a distributed job hang,
found in the compiled graphs before it runs. Each check is a pure function over the ranks' facts
(`dumpdir.rank_facts`) returning typed findings; docs/check.md says what each one compares."""
from __future__ import annotations

from typing import Callable

from ..dumpdir import Progress, RankFacts, map_ranks
from ..selection import Policy, Selection
from .causes import causes, coverage
from .collectives import collective_findings
from .digest import RankDetails, RankDigest, details, of_facts, rank_details, rank_digest
from .folder import Folder
from .groups import group_findings
from .p2p import p2p_findings
from .records import CHECK_TITLES, CHECKS, Cause, CheckResult, Coverage, Finding, RankEntry, Side, Unchecked
from .stage import stage_findings

__all__ = ["check_dir", "check_ranks", "check_digests", "Cause", "CheckResult", "Coverage", "Finding", "Side",
           "Unchecked", "CHECKS", "CHECK_TITLES"]


def check_ranks(path: str, facts: list[RankFacts], pass_name: str = "validate") -> CheckResult:
    """Every check over the analysed ranks of the folder at `path`."""
    by_rank = {f.rank: f for f in facts}
    return check_digests(path, [of_facts(f) for f in facts], lambda ranks: [details(by_rank[r].facts) for r in ranks],
                         pass_name)


def check_digests(path: str, digests: list[RankDigest], load: Callable[[list[int]], list[RankDetails]],
                  pass_name: str = "validate") -> CheckResult:
    """Every check over the ranks' digests of the folder at `path`; `load` reads some ranks' details."""
    folder = Folder.of(path, digests, load)
    result = CheckResult(path, pass_name, [RankEntry(f.rank, folder.files.get(f.rank, f.path), f.stage)
                                           for f in digests])
    for f in digests:
        if f.rank is None:
            result.unchecked.append(Unchecked("p2p", None, f.path, "the rank is unknown (not in a rank_N folder): "
                                                                   "this file is left out of every check"))
    for found in (p2p_findings(folder), collective_findings(folder), group_findings(folder), stage_findings(folder)):
        result.findings += found[0]
        result.unchecked += found[1]
    result.causes = causes(folder, result.findings)
    result.coverage = coverage(folder)
    return result


def check_dir(sel: str | Selection, pass_name: str | None = None, jobs: int | None = None,
              scheduler: str | None = None, progress: Progress | None = None) -> CheckResult:
    """Analyse every rank of the CLI's selection (or of a path with this pass, in `jobs` processes or
    on the Dask cluster at `scheduler`) into its digest, then check; the ranks whose digests differ
    are read again for their details. A rank whose dump does not parse raises its DumpError (a
    partial selection records it in `sel.unreadable`): a check over part of a dump proves nothing."""
    if not isinstance(sel, Selection):
        sel = Selection.of(sel, None, pass_name, Policy(jobs, scheduler))
    digests = sel.analysed(progress, of=rank_digest)
    files = {f.rank: f for f in sel.rank_files}
    return check_digests(sel.path, digests, lambda ranks: map_ranks(rank_details, [files[r] for r in ranks],
                                                                    sel.policy.jobs, None, sel.policy.scheduler),
                         sel.pass_name)
