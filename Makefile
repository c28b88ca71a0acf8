# Every target sets up what it needs: `make run` and `make test` work on a machine with only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test lint format bench validate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP) $@

run: $(STAMP)
	$(BIN)/simsched scenario scenarios/noisy_neighbor.yaml

test: $(DEV_STAMP)
	$(BIN)/ruff check simsched tests benchmarks
	$(BIN)/ruff format --check simsched tests benchmarks
	$(BIN)/python -m pytest

lint: $(DEV_STAMP)
	$(BIN)/ruff check simsched tests benchmarks
	$(BIN)/ruff format --check simsched tests benchmarks

format: $(DEV_STAMP)
	$(BIN)/ruff format simsched tests benchmarks
	$(BIN)/ruff check --fix simsched tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

validate: $(DEV_STAMP)
	$(BIN)/python -m pytest -m validation tests/validation

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache bench-out
