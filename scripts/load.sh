#!/usr/bin/env bash
# The load figures of docs/LOAD.md: 100,000 objects of 1 KiB to disk, and one 10 GiB object
# in --discard mode, each against a local versitygw, with wall time and peak RSS.
#   scripts/load.sh            # both
#   LOAD_SMALL=20000 LOAD_LARGE=$((2 << 30)) scripts/load.sh   # smaller
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
small="${LOAD_SMALL:-100000}"
large="${LOAD_LARGE:-10737418240}"   # bytes
work="$(mktemp -d "${TMPDIR:-/tmp}/parabyte-load.XXXXXX")"
trap 'kill "$bed" 2>/dev/null || true; wait 2>/dev/null; rm -rf "$work"' EXIT

cargo build --release --locked -q -p parabyte-cli -p parabyte-testkit
target/release/testbed up --server versitygw --bucket load --small "$small" --small-size 1024 \
    --large-size 0 --env-file "$work/env" --max-seconds 3600 >"$work/testbed.log" 2>&1 &
bed=$!
for _ in $(seq 1 1800); do
    grep -q ready "$work/testbed.log" 2>/dev/null && break
    kill -0 "$bed" 2>/dev/null || { cat "$work/testbed.log"; exit 1; }
    sleep 1
done
grep -q ready "$work/testbed.log" || { echo "the test bed did not get ready in time"; exit 1; }
# shellcheck disable=SC1091
source "$work/env"
# One PUT stores at most 5 GiB, so the large object is made in place, as a sparse file in
# the bucket's directory of versitygw's posix backend (it reads back as zeros, at full speed).
server_dir="$(sed -n 's/.*(log: \(.*\)\/server.log).*/\1/p' "$work/testbed.log")"
mkdir -p "$server_dir/root/load/large"
truncate -s "$large" "$server_dir/root/load/large/big.bin"

measure() {
    local label="$1"; shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/summary.json"
    read -r wall rss <"$work/time"
    python3 - "$label" "$wall" "$rss" "$work/summary.json" <<'PY'
import json, sys
label, wall, rss, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = json.load(open(path))
print(f"| {label} | {s['objects']} | {s['failed']} | {s['bytes'] / 2**30:.2f} GiB | {wall:.1f} s "
      f"| {rss / 1024:.0f} MiB | {s['requests']['get']} GET, {s['requests']['list']} LIST |")
PY
}

echo "| run | objects | failed | bytes | wall | peak RSS | requests |"
echo "|---|---|---|---|---|---|---|"
measure "$small x 1 KiB to disk" target/release/parabyte cp --json "s3://load/small/" "$work/out"
rm -rf "$work/out"
measure "$((large >> 30)) GiB, --discard" target/release/parabyte cp --json --discard "s3://load/large/big.bin"
