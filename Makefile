# context-sidecar — two commands: `make demo` and `make test`.
# Each bootstraps .venv on a fresh machine (python3 + pip are all it needs).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench lint typecheck contract unit e2e protocol-export clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m sidecar demo

test: $(STAMP) lint typecheck contract
	$(PY) -m pytest -q

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
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
