# The two commands: `make run` (set up and serve) and `make test` (set up and test everything).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
THREADS ?= 32

.PHONY: run test bench install

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

run: install
	$(VENV)/bin/gunicorn -w 1 --threads $(THREADS) -b $(HOST):$(PORT) --timeout 0 'app:create_app()'

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) -m benchmarks.latency
	$(PY) -m benchmarks.trace
