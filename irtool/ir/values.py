"""Parse the inside of lines on demand: node arguments, attribute groups, types.

Two paths, both driven by `grammar/mindir.lark`:
- `scan_args` splits a node's argument list and finds its references with one regex built from
  the grammar's own terminals (STRING, FREE_VAR, PARAM_REF, NODE_REF, GRAPH_REF). It is cheap
  enough to run on every node of a large dump, which building the graph needs.
- `parse_tail` / `parse_type_sig` run the lark line parser and turn its tree into Python values.
  Type lines repeat a lot (a 68 MB dump has ~6 k distinct ones among 42 k), so they are cached.
"""
from __future__ import annotations

import functools
import re
from itertools import accumulate
from typing import Any, Iterator

from lark import Token, Transformer, v_args
from lark.exceptions import LarkError

from .grammar import line_parser, transforming_parser
from .records import Input, Ref, TypeInfo, Unreadable


@functools.cache
def terminal(name: str) -> str:
    """The regex of a terminal of the line grammar."""
    for t in line_parser().terminals:
        if t.name == name:
            return t.pattern.to_regexp()
    raise KeyError(name)


# A bracketed constant holding no reference, string or brace, at most three deep (`(I64(0), I64(256))`,
# `Tensor(shape=[], dtype=Int32, value=1)`): skipped by `_scan_args` as one token instead of one per bracket and
# comma (a reference, string or graph starts with one of `%$@"'`, none of which it holds).
_PLAIN = r"""[^()\[\]{}"'%$@]"""
_CONSTANT = rf"\((?:{_PLAIN}|\[{_PLAIN}*\]|\((?:{_PLAIN}|\[{_PLAIN}*\]|\({_PLAIN}*\))*\))*\)"


@functools.cache
def _scanner() -> re.Pattern[str]:
    parts = [f"(?P<string>{terminal('STRING')})", f"(?P<free>{terminal('FREE_VAR')})",
             f"(?P<param>{terminal('PARAM_REF')})", f"(?P<node>{terminal('NODE_REF')})",
             f"(?P<graph>{terminal('GRAPH_REF')})", f"(?P<constant>{_CONSTANT})", r"(?P<open>[(\[{])",
             r"(?P<close>[)\]}])", r"(?P<comma>,)"]
    return re.compile("|".join(parts))


@functools.cache
def _param_scanner() -> re.Pattern[str]:
    return re.compile(f"{terminal('FREE_VAR')}|{terminal('PARAM_REF')}")


def param_refs(text: str, start: int) -> list[str]:
    """The parameter references (`%paraN_x`, `$(@g:paraN_x)`) in `text` from `start`, each once, in
    order (a reference inside a string attribute would be one too: MindSpore prints none)."""
    if "%para" not in text and "$(" not in text:
        return []
    return list(dict.fromkeys(_param_scanner().findall(text, start)))


@functools.cache
def _bracket_scanner() -> re.Pattern[str]:
    """Strings (skipped whole), brackets and commas: the structure of an attribute tail."""
    return re.compile(f"(?P<string>{terminal('STRING')})|(?P<open>[(\\[{{])|(?P<close>[)\\]}}])|(?P<comma>,)")


def _group_ends(text: str, start: int = 0) -> Iterator[int]:
    """The offset after each top-level bracket group of `text` from `start` (strings skipped): where
    a closing bracket brings the depth back to 0."""
    depth = 0
    for m in _bracket_scanner().finditer(text, start):
        kind = m.lastgroup
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth == 0:
                yield m.end()


@functools.cache
def _instance_regex() -> re.Pattern[str]:
    # the `instance_name` alternative of `node_extra` in the grammar
    return re.compile(rf"\{{instance name: ({terminal('INSTANCE_NAME')})\}}")


def read_instance_name(text: str, start: int = 0) -> str | None:
    """The `{instance name: X}` of a statement, without parsing its attribute groups (a plain find
    first: asked of every node, most of which print none)."""
    i = text.find("{instance name: ", start)
    if i < 0:
        return None
    m = _instance_regex().match(text, i)
    return m.group(1) if m else None


@functools.cache
def _one_ref() -> re.Pattern[str]:
    return re.compile(f"(?P<param>{terminal('PARAM_REF')})|(?P<node>{terminal('NODE_REF')})|"
                      f"(?P<graph>{terminal('GRAPH_REF')})")


