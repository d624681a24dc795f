"""Render a `DiffResult` as text, markdown (a PR comment) or JSON (`irtool.diff/2`).

The verdict first in every format, then the configuration change, then the details: across
configurations the logical comparison (`across`), else one block per rank pair. Text and Markdown
are one list of blocks (`irtool.present`) written two ways. Ranks whose differences are the same
(same stages, same rows) are shown once: `ranks 1-3: same as rank 0`; JSON keeps every rank.
Markdown fits a pull-request comment (`MARKDOWN_LIMIT` characters) and says what it left out.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from ..parallel.records import Bytes
from ..present import Block, Table, bytes_text, cell, change_pct, rank_list, strategy_text
from ..present import to_markdown as blocks_to_markdown
from ..present import to_text as blocks_to_text
from ..present.job import change_text, changes_table
from . import across
from .compare import DEFAULT_FAIL_ON, DiffResult, RankDiff
from .facts import STRATEGY_FIELDS, CommFact
from .records import CommChange, ParamChange, RankSpecific, StrategyChange

DIFF_LIMIT = 200  # rows per table in text and markdown unless `--all`; JSON is never shortened
MARKDOWN_LIMIT = 60_000  # characters of a Markdown answer: a GitHub comment holds 65,536


def document(result: DiffResult, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
             max_comm_bytes_increase: str | None = None, gates: Iterable[str] = ()) -> dict[str, Any]:
    """The documented JSON document (docs/diff.md) as data: the verdict, the failures and the configuration
    first. `gates`: failures of the other gates (`--fail-on memory`, `--max-memory-increase`): the verdict,
    `failed` and `failures` say them too."""
    reasons = result.failures(fail_on, max_comm_bytes_increase) + list(gates)
    d = result.as_dict(fail_on, max_comm_bytes_increase, _verdict(result, reasons))
    d["failed"], d["failures"] = bool(reasons), reasons
    return d


def to_json(result: DiffResult, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
            max_comm_bytes_increase: str | None = None) -> str:
    """`document` as JSON text."""
    return json.dumps(document(result, fail_on, max_comm_bytes_increase), indent=2, sort_keys=False)


def _value(name: str, value: Any) -> str:
    """A compared value for people: strategies and layouts as `(2,1)(1,4)`, the rest by `cell`."""
    return strategy_text(value) if name in STRATEGY_FIELDS else cell(value)


def _comm_changes(e: CommChange) -> str:
    assert e.old is not None and e.new is not None
    return "; ".join(f"{f}: {_value(f, e.old.value(f))} -> {_value(f, e.new.value(f))}" for f in e.fields)


def _rank_changes(e: RankSpecific) -> str:
    return "; ".join(f"{f}: {_value(f, e.old[f])} -> {_value(f, e.new[f])}" for f in e.fields)


def _side_bytes(b: Bytes) -> str:
    """`bytes (nodes)` of one side of a comm_bytes row, bytes as everywhere (`1,024 (+4 unknown)`,
    `—` when no size is known; an unknown size is never added as 0)."""
    return f"{bytes_text(b)} ({b.known + b.unknown})"


def _change(old: Bytes, new: Bytes) -> str:
    """The relative change; unknown (`—`) when a size on either side is."""
    return cell(None) if old.unknown or new.unknown else change_pct(old.total, new.total)





def _peer(side: CommFact) -> str:
    """`peer rank 4 (stage 1)` for a Send/Receive, empty for a collective."""
    rank, stage = side.comm.peer_rank, side.comm.peer_stage
    if rank is None and stage is None:
        return ""
    return f"peer rank {cell(rank)} (stage {cell(stage)})"


def _micro(side: CommFact) -> str:
    return f"micro {side.comm.micro}" if side.comm.micro is not None else ""


def _comm_row(e: CommChange) -> list[str]:
    side = e.side
    if e.change == "changed":
        what = _comm_changes(e)
    else:
        what = (f"group size {cell(side.group_size)}, shape {cell(side.comm.shape)}, "
                f"{cell(side.comm.bytes)} bytes")
    what = "; ".join(x for x in (_micro(side), what, _peer(side)) if x)
    return [e.change, cell(e.stage), e.op, e.category, e.node_scope or e.scope, what]


def _strategy_row(e: StrategyChange) -> list[str]:
    if e.field:
        what = f"{e.field}: {strategy_text(e.old)} -> {strategy_text(e.new)}"
    else:  # added or removed: the values it has
        values = e.old or e.new or {}
        what = "; ".join(f"{k} {strategy_text(v)}" for k, v in values.items() if v is not None) or cell(None)
    if e.micro is not None:
        what = f"micro {e.micro}; {what}"
    return [e.change, cell(e.stage), e.op, e.name or cell(None), e.node_scope or e.scope, what]


def _param_row(e: ParamChange) -> list[str]:
    def side(shape: Any, dtype: str | None) -> str:
        return cell(None) if shape is None and dtype is None else f"{cell(shape)} {dtype or ''}".strip()

    return [e.change, e.name, side(e.old_shape, e.old_dtype), side(e.new_shape, e.new_dtype)]


def _tables(r: RankDiff) -> list[Table]:
    """One table per non-empty section of one rank pair (all rows; shortened when rendered)."""
    return [t for t in [
        Table("Communication nodes", ["change", "stage", "op", "category", "scope", "difference"],
              [_comm_row(e) for e in r.comm]),
        Table("Strategies", ["change", "stage", "op", "name", "scope", "difference"],
              [_strategy_row(e) for e in r.strategy]),
        Table("Operator counts", ["op", "old", "new", "delta"],
              [[e.op, cell(e.old), cell(e.new), f"{e.delta:+,d}"] for e in r.ops]),
        Table("Parameters", ["change", "name", "old", "new"], [_param_row(e) for e in r.params]),
        Table("Communication bytes per stage and category (nodes in brackets)",
              ["stage", "category", "old", "new", "change"],
              [[cell(e.stage), e.category, _side_bytes(e.old), _side_bytes(e.new), _change(e.old, e.new)]
               for e in r.comm_bytes]),
        Table("Gradient / optimizer communication per parameter", ["parameters", "old", "new", "names"],
              [[f"{e.count} parameter(s)", e.old, e.new, ", ".join(e.parameters)]
               for e in r.parameter_comm]),
        Table("Scopes matched through renamed wrapper cells", ["old scopes", "note"],
              [[cell(r.renamed_scopes), "matched by their common suffix under the network (docs/diff.md)"]]
              if r.renamed_scopes else []),
        Table("Rank-specific (expected between two ranks of one stage; not a failure)",
              ["stage", "op", "scope", "difference"],
              [[cell(e.stage), e.op, e.node_scope, _rank_changes(e)] for e in r.rank_specific]),
    ] if t.rows]


def _title(r: RankDiff) -> str:
    """`rank 2 (stage 1) -> rank 2 (stage 1)`; each side's pass too when they differ."""
    passes = r.old_pass != r.new_pass

    def side(rank: int | None, stage: int | None, pass_name: str | None) -> str:
        text = f"rank {rank}" if rank is not None else "dump"
        notes = ([f"stage {stage}"] if stage is not None else []) + ([f"pass {cell(pass_name)}"] if passes else [])
        return text + (f" ({', '.join(notes)})" if notes else "")

    return f"{side(r.old_rank, r.old_stage, r.old_pass)} -> {side(r.new_rank, r.new_stage, r.new_pass)}"


