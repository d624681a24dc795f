"""Read a dump into the model in one streaming pass.

Every line becomes one token (its kind found by the whole-line terminals of the grammar); the
LALR document parser checks the line structure and, as it reduces, the `Builder` turns tokens into
model objects. The text comes in chunks of whole lines (`source.read_chunks`); nothing holds the
whole text, and what recurs (`# In file` and type lines, callees) is kept once.

Most of a dump is node blocks of one usual form (a statement line, its type line, its scope, its
source lines). The lexer matches such a block whole with one regex built from the grammar's
terminals (`_block_regex`) and builds its Node at once, checking its brackets by counting in C;
consecutive ones go to the parser as one token. Anything else, including every statement the
checks would refuse, goes line by line, where the errors are located; both paths give the same
model, warnings and errors.

`load` is reentrant: the parser and the `Builder` are shared and hold no state; what one load
collects (its path, lenient mode, warnings) lives in its `_Lines`, which every token points to.
"""
from __future__ import annotations

import functools
import os
import re
import sys
import time
from typing import Any, Callable, Iterator, TypeVar

from lark import Token, Transformer
from lark.exceptions import UnexpectedInput, VisitError
from lark.lexer import Lexer

from ..errors import DumpError, show
from . import kept
from .failure import failure_of
from .grammar import document_parser, grammar_text
from .kept import Kept
from .model import Dump, Marker, Node, Param, Subgraph, SymbolEngine, SymbolLine
from .records import CALL, PRIMFUNC_PREFIX, DumpWarning
from .source import NulAt, nul_error, read_chunks
from .values import scan_args, terminal

# Lines carry no structure past their first characters, so a node line longer than this is
# refused rather than scanned (see README, "Limits and guarantees").
MAX_LINE = 64 * 1024 * 1024

# How the messages name line kinds; the keys are the grammar's terminals.
LINE_NAMES = {
    "ENTRY_LINE": "'# IR entry: @...'", "TOTAL_SUBGRAPHS_LINE": "'# Total subgraphs: N'",
    "JIT_CONFIG_OPEN_LINE": "'jit config {'", "ATTRS_HEAD_LINE": "'# Attrs:'",
    "TOTAL_PARAMS_LINE": "'# Total params: N'", "PARAMS_HEAD_LINE": "'# Params:'",
    "PARAM_LINE": "a parameter line '%paraN_name: <type>'",
    "NODE_COUNT_HEAD_LINE": "'Node counting information:'",
    "TOTAL_NODES_LINE": "'Total number of nodes: N'", "TOTAL_CNODES_LINE": "'Total number of cnodes: N'",
    "GRAPH_ATTR_HEAD_LINE": "'subgraph attr:'", "GRAPH_INSTANCE_LINE": "'subgraph instance: ...'",
    "PARAMETERS_LINE": "'# Parameters: N, (...)'", "GRAPH_OPEN_LINE": "'subgraph @name(...) {'",
    "NODE_BLOCK": "a node line '  %N(name) = Op(...)'", "RETURN_BLOCK": "'  Return(...)'",
    "TYPE_LINE": "a type line ': (...) -> (...)'", "SCOPE_LINE": "a scope line",
    "SOURCE_LINE": "a '# In file' line", "SIDE_EFFECT_LINE": "'# SideEffect: ...'",
    "CANDIDATE_LINE": "'# Corresponding ... candidate:'", "CLOSE_LINE": "'}'",
    "ORDER_HEAD_LINE": "'# Order:'", "ORDER_LINE": "an order line", "KV_LINE": "an attribute line 'key: value'",
    "GRAPH_SYMBOL_ENGINE_LINE": "'subgraph symbol engine: ...'", "SYMBOLS_HEAD_LINE": "'symbol engine details:'",
    "SYMBOL_ENGINE_OPEN_LINE": "'SymbolEngine_<graph> {'", "SYMBOL_LINE": "a symbol line 's1<...> = Op(...)'",
    "FAILURE_BLOCK": "an analyze_fail banner '# ====...'", "MARKER_LINE": "a marker '#------------------------> N'",
    "UNKNOWN_LINE": "a line", "$END": "end of file",
}


@functools.cache
def _line_terminals() -> dict[str, str]:
    """The whole-line terminals of the grammar (name -> regex), in the order the grammar lists them."""
    return dict(re.findall(r"^([A-Z_]+_LINE)\s*:\s*/(.*)/\s*$", grammar_text(), flags=re.M))


@functools.cache
def _line_regex() -> re.Pattern[str]:
    """All whole-line terminals of the grammar, in the order the grammar lists them."""
    return re.compile("|".join(f"(?P<{name}>{regex})" for name, regex in _line_terminals().items()))


@functools.cache
def _block_regex() -> re.Pattern[str]:
    """A node block in its usual form, matched in one call on the text (the fast path of the
    lexer): a NODE_LINE whose head is `node_stmt`'s (as `_head_regex`, callee a name, graph or
    node followed by `(`) and whose arguments and tail hold no stray character and only strings
    without brackets, quotes or escapes inside, ending `)` or `}`; then its TYPE_LINEs, at most
    one SCOPE_LINE, then SOURCE, SIDE_EFFECT and CANDIDATE lines; then a line that surely ends
    the block (node, Return, `}`). Anything else (blank or unknown lines among them, several
    scopes, other orders, statements over several lines, anything the Builder would refuse) does
    not match and is read line by line, so both paths give the same tokens. Terminals ending
    `.*` are cut there in the lookahead: on one line `.*` always matches."""
    t = _line_terminals()
    free, plain = f"[^\"'\\n{_STRAY_CHARS}]*", r"[^\"'\\\n()\[\]{}]*"
    head = (rf"  ({terminal('NODE_REF')})(?:\(({terminal('DEBUG_NAME')})\))? = (?:call )?"
            rf"({terminal('GRAPH_REF')}|{terminal('NODE_REF')}|{terminal('NAME')})\(")
    args = rf"({free}(?:(?:\"{plain}\"|'{plain}'){free})*)(?<=[)}}])\n"
    rest = "|".join(t[k] for k in ("SOURCE_LINE", "SIDE_EFFECT_LINE", "CANDIDATE_LINE"))
    info = rf"((?:{t['TYPE_LINE']}\n)*)(?:({t['SCOPE_LINE']})\n)?((?:(?:{rest})\n)*)"
    ends = "|".join(t[k].removesuffix(".*") + ("" if t[k].endswith(".*") else r"\n")
                    for k in ("NODE_LINE", "RETURN_LINE", "CLOSE_LINE"))
    return re.compile(f"{head}{args}{info}(?={ends})")


