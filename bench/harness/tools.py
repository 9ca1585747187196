"""Each tool's command line for each workload and setting.

A setting is `default` (the tool with no tuning flags at all) or a number N: the tool's own
knobs set so that N requests are in flight, where the tool has such knobs. Part sizes stay at
each tool's default. Every tool writes into a fresh directory on tmpfs and is told to be quiet
where it would print a line per file (parabyte prints its one-paragraph summary, as it does
with no flags).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .measure import Command
from .setup import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, Dataset, Sizes, Store

CLI_TOOLS = ("parabyte", "s5cmd", "aws", "boto3", "rclone", "aria2c", "axel", "curl")
# The Python libraries, run by bench/peers/python_libs.py on the Python workloads (P1, P2).
PYTHON_TOOLS = ("parabyte-py", "boto3-tm", "boto3-tm-sized", "obstore")
TOOLS = [*CLI_TOOLS, *PYTHON_TOOLS]
PRESIGN_SECONDS = 6 * 3600
# parabyte names each object on stderr when stderr is no terminal, as aws does; quieted as
# aws is (`--only-show-errors`), keeping the summary the harness reads.
QUIET_LINES = ["--object-lines", "never"]


@dataclass(frozen=True)
class Workload:
    id: str
    title: str
    kind: str  # "prefix", "object", "list", "web" (one file from nginx), "manifest", "memory"
    #            (objects of known size: presigned URLs, or for Python name, size, ETag)
    #            or "s3manifest" (s3:// URLs with sizes and ETags, for the CLI)
    prefix: str  # w1, w2, w3, w4, w4k, w8; w2c, w3c, w2o, w3o (W2, W3 stored otherwise)
    transport: str  # "proxy", "direct", "tls" or "web" (nginx through toxiproxy)
    settings: tuple  # "default" and/or concurrencies
    tools: tuple = CLI_TOOLS


def workloads(concurrencies: list[int], sizes: Sizes) -> list[Workload]:
    n = tuple(concurrencies)
    w1 = f"{sizes.w1_count} x {_human(sizes.w1_size)}"
    w3 = f"{sizes.w3_count} x {_human(sizes.w3_size)}"
    return [
        Workload("W1", f"{w1} under a prefix", "prefix", "w1", "proxy", ("default",) + n),
        # The seeds' headline path: the same objects with sizes known up front, no listing.
        Workload("W1m", f"W1 from a manifest: {w1}, s3:// URLs with sizes and ETags",
                 "s3manifest", "w1", "proxy", ("default",) + n, ("parabyte",)),
        Workload("W2", f"one {_human(sizes.w2_size)} object", "object", "w2", "proxy",
                 ("default", "unverified") + n),
        Workload("W3", f"{w3} under a prefix", "prefix", "w3", "proxy", ("default",) + n),
        # W2 and W3 as the other objects today's S3 holds: uploaded in parts with a COMPOSITE
        # CRC32 (as SDKs upload large files), and old single PUTs with only an MD5 ETag. The
        # main rows are the full-object CRC64NVME S3 keeps by default.
        Workload("W2c", "W2 uploaded in 8 MiB parts, COMPOSITE CRC32", "object", "w2c",
                 "proxy", ("default",), ("parabyte",)),
        Workload("W2o", "W2 as an old single PUT: no CRC, an MD5 ETag", "object", "w2o",
                 "proxy", ("default",), ("parabyte",)),
        Workload("W3c", "W3 uploaded in 8 MiB parts, COMPOSITE CRC32", "prefix", "w3c",
                 "proxy", ("default",), ("parabyte",)),
        Workload("W3o", "W3 as old single PUTs: no CRC, MD5 ETags", "prefix", "w3o",
                 "proxy", ("default",), ("parabyte",)),
        Workload("W4", f"list {sizes.w4_count:,} keys", "list", "w4", "proxy",
                 ("default", "pipelined")),
        Workload("W4c", f"download the {sizes.w4_count:,} keys of W4 (--discard)", "prefix", "w4",
                 "proxy", ("default",)),
        Workload("W4d", f"W4 direct: list {sizes.w4_count:,} keys, no toxiproxy", "list", "w4",
                 "direct", ("pipelined",)),
        Workload("W4k", f"list {sizes.w4k_count:,} keys (W4's shape)", "list", "w4k", "proxy",
                 ("default", "pipelined")),
        Workload("W4kd", f"W4k direct: list {sizes.w4k_count:,} keys, no toxiproxy", "list",
                 "w4k", "direct", ("pipelined",)),
        Workload("W5a", f"W1 direct: {w1}, no toxiproxy", "prefix", "w1", "direct", n[:1]),
        Workload("W5b", f"W2 direct: one {_human(sizes.w2_size)}, no toxiproxy", "object", "w2",
                 "direct", n[:1] + ("unverified",)),
        Workload("W6a", f"W1 over HTTPS: {w1}", "prefix", "w1", "tls", ("default",) + n),
        Workload("W6b", f"W3 over HTTPS: {w3}", "prefix", "w3", "tls", ("default",) + n),
        # W6a's work without its listing, as curl is handed it: curl's baseline for W6a.
        Workload("W6m", f"W6a from a manifest: {w1} over HTTPS, s3:// URLs with sizes and ETags",
                 "s3manifest", "w1", "tls", ("default",) + n, ("parabyte", "curl")),
        # One connection too: what parallel byte serving gains over a single stream.
        Workload("W7", f"one {_human(sizes.w2_size)} file from nginx over HTTP", "web", "w2",
                 "web", ("default", 16, 1)),
        Workload("W8", f"{sizes.w8_count} x {_human(sizes.w8_size)} presigned URLs in a manifest",
                 "manifest", "w8", "proxy", ("default",) + n),
        # The engine's own ceiling: no toxiproxy, no disk, one stream and many.
        Workload("W9", f"one {_human(sizes.w9_size)} object straight from the server, "
                 "discarded", "object", "w9", "direct", ("default", 1, 16), ("parabyte", "curl")),
        Workload("P1", f"Python: {w1} from a manifest (sizes and ETags known)", "manifest",
                 "w1", "proxy", ("default",) + n, PYTHON_TOOLS),
        Workload("P2", f"Python: one {_human(sizes.w2_size)} object", "object", "w2", "proxy",
                 ("default",) + n, PYTHON_TOOLS),
        Workload("P3", f"Python: {sizes.w8_count} x {_human(sizes.w8_size)} into memory "
                 "(get_bytes)", "memory", "w8", "proxy", ("default",) + n,
                 ("parabyte-py", "obstore")),
    ]


def _human(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


@dataclass
class Context:
    repo: Path
    store: Store
    data: Dataset
    sizes: Sizes
    scratch: Path  # tmpfs: destinations, config files, URL lists
    venv_bin: Path
    parabyte: Path
    presigner: Callable[[str, str], str]  # (transport, key) -> URL

    def base_env(self, transport: str) -> dict[str, str]:
        """A clean environment: no profile files, no proxies, no stray CA bundles; the test
        credentials; for HTTPS, the run's CA in the variables each tool reads."""
        home = self.scratch / "home"
        home.mkdir(exist_ok=True)
        (home / "rclone.conf").touch()
        env = {
            "PATH": f"{self.venv_bin}:{self.repo / '.tools/bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "RCLONE_CONFIG": str(home / "rclone.conf"),
        }
        if transport == "tls":
            ca = str(self.store.ca_pem)
            env.update(AWS_CA_BUNDLE=ca, SSL_CERT_FILE=ca, CURL_CA_BUNDLE=ca)
        return env


