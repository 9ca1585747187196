"""Listing where the server is not the limit (issue 26, item 6), in one run.

versitygw lists a page in time that grows with the work it does on this 2-core machine, so
W4 against it measures the server. Here the store is the test kit's listing server
(`testbed list-server`: sorted keys in memory, each page found by binary search, so a page
costs the same wherever it starts, as S3's does), behind the same toxiproxy as `make bench`
(10 ms each way, 50 MB/s a connection). W4L lists 100,000 and 1,000,000 keys in W4's shape
(`w4/d000/k000000`..., 100 folders) recursively with each tool at its defaults, and with
parabyte's listing sequential (`--list-parallelism 1`, pipelined: what one paginator can do),
and 3,000,000 with parabyte alone, to show that its memory stays flat. Every run is checked: each tool printed every key. Medians; requests from the listing
server's log; peak RSS of the tool, to show whether memory grows with the keys. The table
replaces the part of docs/BENCHMARKS.md between its listing markers.

    .tools/venv-bench/bin/python bench/listing.py [--keys 100000,1000000] [--memory-keys 3000000]
        [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from typing import Self

from harness.measure import Command, run_once, wait_for_quiet
from harness.report import write_section
from harness.setup import BUCKET, START_TIMEOUT_S, Store
from harness.tools import check_listing
from sync_rm import environment
from upload import versions

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs/BENCHMARKS.md"
START, END = "<!-- listing: start -->", "<!-- listing: end -->"  # as report.py keeps them
TIMEOUT_S = 600
# Each cell waits at most this long for the machine to go quiet before it runs.
QUIET_WAIT_S = 20
TOOLS = ("parabyte", "parabyte-sequential", "s5cmd", "aws", "rclone")
# The paginators the goal is set against: each asks for one page after another.
SEQUENTIAL_PEERS = ("s5cmd", "aws")
GOAL = 5.0


class ListingStore(Store):
    """The listing server over `keys` generated keys, and toxiproxy in front of it; `extra`:
    more `testbed list-server` flags (twins, folders, size: bench/sync_scale.py)."""

    def __init__(self, work: Path, testbed: Path, keys: int, extra: tuple[str, ...] = ()):
        super().__init__(work, REPO)
        self.testbed = testbed
        self.keys = keys
        self.extra = extra

    def __enter__(self) -> Self:
        self.work.mkdir(parents=True, exist_ok=False)
        self.logs.mkdir()
        try:
            self._start_listing_server()
            self._start_toxiproxy((("proxy", "plain"),))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start_listing_server(self) -> None:
        access_log = self.logs / "access-listing.log"
        process = self._spawn(
            "listing-server",
            [
                str(self.testbed),
                "list-server",
                "--bucket",
                BUCKET,
                "--keys",
                str(self.keys),
                "--prefix",
                "w4/",
                "--access-log",
                str(access_log),
                "--max-seconds",
                "14400",
                *self.extra,
            ],
        )
        out = self.logs / "listing-server.out"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            ready = re.search(r"^ready http://127\.0\.0\.1:(\d+)$", out.read_text(), re.MULTILINE)
            if ready:
                self.ports["plain"] = int(ready.group(1))
                self.access_logs["plain"] = access_log
                return
            if process.poll() is not None:
                raise RuntimeError(
                    f"the listing server exited with {process.returncode}; see {out}"
                )
            time.sleep(0.05)
        raise RuntimeError(f"the listing server was not ready in {START_TIMEOUT_S}s; see {out}")


def argv(tool: str, parabyte: Path, endpoint: str) -> list[str]:
    url = f"s3://{BUCKET}/w4/"
    return {
        "parabyte": [str(parabyte), "ls", "--recursive", "--endpoint-url", endpoint, url],
        "parabyte-sequential": [
            str(parabyte),
            "ls",
            "--recursive",
            "--list-parallelism",
            "1",
            "--endpoint-url",
            endpoint,
            url,
        ],
        "s5cmd": ["s5cmd", "--endpoint-url", endpoint, "ls", f"{url}*"],
        "aws": ["aws", "--endpoint-url", endpoint, "s3", "ls", "--recursive", url],
        "rclone": ["rclone", "-q", "lsf", "-R", f"bench:{BUCKET}/w4"],
    }[tool]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parabyte", type=Path, default=REPO / "target/profiling/parabyte")
    p.add_argument("--testbed", type=Path, default=REPO / "target/profiling/testbed")
    p.add_argument("--keys", default="100000,1000000")
    p.add_argument(
        "--memory-keys",
        type=int,
        default=3_000_000,
        help="also list this many with parabyte alone, to show its memory does not grow (0: not)",
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--no-docs", action="store_true", help="print the table only")
    args = p.parse_args()
    args.parabyte = args.parabyte.resolve()
    tools = args.tools.split(",")
    unknown = set(tools) - set(TOOLS)
    if unknown:
        raise SystemExit(f"unknown tools: {', '.join(sorted(unknown))}")
    for binary in (args.parabyte, args.testbed):
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"no {binary.name} at {binary}: build it, or name it")
    counts = [int(n) for n in args.keys.split(",")]
    plan = [(keys, tools) for keys in counts]
    if args.memory_keys and "parabyte" in tools:
        plan.append((args.memory_keys, ["parabyte"]))
    started = time.monotonic()
    runs: dict[tuple[int, str], list[dict]] = {}
    for keys, tools_here in plan:
        work = Path("/dev/shm") / f"parabyte-listing-{os.getpid()}-{keys}"
        with ListingStore(work / "store", args.testbed, keys) as store:
            env = environment(work / "home", store.endpoint("proxy"))
            # rclone's S3 backend lists with ListObjects (v1) unless told otherwise; the
            # listing server speaks ListObjectsV2, as every tool here can.
            env["RCLONE_CONFIG_BENCH_LIST_VERSION"] = "2"
            for rnd in range(args.rounds):
                shift = rnd % len(tools_here)  # no tool always first
                for tool in tools_here[shift:] + tools_here[:shift]:
                    waited = wait_for_quiet(QUIET_WAIT_S)
                    command = Command(
                        argv(tool, args.parabyte, store.endpoint("proxy")),
                        env,
                        work,
                        None,
                        check_listing(keys),
                    )
                    result = run_once(
                        command,
                        store,
                        work / "runs" / f"{tool}-{rnd}",
                        TIMEOUT_S,
                        deep=False,
                        proxied=True,
                    )
                    if result.error:
                        raise SystemExit(f"{tool} at {keys} keys: {result.error}")
                    record = result.to_json() | {"waited_s": waited}
                    runs.setdefault((keys, tool), []).append(record)
                    print(
                        f"  {keys:>9,} {tool:20} {result.wall_s:7.2f}s cpu {result.cpu_s:6.2f}s"
                        f" rss {result.peak_rss_mib:6.1f} MiB {result.requests}"
                        f" conns {result.connections}",
                        flush=True,
                    )
    text = render(args, plan, runs, time.monotonic() - started)
    print(text)
    if not args.no_docs:
        write_section(DOC, START, END, text)
    return 0


def median(records: list[dict], field: str) -> float:
    return statistics.median(r[field] for r in records)


def render(args, plan, runs, seconds: float) -> str:
    lines = [
        "## Listing where the server is not the limit (issue 26, item 6)",
        "",
        (
            f"`bench/listing.py --keys {args.keys} --memory-keys {args.memory_keys} --rounds "
            f"{args.rounds}` (run by "
            f"`make bench`), {seconds / 60:.1f} minutes: the test kit's listing server (sorted "
            "keys in memory, a page costs the same wherever it starts, as on S3) behind "
            "toxiproxy (10 ms each way, 50 MB/s a connection); W4's shape (`w4/d000/k000000`, "
            "100 folders) listed recursively, every tool at its defaults and "
            "`parabyte --list-parallelism 1` (one paginator, pipelined). Each run checked: every "
            f"key printed. Medians of {args.rounds}; requests of the last run, from the "
            "server's log; connections from toxiproxy's."
        ),
        "",
        "| keys | tool | median wall | x parabyte | CPU s | peak RSS | requests | connections |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for keys, tools in plan:
        ours = median(runs[(keys, "parabyte")], "wall_s") if "parabyte" in tools else None
        for tool in tools:
            records = runs[(keys, tool)]
            wall = median(records, "wall_s")
            last = records[-1]
            ratio = f"{wall / ours:.2f}" if ours else "-"
            requests = ", ".join(f"{n} {k}" for k, n in sorted(last["requests"].items()))
            lines.append(
                f"| {keys:,} | {tool} | {wall:.2f} s | {ratio} | "
                f"{median(records, 'cpu_s'):.2f} | {median(records, 'peak_rss_mib'):.1f} MiB | "
                f"{requests} | {last['connections']} |"
            )
    lines += ["", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in targets(plan, runs)]
    lines += ["", f"Versions: {versions(args.parabyte)}.", ""]
    return "\n".join(lines) + "\n"


def targets(plan, runs) -> list[tuple[str, str, str]]:
    out = []
    for keys, tools in plan:
        if "parabyte" not in tools:
            continue
        ours = median(runs[(keys, "parabyte")], "wall_s")
        for peer in [t for t in SEQUENTIAL_PEERS if t in tools]:
            theirs = median(runs[(keys, peer)], "wall_s")
            ratio = theirs / ours
            verdict = "**met**" if ratio >= GOAL else f"**missed: {ratio:.1f}x of the {GOAL:.0f}x**"
            out.append(
                (
                    f"{keys:,} keys: at least {GOAL:.0f}x faster than {peer}",
                    f"parabyte {ours:.2f} s, {peer} {theirs:.2f} s: {ratio:.1f}x",
                    verdict,
                )
            )
    # Once a listing holds all the room it may (64 pages ahead, reached past ~100 pages), its
    # memory must not grow with the keys: the two largest listings are compared.
    listed = sorted(keys for keys, tools in plan if "parabyte" in tools)
    if len(listed) > 1:
        low, high = listed[-2], listed[-1]
        small = median(runs[(low, "parabyte")], "peak_rss_mib")
        large = median(runs[(high, "parabyte")], "peak_rss_mib")
        # Flat: the memory grew by at most a tenth (allocator noise).
        flat = large <= small * 1.1
        out.append(
            (
                f"memory flat in the number of keys ({low:,} to {high:,})",
                f"parabyte peak RSS {small:.1f} MiB at {low:,}, {large:.1f} MiB at {high:,}",
                "**met**" if flat else f"**missed: {large / small:.2f}x**",
            )
        )
    return out


if __name__ == "__main__":
    sys.exit(main())