class _Cursor:
    """Where one load is in the text: the chunk being read (whole lines, each ended by `\n`),
    the offset of the next line in it, how many lines were read, and how many bytes of the file
    the chunks read so far were decoded from (`size`)."""

    __slots__ = ("path", "chunks", "chunk", "pos", "number", "size", "last", "progress")

    def __init__(self, path: str, chunks: Iterator[tuple[int, str | NulAt]],
                 progress: Callable[[int], None] | None = None) -> None:
        self.path, self.chunks, self.progress = path, chunks, progress
        self.chunk, self.pos, self.number, self.size, self.last = "", 0, 0, 0, 0

    def line(self) -> tuple[int, str] | None:
        """The next line and its number, or None at the end of the text."""
        chunk, pos = self.chunk, self.pos
        if pos >= len(chunk):
            item = next(self.chunks, None)
            if item is None:
                return None
            size, chunk = item  # type: ignore[assignment]
            if isinstance(chunk, NulAt):
                raise nul_error(self.path, self.number + 1, chunk)
            self.chunk, pos = chunk, 0
            self.size += size
            if self.progress is not None:
                self.progress(self.size)
        end = chunk.index("\n", pos)
        self.last, self.pos = pos, end + 1
        self.number += 1
        return self.number, chunk[pos:end]

    def unread(self) -> None:
        """Step back over the line just read (always in the current chunk)."""
        self.pos = self.last
        self.number -= 1


class _Lines:
    """One load: the text handed to the parser (`cursor`; `lines` yields it line by line), where
    it is (for error messages), and the warnings found so far. Every token carries it, so the
    shared Builder needs no state."""

    def __init__(self, path: str, cursor: _Cursor, lenient: bool) -> None:
        self.path, self.cursor, self.lenient = path, cursor, lenient
        self.lines: Iterator[tuple[int, str]] = iter(cursor.line, None)
        self.open_graph: tuple[str, int] | None = None
        self.warnings: list[DumpWarning] = []

    @property
    def last_line(self) -> int:
        return self.cursor.number

    @property
    def size(self) -> int:
        return self.cursor.size

    def warn(self, line: int, message: str) -> None:
        self.warnings.append(DumpWarning(line, message))


_BLOCK_OF = {"NODE_LINE": "NODE_BLOCK", "RETURN_LINE": "RETURN_BLOCK"}
_INFO_KINDS = frozenset({"TYPE_LINE", "SCOPE_LINE", "SOURCE_LINE", "SIDE_EFFECT_LINE", "CANDIDATE_LINE",
                         "UNKNOWN_LINE"})
# Lines under a node that the lexer hands over stripped and interned (they recur), and how many
# distinct ones (or runs of them) one load remembers.
_REPEATED_KINDS = frozenset({"TYPE_LINE", "SOURCE_LINE"})
_KNOWN_LINES = 1 << 16


class LineToken(Token):
    """A token of one line; `src` is the load it belongs to. `joins`, set only on a line whose
    value goes on over the following lines (`_VALUE_KINDS`), holds (offset in the text, line number)
    of each line that continues it."""

    __slots__ = ("src", "joins")


class BlockToken(LineToken):
    """A NODE_BLOCK / RETURN_BLOCK token: its text is the statement (several lines joined by line
    breaks when its brackets span them); `sources` and `types` are its source and type lines
    (stripped, interned), `others` the other lines printed under it as (line terminal, text, line
    number); `joins` as on a `LineToken`, for a statement printed over several lines, and `cut` the
    error of one whose brackets never closed (reported by the Builder with `lenient`)."""

    __slots__ = ("sources", "types", "others", "cut")


class BuiltToken(LineToken):
    """Consecutive NODE_BLOCKs the lexer's fast path read whole, as one token (the grammar takes
    them one after another wherever it takes one): `nodes` are their Nodes, built already; its
    text is the first one's line."""

    __slots__ = ("nodes",)


# Line kinds that cannot continue a statement whose brackets are still open: where one is met the
# statement was cut (a truncated or hostile file), and it is reported at its own line.
_STOP_KINDS = frozenset({"NODE_LINE", "RETURN_LINE", "TYPE_LINE", "SCOPE_LINE", "SOURCE_LINE", "CLOSE_LINE",
                         "GRAPH_OPEN_LINE", "GRAPH_ATTR_HEAD_LINE", "GRAPH_INSTANCE_LINE", "ORDER_HEAD_LINE",
                         "ORDER_LINE"})
# Inside a string only lines with MindSpore's own prefixes stop it (a string may hold a `}` line).
_STOP_IN_STRING = frozenset({"NODE_LINE", "RETURN_LINE", "SCOPE_LINE", "SOURCE_LINE", "GRAPH_OPEN_LINE"})
_STATEMENT_HEAD = re.compile(r"  %\d+(?:\([^\s()]*\))? = ")  # what precedes the callee (the debug name may hold `[`)
# Line kinds besides statements whose text holds values, which go on over the following lines as a
# statement's do when their brackets are left open: an `# Order:` entry prints the values of its
# node's inputs (a wrapped tensor constant; a string, printed without quotes, with its line breaks),
# an attribute line its value, a parameter line or `# Parameters:` its types, a symbol line shapes.
# (Type lines print no values: `<Tensor[Float32], (), value=...>`.) Their strings are not quoted, so
# a quote opens a string only where it closes on its own line, and a bracket left open with no line of
# unknown kind after it is taken as part of such a string (`_Brackets.raw`, `_continued`).
_VALUE_KINDS = frozenset({"ORDER_LINE", "KV_LINE", "PARAM_LINE", "PARAMETERS_LINE", "SYMBOL_LINE"})


