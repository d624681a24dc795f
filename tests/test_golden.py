"""`irtool summarize/diff --format json` of real fixtures, byte for byte against the recorded
golden files (tests/golden/cases.py says when and how they may change)."""
from __future__ import annotations

import pytest
from golden.cases import DIFF, GOLDEN, SUMMARIZE, run

CASES = {**{k: ["summarize", "--format", "json", v] for k, v in SUMMARIZE.items()},
         **{k: ["diff", "--format", "json", *v] for k, v in DIFF.items()}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_output_is_unchanged(name: str) -> None:
    expected = (GOLDEN / f"{name}.json").read_text(encoding="utf-8")
    assert expected.strip(), f"golden file {name} is empty"
    assert run(CASES[name]) == expected
