# Set-up and checks. `make run` and `make test` are the two commands a new machine needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
FIXTURE := fixtures/mindir/semi_auto_8p/rank_0/19_validate_0078.ir.xz
SHARED := ../shared/fixtures/mindir

.PHONY: run test install system lint fidelity bench fuzz mutate clean

$(BIN)/irtool: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,view,dask]'
	touch $@

install: $(BIN)/irtool system

# Debian packages: Graphviz's `dot` renders SVG/PNG; Chromium runs the viewer's browser tests
# (Playwright drives the system browser: browser downloads are not used), drawing WebGL with Mesa's
# llvmpipe (libegl-mesa0, libgl1-mesa-dri; tests/test_view.py). Installed when missing.
GL := libegl-mesa0 libgl1-mesa-dri
system:
	@{ command -v dot && command -v chromium && dpkg -s $(GL); } >/dev/null 2>&1 || { \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq graphviz chromium $(GL) >/dev/null; }

## Install, then summarize a bundled real dump.
run: install
	$(BIN)/irtool summarize $(FIXTURE)

## Install, then run the whole test suite (unit, property and CLI tests) and the linter. The tests
## run on every core (pytest-xdist); each writes only into its own temporary folder. `--dist loadgroup`
## keeps the tests marked `xdist_group` (tests/conftest.py: those reading the 68 MB dump) on one worker,
## which parses that dump once for all of them instead of once per worker.
## Python may write its compiled modules (`__pycache__`, ignored by git) even where the environment says not to
## (PYTHONDONTWRITEBYTECODE): every test process and every `irtool` a test starts would compile the package, and
## pytest rewrite the tests' asserts, again (460 instead of 425 CPU-s in one run).
test: install
	$(BIN)/ruff check irtool tests bench tools fuzz
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n auto --dist loadgroup --no-loadscope-reorder --durations=15

lint: install
	$(BIN)/ruff check irtool tests bench tools fuzz

## The shared checker on every real dump (needs ../shared).
fidelity: install
	$(BIN)/python tools/fidelity_ci.py ../shared/tools/fidelity_check.py --irtool $(BIN)/irtool $(SHARED)

## Speed and memory on the large dump (needs ../shared).
bench: install
	$(BIN)/python bench/parse_bench.py

## Mutation run (docs/mutation.md): plausible one-line bugs in the shared rules, each in a copy of the tree, against
## the real output and the tests; one mutant at a time, niced (about an hour on 2 busy cores). Not part of `make test`.
mutate: install
	nice -n 10 $(BIN)/python tools/mutate.py --out docs/mutation.md

## Coverage-guided fuzzing for a set time.
fuzz: install
	$(BIN)/pip install --quiet atheris
	$(BIN)/python fuzz/fuzz_parse.py -max_total_time=$${FUZZ_SECONDS:-60}

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
