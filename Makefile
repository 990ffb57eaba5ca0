# Two entry points for a fresh machine (see README): `make book` and `make test`.
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PROFILE ?= quick
RESULTS ?= results/$(PROFILE)

.PHONY: book test env grid clean-book force-book bench

# The virtual environment, installed from the exact lock (CPU torch) plus this package.
$(BIN)/.installed: requirements.lock pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/pip check
	touch $@

env: $(BIN)/.installed

# Run the experiment grid (resumable) and build the book from its results.
book: env
	$(BIN)/ilets grid --profile $(PROFILE) --out $(RESULTS)
	ILETS_RESULTS=$(abspath $(RESULTS)) $(BIN)/jupyter-book build . -W --keep-going

# Re-execute every chapter even if its cells did not change.
force-book: env
	ILETS_RESULTS=$(abspath $(RESULTS)) $(BIN)/jupyter-book build . -W --keep-going --all

test: env
	bash tests/setup_browser.sh
	$(BIN)/python -m pytest

bench: env
	$(BIN)/python benchmarks/bench_simulator.py

clean-book:
	rm -rf _build
