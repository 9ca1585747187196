#!/usr/bin/env bash
# The main jobs on an embedded server: start a local S3-compatible server (versitygw), fill
# it with a few hundred small files and one large object, then with parabyte download
# everything, upload the same tree back under another prefix, change it and sync the
# change; each job shows its progress bar (on a terminal) and its summary.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

# `make demo` builds these in release; PARABYTE_DEMO_BIN=target/debug runs a debug build.
bin="${PARABYTE_DEMO_BIN:-target/release}"
work=.testbed
env_file="$work/env"
out="$work/download"
mkdir -p "$work"
rm -rf "$out" "$env_file"

echo "== starting versitygw on 127.0.0.1 and filling it (400 x 16 KiB, 1 x 256 MiB)"
# The testbed keeps the server up while its stdin stays open; closing it shuts all down.
exec 3> >(exec "$bin/testbed" up --server versitygw --bucket parabyte-demo \
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
bucket="s3://$PARABYTE_BUCKET"
copy="$bucket/uploaded/"

# A job, said before it runs. The bulk copies name no object one by one when stderr is no
# terminal (a log), where there is no bar either: the summary says it all.
job() {
    echo
    echo "== parabyte $*"
    "$bin/parabyte" "$@"
}

job cp --object-lines never "$bucket/" "$out"
echo "downloaded $(find "$out" -type f | wc -l) files into $out"

job cp -r --object-lines never "$out" "$copy"

# One file changed, one new: sync sends those two, names them, and leaves the rest.
printf 'changed by the demo\n' >>"$out/small/00007.bin"
printf 'a new file\n' >"$out/notes.txt"
job sync --object-lines always "$out" "$copy"

job ls "$bucket/"
job du -h "$copy"
