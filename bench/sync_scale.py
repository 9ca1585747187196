"""sync and rm at millions of keys (issue 47, item 1), in one run.

The store is the test kit's listing server (`testbed list-server`: keys made from their place
in the order, a page costs the same wherever it starts, as on S3), behind the same toxiproxy
as `make bench` (10 ms each way, 50 MB/s a connection). It serves the bucket `bench` and two
twins over the same keys: `bench-same` (identical) and `bench-changed` (1% of the keys, spread
evenly, one byte longer), and it takes the writes a sync or rm sends without storing them,
logging each (PutObject, CopyObject, GetObject, DeleteObject(s) with the keys each names), so
that every run is checked by what it sent: nothing where nothing changed, exactly the changed
1% where 1% changed, every key for rm. Objects are empty (the changed ones hold one byte), so
a local copy of a million keys fits in tmpfs.

Cells, in W4's shape (100 folders) and flat (every key under one prefix):

- S3->S3, nothing to do (`bench-same` to `bench`) and 1% changed (`bench-changed` to `bench`);
- S3->local, into a directory that holds every key as `bench` does (empty files dated as the
  listing dates the objects): from `bench` (nothing to do) and from `bench-changed` (1%);
- local->S3, that directory to `bench` (nothing to do) and to `bench-changed` (1% differ);
- rm -r of every key of `bench`.

The local cells run at the smallest key count only: /dev/shm holds about three million inodes
here. With `--local-dir` (a filesystem with an inode for every key, such as the disk) the
local tree is made there, and the local cells run at every key count. Each tool runs at its defaults; a peer is stopped when its peak RSS passes `--max-rss-mib`
(polled every 0.2 s) or when it has run `--cap-factor` times parabyte's time in that cell (at
least `--min-cap-s`): where it did not finish, the table says at what memory or after how long.
parabyte runs first in each cell, to set that cap. Medians of the rounds that finished.

    .tools/venv-bench/bin/python bench/sync_scale.py [--keys 1000000,10000000]
        [--peer-keys 1000000] [--rounds 3] [--tools parabyte,s5cmd,aws,rclone]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.measure import _die_with_parent, _read_rusage, _settled_tail, _size, wait_for_quiet
from harness.report import write_section
from harness.setup import BUCKET
from listing import ListingStore
from sync_rm import environment
from upload import versions

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs/BENCHMARKS.md"
START, END = "<!-- sync-scale: start -->", "<!-- sync-scale: end -->"  # as report.py keeps them
TOOLS = ("parabyte", "s5cmd", "aws", "rclone")
SAME, CHANGED = f"{BUCKET}-same", f"{BUCKET}-changed"
PREFIX = "w4/"
# The time every object is listed with (the listing server's), given to the local files.
LISTED_AT = 1_704_164_645  # 2024-01-02T03:04:05Z
CHANGED_PER_MILLION = 10_000
SHAPES = {"W4": 100, "flat": 0}
CELLS = (
    "S3->S3 same",
    "S3->S3 1%",
    "S3->local same",
    "S3->local 1%",
    "local->S3 same",
    "local->S3 1%",
    "rm -r",
)
LOCAL_CELLS = {c for c in CELLS if "local" in c}
GOAL = 5.0
MAX_RSS_GOAL_MIB = 64
QUIET_WAIT_S = 20
# parabyte itself is stopped only past this (a hang, not a measurement).
PARABYTE_CAP_S = 1800.0
DELETE_KEYS = re.compile(r"\ss3_DeleteObjects\s.*\skeys=(\d+)")
OPERATION = re.compile(r"\ss3_(\w+)\s+\S+\s+\S+\s+(\d{3})\s")


def key_name(at: int, keys: int, folders: int) -> str:
    """The name at place `at` of the sorted order, as the listing server makes it
    (crates/parabyte-testkit/src/listing_names.rs)."""
    width = max(6, len(str(max(keys - 1, 0))))
    if folders == 0:
        return f"{PREFIX}k{at:0{width}}"
    each, rest = divmod(keys, folders)
    if at < rest * (each + 1):
        folder, place = divmod(at, each + 1)
    else:
        past = at - rest * (each + 1)
        folder, place = rest + past // each, past % each
    return f"{PREFIX}d{folder:03}/k{place * folders + folder:0{width}}"


def forget_writes(port: int) -> None:
    """The server reads written keys back at their written size (rclone checks each copy by a
    HEAD) until told to forget them: each run starts from the same state."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/?forget-writes", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.status != 204:
            raise RuntimeError(f"the listing server did not forget its writes: {response.status}")


