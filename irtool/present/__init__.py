"""Presentation shared by every command: values as text (`text`), tables as plain text or
Markdown (`tables`), and the colour palette (`palette`). It reads analysis records and knows no
command; the commands (summarize, render, diff, check, view) import it, never one another."""
from __future__ import annotations

from .palette import CATEGORY_COLORS, CATEGORY_SHAPES, DIFF_COLORS
from .tables import (
    ALL_ROWS,
    DEFAULT_LIMIT,
    Block,
    Code,
    Table,
    markdown_pieces,
    set_text_width,
    text_pieces,
    to_markdown,
    to_text,
)
from .text import (
    DASH,
    Records,
    bytes_text,
    cell,
    chain_end_layout,
    change_pct,
    format_strategy,
    json_pieces,
    literal_text,
    moved,
    parse_bytes,
    rank_list,
    shape_text,
    strategy_text,
    type_text,
)

__all__ = ["CATEGORY_COLORS", "CATEGORY_SHAPES", "DIFF_COLORS", "ALL_ROWS", "DEFAULT_LIMIT", "Block", "Code", "Table",
           "set_text_width", "to_markdown", "to_text", "text_pieces", "markdown_pieces", "DASH", "bytes_text", "cell",
           "chain_end_layout", "change_pct", "parse_bytes", "format_strategy", "json_pieces", "Records",
           "rank_list", "strategy_text", "literal_text", "moved", "shape_text", "type_text"]
