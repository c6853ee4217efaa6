# context-sidecar — two commands: `make demo` and `make test`.
# Each bootstraps .venv on a fresh machine (python3 + pip are all it needs).

PYTHON ?= python3
NPM    ?= npm
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
HOST   := editors/host

.PHONY: demo test bench lint typecheck contract unit e2e host-test protocol-export clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m sidecar demo

test: $(STAMP) lint typecheck contract
	$(PY) -m pytest -q
	$(MAKE) host-test

# The TypeScript host library, tested against the real sidecar (node's test runner).
$(HOST)/node_modules/.installed: $(HOST)/package-lock.json
	cd $(HOST) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

host-test: $(STAMP) $(HOST)/node_modules/.installed
	cd $(HOST) && $(NPM) run --silent build && SIDECAR_PYTHON=$(CURDIR)/$(PY) $(NPM) test

# Benchmarks with peers side by side (not part of `make test`; minutes, not seconds).
bench: $(STAMP)
	$(PY) -m bench.assembly

lint: $(STAMP)
	$(PY) -m ruff check sidecar protocol tests bench
	$(PY) -m ruff format --check sidecar protocol tests bench

typecheck: $(STAMP)
	$(PY) -m mypy

contract: $(STAMP)
	$(PY) -m protocol.export --check

protocol-export: $(STAMP)
	$(PY) -m protocol.export

unit: $(STAMP)
	$(PY) -m pytest -q tests/unit tests/protocol

e2e: $(STAMP)
	$(PY) -m pytest -q tests/e2e

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache $(HOST)/node_modules $(HOST)/dist
