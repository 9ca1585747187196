#!/usr/bin/env bash
# The main job on an embedded default: start a local S3-compatible server (versitygw),
# fill it with a few hundred small files and one large object, and download everything
# with parabyte, showing the progress bar and the summary.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

work="$repo/.testbed"
env_file="$work/env"
out="$work/download"
mkdir -p "$work"
rm -rf "$out" "$env_file"

echo "== starting versitygw on 127.0.0.1 and filling it (400 x 16 KiB, 1 x 256 MiB)"
# The testbed keeps the server up while its stdin stays open; closing it shuts all down.
exec 3> >(exec target/release/testbed up --server versitygw --bucket parabyte-demo \
    --small 400 --small-size 16384 --large-size $((256 << 20)) \
    --env-file "$env_file" --max-seconds 600 >"$work/testbed.log" 2>&1)
trap 'exec 3>&-; sleep 1' EXIT
for _ in $(seq 1 600); do
    [[ -s "$env_file" ]] && break
    sleep 0.1
done
[[ -s "$env_file" ]] || { echo "the test server did not come up; see $work/testbed.log"; exit 1; }
# shellcheck disable=SC1090
source "$env_file"

echo "== parabyte cp s3://$PARABYTE_BUCKET/ $out"
target/release/parabyte cp "s3://$PARABYTE_BUCKET/" "$out"
echo
echo "== parabyte ls s3://$PARABYTE_BUCKET/"
target/release/parabyte ls "s3://$PARABYTE_BUCKET/"
echo
echo "downloaded $(find "$out" -type f | wc -l) files into $out"
