"""Shared test helpers: where the bundled real dumps are, and the large dump parsed once."""
from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

# Every analysis pass may ask only for the facts it declares (irtool/parallel/table.py): checked in tests.
os.environ["IRTOOL_CHECK_FACTS"] = "1"
# pytest-xdist already runs a test per core: a folder command reads its ranks in the test's process (the
# worker pool is tested where a test passes `--jobs 2`).
os.environ["IRTOOL_JOBS"] = "1"
# A test process reads the same bundled dumps in many tests: it keeps every one it read and their fact tables
# (irtool/ir/parse.py; 1000 is more than the bundle holds), so each is parsed and analysed once per worker, in
# 1.1-1.2 GB; a test of reading reads a file of its own. With the last 32 kept, 635 of the dumps a run read
# had been read before by the same worker.
KEPT = 1000
os.environ["IRTOOL_CACHE"] = str(KEPT)

import irtool  # noqa: E402
from irtool.cli import collect_garbage_rarely  # noqa: E402

# The collector settings of the command line: a test process holds many dumps (the cache above), which a full
# collection at Python's default thresholds walks again and again.
collect_garbage_rarely()

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "mindir"


def shared_fixture(rel: str) -> str:
    """Path of a real dump of the shared fixtures (`../shared/fixtures/mindir`, next to the checkout or to the
    folder of its worktree), e.g. `mindformers_llama_dp2mp2pp2/rank_0/19_validate_0089.ir.xz`."""
    for parent in ROOT.parents:
        path = parent / "shared" / "fixtures" / "mindir" / rel
        if path.exists():
            return str(path)
    raise FileNotFoundError(f"../shared/fixtures/mindir/{rel}")


def fixture(rel: str) -> str:
    """Path of a bundled real dump, e.g. `semi_auto_8p/rank_0/19_validate_0078.ir.xz`."""
    path = FIXTURES / rel
    if not path.exists():
        raise FileNotFoundError(path)
    return str(path)


# The 68 MB dump: parsed and analysed once per test process. Tests reading it carry `LARGE_GROUP`, so
# that pytest-xdist runs them all in one worker: `make test` passes `--dist loadgroup` (without it the
# mark does nothing and each worker that gets one of them parses the dump again).
LARGE = "gpt_large_perf/rank_0/19_validate_0078.ir.xz"
LARGE_GROUP = pytest.mark.xdist_group("gpt_large_validate")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test whose parameters name one of the large model's passes runs beside the others reading them (the
    reader's cache then parses each once)."""
    for item in items:
        if "gpt_large_perf" in item.nodeid and not item.get_closest_marker("xdist_group"):
            item.add_marker(LARGE_GROUP)


@functools.cache
def large_dump() -> irtool.Dump:
    """The large dump, loaded once (nothing writes into a `Dump` after `irtool.load`)."""
    return irtool.load(fixture(LARGE))


@functools.cache
def large_facts() -> irtool.ParallelFacts:
    return irtool.analyze(large_dump())


def all_dumps() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.name.endswith((".ir", ".ir.xz")))


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


# What the suite needs beyond the core install, and what provides it: the `test`, `view` and `dask` extras
# (Python modules), the Graphviz/Chromium programs and Mesa's llvmpipe, on which Chromium draws WebGL in the
# browser tests (Debian's packages by the file each installs; tests/test_view.py: CHROMIUM_ARGS); `make install`
# sets up all of them. A missing one stops the run with one line instead of failing or skipping the tests using it.
NEEDED_MODULES = {"hypothesis": "irtool[test]", "model_explorer": "irtool[view]", "playwright": "irtool[view]",
                  "distributed": "irtool[dask]"}
NEEDED_PROGRAMS = ("dot", "chromium")
NEEDED_LIBRARIES = {"libegl-mesa0": "libEGL_mesa.so.0", "libgl1-mesa-dri": "dri/swrast_dri.so"}


def missing_extras() -> list[str]:
    import glob
    import importlib.util
    import shutil

    missing = [f"{m} ({extra})" for m, extra in NEEDED_MODULES.items() if importlib.util.find_spec(m) is None]
    missing += [p for p in NEEDED_PROGRAMS if shutil.which(p) is None]
    return missing + [package for package, file in NEEDED_LIBRARIES.items()
                      if not glob.glob(f"/usr/lib/{file}") + glob.glob(f"/usr/lib/*/{file}")]


def pytest_configure(config: pytest.Config) -> None:
    missing = missing_extras()
    if missing:
        raise pytest.UsageError(f"{', '.join(missing)} not installed: run make install")


@pytest.hookimpl(trylast=True)  # after its fixtures are torn down
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """What a test leaves behind is frozen: never walked by a collection again. It is mostly the dumps the reader
    keeps (millions of objects) and pytest's reports, kept to the end anyway. The full collections others make
    then walk only what the running test made: hypothesis's first example makes one and then walks the whole heap
    for referrers (4.6 s with the bundle kept), and pytest makes five after the last test (longer than the 5 s
    pytest-xdist waits before it interrupts the worker). A worker's peak memory stayed 1.1-1.2 GB."""
    import gc

    gc.freeze()
