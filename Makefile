# One command for the demo, one for the tests. Each creates .venv if needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-all lint typecheck unit slow bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[plot]"
	$(BIN)/dpsense demo

test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev,spark]"
	$(MAKE) --no-print-directory lint typecheck unit

lint:
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck:
	$(BIN)/mypy

unit:
	$(BIN)/python -m pytest -n 2 -m "not slow" --durations=10

# the long statistical audits (marked slow); CI runs them after `make test`
slow:
	$(BIN)/python -m pytest -n 2 -m slow --durations=10

test-all: test
	$(MAKE) --no-print-directory slow

bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python benchmarks/bench_smooth.py
	$(BIN)/python benchmarks/bench_explorer.py
	$(BIN)/python benchmarks/bench_noise.py

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache .hypothesis src/*.egg-info