def _grouped(result: DiffResult) -> list[tuple[RankDiff, list[Table], list[int]]]:
    """Each rank pair with its tables and the later ranks whose blocks are the same (same rank on
    both sides, same stages, same rows): those are shown once."""
    out: list[tuple[RankDiff, list[Table], list[int]]] = []
    seen: dict[Any, int] = {}
    for r in result.ranks:
        tables = _tables(r)
        key = (r.old_stage, r.new_stage,
               tuple((t.title, tuple(t.columns), tuple(map(tuple, t.rows))) for t in tables))
        if r.old_rank is not None and r.old_rank == r.new_rank:
            if key in seen:
                out[seen[key]][2].append(r.new_rank)
                continue
            seen[key] = len(out)
        out.append((r, tables, []))
    return out


def _same(r: RankDiff, same: list[int]) -> str:
    return f"{'rank' if len(same) == 1 else 'ranks'} {rank_list(same)}: same as rank {r.new_rank}"


def _verdict(result: DiffResult, reasons: list[str]) -> str:
    lost = _not_read(result)
    if reasons:
        return "FAIL: " + "; ".join(reasons) + (f"; {lost}" if lost else "")
    if lost:  # never "identical": those ranks were not compared
        changed = any(any(v for k, v in r.counts().items() if k != "rank_specific") for r in result.ranks)
        return (("differences found, none matching --fail-on" if changed or result.one_sided
                 else "no differences in the ranks read") + f"; {lost}")
    return "identical" if result.identical else "differences found, none matching --fail-on"


def _not_read(result: DiffResult) -> str:
    """`2 ranks not read, not compared (see Unreadable ranks)`, or empty when every rank was read."""
    n = len(result.unreadable)
    return f"{n} rank{'s' if n != 1 else ''} not read, not compared (see Unreadable ranks)" if n else ""


