# Two entry points for a fresh machine (see README): `make book` and `make test`.
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PROFILE ?= quick
RESULTS ?= results/$(PROFILE)

.PHONY: book book-only test env clean-book force-book bench

# The virtual environment, installed from the exact lock (CPU torch) plus this package.
$(BIN)/.installed: requirements.lock pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/pip check
	touch $@

env: $(BIN)/.installed

# Run the experiment grid (resumable) and build the book from its results. The notebook
# cache only notices edits to a chapter's own cells and Sphinx only re-reads edited pages,
# so both are bypassed (cache dropped, --all) whenever the results store changes (another
# grid, another profile, ILETS_RESULTS).
book: env
	$(BIN)/ilets grid --profile $(PROFILE) --out $(RESULTS)
	$(MAKE) --no-print-directory book-only

book-only: env
	@stamp="$(abspath $(RESULTS)) $$(stat -c %Y $(RESULTS)/store/metrics.parquet)"; all=""; \
	if [ "$$(cat _build/.results-stamp 2>/dev/null)" != "$$stamp" ]; then \
		echo "results changed: re-executing and re-rendering every chapter"; \
		rm -rf _build/.jupyter_cache _build/jupyter_execute; all="--all"; \
	fi; mkdir -p _build; \
	ILETS_RESULTS=$(abspath $(RESULTS)) $(BIN)/jupyter-book build . -W --keep-going $$all \
		&& echo "$$stamp" > _build/.results-stamp

# Re-execute every chapter even if neither its cells nor the results changed.
force-book: env
	rm -rf _build/.jupyter_cache _build/jupyter_execute _build/.results-stamp
	$(MAKE) --no-print-directory book-only

test: env
	bash tests/setup_browser.sh
	$(BIN)/python -m pytest

bench: env
	$(BIN)/python benchmarks/bench_simulator.py

clean-book:
	rm -rf _build