@dataclass
class Cell:
    """One tool at one setting on one workload."""

    workload: Workload
    tool: str
    setting: object  # "default", "pipelined" (listing page after page), "unverified"
    #                  (parabyte --no-verify) or int
    command: Command | None
    skip: str | None  # why there is no command
    in_flight: int | None  # requests in flight, for the floor
    note: str = ""  # what the command line does not show (a config file, an environment)

    @property
    def label(self) -> str:
        shown = self.setting if isinstance(self.setting, str) else f"@{self.setting}"
        return f"{self.tool} {shown}"


# -- checks ---------------------------------------------------------------------------------


def _md5_file(path: Path) -> str:
    md5 = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            md5.update(chunk)
    return md5.hexdigest()


def check_tree(dest: Path, expected: dict[str, tuple[int, str]]) -> Callable[[Path, bool], str | None]:
    def check(_stdout: Path, deep: bool) -> str | None:
        found = {}
        for dirpath, _dirs, files in os.walk(dest):
            for name in files:
                path = Path(dirpath) / name
                found[str(path.relative_to(dest))] = path
        if set(found) != set(expected):
            missing = sorted(set(expected) - set(found))[:3]
            extra = sorted(set(found) - set(expected))[:3]
            return f"{len(found)} files, expected {len(expected)}; missing {missing}, extra {extra}"
        for name, path in found.items():
            size, md5 = expected[name]
            if path.stat().st_size != size:
                return f"{name}: {path.stat().st_size} bytes, expected {size}"
            if deep and _md5_file(path) != md5:
                return f"{name}: content differs"
        return None

    return check


