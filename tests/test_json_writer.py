"""The JSON writer (`irtool.present.json_pieces`) writes exactly the bytes of Python's
`json.dumps(doc, indent=2)` (plus a newline), though orjson does the writing when it can: golden
files and CI scripts see no change. Python's json module is the yardstick here, not irtool."""
from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irtool.parallel.records import NonFinite, plain
from irtool.present import Records, json_pieces
from irtool.present.text import _orjson_bytes


def python(doc: Any, ensure_ascii: bool) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=ensure_ascii) + "\n"


def ours(doc: Any, ensure_ascii: bool) -> str:
    return "".join(json_pieces(doc, ensure_ascii=ensure_ascii))


class Word(str):
    """A str subclass, as the value reader's `Name`."""


CASES: list[tuple[str, Any, bool]] = [
    # (what, document, whether orjson writes it: False = Python's encoder does)
    ("exponents", {"a": [1e-05, 1e16, -2.5e-07, 1.7976931348623157e308, 5e-324, 1e22, 0.0001, 9999999999999998.0]}, True),
    ("plain floats", {"a": [0.1, 1.5, -0.0, 100.0, 0.3333333333333333, 123456.789]}, True),
    ("non-finite from plain", plain({"v": (float("inf"), float("-inf"), float("nan"), 1.0)}), True),
    ("64-bit ints", {"a": [2**63 - 1, 2**64 - 1, -(2**63)]}, True),
    ("big int", {"a": 2**64}, False),
    ("negative big int", {"a": -(2**63) - 1}, False),
    ("int key", {1: "x"}, False),
    ("str subclass", {"k": Word("F32"), "l": [Word("dp")]}, True),
    ("str subclass key", {Word("k"): 1}, False),
    ("tuples", {"t": (1, (2, 3), ()), "e": [], "d": {}}, True),
    ("text", {"s": "a\"b\\c\n\t\x00\x1f\x7f é ✓ \u2028 😀 <>&'/"}, True),
    ("lone surrogate", {"s": "\udc80"}, False),
    ("deep", {"a": json.loads("[" * 300 + "]" * 300)}, False),
    # one field for Python's encoder, the others orjson's: each field nested by its own writer
    ("mixed fields", {"a": [1.5e-05, {"k": "é"}], "b": {"n": 2**70, "l": [1, [2]]}, "c": 1e-05, "d": []}, False),
    ("scalar fields", {"a": 1e-05, "b": "x", "c": None, "d": 2.5e16}, True),
]


@pytest.mark.parametrize("ensure_ascii", [False, True])
@pytest.mark.parametrize("what,doc,fast", CASES, ids=[c[0] for c in CASES])
def test_same_bytes_as_python(what: str, doc: Any, fast: bool, ensure_ascii: bool) -> None:
    if what == "lone surrogate" and not ensure_ascii:
        assert _orjson_bytes(doc) is None  # Python writes it raw: stdout then refuses it
        return
    assert ours(doc, ensure_ascii) == python(doc, ensure_ascii)
    assert (_orjson_bytes(doc) is not None) == fast


def test_non_finite_is_not_null() -> None:
    # `null` means unknown in our JSON: an infinite value read from a dump is not unknown
    doc = plain({"v": [float("inf"), float("nan")]})
    assert isinstance(doc["v"][0], NonFinite) and math.isinf(doc["v"][0])
    assert ours(doc, True) == '{\n  "v": [\n    Infinity,\n    NaN\n  ]\n}\n'


def test_an_unknown_object_is_an_error_as_in_python() -> None:
    with pytest.raises(TypeError):
        ours({"a": object()}, False)


def test_pieces_end_with_newline_and_join_to_the_document() -> None:
    doc = {"rows": [{"n": i, "s": "x" * 50} for i in range(30000)]}  # > 1 MiB of text: several pieces
    pieces = list(json_pieces(doc))
    assert len(pieces) > 1 and pieces[-1].endswith("\n")
    assert "".join(pieces) == python(doc, True)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats()
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=100, deadline=None)
@given(JSON, st.booleans())
def test_any_document_same_bytes(doc: Any, ensure_ascii: bool) -> None:
    doc = plain(doc)  # as every record's value: an infinite float becomes NonFinite
    try:
        expected = python(doc, ensure_ascii)
        expected.encode()
    except UnicodeEncodeError:  # a lone surrogate: not writable anyway
        return
    assert ours(doc, ensure_ascii) == expected


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_records_written_in_batches_are_the_list(ensure_ascii: bool) -> None:
    """`Records` (made one by one as written) are written 256 at a time by orjson, a batch orjson refuses
    (an integer beyond 64 bits) record by record by Python's encoder: the bytes of the list written whole,
    across batch boundaries, with an empty field after and a `Records` of none."""
    made: list[int] = []

    def record(i: int) -> Any:
        made.append(i)
        return [] if i % 97 == 0 else {"i": i, "f": i * 1e-07, "s": "é😀" if i % 2 else "x", "t": (i, ()),
                                       **({"big": 2**70} if i == 300 else {})}

    doc = {"rows": Records(600, lambda: map(record, range(600))), "none": Records(0, lambda: iter(())), "after": []}
    want = python({"rows": [record(i) for i in range(600)], "none": [], "after": []}, ensure_ascii)
    made.clear()
    assert ours(doc, ensure_ascii) == want
    assert made == list(range(600))  # each record made once, as it is written
