"""The `parabyte` command that `pip install` puts on PATH (and `python -m parabyte`): the
Rust command line itself, run in this process from the extension, so the wheel carries
one copy of the engine and both faces behave the same.

`parabyte cp|sync|mv|rm --dask-scheduler ADDRESS ...` (or `PARABYTE_DASK_SCHEDULER`) is
parsed by the same flags and runs on that Dask cluster through `parabyte.dask`."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

from ._native import cluster_job_args, run_cli

# Exit statuses, as the command line documents them.
SOME_FAILED = 1
FATAL = 2
INTERRUPTED = 130


def main() -> int:
    # "parabyte", not the script's path, so usage lines read as they do for the binary.
    argv = ["parabyte", *sys.argv[1:]]
    job = cluster_job_args(argv)
    if job is not None:
        return _cluster_job(job)
    # The command line handles Ctrl-C and SIGTERM itself (temporary files removed, exit 130
    # or 143); Python's handler would also raise KeyboardInterrupt once it returns.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return run_cli(argv)


def _cluster_job(job: dict[str, Any]) -> int:
    """A command with `--dask-scheduler`: the job on the cluster, the summary as the CLI
    prints it."""
    try:
        from . import dask as cluster
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return FATAL
    from .exceptions import Error

    if job["refused"] is not None:
        print(f"error: {job['refused']}", file=sys.stderr)
        return FATAL
    try:
        summary = _run_on(cluster, job)
    except Error as error:
        print(f"error: {error}", file=sys.stderr)
        return FATAL
    except KeyboardInterrupt:
        print(
            "interrupted: finished objects are in place; run the same command again to resume",
            file=sys.stderr,
        )
        return INTERRUPTED
    if job["json"]:
        print(json.dumps(summary.to_dict(), default=str))
    if not job["quiet"] or summary.failed:
        _print_summary(summary, quiet=job["quiet"])
    return SOME_FAILED if summary.failed else 0


def _run_on(cluster: Any, job: dict[str, Any]) -> Any:
    """The job's function of `parabyte.dask`, with its flags as keywords."""
    command, scheduler = job["command"], job["scheduler"]
    destination = job["destination"]
    source = job["source"]
    # --timeout bounds the wait for the scheduler too.
    given = {"connect_timeout": job["options"]["timeout"], **job["options"], **job["keywords"]}
    if command == "sync":
        return cluster.sync(source, str(destination), scheduler, **given)
    if command == "rm":
        return cluster.remove(source, scheduler, recursive=job["recursive"], **given)
    if command == "mv":
        return cluster.move(
            source, str(destination), scheduler, recursive=job["recursive"], **given
        )
    if job["manifest"] is not None:  # read by the driver; "-" is standard input, as locally
        manifest = str(job["manifest"])
        source = Path("/dev/stdin" if manifest == "-" else manifest)
    return cluster.copy(
        source,
        None if destination is None else str(destination),
        scheduler,
        recursive=job["recursive"],
        split_bytes=job["split_bytes"],
        **given,
    )


def _print_summary(summary: Any, *, quiet: bool) -> None:
    if not quiet:
        print(
            f"{summary.objects} objects ({summary.skipped} already there), {summary.bytes} bytes "
            f"in {summary.elapsed:.2f} s on {len(summary.workers)} workers ({summary.tasks} "
            f"tasks); {summary.deleted} deleted; {summary.requests.get} GET, "
            f"{summary.requests.put} PUT, {summary.requests.list} LIST requests",
            file=sys.stderr,
        )
    for failure in summary.failures:
        print(f"failed: {failure.source}: {failure.error}", file=sys.stderr)
