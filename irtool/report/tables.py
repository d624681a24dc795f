"""Tables written once and rendered as plain text or Markdown.

A report is a list of `Table`s and text lines. Plain text is the same on a terminal and in a pipe:
columns are aligned and never cut, so names survive `grep`. A table shortened to `limit` rows says
so in a line (`showing 25 of 158 (--all for every row)`); no row is dropped silently.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

DASH = "—"  # an unknown value in text and Markdown


def cell(value: Any) -> str:
    """A value as people read it: `—` for unknown, `(8, 16)` for shapes, `1,024` for ints."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):  # a shape or tuple: `(8, 16)`, `(4,)`
        inner = ", ".join(str(v) if isinstance(v, int) else cell(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return str(value)


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
        return f"showing {len(self.rows)} of {self.total} (--all for every row)"


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
            out.append(f"  ({b.note})")
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list[Block]) -> str:
    """GitHub-flavoured Markdown: strings as paragraphs, tables as pipe tables."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, str):
            out += [b, ""]
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
