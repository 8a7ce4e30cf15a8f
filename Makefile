# jido-kg: `make serve` runs the service, `make test` runs every check. Both set up .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JARS   := .cache/owlapi/jars
PYTEST_ARGS ?=

.PHONY: serve test setup system-deps node-deps owl-jars lint types pytest wheel bench reliability clean

serve: setup
	$(BIN)/jido-kg serve

test: setup owl-jars lint types pytest

setup: system-deps $(STAMP) node-deps

# The virtual environment is rebuilt whenever pyproject.toml changes.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Java runs the OWL API/HermiT ontology check; install it from Debian when it is missing.
system-deps:
	@command -v javac >/dev/null 2>&1 || { \
	  echo "installing a Java JDK (needed by the ontology check)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless; }
	@test -x /usr/bin/chromium && command -v chromedriver >/dev/null 2>&1 || { \
	  echo "installing chromium + chromium-driver (the query page's browser test)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }
	@command -v npm >/dev/null 2>&1 || { \
	  echo "installing nodejs + npm (YASGUI files, the comunica client test)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; }

# The query page's YASGUI files and the comunica client (tests) come from npm, pinned by the
# lockfile; YASGUI is copied into api/static (git-ignored), so pages never load from a CDN.
NODE_DIR := tools/node
YASGUI   := api/static/yasgui
node-deps: $(NODE_DIR)/node_modules/.installed $(YASGUI)/yasgui.min.js

$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund
	touch $@

$(YASGUI)/yasgui.min.js: $(NODE_DIR)/node_modules/.installed
	mkdir -p $(YASGUI)
	cp $(NODE_DIR)/node_modules/@zazuko/yasgui/build/yasgui.min.js \
	   $(NODE_DIR)/node_modules/@zazuko/yasgui/build/yasgui.min.css $(YASGUI)/

owl-jars: $(STAMP)
	PYTHON=$(BIN)/python bash tools/fetch_owl_jars.sh $(JARS)

lint: $(STAMP)
	$(BIN)/ruff check .

types: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

wheel: $(STAMP)
	$(BIN)/python -m build --wheel --outdir dist .

# Benchmarks are not timed tests: `make bench` runs every scenario at 10k/100k/1M memories and
# writes BENCHMARKS.md with plots (long: the 1M store is built once and cached in .cache/bench).
bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

# The full reliability suite (kill -9 cycles, 60 s soak, 10,000-request fuzz, security, backup);
# its fast subset runs inside `make test` (tests/bench).
reliability: $(STAMP)
	$(BIN)/python -m bench.reliability --write-doc $(RELIABILITY_ARGS)

clean:
	rm -rf $(VENV) .cache dist build .mypy_cache .ruff_cache .pytest_cache
