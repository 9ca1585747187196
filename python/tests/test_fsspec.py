"""`parabyte.fsspec`: the filesystem fsspec (and so pandas, pyarrow and Dask) reads S3
through, against the session's versitygw. What fsspec's own abstract tests do not cover is
here: the entry point and `register_s3`, listings with s3fs's folder semantics, the batches
that go to the engine, the open file pinned to one version, writers that store nothing
unless closed, and the errors fsspec users catch. The data tools' checks compare with the
same bytes read through boto3."""

from __future__ import annotations

import gc
import io
import uuid
from pathlib import Path

import fsspec
import pytest
from fsspec_stores import started_store

import parabyte
from conftest import boto3_client
from parabyte.fsspec import ParabyteFileSystem, register_s3


@pytest.fixture(scope="module")
def store(request: pytest.FixtureRequest):
    """A versitygw of the fsspec tests' own, not the session bucket other tests list."""
    return started_store("versitygw", request)


@pytest.fixture(scope="module")
def fs(store) -> ParabyteFileSystem:
    return ParabyteFileSystem(**store.client_options(), skip_instance_cache=True)


@pytest.fixture
def root(fs: ParabyteFileSystem, store) -> str:
    """A fresh prefix of the bucket, removed afterwards."""
    path = f"{store.bucket}/fsspec-{uuid.uuid4().hex[:8]}"
    yield path
    if fs.exists(path):
        fs.rm(path, recursive=True)


@pytest.fixture(scope="module")
def s3(store):
    return boto3_client(store)


def boto3_bytes(s3, path: str) -> bytes:
    bucket, _, key = path.partition("/")
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


# -- the entry point, s3:// --------------------------------------------------------------


def test_the_entry_point_registers_the_parabyte_protocol(store, root) -> None:
    fs = fsspec.filesystem("parabyte", **store.client_options())
    assert isinstance(fs, ParabyteFileSystem)
    fs.pipe_file(f"parabyte://{root}/e", b"entry point")
    assert fs.cat_file(f"{root}/e") == b"entry point"


def test_register_s3_serves_s3_urls_in_this_process(store, fs, root) -> None:
    from fsspec.registry import _registry as registry

    before = {name: registry.get(name) for name in ("s3", "s3a")}
    try:
        register_s3()
        fs.pipe_file(f"{root}/s", b"through s3://")
        with fsspec.open(f"s3://{root}/s", "rb", **store.client_options()) as f:
            assert isinstance(f.fs, ParabyteFileSystem)
            assert f.read() == b"through s3://"
    finally:
        for name, value in before.items():
            if value is None:
                registry.pop(name, None)
            else:
                registry[name] = value


def test_it_pickles_as_dask_ships_it_and_runs_in_a_users_event_loop(store, fs, root) -> None:
    import asyncio
    import pickle

    fs.pipe_file(f"{root}/p", b"pickled")
    again = pickle.loads(pickle.dumps(fs))
    assert isinstance(again, ParabyteFileSystem) and again.cat_file(f"{root}/p") == b"pickled"

    async def in_my_loop() -> dict:
        mine = ParabyteFileSystem(
            **store.client_options(), asynchronous=True, skip_instance_cache=True
        )
        await mine._pipe_file(f"{root}/q", b"async")
        return await mine._cat([f"{root}/p", f"{root}/q"])

    assert asyncio.run(in_my_loop()) == {f"{root}/p": b"pickled", f"{root}/q": b"async"}


# -- listings ----------------------------------------------------------------------------


@pytest.fixture
def tree(fs: ParabyteFileSystem, root: str) -> str:
    fs.pipe(
        {
            f"{root}/a/one": b"1",
            f"{root}/a/two.txt": b"22",
            f"{root}/a/deep/three": b"333",
            f"{root}/a.txt": b"4444",
            f"{root}/b": b"55555",
        }
    )
    return root


