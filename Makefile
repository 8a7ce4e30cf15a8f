# jido-kg: `make serve` runs the service, `make test` runs every check. Both set up .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JARS   := .cache/owlapi/jars
PYTEST_ARGS ?=

.PHONY: serve test setup system-deps owl-jars lint types pytest wheel bench clean

serve: setup
	$(BIN)/jido-kg serve

test: setup owl-jars lint types pytest

setup: system-deps $(STAMP)

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

clean:
	rm -rf $(VENV) .cache dist build .mypy_cache .ruff_cache .pytest_cache
