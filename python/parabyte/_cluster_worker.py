"""What every task of a cluster job does in its worker's process, whatever the job: find
the process's client for the job's options (its engine given the process's share of the
host's cores), report progress to the driver through Dask's event log, and hand back its
result. Shared by `parabyte.dask`'s downloads and `_cluster_writes`' write jobs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import distributed
from distributed.comm import get_address_host

from . import Client, _client
from ._native import Summary

_PIECE = "/piece-"
"""Between a split object's task name and a piece's first byte, in progress reports."""
PROGRESS_INTERVAL_S = 0.5
"""How often a running task reports its progress to the driver, at most."""


@dataclass(frozen=True)
class _PieceResult:
    worker: str
    start: int
    end: int
    summary: Summary | None
    """`None` when the piece failed: the task that assembles the object fetches its bytes."""
    cpu_seconds: float


@dataclass(frozen=True)
class _TaskResult:
    worker: str
    summary: Summary
    cpu_seconds: float
    pieces: tuple[_PieceResult, ...] = ()
    outcome: Any = None
    """What the call gave beside its summary: a sync range's verdict on its deletes."""


def _processes_per_host(addresses: Iterable[str]) -> dict[str, int]:
    """How many worker processes each host runs."""
    hosts: dict[str, int] = {}
    for address in addresses:
        host = get_address_host(address)
        hosts[host] = hosts.get(host, 0) + 1
    return hosts


def _share_the_cores(worker_address: str, sharing: dict[str, int]) -> None:
    """Before this process's engine starts, give it its share of the host's cores: each
    engine runs one thread per core by default, and several worker processes on one host
    (a LocalCluster, `dask worker --nworkers N`) would otherwise run N threads per core and
    spend CPU switching between them. A user's own TOKIO_WORKER_THREADS wins."""
    processes = sharing.get(get_address_host(worker_address), 1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if processes > 1:
        os.environ.setdefault("TOKIO_WORKER_THREADS", str(max(1, (cores or 1) // processes)))


def _worker_client(
    options: dict[str, Any], sharing: dict[str, int]
) -> tuple[distributed.Worker, Client]:
    """In a task: this worker, and its process's client for the job's options, its engine
    given the process's share of the host's cores first."""
    worker = distributed.get_worker()
    _share_the_cores(worker.address, sharing)
    return worker, _client(options)


def _reporter(worker: distributed.Worker, topic: str, name: str) -> Callable[[Any], None]:
    """A progress callback that sends a task's figures to the driver through Dask's event
    log, at most every `PROGRESS_INTERVAL_S`."""
    reported = [0.0]

    def report(now: Any) -> None:
        moment = time.monotonic()
        if moment - reported[0] < PROGRESS_INTERVAL_S:
            return
        reported[0] = moment
        figures = [
            now.objects_done,
            now.objects_failed,
            now.objects_total,
            now.bytes_done,
            now.bytes_total,
        ]
        worker.log_event(topic, {"task": name, "figures": figures})

    return report