def test_ls_lists_one_level_with_folders_as_directories(fs, tree) -> None:
    listed = {info["name"]: (info["type"], info["size"]) for info in fs.ls(tree, detail=True)}
    assert listed == {
        f"{tree}/a": ("directory", 0),
        f"{tree}/a.txt": ("file", 4),
        f"{tree}/b": ("file", 5),
    }
    assert sorted(fs.ls(f"s3://{tree}/a", detail=False)) == [
        f"{tree}/a/deep",
        f"{tree}/a/one",
        f"{tree}/a/two.txt",
    ]
    # A file lists as itself, as in s3fs.
    assert fs.ls(f"{tree}/b", detail=False) == [f"{tree}/b"]
    with pytest.raises(FileNotFoundError):
        fs.ls(f"{tree}/nothing")


def test_info_exists_isdir_isfile_follow_prefixes(fs, tree) -> None:
    assert fs.info(f"{tree}/a.txt")["size"] == 4
    assert fs.info(f"{tree}/a.txt")["ETag"]
    assert fs.info(f"{tree}/a")["type"] == "directory"
    assert fs.isdir(f"{tree}/a") and not fs.isfile(f"{tree}/a")
    assert fs.isfile(f"{tree}/a.txt") and not fs.isdir(f"{tree}/a.txt")
    assert fs.isdir(f"{tree}/a/deep")
    # "a/o" is no folder: only "a/one" starts with it.
    assert not fs.exists(f"{tree}/a/o")
    assert not fs.exists(f"{tree}/nothing")
    with pytest.raises(FileNotFoundError, match="no such key"):
        fs.info(f"{tree}/nothing")


def test_find_glob_du(fs, tree) -> None:
    assert fs.find(tree) == [
        f"{tree}/a.txt",
        f"{tree}/a/deep/three",
        f"{tree}/a/one",
        f"{tree}/a/two.txt",
        f"{tree}/b",
    ]
    assert fs.find(tree, maxdepth=1) == [f"{tree}/a.txt", f"{tree}/b"]
    # With the folders, the root too, as fsspec's own `find` (and s3fs's) gives it.
    assert fs.find(tree, withdirs=True, maxdepth=2) == [
        tree,
        f"{tree}/a",
        f"{tree}/a.txt",
        f"{tree}/a/deep",
        f"{tree}/a/one",
        f"{tree}/a/two.txt",
        f"{tree}/b",
    ]
    assert fs.find(f"{tree}/b") == [f"{tree}/b"]
    assert fs.glob(f"{tree}/a/*") == [f"{tree}/a/deep", f"{tree}/a/one", f"{tree}/a/two.txt"]
    assert fs.glob(f"{tree}/**/*.txt") == [f"{tree}/a.txt", f"{tree}/a/two.txt"]
    assert fs.glob(f"s3://{tree}/a*") == [f"{tree}/a", f"{tree}/a.txt"]
    assert fs.du(tree) == 1 + 2 + 3 + 4 + 5
    assert fs.du(f"{tree}/a", total=False) == {
        f"{tree}/a/deep/three": 3,
        f"{tree}/a/one": 1,
        f"{tree}/a/two.txt": 2,
    }


# -- bulk transfers ----------------------------------------------------------------------


def test_cat_of_a_pattern_is_one_batch_with_the_listed_sizes(fs, tree, monkeypatch) -> None:
    asked = []
    fetch = fs.client.get_bytes_many_async

    async def spy(sources, **kwargs):
        asked.append(list(sources))
        return await fetch(sources, **kwargs)

    monkeypatch.setattr(fs.client, "get_bytes_many_async", spy)
    got = fs.cat(f"{tree}/a/*")
    assert got == {f"{tree}/a/one": b"1", f"{tree}/a/two.txt": b"22"}
    assert len(asked) == 1
    # Each source carries the size and ETag the listing gave: no probe, one version.
    assert sorted((item.size, bool(item.etag)) for item in asked[0]) == [(1, True), (2, True)]
    every = fs.cat(tree, recursive=True)
    assert len(every) == 5 and every[f"{tree}/a/deep/three"] == b"333"
    assert len(asked) == 2


