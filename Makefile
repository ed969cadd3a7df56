# Every target does its own set-up: a fresh machine needs only Python >= 3.11 and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
CORE   := $(VENV)/.core-installed
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint bench browser postgres clean

# The core library alone (what `make demo` needs): no trainer, protocol or test extras.
$(CORE): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c constraints.txt "torch==2.13.0" -e .
	touch $(CORE)

# Everything: the extras and the dev tools. verl and verifiers go in without their dependencies
# (their pins trail ours: transformers for verl, openai and mcp for verifiers); the `verl` and
# `verifiers` extras hold the rest of what they need.
$(STAMP): $(CORE)
	$(BIN)/python -m pip install -q -c constraints.txt "torch==2.13.0" -e ".[dev]"
	$(BIN)/python -m pip install -q --no-deps "verl==0.9.1" "verifiers==0.4.0"
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the HTML viewer's browser tests (Playwright drives it; no downloads).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# Debian's PostgreSQL server for the tests against a real PostgreSQL (each test session starts
# a throwaway cluster of its own on a Unix socket: tests/postgres.py; no service is enabled).
postgres:
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; }

DEMO_DB  ?= sqlite:///demo-results.sqlite
DEMO_OUT ?= demo-report
DEMO_GRID = --intents all --samples 2 --lang en,ar --intent-list with,without --db $(DEMO_DB)

demo: $(CORE)
	$(BIN)/telcoenv demo --lang en --width 100 | tail -n 25
	$(BIN)/telcoenv evaluate --agent oracle --run oracle $(DEMO_GRID)
	$(BIN)/telcoenv evaluate --agent heuristic --run heuristic $(DEMO_GRID)
	$(BIN)/telcoenv evaluate --agent random --run random $(DEMO_GRID)
	$(BIN)/telcoenv report --db $(DEMO_DB) --run oracle --run heuristic --run random --out $(DEMO_OUT) \
	    --html $(DEMO_OUT)/episodes.html
	@echo "report, plots and the episode viewer: $(DEMO_OUT)/ (report.md, report.csv, report.json, *.png, episodes.html); results: $(DEMO_DB)"

# pytest-xdist: one test process per core (at most 4: each loads embedders and starts its own
# PostgreSQL); TEST_WORKERS=0 runs them all in this process.
TEST_WORKERS ?= logical

test: $(STAMP) browser postgres
	$(BIN)/ruff check telcoenv tests benchmarks examples
	TELCOENV_REQUIRE_BROWSER=1 TELCOENV_REQUIRE_POSTGRES=1 $(BIN)/python -m pytest \
	    --numprocesses $(TEST_WORKERS) --maxprocesses 4 --dist worksteal

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_core.py
	$(BIN)/python benchmarks/bench_metrics.py
	$(BIN)/python benchmarks/bench_evaluate.py
	$(BIN)/python benchmarks/bench_vector.py
	$(BIN)/python benchmarks/bench_bss.py
	$(BIN)/python benchmarks/bench_growth.py
	$(BIN)/python benchmarks/bench_concurrency.py
	$(BIN)/python benchmarks/bench_anatomy.py

clean:
	rm -rf $(VENV) build dist .pytest_cache
