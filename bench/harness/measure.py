"""One timed run of one command, and what it cost.

- wall time: from spawning the process to reaping it (startup included: a user pays it too);
- CPU seconds and peak RSS: GNU time (`/usr/bin/time -f`) around the command, which reports
  the rusage of every descendant that was waited for (a shell running parallel curls counts all
  of them); peak RSS is that of the largest single process in the tree. GNU time rather than
  the harness's own `wait4`: a child forked from the harness would report the harness's memory
  as its peak;
- requests by kind: the lines the servers' access logs gained during the run;
- connections: the "Accepted client" lines toxiproxy logged during the run (proxied runs);
- the CPU the servers and the whole machine spent meanwhile, to show toxiproxy's share and
  whether anything else was running.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from .setup import Store, _die_with_parent

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ACCESS_LINE = re.compile(r"\ss3_(\w+)\s+\S+\s+\S+\s+(\d{3})\s")
KINDS = {"GetObject": "GET", "HeadObject": "HEAD", "ListObjectsV2": "LIST", "ListObjects": "LIST"}
# parabyte's summary line on how the content was checked (parabyte-cli's lib.rs), or its
# `--json` form.
VERIFIED_LINE = re.compile(r"verified: (\d+) by the store's checksum, "
                           r"(\d+) by the MD5 in the ETag, (\d+) by size only")
METHODS = ("CRC", "MD5", "size only")


@dataclass
class Command:
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    # Emptied before each run; where the tool writes.
    dest: Path | None
    # Called after a run with (stdout file, deep): returns what is wrong, or None.
    check: Callable[[Path, bool], str | None]


@dataclass
class RunResult:
    wall_s: float
    cpu_s: float
    user_s: float
    sys_s: float
    peak_rss_mib: float
    exit_code: int
    error: str | None
    requests: dict[str, int]
    connections: int | None
    server_cpu_s: dict[str, float]
    machine_busy_s: float
    machine_irq_s: float
    harness_cpu_s: float
    # parabyte's `--json` summary says when the first object started (W4c).
    first_object_s: float | None = None
    # How parabyte checked the content, from its summary: "CRC", "MD5", "size only", or the
    # counts of each when objects differed ("60 CRC, 4 MD5"). None for other tools.
    checked: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def _proc_cpu(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _machine_busy() -> tuple[float, float]:
    """CPU seconds all cores spent in processes (user, nice, system) and in interrupts (irq,
    softirq: loopback traffic is processed there, and charged to no process) since boot."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = ticks
    return (user + nice + system) / CLOCK_TICKS, (irq + softirq) / CLOCK_TICKS


def wait_for_quiet(limit_s: float, idle_cores: float = 0.3, window_s: float = 0.25) -> float:
    """Waits, at most `limit_s`, until the machine spends less than `idle_cores` of CPU outside
    idle for a `window_s` window (the servers are idle between runs, so that is other work on a
    shared machine). Returns the seconds spent waiting."""
    started = time.monotonic()
    while True:
        before, t = _machine_busy()[0], time.monotonic()
        time.sleep(window_s)
        busy = (_machine_busy()[0] - before) / (time.monotonic() - t)
        waited = time.monotonic() - started
        if busy < idle_cores or waited >= limit_s:
            return round(waited, 2)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _settled_tail(path: Path, offset: int) -> str:
    """What `path` gained after `offset`, once it stops growing (the server logs a request when
    it completes; give it a moment, bounded)."""
    deadline = time.monotonic() + 2.0
    last = -1
    while time.monotonic() < deadline:
        size = _size(path)
        if size == last:
            break
        last = size
        time.sleep(0.05)
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def _read_rusage(path: Path) -> tuple[float, float, int]:
    """GNU time's `%U %S %M` line; it may be preceded by "Command exited with non-zero status"."""
    try:
        last = path.read_text().strip().splitlines()[-1].split()
        return float(last[0]), float(last[1]), int(last[2])
    except (OSError, IndexError, ValueError):
        return 0.0, 0.0, 0