def changed_places(keys: int) -> range:
    """The places `bench-changed` changes: where place * share / 1e6 steps up."""
    step = 1_000_000 // CHANGED_PER_MILLION
    return range(step - 1, keys, step)


def make_local(root: Path, keys: int, folders: int) -> None:
    """Every key of `bench` as an empty file, dated as the listing dates it."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    made: set[Path] = set()
    for at in range(keys):
        path = root / key_name(at, keys, folders)[len(PREFIX):]
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
        os.utime(path, (LISTED_AT, LISTED_AT))


def reset_local(root: Path) -> int:
    """Put back every file a download rewrote (an empty file dated as listed): not only the
    1% that changed, since a peer stopped part-way, or one that judges by time, may have
    rewritten others, which a later local->S3 run would then send. Returns how many."""
    rewritten = 0
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            seen = os.stat(path)
            if seen.st_size != 0 or seen.st_mtime != LISTED_AT:
                with open(path, "wb"):
                    pass
                os.utime(path, (LISTED_AT, LISTED_AT))
                rewritten += 1
    return rewritten


def clean_strays(root: Path, keys: int, folders: int) -> int:
    """Remove what a stopped download left (a tool's temporary files, a file under a name no
    key of `bench` has): else a later local->S3 run would send it."""
    expected = {key_name(at, keys, folders)[len(PREFIX):] for at in range(keys)}
    removed = 0
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if os.path.relpath(path, root) not in expected:
                os.unlink(path)
                removed += 1
    return removed


def argv(tool: str, parabyte: Path, endpoint: str, cell: str, local: Path) -> list[str]:
    source, dest = {
        "S3->S3 same": (f"s3://{SAME}/{PREFIX}", f"s3://{BUCKET}/{PREFIX}"),
        "S3->S3 1%": (f"s3://{CHANGED}/{PREFIX}", f"s3://{BUCKET}/{PREFIX}"),
        "S3->local same": (f"s3://{BUCKET}/{PREFIX}", f"{local}/"),
        "S3->local 1%": (f"s3://{CHANGED}/{PREFIX}", f"{local}/"),
        "local->S3 same": (f"{local}/", f"s3://{BUCKET}/{PREFIX}"),
        "local->S3 1%": (f"{local}/", f"s3://{CHANGED}/{PREFIX}"),
        "rm -r": (f"s3://{BUCKET}/{PREFIX}", ""),
    }[cell]
    rm = cell == "rm -r"
    if tool == "parabyte":
        if rm:
            return [str(parabyte), "rm", "-r", "--quiet", "--endpoint-url", endpoint, source]
        # No line per object on stderr, as aws runs with --only-show-errors.
        return [str(parabyte), "sync", "--json", "--object-lines", "never", "--endpoint-url",
                endpoint, source, dest]
    if tool == "aws":
        if rm:
            return ["aws", "s3", "rm", "--recursive", "--only-show-errors", source]
        return ["aws", "s3", "sync", "--only-show-errors", source, dest]
    if tool == "s5cmd":
        if rm:
            return ["s5cmd", "rm", f"{source}*"]
        star = f"{source}*" if source.startswith("s3://") else source
        return ["s5cmd", "sync", star, dest]
    remote = lambda url: f"bench:{url[len('s3://'):].rstrip('/')}" if url.startswith("s3://") else url
    if rm:
        return ["rclone", "-q", "delete", remote(source)]
    return ["rclone", "-q", "sync", remote(source), remote(dest)]


def expected_writes(cell: str, keys: int) -> dict[str, int]:
    changed = len(changed_places(keys))
    return {
        "S3->S3 same": {"copied": 0, "put": 0},
        "S3->S3 1%": {"copied": changed, "put": 0},
        "S3->local same": {"GET": 0},
        "S3->local 1%": {"GET": changed},
        "local->S3 same": {"put": 0, "copied": 0},
        "local->S3 1%": {"put": changed, "copied": 0},
        "rm -r": {"deleted": keys},
    }[cell]


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    requests: dict[str, int]
    writes: dict[str, int]
    # None: finished and checked. Otherwise why it did not finish, or what it got wrong.
    failed: str | None = None
    stopped: bool = False


@dataclass
class Cell:
    runs: list[Run] = field(default_factory=list)


def counts(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """Requests by kind, and the writes (keys deleted counted one by one) from the log lines."""
    requests: dict[str, int] = {}
    for match in OPERATION.finditer(text):
        kind = {"ListObjectsV2": "LIST", "GetObject": "GET", "HeadObject": "HEAD"}.get(
            match.group(1), match.group(1))
        requests[kind] = requests.get(kind, 0) + 1
        if int(match.group(2)) >= 400:
            requests["errors"] = requests.get("errors", 0) + 1
    deleted = sum(int(n) for n in DELETE_KEYS.findall(text)) + requests.get("DeleteObject", 0)
    writes = {
        "put": requests.get("PutObject", 0),
        "copied": requests.get("CopyObject", 0),
        "deleted": deleted,
        "GET": requests.get("GET", 0),
    }
    return requests, writes


def group_rss_mib(pgid: int) -> float:
    """The largest RSS of one process in the group `pgid` (the tool; GNU time is small)."""
    largest = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat[stat.rindex(")") + 2:].split()[2]) != pgid:
                continue
            for line in Path(f"/proc/{entry}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    largest = max(largest, int(line.split()[1]))
        except (OSError, ValueError, IndexError):
            continue
    return largest / 1024


def run_capped(command: list[str], env: dict, work: Path, run_dir: Path, log: Path,
               cap_s: float, max_rss_mib: float) -> Run:
    """One run under GNU time, stopped past `cap_s` seconds or `max_rss_mib` of RSS."""
    run_dir.mkdir(parents=True, exist_ok=True)
    rusage = run_dir / "rusage"
    offset = _size(log)
    stopped: list[str] = []
    seen_rss = [0.0]
    with open(run_dir / "stdout", "wb") as out, open(run_dir / "stderr", "wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            ["/usr/bin/time", "-f", "%U %S %M", "-o", str(rusage), *command], env=env,
            cwd=work, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
            preexec_fn=_die_with_parent)
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.2):
                rss = group_rss_mib(process.pid)
                seen_rss[0] = max(seen_rss[0], rss)
                elapsed = time.perf_counter() - started
                why = None
                if rss > max_rss_mib:
                    why = f"did not finish: stopped at {rss:.0f} MiB after {elapsed:.0f} s"
                elif elapsed > cap_s:
                    why = f"did not finish after {cap_s:.0f} s (at {rss:.0f} MiB)"
                if why:
                    stopped.append(why)
                    try:
                        os.killpg(process.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _, status = os.waitpid(process.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        watcher.join()
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    user_s, sys_s, peak_kib = _read_rusage(rusage)
    requests, writes = counts(_settled_tail(log, offset))
    peak = max(peak_kib / 1024, seen_rss[0])
    failed = stopped[0] if stopped else None
    code = os.waitstatus_to_exitcode(status)
    if failed is None and code != 0:
        tail = (run_dir / "stderr").read_text(errors="replace").strip().splitlines()[-2:]
        failed = f"exit {code}: {' | '.join(tail)[:200]}"
    return Run(round(wall, 3), round(user_s + sys_s, 2), round(peak, 1), requests, writes,
               failed, bool(stopped))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parabyte", type=Path, default=REPO / "target/profiling/parabyte")
    p.add_argument("--testbed", type=Path, default=REPO / "target/profiling/testbed")
    p.add_argument("--keys", default="1000000,10000000")
    p.add_argument("--peer-keys", default="1000000",
                   help="key counts at which the peers run too (the others: parabyte alone)")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--cells", default=",".join(CELLS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--max-rss-mib", type=float, default=4096)
    p.add_argument("--cap-factor", type=float, default=5.0,
                   help="a peer is stopped after this many times parabyte's time in the cell")
    p.add_argument("--min-cap-s", type=float, default=30.0)
    p.add_argument("--local-dir", type=Path, default=None,
                   help="make the local tree here, not on /dev/shm, and run the local cells "
                        "at every key count")
    p.add_argument("--keep-local", action="store_true",
                   help="with --local-dir: keep the local tree (named by its keys and shape) "
                        "after the run, and use the one an earlier run kept (its files put "
                        "back as listed) rather than make it again: builds compared at "
                        "10,000,000 keys without 15 minutes of making files each")
    p.add_argument("--max-minutes", type=float, default=240.0)
    p.add_argument("--no-docs", action="store_true", help="print the table only")
    p.add_argument("--save", type=Path,
                   default=REPO / f"bench/results/sync_scale-{time.strftime('%Y%m%d-%H%M%S')}.jsonl",
                   help="every run as a JSON line (to render again, or with another run's)")
    p.add_argument("--report", default="",
                   help="render the runs saved in these files (comma-separated) instead")
    args = p.parse_args()
    if args.report:
        return report(args)
    args.parabyte = args.parabyte.resolve()
    tools = args.tools.split(",")
    if tools[0] != "parabyte":
        raise SystemExit("parabyte runs first in each cell: --tools parabyte,...")
    for binary in (args.parabyte, args.testbed):
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"no {binary.name} at {binary}: build it, or name it")
    key_counts = [int(n) for n in args.keys.split(",")]
    peer_keys = {int(n) for n in args.peer_keys.split(",") if n}
    cells = args.cells.split(",")
    started = time.monotonic()
    deadline = started + args.max_minutes * 60
    results: dict[tuple[int, str, str, str], Cell] = {}
    plan: list[tuple[int, str, str, list[str]]] = []
    for keys in key_counts:
        for shape in args.shapes.split(","):
            local_ok = args.local_dir is not None or keys == min(key_counts)
            for cell in cells:
                if cell in LOCAL_CELLS and not local_ok:
                    continue
                plan.append((keys, shape, cell, tools if keys in peer_keys else ["parabyte"]))
    for keys, shape in dict.fromkeys((k, s) for k, s, _, _ in plan):
        folders = SHAPES[shape]
        work = Path("/dev/shm") / f"parabyte-sync-scale-{os.getpid()}-{keys}-{shape}"
        extra = ("--folders", str(folders), "--size", "0", "--twin", f"{SAME}:0",
                 "--twin", f"{CHANGED}:{CHANGED_PER_MILLION / 1e6}")
        here = [(c, t) for k, s, c, t in plan if (k, s) == (keys, shape)]
        local = (args.local_dir / work.name if args.local_dir else work) / "local"
        if args.keep_local:
            if not args.local_dir:
                raise SystemExit("--keep-local keeps a tree made in --local-dir: name one")
            local = args.local_dir / f"parabyte-sync-scale-{keys}-{shape}" / "local"
        try:
            with ListingStore(work / "store", args.testbed, keys, extra) as store:
                log = store.access_logs["plain"]
                endpoint = store.endpoint("proxy")
                env = environment(work / "home", endpoint)
                env["RCLONE_CONFIG_BENCH_LIST_VERSION"] = "2"
                # The listing server has no bucket to create: rclone must not try.
                env["RCLONE_CONFIG_BENCH_NO_CHECK_BUCKET"] = "true"
                if any(c in LOCAL_CELLS for c, _ in here):
                    t = time.monotonic()
                    if args.keep_local and local.is_dir():
                        strays = clean_strays(local, keys, folders)
                        print(f"  {keys:,} {shape}: kept local files, {reset_local(local):,} "
                              f"put back and {strays:,} strays removed in "
                              f"{time.monotonic() - t:.0f} s", flush=True)
                    else:
                        make_local(local, keys, folders)
                        print(f"  {keys:,} {shape}: {keys:,} local files in "
                              f"{time.monotonic() - t:.0f} s", flush=True)
                for rnd in range(args.rounds):
                    for cell, tools_here in here:
                        for tool in tools_here:
                            cap = peer_cap(args, results.get((keys, shape, cell, "parabyte")))
                            runs = results.setdefault((keys, shape, cell, tool), Cell()).runs
                            if any(r.stopped for r in runs):
                                continue  # stopped once: not again
                            if time.monotonic() > deadline:
                                break
                            forget_writes(store.ports["plain"])
                            waited = wait_for_quiet(QUIET_WAIT_S)
                            run = run_capped(
                                argv(tool, args.parabyte, endpoint, cell, local), env, work,
                                work / "runs" / f"{tool}-{cell.replace(' ', '_')}-{rnd}", log,
                                cap if tool != "parabyte" else PARABYTE_CAP_S, args.max_rss_mib)
                            if cell.startswith("S3->local") and (run.failed or run.stopped):
                                strays = clean_strays(local, keys, folders)
                                print(f"    {tool} left {strays:,} stray files "
                                      "(removed)", flush=True)
                            if cell.startswith("S3->local"):
                                print(f"    {tool} rewrote {reset_local(local):,} local files "
                                      "(put back)", flush=True)
                            if run.failed is None:
                                wrong = {k: (run.writes[k], n)
                                         for k, n in expected_writes(cell, keys).items()
                                         if run.writes[k] != n}
                                if wrong:
                                    run.failed = "wrong: " + ", ".join(
                                        f"{k} {got} (expected {n})"
                                        for k, (got, n) in wrong.items())
                            if tool == "parabyte" and run.failed:
                                raise SystemExit(f"parabyte {cell} {keys} {shape}: {run.failed}")
                            runs.append(run)
                            save(args.save, keys, shape, cell, tool, run)
                            print(
                                f"  {keys:>10,} {shape:4} {cell:15} {tool:9} {run.wall_s:8.2f}s"
                                f" cpu {run.cpu_s:7.2f}s rss {run.peak_rss_mib:7.1f} MiB"
                                f" {run.requests} {run.failed or ''} (waited {waited:.1f}s)",
                                flush=True,
                            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
            if args.local_dir and not args.keep_local:
                shutil.rmtree(local.parent, ignore_errors=True)
    how = (f"`bench/sync_scale.py --keys {args.keys} --peer-keys {args.peer_keys} --rounds "
           f"{args.rounds}` (run by `make bench`), {(time.monotonic() - started) / 60:.1f} "
           "minutes")
    text = render(args, how, plan, results)
    print(text)
    if not args.no_docs:
        write_section(DOC, START, END, text)
    return 0


def save(path: Path, keys: int, shape: str, cell: str, tool: str, run: Run) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as out:
        line = {"keys": keys, "shape": shape, "cell": cell, "tool": tool, "run": asdict(run)}
        out.write(json.dumps(line) + "\n")


def report(args) -> int:
    """The table of runs saved by earlier invocations (`--save`), in the order of the plan."""
    results: dict[tuple[int, str, str, str], Cell] = {}
    for path in args.report.split(","):
        for line in Path(path).read_text().splitlines():
            saved = json.loads(line)
            key = (saved["keys"], saved["shape"], saved["cell"], saved["tool"])
            results.setdefault(key, Cell()).runs.append(Run(**saved["run"]))
    order = lambda key: (key[0], list(SHAPES).index(key[1]), CELLS.index(key[2]))
    plan = []
    for keys, shape, cell in sorted({k[:3] for k in results}, key=order):
        tools = [t for t in TOOLS if (keys, shape, cell, t) in results]
        plan.append((keys, shape, cell, tools))
    how = (f"`bench/sync_scale.py --report {args.report}`, the runs of "
           f"{len(args.report.split(','))} invocation(s) of bench/sync_scale.py "
           f"(their command lines are in PROFILE.md, under the stop that saved them)")
    text = render(args, how, plan, results)
    print(text)
    if not args.no_docs:
        write_section(DOC, START, END, text)
    return 0


def peer_cap(args, ours: Cell | None) -> float:
    """How long a peer may run in a cell: `--cap-factor` times parabyte's median there."""
    finished = [r.wall_s for r in ours.runs if not r.failed] if ours else []
    if not finished:
        return PARABYTE_CAP_S
    return max(args.min_cap_s, args.cap_factor * statistics.median(finished))


