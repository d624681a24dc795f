"""Point-to-point pairing: every Send on rank r to rank p has a Receive on p from r with the same
tag (`sr_tag`), micro batch, shape and dtype, in the same relative order, and the other way round.
A Send whose Receive is missing (or that waits on a different shape) hangs both ranks.

The pairing itself is analysis' (`irtool.parallel.pairs`, the one every command uses), folded rank
by rank: a link's Sends and Receives are held until both its ends have arrived, then paired,
compared and let go."""
from __future__ import annotations

from collections import defaultdict

from ..parallel.pairs import LinkPairs, PairFold
from ..present import cell
from .digest import Message, RankDigest
from .folder import Folder, describe
from .records import Amount, Carried, Compared, Finding, Unchecked

ORDER = "order differs"  # the finding dropped when some rank's pass does not fix the order


def _amount(nodes: list[Message]) -> Amount | None:
    if not nodes:
        return None
    micros = {c.micro for c in nodes if c.micro is not None}
    shapes = ", ".join(dict.fromkeys(cell(c.shape) for c in nodes)) or cell(None)
    return Amount(len(micros), "micro batches", shapes) if micros else Amount(len(nodes), "messages", shapes)


class Pairing:
    """The p2p check, folded: `add` each rank (in rank order), then `finish`."""

    def __init__(self) -> None:
        self.fold: PairFold[Message] = PairFold()
        self.ordered = True
        self.compared = False  # some link had both ends here
        self.paired = 0  # per link, the larger of its Send and Receive counts (coverage)
        self.reported_no_peer = 0

    def add(self, folder: Folder, d: RankDigest) -> None:
        rank = d.rank
        assert rank is not None
        self.ordered &= d.ordered
        for lp in self.fold.add(rank, d.messages):
            self.compared = True
            self.paired += max(len(lp.sends), len(lp.receives))
            carried = Carried(_amount(lp.sends), _amount(lp.receives))
            for i, f in enumerate(_link(folder, lp)):
                f.carried = carried
                folder.findings.add((0, *lp.link, i, f.problem == ORDER), f)
        for r, c in self.fold.no_peer[self.reported_no_peer:]:
            folder.unchecked.add((1, 0, self.reported_no_peer), Unchecked(
                "p2p", r, f"{folder.files[r]}:{c.line}", f"{describe(c)}: the dump names no peer rank"))
            self.reported_no_peer += 1

    def finish(self, folder: Folder) -> Compared:
        """What was left unpaired (peers not in the folder or unreadable) and the coverage of pairs; the order
        findings go when some rank's pass prints Sends and Receives unordered (`ordered_only`)."""
        outside: dict[tuple[int, str, int], int] = defaultdict(int)
        for (src, dst), (sends, receives) in self.fold.pending().items():
            if sends:
                outside[(src, "send", dst)] += len(sends)
            if receives:
                outside[(dst, "receive", src)] += len(receives)
        for i, ((rank, direction, peer), n) in enumerate(sorted(outside.items())):
            verb = "sends to" if direction == "send" else "receives from"
            what = "Send" if direction == "send" else "Receive"
            folder.unchecked.add((1, 1, i), Unchecked(  # the peer not in the folder, or there but unreadable
                "p2p", rank, folder.files[rank],
                f"rank {rank} {verb} rank {peer}, which is {folder.not_read(peer)} ({n} {what})"))
        if not self.ordered and self.compared:
            folder.unchecked.add((1, 2), Unchecked(
                "p2p", None, "every rank", "the order of Sends and Receives is not compared: this pass "
                                           "prints them before MindSpore fixes the execution order"))
        paired, unpaired = self.paired, sum(outside.values()) + len(self.fold.no_peer)
        self.fold = PairFold()
        return Compared(paired, paired + unpaired)

    def keeps(self, key: tuple) -> bool:
        """Whether a finding staged under `key` stays: an order finding only when every pass ordered."""
        return key[0] != 0 or self.ordered or not key[-1]


def _link(folder: Folder, lp: LinkPairs[Message]) -> list[Finding]:
    """Compare a link's pairs (analysis' pairing: by tag, in dump order within a tag)."""
    src, dst = lp.link
    subject = f"rank {src} -> rank {dst}"
    out: list[Finding] = [Finding("p2p", subject, "Send without Receive", [
        folder.node_side(src, s), folder.side(dst, None, f"no Receive from rank {src}{_tag_micro(s)}")])
        for s in lp.lone_sends]
    for s, r in lp.pairs:
        differ = [name for name in ("micro", "shape", "dtype") if getattr(s, name) != getattr(r, name)]
        if differ:
            out.append(Finding("p2p", subject, f"{' and '.join(differ)} differ{'s' if len(differ) == 1 else ''}",
                               [folder.node_side(src, s), folder.node_side(dst, r)]))
    out += [Finding("p2p", subject, "Receive without Send", [
        folder.side(src, None, f"no Send to rank {dst}{_tag_micro(r)}"), folder.node_side(dst, r)])
        for r in lp.lone_receives]
    # Relative order: Receives taken in the order the sending rank runs its Sends must run in that order too (each
    # rank's execution order, `digest.run_order`: the `order` fact's, never where the nodes are printed).
    pairs = sorted(lp.pairs, key=lambda p: p[0].at)
    for (s0, r0), (s1, r1) in zip(pairs, pairs[1:]):
        if r1.at < r0.at:
            out.append(Finding("p2p", subject, ORDER, [
                folder.node_side(src, s0, " before"), folder.node_side(src, s1),
                folder.node_side(dst, r1, " before"), folder.node_side(dst, r0)]))
            break
    return out


def _tag_micro(c: Message) -> str:
    parts = ([f" with tag {c.sr_tag}"] if c.sr_tag is not None else []) + \
            ([f" for micro {c.micro}"] if c.micro is not None else [])
    return "".join(parts)
