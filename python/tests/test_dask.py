"""`parabyte.dask` on a real `distributed.LocalCluster` (two worker processes, loopback only)
against the session's versitygw: a prefix arrives complete and byte-identical, key ranges
list exactly what the whole prefix lists, a worker killed mid-task (SIGKILL) still leaves
every object once under its final name and no temporary file, and a scheduler that cannot
be reached is a clear error, from Python and from the command line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")  # comes with distributed

from dask_cluster import local_cluster, worker_holding

import parabyte
import parabyte.dask
from conftest import Store, files_in

# Small tasks, so a small bucket still makes several of each kind.
TASK_BYTES = 16 << 10
EVENT_TIMEOUT_S = 60


def test_a_prefix_of_small_and_large_objects_arrives_whole(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    seen: list[parabyte.dask.ClusterProgress] = []
    summary = parabyte.dask.copy(
        store.url(""),
        str(tmp_path),
        cluster,
        task_bytes=TASK_BYTES,
        progress=seen.append,
        part_size="1MiB",
        **store.client_options(),
    )
    keys = store.keys("")
    assert files_in(tmp_path) == keys
    for key in keys:
        assert (tmp_path / key).read_bytes() == store.stored(key), key
    assert summary.ok and summary.objects == len(keys) and summary.failed == 0
    assert summary.bytes == sum(len(store.stored(key)) for key in keys)
    # Packed by bytes: 1 KiB objects sixteen to a task, the 8 MiB object alone.
    large = store.url("large/big.bin")
    assert summary.tasks == 1 + -(-(len(keys) - 1) // 16)
    took = [part for share in summary.workers.values() for part in share.took]
    assert sorted(took) == sorted(store.url(key) for key in keys)
    assert sum(share.tasks for share in summary.workers.values()) == summary.tasks
    assert sum(share.objects for share in summary.workers.values()) == len(keys)
    assert large in took
    assert seen and seen[-1].tasks_done == summary.tasks
    assert seen[-1].objects_done == len(keys)
    assert summary.requests.get >= len(keys)


def test_a_manifest_is_packed_by_bytes_and_names_its_bad_lines(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    listed = [entry for entry in parabyte.list(store.url("small/")) if not entry.is_prefix]
    # Both line forms; DEST_PATH given or left to the key's last segment, as `cp --manifest`.
    lines = [
        f"{entry.url}\tcopies/{entry.key}\t{entry.size}\t{entry.etag}"
        if index % 2
        else json.dumps({"source": entry.url, "size": entry.size, "etag": entry.etag})
        for index, entry in enumerate(listed)
    ]
    lines.insert(3, "s3://bucket/key - not-a-size")
    # A presigned URL keeps its signature on the way to the workers.
    big = len(store.stored("large/big.bin"))
    lines.append(f"{store.presigned_url}\tpresigned/big.bin\t{big}")
    manifest = tmp_path / "files.txt"
    manifest.write_text("\n".join(lines) + "\n")
    destination = tmp_path / "out"
    summary = parabyte.dask.copy(
        manifest,
        str(destination),
        cluster,
        task_bytes=TASK_BYTES,
        part_size="1MiB",
        **store.client_options(),
    )
    expected = {
        (f"copies/{entry.key}" if index % 2 else entry.key.rsplit("/", 1)[-1]): entry.key
        for index, entry in enumerate(listed)
    }
    expected["presigned/big.bin"] = "large/big.bin"
    assert files_in(destination) == sorted(expected)
    for path, key in expected.items():
        assert (destination / path).read_bytes() == store.stored(key), path
    # The bad line is named and the others went on.
    assert [failure.source for failure in summary.failures] == [f"{manifest}:4"]
    assert summary.objects == len(listed) + 1
    # Sizes known: one GET per small object and no probe; packed by bytes, not by count.
    assert len(listed) < summary.requests.get <= len(listed) + -(-big // (1 << 20))
    assert summary.tasks == 1 + -(-sum(entry.size for entry in listed) // TASK_BYTES)
    # The command line reads the same manifest on the cluster.
    scheduler = cluster.scheduler_info()["address"]
    flags = ["--endpoint-url", store.endpoint, "--region", store.region]
    again = tmp_path / "again"
    done = _cli(
        "cp", "--dask-scheduler", scheduler, *flags, "--manifest", str(manifest), str(again)
    )
    assert done.returncode == 1, done.stderr  # the bad line
    assert files_in(again) == sorted(expected)
    assert f"failed: {manifest}:4:" in done.stderr


MIB = 1 << 20


def test_a_large_object_is_split_across_tasks_and_checked_whole(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    big = len(store.stored("large/big.bin"))
    seen: list[parabyte.dask.ClusterProgress] = []
    summary = parabyte.dask.copy(
        store.url("large/"),
        str(tmp_path),
        cluster,
        task_bytes=3 * MIB,
        split_bytes=4 * MIB,
        part_size="1MiB",
        progress=seen.append,
        **store.client_options(),
    )
    # The pieces' bytes count as the object's, once each.
    assert (seen[-1].objects_done, seen[-1].objects_total) == (1, 1)
    assert seen[-1].bytes_done == seen[-1].bytes_total == big
    assert seen[-1].tasks_done == seen[-1].tasks_total == summary.tasks
    # Whole, and no piece or temporary file stays beside it.
    assert os.listdir(tmp_path) == ["big.bin"]
    assert (tmp_path / "big.bin").read_bytes() == store.stored("large/big.bin")
    url = store.url("large/big.bin")
    took = [str(part) for share in summary.workers.values() for part in share.took]
    pieces = [
        f"{url} bytes {start}..{min(start + 3 * MIB, big)}" for start in range(0, big, 3 * MIB)
    ]
    assert sorted(took) == sorted([url, *pieces])
    assert summary.tasks == len(pieces) + 1
    assert summary.objects == 1 and summary.failed == 0 and summary.resumed == 0
    # Every byte fetched once, by the pieces in 1 MiB parts: the task that assembles the
    # object sends no GET, and checks it whole (the store's checksum, else its MD5).
    assert summary.bytes == big
    assert summary.requests.get == big // MIB
    assert summary.verified.size_only == 0
    assert summary.verified.checksum + summary.verified.md5 == 1


def test_split_bytes_must_be_a_size(cluster: distributed.Client, store: Store):
    with pytest.raises(parabyte.InvalidInputError, match="split_bytes"):
        parabyte.dask.copy(store.url("large/"), "/unused", cluster, split_bytes=0)


def _big_item(store: Store, etag: str | None = None) -> tuple[parabyte.Item, int]:
    [info] = [
        entry for entry in parabyte.list(store.url("large/")) if entry.key.endswith("big.bin")
    ]
    return parabyte.Item(info.url, "big.bin", size=info.size, etag=etag or info.etag), info.size


def test_a_piece_changed_on_disk_fails_its_object_by_the_check(store: Store, tmp_path: Path):
    client = parabyte.Client(part_size="1MiB", **store.client_options())
    item, size = _big_item(store)
    starts = [0, 4 * MIB]
    for start in starts:
        client.download_piece(item, tmp_path, start, min(start + 4 * MIB, size))
    pieces = sorted(tmp_path.iterdir())
    assert len(pieces) == 2 and all(piece.name.startswith(".parabyte-") for piece in pieces)
    # One byte of the second piece's range changes on disk between the tasks (in both
    # files: the first holds no data there, and only what a piece fetched is taken).
    for piece in pieces:
        with piece.open("r+b") as file:
            file.seek(5 * MIB)
            byte = file.read(1)
            file.seek(5 * MIB)
            file.write(bytes([byte[0] ^ 0xFF]))
    assert client.adopt_pieces(item, tmp_path, starts) == size
    summary = client.download_many([item], tmp_path)
    assert summary.failed == 1 and summary.objects == 0
    [failure] = summary.failures
    assert failure.source == item.source
    assert "content check failed" in failure.error, failure.error
    # Caught without fetching again, and nothing is left under any name.
    assert summary.requests.get == 0
    assert os.listdir(tmp_path) == []


def test_the_assembling_download_fetches_what_no_piece_brought(store: Store, tmp_path: Path):
    client = parabyte.Client(part_size="1MiB", **store.client_options())
    item, size = _big_item(store)
    client.download_piece(item, tmp_path, 0, 3 * MIB)
    client.download_piece(item, tmp_path, 6 * MIB, size)
    # The middle piece never ran (its task failed, or it wrote on another host's disk).
    assert client.adopt_pieces(item, tmp_path, [0, 3 * MIB, 6 * MIB]) == size - 3 * MIB
    summary = client.download_many([item], tmp_path)
    assert summary.ok and summary.objects == 1
    assert summary.bytes == 3 * MIB and summary.requests.get == 3
    assert os.listdir(tmp_path) == ["big.bin"]
    assert (tmp_path / "big.bin").read_bytes() == store.stored("large/big.bin")


def test_a_piece_is_pinned_to_its_etag(store: Store, tmp_path: Path):
    client = parabyte.Client(part_size="1MiB", **store.client_options())
    item, _ = _big_item(store, etag='"0123456789abcdef0123456789abcdef"')
    with pytest.raises(parabyte.ObjectChangedError, match="big.bin"):
        client.download_piece(item, tmp_path, 0, 2 * MIB)
    assert os.listdir(tmp_path) == []


def test_each_worker_keeps_one_client_for_the_job(store: Store):
    # The command line passes `bind` as a list, and so may a user (`bind=["10.0.0.5"]`); a
    # list is no cache key, so without care every call would build its own client and
    # connection pool (100 module-level calls took 2.1 s instead of 0.07 s).
    options = {"bind": [], **store.client_options()}
    first = parabyte._client(dict(options))
    assert parabyte._client(dict(options)) is first


def test_worker_processes_on_one_host_share_its_cores(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    parabyte.dask.copy(
        store.url("small/00001.bin"), str(tmp_path), cluster, **store.client_options()
    )
    # Two worker processes here: each engine gets half the cores, not all of them.
    share = str(max(1, len(os.sched_getaffinity(0)) // 2))
    threads = cluster.run(lambda: os.environ.get("TOKIO_WORKER_THREADS"))
    assert share in threads.values(), threads


def test_cluster_settings_are_dasks_own_and_quiet_its_workers(store: Store, tmp_path: Path):
    # Each is a setting Dask has (a misspelt one would be ignored without a word)...
    for setting in parabyte.dask.CLUSTER_SETTINGS:
        dask.config.get(setting)
    # ...and a worker started under them has no profiler and polls its memory once a
    # second, where Dask's defaults sample every 10 ms and poll every 100 ms.
    with local_cluster(workers=1, settings=parabyte.dask.CLUSTER_SETTINGS) as quiet:
        polling = quiet.run(
            lambda dask_worker: (
                "profile" in dask_worker.periodic_callbacks,
                dask_worker.memory_manager.memory_monitor_interval,
            )
        )
        assert list(polling.values()) == [(False, 1.0)], polling
        summary = parabyte.dask.copy(
            store.url("small/"), str(tmp_path), quiet, **store.client_options()
        )
    assert summary.objects > 0 and not summary.failures, summary.failures
    with local_cluster(workers=1) as defaults:
        polling = defaults.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks)
        assert list(polling.values()) == [True], polling


def test_key_ranges_list_what_the_whole_prefix_lists(store: Store):
    # Pages of 10 keys: the 120 small objects need a split, and each range spans pages.
    client = parabyte.Client(list_page_size=10, **store.client_options())
    prefix = store.url("small/")
    whole = [entry.key for entry in client.list(prefix)]
    boundaries = client.split_key_space(prefix, 4)
    assert 1 <= len(boundaries) <= 3
    assert boundaries == sorted(set(boundaries))
    lows, highs = [None, *boundaries], [*boundaries, None]
    ranges = [
        [entry.key for entry in client.list(prefix, after=low, until_after=high)]
        for low, high in zip(lows, highs, strict=True)
    ]
    assert all(ranges), "each range held keys when it was found"
    assert [key for part in ranges for key in part] == whole
    # A prefix that fits in one page is not split.
    assert parabyte.Client(**store.client_options()).split_key_space(prefix, 4) == []
    with pytest.raises(parabyte.InvalidInputError, match="not under"):
        next(client.list(prefix, after="elsewhere/x"))


def test_a_prefix_too_large_for_the_driver_is_listed_by_its_tasks(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    summary = parabyte.dask.copy(
        store.url("small/"),
        str(tmp_path),
        cluster,
        driver_keys=15,
        ranges=4,
        list_page_size=10,
        **store.client_options(),
    )
    keys = store.keys("small/")
    assert files_in(tmp_path) == [key.removeprefix("small/") for key in keys]
    for key in keys:
        assert (tmp_path / key.removeprefix("small/")).read_bytes() == store.stored(key)
    # Ranges that overlapped would have found each other's files (skipped) or locks (failed).
    assert summary.ok and (summary.objects, summary.skipped) == (len(keys), 0)
    took = [part for share in summary.workers.values() for part in share.took]
    key_ranges = [part for part in took if isinstance(part, parabyte.dask.KeyRange)]
    # The first 15 keys went as items; the rest of the key space in ranges the tasks listed.
    assert len(took) - len(key_ranges) == 15
    assert len(key_ranges) >= 2
    # The ranges chain from the driver's last key to the end of the key space.
    lows = sorted(part.after for part in key_ranges)
    highs = sorted(part.until_after for part in key_ranges if part.until_after is not None)
    assert lows[0] == keys[14] and lows[1:] == highs


class _GatedObject:
    """A web server holding one object, honest about ranges and ETags, that stops its first
    answer half way until released: a download caught mid-task, on an event."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.reached = threading.Event()
        self.released = threading.Event()
        self.peer_port: int | None = None
        self.requests_after_release = 0
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                start, end = self.headers["Range"].removeprefix("bytes=").split("-")
                first, last = int(start), min(int(end), len(gate.body) - 1)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{last}/{len(gate.body)}")
                self.send_header("Content-Length", str(last - first + 1))
                self.send_header("ETag", '"gated-v1"')
                self.end_headers()
                piece = gate.body[first : last + 1]
                if gate.released.is_set():
                    gate.requests_after_release += 1
                elif not gate.reached.is_set():
                    gate.peer_port = self.client_address[1]
                    self.wfile.write(piece[: len(piece) // 2])
                    self.wfile.flush()
                    gate.reached.set()
                    gate.released.wait(EVENT_TIMEOUT_S)
                    return  # the reader was killed; the connection just closes
                self.wfile.write(piece)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/big.bin"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()


def _copy_killing_the_gated_worker(
    cluster: distributed.Client,
    store: Store,
    destination: Path,
    body: bytes,
    **job: int,
) -> tuple[parabyte.dask.ClusterSummary, _GatedObject, list[parabyte.ObjectInfo]]:
    """Copy small/ and a gated web object; SIGKILL the worker once the gated download is
    held mid-body, then let the server go on. `job`: `parabyte.dask.copy` keywords."""
    gate = _GatedObject(body)
    small = [entry for entry in parabyte.list(store.url("small/")) if not entry.is_prefix]
    big = parabyte.Item(gate.url, "gated/big.bin", size=len(body), etag='"gated-v1"')
    try:
        with ThreadPoolExecutor(1) as pool:
            job = pool.submit(
                parabyte.dask.copy,
                [*small, big],
                str(destination),
                cluster,
                **{"task_bytes": TASK_BYTES, **job},
                part_size="1MiB",
                **store.client_options(),
            )
            assert gate.reached.wait(EVENT_TIMEOUT_S), "the big object was never asked for"
            assert gate.peer_port is not None
            os.kill(worker_holding(cluster, gate.peer_port), signal.SIGKILL)
            gate.released.set()
            return job.result(timeout=120), gate, small
    finally:
        gate.close()


def test_a_worker_killed_mid_task_leaves_every_object_once(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    body = os.urandom(4 << 20)
    summary, gate, small = _copy_killing_the_gated_worker(cluster, store, tmp_path, body)
    assert summary.ok, summary.failures
    assert (tmp_path / "gated/big.bin").read_bytes() == body
    expected = sorted(["gated/big.bin", *(entry.key for entry in small)])
    # Every object once under its final name, and no temporary file anywhere.
    assert files_in(tmp_path) == expected
    for entry in small:
        assert (tmp_path / entry.key).read_bytes() == store.stored(entry.key)
    # The rerun went back to the server; a task whose worker died is counted once.
    assert gate.requests_after_release >= 1
    assert summary.objects + summary.skipped == len(expected)


def test_a_worker_killed_mid_piece_leaves_the_object_whole_and_no_piece(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    body = os.urandom(4 * MIB)
    summary, gate, small = _copy_killing_the_gated_worker(
        cluster, store, tmp_path, body, task_bytes=2 * MIB, split_bytes=2 * MIB
    )
    assert summary.ok, summary.failures
    # The object went as two pieces, the held GET being one of theirs.
    took = [str(part) for share in summary.workers.values() for part in share.took]
    assert {f"{gate.url} bytes 0..{2 * MIB}", f"{gate.url} bytes {2 * MIB}..{4 * MIB}"} <= set(took)
    assert summary.objects == len(small) + 1
    assert (tmp_path / "gated/big.bin").read_bytes() == body
    # No piece file and no temporary file anywhere (hidden names included).
    assert files_in(tmp_path) == sorted(["gated/big.bin", *(entry.key for entry in small)])


def test_a_task_that_fails_for_good_names_its_objects(store: Store, tmp_path: Path):
    # No second chance: a task whose worker dies fails for good.
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        local_cluster() as cluster,
    ):
        body = os.urandom(4 << 20)
        summary, gate, small = _copy_killing_the_gated_worker(cluster, store, tmp_path, body)
    failed = {failure.source for failure in summary.failures}
    assert gate.url in failed
    assert all("KilledWorker" in failure.error for failure in summary.failures)
    assert summary.failed == len(failed) == len(summary.failures)
    # Every other object arrived, and each one is either in place or named as failed.
    arrived = set(files_in(tmp_path))
    assert "gated/big.bin" not in arrived
    for entry in small:
        assert (entry.key in arrived) != (entry.url in failed), entry.key
    assert summary.objects + summary.skipped + summary.failed == len(small) + 1


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_scheduler_is_a_clear_error(store: Store, tmp_path: Path):
    address = f"tcp://127.0.0.1:{_closed_port()}"
    with pytest.raises(parabyte.NetworkError, match="cannot reach the Dask scheduler at"):
        parabyte.dask.copy(store.url("small/"), str(tmp_path), address, connect_timeout=1)
    assert files_in(tmp_path) == []


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "parabyte", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_the_command_line_runs_on_the_cluster(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    scheduler = cluster.scheduler_info()["address"]
    keys = store.keys("small/")
    flags = ["--endpoint-url", store.endpoint, "--region", store.region]
    done = _cli("cp", "--dask-scheduler", scheduler, *flags, store.url("small/"), str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert files_in(tmp_path) == [key.removeprefix("small/") for key in keys]
    assert f"{len(keys)} objects" in done.stderr
    # The environment variable does the same; a second run finds everything in place.
    again = _cli(
        "cp",
        "--json",
        *flags,
        store.url("small/"),
        str(tmp_path),
        env={"PARABYTE_DASK_SCHEDULER": scheduler},
    )
    assert again.returncode == 0, again.stderr
    figures = json.loads(again.stdout)
    assert (figures["objects"], figures["skipped"]) == (0, len(keys))
    assert sum(share["tasks"] for share in figures["workers"].values()) == figures["tasks"]


def test_the_command_line_splits_large_objects_across_tasks(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    scheduler = cluster.scheduler_info()["address"]
    flags = ["--endpoint-url", store.endpoint, "--region", store.region]
    done = _cli(
        "cp", "--dask-scheduler", scheduler, "--dask-split-bytes", "3MiB", "--json", *flags,
        store.url("large/"), str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert os.listdir(tmp_path) == ["big.bin"]
    assert (tmp_path / "big.bin").read_bytes() == store.stored("large/big.bin")
    figures = json.loads(done.stdout)
    assert figures["objects"] == 1 and figures["tasks"] == 3 + 1  # 8 MiB in 3 MiB pieces


def test_the_command_line_names_an_unreachable_scheduler(store: Store, tmp_path: Path):
    address = f"tcp://127.0.0.1:{_closed_port()}"
    done = _cli(
        "cp", "--dask-scheduler", address, "--timeout", "1", store.url("small/"), str(tmp_path)
    )
    assert done.returncode == 2
    assert f"cannot reach the Dask scheduler at {address}" in done.stderr


def test_options_a_cluster_cannot_honour_yet_are_refused(store: Store, tmp_path: Path):
    # Never silently dropped: a filter ignored on the cluster would copy what was excluded.
    address = f"tcp://127.0.0.1:{_closed_port()}"
    for extra, named in [
        (["--exclude", "*.bin", store.url("small/")], "--exclude/--include"),
        (["--dryrun", store.url("small/")], "--dryrun"),
        ([store.url("small/*.bin")], "a wildcard source"),
        (["--object-lines", "always", store.url("small/")], "--object-lines always"),
    ]:
        done = _cli("cp", "--dask-scheduler", address, *extra, str(tmp_path))
        assert done.returncode == 2, done.stderr
        assert f"{named} cannot be combined with --dask-scheduler" in done.stderr
    assert files_in(tmp_path) == []