_NOT_FLAT = re.compile(r"""[(\[{}\]"'$]""")  # what makes an argument list more than references and commas


def scan_args(text: str, start: int) -> tuple[list[Input], int]:
    """Split the argument list that opens at `text[start-1] == '('`.

    Returns the inputs and the offset just after the closing ')'. The statement was checked for
    balanced brackets when it was read, so the list always closes. Most lists are references and
    commas only (`%1, %para2_w, @g`): split at once, each argument one reference as the scanner
    would find it; any other list goes through the scanner.
    """
    close = text.find(")", start)
    if close >= 0 and not _NOT_FLAT.search(text, start, close):
        inputs: list[Input] = []
        for raw in text[start:close].split(","):
            raw = raw.strip()
            if raw:
                m = _one_ref().fullmatch(raw)
                if m is None:
                    break
                inputs.append(_reference(len(inputs), m.lastgroup, raw))  # type: ignore[arg-type]
        else:
            return inputs, close + 1
    return _scan_args(text, start)


def _scan_args(text: str, start: int) -> tuple[list[Input], int]:
    inputs: list[Input] = []
    depth, item_start, refs = 0, start, []
    end = len(text)
    for m in _scanner().finditer(text, start):
        kind = m.lastgroup
        if kind == "open":
            depth += 1
        elif kind == "close":
            if depth == 0:
                end = m.end()
                _add(inputs, text[item_start : m.start()], refs)
                break
            depth -= 1
        elif kind == "comma":
            if depth == 0:
                _add(inputs, text[item_start : m.start()], refs)
                item_start, refs = m.end(), []
        elif kind != "string" and kind != "constant":
            refs.append((kind, m.group()))
    return inputs, end


def _add(inputs: list[Input], raw: str, refs: list[tuple[str, str]]) -> None:
    raw = raw.strip()
    if not raw:
        return
    if len(refs) == 1 and refs[0][1] == raw:
        inputs.append(_reference(len(inputs), refs[0][0], raw))
    else:
        inputs.append(Input(len(inputs), raw, None, tuple(_ref(kind, name) for kind, name in refs)))


# An argument that is one reference recurs at its position in many nodes (`%1`, `%para2_w`, a monad): made
# once and shared, as nothing changes a record (2.5 arguments a node: reading every argument of the bundle took
# 5.5-6.5 s instead of 7.3-8.1).
@functools.lru_cache(maxsize=1 << 16)
def _reference(index: int, kind: str, name: str) -> Input:
    return Input(index, name, _ref(kind, name))


@functools.lru_cache(maxsize=1 << 16)
def _ref(kind: str, name: str) -> Ref:
    return Ref(kind, name)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Nesting limit
# ---------------------------------------------------------------------------------------------

# Deepest bracket nesting (`(`, `[`, `{`, `<`) the lazy line parser accepts in one attribute tail or
# type line. lark's LALR parse is iterative, but its Transformer recurses about five Python frames
# per nesting level, so with Python's default recursion limit (1000) ~190 levels overflow. Real
# dumps nest at most ~5 levels; deeper text is kept raw with a warning (see docs/limits.md).
MAX_DEPTH = 100

_BRACKET_RE = re.compile(r"->|[()\[\]{}<>]")
_STEP = {"(": 1, "[": 1, "{": 1, "<": 1, ")": -1, "]": -1, "}": -1, ">": -1, "->": 0}


def nesting_depth(text: str) -> int:
    """Deepest bracket nesting of `text` (quotes are not skipped, so this may over-count).

    Costs four `str.count` calls for ordinary lines; only a line with more than MAX_DEPTH opening
    brackets is scanned bracket by bracket."""
    opening = text.count("(") + text.count("[") + text.count("{") + text.count("<")
    if opening <= MAX_DEPTH:
        return opening  # an upper bound, enough to say "within the limit"
    return max(accumulate(_STEP[c] for c in _BRACKET_RE.findall(text)), default=0)


def _too_deep(text: str) -> str | None:
    """An error message when `text` nests deeper than MAX_DEPTH, else None."""
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        return f"nesting depth {depth} exceeds the limit of {MAX_DEPTH}"
    return None


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

