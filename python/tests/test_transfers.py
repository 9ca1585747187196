"""Downloads, batches, buffers, listings and summaries against a real server."""

from __future__ import annotations

import functools
import http.server
import itertools
import threading
from pathlib import Path

import pytest

import parabyte
from conftest import LARGE_SIZE, SMALL_COUNT, SMALL_SIZE, Store, files_in

# Far above what any awaited event needs; only a broken program waits this long.
EVENT_LIMIT_S = 20


def test_an_object_arrives_byte_for_byte(client: parabyte.Client, store: Store, tmp_path: Path):
    target = tmp_path / "big.bin"
    summary = client.download(store.url("large/big.bin"), target)
    assert target.read_bytes() == store.stored("large/big.bin")
    assert (summary.objects, summary.failed, summary.bytes) == (1, 0, LARGE_SIZE)
    # 8 MiB in the default 8 MiB parts: one GET, no probe, no listing.
    assert (summary.requests.get, summary.requests.list) == (1, 0)


def test_a_prefix_arrives_byte_for_byte_with_its_folders(store: Store, tmp_path: Path):
    summary = parabyte.download(store.url("small/"), tmp_path, **store.client_options())
    keys = store.keys("small")
    assert len(keys) == SMALL_COUNT
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [key.removeprefix("small/") for key in keys]
    for key in keys:
        assert (tmp_path / key.removeprefix("small/")).read_bytes() == store.stored(key)
    assert summary.objects == SMALL_COUNT and summary.bytes == SMALL_COUNT * SMALL_SIZE
    assert summary.requests.get == SMALL_COUNT and summary.requests.list >= 1
    assert summary.ok and summary.failures == []
    summary.raise_for_failures()


def test_summary_fields(store: Store, tmp_path: Path):
    fresh = parabyte.Client(**store.client_options())  # a shared one reuses its connections
    summary = fresh.download(store.url("small/a/"), tmp_path)
    assert summary.elapsed > 0
    assert summary.bytes_per_second > 0
    assert summary.connections >= 1
    assert summary.retries == 0
    verified = summary.verified
    assert verified.checksum + verified.md5 + verified.size_only == summary.objects
    assert "Summary(objects=" in repr(summary)


