"""Uploads from Python against the real server: a tree, one file, bytes from any buffer
without a copy, the async twins, the keywords, and the failures they raise. The server keeps
objects as plain files, which is what the tests compare against, byte for byte."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import parabyte
from conftest import Store
from parabyte import _keywords, _native

MIB = 1024 * 1024


def test_the_typed_upload_keywords_are_the_parsed_ones():
    assert set(_native.UPLOAD_KEYWORDS) == _keywords.UPLOAD_KEYWORDS
    assert set(parabyte.UploadOptions.__optional_keys__) == _keywords.UPLOAD_KEYWORDS


def test_a_tree_goes_up_each_file_under_its_path(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    files = {"a.txt": b"alpha", "sub/b.bin": os.urandom(3000), "sub/deeper/c.json": b"{}"}
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    summary = client.upload(tmp_path, store.url("py-tree/"), exclude=["*.json"])
    assert summary.objects == 2
    assert summary.requests.put == 2
    assert store.stored("py-tree/a.txt") == files["a.txt"]
    assert store.stored("py-tree/sub/b.bin") == files["sub/b.bin"]
    assert store.keys("py-tree/") == ["py-tree/a.txt", "py-tree/sub/b.bin"]


def test_links_in_a_tree_are_passed_over_unless_followed(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "b1").write_bytes(b"the blob")
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / "model.bin").symlink_to("../blobs/b1")
    passed = client.upload(tmp_path / "snap", store.url("py-links/"))
    assert (passed.objects, passed.skipped, passed.failed) == (0, 1, 0)
    followed = client.upload(tmp_path / "snap", store.url("py-links/"), follow_symlinks=True)
    assert (followed.objects, followed.failed) == (1, 0)
    assert store.stored("py-links/model.bin") == b"the blob"
    client.remove(store.url("py-links/"), recursive=True)


def test_one_file_goes_to_its_key_and_its_failure_is_raised(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    (tmp_path / "one.txt").write_bytes(b"one")
    client.upload(tmp_path / "one.txt", store.url("py-one/"))
    assert store.stored("py-one/one.txt") == b"one"
    with pytest.raises(parabyte.LocalFileError, match="missing.txt"):
        client.upload(tmp_path / "missing.txt", store.url("py-one/missing.txt"))


def test_bytes_from_any_buffer_go_up_whole_and_in_parts(store: Store):
    client = parabyte.Client(**store.client_options(), part_size="5MiB")
    big = bytearray(os.urandom(11 * MIB))
    for name, data in [("b", b"bytes"), ("v", memoryview(b"view")), ("big", big)]:
        summary = client.put_bytes(store.url(f"py-put/{name}"), data)
        assert summary.objects == 1
        assert store.stored(f"py-put/{name}") == bytes(data)
    # 11 MiB in parts of 5 MiB: three PUTs, and a create and a complete.
    assert (summary.requests.put, summary.requests.multipart) == (3, 2)
    assert summary.verified.checksum == 1


def test_no_clobber_keeps_what_is_there(client: parabyte.Client, store: Store):
    url = store.url("py-noclobber/k")
    client.put_bytes(url, b"first")
    summary = client.put_bytes(url, b"second", no_clobber=True)
    assert (summary.objects, summary.skipped) == (0, 1)
    assert store.stored("py-noclobber/k") == b"first"


def test_the_async_twins_do_what_the_sync_calls_do(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    (tmp_path / "f.txt").write_bytes(b"async")

    async def main() -> tuple[parabyte.Summary, parabyte.Summary]:
        return await asyncio.gather(
            client.upload_async(tmp_path / "f.txt", store.url("py-async/f.txt")),
            client.put_bytes_async(store.url("py-async/g"), b"gathered"),
        )

    first, second = asyncio.run(main())
    assert first.objects == second.objects == 1
    assert store.stored("py-async/f.txt") == b"async"
    assert store.stored("py-async/g") == b"gathered"


def test_keywords_are_checked(client: parabyte.Client, store: Store):
    with pytest.raises(TypeError, match="did you mean 'no_clobber'"):
        client.put_bytes(store.url("k"), b"x", no_clober=True)
    with pytest.raises(TypeError, match="'exclude'"):
        client.put_bytes(store.url("k"), b"x", exclude=["*"])
    with pytest.raises(ValueError, match="s3://bucket/key"):
        client.put_bytes("/tmp/not-a-url", b"x")
    with pytest.raises(ValueError, match="AES256"):
        client.put_bytes(store.url("k"), b"x", sse="DES")


def test_the_module_level_functions_take_client_options(store: Store, tmp_path: Path):
    (tmp_path / "m.txt").write_bytes(b"module")
    parabyte.upload(tmp_path / "m.txt", store.url("py-module/m.txt"), **store.client_options())
    parabyte.put_bytes(store.url("py-module/n"), b"n", **store.client_options())
    assert store.stored("py-module/m.txt") == b"module"
    assert store.stored("py-module/n") == b"n"


def test_a_copy_inside_the_store_moves_no_byte_through_python(
    client: parabyte.Client, store: Store
):
    client.put_bytes(store.url("py-copy/src/a"), b"alpha")
    client.put_bytes(store.url("py-copy/src/sub/b"), b"beta")
    summary = client.copy(store.url("py-copy/src"), store.url("py-copy/dst/"), recursive=True)
    assert (summary.objects, summary.requests.copy, summary.requests.get) == (2, 2, 0)
    assert store.stored("py-copy/dst/a") == b"alpha"
    assert store.stored("py-copy/dst/sub/b") == b"beta"
    one = asyncio.run(client.copy_async(store.url("py-copy/src/a"), store.url("py-copy/one")))
    assert one.objects == 1
    assert store.stored("py-copy/one") == b"alpha"
    with pytest.raises(parabyte.NotFoundError):
        client.copy(store.url("py-copy/missing"), store.url("py-copy/x"))
    with pytest.raises(ValueError, match="upload"):
        client.copy("/tmp/local", store.url("py-copy/x"))


def test_remove_deletes_what_it_names_and_what_the_filters_keep(
    client: parabyte.Client, store: Store
):
    for name in ["a.txt", "b.bin", "sub/c.txt"]:
        client.put_bytes(store.url(f"py-rm/{name}"), b"x")
    summary = client.remove(store.url("py-rm/"), recursive=True, exclude=["*.bin"])
    assert (summary.deleted, summary.requests.delete, summary.failed) == (2, 1, 0)
    assert store.keys("py-rm/") == ["py-rm/b.bin"]
    # Without recursive=True, "py-rm/" is the one key of that name: a tree is never removed.
    with pytest.raises(parabyte.NotFoundError, match="recursive=True"):
        client.remove(store.url("py-rm/"))
    with pytest.raises(parabyte.NotFoundError, match="py-rm/missing"):
        parabyte.remove(store.url("py-rm/missing"), **store.client_options())
    assert store.keys("py-rm/") == ["py-rm/b.bin"]
    asyncio.run(client.remove_async(store.url("py-rm/b.bin")))
    assert store.keys("py-rm/") == []


def test_upload_many_sends_each_file_to_its_key_and_reports_each_failure(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    (tmp_path / "a.txt").write_bytes(b"alpha")
    (tmp_path / "b.txt").write_bytes(b"beta")
    items = [
        (tmp_path / "a.txt", store.url("py-many/first.txt")),
        (str(tmp_path / "b.txt"), store.url("py-many/dir/")),
        (tmp_path / "missing.txt", store.url("py-many/missing.txt")),
    ]
    summary = client.upload_many(items)
    assert (summary.objects, summary.failed) == (2, 1)
    assert "missing.txt" in summary.failures[0].source
    assert store.stored("py-many/first.txt") == b"alpha"
    assert store.stored("py-many/dir/b.txt") == b"beta"
    again = asyncio.run(client.upload_many_async(items[:1], no_clobber=True))
    assert again.skipped == 1
    with pytest.raises(TypeError, match="'exclude'"):
        client.upload_many(items, exclude=["*"])


def test_a_copy_from_another_endpoint_streams_through_python(client: parabyte.Client, store: Store):
    # The same server under another name stands for another endpoint: nothing may be
    # copied inside a store then, so the bytes come through, one GET and one PUT.
    elsewhere = store.endpoint.replace("127.0.0.1", "localhost")
    across = parabyte.Client(**store.client_options(), source_endpoint_url=elsewhere)
    client.put_bytes(store.url("py-across/src/a"), b"alpha" * 1000)
    summary = across.copy(store.url("py-across/src/"), store.url("py-across/dst/"), recursive=True)
    requests = summary.requests
    assert (summary.objects, requests.copy, requests.get, requests.put) == (1, 0, 1, 1)
    assert store.stored("py-across/dst/a") == b"alpha" * 1000
    with pytest.raises(parabyte.InvalidInputError, match="within one store"):
        across.remove(store.url("py-across/"), recursive=True)
    client.remove(store.url("py-across/"), recursive=True)


def test_request_payer_is_a_client_option(store: Store):
    with pytest.raises(parabyte.InvalidInputError, match="requester"):
        parabyte.Client(**store.client_options(), request_payer="me")
    client = parabyte.Client(**store.client_options(), request_payer="requester")
    client.put_bytes(store.url("py-payer/k"), b"paid")
    assert store.stored("py-payer/k") == b"paid"
    client.remove(store.url("py-payer/k"))
