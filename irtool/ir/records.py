"""Leaf records of the dump format: references, arguments, types, warnings, unreadable text.

They import nothing of irtool, so every other module of the format layer can use them.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal

PRIMFUNC_PREFIX = "PrimFunc_"
CALL = "(call)"  # the operator of a node whose callee is a value (`call @g`, `%3(...)`, ...)

RefKind = Literal["node", "param", "graph", "free"]


def param_number(ref: str) -> str:
    """The N of `%paraN_name` or `paraN_name`, as digit text: a parameter is identified by its
    number (bootstrap dumps declare `%para1_inputs` and use it as `%para1_Parameter_3`), and text
    never fails the way int() does on thousands of digits."""
    return ref[ref.index("para") + 4 : ref.index("_")].lstrip("0") or "0"


@dataclass(frozen=True)
class DumpWarning:
    """Something kept as raw text or otherwise worth a reader's attention, with its line."""

    line: int
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}


@dataclass(frozen=True)
class Unreadable:
    """Text the line grammar could not read, kept as it was printed, and why."""

    text: str
    reason: str


@dataclass(frozen=True, slots=True)  # one per argument or type read: no dict each
class Ref:
    """A reference inside a node's arguments: `%3`, `%para3_w`, `@graph`, `$(@graph:para3_w)`."""

    kind: RefKind
    name: str  # "%3", "%para3_w", "@g", "$(@g:para3_w)"


@dataclass(frozen=True, slots=True)  # one per argument or type read: no dict each
class Input:
    """One argument of a node, by position: a reference, or a constant kept as its text."""

    index: int
    text: str
    ref: Ref | None  # set when the argument is exactly one reference
    nested: tuple[Ref, ...] = ()  # references inside a constant tuple or call, e.g. `(%1, %2)`


@dataclass(frozen=True, slots=True)  # one per argument or type read: no dict each
class TypeInfo:
    """One abstract type as printed, e.g. `<Tensor[Float32], (16, 32)>`.

    `kind` is the outer constructor (`Tensor`, `Ref`, `Tuple`, `UMonad`, ...; `?` for text the
    grammar could not read), `dtype` the element type when there is one, `shape` the dimensions
    (None when the type has no shape, a tuple of shapes for `TupleShape`).
    """

    text: str
    kind: str
    dtype: str | None = None
    shape: Any = None
    # a tuple's elements, each its tensor's element type (`Float32`) or its kind (`Int64`, `Tuple`):
    # `Tuple[Tensor[Float32]*2]` -> ("Float32", "Float32"); None for other kinds or when not read
    elements: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SourceRef:
    """A `# In file` line read: where the user's code is and the line as printed. Its forms: 2.3 and
    later `# In file /x/train.py:21, 15~42/    code/` (`:31~32, 4~46` for lines 31 to 32), 2.0-2.2
    `# In file train.py:20/    code/`, 1.x `# In file ./train.py(175)/    code/`."""

    path: str
    line: int
    end_line: int | None
    columns: str | None  # `15~42`
    code: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" + (f"~{self.end_line}" if self.end_line is not None else "")


_SOURCE_REF = re.compile(r"# In file (.+?)(?::(\d+)(?:~(\d+))?(?:, ([\d~]+))?|\((\d+)\))/(.*)/\s*")


@functools.lru_cache(maxsize=1 << 14)
def source_ref(text: str) -> SourceRef | None:
    """The place a `# In file ...` line names (indentation allowed); None for another line. Kept per text:
    the lines recur (a 68 MB dump prints 107 distinct ones 306 000 times) and the record is frozen."""
    m = _SOURCE_REF.fullmatch(text.strip())
    if m is None:
        return None
    path, line, end, cols, old, code = m.groups()
    return SourceRef(path, int(line if line is not None else old), int(end) if end is not None else None, cols,
                     code.strip())
