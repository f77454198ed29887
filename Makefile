# crawldash: every command a developer or CI needs. `make help` lists them.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
DEV := $(VENV)/.dev
PORT ?= 8080

.DEFAULT_GOAL := help
.PHONY: help install test test-quick lint format serve no-data-dir demo vendor screenshot bench bench-quick all clean

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

test: $(DEV)  ## install the development tools and run the full test suite
	$(BIN)/python -m pytest

test-quick: $(DEV)  ## the suite without the tests marked slow (real browsers, servers, fuzzing)
	$(BIN)/python -m pytest -m 'not slow'

lint: $(DEV)  ## ruff, mypy --strict, the import contracts and the module size budget
	$(BIN)/ruff check crawldash tests examples bench scripts
	$(BIN)/ruff format --check crawldash tests examples bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python scripts/module_sizes.py crawldash

format: $(DEV)  ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix crawldash tests examples bench scripts
	$(BIN)/ruff format crawldash tests examples bench scripts

# Without a DATA_DIR that is a folder, serve says how to give one before anything is built.
serve: $(if $(and $(DATA_DIR),$(wildcard $(DATA_DIR)/.)),$(RUNTIME),no-data-dir)  ## serve DATA_DIR (the crawler's folder) on 127.0.0.1:PORT
	$(BIN)/python -m crawldash serve --data-dir $(DATA_DIR) --port $(PORT)

no-data-dir:
	@$(if $(DATA_DIR),echo "DATA_DIR=$(DATA_DIR) is not a folder" >&2)
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
