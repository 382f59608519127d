# lakehouse_assets: every target sets itself up first and is safe to run again.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CDS := .cache/spark-cds/BUILT
export LAKEHOUSE_ROOT ?= $(CURDIR)/data
# The Dagster instance: data/dagster, with the repository's dagster.yaml copied in (target
# `instance`), unless DAGSTER_HOME names another one.
LOCAL_INSTANCE := $(CURDIR)/data/dagster
export DAGSTER_HOME ?= $(LOCAL_INSTANCE)
PYTEST_ARGS ?=
# The code server's gRPC threads and those of the proxy dagster dev starts before it (Dagster's
# default is cores + 4): each landing sensor's tick holds one of each while it watches its folder
# (docs/orchestration.md#landing-sensors).
export DAGSTER_GRPC_MAX_WORKERS ?= 16
export DAGSTER_CODE_SERVER_MAX_WORKERS ?= 16
# make test runs the suite in this many worker processes (pytest-xdist), each with its own
# SparkSession; 0: in this process. On 2 cores two workers are slower (docs/testing.md).
TEST_WORKERS ?= 0
# devstack/ (the local servers) and lakehouse_assets_tests/ are not installed: every command here,
# and every process it starts, imports them from this checkout.
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: setup demo test test-slow test-all dev engine kafka land latency materialize clean-data help chaos chaos-sdp lint unit lock

help:
	@echo "make demo        - land a sample batch, materialize every asset, print a summary"
	@echo "make test        - run the test suite but the slow tier (make test-slow, make test-all)"
	@echo "make dev         - start the Spark Connect engine, the Dagster UI and daemon on http://127.0.0.1:\$$DAGSTER_PORT (3000)"
	@echo "make engine      - run the Spark Connect engine in the foreground (then export SPARK_REMOTE=sc://127.0.0.1:15002)"
	@echo "make postgres    - run a throwaway PostgreSQL for Dagster's storage in the foreground; make dev POSTGRES=1 starts one too"
	@echo "make cluster     - run a Spark standalone master and worker in the foreground (then make engine SPARK_MASTER=spark://127.0.0.1:7077)"
	@echo "make s3          - run an S3-compatible server (S3Proxy) in the foreground; make dev S3=1 makes its bucket the data root"
	@echo "make stack       - the whole scale-out stack: cluster, engine on it, S3 bucket as data root, PostgreSQL, Dagster UI"
	@echo "make kafka       - run a Kafka broker in the foreground on 127.0.0.1:\$$LAKEHOUSE_KAFKA_PORT (9092); make dev KAFKA=1 starts one too"
	@echo "make land        - drop a new generated batch into the landing zone"
	@echo "make materialize - materialize every asset once (dagster asset materialize --select '*')"
	@echo "make latency     - time landed file -> gold_hourly_revenue over 10 drops (p50, p95); BURST=1: all sources at once;"
	@echo "                   STEADY=1: each drop the moment the last reached gold"
	@echo "make bench       - the benchmark suite (bench/results.md); make bench-sdp: the SDP example vs spark-pipelines;"
	@echo "                   make bench-scale-out: the events chain on a cluster and an S3 bucket vs local mode;"
	@echo "                   make bench-history: runs and sensor ticks after 10 .. 100,000 earlier files, a backfill;"
	@echo "                   make bench-tick: a sensor tick in a folder of 10 .. 1,000,000 files (Spark-free)"
	@echo "                   make bench-tick-s3: the same in a bucket folder (S3Proxy; listing requests a tick)"
	@echo "make chaos       - SIGKILL runs at random instants (CHAOS_ARGS='--kills 200'), tally lost/duplicated rows;"
	@echo "                   CHAOS_ARGS='--engine' runs through a Spark Connect engine and kills it too"
	@echo "make chaos-sdp   - the same for the SDP example (examples/sdp_orders): CHAOS_ARGS='--rounds 4 --kills-per-round 6'"
	@echo "make lint        - ruff check and ruff format --check on the whole repository, mypy on the framework (lakehouse_assets/lib)"
	@echo "make unit        - the Spark-free unit tests (seconds)"
	@echo "make setup       - create .venv, cache Delta's jars, build the Spark class archive (done by every target)"
	@echo "make lock        - refresh requirements.lock and requirements-build.lock after a dependency change (needs uv)"
	@echo "make clean-data  - delete the landing zone, tables, checkpoints and Dagster's local runs under data/"
	@echo "variables: LAKEHOUSE_ROOT (data root, default data/), DAGSTER_HOME (default: data/dagster),"
	@echo "           DAGSTER_PORT (3000), LAKEHOUSE_ENGINE_PORT (15002), SPARK_REMOTE (a Connect engine for every run),"
	@echo "           SPARK_MASTER (the engine's or embedded driver's master), ENGINE=0 (make dev without the engine),"
	@echo "           DAGSTER_LOG_LEVEL (make dev's service logs: warning);"
	@echo "           see docs/configuration.md"

