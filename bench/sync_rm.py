"""sync and rm against the tools users would pick instead (issue 25, item 10), in one run.

The same emulated WAN as `make bench` (toxiproxy in front of versitygw on tmpfs: 10 ms each
way, 50 MB/s per connection), each tool at its defaults:

- S1 up: a local tree of N files of 1 KiB (100 directories) whose copy in the store is
  current but for 1% of the files, which grew by a byte: `sync DIR s3://bucket/up/`;
- S1 down: the same the other way: 1% of the objects grew, `sync s3://bucket/down/ DIR`;
- R1: `rm` of 10,000 keys under a prefix.

Before every run the state is put back, outside the timing: the objects (written straight
into versitygw's posix root, as `make bench` fills it) and the files carry one same
modification time, so every tool's own rule (size and time: aws, s5cmd, parabyte; size and
modification time from LastModified: rclone) finds exactly the changed 1% to send. Each run
is checked: the changed objects or files hold the new bytes, or no key is left under the
prefix. The table (medians, ratios to parabyte, requests of the last run) replaces the part
of docs/BENCHMARKS.md between its sync-and-rm markers.

    .tools/venv-bench/bin/python bench/sync_rm.py [--files 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.measure import Command, run_once
from harness.report import write_section
from harness.setup import (
    ACCESS_KEY,
    BUCKET,
    REGION,
    SECRET_KEY,
    Store,
    _set_object_attributes,
    _upload_client,
)

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".tools/venv-bench/bin"
DOC = REPO / "docs/BENCHMARKS.md"
START, END = "<!-- sync-and-rm: start -->", "<!-- sync-and-rm: end -->"  # as report.py keeps them
# Every file and object is last modified at this time (2026-01-01): the tools compare it.
THEN = 1_767_225_600
SIZE = 1024
RM_KEYS = 10_000
TIMEOUT_S = 900
TOOLS = ("parabyte", "aws", "s5cmd", "rclone")
WORKLOADS = ("S1 up", "S1 down", "R1")


def name(i: int) -> str:
    return f"d{i % 100:03}/f{i:06}"


def body(i: int, grown: bool) -> bytes:
    seed = hashlib.sha256(f"{i}".encode()).digest()
    data = (seed * (SIZE // len(seed) + 1))[:SIZE]
    return data + b"+" if grown else data


def write_file(path: Path, data: bytes, mtime: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


def write_object(bucket_dir: Path, key: str, data: bytes, mtime: int) -> None:
    """An object as versitygw's posix backend keeps it: a file, its ETag in an attribute."""
    path = bucket_dir / key
    path.unlink(missing_ok=True)  # a fresh file: no attribute a tool's upload left
    write_file(path, data, mtime)
    _set_object_attributes(path, hashlib.md5(data).hexdigest())


def environment(home: Path, endpoint: str) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    return {
        "PATH": f"{VENV_BIN}:{REPO / '.tools/bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": endpoint,
        "S3_ENDPOINT_URL": endpoint,
        "RCLONE_CONFIG": str(home / "rclone.conf"),
        "RCLONE_CONFIG_BENCH_TYPE": "s3",
        "RCLONE_CONFIG_BENCH_PROVIDER": "Other",
        "RCLONE_CONFIG_BENCH_ACCESS_KEY_ID": ACCESS_KEY,
        "RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY": SECRET_KEY,
        "RCLONE_CONFIG_BENCH_ENDPOINT": endpoint,
        "RCLONE_CONFIG_BENCH_REGION": REGION,
    }


def argv(tool: str, parabyte: Path, workload: str, local: Path) -> list[str]:
    up, down, gone = f"s3://{BUCKET}/up/", f"s3://{BUCKET}/down/", f"s3://{BUCKET}/rm/"
    local_dir = f"{local}/"
    if tool == "parabyte":
        return {
            # No line per object on stderr, as aws runs with --only-show-errors.
            "S1 up": [str(parabyte), "sync", "--json", "--object-lines", "never", local_dir, up],
            "S1 down": [str(parabyte), "sync", "--json", "--object-lines", "never", down,
                        local_dir],
            "R1": [str(parabyte), "rm", "-r", "--quiet", gone],
        }[workload]
    if tool == "aws":
        return {
            "S1 up": ["aws", "s3", "sync", "--only-show-errors", local_dir, up],
            "S1 down": ["aws", "s3", "sync", "--only-show-errors", down, local_dir],
            "R1": ["aws", "s3", "rm", "--recursive", "--only-show-errors", gone],
        }[workload]
    if tool == "s5cmd":
        return {
            "S1 up": ["s5cmd", "sync", local_dir, up],
            "S1 down": ["s5cmd", "sync", f"{down}*", local_dir],
            "R1": ["s5cmd", "rm", f"{gone}*"],
        }[workload]
    return {
        "S1 up": ["rclone", "-q", "sync", local_dir, f"bench:{BUCKET}/up"],
        "S1 down": ["rclone", "-q", "sync", f"bench:{BUCKET}/down", local_dir],
        "R1": ["rclone", "-q", "delete", f"bench:{BUCKET}/rm"],
    }[workload]


