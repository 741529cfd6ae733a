# Two entry points: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BACKENDS ?= tensorflow jax torch

.PHONY: demo test lint bench

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[jax,torch,tests,evaluation,plots]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) applications/translation/train.py --demo

test: $(STAMP)
	$(PY) tests/run_backends.py $(BACKENDS)

lint: $(STAMP)
	$(VENV)/bin/ruff check keras_attention tests benchmarks applications tutorials
	$(VENV)/bin/ruff format --check keras_attention tests benchmarks applications tutorials

bench: $(STAMP)
	$(PY) benchmarks/multi_head_attention.py
