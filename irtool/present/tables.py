"""Tables written once and rendered as plain text or Markdown.

A report is a list of `Table`s and text lines. Plain text is the same on a terminal and in a pipe:
columns are aligned and never cut, so names survive `grep`. A table shortened to `limit` rows says
so in a line (`showing 25 of 158 (--all for every row)`); no row is dropped silently.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

DEFAULT_LIMIT = 25  # rows per table of `summarize` in text and Markdown unless `--all`
ALL_ROWS = "--all for every row"


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