def test_cat_of_a_list_and_its_errors(fs, tree) -> None:
    paths = [f"{tree}/b", f"s3://{tree}/a.txt"]
    assert fs.cat(paths) == {f"{tree}/b": b"55555", f"{tree}/a.txt": b"4444"}
    with pytest.raises(FileNotFoundError):
        fs.cat([f"{tree}/b", f"{tree}/missing"])
    got = fs.cat([f"{tree}/b", f"{tree}/missing"], on_error="return")
    assert got[f"{tree}/b"] == b"55555"
    assert isinstance(got[f"{tree}/missing"], FileNotFoundError)
    assert fs.cat([f"{tree}/b", f"{tree}/missing"], on_error="omit") == {f"{tree}/b": b"55555"}


def test_cat_file_and_cat_ranges(fs, root) -> None:
    data = bytes(range(256)) * 64
    fs.pipe(f"{root}/r", data)
    fs.pipe(f"{root}/s", b"short")
    assert fs.cat_file(f"{root}/r", start=10, end=20) == data[10:20]
    assert fs.cat_file(f"{root}/r", start=-5) == data[-5:]
    assert fs.cat_file(f"{root}/r", start=len(data) + 3) == b""
    got = fs.cat_ranges(
        [f"{root}/r", f"{root}/r", f"{root}/s", f"{root}/r", f"{root}/s"],
        [0, 1000, 1, -10, 3],
        [5, 9000, None, None, 100],
    )
    assert got == [data[0:5], data[1000:9000], b"hort", data[-10:], b"rt"]
    got = fs.cat_ranges([f"{root}/r", f"{root}/missing"], 0, 4)
    assert got[0] == data[:4] and isinstance(got[1], FileNotFoundError)


def test_get_and_put_trees_and_lists(fs, root, tmp_path: Path, monkeypatch) -> None:
    source = tmp_path / "up"
    (source / "sub" / "deeper").mkdir(parents=True)
    files = {"x.bin": b"x" * 3000, "sub/y": b"yy", "sub/deeper/z": b""}
    for name, data in files.items():
        (source / name).write_bytes(data)
    uploads = []
    upload_many = fs.client.upload_many_async

    async def spy(pairs, **kwargs):
        uploads.append(list(pairs))
        return await upload_many(pairs, **kwargs)

    monkeypatch.setattr(fs.client, "upload_many_async", spy)
    fs.put(str(source), f"{root}/tree", recursive=True)
    assert len(uploads) == 1 and len(uploads[0]) == 3  # one batch of the engine
    assert fs.find(f"{root}/tree") == sorted(f"{root}/tree/{name}" for name in files)
    assert fs.cat_file(f"{root}/tree/x.bin") == files["x.bin"]

    down = tmp_path / "down"
    fs.get(f"{root}/tree", str(down), recursive=True)
    got = {str(p.relative_to(down)): p.read_bytes() for p in down.rglob("*") if p.is_file()}
    assert got == files

    listed = tmp_path / "listed"
    fs.get([f"{root}/tree/x.bin", f"{root}/tree/sub/y"], [str(listed / "1"), str(listed / "2")])
    assert (listed / "1").read_bytes() == files["x.bin"] and (listed / "2").read_bytes() == b"yy"
    with pytest.raises(FileNotFoundError):
        fs.get(f"{root}/tree/missing", str(tmp_path / "nothing"))


def test_cp_file_copies_inside_the_store_and_rm_deletes_in_batches(fs, root, monkeypatch) -> None:
    fs.pipe({f"{root}/src/{i:02}": b"%d" % i for i in range(30)})
    fs.cp_file(f"{root}/src/07", f"{root}/copy")
    assert fs.cat_file(f"{root}/copy") == b"7"
    fs.copy(f"{root}/src", f"{root}/dst", recursive=True)
    assert len(fs.find(f"{root}/dst")) == 30
    deletes = []
    delete_many = fs.client.delete_many_async

    async def spy(urls):
        deletes.append(list(urls))
        return await delete_many(urls)

    monkeypatch.setattr(fs.client, "delete_many_async", spy)
    fs.rm(f"{root}/src", recursive=True)
    assert [len(batch) for batch in deletes] == [30]
    assert not fs.exists(f"{root}/src")
    assert fs.exists(f"{root}/dst/29")