SCALAR_TYPES = {"I8": int, "I16": int, "I32": int, "I64": int, "U8": int, "U16": int, "U32": int,
                "U64": int, "F16": float, "F32": float, "F64": float, "BF16": float}


class Apply:
    """A constructor-like value the model keeps structured: `Tensor(shape=[2], dtype=..., ...)`,
    `UMonad[U]`, `ValueProblem[DeadNode]`, `TupleShape(...)`."""

    __slots__ = ("name", "args", "kwargs", "bracket")

    def __init__(self, name: str, args: list, kwargs: dict, bracket: str = "(") -> None:
        self.name, self.args, self.kwargs, self.bracket = name, args, kwargs, bracket

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Apply) and (self.name, self.args, self.kwargs) == (
            other.name, other.args, other.kwargs)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        inner = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        close = ")" if self.bracket == "(" else "]"
        return f"{self.name}{self.bracket}{', '.join(inner)}{close}"


# numpy spells booleans `True`/`False` and infinity `inf` inside tensor values; `nan` stays a Name
# so that equal dumps compare equal.
_WORDS = {"None": None, "true": True, "false": False, "True": True, "False": False, "inf": float("inf")}


class Name(str):
    """A bare word value such as `F32`, `dp`, `U`: kept as text, distinguishable from strings."""


@v_args(inline=True)
class ValueTransformer(Transformer):
    """Lark tree of a value -> plain Python: tuples, lists, dicts, ints, floats, bools, str."""

    def node_ref(self, tok: Token) -> Ref:
        return Ref("node", str(tok))

    def param_ref(self, tok: Token) -> Ref:
        return Ref("param", str(tok))

    def graph_ref(self, tok: Token) -> Ref:
        return Ref("graph", str(tok))

    def free_var(self, tok: Token) -> Ref:
        return Ref("free", str(tok))

    def number(self, tok: Token) -> int | float:
        s = str(tok)
        try:
            return int(s)
        except ValueError:
            return float(s)

    def string(self, tok: Token) -> str:
        return _unquote(str(tok))

    def name(self, tok: Token) -> Any:
        s = str(tok)
        return _WORDS[s] if s in _WORDS else Name(s)

    def ellipsis(self) -> Name:
        return Name("...")

    def args(self, *items: Any) -> list:
        return list(items)

    def list_items(self, *items: Any) -> list:
        return list(items)

    def kwargs(self, *items: Any) -> list:
        return list(items)

    def keyword(self, key: Token, value: Any) -> tuple:
        return ("=", str(key), value)

    def tuple(self, items: list | None = None) -> tuple:
        return tuple(items or ())

    def list(self, items: list | None = None) -> list:
        return list(items or ())

    def dict(self, *items: Any) -> dict:
        return dict(i for i in items if i is not None)

    def dict_item(self, key: Token, value: Any) -> tuple:
        k = str(key)
        return (_unquote(k) if k[:1] in "\"'" else k, value)

    def apply(self, name: Token, kwargs: list | None = None) -> Any:
        args, kw = _split_kwargs(kwargs)
        n = str(name)
        if not kw and len(args) == 1:
            if n == "Bool":
                return bool(args[0])
            cast = SCALAR_TYPES.get(n)
            if cast is not None and isinstance(args[0], (int, float)):
                return cast(args[0])
        return Apply(n, args, kw)

    def indexed(self, name: Token, kwargs: list | None = None) -> Apply:
        args, kw = _split_kwargs(kwargs)
        return Apply(str(name), args, kw, "[")


def _split_kwargs(items: list | None) -> tuple[list, dict]:
    args, kw = [], {}
    for item in items or ():
        if isinstance(item, tuple) and len(item) == 3 and item[0] == "=":
            kw[item[1]] = item[2]
        else:
            args.append(item)
    return args, kw


def _unquote(s: str) -> str:
    body = s[1:-1]
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape") if "\\" in body else body


@v_args(inline=True)
class _TailTransformer(ValueTransformer):
    def node_tail(self, *extras: Any) -> dict:
        out: dict[str, Any] = {}
        for kind, key, value in extras:
            if kind == "group":
                out.setdefault(key, {}).update(value)
            elif kind == "extra":
                out.setdefault("extra", {}).update(value)
            else:
                out["instance_name"] = value
        return out

    def instance_name(self, _kw: Token, name: Token) -> tuple:
        return ("instance", "instance_name", str(name))

    def attr_group(self, name: Token, values: dict) -> tuple:
        return ("group", str(name), values)

    def extra_dict(self, values: dict) -> tuple:
        return ("extra", "extra", values)


