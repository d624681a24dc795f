"""Tables written once and rendered as plain text or Markdown.

A report is a list of `Table`s and text lines. Plain text never cuts a name: in a pipe (the default)
columns are aligned and each cell stays on one line, so names survive `grep`; for a terminal the CLI
sets its width (`set_text_width`) and long cells wrap inside their column after `/`, `;` or a space
(a name with none of them stays whole on its own line), lines at a space. A table shortened to
`limit` rows says so in a line (`showing 25 of 158 (--all for every row)`); no row is dropped silently.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Union

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


@dataclass
class Code:
    """Lines to paste somewhere else (a YAML snippet): plain text keeps them as they are, indented and
    never wrapped; Markdown fences them (```yaml)."""

    lang: str
    text: str


Block = Union[Table, str, Code]


_width: int | None = None  # the terminal's columns when output goes to one (set by the CLI), else None


def set_text_width(width: int | None) -> None:
    """Plain text for a terminal of `width` columns (None: a pipe, every cell on one line)."""
    global _width
    _width = width if width is None else max(width, 40)


_BREAK = re.compile(r"(?<=[/;])|(?<= )")  # after a separator: `a/b` -> `a/`, `b` (never inside `1,024`)


def wrap_cell(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken only after `/`, `;` or a space; a
    piece longer than `width` stays whole (never cut)."""
    if len(text) <= width:
        return [text]
    lines = [""]
    for piece in (p for p in _BREAK.split(text) if p):
        if lines[-1] and len(lines[-1]) + len(piece.rstrip()) > width:
            lines[-1] = lines[-1].rstrip()
            lines.append("")
        lines[-1] += piece.lstrip(" ") if not lines[-1] else piece
    return [ln.rstrip() for ln in lines]


def _longest_piece(text: str) -> int:
    return max((len(p.strip()) for p in _BREAK.split(text) if p.strip()), default=0)


def _fit(widths: list[int], floors: list[int], room: int) -> list[int]:
    """Narrow the widest columns, one character at a time, until they fit `room` or reach their floor."""
    widths = list(widths)
    while sum(widths) > room:
        wide = [i for i, w in enumerate(widths) if w > floors[i]]
        if not wide:
            break
        i = max(wide, key=lambda k: widths[k])
        widths[i] -= 1
    return widths


def _table_lines(b: Table, width: int | None) -> list[str]:
    rows = [b.columns] + b.rows
    widths = [max(len(r[i]) for r in rows) for i in range(len(b.columns))]
    if width is not None:
        # a column is never narrower than its longest unbreakable piece (names are never cut)
        floors = [min(w, max(_longest_piece(r[i]) for r in rows)) for i, w in enumerate(widths)]
        room = width - 2 - 2 * (len(widths) - 1)
        if sum(floors) > room:
            return _record_lines(b, width)
        widths = _fit(widths, floors, room)
    out: list[str] = []
    for n, row in enumerate(rows):
        cells = [wrap_cell(c, w) if width is not None else [c] for c, w in zip(row, widths)]
        for k in range(max(len(c) for c in cells)):
            parts = [(c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths)]
            out.append(("  " + "  ".join(parts)).rstrip())
        if n == 0:  # the rule under the header; the last column's as long as its header (it is never padded)
            rule = widths[:-1] + [max(map(len, cells[-1]))]
            out.append("  " + "  ".join("-" * w for w in rule))
    return out


def _record_lines(b: Table, width: int) -> list[str]:
    """A table too wide for the terminal even with every column wrapped: one block per row, a
    `column: value` line per cell (values wrapped), so nothing is cut."""
    out: list[str] = []
    for row in b.rows:
        out.append("  " + "-" * min(width - 2, 20))
        for h, c in zip(b.columns, row):
            lines = wrap_cell(c, width - 6 - len(h))
            out.append(f"  {h}: {lines[0]}")
            out += [" " * (4 + len(h)) + ln for ln in lines[1:]]
    return out


def to_text(blocks: list[Block], width: int | None = None) -> str:
    """Plain text: a line per string; a table as a title, a header and aligned rows. `width`
    (default: the one `set_text_width` set) wraps long cells and lines to fit."""
    width = width if width is not None else _width
    out: list[str] = []
    for b in blocks:
        if isinstance(b, str):
            out += _wrap_line(b, width)
            continue
        if isinstance(b, Code):
            out += ["    " + ln if ln else "" for ln in b.text.splitlines()]
            continue
        if not b.rows:
            continue
        out += ["", *_wrap_line(b.title, width)]
        out += _table_lines(b, width)
        if b.note:
            out.append(f"  {b.note}")
    return "\n".join(out) + "\n"


def text_pieces(blocks: Iterable[Block], width: int | None = None) -> Iterator[str]:
    """`to_text` a block at a time, for a report too large to hold as one string (the same text)."""
    for b in blocks:
        if isinstance(b, (str, Code)) or b.rows:
            yield to_text([b], width)


def markdown_pieces(blocks: Iterable[Block]) -> Iterator[str]:
    """`to_markdown` a block at a time (the same text)."""
    first = True
    for b in blocks:
        if isinstance(b, (str, Code)) or b.rows:
            yield ("" if first else "\n") + to_markdown([b])
            first = False


def _wrap_line(text: str, width: int | None) -> list[str]:
    if width is None or len(text) <= width:
        return [text]
    indent = text[: len(text) - len(text.lstrip(" "))]
    return textwrap.wrap(text, width, subsequent_indent=indent + "  ", break_long_words=False,
                         break_on_hyphens=False) or [text]


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
        if isinstance(b, Code):
            out += [f"```{b.lang}", b.text.rstrip("\n"), "```", ""]
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
