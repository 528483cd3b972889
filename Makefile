# Every target sets up .venv on its own, so a fresh clone needs nothing but python3.11+ and Java 17+.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: install test test-long demo check bench java clean

java:
	@$(PYTHON) scripts/check_java.py

$(STAMP): pyproject.toml
	@$(PYTHON) scripts/check_java.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	@touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

test-long: $(STAMP)
	HUDI_TEST_LONG=1 $(PY) -m pytest -q

demo: $(STAMP)
	$(PY) scripts/demo.py

# ruff (lint, C901 complexity bound), format, mypy strict, then the architecture test: no
# import cycle, pyspark only at the Spark boundary, short functions, docs/architecture.md current
check: $(STAMP)
	$(VENV)/bin/ruff check engine dbt tests scripts bench
	$(VENV)/bin/ruff format --check engine dbt tests scripts bench
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -p no:cacheprovider tests/unit/test_architecture.py

bench: $(STAMP)
	$(PY) bench/run.py
	$(PY) bench/read_bench.py
	$(PY) bench/mor_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