_TAIL = _TailTransformer()
_VALUE = ValueTransformer()


@functools.lru_cache(maxsize=16384)
def parse_value(text: str) -> Any:
    """One value of the line grammar (`((2, 1), (1, 4))`, `I64(0)`, `"x"`, ...) as Python data, or
    `Unreadable` when the text is not one. Cached: strategies and groups recur."""
    deep = _too_deep(text)
    if deep:
        return Unreadable(text, deep)
    if _string_regex().fullmatch(text):  # the one-token values `STRING -> string`, `NUMBER -> number`
        return _unquote(text)
    if _number_regex().fullmatch(text):
        return _VALUE.number(text)
    try:
        return transforming_parser("value", _VALUE).parse(text)
    except LarkError as exc:
        return Unreadable(text, _lark_message(exc))


_SCALAR_LITERAL = r"Bool\(([01])\)|[IU](?:8|16|32|64)\((-?\d+)\)|F(?:16|32|64)\(([-+.\deE]+|inf|-inf|nan)\)"
_SCALAR = re.compile(_SCALAR_LITERAL)
_LITERAL = re.compile(rf"(?:{_SCALAR_LITERAL})|\((?:(?:{_SCALAR_LITERAL})(?:, (?!\)))?)*\)")


@functools.lru_cache(maxsize=16384)
def literal_value(text: str) -> Any:
    """A constant argument that is a plain scalar as Python data, without the grammar: `Bool(0)` ->
    False, `I64(0)` -> 0, `F32(1e-05)` -> 1e-05, a tuple of them -> a tuple; None for anything else
    (a tensor, a monad, a string: shown as printed)."""
    if not _LITERAL.fullmatch(text):
        return None
    values = tuple(_scalar(m) for m in _SCALAR.finditer(text))
    return values if text.startswith("(") else values[0]


def _scalar(m: re.Match[str]) -> bool | int | float:
    b, i, f = m.groups()
    if b is not None:
        return b == "1"
    return int(i) if i is not None else float(f)


@functools.cache
def _string_regex() -> re.Pattern[str]:
    return re.compile(terminal("STRING"))


@functools.cache
def _number_regex() -> re.Pattern[str]:
    return re.compile(terminal("NUMBER"))


def parse_tail(text: str) -> dict[str, Any] | Unreadable:
    """Attribute groups of a node from the text after its arguments; `Unreadable` (the text and
    why) when the grammar cannot read them.

    Each group (`primitive_attrs: {...}`, `{instance name: ...}`, ...) is parsed on its own and
    cached: the same primitive attributes recur on hundreds of nodes of a large dump."""
    tail = text.strip()
    if not tail:
        return {}
    deep = _too_deep(tail)
    if deep:
        return Unreadable(tail, deep)
    out: dict[str, Any] = {}
    for segment in _segments(tail):
        part = _parse_segment(segment)
        if isinstance(part, str):
            group = segment.split(":", 1)[0].strip("{ ")
            return Unreadable(tail, f"{group}: {part}")
        for key, value in part.items():
            if isinstance(value, dict):
                out.setdefault(key, {}).update(value)
            else:
                out[key] = value
    return out


@functools.cache
def _balanced() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Regexes of a tail's segments and of one dict item, whose brackets (strings skipped) balance
    within four levels, as deep as real dumps go: what the bracket loops below find, in C."""
    string, plain = terminal("STRING"), r"[^(){}\[\]\"']++"

    def level(inner: str) -> str:
        return rf"(?:\((?:{inner})*+\)|\[(?:{inner})*+\]|\{{(?:{inner})*+\}})"

    nested = level(f"{plain}|{string}|" + level(f"{plain}|{string}|" + level(f"{plain}|{string}")))
    segment = rf"\s*+((?:{terminal('NAME')}\s*:\s*)?\{{(?:{plain}|{string}|{nested})*+\}})"
    item = (rf"\s*({terminal('NAME')}|{string}|{terminal('NUMBER')})\s*:"
            rf"((?:[^,(){{}}\[\]\"']++|{string}|{nested})++)([,}}])")
    return re.compile(segment), re.compile(item)


def _segments(tail: str) -> list[str]:
    """Split a node's tail after each top-level closing brace (strings skipped)."""
    segment = _balanced()[0]
    found, pos = [], 0
    while pos < len(tail):
        m = segment.match(tail, pos)
        if m is None:
            break
        found.append(m.group(1))
        pos = m.end()
    else:
        return found
    parts, begin = [], 0
    for end in _group_ends(tail):
        parts.append(tail[begin:end].strip())
        begin = end
    rest = tail[begin:].strip()
    if rest:
        parts.append(rest)
    return parts


