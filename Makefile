# One gate for people and CI: `.ci/run` runs `make test` and `make lint`, nothing else.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: build tools demo test lint check fmt bench

## build: release binary at target/release/parabyte
build:
	$(CARGO) build --release --locked -p parabyte-cli

## tools: install the pinned test servers (versitygw, SeaweedFS) into .tools/
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