def check_parts(dest: Path, size: int, md5: str) -> Callable[[Path, bool], str | None]:
    """The object in `dest`, whole or as part files whose names sort in order (curl ranges)."""

    def check(_stdout: Path, deep: bool) -> str | None:
        parts = sorted(dest.iterdir())
        total = sum(p.stat().st_size for p in parts)
        if total != size:
            return f"{total} bytes in {len(parts)} files, expected {size}"
        if deep:
            digest = hashlib.md5()
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(8 << 20):
                        digest.update(chunk)
            if digest.hexdigest() != md5:
                return "content differs"
        return None

    return check


def check_listing(count: int) -> Callable[[Path, bool], str | None]:
    """The run printed `count` of W4's keys (six digits or more: `k0000000` past a million)."""
    key = re.compile(rb"/k\d{6,}\b")

    def check(stdout: Path, _deep: bool) -> str | None:
        found = len(key.findall(stdout.read_bytes()))
        return None if found == count else f"listed {found} keys, expected {count}"

    return check


def check_summary(count: int, size: int | None = None) -> Callable[[Path, bool], str | None]:
    """parabyte's `--json` summary: every object fetched, none failed (and `size` bytes)."""

    def check(stdout: Path, _deep: bool) -> str | None:
        summary = json.loads(stdout.read_text())
        done = summary["objects"] + summary["skipped"]
        if done != count or summary["failed"]:
            return f"{done} objects, {summary['failed']} failed, expected {count}"
        if size is not None and summary["bytes"] != size:
            return f"{summary['bytes']} bytes, expected {size}"
        return None

    return check


def check_fetched(size: int) -> Callable[[Path, bool], str | None]:
    """curl's `-w '%{size_download}'` lines, one per range: they add up to `size`."""

    def check(stdout: Path, _deep: bool) -> str | None:
        fetched = sum(int(line) for line in stdout.read_text().split())
        return None if fetched == size else f"fetched {fetched} bytes, expected {size}"

    return check


# -- the tools ------------------------------------------------------------------------------