def test_pipe_file_and_put_file_create_refuse_an_existing_key(fs, root, tmp_path) -> None:
    fs.pipe_file(f"{root}/p", b"first", mode="create")
    with pytest.raises(FileExistsError):
        fs.pipe_file(f"{root}/p", b"second", mode="create")
    local = tmp_path / "local"
    local.write_bytes(b"third")
    with pytest.raises(FileExistsError):
        fs.put_file(str(local), f"{root}/p", mode="create")
    with pytest.raises(FileExistsError):
        fs.put(str(local), f"{root}/p", mode="create")
    assert fs.cat_file(f"{root}/p") == b"first"
    fs.put_file(str(local), f"{root}/p")  # overwriting, by default
    assert fs.cat_file(f"{root}/p") == b"third"


# -- files -------------------------------------------------------------------------------


def test_open_reads_with_random_access(fs, root) -> None:
    data = bytes(range(251)) * 20_000  # 5 MB, not a multiple of anything
    fs.pipe(f"{root}/big", data)
    with fs.open(f"{root}/big", "rb", block_size=1 << 20) as f:
        assert f.size == len(data)
        assert f.read(100) == data[:100]
        f.seek(3_000_000)
        assert f.read(10) == data[3_000_000:3_000_010]
        f.seek(-7, 2)
        assert f.read() == data[-7:]
        f.seek(0)
        assert f.read() == data
    # zipfile seeks to the end and back, as pyarrow's Parquet reader does.
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("inner.txt", b"zipped" * 1000)
    fs.pipe(f"{root}/z.zip", buffer.getvalue())
    with fs.open(f"{root}/z.zip", "rb") as f, zipfile.ZipFile(f) as archive:
        assert archive.read("inner.txt") == b"zipped" * 1000


def test_a_sequential_reader_reads_ahead_more_and_more(fs, root) -> None:
    data = bytes(range(253)) * 100_000  # 25.3 MB
    fs.pipe(f"{root}/seq", data)
    with fs.open(f"{root}/seq", "rb", block_size=1 << 20) as f:
        fetched = []
        fetch = f.cache.fetcher

        def counted(start, end):
            fetched.append(end - start)
            return fetch(start, end)

        f.cache.fetcher = counted
        got = b"".join(iter(lambda: f.read(1 << 20), b""))
        assert got == data
        # 1 MiB reads: the read-ahead doubles from 1 MiB (fsspec's "readahead" cache would
        # fetch 13 times here, 2 MiB at a time).
        assert len(fetched) <= 6, fetched
        assert fetched[:4] == sorted(fetched[:4]) and fetched[3] >= 8 << 20, fetched
        # A jump back reads a block again, not a growing window.
        f.seek(100)
        assert f.read(10) == data[100:110]
        assert fetched[-1] <= 2 << 20


def test_a_read_larger_than_a_block_fetches_nothing_ahead(fs, root) -> None:
    # pyarrow reads a Parquet file's column chunks so: a window past them would only be
    # held beside pyarrow's own copy.
    data = bytes(range(251)) * 40_000  # 10 MB
    fs.pipe(f"{root}/big-reads", data)
    with fs.open(f"{root}/big-reads", "rb", block_size=1 << 20) as f:
        fetched = []
        fetch = f.cache.fetcher

        def counted(start, end):
            fetched.append((start, end))
            return fetch(start, end)

        f.cache.fetcher = counted
        f.seek(1000)
        end = 1000 + (3 << 20)
        assert f.read(3 << 20) == data[1000:end]
        assert fetched == [(1000, end)]
        # A small read on from there is sequential: it reads ahead again, more than a block.
        assert f.read(10) == data[end : end + 10]
        assert fetched[-1][0] == end and fetched[-1][1] - end > 1 << 20, fetched


