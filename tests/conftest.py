"""Shared test helpers: where the bundled real dumps are."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "mindir"


def fixture(rel: str) -> str:
    """Path of a bundled real dump, e.g. `semi_auto_8p/rank_0/19_validate_0078.ir.xz`."""
    path = FIXTURES / rel
    if not path.exists():
        raise FileNotFoundError(path)
    return str(path)


def all_dumps() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.name.endswith((".ir", ".ir.xz")))


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