def build(ctx: Context, wl: Workload, tool: str, setting) -> Cell:
    n = setting if isinstance(setting, int) else None
    if setting in ("pipelined", "unverified") and tool != "parabyte":
        return Cell(wl, tool, setting, None, "parabyte's own mode", None)
    slug = f"{wl.id}-{tool}-{setting}"
    dest = ctx.scratch / "dest" / slug
    conf = ctx.scratch / "conf" / slug
    conf.mkdir(parents=True, exist_ok=True)
    env = ctx.base_env(wl.transport)
    endpoint = ctx.store.endpoint(wl.transport)
    prefix = f"{wl.prefix}/"
    big_key = (f"{wl.prefix}/big.bin" if wl.prefix.startswith(("w2", "w9"))
               else "w2/big.bin")

    if wl.kind == "list":
        check = check_listing(ctx.sizes.w4k_count if wl.prefix == "w4k" else ctx.sizes.w4_count)
        dest_dir = None
    elif wl.id == "W9":  # nothing is written: each tool says how many bytes it fetched
        check = check_summary(1, _object_size(ctx, wl)) if tool == "parabyte" else \
            check_fetched(_object_size(ctx, wl))
        dest_dir = None
    elif wl.kind == "memory":  # the script prints the bytes it received
        check = check_fetched(sum(size for size, _md5 in ctx.data.under(wl.prefix).values()))
        dest_dir = None
    elif wl.kind in ("object", "web"):
        size, md5 = ctx.data.under(wl.prefix)["big.bin"]
        check = check_parts(dest, size, md5)
        dest_dir = dest
    else:
        check = check_tree(dest, ctx.data.under(wl.prefix))
        dest_dir = dest

    def cell(argv: list[str], in_flight: int | None, extra_env: dict | None = None,
             note: str = "") -> Cell:
        command = Command(argv=[str(a) for a in argv], env={**env, **(extra_env or {})},
                          cwd=conf, dest=dest_dir, check=check)
        return Cell(wl, tool, setting, command, None, in_flight, note)

    def skip(reason: str) -> Cell:
        return Cell(wl, tool, setting, None, reason, None)

    objects = {"w1": ctx.sizes.w1_count, "w3": ctx.sizes.w3_count,
               "w8": ctx.sizes.w8_count}.get(wl.prefix, 1)
    # The big object over plain HTTP (nginx) or a presigned URL to the store.
    big_url = (f"{endpoint}/{big_key}" if wl.kind == "web"
               else ctx.presigner(wl.transport, big_key))

    if wl.kind in ("web", "manifest") and tool in ("s5cmd", "aws", "boto3", "rclone"):
        return skip("an S3 client, not an HTTP downloader")
    if wl.kind == "manifest" and tool == "axel":
        return skip("downloads single URLs only")

    if tool == "parabyte" and wl.kind == "web":
        flags = [] if n is None else ["--threads", n, "--max-requests", n]
        parts = math.ceil(_object_size(ctx, wl) / (8 << 20))
        return cell([ctx.parabyte, "cp", *QUIET_LINES, *flags, big_url, dest / "big.bin"],
                    min(n or 16, parts))  # --threads 16

    if tool == "parabyte" and wl.kind == "manifest":
        flags = [] if n is None else ["--workers", n, "--max-requests", n]
        manifest = conf / "manifest.txt"
        manifest.write_text("".join(
            f"{ctx.presigner(wl.transport, f'{prefix}{name}')}\t{name}\t{size}\n"
            for name, (size, _md5) in ctx.data.under(wl.prefix).items()))
        return cell([ctx.parabyte, "cp", *QUIET_LINES, *flags, "--manifest", manifest, dest],
                    min(n or 64, objects),  # --workers 64
                    note="manifest.txt: a presigned URL, a name and the size per line")

    if tool in PYTHON_TOOLS:
        return _python_library(ctx, wl, tool, n, dest, conf, objects, cell)

    if tool == "parabyte" and wl.kind == "s3manifest":
        flags = [] if n is None else ["--workers", n, "--threads", n, "--max-requests", n]
        manifest = conf / "manifest.txt"
        manifest.write_text("".join(
            f's3://{BUCKET}/{prefix}{name}\t{name}\t{size}\t"{md5}"\n'
            for name, (size, md5) in ctx.data.under(wl.prefix).items()))
        return cell([ctx.parabyte, "cp", *QUIET_LINES, *flags, "--endpoint-url", endpoint,
                     "--manifest", manifest, dest], min(n or 64, objects),
                    note="manifest.txt: an s3:// URL, a name, the size and the ETag per line")

    if tool == "parabyte":
        flags = [] if n is None else ["--workers", n, "--threads", n, "--max-requests", n]
        if setting == "unverified":  # what the content check costs
            flags = ["--no-verify"]
        if wl.kind == "list":
            sequential = ["--list-parallelism", "1"] if setting == "pipelined" else []
            return cell([ctx.parabyte, "ls", "--recursive", *sequential, "--endpoint-url",
                         endpoint, f"s3://{BUCKET}/{prefix}"], None)
        if wl.id == "W9":
            flags = [] if n is None else ["--workers", n, "--threads", n, "--max-requests", n]
            parts = math.ceil(_object_size(ctx, wl) / (8 << 20))
            return cell([ctx.parabyte, "cp", *QUIET_LINES, "--discard", "--json", *flags,
                         "--endpoint-url", endpoint, f"s3://{BUCKET}/{big_key}"],
                        n or min(16, parts))
        if wl.id == "W4c":  # the JSON summary says when the first object started
            return Cell(wl, tool, setting, Command(
                argv=[str(a) for a in [ctx.parabyte, "cp", *QUIET_LINES, "--discard", "--json",
                                       "--endpoint-url", endpoint, f"s3://{BUCKET}/{prefix}"]],
                env=env, cwd=conf, dest=None, check=check_summary(ctx.sizes.w4_count)),
                None, None)
        source = f"s3://{BUCKET}/{big_key}" if wl.kind == "object" else f"s3://{BUCKET}/{prefix}"
        target = dest / "big.bin" if wl.kind == "object" else dest
        if n is None:  # defaults: --workers 64 --threads 16 --part-size 8MiB --max-requests 128
            parts = math.ceil(_object_size(ctx, wl) / (8 << 20))
            in_flight = {"prefix": min(128, 64 * parts, objects * parts), "object": min(16, parts)}
            in_flight = in_flight[wl.kind]
        else:
            in_flight = n
        return cell([ctx.parabyte, "cp", *QUIET_LINES, *flags, "--endpoint-url", endpoint, source,
                     target], in_flight)

    if wl.id == "W4c":
        return skip("parabyte only: how soon downloads start while listing goes on")

    if tool == "s5cmd":
        if wl.kind == "list":  # s5cmd prints listings at its log level "info"
            return cell(["s5cmd", "--endpoint-url", endpoint, "ls", f"s3://{BUCKET}/{prefix}*"],
                        None)
        base = ["s5cmd", "--endpoint-url", endpoint, "--log", "error"]
        workers = [] if n is None else ["--numworkers", n]
        parts = [] if n is None else ["--concurrency", n]
        if wl.kind == "object":
            # defaults: --concurrency 5, --part-size 50 (MiB)
            in_flight = min(n or 5, math.ceil(_object_size(ctx, wl) / (50 << 20)))
            return cell(base + workers + ["cp"] + parts + [f"s3://{BUCKET}/{big_key}",
                                                           f"{dest}/big.bin"], in_flight)
        in_flight = min(n or 256, objects)  # --numworkers 256; objects are one part each
        return cell(base + workers + ["cp"] + parts + [f"s3://{BUCKET}/{prefix}*", f"{dest}/"],
                    in_flight)

    if tool == "aws":
        extra, note = {}, ""
        if n is not None:
            config = conf / "aws-config"
            config.write_text(f"[default]\ns3 =\n  max_concurrent_requests = {n}\n")
            extra["AWS_CONFIG_FILE"] = str(config)
            note = f"AWS_CONFIG_FILE sets `s3.max_concurrent_requests = {n}`"
        base = ["aws", "--endpoint-url", endpoint, "s3"]
        if wl.kind == "list":
            return cell(base + ["ls", "--recursive", f"s3://{BUCKET}/{prefix}"], None, extra)
        in_flight = n or 10  # max_concurrent_requests = 10
        if wl.kind == "object":
            parts = math.ceil(_object_size(ctx, wl) / (8 << 20))  # multipart_chunksize 8MB
            return cell(base + ["cp", "--only-show-errors", f"s3://{BUCKET}/{big_key}",
                                f"{dest}/big.bin"], min(in_flight, parts), extra, note)
        return cell(base + ["cp", "--recursive", "--only-show-errors", f"s3://{BUCKET}/{prefix}",
                            f"{dest}/"], min(in_flight, objects), extra, note)

    if tool == "boto3":
        script = ctx.repo / "bench/peers/boto3_s3.py"
        argv = [ctx.venv_bin / "python", script, wl.kind, "--endpoint-url", endpoint,
                "--bucket", BUCKET, "--key", big_key if wl.kind == "object" else prefix]
        if wl.kind != "list":
            argv += ["--dest", dest]
        if n is not None:
            argv += ["--concurrency", n]
        if wl.kind == "list":
            in_flight = None
        elif wl.kind == "object":  # multipart_chunksize 8 MiB
            in_flight = min(n or 10, math.ceil(_object_size(ctx, wl) / (8 << 20)))
        else:
            in_flight = min(n or 10, objects)
        return cell(argv, in_flight)

    if tool == "rclone":
        extra = {
            "RCLONE_CONFIG_BENCH_TYPE": "s3", "RCLONE_CONFIG_BENCH_PROVIDER": "Other",
            "RCLONE_CONFIG_BENCH_ACCESS_KEY_ID": ACCESS_KEY,
            "RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY": SECRET_KEY,
            "RCLONE_CONFIG_BENCH_ENDPOINT": endpoint, "RCLONE_CONFIG_BENCH_REGION": REGION,
        }
        rclone_note = ("remote `bench:` from `RCLONE_CONFIG_BENCH_*` variables: type s3, "
                       "provider Other, the endpoint, the keys")
        base = ["rclone", "-q"]
        if wl.transport == "tls":
            base += ["--ca-cert", ctx.store.ca_pem]
        if wl.kind == "list":
            return cell(base + ["lsf", "-R", f"bench:{BUCKET}/{wl.prefix}"], None, extra,
                        rclone_note)
        flags = [] if n is None else ["--transfers", n, "--checkers", n,
                                      "--multi-thread-streams", n]
        if wl.kind == "object":
            # defaults: --multi-thread-streams 4 over --multi-thread-chunk-size 64Mi chunks,
            # for files of --multi-thread-cutoff 256Mi or more
            size = _object_size(ctx, wl)
            chunks = math.ceil(size / (64 << 20)) if size >= 256 << 20 else 1
            return cell(base + ["copy"] + flags + [f"bench:{BUCKET}/{big_key}", dest],
                        min(n or 4, chunks), extra, rclone_note)
        return cell(base + ["copy"] + flags + [f"bench:{BUCKET}/{wl.prefix}", dest],
                    min(n or 4, objects), extra, rclone_note)  # --transfers 4

    if tool == "aria2c":
        base = ["aria2c", "-q", "--allow-overwrite=true", "--auto-file-renaming=false"]
        if wl.transport == "tls":
            base += [f"--ca-certificate={ctx.store.ca_pem}"]
        if wl.kind == "list":
            return skip("not an S3 client")
        if wl.kind in ("object", "web"):
            if n is not None and n > 16:
                return skip("aria2c allows at most 16 connections per server (-x 16)")
            flags = [] if n is None else ["-x", n, "-s", n, "-k", "1M"]
            return cell(base + flags + ["-d", dest, "-o", "big.bin", big_url], n or 1)  # -x 1
        listing = conf / "urls.txt"
        lines = []
        for name in ctx.data.under(wl.prefix):
            lines += [ctx.presigner(wl.transport, f"{prefix}{name}"), f"  out={name}"]
        listing.write_text("\n".join(lines) + "\n")
        flags = [] if n is None else ["-j", n]
        return cell(base + flags + ["-d", dest, "-i", listing], min(n or 5, objects),  # -j 5
                    note="urls.txt: a presigned URL and an `out=` name per object")

    if tool == "axel":
        if wl.kind not in ("object", "web"):
            return skip("downloads single URLs only")
        flags = [] if n is None else ["-n", n]
        return cell(["axel", "-q", *flags, "-o", dest / "big.bin", big_url], n or 4)  # -n 4

    if tool == "curl":
        if n is None:
            return skip("a baseline, run at equal concurrency only")
        if wl.kind == "list":
            return skip("not an S3 client")
        tls = ["--cacert", str(ctx.store.ca_pem)] if wl.transport == "tls" else []
        if wl.kind in ("object", "web"):
            # N processes, each fetching one contiguous range of the URL (one: a plain stream).
            size = _object_size(ctx, wl)
            url = big_url
            script = conf / "ranges.sh"
            lines = ["#!/bin/bash", "set -u", "pids=()"]
            step = math.ceil(size / n)
            # W9 discards: each process says how much it fetched instead.
            out = "-o /dev/null -w '%{size_download}\\n'" if wl.id == "W9" else None
            for i in range(n):
                first, last = i * step, min(size, (i + 1) * step) - 1
                if first > last:
                    break
                lines.append(f"curl -s -f {' '.join(tls)} -r {first}-{last} "
                             f"{out or f'-o {dest}/part.{i:04}'} '{url}' & pids+=($!)")
            lines += ["status=0", 'for p in "${pids[@]}"; do wait "$p" || status=1; done',
                      "exit $status"]
            script.write_text("\n".join(lines) + "\n")
            return cell(["bash", script], n,
                        note=f"ranges.sh: {n} x `curl -s -f -r FIRST-LAST -o DEST/part.I "
                             f"<{'URL' if wl.kind == 'web' else 'presigned URL'}> &`, then "
                             "waits for all")
        # One curl process, N transfers in parallel over reused connections.
        config = conf / "curl.conf"
        lines = []
        for name in ctx.data.under(wl.prefix):
            lines += [f'url = "{ctx.presigner(wl.transport, f"{prefix}{name}")}"',
                      f'output = "{dest}/{name}"']
        config.write_text("\n".join(lines) + "\n")
        return cell(["curl", "-s", "-f", *tls, "--parallel", "--parallel-max", n, "-K", config],
                    min(n, objects), note="curl.conf: a presigned `url` and an `output` per object")

    raise ValueError(f"unknown tool {tool}")