def count_requests(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for match in ACCESS_LINE.finditer(text):
        operation, status = match.group(1), int(match.group(2))
        kind = KINDS.get(operation, operation)
        counts[kind] = counts.get(kind, 0) + 1
        if status >= 400:
            counts["errors"] = counts.get("errors", 0) + 1
    return counts


def run_once(command: Command, store: Store, run_dir: Path, timeout_s: float, deep: bool,
             proxied: bool) -> RunResult:
    if command.dest is not None:
        subprocess.run(["rm", "-rf", str(command.dest)], check=True)
        command.dest.mkdir(parents=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = run_dir / "stdout", run_dir / "stderr"
    rusage_path = run_dir / "rusage"

    logs = list(store.access_logs.values())
    offsets = [_size(p) for p in logs]
    proxy_offset = _size(store.toxiproxy_log)
    pids = store.pids()
    server_before = {name: _proc_cpu(pid) for name, pid in pids.items()}
    busy_before = _machine_busy()
    harness_before = time.process_time()

    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        started = time.perf_counter()
        argv = ["/usr/bin/time", "-f", "%U %S %M", "-o", str(rusage_path), *command.argv]
        process = subprocess.Popen(argv, env=command.env, cwd=command.cwd,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   start_new_session=True, preexec_fn=_die_with_parent)
        timed_out = threading.Event()

        def kill_on_timeout() -> None:
            timed_out.set()
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout_s, kill_on_timeout)
        timer.start()
        _, status = os.waitpid(process.pid, 0)
        wall = time.perf_counter() - started
        timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    user_s, sys_s, peak_kib = _read_rusage(rusage_path)
    try:  # anything the tool left running in its group
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

    busy_after = _machine_busy()
    harness_cpu = time.process_time() - harness_before
    server_cpu = {name: round(_proc_cpu(pid) - server_before[name], 3)
                  for name, pid in pids.items()}
    requests: dict[str, int] = {}
    for path, offset in zip(logs, offsets):
        for kind, n in count_requests(_settled_tail(path, offset)).items():
            requests[kind] = requests.get(kind, 0) + n
    connections = None
    if proxied:
        connections = _settled_tail(store.toxiproxy_log, proxy_offset).count('"Accepted client"')

    error = None
    if timed_out.is_set():
        error = f"killed after {timeout_s:.0f}s"
    elif process.returncode != 0:
        tail = stderr_path.read_text(errors="replace").strip().splitlines()[-3:]
        error = f"exit {process.returncode}: {' | '.join(tail)[:300]}"
    else:
        error = command.check(stdout_path, deep)
    first_object_s = None
    summary = None
    if error is None and _size(stdout_path) < 1 << 20:
        try:
            summary = json.loads(stdout_path.read_text())
            first_object_s = summary.get("first_object_seconds")
        except (ValueError, AttributeError):
            summary = None
    checked = how_checked(summary, stderr_path.read_text(errors="replace")[-4096:])
    # Downloads live in memory (tmpfs) and listings can be megabytes: keep neither around.
    if command.dest is not None:
        subprocess.run(["rm", "-rf", str(command.dest)], check=True)
    if _size(stdout_path) > 1 << 20:
        os.truncate(stdout_path, 64 << 10)

    return RunResult(
        wall_s=round(wall, 4),
        cpu_s=round(user_s + sys_s, 3),
        user_s=user_s,
        sys_s=sys_s,
        peak_rss_mib=round(peak_kib / 1024, 1),
        exit_code=process.returncode,
        error=error,
        requests=requests,
        connections=connections,
        server_cpu_s=server_cpu,
        machine_busy_s=round(busy_after[0] - busy_before[0], 3),
        machine_irq_s=round(busy_after[1] - busy_before[1], 3),
        harness_cpu_s=round(harness_cpu, 3),
        first_object_s=first_object_s,
        checked=checked,
    )


def how_checked(summary: dict | None, stderr_tail: str) -> str | None:
    """How parabyte checked the objects of a run, from its JSON summary or its summary line."""
    verified = summary.get("verified") if isinstance(summary, dict) else None
    if isinstance(verified, dict):
        counts = [verified.get(k, 0) for k in ("checksum", "md5", "size_only")]
    else:
        match = VERIFIED_LINE.search(stderr_tail)
        if not match:
            return None
        counts = [int(n) for n in match.groups()]
    used = [(n, method) for n, method in zip(counts, METHODS) if n]
    if len(used) == 1:
        return used[0][1]
    return ", ".join(f"{n} {method}" for n, method in used) or None
