# Two entry points: `make run` (main scenario) and `make test` (whole suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SCENARIO ?= scenarios/pingan-medium.toml
RUN_ARGS ?=

.PHONY: run test lint bench clean

$(BIN)/geosim: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

run: $(BIN)/geosim
	$(BIN)/geosim run $(SCENARIO) $(RUN_ARGS) --out results/

test: $(BIN)/geosim
	$(BIN)/ruff check geosim tests benchmarks topologies viz
	$(BIN)/pytest

bench: $(BIN)/geosim
	$(BIN)/python benchmarks/bench_core.py
	$(BIN)/python benchmarks/bench_compare.py

clean:
	rm -rf $(VENV) results
