"""Uploads against the tools users would pick instead (issue 24, item 11), in one run.

The emulated WAN of `make bench` (toxiproxy in front of versitygw: 10 ms each way, 50 MB/s per
connection), with the bandwidth cap on what clients send as well as on what they receive.
parabyte, s5cmd, the AWS CLI (`aws s3`), rclone and boto3 (s3transfer), each at its defaults
and at equal settings (16 requests in flight, 8 MiB parts):

- U1: a directory of 1000 files of 1 KiB to a prefix;
- U2: a directory of 64 files of 16 MiB to a prefix;
- U3: one 1 GiB file, against a floor (the bytes over 16 connections at the measured rate
  of one, plus two round trips) and curl sending the file as 16 parallel PUTs of its pieces;
- U4: the same 1 GiB from standard input (a pipe from `cat`);
- U5: an S3 to S3 copy of a 6 GiB object inside the bucket, which should happen in the
  store: toxiproxy's byte counters show what each tool sent and received.

U1 to U4 keep the store on tmpfs; U5's 6 GiB source and its copy would not fit in memory, so
its store is on disk (`--disk-dir`). The sources are made outside the timing (U5's written
straight into versitygw's posix root, as `make bench` fills its store), and each run's
destination is removed before it. Each run is checked: every object the tool wrote holds the
source's bytes (sizes and CRC32 of the stored files), or the script stops. The table (medians,
ratios to parabyte at the same setting, requests of the last run) and the targets replace
the part of docs/BENCHMARKS.md between its uploads markers.

    .tools/venv-bench/bin/python bench/upload.py [--rounds 3] [--u5-rounds 1] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.measure import Command, run_once, wait_for_quiet
from harness.report import write_section
from harness.setup import (
    BUCKET,
    SERVERS,
    Store,
    _set_object_attributes,
    _upload_client,
)
from harness.stored import StoredObjects
from sync_rm import environment

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".tools/venv-bench/bin"
DOC = REPO / "docs/BENCHMARKS.md"
START, END = "<!-- uploads: start -->", "<!-- uploads: end -->"  # as report.py keeps them
TOOLS = ("parabyte", "s5cmd", "aws", "rclone", "boto3", "curl")
WORKLOADS = ("U1", "U2", "U3", "U4", "U5")
SETTINGS = ("default", "equal")
N = 16  # equal settings: requests in flight
PART = 8 << 20  # equal settings: part size
# Wait for other work on the shared machine to pass before a run: at most this long each,
# and this long in all.
QUIET_EACH_S, QUIET_BUDGET_S = 10.0, 300.0
# A U5 run is stopped when the disk under its store has less than this left.
DISK_FLOOR = 4 << 30


@dataclass(frozen=True)
class Sizes:
    u1_count: int = 1000
    u1_size: int = 1 << 10
    u2_count: int = 64
    u2_size: int = 16 << 20
    u3_size: int = 1 << 30  # U4 sends the same bytes
    u5_size: int = 6 << 30


FULL = Sizes()
QUICK = Sizes(u1_count=200, u2_count=8, u2_size=8 << 20, u3_size=96 << 20, u5_size=256 << 20)


def human(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


# -- boto3 as a peer: `upload.py boto3 MODE ...` runs in the bench venv -----------------------


def boto3_peer(argv: list[str]) -> int:
    """boto3 as its users upload: the transfer manager for a directory, `upload_file`,
    `upload_fileobj` from standard input, and the managed `copy` (HEAD, then CopyObject or a
    multipart UploadPartCopy). With --concurrency and --part-size, TransferConfig and the
    connection pool get them; without, boto3's defaults (10 threads and connections, 8 MiB)."""
    import boto3
    from boto3.s3.transfer import TransferConfig, create_transfer_manager
    from botocore.config import Config

    p = argparse.ArgumentParser(prog="upload.py boto3")
    p.add_argument("mode", choices=["dir", "file", "stdin", "copy"])
    p.add_argument("--endpoint-url", required=True)
    p.add_argument("--source", help="a directory, a file, or the key to copy")
    p.add_argument("--key", required=True, help="the key, or the prefix for a directory")
    p.add_argument("--concurrency", type=int)
    p.add_argument("--part-size", type=int)
    args = p.parse_args(argv)
    n = args.concurrency
    client = boto3.client(
        "s3", endpoint_url=args.endpoint_url, config=Config(max_pool_connections=n) if n else None
    )
    if n:
        transfer = TransferConfig(
            max_concurrency=n,
            multipart_chunksize=args.part_size,
            multipart_threshold=args.part_size,
        )
    else:
        transfer = TransferConfig()
    if args.mode == "file":
        client.upload_file(args.source, BUCKET, args.key, Config=transfer)
    elif args.mode == "stdin":
        client.upload_fileobj(sys.stdin.buffer, BUCKET, args.key, Config=transfer)
    elif args.mode == "copy":
        client.copy({"Bucket": BUCKET, "Key": args.source}, BUCKET, args.key, Config=transfer)
    else:
        with create_transfer_manager(client, transfer) as manager:
            futures = [
                manager.upload(str(path), BUCKET, args.key + path.name)
                for path in sorted(Path(args.source).iterdir())
            ]
            for future in futures:
                future.result()
    return 0


