# crawldash: every command a developer or CI needs. `make help` lists them.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
DEV := $(VENV)/.dev
PORT ?= 8080

.DEFAULT_GOAL := help
.PHONY: help install test test-quick test-busy lint format serve no-data-dir demo vendor screenshot bench bench-quick all clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[bitnodes]'
	touch $@

$(DEV): $(RUNTIME)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(RUNTIME)  ## create .venv and install crawldash (and the bitnodes bridge's redis client)

# The suite runs in parallel (pytest-xdist), then the tests marked serial run alone;
# pyproject.toml sets the per-test timeout. Two workers a core: most tests wait on a server,
# a process or a socket. WORKERS=1 runs the first part in one process.
WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
PYTEST := $(BIN)/python -m pytest --durations=20

# The serial part runs even when the parallel part failed, so that one run says it all.
test: $(DEV)  ## install the development tools and run the full test suite, in parallel
	$(PYTEST) -n $(WORKERS) -m 'not serial'; parallel=$$?; \
	$(PYTEST) -m serial && exit $$parallel

test-quick: $(DEV)  ## the suite without the tests marked slow (real browsers, servers, fuzzing)
	$(PYTEST) -n $(WORKERS) -m 'not slow and not serial'; parallel=$$?; \
	$(PYTEST) -m 'not slow and serial'; serial=$$?; \
	[ $$serial -eq 0 ] || [ $$serial -eq 5 ] && exit $$parallel  # 5: no serial test is quick

test-busy: $(DEV)  ## make test with every core kept busy by the bench's hog, as a loaded machine
	$(BIN)/python -m bench.hog $(MAKE) --no-print-directory test

lint: $(DEV)  ## ruff, mypy --strict, the import contracts and the module size budget
	$(BIN)/ruff check crawldash tests examples bench scripts
	$(BIN)/ruff format --check crawldash tests examples bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python scripts/module_sizes.py crawldash tests examples bench scripts

format: $(DEV)  ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix crawldash tests examples bench scripts
	$(BIN)/ruff format crawldash tests examples bench scripts

# Without a DATA_DIR, serve says how to give one before anything is built. A DATA_DIR that
# does not exist (yet) is served as crawldash serve serves it: waited for, with a warning.
serve: $(if $(DATA_DIR),$(RUNTIME),no-data-dir)  ## serve DATA_DIR (the crawler's folder, waited for if not there yet) on 127.0.0.1:PORT
	$(BIN)/python -m crawldash serve --data-dir $(DATA_DIR) --port $(PORT)

no-data-dir:
	@echo "make serve needs the crawler's data folder: make serve DATA_DIR=/path/to/folder" >&2
	@echo "(for bitnodes: its data/export/f9beb4d9; or try make demo)" >&2
	@exit 2

demo: $(RUNTIME)  ## write a realistic demo data folder to ./demo-data and serve it
	$(BIN)/python -m crawldash demo --port $(PORT)

vendor:  ## re-vendor uPlot and the map's world outlines from the npm registry (needs npm)
	scripts/vendor-uplot.sh
	scripts/vendor-world-atlas.sh

screenshot: $(DEV)  ## remake docs/dashboard.png with the browser test of the demo
	CRAWLDASH_SCREENSHOT=docs/dashboard.png $(BIN)/python -m pytest -q tests/test_map_browser.py

bench: $(DEV)  ## measure against a naive server, aiohttp's ceiling and nginx; writes BENCHMARKS.md
	$(BIN)/python -m compileall -q crawldash  # its bytecode cached, as pip's install does
	$(BIN)/python -m bench.run

bench-quick: $(DEV)  ## every benchmark scenario for a few seconds, to see that none is broken
	$(BIN)/python -m compileall -q crawldash
	$(BIN)/python -m bench.run --quick

all: lint test  ## lint, type-check and test

clean:  ## remove the virtualenv, caches and demo data
	rm -rf $(VENV) demo-data build *.egg-info .mypy_cache .ruff_cache