@functools.lru_cache(maxsize=16384)
def _parse_segment(segment: str) -> dict[str, Any] | str:
    """The groups of one segment, or the reason it cannot be read."""
    fast = _split_segment(segment)
    if fast is not None:
        return fast
    try:
        return transforming_parser("node_tail", _TAIL).parse(segment)
    except LarkError as exc:
        return _lark_message(exc)
    except RecursionError:  # not reachable below MAX_DEPTH; kept as a last guard
        return "nesting too deep to parse"


@functools.cache
def _group_regex() -> re.Pattern[str]:
    # the opening of `attr_group` (`NAME ":" dict`) or `extra_dict` of `node_extra` in the grammar
    return re.compile(rf"\s*(?:({terminal('NAME')})\s*:\s*)?\{{")


@functools.cache
def _key_regex() -> re.Pattern[str]:
    # the key of `dict_item`: (NAME | STRING | NUMBER) ":"
    return re.compile(rf"\s*({terminal('NAME')}|{terminal('STRING')}|{terminal('NUMBER')})\s*:")


def _split_segment(segment: str) -> dict[str, Any] | None:
    """A segment parsed item by item: `{instance name: X}` by its regex, a dict (`NAME: {k: v, ...}`
    or `{k: v, ...}`) split at its top-level commas with the grammar's terminals, each value by the
    cached `parse_value` (values such as `Bool(1)`, `I64(0)`, `(0, 1)` recur on thousands of nodes
    whose whole segments never do). The same result as the `node_tail` parse, which reads whatever
    this does not (None): other forms, and every error, whose message it words."""
    m = _instance_regex().fullmatch(segment)
    if m is not None:
        return {"instance_name": m.group(1)}
    m = _group_regex().match(segment)
    if m is None:
        return None
    values = _dict_items(segment, m.end())
    if values is not None:
        return {m.group(1): values} if m.group(1) else {"extra": values}
    values = {}
    depth, begin, last = 0, m.end(), len(segment) - 1
    for t in _bracket_scanner().finditer(segment, begin):
        kind = t.lastgroup
        if kind == "open":
            depth += 1
        elif kind == "close" and depth:
            depth -= 1
        elif kind == "close" or (kind == "comma" and not depth):
            item = segment[begin : t.start()]
            if kind == "close" and t.start() != last:
                return None  # more after the dict
            if values or kind == "comma" or item.strip():  # not the empty dict `{}`
                k = _key_regex().match(item)
                value = parse_value(item[k.end() :].strip()) if k else None
                if k is None or isinstance(value, Unreadable):
                    return None
                key = k.group(1)
                values[_unquote(key) if key[:1] in "\"'" else key] = value
            if kind == "close":
                return {m.group(1): values} if m.group(1) else {"extra": values}
            begin = t.end()
    return None


def _dict_items(segment: str, begin: int) -> dict[str, Any] | None:
    """The items of the dict opening at `segment[begin-1]` and closing the segment, one regex match
    each; None when an item is not of that form or its value is unreadable (the loop above decides)."""
    if segment[begin:].strip() == "}":
        return {}
    item = _balanced()[1]
    values: dict[str, Any] = {}
    while True:
        m = item.match(segment, begin)
        if m is None:
            return None
        value = parse_value(m.group(2).strip())
        if isinstance(value, Unreadable):
            return None
        key = m.group(1)
        values[_unquote(key) if key[:1] in "\"'" else key] = value
        if m.group(3) == "}":
            return values if m.end() == len(segment) else None
        begin = m.end()


def _lark_message(exc: LarkError) -> str:
    """`expected A or B, found 'x'` from a lark error (the part of the line is named by the caller)."""
    tok = getattr(exc, "token", None)
    found = repr(str(tok))[:40] if tok is not None and str(tok) else "end of text"
    expected = sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or [])
    return f"expected {' or '.join(expected[:6]) or 'more input'}, found {found}"


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

