"""`sync`, `move`, `delete` and `delete_many` from Python against the real server: what
each sends, skips and deletes, counted in the summary and checked in the store."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import parabyte
from conftest import Store


@pytest.fixture(autouse=True)
def _leave_the_bucket_as_found(client: parabyte.Client, store: Store):
    """The bucket is shared: other tests list its top level."""
    yield
    for prefix in ("py-sync/", "py-moved/", "py-del/"):
        client.remove(store.url(prefix), recursive=True)


def _tree(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def test_sync_sends_what_changed_and_deletes_what_the_source_lacks(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    up = tmp_path / "up"
    _tree(up, {"a-b": b"1", "a/b": b"22", "a/c/d": b"333", "z": b"4444"})
    first = client.sync(up, store.url("py-sync/"))
    assert (first.objects, first.requests.put) == (4, 4)
    again = client.sync(str(up), store.url("py-sync/"))
    assert (again.objects, again.skipped, again.requests.put) == (0, 4, 0)
    (up / "a/b").write_bytes(b"grown")
    (up / "z").unlink()
    dry = client.sync(up, store.url("py-sync/"), delete=True, dry_run=True)
    assert (dry.objects, dry.deleted, dry.requests.put) == (1, 1, 0)
    assert store.keys("py-sync/") == [f"py-sync/{k}" for k in ("a-b", "a/b", "a/c/d", "z")]
    done = client.sync(up, store.url("py-sync/"), delete=True, compare="size_only")
    assert (done.objects, done.deleted, done.requests.delete) == (1, 1, 1)
    assert store.keys("py-sync/") == [f"py-sync/{k}" for k in ("a-b", "a/b", "a/c/d")]
    assert store.stored("py-sync/a/b") == b"grown"
    down = tmp_path / "down"
    fetched = asyncio.run(client.sync_async(store.url("py-sync/"), down))
    assert (fetched.objects, fetched.requests.get) == (3, 3)
    assert (down / "a/c/d").read_bytes() == b"333"
    unchanged = client.sync(store.url("py-sync/"), down, compare="checksum")
    assert (unchanged.skipped, unchanged.requests.get, unchanged.requests.head) == (3, 0, 0)


def test_sync_keywords_say_what_to_pass(client: parabyte.Client, store: Store, tmp_path: Path):
    with pytest.raises(ValueError, match="size_only"):
        client.sync(tmp_path, store.url("x/"), compare="sizes")
    with pytest.raises(ValueError, match="delete=True"):
        client.sync(tmp_path, store.url("x/"), max_delete=3)
    with pytest.raises(TypeError, match="did you mean 'delete'"):
        client.sync(tmp_path, store.url("x/"), delet=True)
    with pytest.raises(parabyte.InvalidInputError, match="s3://"):
        client.sync(tmp_path, tmp_path / "elsewhere")


def test_move_deletes_each_source_that_arrived(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    _tree(tmp_path / "out", {"one": b"1", "sub/two": b"2"})
    summary = client.move(tmp_path / "out", store.url("py-moved/"))
    assert summary.objects == 2
    assert store.keys("py-moved/") == ["py-moved/one", "py-moved/sub/two"]
    assert not (tmp_path / "out/one").exists() and not (tmp_path / "out/sub/two").exists()
    back = asyncio.run(client.move_async(store.url("py-moved/one"), tmp_path / "back"))
    assert back.objects == 1 and (tmp_path / "back").read_bytes() == b"1"
    assert store.keys("py-moved/") == ["py-moved/sub/two"]


def test_sync_deletes_nothing_from_an_empty_or_unread_source(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    up = tmp_path / "up"
    _tree(up, {"a": b"1", "b": b"2"})
    client.sync(up, store.url("py-sync/"))
    empty = tmp_path / "empty"
    empty.mkdir()
    kept = client.sync(empty, store.url("py-sync/"), delete=True)
    assert (kept.deleted, kept.failed) == (0, 1)
    assert "nothing was deleted" in str(kept.failures[0].error)
    (up / "b").unlink()
    os.mkfifo(up / "pipe")
    refused = client.sync(up, store.url("py-sync/"), delete=True)
    assert refused.deleted == 0 and refused.failed == 2, refused.failures
    assert store.keys("py-sync/") == ["py-sync/a", "py-sync/b"]
    # A link is passed over, not a failure: the rest of what the source lacks goes.
    (up / "pipe").unlink()
    (up / "link").symlink_to(tmp_path)
    passed = client.sync(up, store.url("py-sync/"), delete=True)
    assert (passed.deleted, passed.failed, passed.skipped) == (1, 0, 2), passed.failures
    assert store.keys("py-sync/") == ["py-sync/a"]
    emptied = client.sync(empty, store.url("py-sync/"), delete=True, delete_if_source_empty=True)
    assert (emptied.deleted, emptied.failed) == (1, 0)
    assert store.keys("py-sync/") == []
    with pytest.raises(ValueError, match="delete=True"):
        client.sync(empty, store.url("py-sync/"), delete_if_source_empty=True)


def test_a_move_onto_itself_is_refused(client: parabyte.Client, store: Store, tmp_path: Path):
    client.put_bytes(store.url("py-moved/k"), b"only copy")
    for destination in (store.url("py-moved/k"), store.url("py-moved/")):
        with pytest.raises(parabyte.InvalidInputError, match="onto itself"):
            client.move(store.url("py-moved/k"), destination)
    (tmp_path / "f").write_bytes(b"only copy")
    with pytest.raises(parabyte.InvalidInputError, match="onto itself"):
        client.move(tmp_path / "f", tmp_path)
    assert store.stored("py-moved/k") == b"only copy"
    assert (tmp_path / "f").read_bytes() == b"only copy"


def test_delete_and_delete_many(client: parabyte.Client, store: Store, tmp_path: Path):
    for name in ("a", "b", "c"):
        client.put_bytes(store.url(f"py-del/{name}"), name.encode())
    one = client.delete(store.url("py-del/a"))
    assert (one.deleted, one.requests.delete) == (1, 1)
    many = asyncio.run(client.delete_many_async([store.url("py-del/b"), store.url("py-del/c")]))
    assert (many.deleted, many.requests.delete, many.failed) == (2, 1, 0)
    assert store.keys("py-del/") == []
    with pytest.raises(parabyte.NotFoundError):
        client.delete("s3://parabyte-no-such-bucket-here/k")
