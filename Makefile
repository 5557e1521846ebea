# The two commands: `make run` (set up and serve) and `make test` (set up and test everything).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

# A host without NVIDIA's driver gets torch's CPU build: plain PyPI's torch for Linux is the CUDA
# build, gigabytes that no kernel here would use. The CPU index's 2.13.0+cpu satisfies torch==2.13.0.
# Not where pip has sources of its own (a wheelhouse, a mirror: its environment or `pip config`):
# that host chose where torch comes from, and may not reach the CPU index at all.
CPU_TORCH := https://download.pytorch.org/whl/cpu
PIP_SOURCES := $(strip $(PIP_FIND_LINKS)$(PIP_INDEX_URL)$(PIP_EXTRA_INDEX_URL)$(shell $(PYTHON) -m pip config list 2>/dev/null | grep -E 'index-url|find-links'))
TORCH_INDEX := $(if $(or $(shell command -v nvidia-smi 2>/dev/null),$(PIP_SOURCES)),,--extra-index-url $(CPU_TORCH))

# the pure page modules' tests (tests/js), where node is installed; they read the server's schema with $(PY)
NODE_TEST = $(if $(shell command -v node 2>/dev/null),PYTHON=$(PY) node --test tests/js/,@echo "no node: the page modules' tests (tests/js) skipped")

# Triton versions beside the default (requirements.txt's): `make run TRITON_VERSIONS="3.8.0 3.7.1"`. Each is
# installed once, without its dependencies (torch is the environment's), into a directory of its own,
# TRITONS_DIR/<version>, which its workers find first (sandbox/tritons.py). Wheels are large: pip's cache keeps them.
TRITONS_DIR ?= $(CURDIR)/instance/tritons
DEFAULT_TRITON := $(shell sed -n 's/^triton==//p' requirements.txt)
# The second version `make test` runs through real workers: whichever of these two is not the default.
TEST_TRITON ?= $(if $(filter 3.7.1,$(DEFAULT_TRITON)),3.9.0,3.7.1)
export TRITON_VERSIONS TRITONS_DIR WORKER_TRITON
tritons_of = $(foreach v,$(filter-out $(DEFAULT_TRITON),$(1)),$(TRITONS_DIR)/$(v)/.installed)

.PHONY: run worker test test-unit bench install docs tritons

# what the server needs (requirements.txt); not quiet: the first install takes minutes (torch)
$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing requirements.txt$(if $(TORCH_INDEX), (no nvidia-smi here: torch's CPU build from $(CPU_TORCH)))"
	$(PY) -m pip install $(TORCH_INDEX) -r requirements.txt
	touch $@

# scale out only (REDIS_URL, DATABASE_URL): celery, redis, psycopg
$(VENV)/.scale-installed: requirements-scale.txt $(VENV)/.installed
	$(PY) -m pip install -q -r requirements-scale.txt
	touch $@

# the tests and benchmarks: requirements-dev.txt brings requirements-scale.txt (the scale-out tests
# run real Celery workers and a real PostgreSQL); the corpus's libraries without their dependencies
$(VENV)/.dev-installed: requirements-dev.txt requirements-scale.txt requirements-corpus.txt $(VENV)/.installed
	$(PY) -m pip install $(TORCH_INDEX) -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-corpus.txt
	touch $@

install: $(VENV)/.installed

$(TRITONS_DIR)/%/.installed: | $(VENV)/.installed
	$(PY) -m pip install --no-deps --target $(TRITONS_DIR)/$* triton==$*
	touch $@

# the versions TRITON_VERSIONS (and WORKER_TRITON) name, into TRITONS_DIR
tritons: $(call tritons_of,$(TRITON_VERSIONS) $(WORKER_TRITON))

# gunicorn with one gevent worker process (app/serve.py); settings from the environment: make run PORT=9000
run: install tritons $(if $(REDIS_URL)$(DATABASE_URL),$(VENV)/.scale-installed)
	$(PY) -m app.serve

# scale out: one Celery worker (REDIS_URL, one per GPU: CUDA_VISIBLE_DEVICES=3 make worker; one per Triton
# version: WORKER_TRITON=3.8.0 make worker); app/dispatch/celery_worker.py
worker: $(VENV)/.scale-installed tritons
	$(PY) -m app.dispatch.celery_worker

# everything: unit, integration (real workers, servers, the corpora), browser, and gpu on a GPU host; the
# tests of several Triton versions run the default and TEST_TRITON (tests/test_tritons.py)
test: $(VENV)/.dev-installed $(call tritons_of,$(TEST_TRITON))
	$(NODE_TEST)
	TEST_TRITON=$(TEST_TRITON) $(PY) -m pytest -q

# the inner loop, under a minute: no worker process, no browser, no network (tests/conftest.py)
test-unit: $(VENV)/.dev-installed
	$(NODE_TEST)
	$(PY) -m pytest -q -m unit

bench: $(VENV)/.dev-installed
	$(PY) -m benchmarks.latency
	$(PY) -m benchmarks.trace
	$(PY) -m benchmarks.step

# the generated parts of docs/ (the settings table of docs/configuration.md) from their definition in the code
docs: install
	$(PY) docs/generate.py