def test_download_many_with_known_sizes_sends_one_get_each(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    listed = [entry for entry in client.list(store.url("small/")) if not entry.is_prefix]
    items = [
        parabyte.Item(entry.url, f"out/{index}.bin", size=entry.size, etag=entry.etag)
        for index, entry in enumerate(listed)
    ]
    summary = client.download_many(items, tmp_path)
    assert summary.objects == SMALL_COUNT and summary.failed == 0
    # Sizes known: no probe, no listing, exactly one GET per object.
    assert (summary.requests.get, summary.requests.list) == (SMALL_COUNT, 0)
    for index, entry in enumerate(listed):
        assert (tmp_path / "out" / f"{index}.bin").read_bytes() == store.stored(entry.key)


def test_download_many_takes_listings_and_urls(store: Store, tmp_path: Path):
    entries = parabyte.list(store.url("small/a/b/"))
    summary = parabyte.download_many(entries, tmp_path)
    assert summary.objects == len(store.keys("small/a/b"))
    for key in store.keys("small/a/b"):
        assert (tmp_path / key).read_bytes() == store.stored(key)
    summary = parabyte.download_many([store.url("large/big.bin")], tmp_path)
    assert (tmp_path / "large/big.bin").read_bytes() == store.stored("large/big.bin")
    assert summary.requests.get == 1


def test_get_bytes_hands_over_one_buffer(client: parabyte.Client, store: Store):
    buffer = client.get_bytes(store.url("large/big.bin"))
    assert len(buffer) == LARGE_SIZE
    view = memoryview(buffer)
    assert view.readonly and view.nbytes == LARGE_SIZE
    assert view == store.stored("large/big.bin")
    assert bytes(buffer) == store.stored("large/big.bin")


def test_get_bytes_in_parallel_ranges(store: Store):
    # `threads` is the old name of `ranges_per_object`, still accepted.
    small_parts = parabyte.Client(**store.client_options(), part_size="1MiB", threads=4)
    buffer = small_parts.get_bytes(store.url("large/big.bin"))
    assert memoryview(buffer) == store.stored("large/big.bin")


def test_get_bytes_many_keeps_the_order_given_and_each_failure_in_its_place(
    client: parabyte.Client, store: Store
):
    listed = next(iter(client.list(store.url("large/"))))
    first, second = store.keys("small")[:2]
    sources = [
        store.url(second),
        listed,
        store.url("small/no-such-key"),
        parabyte.Item(store.url(first), size=SMALL_SIZE),
    ]
    fetched = client.get_bytes_many(sources, on_error="return")
    assert len(fetched) == 4
    assert bytes(fetched[0]) == store.stored(second)
    assert memoryview(fetched[1]) == store.stored("large/big.bin")
    assert isinstance(fetched[2], parabyte.NotFoundError) and "no-such-key" in str(fetched[2])
    assert bytes(fetched[3]) == store.stored(first)
    # By default the first failure is the call's.
    with pytest.raises(parabyte.NotFoundError, match="no-such-key"):
        parabyte.get_bytes_many(sources, **store.client_options())
    with pytest.raises(parabyte.InvalidInputError, match="on_error"):
        client.get_bytes_many(sources, on_error="ignore")  # type: ignore[call-overload]


def test_get_bytes_many_keeps_workers_objects_in_flight(tmp_path: Path):
    # Each request waits at the barrier until `workers` are in flight together: one object
    # at a time would break it (and fail the test); more than `workers` shows in the peak.
    workers = 3
    served = tmp_path / "served"
    served.mkdir()
    for index in range(2 * workers):
        (served / f"{index}.bin").write_bytes(bytes([index]) * (100 + index))
    together = threading.Barrier(workers, timeout=EVENT_LIMIT_S)
    lock = threading.Lock()
    in_flight = [0, 0]  # now, most at once

    class Gathering(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            with lock:
                in_flight[0] += 1
                in_flight[1] = max(in_flight[1], in_flight[0])
            try:
                together.wait()
                body = Path(self.translate_path(self.path)).read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
            finally:
                # Out of flight before the body goes: the client starts its next request
                # only once it has a whole body, and that must not find this one counted.
                with lock:
                    in_flight[0] -= 1
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Gathering, directory=served)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        urls = [f"{base}/{index}.bin" for index in range(2 * workers)]
        fetched = parabyte.Client(workers=workers).get_bytes_many(urls)
        server.shutdown()
    assert [bytes(buffer) for buffer in fetched] == [
        (served / f"{index}.bin").read_bytes() for index in range(2 * workers)
    ]
    assert in_flight[1] == workers


def test_listing_streams_every_key_across_pages(store: Store):
    paged = parabyte.Client(**store.client_options(), list_page_size=7, list_parallelism=1)
    entries = list(paged.list(store.url("small/")))
    assert [entry.key for entry in entries] == store.keys("small")
    assert all(entry.size == SMALL_SIZE and entry.etag for entry in entries)
    assert all(entry.last_modified and entry.last_modified.tzinfo for entry in entries)


def test_listing_one_level_shows_folders(client: parabyte.Client, store: Store):
    entries = list(client.list(store.url(""), recursive=False))
    assert [(entry.key, entry.is_prefix) for entry in entries] == [
        ("large/", True),
        ("small/", True),
    ]


def test_progress_reaches_the_totals(client: parabyte.Client, store: Store, tmp_path: Path):
    seen: list[parabyte.Progress] = []
    summary = client.download(store.url("small/"), tmp_path, progress=seen.append)
    assert seen, "the callback was never called"
    last = seen[-1]
    assert last.objects_done == last.objects_total == SMALL_COUNT
    assert last.bytes_done == last.bytes_total == summary.bytes
    assert all(a.bytes_done <= b.bytes_done for a, b in itertools.pairwise(seen))


def test_discard_fetches_and_keeps_nothing(client: parabyte.Client, store: Store):
    summary = client.download(store.url("large/big.bin"), None)
    assert summary.bytes == LARGE_SIZE


def test_options_are_the_cli_flags(store: Store):
    client = parabyte.Client(
        **store.client_options(),
        workers=2,
        ranges_per_object=2,
        part_size=1 << 20,
        max_requests=4,
        retries=1,
        timeout=5,
        path_style=True,
        verify=False,
    )
    summary = client.download(store.url("large/big.bin"), None)
    # A first part of 1 MiB, then the other 7 in two parts (two ranges at a time) of whole
    # MiBs; no HEAD for a checksum, since nothing is verified.
    assert LARGE_SIZE == 8 << 20
    assert (summary.requests.get, summary.requests.head) == (3, 0)
    assert summary.verified.size_only == 1


def test_a_presigned_url_arrives_in_parallel_ranges(store: Store, tmp_path: Path):
    # No credentials: the signature is in the URL, which must never show in the summary.
    anonymous = parabyte.Client(part_size="1MiB", ranges_per_object=4)
    summary = anonymous.download(store.presigned_url, tmp_path / "from-url.bin")
    assert (tmp_path / "from-url.bin").read_bytes() == store.stored("large/big.bin")
    # A first part of 1 MiB, then the other 7 in four parts (four ranges) of 2 MiB.
    assert summary.requests.get == 5
    buffer = anonymous.get_bytes(store.presigned_url)
    assert memoryview(buffer) == store.stored("large/big.bin")


def test_a_web_server_without_ranges_streams_as_one(tmp_path: Path):
    served = tmp_path / "served"
    served.mkdir()
    content = bytes(range(256)) * 4096  # 1 MiB
    (served / "file.bin").write_bytes(content)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=served)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/file.bin"
            client = parabyte.Client(part_size="256KiB")
            summary = client.download(url, f"{tmp_path}/out/")
            # Ranges are cut from the whole body it sends.
            slices = client.get_bytes(url, ranges=[(10, 20), (len(content) - 5, len(content))])
        finally:
            server.shutdown()
    assert (tmp_path / "out" / "file.bin").read_bytes() == content
    # The server ignores Range and answers 200 with everything: one request, one stream.
    assert summary.requests.get == 1 and summary.bytes == len(content)
    assert [bytes(b) for b in slices] == [content[10:20], content[-5:]]


