"""`parabyte.dask`'s write jobs on a real `distributed.LocalCluster` (two worker processes,
loopback only) against the session's versitygw: a tree uploaded with a large file whose
parts several workers send, a prefix copied inside the store with a large object in
UploadPartCopy parts, `sync` both ways with the one delete rule over every range, `rm -r`
by ranges, and a worker killed (SIGKILL) at the worst moments: after some parts, with the
Complete held or its answer lost, in the middle of a sync's deletes. Each leaves every
object once and whole, no part sent twice, and no multipart upload open."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")  # comes with distributed
boto3 = pytest.importorskip("boto3")

from dask_cluster import worker_holding
from gated_proxy import EVENT_TIMEOUT_S, GatedProxy

import parabyte
import parabyte.dask
from conftest import Store, boto3_client, files_in

MIB = 1 << 20
# Parts of 5 MiB (S3's least), two a task: a 23 MiB file is five parts in three tasks.
PART = 5 * MIB
TASK_BYTES = 2 * PART


@pytest.fixture(scope="module")
def store(store: Store) -> Store:
    """A bucket of this module's own: the other suites list the session's whole bucket."""
    parabyte.make_bucket("s3://dask-writes", **store.client_options())
    return dataclasses.replace(store, bucket="dask-writes")


@pytest.fixture(scope="module")
def s3(store: Store):
    return boto3_client(store)


def _open_uploads(s3, store: Store, prefix: str) -> list[str]:
    listed = s3.list_multipart_uploads(Bucket=store.bucket, Prefix=prefix)
    return [upload["Key"] for upload in listed.get("Uploads", [])]


def _tree(root: Path, small: int = 12, large: int = 23 * MIB) -> dict[str, bytes]:
    """A tree of small files in two folders and one large file."""
    files = {f"dir{i % 2}/f{i:02}.txt": os.urandom(100 + i) for i in range(small)}
    files["big/large.bin"] = os.urandom(large)
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(body)
    return files


def _options(store: Store, endpoint: str | None = None) -> dict[str, str]:
    return {**store.client_options(), "endpoint_url": endpoint or store.endpoint}


def test_a_tree_goes_up_with_a_large_file_sent_by_several_workers(
    cluster: distributed.Client, store: Store, s3, tmp_path: Path
):
    files = _tree(tmp_path / "src")
    # The gates of a local upload hold: a link passed over, a FIFO refused by name.
    os.symlink("/etc/hostname", tmp_path / "src/dir0/link")
    os.mkfifo(tmp_path / "src/dir1/fifo")
    summary = parabyte.dask.upload(
        tmp_path / "src",
        store.url("up/"),
        cluster,
        task_bytes=TASK_BYTES,
        part_size=PART,
        **store.client_options(),
    )
    assert [failure.source for failure in summary.failures] == [str(tmp_path / "src/dir1/fifo")]
    assert store.keys("up/") == sorted(f"up/{name}" for name in files)
    for name, body in files.items():
        assert store.stored(f"up/{name}") == body, name
    assert summary.objects == len(files)
    # The large file: five parts in a task a worker (not three tasks of two parts on two
    # workers, a second wave), then one that completed it by its CRC.
    big = str(tmp_path / "src/big/large.bin")
    assert summary.tasks == 1 + 2 + 1  # the small files, two of parts, the commit
    assert summary.requests.put == len(files) - 1 + 5
    assert summary.verified.checksum == len(files)
    assert any(big in share.took for share in summary.workers.values())
    assert _open_uploads(s3, store, "up/") == []


@contextlib.contextmanager
def _killing(
    cluster: distributed.Client, store: Store, hold: Callable[[str], bool], *, after_store=False
) -> Iterator[tuple[GatedProxy, Callable[[Callable[[], object]], object]]]:
    """A proxy holding the first request `hold` picks; `run(job)` runs the job, kills the
    worker whose request is held once it is, then lets the proxy go on."""
    proxy = GatedProxy(store.endpoint, hold, after_store=after_store)

    def run(job: Callable[[], object]) -> object:
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(job)
            assert proxy.reached.wait(EVENT_TIMEOUT_S), "the held request never came"
            assert proxy.peer_port is not None
            os.kill(worker_holding(cluster, proxy.peer_port), signal.SIGKILL)
            proxy.released.set()
            return running.result(timeout=240)

    try:
        yield proxy, run
    finally:
        proxy.close()


def _upload_tree(cluster, store, source: Path, prefix: str, endpoint: str, **options):
    return parabyte.dask.upload(
        source,
        store.url(prefix),
        cluster,
        task_bytes=TASK_BYTES,
        part_size=PART,
        **_options(store, endpoint),
        **options,
    )


def test_a_worker_killed_after_some_parts_leaves_the_file_whole_and_no_part_sent_twice(
    cluster: distributed.Client, store: Store, s3, tmp_path: Path
):
    files = _tree(tmp_path, small=2)
    # One part at a time: part 3 is in the store when part 4, held, kills its worker.
    with _killing(cluster, store, lambda kind: kind == "UploadPart 4") as (proxy, run):
        summary = run(
            lambda: _upload_tree(
                cluster, store, tmp_path, "killed-parts/", proxy.endpoint, ranges_per_object=1
            )
        )
    assert summary.ok, summary.failures
    for name, body in files.items():
        assert store.stored(f"killed-parts/{name}") == body, name
    # Each part reached the store once: those sent before the kill were kept, not resent.
    parts = {kind: count for kind, count in proxy.stored.items() if kind.startswith("UploadPart")}
    assert parts == {f"UploadPart {number}": 1 for number in range(1, 6)}
    assert proxy.stored["Complete"] == 1
    assert _open_uploads(s3, store, "killed-parts/") == []


@pytest.mark.parametrize("answer_lost", [False, True], ids=["complete-held", "answer-lost"])
def test_a_worker_killed_at_the_complete_commits_the_file_once(
    cluster: distributed.Client, store: Store, s3, tmp_path: Path, answer_lost: bool
):
    files = _tree(tmp_path, small=2)
    prefix = f"killed-complete-{answer_lost}/"
    with _killing(cluster, store, lambda kind: kind == "Complete", after_store=answer_lost) as (
        proxy,
        run,
    ):
        summary = run(lambda: _upload_tree(cluster, store, tmp_path, prefix, proxy.endpoint))
    assert summary.ok, summary.failures
    assert summary.objects == len(files)
    for name, body in files.items():
        assert store.stored(f"{prefix}{name}") == body, name
    # Held before the store: the rerun's is the only one stored. Answer lost: the rerun
    # finds the upload completed and the object holding its CRC, and sends nothing more.
    assert proxy.stored["Complete"] == (2 if answer_lost else 1)
    assert {kind for kind in proxy.stored if kind.startswith("UploadPart")} == {
        f"UploadPart {number}" for number in range(1, 6)
    }
    assert all(count == 1 for kind, count in proxy.stored.items() if kind.startswith("UploadPart"))
    head = s3.head_object(Bucket=store.bucket, Key=f"{prefix}big/large.bin", ChecksumMode="ENABLED")
    assert head["ContentLength"] == len(files["big/large.bin"])
    assert _open_uploads(s3, store, prefix) == []


def test_a_prefix_is_copied_inside_the_store_with_a_large_object_in_parts_over_workers(
    cluster: distributed.Client, store: Store, s3, tmp_path: Path
):
    files = _tree(tmp_path, small=6, large=12 * MIB)
    parabyte.upload(tmp_path, store.url("copy-src/"), part_size=PART, **store.client_options())
    summary = parabyte.dask.copy(
        store.url("copy-src/"),
        store.url("copy-dst/"),
        cluster,
        task_bytes=PART,
        task_objects=2,
        split_bytes=MIB,
        part_size=PART,
        copy_cutoff=PART,
        **store.client_options(),
    )
    assert summary.ok, summary.failures
    assert store.keys("copy-dst/") == sorted(f"copy-dst/{name}" for name in files)
    for name, body in files.items():
        assert store.stored(f"copy-dst/{name}") == body, name
    # The 12 MiB object: three UploadPartCopy parts, a range of them a worker, one Complete.
    took = [str(part) for share in summary.workers.values() for part in share.took]
    assert store.url("copy-src/big/large.bin") in took
    assert summary.requests.multipart >= 2
    assert _open_uploads(s3, store, "copy-dst/") == []


def _sync(cluster, source: str, destination: str, store: Store, **keywords):
    # Pages of 4 keys, so that even these few keys are cut into several ranges.
    return parabyte.dask.sync(
        source,
        destination,
        cluster,
        ranges=4,
        part_size=PART,
        list_page_size=4,
        **store.client_options(),
        **keywords,
    )


def test_sync_up_and_down_deletes_only_once_every_range_was_listed(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    source = tmp_path / "src"
    files = _tree(source, small=16, large=6 * MIB)
    # Keys only the destination holds, spread over the key space: each range deletes some.
    extra = ["a-first.txt", "dir0/zz-stale.txt", "dir1/a-stale.txt", "zz-last.txt"]
    for name in extra:
        parabyte.put_bytes(store.url(f"sync-up/{name}"), b"stale", **store.client_options())
    summary = _sync(cluster, str(source), store.url("sync-up/"), store, delete=True)
    assert summary.ok, summary.failures
    assert store.keys("sync-up/") == sorted(f"sync-up/{name}" for name in files)
    assert summary.deleted == len(extra)
    # And back down into a directory holding strays of its own.
    down = tmp_path / "down"
    (down / "dir1").mkdir(parents=True)
    (down / "dir1/stray.txt").write_text("stray")
    back = _sync(cluster, store.url("sync-up/"), str(down), store, delete=True)
    assert back.ok, back.failures
    assert files_in(down) == sorted(files)
    for name, body in files.items():
        assert (down / name).read_bytes() == body, name
    assert back.deleted == 1
    # Nothing changed: a second run sends nothing.
    again = _sync(cluster, str(source), store.url("sync-up/"), store, delete=True)
    assert (again.objects, again.deleted) == (0, 0)


def test_a_refusal_in_one_range_of_the_source_deletes_nothing_in_any_range(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    source = tmp_path / "src"
    files = _tree(source, small=16, large=6 * MIB)
    extra = ["a-first.txt", "dir0/zz-stale.txt", "zz-last.txt"]
    for name in extra:
        parabyte.put_bytes(store.url(f"sync-refused/{name}"), b"stale", **store.client_options())
    os.mkfifo(source / "dir1/fifo")  # refused by name: the source is not read whole
    summary = _sync(cluster, str(source), store.url("sync-refused/"), store, delete=True)
    assert summary.deleted == 0
    reasons = [failure.error for failure in summary.failures]
    assert any("nothing was deleted" in reason for reason in reasons), reasons
    # What the source holds went up; every stale key, in every range, is still there.
    assert store.keys("sync-refused/") == sorted(
        f"sync-refused/{name}" for name in [*files, *extra]
    )


def test_an_empty_source_deletes_nothing_unless_told(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    for name in ["a.txt", "m/b.txt", "z.txt"]:
        parabyte.put_bytes(store.url(f"sync-empty/{name}"), b"kept", **store.client_options())
    empty = tmp_path / "empty"
    empty.mkdir()
    summary = _sync(cluster, str(empty), store.url("sync-empty/"), store, delete=True)
    assert summary.deleted == 0 and not summary.ok
    assert "holds nothing" in summary.failures[0].error
    assert len(store.keys("sync-empty/")) == 3
    told = _sync(
        cluster,
        str(empty),
        store.url("sync-empty/"),
        store,
        delete=True,
        delete_if_source_empty=True,
    )
    assert told.deleted == 3 and store.keys("sync-empty/") == []


def test_a_worker_killed_in_the_middle_of_a_sync_s_deletes_deletes_each_once(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    source = tmp_path / "src"
    files = _tree(source, small=8, large=1024)
    stale = [f"stale/{index:03}" for index in range(30)]
    for name in [*files, *stale]:
        body = files.get(name, b"stale")
        parabyte.put_bytes(store.url(f"sync-kill/{name}"), body, **store.client_options())
    with _killing(cluster, store, lambda kind: kind == "DeleteObjects") as (proxy, run):
        summary = run(
            lambda: parabyte.dask.sync(
                str(source),
                store.url("sync-kill/"),
                cluster,
                ranges=4,
                list_page_size=4,
                delete=True,
                **_options(store, proxy.endpoint),
            )
        )
    assert summary.ok, summary.failures
    assert store.keys("sync-kill/") == sorted(f"sync-kill/{name}" for name in files)
    assert summary.deleted == len(stale)


def test_rm_deletes_a_prefix_by_ranges_and_nothing_beside_it(
    cluster: distributed.Client, store: Store
):
    for index in range(40):
        parabyte.put_bytes(store.url(f"rm-me/{index:02}/k"), b"x", **store.client_options())
    parabyte.put_bytes(store.url("rm-me-not/k"), b"kept", **store.client_options())
    # Pages of 10 keys: a prefix of one page is never cut.
    summary = parabyte.dask.remove(
        store.url("rm-me/"), cluster, ranges=5, list_page_size=10, **store.client_options()
    )
    assert summary.ok and summary.deleted == 40
    assert summary.tasks >= 2
    assert store.keys("rm-me/") == [] and store.keys("rm-me-not/") == ["rm-me-not/k"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "parabyte", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_the_command_line_runs_every_write_on_the_cluster(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    scheduler = cluster.scheduler_info()["address"]
    flags = [
        "--dask-scheduler",
        scheduler,
        "--endpoint-url",
        store.endpoint,
        "--region",
        store.region,
    ]
    files = _tree(tmp_path / "src", small=6, large=1024)
    up = _cli("cp", "-r", *flags, str(tmp_path / "src"), store.url("cli/"))
    assert up.returncode == 0, up.stderr
    assert store.keys("cli/") == sorted(f"cli/{name}" for name in files)
    parabyte.put_bytes(store.url("cli/stale.txt"), b"stale", **store.client_options())
    synced = _cli("sync", "--delete", *flags, str(tmp_path / "src"), store.url("cli/"))
    assert synced.returncode == 0, synced.stderr
    assert "cli/stale.txt" not in store.keys("cli/")
    moved = _cli("mv", "-r", *flags, store.url("cli/"), store.url("cli-moved/"))
    assert moved.returncode == 0, moved.stderr
    assert store.keys("cli/") == []
    assert store.keys("cli-moved/") == sorted(f"cli-moved/{name}" for name in files)
    gone = _cli("rm", "-r", *flags, store.url("cli-moved/"))
    assert gone.returncode == 0, gone.stderr
    assert store.keys("cli-moved/") == []


def test_a_worker_killed_in_a_copy_in_parts_leaves_it_whole_and_no_part_copied_twice(
    cluster: distributed.Client, store: Store, s3, tmp_path: Path
):
    files = _tree(tmp_path, small=2, large=16 * MIB)
    parabyte.upload(tmp_path, store.url("kcopy-src/"), part_size=PART, **store.client_options())
    with _killing(cluster, store, lambda kind: kind == "UploadPartCopy 3") as (proxy, run):
        summary = run(
            lambda: parabyte.dask.copy(
                store.url("kcopy-src/"),
                store.url("kcopy-dst/"),
                cluster,
                task_bytes=2 * PART,
                split_bytes=MIB,
                part_size=PART,
                copy_cutoff=PART,
                ranges_per_object=1,
                **_options(store, proxy.endpoint),
            )
        )
    assert summary.ok, summary.failures
    for name, body in files.items():
        assert store.stored(f"kcopy-dst/{name}") == body, name
    copied = {kind: n for kind, n in proxy.stored.items() if kind.startswith("UploadPartCopy")}
    assert copied == {f"UploadPartCopy {number}": 1 for number in range(1, 5)}
    assert proxy.stored["Complete"] == 1
    assert _open_uploads(s3, store, "kcopy-dst/") == []


def test_a_worker_killed_in_a_file_its_task_sends_in_parts_leaves_no_upload_open(
    cluster: distributed.Client, store: Store, s3, tmp_path: Path
):
    # 12 MiB files, under the task's share: each goes up in parts inside its task, and the
    # rerun elsewhere starts its own upload; the one the killed worker began is aborted.
    files = {f"f{index}.bin": os.urandom(12 * MIB) for index in range(2)}
    for name, body in files.items():
        (tmp_path / name).write_bytes(body)
    with _killing(cluster, store, lambda kind: kind == "UploadPart 2") as (proxy, run):
        summary = run(
            lambda: parabyte.dask.upload(
                tmp_path,
                store.url("kitems/"),
                cluster,
                task_bytes=64 * MIB,
                part_size=PART,
                ranges_per_object=1,
                **_options(store, proxy.endpoint),
            )
        )
    assert summary.ok, summary.failures
    for name, body in files.items():
        assert store.stored(f"kitems/{name}") == body, name
    assert _open_uploads(s3, store, "kitems/") == []


def test_a_prefix_moves_inside_the_store_by_ranges(cluster: distributed.Client, store: Store):
    for index in range(30):
        parabyte.put_bytes(store.url(f"mv-src/{index:02}"), b"moved", **store.client_options())
    summary = parabyte.dask.move(
        store.url("mv-src/"),
        store.url("mv-dst/"),
        cluster,
        task_objects=7,
        **store.client_options(),
    )
    assert summary.ok, summary.failures
    assert summary.tasks >= 4  # 30 keys, 7 a task, and the rest of the key space
    assert store.keys("mv-src/") == []
    assert store.keys("mv-dst/") == [f"mv-dst/{index:02}" for index in range(30)]


def test_a_move_or_copy_onto_or_into_itself_is_refused_before_anything_moves(
    cluster: distributed.Client, store: Store
):
    parabyte.put_bytes(store.url("self/k"), b"stays", **store.client_options())
    for destination in ["self/", "self/inner/"]:
        for job in (parabyte.dask.move, parabyte.dask.copy):
            with pytest.raises(parabyte.InvalidInputError, match="overlap"):
                job(
                    store.url("self/"),
                    store.url(destination),
                    cluster,
                    recursive=True,
                    **store.client_options(),
                )
    assert store.keys("self/") == ["self/k"]


def test_a_manifest_of_web_files_local_files_and_objects_goes_into_the_store_by_tasks(
    cluster: distributed.Client, store: Store, tmp_path: Path
):
    web = tmp_path / "web"
    web.mkdir()
    bodies = {f"w{index}.bin": os.urandom(1000 + index) for index in range(3)}
    for name, body in bodies.items():
        (web / name).write_bytes(body)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(web))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    local = tmp_path / "local.txt"
    local.write_bytes(b"a local file")
    parabyte.put_bytes(store.url("man-src/obj"), b"an object", **store.client_options())
    lines = [f"http://127.0.0.1:{server.server_address[1]}/{name}\tweb/{name}" for name in bodies]
    lines += ["# a comment", f"{local}\tfiles/local.txt", "s3://bucket/key - not-a-size"]
    lines += [f"{store.url('man-src/obj')}\tcopied/obj"]
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("\n".join(lines) + "\n")
    try:
        summary = parabyte.dask.copy(
            manifest, store.url("man-dst/"), cluster, task_objects=2, **store.client_options()
        )
    finally:
        server.shutdown()
    # The bad line named by its number in the whole manifest, though its task had lines 5-6.
    assert [failure.source for failure in summary.failures] == [f"{manifest}:6"]
    assert summary.tasks == 4 and summary.objects == 5
    for name, body in bodies.items():
        assert store.stored(f"man-dst/web/{name}") == body, name
    assert store.stored("man-dst/files/local.txt") == b"a local file"
    assert store.stored("man-dst/copied/obj") == b"an object"


# `python -m parabyte ARGS` with Ctrl-C raising KeyboardInterrupt whatever its parent ignores.
_WITH_CTRL_C = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'parabyte'; runpy.run_module('parabyte', run_name='__main__')"
)


def _wait_for_tasks(cluster: distributed.Client, count: int) -> None:
    """Until the scheduler holds `count` of a job's tasks (bounded in time)."""

    def held(dask_scheduler: object) -> int:
        return sum(str(key).startswith("parabyte-") for key in dask_scheduler.tasks)

    deadline = time.monotonic() + EVENT_TIMEOUT_S
    while cluster.run_on_scheduler(held) < count:
        assert time.monotonic() < deadline, "the driver never submitted its tasks"
        time.sleep(0.05)


