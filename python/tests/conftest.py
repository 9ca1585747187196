"""One real S3 server (versitygw) for the whole session, started by the test kit's `testbed`
binary and filled through its own S3 client. The server keeps objects as plain files under
its posix root, which is what the tests compare downloads against, byte for byte."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTBED = Path(os.environ.get("PARABYTE_TESTBED", REPO / "target/debug/testbed"))

BUCKET = "pytest-bucket"
SMALL_COUNT = 120
SMALL_SIZE = 1024
LARGE_SIZE = 8 << 20
START_TIMEOUT_S = 60


@dataclass(frozen=True)
class Store:
    endpoint: str
    access_key: str
    secret_key: str
    region: str
    bucket: str
    root: Path
    presigned_url: str
    """A presigned GET of large/big.bin: plain HTTP, no credentials needed."""

    def client_options(self) -> dict[str, str]:
        return {
            "endpoint_url": self.endpoint,
            "access_key_id": self.access_key,
            "secret_access_key": self.secret_key,
            "region": self.region,
        }

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def stored(self, key: str) -> bytes:
        """The object's bytes as the server keeps them on disk."""
        return (self.root / self.bucket / key).read_bytes()

    def keys(self, prefix: str) -> list[str]:
        base = self.root / self.bucket
        return sorted(
            str(path.relative_to(base)) for path in (base / prefix).rglob("*") if path.is_file()
        )


def _read_env(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        values[name] = value.removeprefix("'").removesuffix("'")
    return values


def start_testbed(server: str, bucket: str, work: Path, *seeded: str):
    """A `testbed up --server <server>` with `bucket`, filled as `seeded` (testbed's
    `--small`, `--small-size` and `--large-size`) asks: its `Store` and process, and the
    log the process writes."""
    if not TESTBED.exists():
        pytest.fail(f"{TESTBED} is missing: run `cargo build -p parabyte-testkit --bin testbed`")
    env_file = work / "env"
    log_path = work / "testbed.log"
    log = log_path.open("w")
    # A pipe on stdin: testbed stops when it closes, so it cannot outlive this session.
    process = subprocess.Popen(
        [
            str(TESTBED),
            "up",
            "--server",
            server,
            "--bucket",
            bucket,
            *seeded,
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


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    work = tmp_path_factory.mktemp("testbed")
    store, process, log = start_testbed(
        "versitygw",
        BUCKET,
        work,
        "--small",
        str(SMALL_COUNT),
        "--small-size",
        str(SMALL_SIZE),
        "--large-size",
        str(LARGE_SIZE),
    )
    # The tests compare with the files the server keeps, and presign their large object.
    assert store.root != work, "testbed no longer says where the server lives"
    assert store.presigned_url, "testbed no longer presigns the large object"
    # The module-level functions' default client reads the AWS environment.
    os.environ["AWS_ENDPOINT_URL"] = store.endpoint
    os.environ["AWS_ACCESS_KEY_ID"] = store.access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = store.secret_key
    os.environ["AWS_REGION"] = store.region
    yield store
    stop_testbed(process, log)


@pytest.fixture(scope="session")
def client(store: Store):
    import parabyte

    return parabyte.Client(**store.client_options())


def boto3_client(store: Store):
    """A boto3 client of `store`: a second opinion on what parabyte wrote."""
    boto3 = pytest.importorskip("boto3")
    return boto3.client(
        "s3",
        endpoint_url=store.endpoint,
        aws_access_key_id=store.access_key,
        aws_secret_access_key=store.secret_key,
        region_name=store.region,
    )


@pytest.fixture(scope="module")
def cluster(store: Store) -> Iterator[Any]:
    """A module's cluster. It depends on the store (a module's own bucket, where it has
    one): the AWS environment is set before the workers start."""
    # Imported here: only the Dask tests, which skip without Dask, ask for it.
    from dask_cluster import local_cluster

    with local_cluster() as client:
        yield client


def files_in(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def temporary_name(name: str) -> str:
    """The hidden name a partial `name` is kept under: `.parabyte-` and the first 32 hex
    digits of the SHA-256 of the name's bytes, then `.tmp`."""
    return f".parabyte-{hashlib.sha256(os.fsencode(name)).hexdigest()[:32]}.tmp"


def only_resumable_parts(directory: Path, name: str, within_s: float = 2.0) -> bool:
    """True once an interrupted download of `name` has left at most its hidden partial file
    (kept to resume from) and never a file under the final name.
    Cancelled tasks settle their files as they are dropped, which may take a moment."""
    deadline = time.monotonic() + within_s
    while True:
        if files_in(directory) in ([], [temporary_name(name)]):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
