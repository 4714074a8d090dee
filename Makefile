# dbt-hiveopt: `make demo` runs the example project through hiveopt on local Spark;
# `make test` runs the whole suite. Both set everything up from a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
TPCH_SCALE ?= 0.1
TPCH_DIR := $(CURDIR)/data/tpch-$(TPCH_SCALE)
export HIVEOPT_TPCH_DIR := $(TPCH_DIR)
PYTEST_ARGS ?=
# Two pytest-xdist workers (tests/conftest.py sends them a module at a time, the test cluster's
# modules together): most of the suite waits on JVMs, servers and dbt, not on both cores.
# PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 2

.PHONY: install data demo lint test test-all browser bench bench-project bench-thrift bench-jaffle bench-tpcds calibrate fuzz fuzz-corpus clean

# A regular (not editable) install: dbt finds adapters by listing dbt/adapters/*/ in
# site-packages (`dbt init`, `dbt --version`), which an editable install does not populate.
# Reinstalled whenever a source file changes, so tests always run the working tree.
SOURCES := pyproject.toml $(shell find dbt -type f \( -name '*.py' -o -name '*.sql' -o -name '*.yml' \) 2>/dev/null)

$(VENV)/.installed: $(SOURCES)
	@command -v java >/dev/null || { echo "Java 17 is needed by Spark (apt-get install openjdk-17-jre-headless)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip hatchling setuptools wheel
	$(BIN)/pip install -q --no-build-isolation ".[test]"
	$(BIN)/pip install -q --no-build-isolation --no-deps --force-reinstall .
	touch $@

install: $(VENV)/.installed

data: install
	PATH="$(BIN):$$PATH" bash integration_tests/scripts/generate_tpch.sh $(TPCH_SCALE) $(TPCH_DIR)

demo: data
	cd integration_tests && $(BIN)/dbt build --profiles-dir . --target session
	@echo
	$(BIN)/hiveopt summary --project-dir integration_tests
	@echo
	@echo "Optimized SQL and the optimizer's record of every model: integration_tests/target/hiveopt/<model>.sql and <model>.json"
	@echo "One model, before and after:  $(VENV)/bin/hiveopt explain revenue_by_nation --project-dir integration_tests"
	@echo "The report, in a browser:      integration_tests/target/hiveopt/index.html"

# The formatter and the linter (configured in pyproject.toml); `make test` runs them first.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: data lint browser
	$(BIN)/pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# Everything `make test` runs, and the slow matrix: every dbt conformance class on Thrift and on
# Spark Connect too (marked `matrix`). Every class on session, Thrift and Connect, the cluster's
# start included (pytest -m "matrix or not matrix" tests/functional): 6 minutes on two cores.
test-all: data lint browser
	$(BIN)/pytest -n $(PYTEST_WORKERS) -m "matrix or not matrix" $(PYTEST_ARGS)

# The HTML report's test opens the report in Debian's Chromium (browsers that download themselves
# cannot be fetched here); installed when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null || $(SUDO) apt-get install -y -q chromium \
		|| ($(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium)

# Benchmarks print figures (medians, ratios against plain dbt-spark in the same run); not tests.
bench: install
	$(BIN)/python bench/broadcast.py
	$(BIN)/python bench/join_order.py
	$(BIN)/python bench/skew_join.py
	$(BIN)/python bench/correlation.py
	$(BIN)/python bench/optimizer_time.py
	$(BIN)/python bench/pruning.py
	$(BIN)/python bench/tpch.py

# The decisions against their alternatives on this Spark (docs/calibration.md keeps the tables).
calibrate: install
	$(BIN)/python bench/calibrate.py

# TPC-DS SF 1, the 99 queries as dbt models, dbt-spark against hiveopt (about 35 minutes).
bench-tpcds: install
	$(BIN)/pip install -q --no-build-isolation ".[tpcds]"
	$(BIN)/python bench/tpcds.py --scale 1 --rounds 3 --warmup 1

# The whole example project, dbt-spark vs hiveopt, at SF 0.1 and SF 1 (paired rounds).
bench-project: install
	$(BIN)/python bench/project_build.py --scale 0.1 --rounds 3
	$(BIN)/python bench/project_build.py --scale 1 --rounds 3

# The same over Thrift: both sides on a local standalone cluster the script starts and stops.
bench-thrift: install
	$(BIN)/python bench/project_build.py --scale 0.1 --rounds 6 --thrift --feedback explore --warm-builds 2

# A project shaped like dbt's jaffle_shop (seeds, import-CTE staging views, two marts): what hiveopt
# costs where no rule has anything to gain.
bench-jaffle: install
	$(BIN)/python bench/jaffle_shop.py --rounds 7

# The differential fuzzer: random queries, statistics and config; original vs optimized on Spark.
N ?= 1000
SEED ?= 1
fuzz: install
	$(BIN)/python -m fuzz --queries $(N) --seed $(SEED)

# The benchmarks' own queries under random statistics: TPC-DS's 99 and TPC-H's 40 at scale 0.01,
# DRAWS statistics and config each (the first as gathered), original vs optimized on Spark.
DRAWS ?= 3
fuzz-corpus: install
	$(BIN)/pip install -q --no-build-isolation ".[tpcds]"
	$(BIN)/python -m fuzz.corpus --suite tpcds --draws $(DRAWS) --seed $(SEED)
	$(BIN)/python -m fuzz.corpus --suite tpch --draws $(DRAWS) --seed $(SEED)

clean:
	rm -rf integration_tests/target integration_tests/logs integration_tests/.hiveopt-spark .pytest_cache