class State:
    """The files and objects each workload starts from, and how to put them back."""

    def __init__(self, work: Path, bucket_dir: Path, files: int):
        self.files = files
        self.changed = list(range(0, files, 100))  # 1%
        self.bucket_dir = bucket_dir
        self.up = work / "up"
        self.down = work / "down"
        for i in range(files):
            grown = i % 100 == 0
            write_file(self.up / name(i), body(i, grown), THEN + (60 if grown else 0))
            write_object(bucket_dir, f"up/{name(i)}", body(i, False), THEN)
            write_object(bucket_dir, f"down/{name(i)}", body(i, grown), THEN + (60 if grown else 0))
            write_file(self.down / name(i), body(i, False), THEN)

    def reset(self, workload: str) -> None:
        for i in self.changed:
            if workload == "S1 up":
                write_object(self.bucket_dir, f"up/{name(i)}", body(i, False), THEN)
            elif workload == "S1 down":
                write_file(self.down / name(i), body(i, False), THEN)
        if workload == "R1":
            shutil.rmtree(self.bucket_dir / "rm", ignore_errors=True)
            for i in range(RM_KEYS):
                write_object(self.bucket_dir, f"rm/{name(i)}", body(i, False), THEN)

    def check(self, workload: str) -> str | None:
        if workload == "R1":
            left = sum(1 for p in (self.bucket_dir / "rm").rglob("*") if p.is_file())
            return f"{left} keys left" if left else None
        for i in self.changed:
            path = (self.bucket_dir / "up" if workload == "S1 up" else self.down) / name(i)
            if path.read_bytes() != body(i, True):
                return f"{path} was not sent"
        return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parabyte", type=Path, default=REPO / "target/profiling/parabyte")
    p.add_argument("--files", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--no-docs", action="store_true", help="print the table only")
    args = p.parse_args()
    tools = args.tools.split(",")
    workloads = args.workloads.split(",")
    work = Path("/dev/shm") / f"parabyte-sync-{os.getpid()}"
    started = time.monotonic()
    times: dict[tuple[str, str], list[float]] = {}
    last: dict[tuple[str, str], dict] = {}
    with Store(work / "store", REPO) as store:
        _upload_client(store.endpoint("direct")).create_bucket(Bucket=BUCKET)
        state = State(work, store.root / BUCKET, args.files)
        variables = environment(work / "home", store.endpoint("proxy"))
        for rnd in range(args.rounds):
            for workload in workloads:
                shift = rnd % len(tools)  # no tool always first
                for tool in tools[shift:] + tools[:shift]:
                    state.reset(workload)
                    local = state.up if workload == "S1 up" else state.down
                    command = Command(
                        argv(tool, args.parabyte, workload, local),
                        variables,
                        work,
                        None,
                        lambda _out, _deep: None,
                    )
                    result = run_once(
                        command,
                        store,
                        work / "runs" / f"{tool}-{workload}-{rnd}",
                        TIMEOUT_S,
                        deep=False,
                        proxied=True,
                    )
                    wrong = result.error or state.check(workload)
                    if wrong:
                        raise SystemExit(f"{tool} {workload}: {wrong}")
                    times.setdefault((workload, tool), []).append(result.wall_s)
                    last[(workload, tool)] = result.to_json()
                    print(
                        f"  {workload:8} {tool:9} {result.wall_s:7.2f}s cpu {result.cpu_s:6.2f}s"
                        f" rss {result.peak_rss_mib:6.1f} MiB {result.requests}",
                        flush=True,
                    )
    table = render(args, tools, workloads, times, last, time.monotonic() - started)
    print(table)
    if not args.no_docs:
        write_section(DOC, START, END, table)
    return 0


def render(args, tools, workloads, times, last, seconds: float) -> str:
    lines = [
        "## Sync and rm (issue 25)",
        "",
        (
            f"`bench/sync_rm.py --files {args.files} --rounds {args.rounds}` (run by `make bench`), "
            f"{seconds / 60:.1f} minutes: versitygw behind toxiproxy (10 ms each way, 50 MB/s a "
            f"connection), each tool at its defaults. S1: {args.files:,} objects of 1 KiB in 100 "
            f"directories, 1% grown by a byte, synced up (a directory to a prefix) and down; R1: "
            f"rm of {RM_KEYS:,} keys. Medians of {args.rounds}; the state is put back before each "
            "run, outside the timing. Requests: the last run's, from versitygw's access log."
        ),
        "",
        "| workload | tool | median wall | x parabyte | CPU s | peak RSS | requests |",
        "|---|---|---|---|---|---|---|",
    ]
    for workload in workloads:
        ours = statistics.median(times[(workload, "parabyte")]) if "parabyte" in tools else None
        for tool in tools:
            wall = statistics.median(times[(workload, tool)])
            run = last[(workload, tool)]
            ratio = f"{wall / ours:.2f}" if ours else "-"
            requests = ", ".join(f"{n} {k}" for k, n in sorted(run["requests"].items()))
            lines.append(
                f"| {workload} | {tool} | {wall:.2f} s | {ratio} | {run['cpu_s']:.2f} | "
                f"{run['peak_rss_mib']:.0f} MiB | {requests} |"
            )
    lines.append("")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
