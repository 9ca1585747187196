"""The cluster the Dask tests run on: a `distributed.LocalCluster` of two worker processes
on loopback, and which of its workers holds a connection (the one a test kills)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import dask
import distributed
import psutil


@contextlib.contextmanager
def local_cluster(
    workers: int = 2, settings: dict[str, Any] | None = None
) -> Iterator[distributed.Client]:
    """A `distributed.LocalCluster` of single-threaded worker processes on loopback, started
    under these Dask `settings`, and a client of it (not made the default one)."""
    with (
        dask.config.set(settings or {}),
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # loopback, any free port
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield client


def worker_holding(cluster: distributed.Client, port: int) -> int:
    """The pid of the worker process whose connection has local port `port`."""
    for pid in cluster.run(os.getpid).values():
        connections = psutil.Process(pid).net_connections(kind="tcp")
        if any(connection.laddr.port == port for connection in connections):
            return pid
    raise AssertionError(f"no worker holds the connection from port {port}")
