"""Load `grammar/mindir.lark` and build the two parsers it defines.

The document parser reads one token per line (see `irtool.ir.parse.LineLexer`); the line parser
reads the inside of node, type, signature and parameter lines. Both are LALR: an Earley parser
would be far too slow for dumps of hundreds of megabytes.
"""
from __future__ import annotations

import functools
from pathlib import Path

from lark import Lark

from ..errors import InputError

LINE_STARTS = ["node_stmt", "node_tail", "type_sig", "graph_sig", "param_decl", "value"]


def grammar_path() -> Path:
    """The grammar file: bundled in the wheel, or `grammar/` of a source checkout."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_grammar" / "mindir.lark", package.parent / "grammar" / "mindir.lark"):
        if candidate.is_file():
            return candidate
    raise InputError("grammar/mindir.lark is missing from the installation")


@functools.cache
def grammar_text() -> str:
    return grammar_path().read_text(encoding="utf-8")


@functools.cache
def line_parser() -> Lark:
    """LALR parser for the inside of lines (node statements, types, signatures, values)."""
    return Lark(grammar_text(), parser="lalr", lexer="contextual", start=LINE_STARTS,
                propagate_positions=False, maybe_placeholders=True, cache=True)


@functools.cache
def document_parser(lexer_class: type, transformer) -> Lark:
    """LALR parser for the line structure of a dump; `lexer_class` yields one token per line."""
    return Lark(grammar_text(), parser="lalr", lexer=lexer_class, start="dump",
                transformer=transformer, maybe_placeholders=False, cache=True)


@functools.cache
def transforming_parser(start: str, transformer: object) -> Lark:
    """LALR parser for one line-level start symbol that calls `transformer` as it reduces, so no
    parse tree is built (a third faster than parsing then transforming)."""
    return Lark(grammar_text(), parser="lalr", lexer="contextual", start=start,
                transformer=transformer, maybe_placeholders=True, cache=True)
