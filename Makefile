# Set-up and everyday tasks. `make demo` and `make test` work on a fresh clone: they create .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LEGACY_PYTHON ?= $(firstword $(wildcard $(shell pyenv root 2>/dev/null)/versions/3.7.*/bin/python) $(shell command -v python3.7))
DEMO_IN := fixtures/files/k224_functional_bn_x2_full.h5
DEMO_OUT := build/demo/template.h5

.PHONY: demo test test-all check lint format fixtures clean legacy-env jax-env bench fuzz matrix times
JAX_VENV := .venv-jax
JAX_STAMP := $(JAX_VENV)/.installed

# editable_mode=compat: the checkout is put on the path by a .pth line, not by setuptools' import finder, which
# costs every command about 40 ms at start that an installed wheel does not (it imports pathlib and json first).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --config-settings editable_mode=compat -e ".[test]" 2>/dev/null \
		|| $(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	@mkdir -p build/demo
	$(BIN)/mgpu-io inspect $(DEMO_IN)
	$(BIN)/mgpu-io unwrap $(DEMO_IN) $(DEMO_OUT) --force
	$(BIN)/python fixtures/check_prediction.py $(DEMO_OUT) k224_functional_bn_x2_full

# The Keras 2.2.4 / TF 1.15 environment for the BaseModelCheckpoint test on the legacy stack (Python 3.7);
# where no Python 3.7 exists, that test skips and says why.
legacy-env:
	@if [ -n "$(LEGACY_PYTHON)" ]; then LEGACY_PYTHON=$(LEGACY_PYTHON) bash fixtures/generate/run.sh --install-only; \
	else echo "no Python 3.7: the legacy-stack test will skip"; fi

# Keras 3 on JAX with no TensorFlow: tests/load/test_backends.py loads every fixture there (KERAS_BACKEND=jax), and
# tests/deploy/test_deploy_jax.py exports ONNX there (jax2onnx).
$(JAX_STAMP): pyproject.toml
	$(PYTHON) -m venv $(JAX_VENV)
	$(JAX_VENV)/bin/python -m pip install -q --upgrade pip
	$(JAX_VENV)/bin/python -m pip install -q --config-settings editable_mode=compat -e ".[jax,onnx-jax]" pytest 2>/dev/null \
		|| $(JAX_VENV)/bin/python -m pip install -q -e ".[jax,onnx-jax]" pytest
	touch $(JAX_STAMP)

jax-env: $(JAX_STAMP)

# Every test file on every core (pytest-xdist; a file's tests stay on one worker, so its fixtures are made once,
# and a test class is a unit of its own: the layer sweep's writers spread over the workers), after the linters.
# --no-loadscope-reorder keeps conftest.py's order (the long families first): xdist 3.6+ would otherwise start the
# units with the most tests first, and the sweep's small classes last, after everything else.
# `make test` runs each long matrix on its fixed sample (tests/support/tiers.py: every writer family of the layer
# sweep, every optimizer rule and writer of the resumes, every export format and case) and leaves the members
# marked full_matrix to `make test-all`, the whole matrix, which CI runs (.ci/run).
# Leave a long family out by name: make test PYTEST_ARGS='-m "not layer_sweep and not full_matrix"'.
JOBS ?= auto
PYTEST_ARGS ?= -m "not full_matrix"
test: $(STAMP) legacy-env $(JAX_STAMP) lint
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadscope --no-loadscope-reorder $(PYTEST_ARGS)

test-all: $(STAMP) legacy-env $(JAX_STAMP) lint
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadscope --no-loadscope-reorder

# The quick loop for a change to format/ or cli/: the linters, then the core tier (no Keras). Its files are named, not
# selected by marker from the whole suite: collecting every file would import TensorFlow in each worker (25 s).
check: $(STAMP) lint
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadscope --no-loadscope-reorder -m core $$($(BIN)/python tests/support/tiers.py core)

# ruff (lint and format) and mypy, configured in pyproject.toml; `make format` applies ruff's fixes.
lint: $(STAMP)
	$(BIN)/ruff check mgpu_io
	$(BIN)/ruff format --check mgpu_io
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix mgpu_io
	$(BIN)/ruff format mgpu_io

# Regenerate every fixture with the real historical writers: fixtures/files (Python 3.7, TF 1.15, Keras
# 1.2.2/2.1.6/2.2.4/2.3.1), fixtures/applications (keras.applications and Lambda templates), fixtures/tf2 (TF 2.0-2.3,
# Keras 2.3.1 on TF 2, Keras 2.0.9, and the TF 1.15 writers' YAML, SavedModel and checkpoint files), fixtures/layers
# (the layer sweep: every public layer class of ten writers; it uses the environments the others install), then
# this round's: fixtures/plain, lambdas (Python 2.7-3.8), habits, tfops, tf2ckpt, compile, shared and rnn_dropout (see
# each folder's README). Each script installs the environments it needs.
fixtures:
	LEGACY_PYTHON=$(LEGACY_PYTHON) bash fixtures/generate/run.sh
	bash fixtures/generate/applications/run.sh
	bash fixtures/generate/tf2/run.sh
	bash fixtures/generate/layers/run.sh
	bash fixtures/generate/plain/run.sh
	bash fixtures/generate/lambdas/run.sh
	bash fixtures/generate/habits/run.sh
	bash fixtures/generate/tfops/run.sh
	bash fixtures/generate/tf2ckpt/run.sh
	bash fixtures/generate/compile/run.sh
	bash fixtures/generate/shared/run.sh
	bash fixtures/generate/rnn_dropout/run.sh

# Speed and memory against a durable copy and Keras' own loader, each against its goal; writes docs/benchmarks.md
# (about 15 minutes, 35 GB of free disk; `make bench BENCH_ARGS=--reuse` keeps the written wrappers in build/bench
# for the next run and reuses them).
# tests/README.md's table of how long the test commands take, measured from a fresh clone of this commit (its own
# environments installed by the first command; run it on an otherwise idle machine), then written into the page by
# tests/support/times.py from what pytest recorded. About 30 minutes on 2 cores.
TIMES := build/times
times:
	rm -rf $(TIMES) && mkdir -p $(TIMES) && git clone -q . $(TIMES)/clone
	if [ -d ../shared ]; then ln -s "$(abspath ../shared)" $(TIMES)/shared; fi  # beside the clone, as CI has it
	cd $(TIMES)/clone && for command in test test-all check; do \
		$(PYTHON) tests/support/times.py run "make $$command" --records ../records.jsonl -- make $$command; done
	$(PYTHON) tests/support/times.py write --records $(TIMES)/records.jsonl --readme tests/README.md

bench: $(STAMP)
	$(BIN)/python tests/benchmarks/run_benchmarks.py --runs 3 $(BENCH_ARGS)
	$(BIN)/python tests/benchmarks/bucket_throughput.py --files 48 --workers 1 2
	$(BIN)/python tests/benchmarks/rnn_speed.py --write
	$(BIN)/python tests/benchmarks/phases.py --runs 5 --big build/bench/wrapper-1GB.h5 --write

# The long run of the fuzzing harness (hostile and broken files through every entry point; about 40 minutes on 2
# cores). `make test` runs a fast deterministic slice of it (tests/fuzz/test_fuzz_contract.py).
FUZZ_COUNT ?= 2000
fuzz: $(STAMP)
	@mkdir -p build
	$(BIN)/python tests/fuzz/harness.py --seed 0 --count $(FUZZ_COUNT) --jobs 2 --json build/fuzz.json

# The version matrix (noxfile.py): the core on Python 3.9-3.13, the Keras floor on each Keras 3 minor (JAX).
matrix: $(STAMP)
	$(BIN)/python -m pip install -q nox
	$(BIN)/python -m nox

clean:
	rm -rf build .pytest_cache