def test_a_finished_download_is_skipped_unless_forced(store: Store, tmp_path: Path):
    client = parabyte.Client(**store.client_options())
    first = client.download(store.url("small/a/"), tmp_path)
    assert first.objects > 0 and first.skipped == 0
    again = client.download(store.url("small/a/"), tmp_path)
    assert (again.objects, again.skipped, again.requests.get) == (0, first.objects, 0)
    forced = parabyte.Client(**store.client_options(), force=True)
    fetched = forced.download(store.url("small/a/"), tmp_path)
    assert (fetched.objects, fetched.skipped) == (first.objects, 0)


def test_a_local_tree_is_copied_through_the_same_entry_point(tmp_path: Path):
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    (source / "a.bin").write_bytes(b"a" * 100)
    (source / "sub" / "b.bin").write_bytes(b"b" * 200)
    summary = parabyte.Client().download(str(source), tmp_path / "copy")
    assert (summary.objects, summary.bytes, summary.failed) == (2, 300, 0)
    assert (tmp_path / "copy" / "sub" / "b.bin").read_bytes() == b"b" * 200
    with pytest.raises(parabyte.InvalidInputError, match="needs a destination"):
        parabyte.Client().download(str(source), None)


def test_wildcards_and_filters_choose_objects(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    # `*` crosses "/"; paths start after the literal prefix's last "/"; filters see them.
    summary = client.download(store.url("small/a/*.bin"), tmp_path / "w", exclude=["b/*"])
    under_a = [key.removeprefix("small/a/") for key in store.keys("small/a")]
    assert files_in(tmp_path / "w") == [key for key in under_a if not key.startswith("b/")]
    assert summary.ok and summary.requests.list == 1
    # Every exclude before every include, as `--exclude '*' --include 'a/b/*'`.
    parabyte.download(
        store.url("small/"),
        tmp_path / "f",
        exclude=["*"],
        include=["a/b/*"],
        **store.client_options(),
    )
    assert files_in(tmp_path / "f") == [f"a/{key}" for key in under_a if key.startswith("b/")]
    # A pattern that matches nothing is a failure that says so, of the not-found kind.
    summary = client.download(store.url("small/*.gif"), tmp_path / "n")
    assert summary.failed == 1 and summary.objects == 0
    assert isinstance(summary.failures[0].exception, parabyte.NotFoundError)
    assert "no key matches this wildcard pattern" in str(summary.failures[0].exception)
    with pytest.raises(parabyte.InvalidInputError, match=r"pattern 'small/\[a'"):
        client.download(store.url("small/[a"), tmp_path / "bad")


def test_a_local_rerun_skips_files_of_the_same_size_and_time(tmp_path: Path):
    source = tmp_path / "source"
    source.mkdir()
    (source / "a.bin").write_bytes(b"a" * 100)
    first = parabyte.Client().download(str(source), tmp_path / "copy")
    assert (first.objects, first.skipped) == (1, 0)
    again = parabyte.Client().download(str(source), tmp_path / "copy")
    assert (again.objects, again.skipped, again.skipped_by_size_and_time) == (0, 1, 1)


def test_a_range_of_an_empty_object_is_no_bytes_not_the_error_document(
    client: parabyte.Client, store: Store
):
    # S3 answers a range of an empty object with 416 and an XML error document; before, that
    # document came back as the object's bytes.
    (store.root / store.bucket / "empty-object").write_bytes(b"")
    url = store.url("empty-object")
    assert bytes(client.get_bytes(url, range=(0, 10))) == b""
    assert [bytes(part) for part in client.get_bytes(url, ranges=[(0, 10)])] == [b""]
    assert bytes(client.get_bytes(url)) == b""
