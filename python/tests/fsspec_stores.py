"""The stores the fsspec tests run against: a versitygw and a MinIO of their own, started by
the test kit once per session each, only when a test asks (so folders the fsspec tests
make and leave, on a failure, never show in the session bucket other tests list)."""

from __future__ import annotations

import pytest

from conftest import Store, start_testbed, stop_testbed

_STARTED: dict[str, Store] = {}


def started_store(server: str, request: pytest.FixtureRequest) -> Store:
    """The session's `server` ("versitygw", "minio") with an empty bucket, started on first
    use and stopped when the session ends."""
    if server not in _STARTED:
        work = request.getfixturevalue("tmp_path_factory").mktemp(f"fsspec-{server}")
        seeded_empty = ("--small", "0", "--large-size", "0")
        store, process, log = start_testbed(server, f"fsspec-{server}", work, *seeded_empty)
        request.config.add_cleanup(lambda: stop_testbed(process, log))
        _STARTED[server] = store
    return _STARTED[server]


def fsspec_options(store: Store) -> dict[str, str]:
    return {**store.client_options(), "skip_instance_cache": True}