# -- the data ---------------------------------------------------------------------------------


def crc_file(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(16 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc


def write_random(path: Path, size: int) -> tuple[int, int]:
    """A file of `size` random bytes; returns (size, CRC32)."""
    crc = 0
    with open(path, "wb") as f:
        for start in range(0, size, 64 << 20):
            chunk = os.urandom(min(64 << 20, size - start))
            crc = zlib.crc32(chunk, crc)
            f.write(chunk)
    return size, crc


class Sources:
    """The local files U1 to U4 send, and what each stored object must then hold."""

    def __init__(self, src: Path, sizes: Sizes, workloads: list[str]):
        self.src = src
        self.u1 = src / "u1"
        self.u2 = src / "u2"
        self.big = src / "big.bin"
        self.pieces = src / "pieces"
        self.expected: dict[str, dict[str, tuple[int, int]]] = {}
        src.mkdir(parents=True, exist_ok=True)  # U3 or U4 alone write only into it
        if "U1" in workloads:
            self.u1.mkdir(parents=True)
            files = {}
            for i in range(sizes.u1_count):
                files[f"f{i:05}.bin"] = write_random(self.u1 / f"f{i:05}.bin", sizes.u1_size)
            self.expected["U1"] = files
        if "U2" in workloads:
            self.u2.mkdir(parents=True)
            files = {}
            for i in range(sizes.u2_count):
                files[f"f{i:03}.bin"] = write_random(self.u2 / f"f{i:03}.bin", sizes.u2_size)
            self.expected["U2"] = files
        if "U3" in workloads or "U4" in workloads:
            whole = write_random(self.big, sizes.u3_size)
            self.expected["U3"] = self.expected["U4"] = {"big.bin": whole}
            # curl's 16 PUTs: the file cut in 16 pieces beforehand, outside the timing.
            self.pieces.mkdir()
            step = math.ceil(sizes.u3_size / N)
            with open(self.big, "rb") as f:
                for i in range(N):
                    (self.pieces / f"part.{i:02}").write_bytes(f.read(step))


def write_u5_source(bucket_dir: Path, size: int) -> tuple[int, int]:
    """U5's source object, straight into versitygw's root: 64 MiB of random bytes, each copy
    stamped with its index so that parts copied out of order would show; the ETag versitygw
    keeps for a single PUT (its MD5)."""
    path = bucket_dir / "u5/src.bin"
    path.parent.mkdir(parents=True, exist_ok=True)
    base = bytearray(os.urandom(64 << 20))
    crc, md5 = 0, hashlib.md5()
    with open(path, "wb") as f:
        for i, start in enumerate(range(0, size, len(base))):
            base[:8] = i.to_bytes(8, "little")
            chunk = bytes(base[: min(len(base), size - start)])
            crc = zlib.crc32(chunk, crc)
            md5.update(chunk)
            f.write(chunk)
    _set_object_attributes(path, md5.hexdigest())
    return size, crc


# -- the command lines ------------------------------------------------------------------------

PREFIX = {"U1": "u1/", "U2": "u2/", "U3": "u3/", "U4": "u4/", "U5": "u5/"}


def argv(
    tool: str,
    setting: str,
    workload: str,
    parabyte: Path,
    sources: Sources,
    conf: Path,
    endpoint: str,
) -> tuple[list[str], dict[str, str]]:
    """The tool's command line and the variables it needs beside the common ones."""
    equal = setting == "equal"
    dest = f"s3://{BUCKET}/{PREFIX[workload]}"
    big = f"{dest}big.bin"
    src_key, dst_key = "u5/src.bin", "u5/dst.bin"
    extra: dict[str, str] = {}
    stdin = ["bash", "-c", 'set -o pipefail; cat "$0" | "$@"', str(sources.big)]  # a pipe
    if tool == "parabyte":
        flags = ["--workers", N, "--threads", N, "--max-requests", N, "--part-size", "8MiB"]
        # No line per object on stderr, as aws runs with --only-show-errors.
        base = [parabyte, "cp", "--json", "--object-lines", "never", *(flags if equal else [])]
        line = {
            "U1": [*base, "-r", f"{sources.u1}/", dest],
            "U2": [*base, "-r", f"{sources.u2}/", dest],
            "U3": [*base, sources.big, big],
            "U4": [*stdin, *base, "-", big],
            "U5": [*base, f"s3://{BUCKET}/{src_key}", f"s3://{BUCKET}/{dst_key}"],
        }[workload]
    elif tool == "s5cmd":
        workers = ["--numworkers", N] if equal else []
        parts = ["--concurrency", N, "--part-size", PART >> 20] if equal else []
        base = ["s5cmd", "--log", "error", *workers]
        line = {
            "U1": [*base, "cp", *parts, f"{sources.u1}/*", dest],
            "U2": [*base, "cp", *parts, f"{sources.u2}/*", dest],
            "U3": [*base, "cp", *parts, sources.big, big],
            "U4": [*stdin, *base, "pipe", *parts, big],
            "U5": [*base, "cp", *parts, f"s3://{BUCKET}/{src_key}", f"s3://{BUCKET}/{dst_key}"],
        }[workload]
    elif tool == "aws":
        if equal:
            config = conf / "aws-config"
            config.write_text(
                f"[default]\ns3 =\n  max_concurrent_requests = {N}\n"
                f"  multipart_chunksize = {PART >> 20}MB\n"
            )
            extra["AWS_CONFIG_FILE"] = str(config)
        base = ["aws", "s3", "cp", "--only-show-errors"]
        line = {
            "U1": [*base, "--recursive", f"{sources.u1}/", dest],
            "U2": [*base, "--recursive", f"{sources.u2}/", dest],
            "U3": [*base, sources.big, big],
            "U4": [*stdin, *base, "-", big],
            "U5": [*base, f"s3://{BUCKET}/{src_key}", f"s3://{BUCKET}/{dst_key}"],
        }[workload]
    elif tool == "rclone":
        flags = ["--transfers", N, "--s3-upload-concurrency", N, "--s3-chunk-size", "8M"]
        base = ["rclone", "-q", *(flags if equal else [])]
        remote = f"bench:{BUCKET}/{PREFIX[workload]}"
        line = {
            "U1": [*base, "copy", sources.u1, remote],
            "U2": [*base, "copy", sources.u2, remote],
            "U3": [*base, "copyto", sources.big, f"{remote}big.bin"],
            "U4": [*stdin, *base, "rcat", f"{remote}big.bin"],
            "U5": [*base, "copyto", f"bench:{BUCKET}/{src_key}", f"bench:{BUCKET}/{dst_key}"],
        }[workload]
    elif tool == "boto3":
        tuned = ["--concurrency", N, "--part-size", PART] if equal else []
        base = [VENV_BIN / "python", Path(__file__).resolve(), "boto3"]
        base += ["--endpoint-url", endpoint, *tuned]
        key = f"{PREFIX[workload]}big.bin"
        line = {
            "U1": [*base, "dir", "--source", sources.u1, "--key", PREFIX[workload]],
            "U2": [*base, "dir", "--source", sources.u2, "--key", PREFIX[workload]],
            "U3": [*base, "file", "--source", sources.big, "--key", key],
            "U4": [*stdin, *base, "stdin", "--key", key],
            "U5": [*base, "copy", "--source", src_key, "--key", dst_key],
        }[workload]
    else:  # curl: U3 at equal connections only, 16 PUTs of the file's pieces to 16 keys
        script = conf / "curl-puts.sh"
        lines = ["#!/bin/bash", "set -u", "pids=()"]
        for url_file in sorted(conf.glob("url.*")):
            i = url_file.name.split(".")[1]
            lines.append(
                f"curl -s -f -H 'Expect:' -o /dev/null -T {sources.pieces}/part.{i} "
                f"'{url_file.read_text()}' & pids+=($!)"
            )
        lines += ['status=0; for p in "${pids[@]}"; do wait "$p" || status=1; done; exit $status']
        script.write_text("\n".join(lines) + "\n")
        line = ["bash", script]
    return [str(a) for a in line], extra


def runs_here(tool: str, setting: str, workload: str) -> bool:
    return tool != "curl" or (workload == "U3" and setting == "equal")


# -- checks -------------------------------------------------------------------------------------


def stored(bucket_dir: Path, prefix: str) -> dict[str, Path]:
    top = bucket_dir / prefix
    if not top.is_dir():
        return {}
    return {str(p.relative_to(top)): p for p in top.rglob("*") if p.is_file()}


def check(
    bucket_dir: Path, workload: str, tool: str, expected: dict[str, tuple[int, int]]
) -> str | None:
    found = stored(bucket_dir, PREFIX[workload])
    if workload == "U5":  # the source stays; only the copy is checked
        found.pop("src.bin", None)
    if tool == "curl":  # the pieces, in order, make the file
        (size, crc), parts, total = expected["big.bin"], sorted(found), 0
        if len(parts) != N:
            return f"{len(parts)} objects, expected {N}"
        whole = 0
        for name in parts:
            total += found[name].stat().st_size
            whole = zlib.crc32(found[name].read_bytes(), whole)
        return None if (total, whole) == (size, crc) else "the pieces do not make the file"
    if set(found) != set(expected):
        missing = sorted(set(expected) - set(found))[:3]
        extra = sorted(set(found) - set(expected))[:3]
        return f"{len(found)} objects, expected {len(expected)}; missing {missing}, extra {extra}"
    for name, (size, crc) in expected.items():
        if found[name].stat().st_size != size:
            return f"{name}: {found[name].stat().st_size} bytes, expected {size}"
        if crc_file(found[name]) != crc:
            return f"{name}: content differs from the source"
    return None


def reset(objects: StoredObjects, workload: str) -> None:
    """Removes what the last run stored, and any multipart upload a failed run left."""
    if workload == "U5":  # versitygw's root only; the source stays
        bucket_dir = objects.store.root / BUCKET
        (bucket_dir / "u5/dst.bin").unlink(missing_ok=True)
        shutil.rmtree(bucket_dir / ".sgwtmp/multipart", ignore_errors=True)
    else:
        objects.remove(PREFIX[workload])


# -- the emulated network, measured -----------------------------------------------------------


def measure_network(store: Store, sources: Sources, work: Path) -> dict[str, float]:
    """One connection's upload rate (three curl PUTs of a piece of U3's file) and the round
    trip of a small request on a reused connection (the median of ten), through toxiproxy."""
    client = _upload_client(store.endpoint("proxy"))
    client.put_object(Bucket=BUCKET, Key="probe/small", Body=b"x" * 1024)

    def url(method: str, key: str) -> str:
        return client.generate_presigned_url(
            method, Params={"Bucket": BUCKET, "Key": key}, ExpiresIn=3600
        )

    small = ["-o", "/dev/null", "-w", "%{time_pretransfer} %{time_starttransfer}\\n"]
    small.append(url("get_object", "probe/small"))
    out = subprocess.run(
        ["curl", "-s", "-f", *small * 11], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split("\n")
    # The first request opens the connection; the others reuse it.
    trips = [float(b) - float(a) for a, b in (line.split() for line in out[1:] if line.strip())]
    piece = sources.pieces / "part.00"
    rates = []
    for _ in range(3):
        put = ["curl", "-s", "-f", "-H", "Expect:", "-o", "/dev/null", "-T", str(piece)]
        put += ["-w", "%{time_pretransfer} %{time_total} %{size_upload}"]
        put.append(url("put_object", "probe/rate"))
        line = subprocess.run(put, capture_output=True, text=True, timeout=120, check=True)
        line = line.stdout.split()
        pre, total, size = (float(x) for x in line)
        rates.append(size / (total - pre))
    StoredObjects(store, work / "stored").remove("probe/")
    return {
        "round_trip_ms": round(statistics.median(trips) * 1000, 2),
        "upload_rate_mb_s": round(statistics.median(rates) / 1e6, 1),
    }


# -- the runs ---------------------------------------------------------------------------------


@dataclass
class Cell:
    workload: str
    tool: str
    setting: str
    argv: list[str]
    env: dict[str, str]
    runs: list[dict]
    error: str | None = None

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.runs]
        return statistics.median(values) if values and not self.error else None


def run_rounds(
    args, store: Store, workloads: list[str], tools: list[str], sources: Sources, work: Path
) -> list[Cell]:
    endpoint = store.endpoint("proxy")
    variables = environment(work / "home", endpoint)
    conf = work / "conf"
    conf.mkdir(exist_ok=True)
    if "U3" in workloads and "curl" in tools:  # presigned, for curl's PUTs
        client = _upload_client(endpoint)
        for i in range(N):
            (conf / f"url.{i:02}").write_text(
                client.generate_presigned_url(
                    "put_object",
                    Params={"Bucket": BUCKET, "Key": f"u3/part.{i:02}"},
                    ExpiresIn=6 * 3600,
                )
            )
    cells: dict[str, list[Cell]] = {}
    for workload in workloads:
        for tool in tools:
            for setting in SETTINGS:
                if runs_here(tool, setting, workload):
                    line, extra = argv(
                        tool, setting, workload, args.parabyte, sources, conf, endpoint
                    )
                    cell = Cell(workload, tool, setting, line, {**variables, **extra}, [])
                    cells.setdefault(workload, []).append(cell)
    rounds = args.u5_rounds if workloads == ["U5"] else args.rounds
    for rnd in range(rounds):
        for workload in workloads:
            shift = rnd % len(cells[workload])  # no tool always first
            for cell in cells[workload][shift:] + cells[workload][:shift]:
                if cell.error:
                    continue  # a cell that failed once is not run again
                run(args, store, cell, rnd, sources, work)
    return [c for workload in workloads for c in cells[workload]]


class DiskGuard(threading.Thread):
    """While a U5 run goes on, stops it (its process group) if the disk under the store falls
    below `floor` bytes free: versitygw writes the parts and then the copy, 12 GiB, and the disk
    may be shared."""

    def __init__(self, path: Path, floor: int):
        super().__init__(daemon=True)
        self.path, self.floor = path, floor
        self.done, self.tripped = threading.Event(), False

    def run(self) -> None:
        while not self.done.wait(1.0):
            if shutil.disk_usage(self.path).free < self.floor:
                self.tripped = True
                for pid in children(os.getpid()):
                    try:
                        os.killpg(pid, signal.SIGTERM)  # run_once starts each in its own group
                    except (ProcessLookupError, PermissionError):
                        pass
                return


def children(parent: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2 :].split()[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def run(args, store: Store, cell: Cell, rnd: int, sources: Sources, work: Path) -> None:
    objects = StoredObjects(store, work / "stored")
    reset(objects, cell.workload)
    if cell.workload == "U5":  # the last copy's dirty pages written out, outside the timing
        subprocess.run(["timeout", "120", "sync"], check=False)
    if cell.workload == "U5" and shutil.disk_usage(store.root).free < 2 * args.u5_size + (4 << 30):
        cell.error = f"not run: less than {human(2 * args.u5_size + (4 << 30))} free on the disk"
        print(f"  SKIPPED {cell.workload} {cell.tool} {cell.setting}: {cell.error}", flush=True)
        return
    args.quiet_left -= wait_for_quiet(min(QUIET_EACH_S, max(0.0, args.quiet_left)))
    server_log = store.server_log
    server_offset = server_log.stat().st_size
    before = store.proxy_bytes()
    command = Command(cell.argv, cell.env, work / "conf", None, lambda _out, _deep: None)
    slug = f"{cell.workload}-{cell.tool}-{cell.setting}-{rnd}"
    guard = DiskGuard(store.root, DISK_FLOOR) if cell.workload == "U5" else None
    if guard:
        guard.start()
    result = run_once(command, store, work / "runs" / slug, args.timeout, deep=False, proxied=True)
    if guard:
        guard.done.set()
        guard.join()
    after = store.proxy_bytes()
    record = result.to_json()
    record["up_bytes"] = after["upstream"] - before["upstream"]
    record["down_bytes"] = after["downstream"] - before["downstream"]
    if result.error:
        cell.error = result.error
        if guard and guard.tripped:
            cell.error = f"stopped: the disk fell below {human(DISK_FLOOR)} free during the copy"
        with open(server_log, "rb") as f:
            f.seek(server_offset)
            said = f.read().decode(errors="replace")
        if "multipart metadata" in said and "No space left on device" in said:
            # versitygw keeps the part list in one extended attribute, which ext4 caps at a
            # block: hundreds of parts do not fit, whatever the client does.
            cell.error = (
                "the store failed CompleteMultipartUpload: versitygw could not write the part "
                "list to the file's extended attributes on this disk (ext4: one block)"
            )
        print(f"  FAILED {slug}: {cell.error}", flush=True)
        return
    expected = sources.expected[cell.workload]
    wrong = check(objects.files(PREFIX[cell.workload]), cell.workload, cell.tool, expected)
    if wrong:
        raise SystemExit(f"{cell.tool} {cell.workload} {cell.setting}: wrong result: {wrong}")
    cell.runs.append(record)
    print(
        f"  {cell.workload} {cell.tool:9} {cell.setting:7} {result.wall_s:7.2f}s"
        f" cpu {result.cpu_s:6.2f}s rss {result.peak_rss_mib:6.1f} MiB"
        f" up {record['up_bytes'] / 1e6:8.1f} MB down {record['down_bytes'] / 1e6:6.1f} MB"
        f" {result.requests}",
        flush=True,
    )


def main() -> int:
    if sys.argv[1:2] == ["boto3"]:
        return boto3_peer(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parabyte", type=Path, default=REPO / "target/profiling/parabyte")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--u5-rounds", type=int, default=1, help="rounds of U5 (default 1: a copy writes 12 GiB)"
    )
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--quick", action="store_true", help="small sizes, to try the script")
    p.add_argument("--timeout", type=float, help="seconds one run may take (default 600)")
    p.add_argument("--data-dir", type=Path, default=Path("/dev/shm"), help="U1-U4's store")
    p.add_argument("--disk-dir", type=Path, default=Path("/tmp"), help="U5's store, on disk")
    p.add_argument("--no-docs", action="store_true", help="print the table only")
    p.add_argument(
        "--server",
        choices=SERVERS,
        default="versitygw",
        help="the store (minio: U1-U4, and the table is printed, not written into the docs)",
    )
    args = p.parse_args()
    args.parabyte = args.parabyte.resolve()
    args.u5_size = (QUICK if args.quick else FULL).u5_size
    args.timeout = args.timeout or (120 if args.quick else 600)
    args.quiet_left = QUIET_BUDGET_S
    tools = args.tools.split(",")
    workloads = args.workloads.split(",")
    unknown = (set(tools) - set(TOOLS)) | (set(workloads) - set(WORKLOADS))
    if unknown:
        raise SystemExit(f"unknown tools or workloads: {', '.join(sorted(unknown))}")
    if args.server != "versitygw":
        if "U5" in workloads:
            raise SystemExit("U5 writes its source into versitygw's root: leave it out")
        args.no_docs = True  # BENCHMARKS.md's section is versitygw's
    if not os.access(args.parabyte, os.X_OK):
        raise SystemExit(f"no parabyte at {args.parabyte}: build it, or give --parabyte")
    sizes = QUICK if args.quick else FULL
    free = shutil.disk_usage(args.disk_dir).free
    if "U5" in workloads and free < 3 * sizes.u5_size + (4 << 30):
        # The source, the parts of a copy and the copy they make, and room to spare.
        raise SystemExit(f"U5 needs {human(3 * sizes.u5_size)} free in {args.disk_dir}")
    started = time.monotonic()
    cells: list[Cell] = []
    network: dict[str, float] = {}
    memory_workloads = [w for w in workloads if w != "U5"]
    work = args.data_dir / f"parabyte-upload-{os.getpid()}"
    try:
        sources = Sources(work / "src", sizes, workloads)
        if memory_workloads:
            with Store(
                work / "store", REPO, cap_upstream=True, proxy_metrics=True, server=args.server
            ) as store:
                _upload_client(store.endpoint("direct")).create_bucket(Bucket=BUCKET)
                if "U3" in workloads:
                    network = measure_network(store, sources, work)
                    print(f"network: {network}", flush=True)
                cells += run_rounds(args, store, memory_workloads, tools, sources, work)
        if "U5" in workloads:
            disk = args.disk_dir / f"parabyte-upload-{os.getpid()}"
            with Store(disk / "store", REPO, cap_upstream=True, proxy_metrics=True) as store:
                _upload_client(store.endpoint("direct")).create_bucket(Bucket=BUCKET)
                made = time.monotonic()
                whole = write_u5_source(store.root / BUCKET, sizes.u5_size)
                sources.expected["U5"] = {"dst.bin": whole}
                print(f"U5: wrote the source in {time.monotonic() - made:.1f}s", flush=True)
                cells += run_rounds(
                    args, store, ["U5"], [t for t in tools if t != "curl"], sources, disk
                )
            shutil.rmtree(disk, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    saved = REPO / "bench/results" / f"uploads-{time.strftime('%Y%m%d-%H%M%S')}.json"
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps({"network": network, "cells": [asdict(c) for c in cells]}))
    print(f"every run: {saved}", flush=True)
    text = render(args, sizes, cells, network, time.monotonic() - started)
    print(text)
    if not args.no_docs:
        write_section(DOC, START, END, text)
    return 0


# -- the report -------------------------------------------------------------------------------


def sh(*command: str) -> str:
    try:
        out = subprocess.run(command, check=False, capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError) as e:
        return f"unavailable ({e})"


def versions(parabyte: Path) -> str:
    boto = sh(str(VENV_BIN / "python"), "-c", "import boto3; print(boto3.__version__)")
    commit = sh("git", "-C", str(REPO), "rev-parse", "--short", "HEAD")
    # Not through sh(): a clean tree prints nothing, which sh() reports as "unavailable".
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "crates"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    shown = parabyte.relative_to(REPO) if parabyte.is_relative_to(REPO) else parabyte
    built = time.strftime("%Y-%m-%d %H:%M %Z", time.localtime(parabyte.stat().st_mtime))
    return (
        f"parabyte `{shown}` built {built} (HEAD {commit}"
        f"{', crates/ with uncommitted changes' if dirty else ''}), "
        f"s5cmd {sh(str(VENV_BIN / 's5cmd'), 'version')}, "
        f"{sh(str(VENV_BIN / 'aws'), '--version').split()[0]}, "
        f"{sh(str(VENV_BIN / 'rclone'), 'version')}, boto3 {boto}"
    )


def floor_s(sizes: Sizes, network: dict[str, float]) -> float | None:
    """U3 at 16 connections: the bytes at 16 times one connection's measured upload rate, and
    the round trips of CreateMultipartUpload and CompleteMultipartUpload."""
    if not network:
        return None
    rate = network["upload_rate_mb_s"] * 1e6
    return sizes.u3_size / (N * rate) + 2 * network["round_trip_ms"] / 1000


def render(args, sizes: Sizes, cells: list[Cell], network: dict, seconds: float) -> str:
    by = {(c.workload, c.tool, c.setting): c for c in cells}
    titles = {
        "U1": f"{sizes.u1_count} x {human(sizes.u1_size)} files, a directory to a prefix",
        "U2": f"{sizes.u2_count} x {human(sizes.u2_size)} files, a directory to a prefix",
        "U3": f"one {human(sizes.u3_size)} file",
        "U4": f"{human(sizes.u3_size)} from standard input",
        "U5": f"S3 to S3 copy of a {human(sizes.u5_size)} object, same bucket",
    }
    command = "bench/upload.py" + (" --quick" if args.quick else "") + f" --rounds {args.rounds}"
    if args.server != "versitygw":
        command += f" --server {args.server}"
    server = {"versitygw": "versitygw", "minio": "MinIO"}[args.server]
    by_make = " (run by `make bench`)" if args.server == "versitygw" else ""
    counted = (
        "Requests: the last run's, from versitygw's access log. "
        if args.server == "versitygw"
        else "Requests: not counted (MinIO writes no access log). "
    )
    if args.u5_rounds != 1:
        command += f" --u5-rounds {args.u5_rounds}"
    fl = floor_s(sizes, network)
    lines = [
        "## Uploads (issue 24)",
        "",
        f"`.tools/venv-bench/bin/python {command}`{by_make}, {seconds / 60:.1f} "
        f"minutes, {time.strftime('%Y-%m-%d %H:%M %Z')}. {server} behind toxiproxy, 10 ms each "
        "way and 50 MB/s per connection capped in both directions"
        + (
            f" (measured: {network['round_trip_ms']:.1f} ms round trip, one connection "
            f"uploads at {network['upload_rate_mb_s']:.1f} MB/s)"
            if network
            else ""
        )
        + f"; U1-U4's store and files on tmpfs, U5's store on disk (`{args.disk_dir}`: the "
        "6 GiB source, the parts of a copy and the copy they make would not fit in memory; "
        "U5's times are mostly versitygw reading and writing 12 GiB on that disk). Each tool at its defaults, and at "
        f"equal settings: {N} requests in flight and {human(PART)} parts (parabyte `--workers "
        f"{N} --threads {N} --max-requests {N} --part-size 8MiB`; s5cmd `--numworkers {N} cp "
        f"--concurrency {N} --part-size {PART >> 20}` (`pipe` for U4); aws `AWS_CONFIG_FILE` "
        f"with `s3.max_concurrent_requests = {N}`, `s3.multipart_chunksize = {PART >> 20}MB`; "
        f"rclone `--transfers {N} --s3-upload-concurrency {N} --s3-chunk-size 8M`; boto3 "
        f"`TransferConfig(max_concurrency={N}, multipart_chunksize=8 MiB)` and a pool of {N} "
        "connections). U4 pipes the file through `cat` into `parabyte cp -`, `aws s3 cp -`, "
        "`s5cmd pipe`, `rclone rcat` and boto3's `upload_fileobj(sys.stdin.buffer)`; U5 is "
        "`parabyte cp s3://… s3://…`, `aws s3 cp`, `s5cmd cp`, `rclone copyto` and boto3's "
        f"managed `copy`. Medians of {args.rounds} rounds"
        + (
            f" ({args.u5_rounds} for U5: each copy writes 12 GiB to the disk)"
            if args.u5_rounds != args.rounds
            else ""
        )
        + ", the tools' order rotated each round; every run's objects are checked against the "
        "source (size and CRC32 of the stored files) and the destination is removed before the "
        "next, outside the timing. CPU: user and system seconds of the tool's processes (U4: "
        "`cat` too); peak RSS: its largest process. "
        + counted
        + "Through the proxy: bytes toxiproxy passed from the tool to the store and "
        "back (its `-proxy-metrics` counters), the last run's.",
        "",
        f"Versions: {versions(args.parabyte)}.",
        "",
    ]
    if args.quick:
        lines += ["> **Quick run** (`--quick`): small sizes. Not the numbers to quote.", ""]
    lines += [f"- {w}: {titles[w]}" for w in WORKLOADS if any(c.workload == w for c in cells)]
    lines.append("")
    if fl is not None:
        lines += [
            (
                f"The floor for U3 at {N} connections is {fl:.2f} s: {human(sizes.u3_size)} at "
                f"{N} times one connection's measured upload rate, plus the round trips of "
                "CreateMultipartUpload and CompleteMultipartUpload. curl (U3, equal settings) is "
                f"the file cut beforehand into {N} pieces, sent as {N} parallel presigned PUTs "
                f"(`curl -T`, no `Expect: 100-continue`) to {N} keys: what the network and the "
                "store allow with no multipart bookkeeping at all; neither counts the start of "
                "a process."
            ),
            "",
        ]
    lines += [
        (
            "| workload | tool | setting | median wall | x parabyte | CPU s | peak RSS | requests "
            "| through the proxy (up / down) |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for workload in WORKLOADS:
        for cell in [c for c in cells if c.workload == workload]:
            head = f"| {workload} | {cell.tool} | {cell.setting} |"
            if cell.error or not cell.runs:
                why = (cell.error or "no run").replace("|", "/")[:200]
                lines.append(f"{head} failed: {why} | | | | | |")
                continue
            ours = by.get((workload, "parabyte", cell.setting))
            ours = ours.median("wall_s") if ours else None
            if ours is None and cell.setting == "equal" and cell.tool == "curl":
                ours = (by.get((workload, "parabyte", "equal")) or cell).median("wall_s")
            wall = cell.median("wall_s")
            last = cell.runs[-1]
            requests = ", ".join(f"{n} {k}" for k, n in sorted(last["requests"].items()))
            lines.append(
                f"{head} {wall:.2f} s | {wall / ours:.2f} | {cell.median('cpu_s'):.2f} | "
                if ours
                else f"{head} {wall:.2f} s | - | {cell.median('cpu_s'):.2f} | "
            )
            lines[-1] += (
                f"{cell.median('peak_rss_mib'):.0f} MiB | {requests} | "
                f"{mb(last['up_bytes'])} / {mb(last['down_bytes'])} |"
            )
    lines += ["", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in targets(cells, sizes, fl)]
    load = other_load(cells)
    if load:
        lines += [
            "",
            (
                f"Other work on the machine (its CPU outside the tool, {server} and toxiproxy, "
                f"as a share of its {os.cpu_count()} cores): median {load[0] * 100:.0f}% of a run, "
                f"at most {load[1] * 100:.0f}%."
            ),
        ]
    lines.append("")
    return "\n".join(lines) + "\n"


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def targets(cells: list[Cell], sizes: Sizes, fl: float | None) -> list[tuple[str, str, str]]:
    by = {(c.workload, c.tool, c.setting): c for c in cells}
    out = []

    def wall(workload, tool, setting):
        cell = by.get((workload, tool, setting))
        return cell.median("wall_s") if cell else None

    for setting, said in (("default", "at its defaults"), ("equal", "at equal settings")):
        for workload in WORKLOADS:
            ours = wall(workload, "parabyte", setting)
            peers = [
                (wall(workload, c.tool, setting), c.tool)
                for c in cells
                if c.workload == workload
                and c.setting == setting
                and c.tool not in ("parabyte", "curl")
            ]
            if not peers or (workload, "parabyte", setting) not in by:
                continue
            failed = sorted(tool for w, tool in peers if w is None)
            done = sorted((w, tool) for w, tool in peers if w is not None)
            note = f"; failed: {', '.join(failed)}" if failed else ""
            if ours is None:
                out.append(
                    (f"{workload} faster than every peer {said}", "parabyte failed", "**missed**")
                )
                continue
            if not done:
                out.append(
                    (
                        f"{workload} faster than every peer {said}",
                        f"parabyte {ours:.2f} s{note}",
                        "no peer finished: nothing to compare",
                    )
                )
                continue
            best, tool = done[0]
            measured = f"parabyte {ours:.2f} s; fastest peer {tool} {best:.2f} s{note}"
            verdict = "met" if ours < best else f"**missed: {ours / best:.2f}x {tool}'s time**"
            out.append((f"{workload} faster than every peer {said}", measured, verdict))
    ours = wall("U3", "parabyte", "equal")
    if fl is not None and ours is not None:
        curl = wall("U3", "curl", "equal")
        shown = f"; curl's {N} PUTs {curl:.2f} s ({curl / fl:.2f}x)" if curl else ""
        ratio = ours / fl
        out.append(
            (
                f"U3 within 1.1x of the floor at {N} connections",
                f"parabyte {ours:.2f} s vs floor {fl:.2f} s: {ratio:.2f}x{shown}",
                "met" if ratio <= 1.1 else f"**missed by {(ratio / 1.1 - 1) * 100:.0f}%**",
            )
        )
    curl = wall("U3", "curl", "equal")
    if ours is not None and curl is not None:
        # Issue 47: the multipart bookkeeping (a round trip a part, the Complete) costs
        # nearly nothing against the same bytes sent as plain PUTs.
        ratio = ours / curl
        out.append(
            (
                f"U3 at equal settings within 1.05x of curl's {N} plain PUTs",
                f"parabyte {ours:.2f} s, curl {curl:.2f} s: {ratio:.2f}x",
                "met" if ratio <= 1.05 else f"**missed by {(ratio / 1.05 - 1) * 100:.0f}%**",
            )
        )
    for workload in WORKLOADS:
        pairs = []
        for setting in SETTINGS:
            a, b = by.get((workload, "parabyte", setting)), by.get((workload, "s5cmd", setting))
            if a and b and a.median("peak_rss_mib") and b.median("peak_rss_mib"):
                pairs.append((setting, a.median("peak_rss_mib"), b.median("peak_rss_mib")))
        if pairs:
            measured = "; ".join(f"{s}: {a:.0f} vs {b:.0f} MiB" for s, a, b in pairs)
            worst = max(a / b for _s, a, b in pairs)
            verdict = "met" if worst <= 1 else f"**missed: {worst:.2f}x s5cmd's**"
            out.append((f"{workload} peak RSS at most s5cmd's", measured, verdict))
    for setting in SETTINGS:
        cell = by.get(("U5", "parabyte", setting))
        if cell and cell.runs and not cell.error:
            moved = max(r["up_bytes"] + r["down_bytes"] for r in cell.runs)
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(cell.runs[-1]["requests"].items()))
            out.append(
                (
                    f"U5 ({setting}) sends no object byte through parabyte",
                    (
                        f"at most {mb(moved)} through the proxy both ways in a run, for a "
                        f"{human(sizes.u5_size)} object; requests: {kinds}"
                    ),
                    "met" if moved < 1 << 20 else "**missed**",
                )
            )
    return out


def other_load(cells: list[Cell]) -> tuple[float, float] | None:
    shares = []
    for cell in cells:
        for r in cell.runs:
            other = (
                r["machine_busy_s"]
                - r["cpu_s"]
                - sum(r["server_cpu_s"].values())
                - r["harness_cpu_s"]
            )
            shares.append(max(0.0, other) / (r["wall_s"] * (os.cpu_count() or 1)))
    return (statistics.median(shares), max(shares)) if shares else None


if __name__ == "__main__":
    sys.exit(main())