setup: $(STAMP) jars $(CDS) instance

# The local instance gets the repository's dagster.yaml (again, saying so, when it differs); an
# instance DAGSTER_HOME names elsewhere is the user's and is left alone. Runs and cursors kept
# under data/dagster/storage by earlier versions move to where Dagster looks for them now.
.PHONY: instance
instance: $(STAMP)
	@sed -i '/DAGSTER_HOME/d' $(BIN)/activate && \
	  echo 'export DAGSTER_HOME="$${DAGSTER_HOME:-$(LOCAL_INSTANCE)}"' >> $(BIN)/activate
	@home="$(DAGSTER_HOME)"; \
	if [ "$$home" = "$(LOCAL_INSTANCE)" ]; then \
	  mkdir -p "$$home"; \
	  for old in history schedules; do \
	    if [ -d "$$home/storage/$$old" ] && [ ! -e "$$home/$$old" ]; then mv "$$home/storage/$$old" "$$home/$$old"; fi; \
	  done; \
	  if ! cmp -s dagster.yaml "$$home/dagster.yaml"; then \
	    [ -f "$$home/dagster.yaml" ] && echo "note: replacing $$home/dagster.yaml with the repository's dagster.yaml" >&2; \
	    cp dagster.yaml "$$home/dagster.yaml"; \
	  fi; \
	elif [ "$$home" = "$(CURDIR)" ]; then \
	  echo "note: DAGSTER_HOME is this repository (an older .venv/bin/activate set it); runs now go under data/dagster: unset DAGSTER_HOME, then source .venv/bin/activate again" >&2; \
	elif [ "$${home#/}" = "$$home" ] || [ ! -d "$$home" ]; then \
	  echo "Setup stopped: DAGSTER_HOME=$$home must be an existing folder, given as an absolute path." >&2; exit 1; \
	elif [ ! -f "$$home/dagster.yaml" ]; then \
	  echo "note: DAGSTER_HOME=$$home has no dagster.yaml; Dagster's defaults apply (copy this repository's dagster.yaml there for its pools and run queue)" >&2; \
	fi

# Python packages come from the lock files only, each checked against its SHA-256 (pip's
# --require-hashes): the build tools first, then every dependency with no resolution and no build
# tool fetched on the side, then this checkout itself. `make lock` refreshes them.
$(STAMP): pyproject.toml requirements.lock requirements-build.lock
	@command -v java >/dev/null 2>&1 && java -version >/dev/null 2>&1 || { \
	  echo "Setup stopped: Java is missing. Install a JDK 17 or newer (for example: apt-get install openjdk-17-jdk-headless) and run make again." >&2; exit 1; }
	@command -v $(PYTHON) >/dev/null 2>&1 || { \
	  echo "Setup stopped: $(PYTHON) is missing. Install Python 3.11 or run make PYTHON=/path/to/python3.11." >&2; exit 1; }
	@mkdir -p .cache
	@echo "setup: creating .venv and installing the Python packages (log: .cache/setup.log)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@{ $(BIN)/python -m pip install --require-hashes --no-deps -r requirements-build.lock \
	  && $(BIN)/python -m pip install --require-hashes --no-deps --no-build-isolation -r requirements.lock \
	  && $(BIN)/python -m pip install --no-deps --no-build-isolation -e . && $(BIN)/python -m pip check; } > .cache/setup.log 2>&1 || { \
	  tail -30 .cache/setup.log >&2; \
	  echo "Setup stopped: pip could not install the Python packages (above, full log .cache/setup.log); check the network or proxy and run make again." >&2; exit 1; }
	@touch $(STAMP)

