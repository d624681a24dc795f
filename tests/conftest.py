"""Shared test helpers: where the bundled real dumps are, and the large dump parsed once."""
from __future__ import annotations

import functools
import os
import re
from collections import Counter
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


# Sharing a load across tests. A test process keeps every dump it read and its fact table (KEPT above), so the
# second test reading a dump costs nothing -- when it runs in the same process. `make test` runs two pytest-xdist
# workers with `--dist loadgroup`: the tests carrying the same `xdist_group` mark run on one worker, one after the
# other, and the others go one by one to whichever worker is free. So:
# - A test parametrized by a bundled scenario (its id names the folder, e.g. `[dryrun_llama_micro8-0-...]` or
#   `[summarize gpt_small_dp2mp2pp2]`) joins that folder's group by itself (`pytest_collection_modifyitems`
#   below): it runs where test_core's per-dump test and the others naming the folder read its dumps.
# - A test that reads one scenario's dumps but does not name it in its id says so with `@reads("folder")` (or a
#   module with `pytestmark = reads("folder")`), e.g. test_kernel.py and test_lifetime.py.
# - Where several tests need the same costly object, keep it in a `functools.cache` function or a module-scoped
#   fixture, and add a check to an existing test of that load before writing a new test that makes it again.
# A group runs on one worker: keep each to a few seconds of work (a scenario's dumps), never a whole module of
# unrelated loads. Groups are handed out largest first (pytest-xdist orders them by their number of tests).
SCENARIOS = sorted((p.name for p in FIXTURES.iterdir() if p.is_dir()), key=len, reverse=True)
_NAMED = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, SCENARIOS)) + r")(?!\w)")


def reads(scenario: str) -> pytest.MarkDecorator:
    """The mark of a test reading `scenario`'s dumps: it runs on the worker that reads them for the others."""
    if scenario not in SCENARIOS:
        raise FileNotFoundError(FIXTURES / scenario)
    return pytest.mark.xdist_group(scenario)


# The 68 MB dump: parsed and analysed once per test process; the tests reading it are in its folder's group.
LARGE = "gpt_large_perf/rank_0/19_validate_0078.ir.xz"
LARGE_GROUP = reads("gpt_large_perf")


# The browser tests' group (tests/test_view.py) takes the longest from start to end, most of it waiting for
# Chromium: it starts first, and the other worker does the rest meanwhile.
FIRST = "view_browser"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which names each test's group in its id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test whose parameters name a bundled scenario runs in that scenario's group (above). The groups come
    first, FIRST before the others and then the larger ones (as pytest-xdist orders them without
    `--no-loadscope-reorder`, which `make test` passes to keep this order), then the single tests: the longest
    work is handed out first, and the short tests fill the end."""
    group: dict[pytest.Item, str] = {}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        callspec = getattr(item, "callspec", None)
        named = _NAMED.search(callspec.id) if mark is None and callspec is not None else None
        if named:
            item.add_marker(reads(named.group(1)))
        if mark or named:
            group[item] = mark.args[0] if mark else named.group(1)
    size = Counter(group.values())
    items.sort(key=lambda i: (i not in group, group.get(i) != FIRST, -size[group.get(i)]))


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
