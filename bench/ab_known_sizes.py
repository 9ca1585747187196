"""Known sizes against a listing, build against build, in one run (docs/PROFILE.md).

The same 1000 x 1 KiB objects as W1, through the same emulated WAN (toxiproxy: 10 ms each
way, 50 MB/s per connection), fetched by prefix (`cp s3://bench/w1/ DEST`) and from a
manifest of s3:// URLs with sizes and ETags (`cp --manifest`, W1m), by each build given,
alternating builds and modes round after round. Prints each cell's median wall time and
the requests and connections of its last run.

    .tools/venv-bench/bin/python bench/ab_known_sizes.py BEFORE_BIN AFTER_BIN --rounds 5
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.setup import BUCKET, Sizes, Store  # noqa: E402
from harness.tools import ACCESS_KEY, REGION, SECRET_KEY  # noqa: E402
from run import presigner  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# Only W1's objects matter here; everything else as small as the harness allows.
SIZES = Sizes(w1_count=1000, w2_size=1 << 20, w3_count=1, w3_size=1 << 20, w4_dirs=1,
              w4_per_dir=10, w4k_dirs=1, w8_count=1, w8_size=1024, w9_size=1 << 20)
RUN_TIMEOUT_S = 120


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("builds", nargs="+", type=Path, help="parabyte binaries to compare")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--concurrency", default="default,16,64",
                   help="settings: 'default' and/or in-flight counts")
    args = p.parse_args()
    settings = args.concurrency.split(",")
    work = Path("/dev/shm") / f"parabyte-ab-{os.getpid()}"
    times: dict[tuple, list[float]] = {}
    last: dict[tuple, dict] = {}
    with Store(work, REPO) as store:
        _, clients = presigner(store)
        data = store.fill(SIZES, lambda: clients["direct"].create_bucket(Bucket=BUCKET))
        env = {"PATH": os.environ["PATH"], "HOME": str(work), "AWS_ACCESS_KEY_ID": ACCESS_KEY,
               "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
               "AWS_EC2_METADATA_DISABLED": "true"}
        endpoint = store.endpoint("proxy")
        manifest = work / "manifest.txt"
        manifest.write_text("".join(
            f's3://{BUCKET}/w1/{name}\t{name}\t{size}\t"{md5}"\n'
            for name, (size, md5) in data.under("w1").items()))
        for _ in range(args.rounds):
            for build in args.builds:
                for setting in settings:
                    flags = [] if setting == "default" else [
                        "--workers", setting, "--threads", setting, "--max-requests", setting]
                    for mode in ("prefix", "manifest"):
                        source = (["--manifest", str(manifest)] if mode == "manifest"
                                  else [f"s3://{BUCKET}/w1/"])
                        dest = work / "dest"
                        shutil.rmtree(dest, ignore_errors=True)
                        argv = [str(build), "cp", "--json", "--endpoint-url", endpoint, *flags,
                                *source, f"{dest}/"]
                        started = time.monotonic()
                        done = subprocess.run(argv, env=env, capture_output=True, text=True,
                                              timeout=RUN_TIMEOUT_S)
                        wall = time.monotonic() - started
                        summary = json.loads(done.stdout)
                        if done.returncode != 0 or summary["objects"] != SIZES.w1_count:
                            raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr}")
                        cell = (str(build), setting, mode)
                        times.setdefault(cell, []).append(wall)
                        last[cell] = summary
    print("| build | setting | mode | median wall | runs | requests | connections |")
    print("|---|---|---|---|---|---|---|")
    for (build, setting, mode), walls in times.items():
        summary = last[(build, setting, mode)]
        requests = ", ".join(f"{n} {kind.upper()}" for kind, n in summary["requests"].items()
                             if n)
        print(f"| {build} | {setting} | {mode} | {statistics.median(walls):.2f} s | "
              f"{len(walls)} | {requests} | {summary['connections']} |")


if __name__ == "__main__":
    main()