def _unreadable_table(result: DiffResult) -> list[Block]:
    """The section of ranks that could not be read, each with its located error (issue 18)."""
    rows = [[u.side, cell(u.rank), u.error] for u in result.unreadable]
    return [Table(f"Unreadable ranks: {len(rows)} (not compared)", ["side", "rank", "error"], rows)] if rows else []


def _one_side(result: DiffResult) -> str:
    """`ranks only in old: 4; only in new: —; pipeline stages only in old: 1; only in new: —`, each
    kind said when one side has something the other has not."""
    parts = []
    for what, old, new in (("ranks", rank_list(result.only_old), rank_list(result.only_new)),
                           ("pipeline stages", rank_list(result.only_old_stages), rank_list(result.only_new_stages)),
                           ("passes", ", ".join(result.only_old_passes), ", ".join(result.only_new_passes))):
        if old or new:
            parts.append(f"{what} only in old: {old or cell(None)}; only in new: {new or cell(None)}")
    return "; ".join(parts)


def _job_notes(result: DiffResult) -> list[str]:
    """What a side's job says of itself (`ranks disagree on the number of micro batches: 2, 4`)."""
    return [f"{side} job: {note}" for side, job in (("old", result.old_job), ("new", result.new_job)) if job
            for note in job.notes]


def _config_lines(result: DiffResult) -> list[Block]:
    """The configuration change, one line each (`  micro batches 8 → 4`), under a line saying how the
    two are compared; then what either job says of itself."""
    lines: list[Block] = []
    how = ("so the two are compared as one logical graph (--by-rank: rank with rank)"
           if result.logical is not None else "compared rank with rank")
    model = [c for c in result.config if c.model]
    layout = [c for c in result.config if not c.model]
    if model:  # said first: a FLOPs or weight ratio below is theirs before it is the layout's
        lines += [f"Model and data changed (old → new), not the parallel layout: the figures below change with "
                  f"{'them' if len(model) > 1 else 'it'}" + ("" if layout else f", {how}") + ":",
                  *(f"  {change_text(c)}" for c in model)]
    if layout:
        lines += [f"Configuration changed (old → new), {how}:", *(f"  {change_text(c)}" for c in layout)]
    return lines + _job_notes(result)


def _details(result: DiffResult, limit: int | None) -> list[list[Block]]:
    """The sections after the headline, each a list of blocks: across configurations the logical
    tables; else one section per group of rank pairs with the same differences."""
    if result.logical is not None:
        return [[_limited(b, limit)] for b in across.blocks(result.logical, every=limit is None)]
    out = []
    for r, tables, same in _grouped(result):
        blocks: list[Block] = [f"== {_title(r)}", f"   old: {r.old_path}", f"   new: {r.new_path}"]
        blocks += [t.limited(limit) for t in tables] or ["   no differences"]
        if same:
            blocks.append(f"== {_same(r, same)}")
        out.append(blocks)
    return out


def _limited(b: Block, limit: int | None) -> Block:
    return b.limited(limit) if isinstance(b, Table) else b


def _section(b: Block, limit: int | None) -> tuple[str, list[Block]]:
    """A block as a section of a Markdown answer: (its title, [it])."""
    return (b.title if isinstance(b, Table) else b), [_limited(b, limit)]


def to_text(result: DiffResult, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
            max_comm_bytes_increase: str | None = None, limit: int | None = DIFF_LIMIT, gates: Iterable[str] = (),
            more: Iterable[Block] = ()) -> str:
    """Plain text for a terminal or a CI log: the verdict first (and again last, for a log's tail), the
    configuration change, then the details and `more` (another gate's tables); at most `limit` rows per
    table (None: all). `gates` as `document`."""
    reasons = result.failures(fail_on, max_comm_bytes_increase) + list(gates)
    verdict = _verdict(result, reasons)
    blocks: list[Block] = [verdict, *_config_lines(result)]
    blocks += [_one_side(result)] if result.one_sided else []
    blocks += _unreadable_table(result)
    for section in _details(result, limit):
        blocks += section
    blocks += more
    blocks.append(verdict)
    return blocks_to_text(blocks)


