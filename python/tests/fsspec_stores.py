"""The stores the fsspec tests run against: a versitygw and a MinIO of their own, started by
the test kit once per session each, only when a test asks (so folders the fsspec tests
make and leave, on a failure, never show in the session bucket other tests list)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import TESTBED, Store, _read_env

START_TIMEOUT_S = 60


def start_testbed(server: str, bucket: str, work: Path):
    """A `testbed up --server <server>` with an empty bucket: its `Store` and process."""
    if not TESTBED.exists():
        pytest.fail(f"{TESTBED} is missing: run `cargo build -p parabyte-testkit --bin testbed`")
    env_file = work / "env"
    log_path = work / "testbed.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            str(TESTBED),
            "up",
            "--server",
            server,
            "--bucket",
            bucket,
            "--small",
            "0",
            "--large-size",
            "0",
            "--env-file",
            str(env_file),
            "--max-seconds",
            "1800",
        ],
        stdin=subprocess.PIPE,
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not env_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"testbed ({server}) did not start: {log_path.read_text()}")
        time.sleep(0.05)
    env = _read_env(env_file)
    server_log = re.search(r"\(log: (.+)/server\.log\)", log_path.read_text())
    root = Path(server_log.group(1)) / "root" if server_log else work
    store = Store(
        endpoint=env["AWS_ENDPOINT_URL"],
        access_key=env["AWS_ACCESS_KEY_ID"],
        secret_key=env["AWS_SECRET_ACCESS_KEY"],
        region=env["AWS_REGION"],
        bucket=env["PARABYTE_BUCKET"],
        root=root,
        presigned_url=env.get("PARABYTE_PRESIGNED_URL", ""),
    )
    return store, process, log


def stop_testbed(process: subprocess.Popen, log) -> None:
    process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


_STARTED: dict[str, Store] = {}


def started_store(server: str, request: pytest.FixtureRequest) -> Store:
    """The session's `server` ("versitygw", "minio") with an empty bucket, started on first
    use and stopped when the session ends."""
    if server not in _STARTED:
        work = request.getfixturevalue("tmp_path_factory").mktemp(f"fsspec-{server}")
        store, process, log = start_testbed(server, f"fsspec-{server}", work)
        request.config.add_cleanup(lambda: stop_testbed(process, log))
        _STARTED[server] = store
    return _STARTED[server]


def fsspec_options(store: Store) -> dict[str, str]:
    return {**store.client_options(), "skip_instance_cache": True}