class _Memo:
    """What recurs between the node blocks of one load, kept once: callees (with their
    operator), runs of type lines, runs of source/side-effect/candidate lines (as sources and
    notes). Equal tuples and strings are then one object, shared by the nodes."""

    __slots__ = ("callees", "types", "rests")

    def __init__(self) -> None:
        self.callees: dict[str, tuple[str, str]] = {}
        self.types: dict[str, tuple[str, ...]] = {}
        self.rests: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def callee(self, callee: str) -> tuple[str, str]:
        found = self.callees.get(callee)
        if found is None:
            op = _op_of(callee)
            found = self.callees[callee] = (sys.intern(callee), sys.intern(op))
        return found

    def type_run(self, run: str) -> tuple[str, ...]:
        found = self.types.get(run)
        if found is None:
            found = tuple(sys.intern(line.strip()) for line in run.split("\n")[:-1])
            if len(self.types) < _KNOWN_LINES:
                self.types[run] = found
        return found

    def rest_run(self, run: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        found = self.rests.get(run)
        if found is None:
            match = _line_regex().fullmatch
            sources, notes = [], []
            for line in run.split("\n")[:-1]:
                m = match(line)
                (sources if m and m.lastgroup == "SOURCE_LINE" else notes).append(sys.intern(line.strip()))
            found = (tuple(sources), tuple(notes))
            if len(self.rests) < _KNOWN_LINES:
                self.rests[run] = found
        return found


class LineLexer(Lexer):
    """Lark lexer that turns each non-blank line into one token of its whole-line terminal; a node
    statement and the lines under it become one block token. A node block in its usual form is
    matched whole by one regex and built into its Node at once (`_block_regex`); everything else
    goes line by line."""

    def __init__(self, lexer_conf: Any) -> None:
        pass

    def lex(self, data: _Lines, *_: Any) -> Iterator[Token]:  # type: ignore[override]
        match = _line_regex().fullmatch
        fast = _block_regex().match
        cur = data.cursor
        memo = _Memo()
        intern = sys.intern
        # Source and type lines repeat (a 68 MB dump: 107 distinct source lines among 306 k, 6 k
        # type lines among 42 k): their kind and stripped, interned text are looked up, not matched.
        known: dict[str, tuple[str, str]] = {}
        block: BlockToken | None = None
        run: list[Node] = []  # nodes read by the fast path, not yet handed over
        callees, type_runs, rest_runs = memo.callees, memo.types, memo.rests
        while True:
            chunk, pos, number = cur.chunk, cur.pos, cur.number
            count = chunk.count
            while (m := fast(chunk, pos)) is not None:
                start, end = m.span(4)  # the text after the argument list's `(`
                after = m.end()
                ref, callee, types, scope, rest = m.group(1, 3, 5, 6, 7)  # the debug name is read from the text
                if not (count("(", start, end) + 1 == count(")", start, end)
                        and count("[", start, end) == count("]", start, end)
                        and count("{", start, end) == count("}", start, end)
                        and len(ref) <= MAX_DIGITS + 1 and after - pos <= MAX_LINE):
                    break  # the line-by-line path reports it
                if block is not None:
                    yield block
                    block = None
                number += 1
                if not run:
                    first = chunk[pos:end]
                    built = str.__new__(BuiltToken, first)  # not Token(): its keyword handling costs more
                    built.type, built.value, built.line, built.column, built.src = "NODE_BLOCK", first, number, 1, data
                    built.start_pos = built.end_line = built.end_column = built.end_pos = None
                    built.nodes = run
                callee, op = callees.get(callee) or memo.callee(callee)
                scope = _scope_of(scope) if scope else None
                sources, notes = (rest_runs.get(rest) or memo.rest_run(rest)) if rest else ((), ())
                types = (type_runs.get(types) or memo.type_run(types)) if types else ()
                run.append(Node("", int(ref[1:]), callee, op, chunk[pos + 2:end], start - pos - 2, number,
                                types, scope, sources, notes))
                number += len(types) + (scope is not None) + len(sources) + len(notes)  # the lines under it
                pos = after
            cur.pos, cur.number = pos, number
            if run:  # handed over before the next line is read: `lenient` resumes after them
                yield built
                run = []
            read = cur.line()
            if read is None:
                break
            number, text = read
            seen = known.get(text)
            if seen is not None:
                kind, value = seen
            else:
                if not text or text.isspace():
                    continue
                if len(text) > MAX_LINE:
                    raise _too_long(data.path, number, len(text))
                m = match(text)
                kind = m.lastgroup if m else "UNKNOWN_LINE"
                value = text
                if kind in _REPEATED_KINDS:
                    value = intern(text.strip())
                    if len(known) < _KNOWN_LINES:
                        known[text] = (kind, value)
            if block is not None:
                if kind == "SOURCE_LINE":
                    block.sources.append(value)
                    continue
                if kind in _INFO_KINDS:
                    if kind == "TYPE_LINE":
                        block.types.append(value)
                    else:
                        block.others.append((kind, value, number))
                    continue
                # The line that ends the block is read again after it: if the parser refuses the
                # block, `lenient` resumes with a new `lex` and that line is not lost.
                cur.unread()
                yield block
                block = None
                continue
            if kind == "FAILURE_LINE":
                yield _failure_block(text, number, data)
                continue
            if kind in _BLOCK_OF:
                block = BlockToken(_BLOCK_OF[kind], text, line=number, column=1)
                block.sources, block.types, block.others, block.src = [], [], [], data
                # A complete statement ends with `)` or `}` (grammar: `node_stmt`); only a line
                # that does not, or holds an odd number of quotes, is scanned for open brackets.
                if text[-1] not in ")}" or text.count('"') & 1:
                    opened = _Brackets.after_head(text, kind, number)
                    if opened is not None:  # brackets or a string go on to the next lines
                        block, block.cut = _continued(block, opened, data)
                continue
            if kind == "GRAPH_OPEN_LINE":
                data.open_graph = (text, number)
                if text.rstrip().endswith("("):  # 2.0 and before: one parameter a line, then `    ) {`
                    text = _signature_lines(text, data)
            elif kind == "CLOSE_LINE":
                data.open_graph = None
            tok = LineToken(kind, text, line=number, column=1)
            tok.src = data
            if kind in _VALUE_KINDS and (opened := _Brackets.left_open(text, number)) is not None:
                tok, cut = _continued(tok, opened, data)
                if cut is not None:  # `lenient`: the line is skipped, as a bad node is
                    data.warn(number, f"skipped: {cut}")
                    continue
            yield tok
        if block is not None:
            yield block
        if run:
            yield built


_SIGNATURE_END = re.compile(r"\s*\) *\{ *")


def _signature_lines(text: str, data: _Lines) -> str:
    """A subgraph signature printed one parameter a line (`subgraph @g(` / `        %para1_x : <...>` /
    `        , %para2_y : <...>` / `    ) {`), its lines joined by line breaks; it ends at the `) {` line or
    before the first line of a known kind (then the signature is refused where it is read)."""
    return _joined(text, data, lambda kind: kind != "UNKNOWN_LINE", _SIGNATURE_END)


# The lines that end a failure log (grammar: `failure_log`): the IR begins there.
_IR_STARTS = frozenset({"ENTRY_LINE", "GRAPH_ATTR_HEAD_LINE", "GRAPH_INSTANCE_LINE", "GRAPH_OPEN_LINE"})


def _failure_block(text: str, number: int, data: _Lines) -> LineToken:
    """An analyze_fail.ir banner and the lines after it up to the IR (or the end of the file), as one
    FAILURE_BLOCK token whose text is those lines joined by line breaks: the log quotes the user's code."""
    tok = LineToken("FAILURE_BLOCK", _joined(text, data, _IR_STARTS.__contains__).rstrip("\n"), line=number,
                    column=1)
    tok.src = data
    return tok


def _joined(text: str, data: _Lines, stops: Callable[[str], bool], last: re.Pattern[str] | None = None) -> str:
    """`text` and the lines after it, joined by line breaks, up to the first line whose kind `stops`
    (read again after) or through the first line `last` matches."""
    match = _line_regex().fullmatch
    parts = [text]
    for _number, line in data.lines:
        m = match(line)
        if m is not None and stops(m.lastgroup or ""):
            data.cursor.unread()
            break
        parts.append(line)
        if last is not None and last.fullmatch(line):
            break
    return "\n".join(parts)


_Tok = TypeVar("_Tok", bound=LineToken)


def _continued(tok: _Tok, opened: _Brackets, data: _Lines) -> tuple[_Tok, DumpError | None]:
    """Join the lines that follow a statement or value line left unbalanced (numpy wraps tensor
    constants, strings may hold line breaks) until its brackets balance, by line breaks, so that
    offsets in the text still name a line and column. Returns the joined token (of the same class
    and kind), and the error of one that was cut: a located error at its own line, raised unless
    `lenient`. The line that showed the cut is read again.

    A value line (`opened.raw`) goes on only over lines of no known kind, not blank; where such a
    line does not follow it, the bracket left open is in one of its unquoted strings and the line
    is complete as printed."""
    parts, joins = [str(tok)], []
    size = len(parts[0])
    match = _line_regex().fullmatch
    found = "end of file"
    for number, text in data.lines:
        m = match(text)
        kind = m.lastgroup if m else "UNKNOWN_LINE"
        if kind in (_STOP_KINDS if opened.quote is None else _STOP_IN_STRING) or (
                opened.raw and (kind != "UNKNOWN_LINE" or not text.strip())):
            found = f"{LINE_NAMES[kind]} {show(text)} at line {number}"
            data.cursor.unread()
            break
        size += len(text) + 1
        if size > MAX_LINE:
            raise _too_long(data.path, tok.line, size)
        joins.append((size - len(text), number))
        parts.append(text)
        if opened.feed(text, number):
            found = ""
            break
    if opened.raw and not joins:
        return tok, None
    joined = type(tok)(tok.type, "\n".join(parts), line=tok.line, column=1)
    joined.src, joined.joins = data, tuple(joins)
    if isinstance(joined, BlockToken):
        joined.sources, joined.types, joined.others = [], [], []
    if not found:
        return joined, None
    cut = DumpError(data.path, tok.line, opened.first_col(tok.line), *opened.unclosed(found))
    if not data.lenient:
        raise cut
    return joined, cut


def _too_long(path: str, line: int, size: int) -> DumpError:
    return DumpError(path, line, 1, f"a line shorter than {MAX_LINE} characters", f"{size} characters")


class Builder(Transformer):
    """Reductions of the document grammar -> model objects (called while parsing). Stateless:
    warnings go to the load (`tok.src`) of the token that caused them."""

    # --- header parts: (key, value) pairs gathered by `dump`
    def entry_line(self, items: list) -> tuple:
        return ("entry", items[0].split("@", 1)[1].strip())

    def total_subgraphs(self, items: list) -> tuple:
        return ("subgraphs", (_int_after_colon(items[0]), items[0].startswith("# Total subgraph:")))

    def jit_config(self, items: list) -> tuple:
        return ("jit_config", dict(i[1] for i in items if isinstance(i, tuple) and i[0] == "kv"))

    def dump_attrs(self, items: list) -> tuple:
        return ("attrs", dict(i[1] for i in items[1:]))

    def total_params(self, items: list) -> tuple:
        # before 2.3 the parameter lines follow `#Total params  : N` directly
        return ("declared_params", _int_after_colon(items[0]), items[1:])

    def params(self, items: list) -> tuple:
        return ("params", items[1:])

    def param_line(self, items: list) -> Param:
        tok = items[0]
        m = _param_regex().fullmatch(tok)
        if not m:
            return self._bad(tok, 1, "a parameter line '%paraN_name: <type>'", show(str(tok)),
                             Param(ref=str(tok).split(":")[0], line=tok.line, rest=str(tok)))
        return Param(ref=m.group(1), line=tok.line, type_text=m.group(2), rest=(m.group(3) or "").strip())

    def node_count_head(self, items: list) -> tuple:
        return ("node_count_head", None)

    def total_nodes(self, items: list) -> tuple:
        return ("declared_nodes", _int_after_colon(items[0]))

    def total_cnodes(self, items: list) -> tuple:
        return ("declared_cnodes", _int_after_colon(items[0]))

    def kv_line(self, items: list) -> tuple:
        key, _, value = str(items[0]).partition(":")
        return ("kv", (key.strip(), value.strip()), items[0])

    # --- things printed before a subgraph
    def graph_attr_head(self, items: list) -> tuple:
        return ("attr_head", None)

    def graph_instance(self, items: list) -> tuple:
        return ("instance", _named_value(items[0]))

    def graph_symbol_engine(self, items: list) -> tuple:
        return ("symbol_engine", _named_value(items[0]))

    def graph_parameters(self, items: list) -> tuple:
        return ("raw", str(items[0]))

    def side_effect(self, items: list) -> tuple:
        return ("raw", str(items[0]).strip())

    def source_line(self, items: list) -> tuple:
        return ("source", sys.intern(str(items[0]).strip()))

    def unknown_line(self, items: list) -> tuple:
        tok = items[0]
        _unknown(tok.src, tok.line, str(tok))
        return ("raw", str(tok))

    # --- a subgraph
    def graph_section(self, items: list) -> Subgraph:
        opener = items[0]
        m = _graph_regex().fullmatch(opener)
        if m:
            name, parent = m.group(1)[1:], (m.group(2)[1:] if m.group(2) else None)
            params = _param_ref_regex().findall(m.group(3))
        else:
            self._bad(opener, 1, "'subgraph @name(%para...) {'", show(str(opener)), None)
            name, parent, params = str(opener)[len("subgraph @"):].split("(")[0].strip(), None, []
        g = Subgraph(name=name, line=opener.line, params=params, parent=parent)
        marked: tuple[int, int] | None = None  # a marker waiting for the node printed after it
        for item in items[1:-1]:
            if isinstance(item, (Node, list)):
                run = [item] if isinstance(item, Node) else item  # a list: a run of nodes (BuiltToken)
                for node in run:
                    node.graph = name
                if marked is not None and run:
                    g.markers.append(Marker(marked[0], marked[1], run[0]))
                    marked = None
                g.nodes.extend(run)
            elif item is not None and item[0] == "marker":
                if marked is not None:
                    g.markers.append(Marker(marked[0], marked[1], None))
                marked = item[1]
            elif item is not None:  # an unknown or `key: value` line among the nodes, kept raw
                text = item[1] if item[0] == "raw" else f"{item[1][0]}: {item[1][1]}"
                g.body_notes.append(text)
                if item[0] == "kv":  # unknown lines were reported as they were read
                    _unknown(item[2].src, item[2].line, text)
        if marked is not None:
            g.markers.append(Marker(marked[0], marked[1], None))
        return g

    def node(self, items: list) -> Node | list[Node] | None:
        tok = items[0]
        if type(tok) is BuiltToken:
            return tok.nodes
        text = str(tok)[2:]
        notes, scope = [], None
        for kind, line, number in tok.others:
            if kind == "SCOPE_LINE" and scope is None:
                scope = _scope_of(line)
            else:
                if kind == "UNKNOWN_LINE":
                    _unknown(tok.src, number, line)
                notes.append(line.strip())
        if tok.type == "RETURN_BLOCK":  # `Return(`; before 2.1 `Primitive::Return{prim_type=1}(`
            nid, callee, op, start = None, "Return", "Return", text.index("(") + 1
        else:
            m = _head_regex().match(text)
            if not m:
                return self._bad(tok, 3, "a node statement '%N(name) = Op(...)'", show(text), None)
            if len(m.group(1)) > MAX_DIGITS + 1:
                return self._bad(tok, 4, f"a node number of at most {MAX_DIGITS} digits",
                                 f"{len(m.group(1)) - 1} digits", None)
            nid, callee = int(m.group(1)[1:]), m.group(3)
            start = m.end()
            # A parameter printed with the function it holds (`Parameter_9[@FuncUnion(@a, @b)]`)
            # is called as a value, like a graph, node or free variable (`_op_of`). A function of
            # several signatures not yet resolved to one prints its signature set (`signature_set`
            # of the grammar: `MultitypeFuncGraph_lazy_adam_opt{(Func, Bool, ...), (...)}`); its
            # operator is its name (`Node.signature_set` reads the set).
            # Before 2.3 a primitive prints its attributes in brackets after its name: `Depend[side_effect_propagate:
            # I64(1)](None, %5)` applies Depend (`_ATTRS_HELD`).
            held = text.startswith("[", start) and _ATTRS_HELD.match(text, start + 1) is None
            while text.startswith("[", start) or text.startswith("{", start):  # `{prim_type=1}[...]` before 2.1
                start = scan_args(text, start + 1)[1]
            if not text.startswith("(", start):
                return self._bad(tok, start + 3, "'(' opening the argument list",
                                 show(text[start:]) if start < len(text) else "end of line", None)
            start += 1
            op = CALL if held else _op_of(callee)
        problem = _structure_problem(text, start, (lambda col: _where(tok, col)) if hasattr(tok, "joins") else _column)
        if problem:
            col, expected, found = problem
            return self._bad(tok, col + 2, expected, found, None)  # col is 1-based in `text`
        return Node("", nid, callee, op, text, start, tok.line, tuple(tok.types), scope,
                    tuple(tok.sources), tuple(notes))

    # --- analyze_fail.ir: the failure log, the stack markers
    def failure_log(self, items: list) -> tuple:
        return ("failure_log", (items[0].line, str(items[0])))

    def marker(self, items: list) -> tuple:
        tok = items[0]
        digits = str(tok).rsplit(">", 1)[1].strip()
        if len(digits) > MAX_DIGITS:
            raise DumpError("", tok.line, len(str(tok)) - len(digits) + 1, f"a depth of at most {MAX_DIGITS} digits",
                            f"{len(digits)} digits")
        return ("marker", (int(digits), tok.line))

    # --- `symbol engine details:` (dynamic shapes): kept as data
    def symbol_line(self, items: list) -> SymbolLine:
        text = str(items[0])
        indent = len(text) - len(text.lstrip(" "))
        return SymbolLine(items[0].line, text.strip(), indent // 2 - 1)

    def symbol_engine(self, items: list) -> SymbolEngine:
        opener = items[0]
        engine = SymbolEngine(str(opener).rstrip(" {"), opener.line)
        for item in items[1:-1]:
            if isinstance(item, SymbolLine):
                engine.symbols.append(item)
            else:  # an unknown line, reported as it was read
                engine.notes.append(item[1])
        return engine

    def symbol_section(self, items: list) -> tuple:
        return ("symbol_engines", items[1:])

    def order_section(self, items: list) -> tuple:
        return ("order", [str(t) for t in items[1:]])

    # --- the whole file
    def dump(self, items: list) -> tuple:
        """Gather the header parts; attach the preamble items printed before each subgraph to it."""
        header: dict[str, Any] = {}
        graphs, pending, order = [], [], []
        for item in items:
            if isinstance(item, Subgraph):
                _attach(item, pending)
                graphs.append(item)
                pending = []
            elif item[0] == "order":
                order.extend(item[1])
            elif item[0] == "symbol_engines":
                header.setdefault("symbol_engines", []).extend(item[1])
            elif item[0] == "failure_log":
                header.setdefault("failure_logs", []).append(item[1])
            elif item[0] in _HEADER_KEYS:
                header[item[0]] = item[1]
                if item[0] == "declared_params" and item[2]:
                    header["params"] = item[2]
            else:
                pending.append(item)
        return header, graphs, pending, order

    def _bad(self, tok: LineToken, col: int, expected: str, found: str, fallback: Any) -> Any:
        # a statement whose brackets never closed: the lexer's error says where it was cut
        err = getattr(tok, "cut", None) or DumpError(tok.src.path, *_place(tok, col), expected, found)
        if not tok.src.lenient:
            raise err
        tok.src.warn(tok.line, f"skipped: {err}")
        return fallback


def _place(tok: LineToken, col: int) -> tuple[int, int]:
    """(line, column) in the file of column `col` of a token's text, which for a statement
    printed over several lines spans them."""
    for offset, number in reversed(getattr(tok, "joins", ())):
        if col > offset:
            return number, col - offset
    return tok.line, col


def _where(tok: LineToken, col: int) -> str:
    line, col = _place(tok, col)
    return f"column {col}" if line == tok.line else f"line {line} column {col}"


def _unknown(src: _Lines, line: int, text: str) -> None:
    src.warn(line, f"unrecognised line kept as raw text: {show(text, 60)}")


_HEADER_KEYS = frozenset({"entry", "subgraphs", "jit_config", "attrs", "declared_params", "params",
                          "node_count_head", "declared_nodes", "declared_cnodes"})


def _named_value(line: Token) -> str:
    """The value of a `key: value : 0x...` line printed before a subgraph (its address left out)."""
    return str(line).split(":", 1)[1].rsplit(" : ", 1)[0].strip()


def _attach(g: Subgraph, preamble: list[tuple[str, Any]]) -> None:
    for kind, value, *_ in preamble:
        if kind == "kv":
            g.attrs[value[0]] = value[1]
        elif kind == "instance":
            g.instance = value
        elif kind == "symbol_engine":
            g.symbol_engine = value
        elif kind != "attr_head":
            g.preamble.append(value)


# `name: ` or `name=` opening a callee's brackets: its attributes, not a value
_ATTRS_HELD = re.compile(r"[^\W\d][\w.]*(?:: |=)")
# `DoSignaturePrimitive::S-Prim-Sub`, `PrimitivePy::Sub` (before 2.1): the primitive after `::` and `S-Prim-`
_CLASS_PRIM = re.compile(r"[A-Za-z]+::(?:S-Prim-)?")


def _op_of(callee: str) -> str:
    """The operator a callee names: the primitive without `PrimFunc_`, or "(call)" for a callee that
    is a value rather than a primitive: a graph (`call @g`), another node (`%3`), a free variable
    (`$(@g:CNode_5)`)."""
    if callee[0] in "@%$":
        return CALL
    if "::" in callee:
        return _CLASS_PRIM.sub("", callee, count=1)
    return callee[len(PRIMFUNC_PREFIX):] if callee.startswith(PRIMFUNC_PREFIX) else callee


def _scope_of(line: str) -> str:
    """The scope a `# Scope:` line names, without its brackets (not interned: a scope names one node)."""
    i = line.index(": ") + 2
    if line[-1] == ")" and line[i] == "(":  # the usual line, nothing to strip: one slice
        return line[i + 1:-1]
    inner = line[i:].rstrip()
    return inner[1:-1] if inner[:1] == "(" and inner[-1:] == ")" else inner


# Counts and node numbers longer than this are refused: Python's int() rejects > 4300 digits, and
# no real dump has a count near 10**18.
MAX_DIGITS = 18


def _int_after_colon(tok: Token) -> int:
    digits = str(tok).rsplit(":", 1)[1].strip()
    if len(digits) > MAX_DIGITS:
        raise DumpError("", tok.line, len(str(tok)) - len(digits) + 1, f"a count of at most {MAX_DIGITS} digits",
                        f"{len(digits)} digits")
    return int(digits)


@functools.cache
def _head_regex() -> re.Pattern[str]:
    # The head of `node_stmt` in the grammar, built from its terminals.
    return re.compile(rf"({terminal('NODE_REF')})(?:\(({terminal('DEBUG_NAME')})\))? = (?:call )?"
                      rf"({terminal('GRAPH_REF')}|{terminal('NODE_REF')}|{terminal('FREE_VAR')}|{terminal('CLASS_CALLEE')}"
                      rf"|{terminal('NAME')})")


@functools.cache
def _graph_regex() -> re.Pattern[str]:
    # `graph_sig` of the grammar, built from its terminals.
    g, p = terminal("GRAPH_REF"), terminal("PARAM_REF")
    # a parameter may carry its type and the list span lines (2.0 and before: `(\n  %para1_x : <...>\n  , ...\n) {`)
    return re.compile(rf"subgraph ({g})(?: parent: \[subgraph ({g})\])? *\(((?:\s*,?\s*{p}(?:\s*:\s*<[^\n]*>)?)*)\s*\)"
                      rf" *\{{ *")


@functools.cache
def _param_ref_regex() -> re.Pattern[str]:
    return re.compile(terminal("PARAM_REF"))


@functools.cache
def _param_regex() -> re.Pattern[str]:
    # `param_decl` of the grammar: reference, type, then the rest (`: has_default`, backend info).
    return re.compile(rf"({terminal('PARAM_REF')})\s*:\s*(<.*?>|\S+)((?:\s+:\s.*)?)\s*", re.S)  # a line may go on


# Characters no token of the line grammar allows outside a string: control characters and
# ASCII punctuation the format never uses. Any of them in a statement is garbage, not an unknown
# value form. (A bracket- and character-level check is all that can be done eagerly at C speed;
# the rest of a statement is parsed on demand, where unknown forms become warnings.) A line break
# is allowed: it joins the lines of a statement printed over several.
_STRAY_CHARS = r"\x00-\x08\x0b-\x1f\x7f!#&;?\\^`|~"
_STRAY = re.compile(f"[{_STRAY_CHARS}]")


@functools.cache
def _string_regex() -> re.Pattern[str]:
    return re.compile(terminal("STRING"))


_PAIRS = {")": "(", "]": "[", "}": "{"}
_CLOSE = {"(": ")", "[": "]", "{": "}"}
_BRACKET_OR_QUOTE = re.compile(r"[\"'()\[\]{}]")


def _sound(text: str, start: int) -> bool:
    """Brackets balance after the `(` opening the arguments at `text[start-1]`, and no stray
    character: counting and searching in C, for every statement."""
    if text.find('"', start) >= 0 or text.find("'", start) >= 0:
        text, start = _string_regex().sub('""', text[start:]), 0
    count = text.count
    return (count("(", start) + 1 == count(")", start) and count("[", start) == count("]", start)
            and count("{", start) == count("}", start) and _STRAY.search(text, start) is None)


class _Brackets:
    """The brackets, and a string, a statement leaves open at the end of a line, carried over the
    lines that continue it; each line is scanned once. Strings are skipped with the grammar's
    STRING terminal. `raw`: the text prints strings without quotes (`_VALUE_KINDS`), so a quote
    that does not close on its line is a character like any other."""

    __slots__ = ("stack", "quote", "raw")

    def __init__(self, raw: bool = False) -> None:
        self.stack: list[tuple[str, int, int]] = []  # (bracket, line, column)
        self.quote: tuple[str, int, int] | None = None
        self.raw = raw

    @classmethod
    def after_head(cls, text: str, kind: str, number: int) -> _Brackets | None:
        """What a statement line leaves open after its head, or None when nothing is (a line with
        a mismatched bracket or a broken head is left to the Builder to report)."""
        if kind == "RETURN_LINE":
            begin = text.find("(")
        else:
            head = _STATEMENT_HEAD.match(text)
            begin = head.end() if head else 0
        opened = cls()
        if begin <= 0 or opened.feed(text, number, begin):
            return None
        return opened

    @classmethod
    def left_open(cls, text: str, number: int) -> _Brackets | None:
        """What a value line (`_VALUE_KINDS`) leaves open, or None when nothing is; a line whose
        brackets are as many opened as closed, nearly all of them, is not scanned."""
        count = text.count
        if count("(") == count(")") and count("[") == count("]") and count("{") == count("}"):
            return None
        opened = cls(raw=True)
        return None if opened.feed(text, number) else opened

    def feed(self, text: str, number: int, pos: int = 0) -> bool:
        """Scan line `number` from `pos`; True when everything is closed (or a bracket closes the
        wrong one: the statement ends there and the Builder reports it)."""
        if self.quote is not None:
            m = _string_regex().match(self.quote[0] + text)
            if m is None:
                return False
            pos, self.quote = m.end() - 1, None
        stack = self.stack
        search = _BRACKET_OR_QUOTE.search
        while (m := search(text, pos)) is not None:
            c, i = m.group(), m.start()
            if c in "\"'":
                s = _string_regex().match(text, i)
                if s is None:
                    if self.raw:
                        pos = i + 1
                        continue
                    self.quote = (c, number, i + 1)
                    return False
                pos = s.end()
                continue
            if c in "([{":
                stack.append((c, number, i + 1))
            elif stack and stack[-1][0] == _PAIRS[c]:
                stack.pop()
            else:
                return True
            pos = i + 1
        return not stack

    def unclosed(self, found: str) -> tuple[str, str]:
        """(expected, found) of the error for a statement cut while this is open."""
        if self.quote is not None:
            c, line, col = self.quote
            return f"'{c}' closing the string at line {line} column {col}", found
        c, line, col = self.stack[-1]
        return f"'{_CLOSE[c]}' closing the '{c}' at line {line} column {col}", found

    def first_col(self, line: int) -> int:
        """Column of the innermost bracket still open on the statement's own line."""
        for _c, at, col in reversed(self.stack):
            if at == line:
                return col
        return 1


def _column(col: int) -> str:
    return f"column {col}"


def _structure_problem(text: str, start: int, where: Callable[[int], str] = _column) -> tuple[int, str, str] | None:
    """Check brackets and characters of a statement from `start` (after the head, whose debug
    name may hold any character). Counting and searching are done in C; only a statement that
    fails them is walked character by character, to say where. `where` names a column of the
    statement's text (3 + offset) for the message."""
    if _sound(text, start):
        return None
    stack: list[tuple[str, int]] = [("(", start - 1)]
    string_re = _string_regex()
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            m = string_re.match(text, i)
            if not m:
                return i + 1, f"a closing {c}", "end of line"
            i = m.end()
            continue
        if c in "([{":
            stack.append((c, i))
        elif c in ")]}":
            if not stack or stack[-1][0] != _PAIRS[c]:
                return i + 1, f"'{_CLOSE[stack[-1][0]]}'" if stack else "end of line", repr(c)
            stack.pop()
        elif _STRAY.match(c):
            return i + 1, "a value, name, reference or bracket", repr(c)
        i += 1
    if stack:
        c, pos = stack[-1]
        return n + 1, f"'{_CLOSE[c]}' closing the '{c}' at {where(pos + 3)}", "end of line"
    return None


_kept = Kept()  # dumps read, with IRTOOL_CACHE (kept.py)


def load(path: str | os.PathLike, lenient: bool = False,
         progress: Callable[[int], None] | None = None) -> Dump:
    """Read one dump (`.ir`, `.ir.gz`, `.ir.xz`).

    Raises `DumpError` (one line, `path:line:col: expected ..., found ...`) on input that is not a
    well-formed dump; with `lenient=True` a bad node or line is skipped and reported in
    `Dump.warnings` instead. `progress`, if given, is called with the bytes read so far.
    """
    if kept.SIZE:
        try:
            st = os.stat(path)
        except OSError:  # said by the reader below, as without the cache
            pass
        else:
            # the same file while its name, size and modification time are; a file written in the last
            # seconds may be written again within the clock's tick (git's "racy" entries): read afresh
            if st.st_mtime < time.time() - 2:
                key = (str(path), st.st_size, st.st_mtime_ns, lenient)
                return _kept.get_or_make(key, lambda: _load(path, lenient, progress))
    return _load(path, lenient, progress)


def _load(path: str | os.PathLike, lenient: bool, progress: Callable[[int], None] | None) -> Dump:
    name = str(path)
    data = _Lines(name, _Cursor(name, read_chunks(path), progress), lenient)
    parser = document_parser(LineLexer, _builder())

    def on_error(exc: UnexpectedInput) -> bool:
        tok = getattr(exc, "token", None)
        if type(tok) is BuiltToken:  # each node of the run is refused as it would be alone
            for node in tok.nodes:
                data.warn(node.line, f"skipped: {DumpError(name, *_located(exc, data, node.line, '  ' + node.text))}")
        else:
            data.warn(getattr(exc, "line", 0) or data.last_line, f"skipped: {_message(name, exc, data)}")
        return True

    try:
        parsed = parser.parse(data, on_error=on_error if lenient else None)
    except UnexpectedInput as exc:
        raise DumpError(name, *_located(exc, data)) from None
    except DumpError as exc:
        if not exc.path:  # raised by a helper that does not know the file name
            raise DumpError(name, exc.line, exc.col, exc.expected, exc.found) from None
        raise
    except VisitError as exc:  # a DumpError raised inside a Builder callback
        orig = exc.orig_exc
        if isinstance(orig, DumpError):
            if not orig.path:  # raised by a helper that does not know the file name
                raise DumpError(name, orig.line, orig.col, orig.expected, orig.found) from None
            raise orig from None
        raise
    return _assemble(name, parsed, data)


def parse_node(text: str, graph: str = "g", scope: str | None = None) -> Node:
    """The node of one statement as printed (`  %3(x) = MatMul(%1, %2) ...`, indentation optional),
    optionally followed by the lines printed under it (type, scope, source lines; newline-separated),
    built by the same lexer and `Builder` as `load`. `scope`, if given, stands for a `# Scope:` line.
    Raises `DumpError` (path `<line>`) where `load` would."""
    lines = text.split("\n")
    lines[0] = "  " + lines[0].lstrip(" ")
    if scope is not None:
        lines.append(f"      # Scope: ({scope})")
    text = "\n".join(lines) + "\n"
    data = _Lines("<line>", _Cursor("<line>", iter([(len(text.encode()), text)])), lenient=False)
    tokens = list(LineLexer(None).lex(data))
    if len(tokens) != 1 or not isinstance(tokens[0], BlockToken):
        raise DumpError(data.path, 1, 1, LINE_NAMES["NODE_BLOCK"], show(text))
    node = _builder().node(tokens)
    node.graph = graph
    return node


@functools.cache
def _builder() -> Builder:
    return Builder()


def _located(exc: UnexpectedInput, data: _Lines, line: int = 0, text: str | None = None) -> tuple[int, int, str, str]:
    """(line, column, expected, found) of a parser error; `line` and `text` stand for the token's."""
    tok = getattr(exc, "token", None)
    expected = sorted(getattr(exc, "expected", None) or ())
    if tok is None or tok.type == "$END":
        line = data.last_line + 1 if data.last_line else 1
        found = "end of file"
        if data.open_graph and "CLOSE_LINE" in expected:
            return (line, 1, f"'}}' closing the subgraph opened at line {data.open_graph[1]}", found)
        if data.last_line == 0:
            found = "an empty file"
    else:
        line = line or tok.line
        text = str(tok) if text is None else text
        found = f"{LINE_NAMES.get(tok.type, tok.type)} {show(text)}" if tok.type != "UNKNOWN_LINE" else show(text)
    names = [LINE_NAMES.get(e, e) for e in expected if e != "UNKNOWN_LINE"]
    wanted = " or ".join(names[:4]) + (" or ..." if len(names) > 4 else "")
    return (line, 1, wanted or "nothing more", found)


def _message(name: str, exc: UnexpectedInput, data: _Lines) -> str:
    return str(DumpError(name, *_located(exc, data)))


def _assemble(name: str, parsed: tuple, data: _Lines) -> Dump:
    header, graphs, trailing, order = parsed
    dump = Dump(path=name, size=data.size, entry=header.get("entry"), subgraphs=graphs, order=order,
                attrs=header.get("attrs", {}), jit_config=header.get("jit_config", {}),
                symbol_engines=header.get("symbol_engines", []))
    if "subgraphs" in header:
        dump.declared["subgraphs"], dump.sorted_order = header["subgraphs"]
    dump.params = header.get("params", [])
    for key in ("params", "nodes", "cnodes"):
        if f"declared_{key}" in header:
            dump.declared[key] = header[f"declared_{key}"]
    if trailing:
        data.warn(data.last_line, f"{len(trailing)} line(s) after the last subgraph kept as raw text")
    if "failure_logs" in header:
        dump.failure = failure_of(header["failure_logs"], [m for g in graphs for m in g.markers])
        if not graphs:
            data.warn(data.last_line, "an analyze_fail banner and log with no graph after them")
    for g in graphs:
        for m in g.markers:
            if m.node is None:
                data.warn(m.line, f"marker of stack frame {m.depth} is followed by no node")
    dump.warnings.extend(data.warnings)
    counts = dump.counts
    for key in ("subgraphs", "params", "cnodes"):
        if key == "subgraphs" and dump.failure is not None and dump.declared.get(key) == 0:
            continue  # analyze_fail.ir declares `# Total subgraphs: 0` above the graphs of the stack it prints
        if key in dump.declared and dump.declared[key] != counts[key]:
            dump.warnings.append(DumpWarning(0, f"header declares {dump.declared[key]} {key}, parsed {counts[key]}"))
    return dump
