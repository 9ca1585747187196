"""The cost of going distributed: one prefix copied by a local run and by `parabyte.dask.copy`
on a `distributed.LocalCluster` of 1, 2 and 4 worker processes (one thread each), against
versitygw on loopback started by the test kit's `testbed`.

    bench/dask_scaling.py [--objects 10000] [--size 1024] [--workers 1,2,4] [--runs 3]
                          [--large-mib 512] [--pieces 4]

Each cluster is started before its runs and kept (a real cluster outlives a job), and warmed
by one untimed copy (each worker connects its client on its first task), so a row is what
one job costs: wall time of the copy, total CPU of the driver and every worker
process over the copy (and of the driver alone: its listing, packing and Dask's scheduler,
which a LocalCluster runs in the driver's process), and tasks. The per-task overhead is
measured on one worker: the same copy cut 100 times finer (`task_objects` 10 instead of
1000), the extra wall time divided by the extra tasks. What splitting one large object across
tasks costs is measured with 2 workers: the object copied whole by one task, and in
`--pieces` pieces (`split_bytes`), against a local run. Every run writes into a fresh
directory and is checked: every object, byte for byte the size listed. Prints a Markdown
table (the rows for docs/dask.md) and, with --json, the raw figures. Loopback only; the
server stops with this script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import distributed
import psutil

import parabyte
import parabyte.dask

REPO = Path(__file__).resolve().parents[1]
TESTBED = REPO / "target/debug/testbed"
BUCKET = "dask-bench"
START_TIMEOUT_S = 600
# Objects per task in the fine cut that measures the per-task overhead: 100 times the
# default's tasks, so the extra tasks, not the earlier start they give downloads, dominate.
FINE_TASK_OBJECTS = 10


def start_store(
    objects: int, size: int, work: Path, large: int = 0
) -> tuple[subprocess.Popen, dict[str, str]]:
    env_file = work / "env"
    server = subprocess.Popen(
        [str(TESTBED), "up", "--server", "versitygw", "--bucket", BUCKET, "--small", str(objects),
         "--small-size", str(size), "--large-size", str(large), "--env-file", str(env_file),
         "--max-seconds", "7200"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=(work / "testbed.log").open("w"),
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not env_file.exists():  # testbed writes the file once the bucket is full
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            sys.exit(f"testbed did not start: {(work / 'testbed.log').read_text()}")
        time.sleep(0.1)
    values = {}
    for line in env_file.read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        values[name] = value.strip("'")
    return server, values


def options_of(env: dict[str, str]) -> dict[str, str]:
    return {
        "endpoint_url": env["AWS_ENDPOINT_URL"],
        "access_key_id": env["AWS_ACCESS_KEY_ID"],
        "secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region": env["AWS_REGION"],
    }


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def check(dest: Path, objects: int, size: int) -> None:
    files = [path for path in dest.rglob("*") if path.is_file()]
    if len(files) != objects or any(path.stat().st_size != size for path in files):
        sys.exit(f"{dest}: {len(files)} files, expected {objects} of {size} bytes")


def run(copy, pids: list[int], scratch: Path, objects: int, size: int) -> dict[str, float]:
    dest = Path(tempfile.mkdtemp(dir=scratch))
    cpu = cpu_seconds(pids)
    driver = cpu_seconds([os.getpid()])
    started = time.perf_counter()
    summary = copy(str(dest))
    wall = time.perf_counter() - started
    used = cpu_seconds(pids) - cpu
    driver = cpu_seconds([os.getpid()]) - driver
    if summary.failed:
        sys.exit(f"failures: {summary.failures[:3]}")
    check(dest, objects, size)
    subprocess.run(["rm", "-rf", str(dest)], check=True)
    return {
        "wall_s": wall, "cpu_s": used, "driver_cpu_s": driver,
        "tasks": getattr(summary, "tasks", 0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--large-mib", type=int, default=512,
                        help="the large object's size for the split rows (0: no such rows)")
    parser.add_argument("--pieces", type=int, default=4)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dask-bench-"))
    scratch = Path(tempfile.mkdtemp(prefix="dask-bench-dest-", dir="/dev/shm"))
    large = args.large_mib << 20
    server, env = start_store(args.objects, args.size, work, large)
    options = options_of(env)
    prefix = f"s3://{BUCKET}/small/"
    large_prefix = f"s3://{BUCKET}/large/"
    piece = -(-large // max(1, args.pieces))
    rows: dict[str, list[dict[str, float]]] = {}
    try:
        local = parabyte.Client(**options)
        rows["local"] = [
            run(lambda d: local.download(prefix, d), [os.getpid()], scratch, args.objects,
                args.size)
            for _ in range(args.runs)
        ]
        if large:
            rows[f"local, one {args.large_mib} MiB object"] = [
                run(lambda d: local.download(large_prefix, d), [os.getpid()], scratch, 1, large)
                for _ in range(args.runs)
            ]
        for workers in [int(n) for n in args.workers.split(",")]:
            with distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address="127.0.0.1:0",  # loopback, any free port
            ) as cluster, distributed.Client(cluster, set_as_default=False) as client:
                pids = [os.getpid(), *client.run(os.getpid).values()]

                def copy(dest: str, client=client, per_task=parabyte.dask.TASK_OBJECTS):
                    return parabyte.dask.copy(
                        prefix, dest, client, task_objects=per_task, **options
                    )

                # Untimed: each worker process connects its client on its first task.
                run(copy, pids, scratch, args.objects, args.size)
                rows[f"dask, {workers} worker{'s' if workers > 1 else ''}"] = [
                    run(copy, pids, scratch, args.objects, args.size) for _ in range(args.runs)
                ]
                if workers == 2 and large:
                    for name, split in (("whole", {}), (f"in {args.pieces} pieces", {
                            "task_bytes": piece, "split_bytes": piece})):
                        def copy_large(d: str, client=client, split=split):
                            return parabyte.dask.copy(large_prefix, d, client, **split, **options)

                        rows[f"dask, 2 workers, one {args.large_mib} MiB object {name}"] = [
                            run(copy_large, pids, scratch, 1, large) for _ in range(args.runs)
                        ]
                if workers == 1:
                    rows[f"dask, 1 worker, {FINE_TASK_OBJECTS} objects per task"] = [
                        run(lambda d: copy(d, per_task=FINE_TASK_OBJECTS), pids, scratch,
                            args.objects, args.size)
                        for _ in range(args.runs)
                    ]
        report(rows, args)
    finally:
        server.stdin.close()  # testbed stops, and removes its data, when its stdin closes
        try:
            server.wait(timeout=300)
        except subprocess.TimeoutExpired:
            server.kill()
        subprocess.run(["rm", "-rf", str(scratch), str(work)], check=True)
    return 0


def report(rows: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    def local_wall(name: str) -> float:
        """The local run a row compares with: the large object's for its rows."""
        large = f"local, one {args.large_mib} MiB object"
        local = large if "MiB object" in name and large in rows else "local"
        return statistics.median(r["wall_s"] for r in rows[local])

    print(f"{args.objects} x {args.size} B (and one {args.large_mib} MiB object), median of "
          f"{args.runs} runs, {os.cpu_count()} cores")
    print("| run | wall (s) | x local | CPU (s) | driver CPU (s) | tasks |")
    print("|---|---|---|---|---|---|")
    medians = {}
    for name, runs in rows.items():
        wall = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        driver = statistics.median(r["driver_cpu_s"] for r in runs)
        tasks = int(statistics.median(r["tasks"] for r in runs))
        medians[name] = (wall, tasks)
        print(f"| {name} | {wall:.2f} | {wall / local_wall(name):.2f} | {cpu:.2f} | {driver:.2f} | "
              f"{tasks or ''} |")
    (coarse, coarse_tasks), (fine, fine_tasks) = (
        medians.get("dask, 1 worker", (0.0, 0)),
        medians.get(f"dask, 1 worker, {FINE_TASK_OBJECTS} objects per task", (0.0, 0)))
    if fine_tasks > coarse_tasks:  # measured only when the runs include one worker
        overhead = (fine - coarse) / (fine_tasks - coarse_tasks)
        print(f"\nper-task overhead: {overhead * 1000:.1f} ms")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