# The lock files setup installs from: every package (the dependencies of pyproject.toml, with the
# test and bench extras) pinned with its SHA-256s for Python 3.11 on Linux, and the build tools
# (pip, setuptools). Run after changing a dependency; needs uv (pip install uv, outside .venv).
UV ?= uv
LOCK_TARGET := --generate-hashes --python-version 3.11 --python-platform x86_64-unknown-linux-gnu --custom-compile-command "make lock"
lock:
	$(UV) pip compile pyproject.toml --extra test --extra bench $(LOCK_TARGET) -o requirements.lock
	printf 'pip\nsetuptools>=68\n' | $(UV) pip compile - $(LOCK_TARGET) -o requirements-build.lock

# Delta's jars, in the per-user cache (lakehouse_assets/lib/spark/jars.py): downloaded once per
# machine, then found in a second.
.PHONY: jars
jars: $(STAMP)
	@$(BIN)/python -c 'import sys; from lakehouse_assets.lib.spark.jars import main; sys.exit(main())'
	@$(BIN)/python -c 'import sys; from devstack.kafka_broker import setup; sys.exit(setup())'
	@$(BIN)/python -c 'import sys; from devstack.s3server import setup; sys.exit(setup())'

# The Spark driver's class archive (lakehouse_assets/lib/accel/class_archive.py), in the per-user
# cache: one training run of the demo (devstack/archive_training.py), once; $(CDS) only marks it
# done for this checkout. Not written (the JVM refused): runs work without it, and the next make
# tries again.
$(CDS): $(STAMP) lakehouse_assets/lib/spark/jars.py lakehouse_assets/lib/accel/class_archive.py | jars
	@$(BIN)/python -c 'import sys; from lakehouse_assets.lib.accel.class_archive import build; sys.exit(build("devstack.archive_training"))' && mkdir -p $(@D) && touch $@ || true

demo: setup
	@$(BIN)/python -m lakehouse_assets.generate
	@$(BIN)/dagster asset materialize -m lakehouse_assets.definitions --select '*' > .cache/demo-run.log 2>&1 || { \
	  tail -40 .cache/demo-run.log; echo "materialization failed; full log: .cache/demo-run.log" >&2; exit 1; }
	@$(BIN)/python -m lakehouse_assets.summary

# The terminal gets the run's INFO lines (a line per table, warnings, errors); Dagster's DEBUG step
# events stay in the run's event log (Definitions' loggers do not reach this command's job).
QUIET_RUN := {"loggers": {"console": {"config": {"log_level": "INFO"}}}}

materialize: setup
	SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1} $(BIN)/dagster asset materialize -m lakehouse_assets.definitions --select '*' \
	  --config-json '$(QUIET_RUN)'

land: setup
	@$(BIN)/python -m lakehouse_assets.generate

# Spark's own Connect server (devstack/connect_server.py) in the foreground on
# 127.0.0.1:LAKEHOUSE_ENGINE_PORT (15002), with Delta and the project's settings; a run with
# SPARK_REMOTE=sc://127.0.0.1:15002 is its client and starts no JVM. SPARK_MASTER picks its master.
# A server that dies is started again; every server of a target ends with the target's Python.
engine: setup
	@SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1} $(BIN)/python -m devstack.connect_server

# A throwaway PostgreSQL (Debian's package) on 127.0.0.1:$$LAKEHOUSE_POSTGRES_PORT (5433) in the
# foreground; it prints the DAGSTER_PG_URL for a dagster.yaml with Postgres storage.
.PHONY: postgres
postgres: setup
	@$(BIN)/python -m devstack.postgres --port $${LAKEHOUSE_POSTGRES_PORT:-5433}

# A single-node Kafka broker (KRaft) in the foreground, data under $(LAKEHOUSE_ROOT)/kafka; runs
# read it with LAKEHOUSE_KAFKA_BOOTSTRAP=127.0.0.1:9092 (bronze_events' flow from topic events).
kafka: setup
	@$(BIN)/python -m devstack.kafka_broker

