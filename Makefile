# Entry points: `make demo` and `make test`; for contributors `make lint`,
# `make docs` and `make test-fast` (CONTRIBUTING.md). Each creates .venv on
# first use; plain `make` only creates it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# `make demo` alone installs only what the demo runs (DEMO_EXTRAS).
DEMO_STAMP := $(VENV)/.demo-installed
# The translation demo on the tensorflow backend: TensorFlow (tf.data),
# keras-hub and sentencepiece (tokenizer), sacrebleu and sacremoses (BLEU).
DEMO_EXTRAS := applications
BACKENDS ?= tensorflow jax torch
# tensorflow ran the fast subset about 5 times faster than jax on the 2-core
# machine; CONTRIBUTING.md has the timings.
FAST_BACKEND ?= tensorflow
# `make test` runs the backends side by side, each pinned to a CPU of its
# own (tests/run_backends.py); JOBS=1 runs them one after the other.
JOBS ?=
# pytest-xdist workers for `make test-fast`'s one backend; whole files go to
# one worker (`--dist loadfile`), so a file's tests keep their order.
# WORKERS=0 runs in one process.
WORKERS ?= 2
XDIST := $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile)

LINTED := keras_attention tests benchmarks applications tutorials docs

.PHONY: demo test test-fast lint docs bench wheel-smoke

# Every extra, with the versions of constraints.txt (torch's CPU wheel
# among them).
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[all,tests,docs]"
	touch $(STAMP)

# Only the demo's extras, unless everything is installed already.
$(DEMO_STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[$(DEMO_EXTRAS)]"
	touch $(DEMO_STAMP)

demo: $(if $(wildcard $(STAMP)),$(STAMP),$(DEMO_STAMP))
	KERAS_BACKEND=$(or $(KERAS_BACKEND),tensorflow) $(PY) applications/translation/train.py --demo

# --durations: each backend's log names its slowest tests, to keep the CI
# run's time in view.
test: $(STAMP)
	$(PY) tests/run_backends.py $(if $(JOBS),--jobs $(JOBS)) $(BACKENDS) -- --durations=15

# One backend, without the tests marked slow (tests/conftest.py): for the
# edit-and-rerun loop; `make test` is the full suite CI runs.
test-fast: $(STAMP)
	$(PY) tests/run_backends.py $(FAST_BACKEND) -- -m "not slow" $(XDIST)

lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

# Warnings are errors. NO_MKDOCS_2_WARNING silences the theme's banner
# about its end of life (CONTRIBUTING.md says what it means here).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# The built wheel in a fresh virtual environment per backend, without
# TensorFlow: tests/smoke/smoke.py run from outside the source tree.
wheel-smoke: $(STAMP)
	PYTHON=$(abspath $(PY)) .ci/wheel_smoke

bench: $(STAMP)
	$(PY) benchmarks/multi_head_attention.py
