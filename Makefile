# One gate for people and CI: `.ci/run` runs `make test` and `make lint`, nothing else.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: build tools demo test test-python wheel-smoke lint check fmt bench fuzz

# The Python package is built and tested in this virtualenv (pins: python/requirements-dev.txt).
PY_VENV ?= .tools/venv-py

# Extra arguments for bench/run.py, e.g. BENCH_ARGS="--quick" or "--workloads W1,W2 --runs 5".
BENCH_ARGS ?=

## build: release binary at target/release/parabyte (stripped; `cargo install --path
## crates/parabyte-cli` installs the same)
build:
	$(CARGO) build --release --locked -p parabyte-cli

## tools: install the test servers (versitygw, MinIO, SeaweedFS and moto pinned into .tools/, nginx from the system packages)
tools:
	scripts/install-test-servers.sh

## demo: start a local S3 server and fill it; download everything, upload the tree back under
## another prefix, change it and sync the change, each with its progress and summary
demo: tools
	$(CARGO) build --release --locked -p parabyte-cli -p parabyte-testkit
	scripts/demo.sh

# Property tests in `make test` draw their cases from one fixed seed, so a run is repeatable;
# `make fuzz` runs the fuzz and write-side properties with random seeds for longer.
PROPTEST_RNG_SEED ?= 20261128

## test: every test, against real servers on loopback, then the release wheel as users install it
test: tools
	PROPTEST_RNG_SEED=$(PROPTEST_RNG_SEED) $(CARGO) test --workspace --locked
	$(MAKE) test-python
	$(MAKE) wheel-smoke

## test-python: build the Python package into $(PY_VENV) and run its pytest suite. A debug
## build: it reuses the dependencies `cargo test` just compiled.
test-python: $(PY_VENV)/.installed
	$(CARGO) build --locked -p parabyte-testkit --bin testbed
	VIRTUAL_ENV=$(abspath $(PY_VENV)) $(PY_VENV)/bin/maturin develop --locked --quiet
	$(PY_VENV)/bin/python -m pytest -p no:cacheprovider

## wheel-smoke: build the release wheel, install it into a fresh virtualenv and use both
## `import parabyte` and the `parabyte` command against a local S3 server
wheel-smoke: $(PY_VENV)/.installed
	$(CARGO) build --locked -p parabyte-testkit --bin testbed
	MATURIN=$(abspath $(PY_VENV))/bin/maturin scripts/wheel-smoke.sh

$(PY_VENV)/.installed: python/requirements-dev.txt
	python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install --quiet --requirement python/requirements-dev.txt
	touch $@

## lint: formatting and clippy, warnings are errors; no import circle and layers import only
## downward (scripts/check-layers.py); ruff for the Python package
lint: $(PY_VENV)/.installed
	python3 scripts/check-layers.py
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(PY_VENV)/bin/ruff check python scripts/wheel_smoke.py
	$(PY_VENV)/bin/ruff format --check python scripts/wheel_smoke.py

## check: what CI runs
check: test lint

fmt: $(PY_VENV)/.installed
	$(CARGO) fmt --all
	$(PY_VENV)/bin/ruff format python scripts/wheel_smoke.py

## fuzz: every fuzz property (made-up listing pages, bucket lists, checksum and range headers,
## manifest lines, URLs, patterns) and the write side's (what sync deletes, what mv deletes,
## what each multipart writer commits) with endless cases for FUZZ_SECONDS each (default 60),
## in a release build; `make test` runs the same properties with fewer cases, seed fixed.
fuzz:
	scripts/fuzz.sh

## bench: parabyte against s5cmd, aws, boto3, rclone, aria2c, axel and curl on loopback S3 behind
## toxiproxy; installs the pinned peers, runs everything, rewrites docs/BENCHMARKS.md (about an hour,
## the sync and rm rows against aws, s5cmd and rclone about 40 minutes more, the uploads about
## 20 minutes more (their 6 GiB copy needs 22 GiB free under /tmp, else it is skipped and said
## so), the listing of up to 3,000,000 keys about 15 minutes more, sync and rm at 1,000,000 and
## 10,000,000 keys against aws, s5cmd and rclone (bench/sync_scale.py) about an hour more, the
## fsspec rows against s3fs and obstore's adapter (bench/fsspec_rows.py) about 10 minutes more,
## and the cluster's write rows against a local run (bench/dask_writes.py: docs/dask.md) about
## 20 minutes more).
## The binary is the profiling build (release with symbols and line tables) so perf can read it.
bench: tools
	scripts/install-bench-tools.sh
	$(CARGO) build --profile profiling --locked -p parabyte-cli -p parabyte-testkit --bin parabyte --bin testbed
	$(CARGO) build --profile profiling --locked -p parabyte --example crc_rate
	.tools/venv-bench/bin/python -m pip install --quiet --disable-pip-version-check .
	.tools/venv-fsspec/bin/python -m pip install --quiet --disable-pip-version-check .
	.tools/venv-bench/bin/python bench/run.py $(BENCH_ARGS)
	.tools/venv-bench/bin/python bench/sync_rm.py
	.tools/venv-bench/bin/python bench/upload.py
	.tools/venv-bench/bin/python bench/listing.py
	.tools/venv-bench/bin/python bench/sync_scale.py
	.tools/venv-bench/bin/python bench/fsspec_rows.py
	$(CARGO) build --locked -p parabyte-testkit --bin testbed
	.tools/venv-bench/bin/python bench/dask_scaling.py
	.tools/venv-bench/bin/python bench/dask_writes.py