@v_args(inline=True)
class _TypeTransformer(Transformer):
    """Type tree -> nested lists of atoms; `abstract` -> TypeInfo."""

    def tname(self, tok: Token) -> str:
        return str(tok)

    def tnumber(self, tok: Token) -> int | float:
        s = str(tok)
        if s.lstrip("+-").isdigit():
            try:
                return int(s)
            except ValueError:  # more digits than int() accepts (sys.get_int_max_str_digits)
                return float(s)
        return float(s)

    def tcolon(self) -> str:
        return ":"

    def tstar(self) -> str:
        return "*"

    def tellipsis(self) -> str:
        return "..."

    def tstring(self, tok: Token) -> str:
        return str(tok)

    def tparts(self, *parts: Any) -> list:
        return [p for p in parts if p is not None]

    def tpart(self, *atoms: Any) -> tuple:
        return ("part", list(atoms))

    def tkeyword(self, key: Token, *atoms: Any) -> tuple:
        return ("kw", str(key), list(atoms))

    def tparen(self, parts: list | None = None) -> tuple:
        return ("()", parts or [])

    def tbracket(self, parts: list | None = None) -> tuple:
        return ("[]", parts or [])

    def tbrace(self, parts: list | None = None) -> tuple:
        return ("{}", parts or [])

    def abstract(self, parts: list) -> TypeInfo:
        return _type_info(parts)

    def type(self, *atoms: Any) -> TypeInfo:
        if len(atoms) == 1 and isinstance(atoms[0], TypeInfo):
            return atoms[0]
        return TypeInfo(text=" ".join(map(str, atoms)), kind=str(atoms[0]))

    def types(self, *items: TypeInfo) -> list:
        return list(items)

    def type_sig(self, ins: list | None, outs: list | None = None) -> tuple:
        return (ins or [], outs or [])


def _shape(atom: Any) -> Any:
    """A printed shape -> tuple of ints; `TupleShape(...)` -> tuple of shapes; else None."""
    if isinstance(atom, tuple) and atom[0] == "()":
        dims = []
        for part in atom[1]:
            if part[0] != "part" or len(part[1]) != 1:
                return tuple(_shape(p[1][0]) if p[0] == "part" else None for p in atom[1])
            dims.append(part[1][0] if isinstance(part[1][0], int) else _shape(part[1][0]))
        return tuple(dims)
    return None


_BACKEND_KIND = re.compile(r"((?:Float|BFloat|Int|UInt|Complex)\d+|Bool|String|Unknown)x[A-Za-z][A-Za-z0-9_]*")


def _dims(atom: Any) -> tuple[int, ...] | None:
    """`(16, 32)`, `[16, 32]` or `{16, 32}` of numbers only -> (16, 32); else None."""
    if not (isinstance(atom, tuple) and atom[0] in ("()", "[]", "{}")):
        return None
    dims = [p[1][0] for p in atom[1] if p[0] == "part" and len(p[1]) == 1 and isinstance(p[1][0], int)]
    return tuple(dims) if len(dims) == len(atom[1]) else None


def _device_shape(atoms: list) -> tuple[int, ...] | None:
    """The shape of a kernel graph's one-part type, printed after its data type and an `x`, and after
    `[const vector]` from 1.x on: `Tensor[Float16]x[const vector][32, 192]`, `Float16xDefaultFormat[const
    vector]{1, 512}`, `Tensor[Float32]x()` (1.x)."""
    if len(atoms) < 2:
        return None
    before = atoms[-2]
    marked = before == "x" or (isinstance(before, tuple) and before[0] == "[]" and len(before[1]) == 1
                               and before[1][0] == ("part", ["const", "vector"]))
    return _dims(atoms[-1]) if marked else None


