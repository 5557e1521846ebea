# The two commands: `make run` (set up and serve) and `make test` (set up and test everything).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run worker test test-fast bench install

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-corpus.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-corpus.txt
	touch $@

install: $(VENV)/.installed

# gunicorn with one gevent worker process (app/serve.py); settings from the environment: make run PORT=9000
run: install
	$(PY) -m app.serve

# scale out: one Celery worker (REDIS_URL, one per GPU: CUDA_VISIBLE_DEVICES=3 make worker); app/celery_worker.py
worker: install
	$(PY) -m app.celery_worker

test: install
	$(PY) -m pytest -q

# the inner loop: everything but the browser tests (CI runs the whole `make test`)
test-fast: install
	$(PY) -m pytest -q -m "not browser"

bench: install
	$(PY) -m benchmarks.latency
	$(PY) -m benchmarks.trace
	$(PY) -m benchmarks.step
