"""Async variants, many threads at once, and Ctrl-C."""

from __future__ import annotations

import _thread
import asyncio
import functools
import http.server
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import parabyte
from conftest import (
    LARGE_SIZE,
    SMALL_COUNT,
    Store,
    files_in,
    only_resumable_parts,
    temporary_name,
)

# Far above what any awaited event needs; only a broken program waits this long.
EVENT_LIMIT_S = 20


def test_async_variants(client: parabyte.Client, store: Store, tmp_path: Path):
    async def main() -> None:
        summary = await client.download_async(store.url("large/big.bin"), tmp_path / "a.bin")
        assert summary.bytes == LARGE_SIZE
        buffer, summary = await asyncio.gather(
            client.get_bytes_async(store.url("large/big.bin")),
            parabyte.download_many_async([store.url("small/00003.bin")], tmp_path),
        )
        assert memoryview(buffer) == store.stored("large/big.bin")
        assert summary.objects == 1
        keys = [entry.key async for entry in client.list(store.url("small/"))]
        assert keys == store.keys("small")
        with pytest.raises(FileNotFoundError):
            await parabyte.download_async(store.url("no/such/key"), tmp_path / "missing")

    asyncio.run(main())
    assert (tmp_path / "a.bin").read_bytes() == store.stored("large/big.bin")


def _journaled(temp: Path) -> bool:
    """True once the temporary file's journal vouches for a finished part: what a later call
    resumes from."""
    try:
        return bool(os.getxattr(temp, "user.parabyte.journal"))
    except OSError:
        return False


def test_async_progress_and_cancellation(store: Store, tmp_path: Path):
    # 1 KiB parts, none grown (as many ranges as parts), one request at a time.
    slow = parabyte.Client(
        **store.client_options(), part_size=1024, ranges_per_object=8192, max_requests=1
    )
    seen: list[parabyte.Progress] = []

    async def main() -> None:
        task = asyncio.ensure_future(
            slow.download_async(
                store.url("large/big.bin"), tmp_path / "big.bin", progress=seen.append
            )
        )
        # Cancel once progress was reported and a part is kept for resuming.
        deadline = time.monotonic() + EVENT_LIMIT_S
        while not (seen and _journaled(tmp_path / temporary_name("big.bin"))):
            assert time.monotonic() < deadline, "no part was finished"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen and 0 < seen[-1].bytes_done < LARGE_SIZE
    assert only_resumable_parts(tmp_path, "big.bin"), files_in(tmp_path)
    # The same call again takes up from the parts already written.
    resumed = parabyte.Client(**store.client_options()).download(
        store.url("large/big.bin"), tmp_path / "big.bin"
    )
    assert resumed.bytes < LARGE_SIZE
    assert resumed.resumed == 1
    assert resumed.resumed_bytes == LARGE_SIZE - resumed.bytes
    assert resumed.to_dict()["resumed_bytes"] == resumed.resumed_bytes
    assert (tmp_path / "big.bin").read_bytes() == store.stored("large/big.bin")
    assert files_in(tmp_path) == ["big.bin"]


def test_many_threads_share_one_client(client: parabyte.Client, store: Store, tmp_path: Path):
    def fetch(index: int) -> bool:
        if index % 2:
            return memoryview(client.get_bytes(store.url("large/big.bin"))) == store.stored(
                "large/big.bin"
            )
        summary = client.download(store.url("small/"), tmp_path / str(index))
        return summary.objects == SMALL_COUNT

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(fetch, range(8)))


def test_the_gil_is_free_while_bytes_move(tmp_path: Path):
    # The web server runs on a Python thread of this process: the download can only get
    # its bytes while the calling thread has let go of the GIL.
    payload = os.urandom(LARGE_SIZE)
    (tmp_path / "big.bin").write_bytes(payload)
    serve_here = functools.partial(http.server.SimpleHTTPRequestHandler, directory=tmp_path)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), serve_here) as server:
        serving = threading.Thread(target=server.serve_forever)
        serving.start()
        try:
            url = f"http://127.0.0.1:{server.server_port}/big.bin"
            # Held GIL: the server never answers, and the read timeout fails the call.
            quick = parabyte.Client(timeout=5, retries=0)
            assert memoryview(quick.get_bytes(url)) == payload
        finally:
            server.shutdown()
            serving.join()


@pytest.fixture
def ctrl_c_raises():
    """Python raises KeyboardInterrupt on SIGINT only if SIGINT was not ignored when it
    started, and a job started in the background by a shell inherits it ignored (as CI
    jobs can be): install Python's own handler for the test."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_stops_a_long_download_and_the_next_call_resumes(store: Store, tmp_path: Path):
    # 8 MiB in 1 KiB parts one at a time: far longer than the test waits. As many ranges
    # per object as parts, so that none grows; one request at a time.
    slow = parabyte.Client(
        **store.client_options(), part_size=1024, ranges_per_object=8192, max_requests=1
    )
    target = tmp_path / "big.bin"

    def interrupt_once_bytes_flow(progress: parabyte.Progress) -> None:
        if progress.bytes_done > 0:
            _thread.interrupt_main()  # what Ctrl-C does: SIGINT's flag, for the main thread

    with pytest.raises(KeyboardInterrupt):
        slow.download(store.url("large/big.bin"), target, progress=interrupt_once_bytes_flow)
    assert only_resumable_parts(tmp_path, "big.bin"), files_in(tmp_path)
    parabyte.Client(**store.client_options()).download(store.url("large/big.bin"), target)
    assert target.read_bytes() == store.stored("large/big.bin")
    assert files_in(tmp_path) == ["big.bin"]
