# The ICL companion. Two commands: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PRESET ?= quick
PYTEST_ARGS ?=
# Each parallel worker gets cores/jobs BLAS and torch threads (no oversubscription). A JOBS that is not a
# positive integer gives 1 here; `icl-book` itself then refuses it with its own message.
THREADS := $(shell n=$$(nproc 2>/dev/null || echo 2); j='$(JOBS)'; \
  if [ "$$j" -eq "$$j" ] 2>/dev/null && [ "$$j" -gt 0 ] && [ $$((n / j)) -gt 0 ]; then echo $$((n / j)); else echo 1; fi)
LAB_ARGS ?=

export MPLBACKEND := Agg

# Files checked by `ruff format --check` in `make lint` (notebooks are excluded in pyproject.toml).
RUFF_FORMAT_PATHS ?= .
SCREENSHOTS ?= _build/screenshots

.PHONY: book test venv lock lint format lab screenshots bench sweep clean distclean

## make book: set up .venv, execute every notebook (cached), build the HTML
## make book ARCHIVE=FILE: first import the verified runs of an archive written by `icl-book export`
## (refused, and make stops, if it is truncated, tampered or from another checkout); the report then has
## the paper column of its paper-preset runs, with their origin
ARCHIVE ?=
book: $(STAMP)
	@if [ -n "$(ARCHIVE)" ]; then $(BIN)/icl-book import "$(ARCHIVE)" || exit 1; fi
	t0=$$(date +%s); $(BIN)/icl-book build -j $(JOBS) --preset $(PRESET); rc=$$?; \
	echo "== notebooks and HTML: $$(( $$(date +%s) - t0 )) s"; exit $$rc

## make test: set up .venv, execute the notebooks (quick preset), build the HTML while running all tests
# Each notebook is executed once per run, by the runner (cached in the store). The determinism check
# re-executes only a few of them with nbval, chosen by iclbook/nbval_copies.py, which prints which and why:
# the 2 cheapest, every notebook whose cells tagged nbval-check-output changed since HEAD~1, and one that
# rotates with the commit among those that fit in a 60 CPU-second budget (NBVAL=all re-executes all of
# them, NBVAL=a,b exactly these). Their copies live in a temporary folder (book/generated is never written),
# longest run first so that no pytest worker idles at the end; their figures are thrown away, so they are
# written as PNG only (ICL_FIGURE_FORMATS=png). Every other stored execution is checked without a kernel
# (tests/book/test_stored_notebooks.py: manifest hashes, current cache key, no error output;
# ICL_REQUIRE_GENERATED=1 makes a missing one fail). The HTML is built (single-threaded Sphinx) in the
# background while the tests run; the tests marked `build` wait for it (tests/conftest.py,
# ICL_BOOK_BUILD_STATUS) and fail if it failed, and so does make. Each phase prints its wall time, and pytest
# prints the 25 slowest tests (--durations=25).
NBVAL ?=
test: $(STAMP) lint
	t0=$$(date +%s); $(BIN)/icl-book run -j $(JOBS) || exit 1; echo "== notebooks: $$(( $$(date +%s) - t0 )) s"
	nb=$$(mktemp -d -t icl-nbval-XXXXXX) && trap 'rm -rf "$$nb"' EXIT || exit 1; t0=$$(date +%s); \
	ICL_NBVAL="$(NBVAL)" $(BIN)/python -m iclbook.nbval_copies book/generated "$$nb/copies" || exit 1; \
	( $(BIN)/icl-book build --no-run > "$$nb/book-build.log" 2>&1; echo $$? > "$$nb/status.part"; \
	  mv "$$nb/status.part" "$$nb/book-build.status"; echo "== HTML build: $$(( $$(date +%s) - t0 )) s" >> "$$nb/book-build.log" ) & \
	OMP_NUM_THREADS=$(THREADS) MKL_NUM_THREADS=$(THREADS) OPENBLAS_NUM_THREADS=$(THREADS) ICL_FIGURE_FORMATS=png \
	  ICL_BOOK_BUILD_STATUS="$$nb/book-build.status" ICL_REQUIRE_GENERATED=1 \
	  $(BIN)/pytest -c pyproject.toml --rootdir . -n $(JOBS) --dist loadscope --durations=25 $(PYTEST_ARGS) --nbval-lax --nbval-sanitize-with tests/nbval_sanitize.cfg "$$nb/copies" tests; \
	rc=$$?; echo "== tests: $$(( $$(date +%s) - t0 )) s"; wait; echo "== HTML build (in the background during the tests):"; \
	tail -n 4 "$$nb/book-build.log"; \
	[ "$$(cat "$$nb/book-build.status" 2>/dev/null)" = 0 ] || { tail -n 60 "$$nb/book-build.log"; exit 1; }; exit $$rc