def test_an_interrupted_upload_resumes_from_the_parts_it_sent(
    cluster: distributed.Client, store: Store, s3, tmp_path: Path
):
    source = tmp_path / "src"
    files = _tree(source, small=2)
    state = tmp_path / "state"
    scheduler = cluster.scheduler_info()["address"]
    proxy = GatedProxy(store.endpoint, lambda kind: kind == "UploadPart 4")
    command = [
        sys.executable, "-m", "parabyte", "cp", "-r", "--dask-scheduler", scheduler,
        "--endpoint-url", proxy.endpoint, "--region", store.region, "--part-size", str(PART),
        "--ranges-per-object", "1", "--dask-split-bytes", str(2 * PART), "--quiet",
        str(source), store.url("resumed/"),
    ]  # fmt: skip
    env = {**os.environ, "PARABYTE_STATE_DIR": str(state)}
    try:
        # As from a terminal: a shell that starts jobs in the background (CI's) has them
        # ignore SIGINT, which Python then never turns into KeyboardInterrupt.
        interruptible = [sys.executable, "-c", _WITH_CTRL_C, *command[3:]]
        driver = subprocess.Popen(interruptible, env=env, stderr=subprocess.PIPE, text=True)
        assert proxy.reached.wait(EVENT_TIMEOUT_S), "the held part never came"
        # Every task submitted (the small files, the parts, the commit): the driver waits.
        _wait_for_tasks(cluster, 3)
        driver.send_signal(signal.SIGINT)  # Ctrl-C on the driver, a part held
        _, stderr = driver.communicate(timeout=120)
        assert driver.returncode == 130, stderr
        assert "run the same command again to resume" in stderr
        proxy.released.set()
        # Kept for the next run, as a local run keeps it.
        assert _open_uploads(s3, store, "resumed/") == ["resumed/big/large.bin"]
        sent_before = {k: n for k, n in proxy.stored.items() if k.startswith("UploadPart")}
        again = subprocess.run(
            command, check=False, env=env, capture_output=True, text=True, timeout=240
        )
        assert again.returncode == 0, again.stderr
    finally:
        proxy.close()
    for name, body in files.items():
        assert store.stored(f"resumed/{name}") == body, name
    # The rerun took the upload over and sent only the parts the first did not.
    sent = {k: n for k, n in proxy.stored.items() if k.startswith("UploadPart")}
    assert sent == {f"UploadPart {number}": 1 for number in range(1, 6)}
    assert sent_before and all(n == 1 for n in sent_before.values())
    assert _open_uploads(s3, store, "resumed/") == []


def test_a_directory_side_cuts_the_key_space_by_its_own_folders_with_no_request(
    tmp_path: Path,
):
    from parabyte._cluster_writes import sync_boundaries

    for index in range(8):
        (tmp_path / f"d{index}").mkdir()
    (tmp_path / "a.txt").write_text("a")
    # No store behind this endpoint: a request would fail the call.
    offline = parabyte.Client(endpoint_url="http://127.0.0.1:9", region="us-east-1")
    for source, destination in [(str(tmp_path), "s3://b/p/"), ("s3://b/p/", str(tmp_path))]:
        assert sync_boundaries(offline, source, destination, 3) == ["d1/", "d4/"]