# Webserver, daemon (sensors, schedules, run queue) and code server, all on 127.0.0.1; runs,
# logs and cursors are kept in DAGSTER_HOME (data/dagster) and survive a restart.
# Every run is a client of the Spark Connect engine started here first (or of the one SPARK_REMOTE
# names); ENGINE=0 runs each in its own embedded Spark instead. The services log warnings and
# errors only (idle, the daemon's INFO lines are ~100 a minute); DAGSTER_LOG_LEVEL=info for all.
# KAFKA=1 starts a Kafka broker too (make kafka) and points every run and sensor at it.
# POSTGRES=1 starts a throwaway PostgreSQL (make postgres) and keeps the instance there
# (DAGSTER_HOME=data/dagster-postgres, over any DAGSTER_HOME given): runs, event logs and
# sensor cursors go when make dev stops; the tables under data/ stay.
# dagster dev starts in DAGSTER_HOME: started here, it would warn that this repository's
# dagster.yaml is not the instance's (the instance has its own copy of it, target instance).
dev: setup
	@export SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1}; pids=""; \
	trap 'kill $$pids 2>/dev/null; wait $$pids 2>/dev/null' EXIT; \
	if [ "$${KAFKA:-0}" = 1 ]; then \
	  kport=$${LAKEHOUSE_KAFKA_PORT:-9092}; \
	  $(BIN)/python -m devstack.kafka_broker & pids="$$pids $$!"; \
	  until (exec 3<>/dev/tcp/127.0.0.1/$$kport) 2>/dev/null; do \
	    kill -0 $${pids##* } 2>/dev/null || { echo "dev: the Kafka broker did not start" >&2; exit 1; }; sleep 1; \
	  done; \
	  export LAKEHOUSE_KAFKA_BOOTSTRAP=127.0.0.1:$$kport; \
	fi; \
	if [ "$${POSTGRES:-0}" = 1 ]; then \
	  pgurl="$(CURDIR)/data/.postgres-url"; rm -f "$$pgurl"; \
	  $(BIN)/python -m devstack.postgres --port $${LAKEHOUSE_POSTGRES_PORT:-5433} --url-file "$$pgurl" & pids="$$pids $$!"; \
	  until [ -s "$$pgurl" ]; do \
	    kill -0 $${pids##* } 2>/dev/null || { echo "dev: PostgreSQL did not start" >&2; exit 1; }; sleep 1; \
	  done; \
	  export DAGSTER_PG_URL="$$(cat "$$pgurl")" DAGSTER_HOME="$(CURDIR)/data/dagster-postgres"; \
	  $(BIN)/python -c "import os; from pathlib import Path; from devstack.postgres import postgres_home; postgres_home(Path(os.environ['DAGSTER_HOME']))"; \
	fi; \
	if [ "$${S3:-0}" = 1 ]; then \
	  s3env="$(CURDIR)/data/.s3-env"; rm -f "$$s3env"; \
	  $(BIN)/python -m devstack.s3server --env-file "$$s3env" & pids="$$pids $$!"; \
	  until [ -s "$$s3env" ]; do \
	    kill -0 $${pids##* } 2>/dev/null || { echo "dev: the S3 server did not start" >&2; exit 1; }; sleep 1; \
	  done; \
	  . "$$s3env"; \
	fi; \
	if [ "$${CLUSTER:-0}" = 1 ]; then \
	  master="$(CURDIR)/data/.cluster-url"; rm -f "$$master"; \
	  $(BIN)/python -m devstack.cluster --url-file "$$master" & pids="$$pids $$!"; \
	  until [ -s "$$master" ]; do \
	    kill -0 $${pids##* } 2>/dev/null || { echo "dev: the Spark cluster did not start" >&2; exit 1; }; sleep 1; \
	  done; \
	  export SPARK_MASTER="$$(cat "$$master")"; \
	fi; \
	if [ "$${ENGINE:-1}" != 0 ] && [ -z "$${SPARK_REMOTE:-}" ]; then \
	  port=$${LAKEHOUSE_ENGINE_PORT:-15002}; \
	  $(BIN)/python -m devstack.connect_server --port $$port & engine=$$!; pids="$$pids $$engine"; \
	  until (exec 3<>/dev/tcp/127.0.0.1/$$port) 2>/dev/null; do \
	    kill -0 $$engine 2>/dev/null || { echo "dev: the Spark Connect engine did not start" >&2; exit 1; }; sleep 1; \
	  done; \
	  export SPARK_REMOTE=sc://127.0.0.1:$$port; \
	fi; \
	cd "$$DAGSTER_HOME" && $(CURDIR)/$(BIN)/dagster dev --log-level $${DAGSTER_LOG_LEVEL:-warning} \
	  -h 127.0.0.1 -p $${DAGSTER_PORT:-3000} -w $(CURDIR)/workspace.yaml

# The whole local scale-out stack: a Spark standalone cluster, the engine on it, an S3-compatible
# server whose bucket is the data root, PostgreSQL for Dagster, and the UI (docs/scale-out.md).
.PHONY: stack cluster s3
stack:
	@$(MAKE) --no-print-directory dev CLUSTER=1 S3=1 POSTGRES=1

# A Spark standalone master and worker on 127.0.0.1 in the foreground (master spark://127.0.0.1:7077;
# CLUSTER_ARGS='--port 7078 --web-port 8081 --cores 2 --memory 2g').
CLUSTER_ARGS ?=
cluster: setup
	@$(BIN)/python -m devstack.cluster $(CLUSTER_ARGS)

# S3Proxy on 127.0.0.1:$$LAKEHOUSE_S3_PORT (8333) in the foreground, objects under data/s3; it prints
# the variables that make the bucket the data root.
s3: setup
	@$(BIN)/python -m devstack.s3server

# Uses `make dev` if it is running on DAGSTER_PORT (3000), else starts dagster dev itself.
latency: setup
	SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1} $(BIN)/python bench/measure_latency.py $(if $(filter 1,$(BURST)),--burst) $(if $(filter 1,$(STEADY)),--steady) $(LATENCY_ARGS)

# The benchmark suite (issue 7): writes bench/results.md and bench/history_scaling.png.
# BENCH_ARGS=--quick for a small trial configuration; see bench/run.py --help.
# The class archive is left to the bench's preparation, where its training run overlaps the rest.
.PHONY: bench
bench: $(STAMP) jars
	@$(BIN)/python -c "import duckdb, matplotlib, psutil" 2>/dev/null || $(BIN)/python -m pip install --quiet --require-hashes --no-deps --no-build-isolation -r requirements.lock || { \
	  echo "Setup stopped: pip could not install the bench extra (matplotlib, duckdb, psutil); check the network or proxy." >&2; exit 1; }
	SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1} $(BIN)/python -m bench.run $(BENCH_ARGS)

# The SDP example through spark-pipelines run and through Dagster, on one engine (bench/sdp_results.md).
# BENCH_ARGS='--rows-per-round 10000': 50 rounds of history make 1,000,000 orders.
.PHONY: bench-sdp
bench-sdp: $(STAMP) jars
	SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1} $(BIN)/python -m bench.sdp $(BENCH_ARGS)

# A lakehouse that has run for a year: one-file runs and sensor ticks after 10 ... 100,000 earlier
# files, kept and archived, and a first backfill against a plain Spark batch (bench/results.md's
# "Landing history" block). BENCH_ARGS='--levels 10,10000,100000,1000000 --batch 20000'.
.PHONY: bench-history
bench-history: $(STAMP) jars
	SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1} $(BIN)/python -m bench.landing_history $(BENCH_ARGS)

