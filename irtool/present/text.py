"""Values as people read them, the same in every command: unknowns, numbers, shapes, strategies,
layouts, byte sums and rank lists (docs/parallel.md §9 for strategies and layouts)."""
from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Iterable, Iterator

import orjson

from ..parallel.records import Bytes, ChainEnd

DASH = "—"  # an unknown value in text and Markdown


def cell(value: Any) -> str:
    """A value as people read it: `—` for unknown, `(8, 16)` for shapes (`(128)` for one
    dimension, as the dump prints it), `1,024` for ints, a byte sum as `bytes_text` writes it."""
    if value is None:
        return DASH
    if isinstance(value, Bytes):
        return bytes_text(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(str(v) if isinstance(v, int) else cell(v) for v in value) + ")"
    if isinstance(value, dict):
        return ", ".join(f"{k} {cell(v)}" for k, v in value.items()) or DASH
    return str(value)


def literal_text(value: Any) -> str:
    """A constant as its type reads: `false`, `0`, `1e-05`, `(0, 1)` (booleans as the source writes
    them, integers without separators: they are values, not counts)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "(" + ", ".join(literal_text(v) for v in value) + ")"
    return str(value)


def _unknown_dim(d: Any) -> bool:
    return d is None or (isinstance(d, int) and d < 0)


def shape_text(shape: Any) -> str:
    """A shape as people read it: `(128, 128)`, `scalar` for `()`, `(—, 128)` for a dimension
    of unknown size, and said once when none is known: `2 dimensions of unknown size`; a shape of
    unknown rank (`(-2)`, or not printed) `unknown`."""
    if shape is None or shape == (-2,):
        return "unknown"
    if shape == ():
        return "scalar"
    if all(_unknown_dim(d) for d in shape):
        return f"{len(shape)} dimension{'s' if len(shape) > 1 else ''} of unknown size"
    return "(" + ", ".join(DASH if _unknown_dim(d) else str(d) for d in shape) + ")"


def type_text(kind: str, dtype: str | None, shape: Any, elements: tuple[str, ...] | None) -> str:
    """A type in a few words: `Float32 (128, 128)`, `Bool`, and a tuple by its elements, runs of equal
    ones counted: `tuple of 3: Float32 (256, 512), 2 × Float32 (512)`."""
    if kind == "Tuple" and elements is not None:
        shapes = shape if isinstance(shape, tuple) and len(shape) == len(elements) else (None,) * len(elements)
        items = [e + ("" if s is None else f" {shape_text(s)}") for e, s in zip(elements, shapes)]
        runs: list[list[Any]] = []
        for item in items:
            if runs and runs[-1][0] == item:
                runs[-1][1] += 1
            else:
                runs.append([item, 1])
        text = ", ".join(item if n == 1 else f"{n} × {item}" for item, n in runs)
        return f"tuple of {len(elements)}" + (f": {text}" if text else "")
    words = dtype or kind
    return words if shape is None else f"{words} {shape_text(shape)}"


def bytes_text(b: Bytes | int | None) -> str:
    """A byte count; a sum over nodes some of whose sizes are unknown as the known sum and how many
    are missing (`1,024 (+4 unknown)`; `(+4 unknown, at most 8,192)` when each of those has a bound: dynamic
    token rows), `—` when none is known (never 0)."""
    if not isinstance(b, Bytes):
        return cell(b)
    bound = f", at most {cell(b.bound)}" if b.unknown and b.bound else ""
    if b.unknown and not b.known:
        return DASH + (f" ({b.unknown} unknown{bound})" if bound else "")
    return cell(b.total) + (f" (+{b.unknown} unknown{bound})" if b.unknown else "")


def format_strategy(value: Any) -> str:
    """`((2, 1), (1, 4))` -> `(2,1)(1,4)`, as MindInsight shows strategies (lists from JSON too);
    empty string for no strategy."""
    if value is None:
        return ""
    if isinstance(value, (tuple, list)):
        if value and all(isinstance(v, (tuple, list)) for v in value):
            return "".join("(" + ",".join(str(x) for x in v) + ")" for v in value)
        return "(" + ",".join(str(x) for x in value) + ")"
    return str(value).replace(" ", "")


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
    if isinstance(value, (list, tuple)) and any(_has_layout(v) for v in value):
        # an input that is a tuple of tensors (a Concat's) has a layout per tensor: `[dev ... ; dev ...]`
        return "; ".join(_layout(v) if isinstance(v, dict) else
                         f"[{strategy_text(v)}]" if _has_layout(v) else strategy_text(v) for v in value)
    return format_strategy(value) or DASH


def _has_layout(value: Any) -> bool:
    return isinstance(value, dict) or (isinstance(value, (list, tuple)) and any(_has_layout(v) for v in value))


def rank_list(ranks: Any) -> str:
    """`[0, 1, 2, 3, 5, 6]` -> `0-3, 5, 6`: runs of three or more as a range."""
    runs: list[list[int]] = []
    for r in sorted(ranks):
        if runs and runs[-1][-1] == r - 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)


def chain_end_layout(end: ChainEnd | None) -> str:
    """How one side of a redistribution lays the tensor out: device matrix and tensor map when the
    dump gives a layout, else pieces per dimension (full / slice shape), else the strategy."""
    if end is None:
        return DASH
    if isinstance(end.layout, dict) and "device_matrix" in end.layout:
        return strategy_text(end.layout)
    if end.split:
        return "split " + format_strategy(end.split)
    return ("strategy " + format_strategy(end.strategy)) if end.strategy else DASH


class Records:
    """`n` records made one by one as they are written by `json_pieces`, never held together (a
    thousand ranks' findings in `check`, their rows in `summarize DIR`)."""

    def __init__(self, n: int, items: Callable[[], Iterable[Any]]) -> None:
        self._n, self._items = n, items

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())


def json_pieces(doc: dict[str, Any], ensure_ascii: bool = True) -> Iterator[str]:
    """A documented JSON document (indent 2), ending with a newline, in pieces of about 1 MiB of
    whole lines, one top-level field after the other: a large dump's or folder's JSON is never
    whole in memory (its peak RSS), nor a million writes.

    The bytes are those of `json.dumps(doc, indent=2, ensure_ascii=...)`. orjson (C) writes them
    ten times faster; what it would write otherwise is mended (floats below 1e-4) or left to
    Python's encoder (a field holding an integer beyond 64 bits, a key that is not text, a lone
    surrogate, nesting beyond orjson's 254 levels, an object of a type JSON does not know). An
    infinite or NaN float must be a `NonFinite` (as `irtool.parallel.records.plain` makes those
    read from a dump): orjson would write a bare one as `null`, Python as `Infinity` or `NaN`."""
    if not isinstance(doc, dict) or not doc or any(type(k) is not str for k in doc):
        yield json.dumps(doc, indent=2, ensure_ascii=ensure_ascii) + "\n"
        return
    yield "{\n"
    last = len(doc) - 1
    for i, (key, value) in enumerate(doc.items()):
        head = "  " + json.dumps(key, ensure_ascii=ensure_ascii) + ": "
        tail = ",\n" if i < last else "\n}\n"
        if isinstance(value, Records) and len(value):  # records made and written a batch at a time, 4 spaces deep
            yield head + "["
            for k, batch in enumerate(_batches(value)):
                yield ("" if k == 0 else ",") + _records_text(batch, ensure_ascii)
            yield "\n  ]" + tail
            continue
        if isinstance(value, Records):
            value = []
        raw = _orjson_bytes(value)
        if raw is None:
            yield head + json.dumps(value, indent=2, ensure_ascii=ensure_ascii).replace("\n", "\n  ") + tail
            continue
        begin = 0
        while begin < len(raw):  # whole lines: a float or a character never spans two pieces
            end = raw.find(b"\n", begin + _PIECE) + 1 or len(raw)
            # a field's lines one level deeper (strings hold no raw line break)
            text = _as_python(raw[begin:end].replace(b"\n", b"\n  ").decode(), ensure_ascii)
            yield (head if begin == 0 else "") + text + (tail if end == len(raw) else "")
            begin = end


_PIECE = 1 << 20  # bytes per piece written (and then up to the end of the line)
_BATCH = 256  # records of a `Records` made and written together


def _batches(records: Records) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for record in records:
        batch.append(record)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _records_text(batch: list[Any], ensure_ascii: bool) -> str:
    """Records as the items of a top-level field's list (each after a line break, 4 spaces deep), without the
    commas before the first and after the last."""
    raw = _orjson_bytes(batch)
    if raw is not None:  # `[\n  {...},\n  {...}\n]` one level deeper, without its brackets
        return _as_python(raw[1:-2].replace(b"\n", b"\n  ").decode(), ensure_ascii)
    texts = ("".join(json_pieces({"": record}, ensure_ascii))[len('{\n  "": '):-len("\n}\n")] for record in batch)
    return ",".join("\n    " + text.replace("\n", "\n  ") for text in texts)
# Floats orjson writes otherwise than Python (the same digits: both write the shortest text that
# reads back as the same float): `1e-7` and `0.00001` where Python writes `1e-07` and `1e-05`.
# Found by how such a value ends its line (a string ends with `"`, true/false/null with a letter),
# then checked whole from the space before it (orjson writes one after `:` and before array items).
_FLOAT_ENDS = (re.compile(r"e[-+]?\d+(?=,?\n|$)"), re.compile(r"0\.0000\d*(?=,?\n|$)"))
_FLOAT = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?")
_NON_ASCII = re.compile(r"[^\x00-\x7e]")  # what `ensure_ascii` escapes (DEL too)


def _orjson_bytes(doc: Any) -> bytes | None:
    """`doc` written by orjson; None when only Python's encoder writes it as Python does."""
    try:
        return orjson.dumps(doc, default=_python_only, option=orjson.OPT_INDENT_2 | orjson.OPT_PASSTHROUGH_DATACLASS
                            | orjson.OPT_PASSTHROUGH_DATETIME)
    except TypeError:  # orjson.JSONEncodeError is one
        return None


def _as_python(text: str, ensure_ascii: bool) -> str:
    """Whole lines of orjson's text as Python's encoder writes them."""
    text = _python_floats(text)
    return _NON_ASCII.sub(_escape, text) if ensure_ascii else text  # such characters appear in strings only


def _python_floats(text: str) -> str:
    """Floats written as Python writes them (`repr`) where orjson may write them otherwise."""
    found: dict[int, int] = {}  # start -> end of each float to write again
    for pattern in _FLOAT_ENDS:
        for m in pattern.finditer(text):
            start = text.rfind(" ", 0, m.start()) + 1
            if _FLOAT.fullmatch(text, start, m.end()):
                found[start] = m.end()
    if not found:
        return text
    out, last = [], 0
    for start in sorted(found):
        out += [text[last:start], repr(float(text[start : found[start]]))]
        last = found[start]
    return "".join([*out, text[last:]])


def _python_only(value: Any) -> Any:
    """orjson's hook for what it does not write itself: a float Python writes as `Infinity`,
    `-Infinity` or `NaN` (`NonFinite`, see `irtool.parallel.records.plain`) as Python's encoder
    writes it; anything else is for Python's encoder (which writes it or raises its own error)."""
    if isinstance(value, float) and not math.isfinite(value):
        return orjson.Fragment("NaN" if value != value else "Infinity" if value > 0 else "-Infinity")
    raise ValueError(type(value).__name__)  # orjson raises its JSONEncodeError (a TypeError) from it


def _escape(m: re.Match[str]) -> str:
    """One non-ASCII character as Python's `ensure_ascii` writes it (a surrogate pair above U+FFFF)."""
    n = ord(m.group())
    if n > 0xFFFF:
        n -= 0x10000
        return f"\\u{0xD800 | (n >> 10):04x}\\u{0xDC00 | (n & 0x3FF):04x}"
    return f"\\u{n:04x}"


# Units of a size a user writes: decimal (MB = 10^6) and binary (MiB = 2^20), case-insensitive.
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(text: str) -> float | None:
    """A size as a user writes it (`1048576`, `10MB`, `4MiB`, `64GiB`) in bytes; None when it is not one."""
    m = re.fullmatch(r"([0-9.]+)\s*([a-z]*)", text.strip().lower())
    if not m or m.group(2) not in _UNITS:
        return None
    try:
        return float(m.group(1)) * _UNITS[m.group(2)]
    except ValueError:
        return None


def change_pct(old: int, new: int) -> str:
    """`=`, `new` (from nothing) or the relative change `+12.5%`."""
    return "=" if old == new else ("new" if not old else f"{(new - old) * 100.0 / old:+.1f}%")


# --- two configurations' values, old -> new (diff across configurations, the viewer's logical graph) ---

def ratio(old: int | None, new: int | None) -> str:
    """`×0.50` (new / old), `=`, `new` (from nothing), `gone` (to nothing); empty when either is unknown."""
    if old is None or new is None:
        return ""
    if old == new:
        return "="
    if not old:
        return "new"
    if not new:
        return "gone"
    return f"×{new / old:.2f}"


def _exact_bytes(b: Bytes | None) -> int | None:
    if b is None:
        return None
    return b.total if not b.unknown else None


def moved(old: Any, new: Any) -> str:
    """`1,024 → 512 (×0.50)`; a side without the value is `—`; byte sums as every command writes them."""
    def text(v: Any) -> str:
        return bytes_text(v) if isinstance(v, Bytes) else cell(v)

    a = _exact_bytes(old) if isinstance(old, Bytes) else old
    b = _exact_bytes(new) if isinstance(new, Bytes) else new
    r = ratio(a, b) if isinstance(a, int) and isinstance(b, int) else ""
    return f"{text(old)} → {text(new)}" + (f" ({r})" if r and r != "=" else "")