def _type_info(parts: list) -> TypeInfo:
    first = parts[0][1] if parts and parts[0][0] == "part" else []
    kind = first[0] if first and isinstance(first[0], str) else "?"
    dtype = None
    backend = _BACKEND_KIND.fullmatch(kind)
    # Tensor[Float32], Ref[Tensor[Float32]], Tuple[Tensor[Float32]*2]: innermost leading name
    atoms = [] if backend else first
    while len(atoms) >= 2 and isinstance(atoms[1], tuple) and atoms[1][0] == "[]" and atoms[1][1]:
        inner = atoms[1][1][0]
        if inner[0] != "part":
            break
        atoms = inner[1]
        if atoms and isinstance(atoms[0], str):
            dtype = atoms[0]
    if backend:  # backend: `Float32xDefaultFormat[const vector]{16, 32}`, dtype x device format
        dtype = None if backend.group(1) == "Unknown" else backend.group(1)
    shape = _device_shape(first) if len(parts) == 1 else None
    if len(parts) > 1 and parts[1][0] == "part":
        atoms = parts[1][1]
        if len(atoms) == 1:
            shape = _shape(atoms[0])
        elif len(atoms) == 2 and atoms[0] == "TupleShape":
            shape = tuple(_shape(p[1][0]) if p[0] == "part" and len(p[1]) == 1 else None
                          for p in atoms[1][1])
    if kind in ("Tensor", "Ref") and dtype is not None and dtype.startswith("Tensor"):
        dtype = None
    elements = _elements(first) if kind == "Tuple" else None
    return TypeInfo(text=_render(parts), kind=kind, dtype=dtype, shape=shape, elements=elements)


def _elements(atoms: list) -> tuple[str, ...] | None:
    """The elements of `Tuple[...]`: `Tensor[Float32]*2, Int64` -> ("Float32", "Float32", "Int64")."""
    if len(atoms) != 2 or not (isinstance(atoms[1], tuple) and atoms[1][0] == "[]"):
        return () if len(atoms) == 1 else None
    out: list[str] = []
    for part in atoms[1][1]:
        if part[0] != "part" or not part[1] or not isinstance(part[1][0], str):
            return None
        a = part[1]
        name, inner = a[0], a
        while name in ("Tensor", "Ref") and len(inner) >= 2 and isinstance(inner[1], tuple) and inner[1][0] == "[]" \
                and inner[1][1] and inner[1][1][0][0] == "part" and inner[1][1][0][1] \
                and isinstance(inner[1][1][0][1][0], str):
            inner = inner[1][1][0][1]  # Ref[Tensor[Float32]] -> Tensor[Float32] -> Float32
            name = inner[0]
        times = a[-1] if len(a) >= 2 and a[-2] == "*" and isinstance(a[-1], int) else 1
        out += [name] * times
    return tuple(out)


def _render(parts: list) -> str:
    return "<" + ", ".join(_render_part(p) for p in parts) + ">"


def _render_part(part: tuple) -> str:
    if part[0] == "kw":
        return f"{part[1]}={_render_atoms(part[2])}"
    return _render_atoms(part[1])


def _render_atoms(atoms: list) -> str:
    """Atoms as printed: adjacent words keep the space between them (`[const vector]`)."""
    out = []
    for i, a in enumerate(atoms):
        if i and isinstance(a, str) and isinstance(atoms[i - 1], str):
            out.append(" ")
        out.append(_render_atom(a))
    return "".join(out)


def _render_atom(atom: Any) -> str:
    if isinstance(atom, TypeInfo):
        return atom.text
    if isinstance(atom, tuple):
        o, c = atom[0]
        return o + ", ".join(_render_part(p) for p in atom[1]) + c
    return str(atom)


_TYPES = _TypeTransformer()


@functools.lru_cache(maxsize=65536)
def parse_type_sig(text: str) -> tuple[list[TypeInfo], list[TypeInfo]]:
    """`: (<in>, ...) -> (<out>)` -> (input types, output types). Unreadable text gives one
    TypeInfo of kind `?` holding the raw text."""
    if _too_deep(text):
        return ([], [TypeInfo(text=text.strip(), kind="?")])
    plain = _plain_sig(text.strip())
    if plain is not None:
        return plain
    try:
        return transforming_parser("type_sig", _TYPES).parse(text.strip())
    except (LarkError, RecursionError):
        return ([], [TypeInfo(text=text.strip(), kind="?")])


@functools.lru_cache(maxsize=65536)
def parse_type(text: str) -> TypeInfo:
    """One type, e.g. `<Tensor[Float32], (16, 32)>`."""
    plain = _tensor_type(text)  # the usual form, by one regex; the grammar reads the rest
    if plain is not None:
        return plain
    ins, _ = parse_type_sig(f": ({text})")
    return ins[0] if len(ins) == 1 else TypeInfo(text=text, kind="?")