def test_an_open_file_is_pinned_to_the_version_it_saw(fs, root) -> None:
    fs.pipe(f"{root}/v", b"A" * 3_000_000)
    with fs.open(f"{root}/v", "rb", block_size=1 << 20) as f:
        assert f.read(10) == b"A" * 10
        fs.pipe(f"{root}/v", b"B" * 3_000_000)  # replaced while open
        f.seek(2_500_000)
        with pytest.raises(parabyte.ObjectChangedError):
            f.read(10)
    with fs.open(f"{root}/v", "rb") as f:
        assert f.read(10) == b"B" * 10


def unfinished_uploads(s3, path: str) -> list[str]:
    bucket, _, key = path.partition("/")
    listed = s3.list_multipart_uploads(Bucket=bucket, Prefix=key)
    return [upload["Key"] for upload in listed.get("Uploads", [])]


def test_open_for_writing_streams_parts_and_stores_on_close_only(fs, root, s3) -> None:
    data = bytes(range(256)) * 50_000  # 12.8 MB: two parts of 8 MiB
    with fs.open(f"{root}/w", "wb", block_size=5 << 20) as f:
        for offset in range(0, len(data), 1 << 20):
            f.write(data[offset : offset + (1 << 20)])
        # What was written went on to the upload, a block at a time: not held here.
        assert f.buffer.tell() < 5 << 20
        assert not fs.exists(f"{root}/w")  # nothing stored before close
    assert boto3_bytes(s3, f"{root}/w") == data
    bucket, _, key = f"{root}/w".partition("/")
    assert s3.head_object(Bucket=bucket, Key=key)["ETag"].endswith('-2"')  # multipart

    class Failed(Exception):
        pass

    with pytest.raises(Failed), fs.open(f"{root}/failed", "wb", block_size=5 << 20) as f:
        f.write(data)  # past a part: the multipart upload has begun
        raise Failed
    assert not fs.exists(f"{root}/failed")
    assert unfinished_uploads(s3, f"{root}/failed") == []  # aborted, its parts gone

    f = fs.open(f"{root}/abandoned", "wb", block_size=5 << 20)
    f.write(data)
    del f
    gc.collect()
    assert not fs.exists(f"{root}/abandoned")
    assert unfinished_uploads(s3, f"{root}/abandoned") == []


def test_open_xb_refuses_an_existing_key(fs, root) -> None:
    with fs.open(f"{root}/x", "xb") as f:
        f.write(b"mine")
    with pytest.raises(FileExistsError):
        fs.open(f"{root}/x", "xb")
    # Another writer got there between open and close: the store keeps theirs.
    f = fs.open(f"{root}/y", "xb")
    f.write(b"late")
    fs.pipe(f"{root}/y", b"theirs")
    with pytest.raises(FileExistsError):
        f.close()
    assert fs.cat_file(f"{root}/y") == b"theirs"


# -- errors ------------------------------------------------------------------------------


def test_errors_are_the_ones_fsspec_users_catch(fs, store, root) -> None:
    with pytest.raises(FileNotFoundError, match="missing"):
        fs.cat_file(f"{root}/missing")
    with pytest.raises(FileNotFoundError):
        fs.open(f"{root}/missing", "rb")
    with pytest.raises(FileNotFoundError):
        fs.info(f"no-such-bucket-{uuid.uuid4().hex[:6]}/key")
    wrong = ParabyteFileSystem(
        **{**store.client_options(), "secret_access_key": "wrong"}, skip_instance_cache=True
    )
    fs.pipe_file(f"{root}/secret", b"s")
    with pytest.raises(PermissionError):
        wrong.cat_file(f"{root}/secret")
    with pytest.raises(NotImplementedError):
        fs.open(f"{root}/a", "ab")