def to_markdown(result: DiffResult, fail_on: Iterable[str] = DEFAULT_FAIL_ON,
                max_comm_bytes_increase: str | None = None, limit: int | None = DIFF_LIMIT,
                room: int = MARKDOWN_LIMIT, gates: Iterable[str] = (), more: Iterable[Block] = ()) -> str:
    """Markdown fit for a pull-request comment: verdict first, the configuration change, then across
    configurations each side per stage and its balance; `more` (another gate's tables: `--cost`'s stage
    memory and FLOPs), then the details (one collapsible block per rank, or per layer and per operator) as
    far as `room` characters allow; what did not fit is named at the end with the command that prints it.
    `gates` as `document`."""
    reasons = result.failures(fail_on, max_comm_bytes_increase) + list(gates)
    icon = ":x:" if reasons or result.unreadable else (":white_check_mark:" if result.identical
                                                       else ":information_source:")
    headline = f"{len(reasons)} failing difference(s)" if reasons else _verdict(result, [])
    items = [f"- **{reason}**" for reason in reasons]
    if result.one_sided:
        items.append(f"- **{_one_side(result)}**")
    if result.unreadable and reasons:  # else the headline says it
        items.append(f"- **{_not_read(result)}**")
    items += [f"- {note}" for note in _job_notes(result)]
    head: list[Block] = [f"### {icon} irtool diff: {headline}"] + (["\n".join(items)] if items else [])
    if result.config:
        table = changes_table(result.config)
        head += [Table(table.title, table.columns[:3], [r[:3] for r in table.rows]),
                 "<details><summary>where each side shows it</summary>", table, "</details>"]
    head += _unreadable_table(result)
    extra = list(more)
    sections: list[tuple[str, list[Block]]] = []
    if result.logical is not None:  # the stages (memory, FLOPs, balance) before any per-layer or per-operator row
        sections += [_section(b, limit) for b in across.stage_blocks(result.logical)]
    if extra:
        sections.append((next((b.title for b in extra if isinstance(b, Table)), ""), extra))
    if result.logical is not None:
        sections += [_section(b, limit) for b in across.detail_blocks(result.logical, every=limit is None)]
    else:
        for r, tables, same in _grouped(result):
            counts = ", ".join(f"{v} {k}" for k, v in r.counts().items() if v) or "no differences"
            blocks = [f"<details{' open' if reasons else ''}><summary><b>{_title(r)}</b>: {counts}</summary>",
                      *(t.limited(limit) for t in tables), "</details>"]
            if same:
                blocks.append(f"**{_same(r, same)}**")
            sections.append((_title(r) + (f" ({_same(r, same)})" if same else ""), blocks))
    return fit_markdown(head, sections, room)


_LEFT_OUT = ("_Left out to fit a pull-request comment ({room:,} characters): {what}. Everything: the same "
             "command with `--format text --all`, or `--format json`._")


def fit_markdown(head: list[Block], sections: list[tuple[str, list[Block]]], room: int) -> str:
    """`head` and then as many whole `sections` (title, blocks) as fit in `room` characters; the first
    that does not fit is cut to the rows that do (a collapsible block stays closed), and what is left
    out is said at the end, by name, with the command that prints everything."""
    out = [blocks_to_markdown(head)]
    used = len(out[0])
    reserve = 400 + sum(len(t) + 2 for t, _ in sections)  # the closing note names what it leaves out
    left: list[str] = []
    for i, (title, blocks) in enumerate(sections):
        text = "\n" + blocks_to_markdown(blocks)
        spare = room - used - min(reserve, room // 4)
        if len(text) <= spare:
            out.append(text)
            used += len(text)
            reserve -= len(title) + 2
            continue
        cut, dropped = _cut(blocks, spare - 1)
        if cut is not None:
            out.append("\n" + cut)
            used += len(cut) + 1
            left.append(f"{dropped} rows of {title}")
        left += [t for t, _ in sections[i + (cut is not None):]]
        break
    if left:
        note = _LEFT_OUT.format(room=room, what="; ".join(left))
        if used + len(note) + 2 > room:  # too many to name: the count
            note = _LEFT_OUT.format(room=room, what=f"{len(left)} sections after the last shown")
        out.append("\n" + blocks_to_markdown([note]))
    return "".join(out)


def _cut(blocks: list[Block], room: int) -> tuple[str | None, int]:
    """`blocks` written with each table cut to the most rows that fit in `room` (at least one), and
    how many rows were left out; None when not even one row of each fits."""
    tables = [b for b in blocks if isinstance(b, Table)]
    if not tables:
        return None, 0
    most = max(len(t.rows) for t in tables)

    def written(k: int) -> str:
        return blocks_to_markdown([_rows(b, k) if isinstance(b, Table) else b for b in blocks])

    lo, hi = 0, most - 1  # k rows per table: the largest that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(written(mid)) <= room:
            lo = mid
        else:
            hi = mid - 1
    if lo < 1 or len(written(lo)) > room:
        return None, 0
    return written(lo), sum(max(0, len(t.rows) - lo) for t in tables)


def _rows(t: Table, k: int) -> Table:
    if len(t.rows) <= k:
        return t
    return Table(t.title, t.columns, t.rows[:k], total=t.total if t.total is not None else len(t.rows))