venv: $(STAMP)

# The venv is created once, from the lock; it is re-installed when the project's files change.
# The project needs Python 3.11 (requires-python): a .venv of another version (left by a failed install)
# is recreated, and a PYTHON that is not 3.11 is refused before anything is created.
$(STAMP): pyproject.toml requirements.lock
	@py311() { "$$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; }; \
	if [ -e $(BIN)/python ] && ! py311 $(BIN)/python; then \
	  echo "== $(VENV) was made with $$($(BIN)/python -V 2>&1 || echo 'a broken Python'), not Python 3.11: recreating it"; \
	  rm -rf $(VENV); fi; \
	if [ ! -e $(BIN)/python ] && ! py311 "$(PYTHON)"; then \
	  echo "make: PYTHON=$(PYTHON) is not Python 3.11 ($$("$(PYTHON)" -V 2>/dev/null || echo 'not found')); choose an interpreter with, for example, make book PYTHON=python3.11" >&2; \
	  exit 1; fi
	t0=$$(date +%s); { test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); } && \
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24" && \
	$(BIN)/python -m pip install --quiet -c requirements.lock -e ".[book,test,cluster]" && \
	touch $(STAMP) && echo "== venv: $$(( $$(date +%s) - t0 )) s"

## make lock: re-pin requirements.lock from the current venv
lock: $(STAMP)
	{ echo "# Pinned versions of every dependency of iclcore[book,test,cluster] (Python 3.11, CPU)."; \
	  echo "# Regenerate with: make lock   (torch is written ==2.13.0, not +cpu, to stay portable)"; \
	  $(BIN)/pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > requirements.lock

## make lint: ruff lint rules (pyproject.toml [tool.ruff]) and the format check of RUFF_FORMAT_PATHS
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check $(RUFF_FORMAT_PATHS)

## make format: apply ruff's formatter and its safe lint fixes to the whole tree
format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## make lab: JupyterLab on notebooks/ (py:percent files open as notebooks through jupytext); options for
## headless or SSH use go in LAB_ARGS, e.g. make lab LAB_ARGS="--no-browser --port 8899 --ip 127.0.0.1".
## One Ctrl-C stops it (answer_yes: no confirmation prompt, which a headless terminal cannot answer); the
## figures and metrics.json a notebook writes when run here are ignored by notebooks/.gitignore.
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks --JupyterApp.answer_yes=True $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

## make screenshots: every built page at 1280 px and 390 px (headless Chromium) into $(SCREENSHOTS)/
screenshots: $(STAMP)
	$(BIN)/python -m iclbook.browser screenshots _build/html $(SCREENSHOTS)

## make sweep: every notebook over the settings its paper leaves unstated (notebooks/sweeps.yml), quick preset,
## each point a cached run in the store; the report (make book) then shows each row's robustness band
sweep: $(STAMP)
	t0=$$(date +%s); $(BIN)/icl-book sweep --all -j $(JOBS); rc=$$?; echo "== sweeps: $$(( $$(date +%s) - t0 )) s"; exit $$rc

## make bench: the benchmarks (timings as ratios against naive baselines)
bench: $(STAMP)
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	$(BIN)/icl-book clean 2>/dev/null || rm -rf book/generated _build

distclean: clean
	rm -rf .icl-store $(VENV)
