# context-sidecar — two commands: `make demo` and `make test`.
# Each bootstraps .venv on a fresh machine (python3 + pip are all it needs).

PYTHON ?= python3
NPM    ?= npm
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
HOST   := editors/host

.PHONY: demo test docs bench bench-quick soak lint typecheck contract unit e2e wheel-test host-test vscode-test vscode-e2e dashboard-deps sandbox-deps protocol-export clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m sidecar demo

test: $(STAMP) lint typecheck contract docs dashboard-deps sandbox-deps
	$(PY) -m pytest -q
	$(MAKE) host-test
	$(MAKE) vscode-test
	$(MAKE) vscode-e2e

# The VS Code extension: strict TS check, an esbuild bundle of the extension with editors/host
# inside, node tests against the real sidecar, `vsce package` and a check of the .vsix.
VSC := editors/vscode
$(VSC)/node_modules/.installed: $(VSC)/package-lock.json
	cd $(VSC) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

vscode-test: $(STAMP) $(VSC)/node_modules/.installed
	cd $(VSC) && SIDECAR_PYTHON=$(CURDIR)/$(PY) $(NPM) run --silent test:all

# The chat view in a real VS Code: code-server 4.96.4 from npm (installed once into
# ~/.cache/context-sidecar by e2e/install-code-server.sh: ~2.5 min from clean on 2 cores, then
# reused) with the packaged .vsix, driven by Debian's chromium through playwright-core: a tool call
# approved in its card, an edit accepted in the diff editor, a cancel mid-stream, the transcript
# after a reload, a rewind to before the edit (~30 s). Screenshots in .artifacts/vscode-e2e/.
vscode-e2e: $(STAMP) $(VSC)/node_modules/.installed dashboard-deps
	cd $(VSC) && $(NPM) run --silent build && $(NPM) run --silent package >/dev/null
	cd $(VSC) && SIDECAR_PYTHON=$(CURDIR)/$(PY) node e2e/chat.e2e.mjs

# The dashboard page is tested in Debian's chromium with npm playwright-core (no browser
# download): install chromium when it is missing (needs root, as on CI), then the npm lockfile.
DASH := editors/dashboard
dashboard-deps: $(DASH)/node_modules/.installed
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing Debian's chromium for the dashboard page test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# The auto mode runs commands in bubblewrap (sidecar/tools/sandbox.py); its tests need it:
# install Debian's bubblewrap when bwrap is missing (needs root, as on CI).
sandbox-deps:
	@if ! command -v bwrap >/dev/null 2>&1; then \
		echo "installing Debian's bubblewrap for the command sandbox tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	fi

$(DASH)/node_modules/.installed: $(DASH)/package-lock.json
	cd $(DASH) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

# The TypeScript host library, tested against the real sidecar (node's test runner).
$(HOST)/node_modules/.installed: $(HOST)/package-lock.json
	cd $(HOST) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

host-test: $(STAMP) $(HOST)/node_modules/.installed
	cd $(HOST) && $(NPM) run --silent build && SIDECAR_PYTHON=$(CURDIR)/$(PY) $(NPM) test

# Benchmarks with peers side by side (not part of `make test`; minutes, not seconds).
# The table goes to stdout, the figures to bench/results/bench.json.
bench: $(STAMP)
	$(PY) -m bench

bench-quick: $(STAMP)
	$(PY) -m bench --quick --out bench/results/quick.json

# Fifteen minutes of scripted runs, appends and assemblies against one sidecar (issue 20's
# acceptance is measured on 15 minutes): resident memory over the second half (target <= 5%)
# and each method's p99 per window against the first window's (target <= 1.5x); not part of
# `make test`.  A shorter look: `$(PY) -m bench.soak --minutes 5`.
soak: $(STAMP)
	$(PY) -m bench.soak --minutes 15

lint: $(STAMP)
	$(PY) -m ruff check sidecar protocol tests bench docs
	$(PY) -m ruff format --check sidecar protocol tests bench docs

typecheck: $(STAMP)
	$(PY) -m mypy
	$(PY) -m mypy docs/hooks  # the site's build hooks (not a package: mypy takes them as files)

contract: $(STAMP)
	$(PY) -m protocol.export --check

# The documentation site (docs/, mkdocs.yml) built into site/ with --strict: a broken link or
# anchor, or a page missing from the nav, fails it. Browse site/index.html (search works offline).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

protocol-export: $(STAMP)
	$(PY) -m protocol.export

unit: $(STAMP)
	$(PY) -m pytest -q tests/unit tests/protocol

e2e: $(STAMP)
	$(PY) -m pytest -q tests/e2e

# The install a user does, alone: the wheel lines of docs/getting-started.md run as they are
# (build the wheel from a clean copy, install it into a HOME outside the repository), then the
# installed `context-sidecar serve` driven through a session, an assembly and a scripted run.
# `make test` runs the same file with the rest of pytest.
wheel-test: $(STAMP)
	$(PY) -m pytest -q -ra tests/e2e/test_wheel_install.py

clean:
	rm -rf $(VENV) site .mypy_cache .ruff_cache .pytest_cache $(HOST)/node_modules $(HOST)/dist \
		$(DASH)/node_modules $(VSC)/node_modules $(VSC)/dist .artifacts