# The commonest types, as the grammar reads them (a tensor, a parameter's Ref with its words):
# `<Tensor[Float32], (16, 32)>`, `<Ref[Tensor[Float32]], (512), ref_key=l1.w, is_parameter>`, printed
# as `parse_type` renders them (one space after each comma, numbers without leading zeros).
_DIM = r"(?:0|-?[1-9]\d{0,17})"
_WORD = r"[^\W\d][\w.]*"  # NAME of the grammar
_TENSOR_TYPE = re.compile(rf"<(?:Ref\[Tensor\[(?P<ref>{_WORD})\]\]|Tensor\[(?P<tensor>{_WORD})\]), "
                          rf"\((?P<dims>(?:{_DIM}(?:, {_DIM})*)?)\)(?:, {_WORD}(?:=(?:[\w.]+|\.\.\.))?)*>")


@functools.lru_cache(maxsize=65536)
def _tensor_type(text: str) -> TypeInfo | None:
    """`parse_type(text)` of a tensor or Ref type printed plainly, read by one regex (None otherwise)."""
    m = _TENSOR_TYPE.fullmatch(text)
    dtype = m and (m.group("ref") or m.group("tensor"))
    if not dtype or dtype.startswith("Tensor"):  # `Tensor[Tensor...]`: the grammar's rule for it
        return None
    dims = m.group("dims")
    return TypeInfo(text=text, kind="Ref" if m.group("ref") else "Tensor", dtype=dtype,
                    shape=tuple(int(d) for d in dims.split(", ")) if dims else ())


_SIG = re.compile(r": \((.*)\) -> \((.*)\)")


@functools.lru_cache(maxsize=65536)
def _item_type(text: str) -> TypeInfo | None:
    """One type of a list, without `<` inside: a tensor by one regex, any other (`<Bool, NoShape>`, a tuple
    `<Tuple[Int64*4], TupleShape(...), elements_use_flags=...>`) by the grammar once per distinct text
    (a signature repeats its few scalar and tuple types with ever new tensor shapes and names)."""
    t = _tensor_type(text)
    if t is not None:
        return t
    try:
        ins, _ = transforming_parser("type_sig", _TYPES).parse(f": ({text}) -> ()")
    except (LarkError, RecursionError):
        return None
    return ins[0] if len(ins) == 1 else None


def _plain_types(text: str) -> list[TypeInfo] | None:
    """The types of a list printed as plain tensor or Ref types separated by `, `; None otherwise."""
    found: list[TypeInfo] = []
    pos, n = 0, len(text)
    while pos < n:
        end = text.find(">", pos) + 1
        if text[pos] != "<" or not end or "<" in text[pos + 1:end]:  # nested: the grammar reads the line
            return None
        t = _item_type(text[pos:end])
        if t is None:
            return None
        found.append(t)
        pos = end
        if pos < n:
            if not text.startswith(", ", pos):
                return None
            pos += 2
    return found


def _plain_sig(text: str) -> tuple[list[TypeInfo], list[TypeInfo]] | None:
    """`parse_type_sig` of a type line whose inputs and outputs are all plain tensor or Ref types
    (most of them), by regexes; None otherwise (the grammar reads it)."""
    m = _SIG.fullmatch(text)
    if m is None:
        return None
    ins, outs = _plain_types(m.group(1)), _plain_types(m.group(2))
    return None if ins is None or outs is None else (ins, outs)


def read_group(text: str, group: str) -> dict[str, Any] | None:
    """One attribute group of a node statement (`cnode_attrs: {...}`) read alone, as the whole
    tail's parse gives it (`{}` when the statement has none); None when it cannot be read alone
    (printed twice, or not read by the grammar): then the whole tail's parse decides. Attribute
    groups of large operators are long; a caller needing one key need not read them all."""
    head = group + ": {"
    i = text.find(head)
    if i < 0:
        return {}
    if text.find(head, i + 1) >= 0 or (i and not text[i - 1].isspace() and text[i - 1] != "}"):
        return None
    end = next(_group_ends(text, i + len(head) - 1), None)
    if end is None:
        return None
    part = _parse_segment(text[i:end])
    return part.get(group) if isinstance(part, dict) else None
