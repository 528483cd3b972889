# Every target sets up .venv on its own, so a fresh clone needs nothing but python3.11+ and Java 17+.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: install test test-long demo demo-connect check bench bench-dbt java clean browser docs \
	docs-serve hudi-jvm

java:
	@$(PYTHON) scripts/check_java.py

# uv installs into the venv: it fetches in parallel and resolves at once, where pip took five
# times as long on a fresh machine (pyspark alone is a 400 MB source distribution).
UV := $(VENV)/bin/uv

$(UV):
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "uv>=0.5"

# the venv itself comes with uv ($(UV)'s rule)
$(STAMP): pyproject.toml | $(UV)
	@$(PYTHON) scripts/check_java.py
	$(UV) pip install -q --python $(PY) -e ".[dev,connect,docs]"
	@touch $(STAMP)

install: $(STAMP)

# The report test renders the HTML page in a headless Chromium from the OS packages: install it
# where apt-get runs as root (CI, the developers' machines); elsewhere that test skips, saying why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing chromium (Debian package) for the report test"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
			>/dev/null) || echo "chromium could not be installed: the report test will skip"; \
	else \
		echo "no chromium and no root apt-get: the report test will skip"; \
	fi

# Apache Hudi's own Spark bundles judge the tables (tests/hudi_jvm): per release a venv with its
# pyspark 3.5 and the bundle from Maven Central, cached in ~/.cache/dbt-hudi/hudi-jvm (instant
# once there). A test dependency only. What cannot be fetched is named, and those tests fail.
hudi-jvm: $(STAMP)
	@$(PY) -m tests.hudi_jvm.provision || echo "hudi-jvm: not set up; the tests/hudi_jvm tests will fail"

# The suite's files run on TEST_WORKERS worker processes (pytest-xdist), each with its own
# SparkSession and servers, a file's tests on one worker (--dist loadfile: its module fixtures are
# shared; the files that use Apache Hudi's JVMs all on one, so each release's JVM starts once:
# tests/conftest.py); the Spark jobs of tests are small and latency-bound, so two workers keep two cores
# busy. Files are handed out in collection order (tests/conftest.py puts the longest folders
# first), not reordered by test count. TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= 2
PYTEST_WORKERS = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test: $(STAMP) browser hudi-jvm
	$(PY) -m pytest -q $(PYTEST_WORKERS)

test-long: $(STAMP) browser hudi-jvm
	HUDI_TEST_LONG=1 $(PY) -m pytest -q $(PYTEST_WORKERS)

demo: $(STAMP)
	$(PY) scripts/demo.py

# the same through Spark Connect: a server from the installed pyspark, or SPARK_REMOTE's
demo-connect: $(STAMP)
	$(PY) scripts/demo.py --connect $(SPARK_REMOTE)

# ruff (lint, C901 complexity bound), format, mypy strict, lint-imports (the layers and forbidden
# imports pyproject.toml declares, TYPE_CHECKING imports counted), then the architecture test: no
# import cycle, pyspark only at the Spark boundary, short functions, docs/architecture.md current
check: $(STAMP)
	$(VENV)/bin/ruff check engine dbt tests scripts bench
	$(VENV)/bin/ruff format --check engine dbt tests scripts bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q -p no:cacheprovider tests/unit/test_architecture.py

# BENCH_ROWS=200000 BENCH_REPS=2 make bench: a quick run, not recorded in bench/results.json (bench/run.py says what it measures)
bench: $(STAMP) $(UV)
	$(UV) pip install -q --python $(PY) -e ".[dev,bench]"
	$(PY) bench/run.py

# the seconds a user waits: a one-model project, each dbt run a fresh process (bench/dbt_latency.py)
bench-dbt: $(STAMP)
	$(PY) bench/dbt_latency.py

# the user guide (mkdocs.yml, docs/): the config reference is generated from the code and the
# performance plots from bench/results.json as it builds (scripts/mkdocs_hooks.py)
docs: export NO_MKDOCS_2_WARNING := 1
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

docs-serve: export NO_MKDOCS_2_WARNING := 1
docs-serve: $(STAMP)
	$(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

clean:
	rm -rf site $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
