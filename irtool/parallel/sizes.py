"""Shapes, dtypes and bytes of communicated tensors (docs/parallel.md §5)."""
from __future__ import annotations

import re
from typing import Any

from ..ir import Node, TypeInfo

DTYPE_SIZE = {"Float32": 4, "Int32": 4, "UInt32": 4, "Float16": 2, "BFloat16": 2, "Int16": 2, "UInt16": 2,
              "Float64": 8, "Int64": 8, "UInt64": 8, "Int8": 1, "UInt8": 1, "Bool": 1,
              "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "F64": 8, "I64": 8, "U64": 8,
              "I8": 1, "U8": 1}
SHORT_DTYPE = {"F32": "Float32", "F16": "Float16", "BF16": "BFloat16", "F64": "Float64", "I32": "Int32",
               "I64": "Int64", "I16": "Int16", "I8": "Int8", "U8": "UInt8", "U32": "UInt32", "U64": "UInt64"}
_ATTR_DTYPE = re.compile(r"\b(BF16|F16|F32|F64|I8|I16|I32|I64|U8|U32|U64|Float32|Float16|BFloat16|Int32|Int64)\b")

Sized = tuple[Any, "str | None", "int | None"]  # (shape, dtype, bytes)


def elements(shape: Any) -> int | None:
    """Number of elements of a shape; None when a dimension is unknown (-1) or not a number."""
    if shape is None:
        return None
    if isinstance(shape, int):
        return shape
    n = 1
    for d in shape:
        if not isinstance(d, int) or d < 0:
            return None
        n *= d
    return n


def type_bytes(t: TypeInfo | None, tuple_sum: bool = False) -> Sized:
    """(shape, dtype, bytes) of one printed type; a tuple type sums its elements when `tuple_sum`."""
    if t is None or t.dtype not in DTYPE_SIZE:
        return (getattr(t, "shape", None), getattr(t, "dtype", None), None)
    size = DTYPE_SIZE[t.dtype]
    if t.kind == "Tuple":
        if not tuple_sum or not isinstance(t.shape, tuple):
            return t.shape, t.dtype, None
        counts = [elements(s) for s in t.shape]
        if any(c is None for c in counts):
            return t.shape, t.dtype, None
        return t.shape, t.dtype, sum(counts) * size  # type: ignore[arg-type]
    shape = t.shape if t.shape is not None else ()
    n = elements(shape)
    return shape, t.dtype, None if n is None else n * size


def attr_bytes(pa: dict[str, Any]) -> Sized | None:
    """Send/Receive `shape`/`dtype` primitive attributes (`dtype: F32` or `Tensor(F32)`)."""
    if "shape" not in pa or "dtype" not in pa:
        return None
    m = _ATTR_DTYPE.search(str(pa["dtype"]))
    shape = pa["shape"]
    if not m or not isinstance(shape, (list, tuple)):
        return None
    dt = m.group(1)
    n = elements(tuple(shape))
    return tuple(shape), SHORT_DTYPE.get(dt, dt), None if n is None else n * DTYPE_SIZE[dt]


def input_type(node: Node, index: int) -> TypeInfo | None:
    """`node.input_types[index]`, None when there is none."""
    ins = node.input_types
    return ins[index] if index < len(ins) else None
