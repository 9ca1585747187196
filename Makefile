# One gate for people and CI: `.ci/run` runs `make test` and `make lint`, nothing else.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: build tools demo test lint check fmt bench

# Extra arguments for bench/run.py, e.g. BENCH_ARGS="--quick" or "--workloads W1,W2 --runs 5".
BENCH_ARGS ?=

## build: release binary at target/release/parabyte
build:
	$(CARGO) build --release --locked -p parabyte-cli

## tools: install the test servers (versitygw and SeaweedFS pinned into .tools/, nginx from the system packages)
tools:
	scripts/install-test-servers.sh

## demo: start a local S3 server, fill it, download from it with progress and summary
demo: tools
	$(CARGO) build --release --locked -p parabyte-cli -p parabyte-testkit
	scripts/demo.sh

## test: every test, against real servers on loopback
test: tools
	$(CARGO) test --workspace --locked

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

## check: what CI runs
check: test lint

fmt:
	$(CARGO) fmt --all

## bench: parabyte against s5cmd, aws, boto3, rclone, aria2c, axel and curl on loopback S3 behind
## toxiproxy; installs the pinned peers, runs everything, rewrites docs/BENCHMARKS.md (~30 min)
bench: tools
	scripts/install-bench-tools.sh
	$(CARGO) build --release --locked -p parabyte-cli
	.tools/venv-bench/bin/python bench/run.py $(BENCH_ARGS)
