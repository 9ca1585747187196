"""What Python users expect of any library: coroutines, fork safety, values that print,
pickle and compare like Python's own, and a module that behaves under `import *`."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import multiprocessing
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import parabyte
from conftest import LARGE_SIZE, SMALL_SIZE, Store

# Far above what any awaited event needs; only a broken program waits this long.
EVENT_LIMIT_S = 20


def test_async_methods_are_coroutines(client: parabyte.Client, store: Store, tmp_path: Path):
    async def main() -> None:
        # `create_task` refused the native awaitables: "a coroutine was expected".
        download = asyncio.create_task(
            client.download_async(store.url("large/big.bin"), tmp_path / "big.bin")
        )
        many = asyncio.create_task(
            client.download_many_async([store.url("small/00003.bin")], tmp_path / "many")
        )
        fetch = asyncio.create_task(client.get_bytes_async(store.url("small/00004.bin")))
        module_level = asyncio.create_task(
            parabyte.get_bytes_async(store.url("small/00004.bin"), **store.client_options())
        )
        gathered = asyncio.create_task(
            client.get_bytes_many_async([store.url("small/00004.bin")] * 2)
        )
        summary, batch, buffer, again, both = await asyncio.gather(
            download, many, fetch, module_level, gathered
        )
        assert summary.bytes == LARGE_SIZE and batch.objects == 1
        assert bytes(buffer) == bytes(again) == store.stored("small/00004.bin")
        assert [bytes(one) for one in both] == [bytes(buffer)] * 2

    for method in (
        "download_async",
        "download_many_async",
        "get_bytes_async",
        "get_bytes_many_async",
    ):
        assert inspect.iscoroutinefunction(getattr(parabyte.Client, method)), method
    asyncio.run(main())


def _fetch_in_child(client, url, options, listing, sizes) -> None:
    try:
        next(listing)
        refused = ""
    except parabyte.InvalidInputError as error:
        refused = str(error)
    sizes.put((len(client.get_bytes(url)), len(parabyte.get_bytes(url, **options)), refused))


def test_a_forked_child_gets_its_own_runtime_and_connections(client: parabyte.Client, store: Store):
    url = store.url("small/00005.bin")
    # Used before the fork: the runtime runs and the pools hold connections.
    assert len(client.get_bytes(url)) == SMALL_SIZE
    assert len(parabyte.get_bytes(url, **store.client_options())) == SMALL_SIZE
    listing = client.list(store.url("small/"))
    fork = multiprocessing.get_context("fork")
    sizes = fork.Queue()
    child = fork.Process(
        target=_fetch_in_child, args=(client, url, store.client_options(), listing, sizes)
    )
    child.start()
    child.join(EVENT_LIMIT_S)
    if child.exitcode is None:  # hung: the parent's runtime has no threads in the child
        child.kill()
        child.join()
        pytest.fail("the forked child hung")
    assert child.exitcode == 0
    sizes_in_child = sizes.get(timeout=EVENT_LIMIT_S)
    # A listing started before the fork says so instead of waiting for the parent's tasks.
    assert sizes_in_child[:2] == (SMALL_SIZE, SMALL_SIZE)
    assert "before os.fork()" in sizes_in_child[2]
    assert next(listing).key.startswith("small/")
    # The parent's own client still works.
    assert len(client.get_bytes(url)) == SMALL_SIZE


def test_listed_objects_are_values(client: parabyte.Client, store: Store):
    [entry] = [e for e in client.list(store.url("small/00007.bin")) if not e.is_prefix]
    assert entry.key == "small/00007.bin"
    modified = entry.last_modified
    assert isinstance(modified, datetime.datetime)
    assert modified.utcoffset() == datetime.timedelta(0)
    now = datetime.datetime.now(datetime.UTC)
    assert now - datetime.timedelta(days=1) < modified <= now + datetime.timedelta(minutes=5)
    assert pickle.loads(pickle.dumps(entry)) == entry
    [same] = [e for e in client.list(store.url("small/00007.bin")) if not e.is_prefix]
    assert same == entry and hash(same) == hash(entry) and same is not entry
    as_dict = entry.to_dict()
    assert as_dict["key"] == "small/00007.bin" and as_dict["size"] == SMALL_SIZE
    assert as_dict["last_modified"] == modified
    assert parabyte.ObjectInfo(**as_dict) == entry
    # Python's syntax, never Rust's `Some("...")`.
    assert repr(entry).startswith(f"ObjectInfo(bucket='{store.bucket}', key='small/00007.bin'")
    assert "Some(" not in repr(entry)


def test_results_are_values(client: parabyte.Client, store: Store, tmp_path: Path):
    item = parabyte.Item(store.url("small/00006.bin"), "x/y.bin", size=SMALL_SIZE)
    assert repr(item) == (
        f"Item(source='{store.url('small/00006.bin')}', destination=PosixPath('x/y.bin'), "
        f"size={SMALL_SIZE}, etag=None)"
    )
    assert pickle.loads(pickle.dumps(item)) == item
    assert item.to_dict()["destination"] == Path("x/y.bin")

    missing = parabyte.Item(store.url("small/missing.bin"), size=3)
    summary = client.download_many([item, missing], tmp_path)
    assert (summary.objects, summary.failed) == (1, 1)
    copy = pickle.loads(pickle.dumps(summary))
    assert copy == summary and copy.requests == summary.requests
    assert copy.to_dict() | {"failures": None} == summary.to_dict() | {"failures": None}
    # The repr shows every field, the failures and how objects were checked included.
    shown = repr(summary)
    for field in summary.to_dict():
        assert f"{field}=" in shown, field
    assert "Failure(source=" in shown and "Verified(" in shown
    [failure] = copy.failures
    assert failure.source == store.url("small/missing.bin")
    assert isinstance(failure.exception, parabyte.NotFoundError)
    assert str(failure.exception) == failure.error
    as_dict = summary.to_dict()
    assert as_dict["requests"] == {
        "get": summary.requests.get,
        "list": 0,
        "head": 0,
        "put": 0,
        "multipart": 0,
        "copy": 0,
        "delete": 0,
    }
    assert as_dict["failures"][0]["source"] == store.url("small/missing.bin")
    assert "Some(" not in repr(summary) + repr(summary.failures)
    assert repr(failure).startswith(f"Failure(source='{store.url('small/missing.bin')}'")


def test_download_many_keeps_the_folders_of_keys(store: Store, tmp_path: Path):
    keys = store.keys("small/a/b")
    assert keys and all(key.count("/") >= 3 for key in keys)
    summary = parabyte.download_many([store.url(key) for key in keys], tmp_path)
    assert summary.objects == len(keys) and summary.ok
    for key in keys:
        assert (tmp_path / key).read_bytes() == store.stored(key)


def test_a_path_naming_a_directory_is_one(client: parabyte.Client, store: Store, tmp_path: Path):
    directory = tmp_path / "existing"
    directory.mkdir()
    client.download(store.url("small/00011.bin"), directory)
    assert (directory / "00011.bin").read_bytes() == store.stored("small/00011.bin")


def test_star_import_leaves_the_builtins_alone():
    script = (
        "from parabyte import *\nimport builtins\nassert list is builtins.list\nClient, download"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    assert set(parabyte.__all__) <= set(dir(parabyte))


def test_module_level_calls_reuse_a_client_per_options(store: Store):
    options = {**store.client_options(), "retries": 4}  # options no other test uses
    url = store.url("small/00012.bin")
    first = parabyte.download(url, None, **options)
    again = parabyte.download(url, None, **options)
    assert first.objects == again.objects == 1
    # A new client would open a connection of its own; the cached one reuses its pool.
    assert again.connections == 0


def test_a_buffer_reads_as_bytes_do(client: parabyte.Client, store: Store):
    url = store.url("large/big.bin")
    stored = store.stored("large/big.bin")[:64]
    buf = client.get_bytes(url, range=(0, 64))
    assert buf == stored and buf == bytearray(stored) and buf == memoryview(stored)
    assert buf != stored[:63] and buf != b"x" * 64 and buf != "text"
    assert buf[0] == stored[0] and buf[-1] == stored[-1]
    assert buf[:5] == stored[:5] and buf[10:20:3] == stored[10:20:3]
    with pytest.raises(IndexError):
        buf[64]
    assert hash(buf) == hash(stored) and buf in {stored}
    assert buf.decode("latin-1") == stored.decode("latin-1")
    # Pickled, as a multiprocessing pool returns it: a Buffer again, the same bytes.
    copy = pickle.loads(pickle.dumps(buf))
    assert isinstance(copy, parabyte.Buffer) and copy == buf


def test_a_client_pickles_as_its_options_and_never_with_its_keys(
    store: Store, monkeypatch: pytest.MonkeyPatch
):
    # Keys from the environment, as a worker process would find them too.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", store.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", store.secret_key)
    client = parabyte.Client(
        retries=2, bind=["127.0.0.1"], endpoint_url=store.endpoint, region=store.region
    )
    copy = pickle.loads(pickle.dumps(client))
    assert isinstance(copy, parabyte.Client) and copy is not client
    url = store.url("small/00003.bin")
    assert len(copy.get_bytes(url)) == SMALL_SIZE
    keyed = parabyte.Client(
        access_key_id="AKIDEXAMPLE", secret_access_key="a-secret-of-the-test", region="us-east-1"
    )
    with pytest.raises(TypeError, match="secret_access_key is not pickled") as refused:
        pickle.dumps(keyed)
    assert "a-secret-of-the-test" not in str(refused.value)


def test_help_explains_every_option_and_shows_the_real_keywords():
    keywords = inspect.signature(parabyte.Client).parameters
    assert "endpoint_url" in keywords and "ranges_per_object" in keywords
    for name in keywords:
        assert f"{name}" in (parabyte.Client.__doc__ or ""), name


def test_durations_and_ranges_as_people_write_them(client: parabyte.Client, store: Store):
    for timeout in (5, 0.5, "5s", "500ms", "2m", "30"):
        parabyte.Client(timeout=timeout, **store.client_options())
    with pytest.raises(parabyte.InvalidInputError, match=r'timeout="five" is no duration'):
        parabyte.Client(timeout="five")
    url = store.url("large/big.bin")
    stored = store.stored("large/big.bin")
    assert client.get_bytes(url, range=[3, 9]) == stored[3:9]
    assert [bytes(b) for b in client.get_bytes(url, ranges=[[0, 2], (4, 5)])] == [
        stored[0:2],
        stored[4:5],
    ]
    with pytest.raises(parabyte.InvalidInputError, match=r"two integers.*3 were given"):
        client.get_bytes(url, range=[1, 2, 3])


def test_get_bytes_takes_ranges(client: parabyte.Client, store: Store):
    url = store.url("large/big.bin")
    stored = store.stored("large/big.bin")
    assert bytes(client.get_bytes(url, range=(1000, 1100))) == stored[1000:1100]
    # An end past the object is cut at its end, as a slice is.
    assert bytes(client.get_bytes(url, range=(LARGE_SIZE - 10, LARGE_SIZE + 50))) == stored[-10:]
    asked = [(0, 1), (5 << 20, (5 << 20) + 4096), (17, 4113), (LARGE_SIZE - 1, LARGE_SIZE)]
    buffers = client.get_bytes(url, ranges=asked)
    assert [bytes(b) for b in buffers] == [stored[start:end] for start, end in asked]
    # Through a presigned URL, and from the module level and asyncio alike.
    assert bytes(parabyte.get_bytes(store.presigned_url, range=(7, 70))) == stored[7:70]
    fetched = asyncio.run(client.get_bytes_async(url, ranges=[(3, 9)]))
    assert [bytes(b) for b in fetched] == [stored[3:9]]
    for past in ([(0, 10), (LARGE_SIZE, LARGE_SIZE + 1)], [(LARGE_SIZE + 5, LARGE_SIZE + 9)]):
        with pytest.raises(parabyte.InvalidInputError, match="starts past its end"):
            client.get_bytes(url, ranges=past)
    with pytest.raises(parabyte.InvalidInputError, match="holds no byte"):
        client.get_bytes(url, range=(10, 10))
    with pytest.raises(parabyte.InvalidInputError, match="not both"):
        client.get_bytes(url, range=(0, 1), ranges=[(0, 1)])
