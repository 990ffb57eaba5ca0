# Two entry points for a fresh machine (see README): `make book` and `make test`.
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PROFILE ?= quick
# The folders the book reads (ilets.study.results.results_dir / scale_dir): a grid run here
# first, else the shipped results (shipped/paper, shipped/quick).
WHERE = $(BIN)/python -c "from ilets.study.results import results_dir, scale_dir; print(results_dir(), scale_dir())"
# Portable floating-point kernels (ilets.numerics) for processes that load numpy before
# ilets, such as the book's notebook kernels: the variables as KEY=value words.
NUMERICS = $(BIN)/python -c "from ilets.numerics import env_words; print(env_words())"

.PHONY: book book-only grid test test-fast coverage lint typecheck env clean-book force-book bench artifacts readme

# The virtual environment, installed from the exact lock (CPU torch) plus this package.
$(BIN)/.installed: requirements.lock pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	$(BIN)/pip check
	touch $@

env: $(BIN)/.installed

# Build the book from the results at hand: on a fresh clone, the shipped paper-scale results
# and the shipped quick ones beside them (nothing is recomputed: the build re-runs no cell;
# chapter 10 shows each folder's recorded re-runs, VERIFY.json). The notebook cache only
# notices edits to a chapter's own cells and Sphinx only re-reads edited pages, so both are
# bypassed (cache dropped, --all) whenever a results store changes.
book: env
	$(MAKE) --no-print-directory book-only

# Recompute a profile's grid (resumable) into results/<profile>; the book then prefers it.
grid: env
	$(BIN)/ilets grid --profile $(PROFILE) --out results/$(PROFILE)

book-only: env
	@dirs="$$($(WHERE))"; stamp=""; for d in $$dirs; do stamp="$$stamp $$d $$(stat -c %Y $$d/store/metrics.parquet 2>/dev/null)"; done; \
	all=""; if [ "$$(cat _build/.results-stamp 2>/dev/null)" != "$$stamp" ]; then \
		echo "results changed: re-executing and re-rendering every chapter"; \
		rm -rf _build/.jupyter_cache _build/jupyter_execute; all="--all"; \
	fi; mkdir -p _build; \
	env $$($(NUMERICS)) $(BIN)/jupyter-book build . -W --keep-going $$all && echo "$$stamp" > _build/.results-stamp

# Re-execute every chapter even if neither its cells nor the results changed.
force-book: env
	rm -rf _build/.jupyter_cache _build/jupyter_execute _build/.results-stamp
	$(MAKE) --no-print-directory book-only

# The linter (pyproject.toml's [tool.ruff]) and the type checker run before the tests: a finding
# fails `make test`.
lint: env
	$(BIN)/ruff check src tests benchmarks notebooks
	$(MAKE) --no-print-directory typecheck

# mypy on all of src/ilets (pyproject.toml's [tool.mypy] names the files); a finding fails it.
typecheck: env
	$(BIN)/mypy

# pytest-xdist workers: one a core of the 2-core machines the suite's times are quoted for
# (`make test TEST_WORKERS=0` runs in one process). pyproject.toml's --dist loadfile keeps the
# book's tests on one worker, so the book is built once.
TEST_WORKERS ?= 2
PYTEST = env $$($(NUMERICS)) $(BIN)/python -m pytest -n $(TEST_WORKERS)

test: lint
	bash tests/setup_browser.sh
	$(PYTEST)

# Everything but the tests marked slow (the book build in a browser, whole grids in child
# processes, signals, learning runs): the loop to run while editing. Every module of src/ilets
# runs in it: tests/test_modules.py imports each one, `make coverage` checks each one runs.
test-fast: lint
	$(PYTEST) -m "not slow"

# The tests test-fast runs, under coverage.py (child processes too: pyproject.toml's
# [tool.coverage.run]); then tests/module_coverage.py lists each module's statements and
# functions run and fails, naming it, on a module of src/ilets never imported or none of whose
# functions ran. Slower than test-fast: coverage traces every line.
coverage: env
	rm -f .coverage .coverage.*
	env $$($(NUMERICS)) COVERAGE_FILE=$(CURDIR)/.coverage $(BIN)/python -m coverage run -m pytest -n $(TEST_WORKERS) \
		-m "not slow" -q
	$(BIN)/python -m coverage combine -q
	$(BIN)/python tests/module_coverage.py .coverage

# Every benchmark the book's records appendix quotes, on an idle machine (benchmarks/run_all.sh),
# then its tables (book/records.md).
bench: env
	bash benchmarks/run_all.sh $(BIN)/python
	$(BIN)/python benchmarks/readme_tables.py --write book/records.md

# The generated blocks from the shipped results: README's and the landing page's claims table,
# and, in the book's records appendix (book/records.md), the headline and shipped-folder table,
# the positive control, the per-server learners and the grid-command bar (tests keep each equal
# to what these write).
readme: env
	$(BIN)/python -m ilets.report.claims_table --write README.md
	$(BIN)/python -m ilets.report.claims_table --write book/intro.md
	$(BIN)/python -m ilets.report.rl_stage --write README.md
	$(BIN)/python -m ilets.report.headline --results shipped/paper --write book/records.md
	$(BIN)/python -m ilets.report.positive_control --write book/records.md
	$(BIN)/python -m ilets.report.per_server --write book/records.md
	$(BIN)/python -m ilets.gridcommand.report.criteria --write book/records.md

# The measurements chapters 3, 4 and 8 quote (the fleet-load table, the experts' optimality gaps
# and call costs, the decision latency), measured once with the settings of the results the book
# shows and recorded with their machine, date and commit in shipped/book/<profile>/
# (ilets.study.book_measurements; a few minutes on 2 cores); the book only reads them. Rerun it
# when those settings change (the chapters then refuse the old records).
artifacts: env
	$(BIN)/python -m ilets.study.book_measurements

clean-book:
	rm -rf _build