def summary(cell: Cell) -> tuple[str, float | None, Run | None]:
    """The median wall of the finished runs (or why none finished), and the last run."""
    finished = [r for r in cell.runs if not r.failed]
    if finished:
        return f"{statistics.median(r.wall_s for r in finished):.2f} s", \
            statistics.median(r.wall_s for r in finished), finished[-1]
    if cell.runs:
        return cell.runs[-1].failed or "", None, cell.runs[-1]
    return "not run (out of time)", None, None


def render(args, how: str, plan, results) -> str:
    lines = [
        "## Sync and rm at millions of keys (issue 47, item 1)",
        "",
        (
            f"{how}: the test kit's listing server (keys made from their place in the order, a page costs "
            "the same wherever it starts, as on S3; writes taken and counted, not kept) behind "
            "toxiproxy (10 ms each way, 50 MB/s a connection). `bench` and its twins over the "
            "same keys: `bench-same` identical, `bench-changed` with 1% of the keys one byte "
            "longer. W4: `w4/d000/k000000`, 100 folders; flat: `w4/k000000`, one prefix. "
            "Objects are empty (a changed one holds a byte); the local directory holds every "
            "key of `bench` as an empty file dated as listed, on tmpfs (at 10,000,000 keys, more "
            "inodes than /dev/shm has, on the disk: `--local-dir`). Every tool at its "
            "defaults. A run is checked by what the server was sent: no write where nothing "
            "changed, exactly the 1% where 1% changed (CopyObject, GetObject or PutObject), "
            "every key for rm. A peer is stopped past "
            f"{args.max_rss_mib:.0f} MiB of RSS or {args.cap_factor:g}x parabyte's time in "
            f"the cell (at least {args.min_cap_s:.0f} s), and is not run again in that cell. "
            "Medians of the finished runs (how many: the runs column); requests and writes "
            "of the last; peak RSS from GNU time (or the watcher's, for a stopped run)."
        ),
        "",
        "| keys | shape | cell | tool | runs | median wall | x parabyte | CPU s | peak RSS "
        "| requests | writes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for keys, shape, cell, tools in plan:
        _, ours, _ = summary(results.get((keys, shape, cell, "parabyte"), Cell()))
        for tool in tools:
            cell_ = results.get((keys, shape, cell, tool), Cell())
            text, wall, last = summary(cell_)
            runs = sum(1 for r in cell_.runs if not r.failed) or len(cell_.runs)
            ratio = f"{wall / ours:.1f}" if wall and ours else "-"
            if last is None:
                lines.append(f"| {keys:,} | {shape} | {cell} | {tool} | 0 | {text} | - | - | - "
                             "| - | - |")
                continue
            requests = ", ".join(f"{n} {k}" for k, n in sorted(last.requests.items()))
            writes = ", ".join(f"{n} {k}" for k, n in last.writes.items() if n)
            lines.append(
                f"| {keys:,} | {shape} | {cell} | {tool} | {runs} | {text} | {ratio} "
                f"| {'-' if last.stopped else f'{last.cpu_s:.1f}'} "
                f"| {last.peak_rss_mib:.0f} MiB | {requests} | {writes or 'none'} |"
            )
    lines += ["", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in targets(plan, results)]
    lines += ["", f"Versions: {versions(args.parabyte)}.", ""]
    return "\n".join(lines) + "\n"


def targets(plan, results) -> list[tuple[str, str, str]]:
    out = []
    for keys, shape, cell, tools in plan:
        _, ours, _ = summary(results.get((keys, shape, cell, "parabyte"), Cell()))
        if ours is None:
            continue
        for peer in tools[1:]:
            text, theirs, last = summary(results.get((keys, shape, cell, peer), Cell()))
            what = f"{keys:,} {shape} {cell}: at least {GOAL:.0f}x faster than {peer}"
            if theirs is None:
                verdict = "**met** (did not finish)" if last and last.stopped else "**not run**"
                if last and not last.stopped:
                    verdict = f"**{peer} failed**"
                out.append((what, f"parabyte {ours:.2f} s, {peer}: {text}", verdict))
                continue
            ratio = theirs / ours
            verdict = "**met**" if ratio >= GOAL else f"**missed: {ratio:.1f}x of the {GOAL:.0f}x**"
            out.append((what, f"parabyte {ours:.2f} s, {peer} {theirs:.2f} s: {ratio:.1f}x",
                        verdict))
    # Memory flat in the keys: every parabyte run, at every count, within the goal (a cell
    # measured at one count only, as the local ones, counts there).
    for count in sorted({keys for keys, _, _, _ in plan}):
        peaks = [(shape, cell, max(r.peak_rss_mib for r in cell_.runs))
                 for (keys, shape, cell, tool), cell_ in results.items()
                 if keys == count and tool == "parabyte" and cell_.runs]
        if peaks:
            shape, cell, worst = max(peaks, key=lambda p: p[2])
            out.append((
                f"parabyte's peak RSS at most {MAX_RSS_GOAL_MIB} MiB at {count:,} keys",
                f"highest {worst:.0f} MiB ({shape}, {cell})",
                "**met**" if worst <= MAX_RSS_GOAL_MIB else f"**missed: {worst:.0f} MiB**",
            ))
    return out


if __name__ == "__main__":
    sys.exit(main())
