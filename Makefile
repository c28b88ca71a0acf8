# Every target sets up what it needs: `make run` and `make test` work on a machine with only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test test-slow lint format bench validate traces calibrate clean

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

# Two test processes: the suite is CPU-bound and CI machines have two cores. Bytecode caching is
# switched back on where an environment turns it off (PYTHONDONTWRITEBYTECODE): without the cache
# every test process recompiles simsched and re-rewrites the asserts of every test module, some
# 6 CPU-seconds a process. Work stealing: a worker left idle at the end takes queued tests from
# the other, so one slow file at the tail does not double the wall time.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
test: $(DEV_STAMP)
	$(BIN)/ruff check simsched tests benchmarks
	$(BIN)/ruff format --check simsched tests benchmarks
	$(PYTEST) -n 2 --dist worksteal

# The process-level checks `make test` leaves out (marked `slow`: the installed console script,
# signals and orphan processes, dask clusters, a real calibration fit); CI runs both.
test-slow: $(DEV_STAMP)
	$(PYTEST) -n 2 --dist worksteal -m slow

lint: $(DEV_STAMP)
	$(BIN)/ruff check simsched tests benchmarks
	$(BIN)/ruff format --check simsched tests benchmarks

format: $(DEV_STAMP)
	$(BIN)/ruff format simsched tests benchmarks
	$(BIN)/ruff check --fix simsched tests benchmarks

# Speed against goals (docs/benchmarks.md): exits non-zero when a goal is missed. One row, fewer
# runs: make bench BENCH_ARGS="--only batching_100k --repeat 1". The ratio rows need the reference
# loop (REFERENCE, a folder with seed_scheduler.py) and the traces; without them they are skipped.
# Bytecode caching on, as for the tests: an installed simsched has its .pyc files (pip compiles
# them), so a measured run should not recompile its ~170 modules, some 0.2 CPU-seconds a process,
# where an environment sets PYTHONDONTWRITEBYTECODE.
REFERENCE ?= ../shared/reference
BENCH_ARGS ?=
bench: $(DEV_STAMP)
	-$(MAKE) --no-print-directory traces
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python benchmarks/bench.py --reference "$(REFERENCE)" $(BENCH_ARGS)

# Fit the GPU presets' efficiencies and the roofline's CPU and all-reduce costs to the published
# measurements; the presets (simsched/config/presets.py) and roofline defaults carry these values.
calibrate: $(STAMP)
	$(BIN)/simsched calibrate calibration/published.yaml --jobs 2 --out calibration/fitted.yaml

validate: $(DEV_STAMP)
	$(BIN)/python -m pytest -m validation tests/validation

# Link the public trace files that scenarios/azure_replay.yaml and prefix_routing.yaml read,
# where a shared copy exists.
SHARED_TRACES ?= ../shared/data/traces
traces:
	mkdir -p scenarios/data
	@if [ -d "$(SHARED_TRACES)" ]; then \
		for f in azure_llm_2023_conv.csv azure_llm_2023_code.csv \
			mooncake_fast25_conversation.jsonl; do \
			ln -sf "$$(cd $(SHARED_TRACES) && pwd)/$$f" scenarios/data/$$f; done; \
		echo "linked the Azure and Mooncake traces into scenarios/data/"; \
	else echo "no $(SHARED_TRACES): download the traces as scenarios/README.md says"; fi

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache bench-out
