# Two entry points: `make run` (main scenario) and `make test` (whole suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Python's bytecode cache stays on under make, even where the environment turns it off
# (PYTHONDONTWRITEBYTECODE): the suite's workers and the many geosim processes it starts
# then load compiled modules and pytest's rewritten tests instead of compiling them again
# (collecting the suite takes 8 s without the cache, 4 s with it).
export PYTHONDONTWRITEBYTECODE :=
# The main job: 003's baselines against PingAn at light, medium and heavy load
# (003 Figures 4 and 5) at a size that runs in minutes; `make run-full` is the paper's size.
LOADS := scenarios/pingan-light.toml scenarios/pingan-medium.toml scenarios/pingan-heavy.toml
# `make run-calibrated`: the same at the paper's size on the world calibrated to 003's baselines.
CALIBRATED := $(subst pingan-,pingan-calibrated-,$(LOADS))
SCHEDULERS ?= pingan,flutter,iridium,flutter+mantri,flutter+dolly
# --restart: results left by an older geosim are replaced (an interrupted run still resumes).
COMPARE_ARGS := --schedulers $(SCHEDULERS) --baseline flutter --within 100,200,800 --restart
COMPARE := compare $(LOADS) $(COMPARE_ARGS)
RUN_ARGS ?= --set workload.n_jobs=300 --reps 3

.PHONY: run run-full run-calibrated test lint bench clean

$(BIN)/geosim: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/geosim compile
	touch $@

run: $(BIN)/geosim
	$(BIN)/geosim $(COMPARE) $(RUN_ARGS) --out results/compare-003
	$(BIN)/geosim plot results/compare-003/pingan-light results/compare-003/pingan-medium \
		results/compare-003/pingan-heavy --no-run-figures --out results/compare-003/figures

run-full: $(BIN)/geosim
	$(BIN)/geosim $(COMPARE) --reps 10 --out results/compare-003-full

run-calibrated: $(BIN)/geosim
	$(BIN)/geosim compare $(CALIBRATED) $(COMPARE_ARGS) --reps 10 --out results/compare-003-calibrated

test: $(BIN)/geosim
	$(BIN)/ruff check geosim tests benchmarks topologies viz
	$(BIN)/lint-imports
	$(BIN)/pytest -n auto --dist worksteal

bench: $(BIN)/geosim
	$(BIN)/python benchmarks/bench_core.py
	$(BIN)/python benchmarks/bench_compare.py

clean:
	rm -rf $(VENV) results
