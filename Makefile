# One command for the demo, one for the tests. Each creates .venv if needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-engines test-all lint typecheck unit slow bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[plot]"
	$(BIN)/dpsense demo

# the quick tier: lint, types and every test that needs no JVM, no browser and no long audit
# (PySpark is installed all the same: mypy checks the Spark engine against its types)
test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev,spark]"
	$(MAKE) --no-print-directory lint typecheck unit

lint:
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck:
	$(BIN)/mypy

unit:
	$(BIN)/python -m pytest -n 2 -m "not slow and not engines" --durations=25

# the engines tier: Spark (one JVM, in one worker: --dist loadgroup; Java 17+) and the pages
# in headless Chromium
test-engines: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev,spark]"
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m "engines and not slow" --durations=25

# the long statistical audits and brute-force checks (marked slow); the five long Spark
# harness tests (900 s together) are spread over both workers, one JVM each: in one
# worker they are the tier's critical path
slow:
	$(BIN)/python -m pytest -n 2 -m slow --durations=25

test-all: test
	$(MAKE) --no-print-directory test-engines slow

bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python benchmarks/bench_smooth.py
	$(BIN)/python benchmarks/bench_explorer.py
	$(BIN)/python benchmarks/bench_noise.py

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache .hypothesis src/*.egg-info
