# The two commands: `make run` (set up and serve) and `make test` (set up and test everything).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run worker test test-fast bench install

# what the server needs (requirements.txt)
$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	touch $@

# scale out only (REDIS_URL): celery and redis
$(VENV)/.scale-installed: requirements-scale.txt $(VENV)/.installed
	$(PY) -m pip install -q -r requirements-scale.txt
	touch $@

# the tests and benchmarks: requirements-dev.txt brings requirements-scale.txt (the scale-out tests
# run real Celery workers); the corpus's libraries without their dependencies
$(VENV)/.dev-installed: requirements-dev.txt requirements-scale.txt requirements-corpus.txt $(VENV)/.installed
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-corpus.txt
	touch $@

install: $(VENV)/.installed

# gunicorn with one gevent worker process (app/serve.py); settings from the environment: make run PORT=9000
run: install $(if $(REDIS_URL),$(VENV)/.scale-installed)
	$(PY) -m app.serve

# scale out: one Celery worker (REDIS_URL, one per GPU: CUDA_VISIBLE_DEVICES=3 make worker); app/celery_worker.py
worker: $(VENV)/.scale-installed
	$(PY) -m app.celery_worker

test: $(VENV)/.dev-installed
	$(PY) -m pytest -q

# the inner loop: everything but the browser tests (CI runs the whole `make test`)
test-fast: $(VENV)/.dev-installed
	$(PY) -m pytest -q -m "not browser"

bench: $(VENV)/.dev-installed
	$(PY) -m benchmarks.latency
	$(PY) -m benchmarks.trace
	$(PY) -m benchmarks.step
