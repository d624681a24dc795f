"""Tables written once and rendered as plain text or Markdown.

A report is a list of `Table`s and text lines. Plain text is the same on a terminal and in a pipe:
columns are aligned and never cut, so names survive `grep`. A table shortened to `limit` rows says
so in a line (`showing 25 of 158 (--all for every row)`); no row is dropped silently.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from ..parallel import format_strategy

DASH = "—"  # an unknown value in text and Markdown


DEFAULT_LIMIT = 25  # rows per table of `summarize` in text and Markdown unless `--all`
ALL_ROWS = "--all for every row"


def cell(value: Any) -> str:
    """A value as people read it: `—` for unknown, `(8, 16)` for shapes (`(128)` for one
    dimension, as the dump prints it), `1,024` for ints."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(str(v) if isinstance(v, int) else cell(v) for v in value) + ")"
    if isinstance(value, dict):
        return ", ".join(f"{k} {cell(v)}" for k, v in value.items()) or DASH
    return str(value)


def _compact(value: Any) -> str:
    """`[[2, 1], -1]` -> `((2,1),-1)`: nested tuples without spaces, a 1-tuple as `(1)`."""
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(_compact(v) for v in value) + ")"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_LAYOUT_SHOWN = {"device_matrix", "tensor_map", "interleaved_parallel", "alias_name"}


def _layout(d: dict[str, Any]) -> str:
    """One tensor layout: `dev (2,2,2) map ((2,1),-1)` (docs/parallel.md §9)."""
    parts = [f"dev {_compact(d.get('device_matrix'))}", f"map {_compact(d.get('tensor_map'))}"]
    if d.get("interleaved_parallel") is True:
        parts.append("interleaved")
    parts += [f"{k} {_compact(v)}" for k, v in d.items() if k not in _LAYOUT_SHOWN]
    return " ".join(parts)


def strategy_text(value: Any) -> str:
    """A strategy as `(2,1)(1,4)` (MindInsight's spelling), a layout as `dev (2,2,2) map ((2,1),-1)`
    per input joined by `; `, `—` for none."""
    if value is None or value == [] or value == ():
        return DASH
    if isinstance(value, dict):
        return _layout(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, dict) for v in value):
        return "; ".join(_layout(v) if isinstance(v, dict) else strategy_text(v) for v in value)
    return format_strategy(value) or DASH


def rank_list(ranks: Any) -> str:
    """`[0, 1, 2, 3, 5, 6]` -> `0-3, 5, 6`: runs of three or more as a range."""
    runs: list[list[int]] = []
    for r in sorted(ranks):
        if runs and runs[-1][-1] == r - 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)


@dataclass
class Table:
    """A titled table of text cells; `total` is the number of rows before `limit` was applied."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    total: int | None = None

    def limited(self, limit: int | None) -> Table:
        """The first `limit` rows (all when None), remembering how many there were."""
        if limit is None or len(self.rows) <= limit:
            return self
        return Table(self.title, self.columns, self.rows[:limit], total=len(self.rows))

    @property
    def note(self) -> str | None:
        if self.total is None:
            return None
        return f"showing {len(self.rows)} of {self.total} ({ALL_ROWS})"


Block = Union[Table, str]


def to_text(blocks: list[Block]) -> str:
    """Plain text: a line per string; a table as a title, a header and aligned rows."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, str):
            out.append(b)
            continue
        if not b.rows:
            continue
        out += ["", b.title]
        widths = [max(len(h), *(len(r[i]) for r in b.rows)) for i, h in enumerate(b.columns)]
        widths[-1] = 0  # the last column is never padded
        for row in [b.columns, ["-" * w if w else "-" * len(b.columns[-1]) for w in widths]] + b.rows:
            out.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if b.note:
            out.append(f"  {b.note}")
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return _no_mention(text).replace("|", "\\|").replace("\n", " ")


def _no_mention(text: str) -> str:
    """`@1972_...` (an entry graph) in a pull-request comment would notify GitHub user 1972: write
    the `@` as an entity, which renders the same."""
    return text.replace("@", "&#64;")


def to_markdown(blocks: list[Block]) -> str:
    """GitHub-flavoured Markdown: strings as paragraphs, tables as pipe tables."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, str):
            out += [_no_mention(b), ""]
            continue
        if not b.rows:
            continue
        out += [f"**{_md(b.title)}**", "", "| " + " | ".join(map(_md, b.columns)) + " |",
                "|" + "---|" * len(b.columns)]
        out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in b.rows]
        if b.note:
            out += ["", f"_{b.note}_"]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
