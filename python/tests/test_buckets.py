"""`make_bucket` and `remove_bucket`, as `parabyte mb` and `rb`: a bucket made once (again
is raised), a full one refused and kept, and with `force=True` emptied, then removed."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import parabyte
from conftest import Store


def test_a_bucket_is_made_once_and_removed_when_empty_or_forced(
    client: parabyte.Client, store: Store
):
    name = f"pytest-mb-{uuid.uuid4().hex[:12]}"
    url = f"s3://{name}"
    parabyte.make_bucket(url, **store.client_options())
    assert (store.root / name).is_dir()
    with pytest.raises(parabyte.Error, match=f"bucket '{name}' already exists"):
        client.make_bucket(url)
    client.put_bytes(f"{url}/a", b"a")
    client.put_bytes(f"{url}/dir/b", b"b")
    with pytest.raises(parabyte.Error, match=r"not empty.*force=True"):
        parabyte.remove_bucket(url, **store.client_options())
    assert (store.root / name / "dir" / "b").read_bytes() == b"b"
    assert parabyte.remove_bucket(url, force=True, **store.client_options()) == 2
    assert not (store.root / name).exists()
    with pytest.raises(parabyte.NotFoundError):
        client.remove_bucket(url)


def test_the_awaitables_make_and_remove_a_bucket(client: parabyte.Client, store: Store):
    name = f"pytest-mb-{uuid.uuid4().hex[:12]}"
    url = f"s3://{name}"

    async def both() -> int:
        await client.make_bucket_async(url)
        assert (store.root / name).is_dir()
        return await parabyte.remove_bucket_async(url, **store.client_options())

    assert asyncio.run(both()) == 0
    assert not (store.root / name).exists()
    with pytest.raises(parabyte.InvalidInputError, match="names a key"):
        client.make_bucket(f"{url}/key")
