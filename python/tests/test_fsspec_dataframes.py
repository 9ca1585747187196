"""pandas, pyarrow datasets and Dask dataframes read and write Parquet through
`parabyte.fsspec` as they would through s3fs, and what they get is checked against the
same objects read with boto3."""

from __future__ import annotations

import io
import uuid

import pytest
from fsspec_stores import started_store

from conftest import boto3_client
from parabyte.fsspec import ParabyteFileSystem, register_s3

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
boto3 = pytest.importorskip("boto3")

ROWS = 30_000


@pytest.fixture(scope="module")
def store(request: pytest.FixtureRequest):
    """A versitygw of the fsspec tests' own, not the session bucket other tests list."""
    return started_store("versitygw", request)


@pytest.fixture(scope="module")
def fs(store) -> ParabyteFileSystem:
    return ParabyteFileSystem(**store.client_options(), skip_instance_cache=True)


@pytest.fixture(scope="module")
def s3(store):
    return boto3_client(store)


@pytest.fixture
def root(fs: ParabyteFileSystem, store) -> str:
    path = f"{store.bucket}/frames-{uuid.uuid4().hex[:8]}"
    yield path
    if fs.exists(path):
        fs.rm(path, recursive=True)


@pytest.fixture(scope="module")
def s3_urls():
    """`s3://` served by parabyte in this module, as `register_s3()` makes it."""
    from fsspec.registry import _registry as registry

    before = {name: registry.get(name) for name in ("s3", "s3a")}
    register_s3()
    yield
    for name, value in before.items():
        if value is None:
            registry.pop(name, None)
        else:
            registry[name] = value


def frame(seed: int = 0):
    numbers = range(seed, seed + ROWS)
    return pd.DataFrame(
        {
            "id": list(numbers),
            "value": [n * 0.5 for n in numbers],
            "name": [f"row-{n}" for n in numbers],
        }
    )


def boto3_frame(s3, path: str):
    bucket, _, key = path.partition("/")
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return pd.read_parquet(io.BytesIO(body))


def boto3_keys(s3, prefix: str) -> list[str]:
    bucket, _, key = prefix.partition("/")
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"{key}/")
    return sorted(f"{bucket}/{entry['Key']}" for entry in listed.get("Contents", []))


def test_pandas_to_parquet_and_read_parquet_through_s3_urls(store, s3, root, s3_urls) -> None:
    # What a pandas user changes: `register_s3()` once, and the store in storage_options.
    options = store.client_options()
    written = frame()
    written.to_parquet(f"s3://{root}/table.parquet", storage_options=options)
    # Stored as boto3 reads it back ...
    pd.testing.assert_frame_equal(boto3_frame(s3, f"{root}/table.parquet"), written)
    # ... and read through parabyte the same.
    read = pd.read_parquet(f"s3://{root}/table.parquet", storage_options=options)
    pd.testing.assert_frame_equal(read, written)


def test_pyarrow_dataset_reads_a_partitioned_prefix(fs, s3, root) -> None:
    import pyarrow.dataset as ds

    for part in range(3):
        with fs.open(f"{root}/ds/part-{part}.parquet", "wb") as f:
            pq.write_table(pa.Table.from_pandas(frame(part * ROWS), preserve_index=False), f)
    dataset = ds.dataset(f"{root}/ds", filesystem=fs, format="parquet")
    got = dataset.to_table().to_pandas().sort_values("id", ignore_index=True)
    expected = pd.concat(
        [boto3_frame(s3, key) for key in boto3_keys(s3, f"{root}/ds")], ignore_index=True
    ).sort_values("id", ignore_index=True)
    assert len(got) == 3 * ROWS
    pd.testing.assert_frame_equal(got, expected)
    # A filter pushed down reads row groups at their offsets: random access on open files.
    few = dataset.to_table(filter=ds.field("id") < 10).to_pandas()
    assert sorted(few["id"]) == list(range(10))


def test_dask_read_parquet_through_s3_urls(store, fs, s3, root, s3_urls) -> None:
    dd = pytest.importorskip("dask.dataframe")
    import dask

    for part in range(2):
        fs.pipe(f"{root}/dd/part-{part}.parquet", frame_bytes(frame(part * ROWS)))
    with dask.config.set(scheduler="synchronous"):
        got = (
            dd.read_parquet(f"s3://{root}/dd/", storage_options=store.client_options())
            .compute()
            .sort_values("id", ignore_index=True)
        )
    expected = pd.concat(
        [boto3_frame(s3, key) for key in boto3_keys(s3, f"{root}/dd")], ignore_index=True
    ).sort_values("id", ignore_index=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected, check_dtype=False)


def frame_bytes(df) -> bytes:
    buffer = io.BytesIO()
    df.to_parquet(buffer, index=False)
    return buffer.getvalue()
