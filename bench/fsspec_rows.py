"""parabyte's fsspec filesystem against s3fs and obstore's fsspec adapter (issue 46), in one run.

The data tools (pandas, pyarrow, Dask...) read S3 through an fsspec filesystem; these rows
put `parabyte.fsspec.ParabyteFileSystem`, s3fs's `S3FileSystem` and obstore's
`obstore.fsspec.FsspecStore` side by side, each at its defaults, on the toxiproxy WAN of
`make bench` (versitygw on tmpfs, 10 ms each way, 50 MB/s a connection):

- F1: `fs.cat` of a list of 1,000 paths of 1 KiB objects;
- F2: `fs.get` of one 1 GiB object;
- F3: `fs.get` of 64 x 16 MiB objects (a list of paths to a list of files);
- F4: `pandas.read_parquet` of a 1 GiB Parquet dataset (8 files) with `filesystem=fs`.

Each run is one process of bench/peers/fsspec_libs.py in .tools/venv-fsspec, timed and
measured as every row of the bench is (harness/measure.py: wall time, CPU seconds and peak
RSS from GNU time, requests from the store's access log, connections from toxiproxy's), and
checked (F1: the MD5 of the contents; F2, F3: the files, by MD5 in the first run; F4: the rows
and the sum of a column). The table replaces the part of docs/BENCHMARKS.md between its fsspec
markers.

    .tools/venv-bench/bin/python bench/fsspec_rows.py [--workloads F1,F2,F3,F4]
        [--tools parabyte,s3fs,obstore] [--runs 3] [--no-docs]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Self

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.measure import Command, run_once, wait_for_quiet
from harness.report import write_section
from harness.setup import (
    ACCESS_KEY,
    BUCKET,
    LATENCY_MS_EACH_WAY,
    RATE_KB_PER_S,
    REGION,
    SECRET_KEY,
    Store,
    _set_object_attributes,
    _upload_client,
)
from harness.tools import check_parts, check_tree

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs/BENCHMARKS.md"
START, END = "<!-- fsspec: start -->", "<!-- fsspec: end -->"  # as report.py keeps them
VENV = Path(os.environ.get("FSSPEC_VENV", REPO / ".tools/venv-fsspec"))
PEER = REPO / "bench/peers/fsspec_libs.py"
TOOLS = ("parabyte", "s3fs", "obstore")
WORKLOADS = {
    "F1": "`fs.cat` of a list of 1,000 paths of 1 KiB objects (no listing: the paths known)",
    "F2": "`fs.get` of one 1 GiB object (`fs.get('bench/f2/big.bin', 'DEST/big.bin')`)",
    "F3": "`fs.get` of 64 x 16 MiB objects, a list of paths to a list of files "
    "(`fs.get(['bench/f3/000.bin', ...], ['DEST/000.bin', ...])`; not the recursive form "
    "`fs.get('bench/f3/', 'DEST/', recursive=True)`, which obstore's adapter fails: it GETs "
    "the prefix `f3` as a key, 404)",
    "F4": "a 1 GiB Parquet dataset of 8 files into pandas "
    "(`pandas.read_parquet('bench/f4/', filesystem=fs)`)",
}
F1_COUNT, F1_SIZE = 1000, 1024
F2_SIZE = 1 << 30
F3_COUNT, F3_SIZE = 64, 16 << 20
F4_FILES, F4_FILE_MIB = 8, 128
# Each cell waits at most this long for other work on the machine to pass before a run.
QUIET_WAIT_S = 15


class FsspecStore(Store):
    """versitygw (plain HTTP) and toxiproxy in front of it: all these rows need."""

    def __enter__(self) -> Self:
        self.work.mkdir(parents=True, exist_ok=False)
        for d in (self.root, self.logs):
            d.mkdir()
        try:
            self._start_versitygw("plain", tls=False)
            self._start_toxiproxy((("proxy", "plain"),))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self


def fill(store: Store, work: Path, chosen: list[str]) -> dict:
    """The objects each chosen workload reads. F1 is written straight into the posix root with
    the MD5 ETag versitygw stores (as W1 is); F2-F4 are PUT through S3, so the store keeps a
    full-object CRC64NVME, as S3 does by default."""
    client = _upload_client(store.endpoint("direct"))
    client.create_bucket(Bucket=BUCKET)
    expected: dict = {}
    if "F1" in chosen:
        digest = hashlib.md5()
        for i in range(F1_COUNT):
            body = os.urandom(F1_SIZE)
            path = store.root / BUCKET / "f1" / f"{i:05}.bin"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body)
            _set_object_attributes(path, hashlib.md5(body).hexdigest())
            digest.update(body)
        expected["F1"] = {"bytes": F1_COUNT * F1_SIZE, "md5": digest.hexdigest()}
    if "F2" in chosen:
        body = os.urandom(F2_SIZE)
        client.put_object(Bucket=BUCKET, Key="f2/big.bin", Body=body)
        expected["F2"] = (F2_SIZE, hashlib.md5(body).hexdigest())
        del body
    if "F3" in chosen:
        tree = {}
        for i in range(F3_COUNT):
            body = os.urandom(F3_SIZE)
            client.put_object(Bucket=BUCKET, Key=f"f3/{i:03}.bin", Body=body)
            tree[f"{i:03}.bin"] = (F3_SIZE, hashlib.md5(body).hexdigest())
        expected["F3"] = tree
    if "F4" in chosen:
        local = work / "parquet"
        made = subprocess.run(
            [
                str(VENV / "bin/python"),
                str(PEER),
                "make-parquet",
                "--dest",
                str(local),
                "--files",
                str(F4_FILES),
                "--file-mib",
                str(F4_FILE_MIB),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        expected["F4"] = json.loads(made.stdout) | {"stored_bytes": 0}
        for path in sorted(local.iterdir()):
            with open(path, "rb") as f:
                client.put_object(Bucket=BUCKET, Key=f"f4/{path.name}", Body=f)
            expected["F4"]["stored_bytes"] += path.stat().st_size
        shutil.rmtree(local)
    return expected


def check_json(expect: dict, keys: tuple[str, ...]):
    """The peer's JSON line says what it read: it must match."""

    def check(stdout: Path, _deep: bool) -> str | None:
        said = json.loads(stdout.read_text().strip().splitlines()[-1])
        for key in keys:
            want, got = expect[key], said.get(key)
            same = (
                math.isclose(got, want, rel_tol=1e-9)
                if isinstance(want, float) and isinstance(got, float)
                else got == want
            )
            if not same:
                return f"{key}: {got}, expected {want}"
        return None

    return check


