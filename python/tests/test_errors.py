"""The exception tree: core error kinds as parabyte errors and their built-in counterparts."""

from __future__ import annotations

from pathlib import Path

import pytest

import parabyte
from conftest import Store


def test_a_missing_key_is_file_not_found(client: parabyte.Client, store: Store, tmp_path: Path):
    with pytest.raises(FileNotFoundError) as raised:
        client.download(store.url("small/no-such-key"), tmp_path / "x")
    assert isinstance(raised.value, parabyte.NotFoundError)
    assert "small/no-such-key" in str(raised.value)
    assert not (tmp_path / "x").exists()
    with pytest.raises(parabyte.NotFoundError):
        client.get_bytes(store.url("small/no-such-key"))


def test_a_missing_bucket_is_file_not_found(client: parabyte.Client, tmp_path: Path):
    with pytest.raises(FileNotFoundError) as raised:
        client.download("s3://no-such-bucket-here/", tmp_path)
    # The CLI's message says --endpoint-url/--region; Python's names the keywords.
    assert "endpoint_url=/region=" in str(raised.value)
    assert "--" not in str(raised.value)


def test_a_prefix_named_without_its_slash_says_the_keyword_to_add(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    with pytest.raises(parabyte.Error) as raised:
        client.download(store.url("small"), tmp_path / "x")
    # The CLI says "or --recursive"; Python names the keyword.
    assert "recursive=True" in str(raised.value)
    assert "--" not in str(raised.value)


def test_bad_credentials_are_a_permission_error(store: Store, tmp_path: Path):
    options = {**store.client_options(), "secret_access_key": "not-the-secret"}
    with pytest.raises(PermissionError) as raised:
        parabyte.download(store.url("large/big.bin"), tmp_path / "x", **options)
    assert isinstance(raised.value, parabyte.CredentialsError)
    assert isinstance(raised.value, parabyte.Error)
    with pytest.raises(parabyte.CredentialsError):
        list(parabyte.list(store.url("small/"), **options))


def test_bad_input_is_a_value_error(client: parabyte.Client, tmp_path: Path):
    with pytest.raises(ValueError, match="unsupported scheme"):
        client.download("gs://bucket/key", tmp_path)
    with pytest.raises(parabyte.InvalidInputError, match="^workers must be at least 1$"):
        parabyte.Client(workers=0)
    with pytest.raises(parabyte.InvalidInputError, match="8MiB"):
        parabyte.Client(part_size="eight megs")
    with pytest.raises(parabyte.InvalidInputError, match="together"):
        parabyte.Client(access_key_id="only-half")
    # Out-of-range timeouts were a Rust panic (PanicException) before they were refused.
    for timeout in [float("inf"), 1e30, float("nan"), -1.0, 0.0]:
        with pytest.raises(parabyte.InvalidInputError, match="timeout"):
            parabyte.Client(timeout=timeout)
    with pytest.raises(parabyte.InvalidInputError, match="not both"):
        parabyte.Client(ranges_per_object=4, threads=4)
    with pytest.raises(parabyte.InvalidInputError, match="^ranges_per_object must be"):
        parabyte.Client(threads=0)
    with pytest.raises(parabyte.InvalidInputError, match=r"^part_size=100 is too small"):
        parabyte.Client(part_size=100)


def test_failed_objects_are_raised_when_asked(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    items = [
        parabyte.Item(store.url("small/00003.bin"), "fine.bin"),
        parabyte.Item(store.url("small/00004.bin"), "../escapes.bin"),
        parabyte.Item(store.url("small/gone.bin"), "gone.bin", size=10),
    ]
    summary = client.download_many(items, tmp_path / "out")
    assert (summary.objects, summary.failed) == (1, 2)
    assert not summary.ok
    kinds = {failure.source: failure.exception for failure in summary.failures}
    assert kinds.keys() == {store.url("small/00004.bin"), store.url("small/gone.bin")}
    assert isinstance(kinds[store.url("small/00004.bin")], parabyte.InvalidInputError)
    assert isinstance(kinds[store.url("small/gone.bin")], FileNotFoundError)
    with pytest.raises(parabyte.TransferFailedError, match="2 of 3 objects failed") as raised:
        summary.raise_for_failures()
    assert raised.value.summary is summary
    assert len(raised.value.failures) == 2
    assert not (tmp_path / "escapes.bin").exists()


def test_bind_takes_local_addresses(store: Store, tmp_path: Path):
    options = {**store.client_options(), "bind": ["127.0.0.2", "127.0.0.3"]}
    data = parabyte.Client(**options).get_bytes(store.url("small/00003.bin"))
    assert bytes(data) == store.stored("small/00003.bin")
    with pytest.raises(parabyte.InvalidInputError, match=r'^bind= takes IP addresses.*"eth0"'):
        parabyte.Client(bind=["127.0.0.1", "eth0"])