def _python_library(ctx: Context, wl: Workload, tool: str, n: int | None, dest: Path,
                    conf: Path, objects: int, cell: Callable[..., Cell]) -> Cell:
    """bench/peers/python_libs.py: the library named by `tool`, in the bench's venv."""
    library = {"parabyte-py": "parabyte", "boto3-tm": "boto3", "boto3-tm-sized": "boto3-sized",
               "obstore": "obstore"}[tool]
    argv = [ctx.venv_bin / "python", ctx.repo / "bench/peers/python_libs.py", library,
            {"manifest": "many", "memory": "memory"}.get(wl.kind, "object"),
            "--endpoint-url", ctx.store.endpoint(wl.transport), "--bucket", BUCKET, "--dest", dest]
    if wl.kind in ("manifest", "memory"):
        manifest = conf / "manifest.json"
        listed = [[name, size, f'"{md5}"'] for name, (size, md5) in ctx.data.under(wl.prefix).items()]
        manifest.write_text(json.dumps({"prefix": f"{wl.prefix}/", "objects": listed}))
        argv += ["--manifest", manifest]
    else:
        _size, md5 = ctx.data.under(wl.prefix)["big.bin"]
        argv += ["--key", f"{wl.prefix}/big.bin", "--size", _object_size(ctx, wl),
                 "--etag", f'"{md5}"']
    if n is not None:
        argv += ["--concurrency", n]
    size = _object_size(ctx, wl)
    parts = math.ceil(size / (8 << 20))
    if tool == "parabyte-py":  # defaults: 64 workers, 16 threads, 128 requests, 8 MiB parts
        in_flight = n or (min(128, objects) if wl.kind == "manifest" else
                          min(64, objects) if wl.kind == "memory" else min(16, parts))
    elif tool == "obstore":  # one stream per object; the script's 10 at a time by default
        in_flight = min(n or 10, objects) if wl.kind in ("manifest", "memory") else 1
    else:  # TransferManager: max_concurrency 10, 8 MiB chunks
        in_flight = min(n or 10, objects if wl.kind == "manifest" else parts)
    note = "a manifest.json of names, sizes and ETags" if wl.kind == "manifest" else ""
    return cell(argv, in_flight, note=note)


def _object_size(ctx: Context, wl: Workload) -> int:
    if wl.prefix.startswith("w2"):
        return ctx.sizes.w2_size
    if wl.prefix == "w9":
        return ctx.sizes.w9_size
    if wl.prefix.startswith("w3"):
        return ctx.sizes.w3_size
    if wl.prefix == "w8":
        return ctx.sizes.w8_size
    return ctx.sizes.w1_size