def command(wl: str, tool: str, store: Store, expected: dict, scratch: Path) -> Command:
    home = scratch / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    argv = [str(VENV / "bin/python"), str(PEER), tool]
    common = ["--endpoint-url", store.endpoint("proxy"), "--bucket", BUCKET]
    dest = None
    if wl == "F1":
        argv += ["cat", *common, "--prefix", "f1", "--count", str(F1_COUNT)]
        check = check_json(expected["F1"], ("bytes", "md5"))
    elif wl in ("F2", "F3"):
        dest = scratch / "dest" / f"{wl}-{tool}"
        argv += ["get", *common, "--prefix", wl.lower(), "--dest", str(dest)]
        argv += ["--key", "big.bin"] if wl == "F2" else ["--count", str(F3_COUNT)]
        check = (
            check_parts(dest, *expected["F2"]) if wl == "F2" else check_tree(dest, expected["F3"])
        )
    else:
        argv += ["parquet", *common, "--prefix", "f4"]
        check = check_json(expected["F4"], ("rows", "c0_sum"))
    return Command(argv=argv, env=env, cwd=scratch, dest=dest, check=check)


def sh(*argv: str) -> str:
    try:
        out = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unavailable ({e})"


def versions() -> str:
    script = (
        "import importlib.metadata as m; print(', '.join(f'{p} {m.version(p)}' for p in "
        "('parabyte', 's3fs', 'aiobotocore', 'botocore', 'obstore', 'fsspec', 'pandas', "
        "'pyarrow')))"
    )
    commit = sh("git", "-C", str(REPO), "rev-parse", "--short", "HEAD")
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "crates", "python"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    python = sh(str(VENV / "bin/python"), "--version")
    return (
        f"{sh(str(VENV / 'bin/python'), '-c', script)} ({python}; parabyte installed from the "
        f"checkout at HEAD {commit}{', with uncommitted changes' if dirty else ''})"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated F1-F4")
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--runs", type=int, default=3, help="runs per cell, median reported")
    p.add_argument("--timeout", type=float, default=300, help="seconds one run may take")
    p.add_argument(
        "--max-minutes",
        type=float,
        default=40,
        help="stop starting runs after this long; what is left is reported as skipped",
    )
    p.add_argument("--data-dir", type=Path, default=Path("/dev/shm"))
    p.add_argument("--no-docs", action="store_true", help="print the table only")
    args = p.parse_args()
    chosen = args.workloads.split(",")
    tools = args.tools.split(",")
    if set(chosen) - set(WORKLOADS) or set(tools) - set(TOOLS):
        raise SystemExit(f"workloads from {','.join(WORKLOADS)}, tools from {','.join(TOOLS)}")
    if not os.access(VENV / "bin/python", os.X_OK):
        raise SystemExit(f"no {VENV}: run scripts/install-bench-tools.sh (make bench does)")
    started = time.monotonic()
    deadline = started + args.max_minutes * 60
    work = args.data_dir / f"parabyte-fsspec-{os.getpid()}"
    out_dir = REPO / "bench/results" / time.strftime("%Y%m%d-%H%M%S-fsspec")
    runs: dict[tuple[str, str], list[dict]] = {}
    # Whatever happens, the store, the scratch files and the downloads leave the tmpfs.
    try:
        with FsspecStore(work / "store", REPO) as store:
            scratch = work / "scratch"
            scratch.mkdir()
            t = time.monotonic()
            expected = fill(store, work, chosen)
            print(f"fsspec: filled the bucket in {time.monotonic() - t:.1f}s", flush=True)
            for wl in chosen:
                for rnd in range(args.runs):
                    shift = rnd % len(tools)  # no tool always first
                    for tool in tools[shift:] + tools[:shift]:
                        records = runs.setdefault((wl, tool), [])
                        if records and records[0]["error"]:
                            continue  # a cell that failed once is not run again
                        if time.monotonic() > deadline:
                            continue
                        waited = wait_for_quiet(QUIET_WAIT_S)
                        result = run_once(
                            command(wl, tool, store, expected, scratch),
                            store,
                            out_dir / "runs" / f"{wl}-{tool}-{rnd}",
                            args.timeout,
                            deep=(rnd == 0),
                            proxied=True,
                        )
                        said = {}
                        stdout = out_dir / "runs" / f"{wl}-{tool}-{rnd}" / "stdout"
                        if result.error is None:
                            said = json.loads(stdout.read_text().strip().splitlines()[-1])
                        records.append(
                            result.to_json()
                            | {
                                "waited_s": waited,
                                "op_s": said.get("op_s"),
                                "setup_s": said.get("setup_s"),
                            }
                        )
                        print(
                            f"  {wl} {tool:9} {result.wall_s:7.2f}s op {said.get('op_s')} "
                            f"cpu {result.cpu_s:6.2f}s rss {result.peak_rss_mib:7.1f} MiB "
                            f"{result.requests} conns {result.connections} "
                            f"{result.error or 'ok'}",
                            flush=True,
                        )
            (out_dir / "results.json").write_text(
                json.dumps({f"{wl} {tool}": r for (wl, tool), r in runs.items()}, indent=1)
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = render(args, chosen, tools, runs, expected, time.monotonic() - started)
    print(text)
    if not args.no_docs:
        write_section(DOC, START, END, text)
    return 0


def ok(records: list[dict]) -> list[dict]:
    return [r for r in records if r["error"] is None]


def median(records: list[dict], field: str) -> float:
    return statistics.median(r[field] for r in records)


def render(args, chosen, tools, runs, expected, seconds: float) -> str:
    command = "bench/fsspec_rows.py"
    if args.workloads != ",".join(WORKLOADS):
        command += f" --workloads {args.workloads}"
    if args.tools != ",".join(TOOLS):
        command += f" --tools {args.tools}"
    command += f" --runs {args.runs}"
    parquet = expected.get("F4")
    lines = [
        "## fsspec: parabyte's filesystem against s3fs and obstore's (issue 46)",
        "",
        (
            f"`.tools/venv-bench/bin/python {command}` (run by `make bench`), "
            f"{seconds / 60:.1f} minutes, {time.strftime('%Y-%m-%d %H:%M %Z')}. versitygw "
            f"behind toxiproxy ({LATENCY_MS_EACH_WAY} ms each way, {RATE_KB_PER_S // 1000} MB/s "
            "a connection, as every row above), the store and the downloads on tmpfs. Each "
            "filesystem is made with its defaults, only the endpoint, the keys and the region "
            "given: `ParabyteFileSystem(endpoint_url=...)`, `s3fs.S3FileSystem(key=..., "
            "secret=..., endpoint_url=..., client_kwargs={'region_name': ...})`, "
            "`obstore.fsspec.FsspecStore('s3', endpoint=..., access_key_id=..., "
            "secret_access_key=..., region=..., client_options={'allow_http': True})`; then the "
            "same fsspec call for each (bench/peers/fsspec_libs.py), one process a run, in "
            "`.tools/venv-fsspec` (its own venv: s3fs's aiobotocore pins an older botocore than "
            "the bench's boto3)."
        ),
        "",
    ]
    lines += [f"- {wl}: {WORKLOADS[wl]}" for wl in chosen]
    if parquet:
        lines += [
            "",
            (
                f"F4's dataset: {F4_FILES} files written by pyarrow with its defaults (snappy, "
                f"row groups of up to 1Mi rows), 8 float64 columns of random numbers, "
                f"{parquet['rows']:,} rows, {parquet['stored_bytes'] / (1 << 30):.2f} GiB stored."
            ),
        ]
    lines += [
        "",
        (
            f"Medians of {args.runs} runs, the tools' order rotated each run; every run checked "
            "(F1: the MD5 of what `cat` returned; F2, F3: the files' sizes, and their MD5 in the "
            "first run; F4: the rows and the sum of a column). *wall*: the process from start to "
            "exit (Python's start and the imports included, as a user pays them); *call*: the "
            "fsspec call alone, timed inside the process. CPU: user and system seconds of the "
            "process; peak RSS: its maximum. Requests: the last run's, from versitygw's access "
            "log; connections: toxiproxy's count, the last run's."
        ),
        "",
        (
            "| workload | filesystem | median wall | median call | x parabyte (call) | CPU s | "
            "peak RSS | requests | connections |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for wl in chosen:
        ours = ok(runs.get((wl, "parabyte"), []))
        ours_call = median(ours, "op_s") if ours else None
        for tool in tools:
            records = runs.get((wl, tool), [])
            good = ok(records)
            if not good:
                why = records[0]["error"] if records else "not run (time)"
                lines.append(f"| {wl} | {tool} | failed: {why[:200]} | | | | | | |")
                continue
            call = median(good, "op_s")
            ratio = f"{call / ours_call:.2f}" if ours_call else "-"
            last = good[-1]
            requests = ", ".join(f"{n} {k}" for k, n in sorted(last["requests"].items()))
            lines.append(
                f"| {wl} | {tool} | {median(good, 'wall_s'):.2f} s | {call:.2f} s | {ratio} | "
                f"{median(good, 'cpu_s'):.2f} | {median(good, 'peak_rss_mib'):.0f} MiB | "
                f"{requests} | {last['connections']} |"
            )
    lines += ["", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in targets(chosen, tools, runs)]
    lines += ["", NOTES, "", f"Versions: {versions()}.", ""]
    return "\n".join(lines) + "\n"


# What the requests and the memory above show of each library's way, the same at every run.
NOTES = (
    "What the rows show of each filesystem: s3fs's and obstore's `cat` of a list send a HEAD "
    "before every GET, and obstore's adapter opened a connection per object (F1); s3fs "
    "fetches one large object as parallel ranged GETs held in memory until written, "
    "obstore's adapter reads the whole object into memory on one stream and then writes it "
    "(F2: their peak RSS is the object's size and more); parabyte streams ranges into the "
    "file, and sent one HEAD for each object it fetched in more than one ranged GET (F2, "
    "F3). F4: parabyte's open file fetches a read larger than its block (pyarrow's column "
    "chunks) as asked, with no window ahead of it; until stop 43 it read ahead of those too "
    "(up to 64 MiB) and held that window beside pyarrow's own copy, 1.09x obstore's peak "
    "memory: docs/PROFILE.md, stop 43. F4's peak RSS is mostly pandas' and pyarrow's (the "
    "frame, the Arrow table, the pre-buffered column chunks): the filesystems differ there by "
    "a few percent, about the spread of one filesystem's runs, so its verdict has little room."
)


def targets(chosen, tools, runs) -> list[tuple[str, str, str]]:
    """Issue 46: faster than both at their defaults, and peak memory no higher."""
    out = []
    for wl in chosen:
        ours = ok(runs.get((wl, "parabyte"), []))
        peers = {t: ok(runs.get((wl, t), [])) for t in tools if t != "parabyte"}
        if not ours or not all(peers.values()):
            out.append(
                (
                    f"{wl}: faster than s3fs and obstore, peak memory no higher",
                    "not every cell measured",
                    "**not measured**",
                )
            )
            continue
        for field, what, unit in (
            ("wall_s", "faster (wall)", "s"),
            ("op_s", "faster (the call)", "s"),
            ("peak_rss_mib", "peak RSS no higher", "MiB"),
        ):
            mine = median(ours, field)
            theirs = {t: median(r, field) for t, r in peers.items()}
            best_tool = min(theirs, key=theirs.get)
            best = theirs[best_tool]
            met = mine < best if field != "peak_rss_mib" else mine <= best
            shown = ", ".join(
                f"{t} {v:.{0 if unit == 'MiB' else 2}f} {unit}" for t, v in theirs.items()
            )
            verdict = "**met**" if met else f"**missed: {mine / best:.2f}x {best_tool}'s**"
            out.append(
                (
                    f"{wl}: {what} than s3fs and obstore",
                    f"parabyte {mine:.{0 if unit == 'MiB' else 2}f} {unit}; {shown}",
                    verdict,
                )
            )
    return out


if __name__ == "__main__":
    sys.exit(main())
