#!/usr/bin/env bash
# What a Python user installs, tried as they would: build the release wheel, check that its
# extension carries no debug info, install it into a fresh virtualenv, then use
# `import parabyte` and the `parabyte` command against a real S3 server on loopback
# (scripts/wheel_smoke.py). Prints the wheel's and the extension's sizes and the build time.
#
#   scripts/wheel-smoke.sh   # MATURIN=path/to/maturin, TESTBED=path/to/testbed to override
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN=${MATURIN:-maturin}
TESTBED=${TESTBED:-target/debug/testbed}
[[ -x $TESTBED ]] || { echo "wheel smoke: $TESTBED is missing: cargo build -p parabyte-testkit --bin testbed"; exit 2; }
TESTBED=$(realpath "$TESTBED")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

started=$SECONDS
"$MATURIN" build --release --locked --quiet --out "$work/wheels"
built=$((SECONDS - started))
wheels=("$work"/wheels/parabyte-*.whl)
wheel=${wheels[0]}

unzip -q "$wheel" -d "$work/unpacked"
extensions=("$work"/unpacked/parabyte/_native*.so)
extension=${extensions[0]}
if readelf -S --wide "$extension" | grep -q '\.debug_'; then
    echo "wheel smoke: $extension carries debug info:"
    readelf -S --wide "$extension" | grep '\.debug_'
    exit 1
fi
echo "wheel smoke: built in ${built}s: $(basename "$wheel") $(du -h "$wheel" | cut -f1)," \
    "extension $(du -h "$extension" | cut -f1)"

python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
# From outside the source tree, so nothing but the installed wheel can be imported.
(cd "$work" && "$work/venv/bin/python" "$OLDPWD/scripts/wheel_smoke.py" "$TESTBED" "$work")
echo "wheel smoke: passed in $((SECONDS - started))s"