# A landing sensor's tick with a new file in a folder of 10 .. 1,000,000 files, Spark-free
# (bench/results.md's "sensor-tick" block). BENCH_ARGS='--levels 10,10000 --reps 5'.
.PHONY: bench-tick
bench-tick: $(STAMP)
	$(BIN)/python -m bench.sensor_tick $(BENCH_ARGS)

.PHONY: bench-tick-s3
bench-tick-s3: $(STAMP)
	$(BIN)/python -m bench.sensor_tick_s3 $(BENCH_ARGS)

# The events chain on a standalone cluster (local disk, then an S3 bucket) next to local mode
# (bench/scale_out_results.md). BENCH_ARGS='--reps 5 --files 40'.
.PHONY: bench-scale-out
bench-scale-out: $(STAMP) jars
	SPARK_LOCAL_IP=$${SPARK_LOCAL_IP:-127.0.0.1} $(BIN)/python -m bench.scale_out $(BENCH_ARGS)

chaos: setup
	@$(BIN)/python scripts/chaos.py $(CHAOS_ARGS)

chaos-sdp: setup
	@$(BIN)/python scripts/chaos_sdp.py $(CHAOS_ARGS)

# make test: every test but those marked slow, unless also marked gate (CI's gate);
# make test-slow: the slow tier (end-to-end, fault and scale-out tests, about two hours on
# 2 cores); make test-all: both.
test: setup
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not slow or gate" $(PYTEST_ARGS)

test-slow: setup
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) -m slow $(PYTEST_ARGS)

test-all: setup
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

clean-data:
	rm -rf data/landing data/tables data/checkpoints data/dagster/history data/dagster/schedules data/dagster/storage

# The gate .ci/run passes before the suite: ruff (lint and format) on the whole repository and
# mypy on the framework (settings in pyproject.toml), then the Spark-free unit tests (pytest -m
# unit, seconds).
.PHONY: lint unit
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

unit: $(STAMP)
	@$(BIN)/python -m pytest -q -m unit -p no:cacheprovider $(PYTEST_ARGS)
