"""One copy job spread over a Dask cluster, each worker running the same engine.

    import distributed, parabyte.dask
    client = distributed.Client("tcp://scheduler:8786")
    summary = parabyte.dask.copy("s3://bucket/dataset/", "/shared/data", client=client)

The driver (this process) cuts the job into tasks and Dask runs them on its workers; each
task is one ordinary parabyte download in the worker's process (GIL released, known sizes
and ETags, no probe), with the same options as a local run:

- **Items tasks.** A prefix of up to `driver_keys` keys, a single object or a list of items
  is listed (or taken) by the driver and packed into tasks by bytes, in listing order: a task
  takes objects until it holds `task_bytes` or `task_objects`, and an object of `task_bytes`
  or more gets a task of its own, whose parallel ranges keep the worker's network busy.
  Larger tasks are submitted first, so a big object never starts last.
- **Manifests.** A manifest file (`pathlib.Path`, in `parabyte cp --manifest`'s format) is
  read by the driver and packed like a list of items: its sizes and ETags come along, so no
  task probes; its bad lines are failures named `FILE:LINE`, and the other lines go on.
- **Key-range tasks.** A larger prefix is not listed by the driver past those keys: the rest
  of its key space is cut into `ranges` ranges with a few one-key requests
  (`Client.split_key_space`), and each task lists and downloads its own range, so a
  billion-key bucket is never held or listed in one place.

Tasks partition the keys, so two tasks never write the same path. A worker killed mid-task
is Dask's to retry (its `allowed-failures`); the rerun skips the files the first attempt
finished (their marks) and resumes its partial ones (their journals), so every object
arrives once under its final name. A task that fails for good is reported in the summary,
one failure per object it held (or one for its key range).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any, Self

try:
    import distributed
except ImportError as error:  # the extra is optional; say how to get it
    raise ImportError(
        "parabyte.dask needs Dask's distributed scheduler: pip install 'parabyte[dask]'"
    ) from error

from . import Client, ItemLike, _client, _native, _split
from ._cluster_downloads import KeyRange, _plan, _read_manifest
from ._cluster_run import (
    ClusterProgress,
    ClusterSummary,
    ProgressCallback,
    WorkerShare,
    _dask_client,
    _run,
)
from ._cluster_worker import _processes_per_host, _TaskResult
from ._cluster_writes import (
    Job,
    Opened,
    _Call,
    _prefix_of,
    _Shared,
    abort_leftovers,
    delete_tasks,
    plan_copy,
    plan_manifest_into_store,
    plan_remove,
    plan_sync,
    plan_upload,
    storing,
)
from ._native import (
    Failure,
)
from .exceptions import InvalidInputError

__all__ = [
    "CLUSTER_SETTINGS",
    "ClusterProgress",
    "ClusterSummary",
    "KeyRange",
    "WorkerShare",
    "copy",
    "move",
    "remove",
    "sync",
    "upload",
]

TASK_BYTES = 1 << 30
"""Default bytes per items task: big enough that a task's fixed cost (about 10 ms on the
scheduler and worker) is noise, small enough that a rerun after a lost worker is cheap."""
TASK_OBJECTS = 1_000
"""Default cap on objects per items task, for prefixes of many small objects: a task of
1000 small objects takes a worker about a second, so its fixed cost stays in the noise."""
DRIVER_KEYS = 100_000
"""Default number of keys the driver lists itself before splitting the rest into ranges."""
RANGES_PER_WORKER = 8
"""Default key ranges per worker of a download past `driver_keys`: enough that fast
workers take over slow ranges."""
WRITE_RANGES_PER_WORKER = 1
"""Default key ranges per worker of a sync or a delete: each range lists both sides (or its
keys) in parallel itself, at a cost of a few round trips a range (split points, the first
pages), which more ranges pay again without listing faster: 16 ranges of a 20,000-key sync
on 2 workers took 1.9x the time of 4, and S1 (100,000 keys) took 2.78 s up and 3.08 s down
at 2 ranges against 3.11 s and 3.36 s at 4 (bench/dask_writes.py, docs/PROFILE.md stop 52).
Pass `ranges` for more where one range may hold far more keys than another."""
CLUSTER_SETTINGS: dict[str, Any] = {
    # The statistical profiler samples every thread's Python stack every 10 ms; a task's
    # time is in the engine, where it sees one frame waiting on the GIL-free call.
    "distributed.worker.profile.enabled": False,
    # Memory is bounded by the engine's own budgets; the monitor (100 ms by default) is for
    # spilling data, which a transfer task holds none of.
    "distributed.worker.memory.monitor-interval": "1s",
    # The dashboard's CPU and bandwidth plots (500 ms by default) and the event loop's
    # health tick (20 ms by default): both still run, less often.
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.tick.interval": "200ms",
}
"""Dask settings for a cluster that runs transfers: what a Dask process polls for work
that holds data in Python (pandas, arrays), at intervals for bytes that never enter it.
Set them where the scheduler and the workers start (`dask.config.set`, the YAML or
`DASK_...` environment variables in docs/dask.md); an idle process then costs about a
fifth of its CPU at Dask's defaults, and a job's driver half (docs/PROFILE.md, stop 51).
Dask's defaults work too."""
CONNECT_TIMEOUT_S = 10.0
"""How long to try to reach a scheduler given by address."""
COPY_CUTOFF = 5 << 30
"""Objects larger than this are copied inside the store in parts (S3's largest CopyObject):
on a cluster, by several tasks; a smaller one is one request, which no split makes faster."""
# The keywords the delete rule of a sync reads.
_SYNC_RULE = ("delete", "max_delete", "delete_if_source_empty")


def copy(
    source: str | os.PathLike[str] | Iterable[ItemLike],
    destination: str | None,
    client: distributed.Client | str | None = None,
    *,
    recursive: bool = False,
    progress: ProgressCallback | None = None,
    task_bytes: int = TASK_BYTES,
    task_objects: int = TASK_OBJECTS,
    driver_keys: int = DRIVER_KEYS,
    ranges: int | None = None,
    split_bytes: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    **options: Any,
) -> ClusterSummary:
    """Copy `source` into `destination` on the workers of a Dask cluster.

    `source` is what `parabyte.download` takes (an `s3://` object or prefix, an `http(s)://`
    URL), what `download_many` takes (items, `ObjectInfo` entries, URLs), or a manifest file
    as a `pathlib.Path` (the format of `parabyte cp --manifest`). `destination`
    is a directory as each worker sees it: a shared file system, or each node's own disk
    (then `summary.workers[...].took` says which objects went where); `None` keeps nothing.
    `client` is a `distributed.Client`, a scheduler address, or `None` for the current
    client. `options` are `parabyte.Client` keywords, used by every task.

    `task_bytes` and `task_objects` size the items tasks; a prefix with more than
    `driver_keys` keys has the rest of its key space split into `ranges` key-range tasks
    (default: 8 per worker). With `split_bytes`, an object of more bytes than that (its
    size and ETag known) is fetched in pieces of `task_bytes` (at most `split_bytes`) by
    tasks of their own, then
    made whole by one more task: only for a `destination` that every worker sees (a shared
    file system), where one object could otherwise keep one worker busy while the others
    idle. `progress` is called on this thread, about twice a second.
    `connect_timeout` bounds the wait for a scheduler given by address.

    Into an `s3://` destination, `copy` is `upload` for a local directory or file, and a
    copy inside the store (or streamed from a store of its own, `source_endpoint_url=`)
    for an `s3://` prefix or object; the keywords are then those of `parabyte.copy`.
    """
    _check_sizes(task_bytes, task_objects, driver_keys, ranges, split_bytes)
    if isinstance(destination, str) and destination.startswith("s3://"):
        sizes = {"task_bytes": task_bytes, "task_objects": task_objects, "ranges": ranges}
        if isinstance(source, str) and source.startswith("s3://"):
            return _copy_in_store(
                source,
                destination,
                client,
                moving=False,
                progress=progress,
                driver_keys=driver_keys,
                split_bytes=split_bytes,
                connect_timeout=connect_timeout,
                options={"recursive": recursive, **options},
                **sizes,
            )
        local_path = isinstance(source, str) and not source.startswith(("http://", "https://"))
        if local_path or (isinstance(source, os.PathLike) and os.path.isdir(source)):
            return upload(
                source,
                destination,
                client,
                progress=progress,
                split_bytes=split_bytes,
                connect_timeout=connect_timeout,
                task_bytes=task_bytes,
                task_objects=task_objects,
                **options,
            )
        if isinstance(source, os.PathLike):
            return _manifest_into_store(
                os.fspath(source),
                destination,
                client,
                progress=progress,
                task_bytes=task_bytes,
                task_objects=task_objects,
                connect_timeout=connect_timeout,
                options=options,
            )
        raise InvalidInputError(
            f"{destination}: a cluster copies into S3 a local directory or file every worker "
            "sees, an s3:// prefix, or a manifest (a pathlib.Path) of local files, objects "
            "and web URLs"
        )
    if split_bytes is not None and destination is None:
        split_bytes = None  # nothing kept, nothing to make whole: each object goes whole
    refused: list[Failure] = []
    if isinstance(source, os.PathLike):
        source, refused = _read_manifest(source)
    dask_client = _dask_client(client, connect_timeout)
    try:
        started = time.monotonic()
        local = _client(options)  # the driver lists and splits with the same options
        addresses = list(dask_client.scheduler_info().get("workers", {}))
        workers = max(1, len(addresses))
        # Tasks go to the cluster as the driver lists: downloads start with the first task.
        tasks = _plan(
            local,
            source,
            recursive=recursive,
            task_bytes=task_bytes,
            task_objects=task_objects,
            driver_keys=driver_keys,
            ranges=ranges or RANGES_PER_WORKER * workers,
            split_bytes=split_bytes,
        )
        sharing = _processes_per_host(addresses)
        return _run(dask_client, tasks, destination, options, progress, started, refused, sharing)
    finally:
        if isinstance(client, str):  # connected here: disconnect here
            dask_client.close()


def upload(
    source: str | os.PathLike[str],
    destination: str,
    client: distributed.Client | str | None = None,
    *,
    progress: ProgressCallback | None = None,
    task_bytes: int = TASK_BYTES,
    task_objects: int = TASK_OBJECTS,
    split_bytes: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    **options: Any,
) -> ClusterSummary:
    """Upload a local directory (or file) that every worker sees (a shared file system) to
    `destination` (`s3://bucket/prefix/`) on the workers of a Dask cluster.

    The driver walks the tree as a local upload does (key order, links passed over, FIFOs
    and devices refused by name, `exclude`/`include` applied), holding one directory at a
    time, and packs its files into tasks of `task_bytes` or `task_objects`, each uploaded
    by a worker as `upload_many` would. A file of more than `split_bytes` (default:
    `task_bytes`) goes up as one multipart upload the driver opens, whose parts several
    tasks send (`task_bytes` a task, or a range a worker where that is more) and one more
    completes, checked by the whole file's
    CRC64NVME. The keywords are `parabyte.upload`'s (`no_clobber`, `content_type`, ...)
    and `Client` options; the others as for `copy`.
    """
    _check_sizes(task_bytes, task_objects, 1, None, split_bytes)
    keywords, client_options = _split("upload", dict(options))
    _refuse_dry_run(keywords)
    opened = Opened()
    with _Cluster(client, connect_timeout) as cluster:
        local = _client(client_options)
        tasks = plan_upload(
            local,
            os.fspath(source),
            destination,
            keywords,
            opened,
            task_bytes=task_bytes,
            task_objects=task_objects,
            split_bytes=split_bytes or task_bytes,
            workers=cluster.workers,
        )
        return _write_job(
            cluster, local, tasks, client_options, storing(keywords), progress, opened
        )


def sync(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    client: distributed.Client | str | None = None,
    *,
    progress: ProgressCallback | None = None,
    ranges: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    **options: Any,
) -> ClusterSummary:
    """Make `destination` hold what `source` holds (an S3 prefix and a directory every
    worker sees, either way, or two S3 prefixes) on the workers of a Dask cluster.

    The key space is cut into `ranges` ranges (default: 1 per worker); a task lists both
    sides within its range, merges them and sends what is missing or changed, as a local
    `sync` does. With `delete=True` the deletes wait: only once every range of both sides
    was listed to the end, none failed on the source's side, and the rule of a local sync
    allows them (an empty source deletes nothing without `delete_if_source_empty`;
    `max_delete` counts every range's) are they made, by tasks of their own. The keywords
    are `parabyte.sync`'s and `Client` options.
    """
    _check_sizes(1, 1, 1, ranges, None)
    keywords, client_options = _split("sync", dict(options))
    _refuse_dry_run(keywords)
    source, destination = os.fspath(source), os.fspath(destination)
    with _Cluster(client, connect_timeout) as cluster:
        local = _client(client_options)
        parts = ranges or WRITE_RANGES_PER_WORKER * cluster.workers
        ranged = list(plan_sync(local, source, destination, parts))
        slots = {id(task): index for index, task in enumerate(ranged)}
        verdicts = [None] * len(ranged)

        def heard(task: Any, result: _TaskResult | None) -> None:
            if result is not None:
                verdicts[slots[id(task)]] = result.outcome

        merged = _write_job(
            cluster, local, ranged, client_options, keywords, progress, Opened(), on_result=heard
        )
        if not keywords.get("delete"):
            return merged
        rule = {name: keywords[name] for name in _SYNC_RULE if name in keywords}
        allowed, kept = _native.sync_deletes_allowed(verdicts, source, destination, **rule)
        if allowed is None:
            refusal = Failure(destination, kept, InvalidInputError(kept))
            return merged.joined(None, failures=[refusal], elapsed=cluster.elapsed())
        names = (name for verdict in verdicts for name in verdict[1])
        deletes = delete_tasks(source, destination, names)
        deleted = _write_job(cluster, local, deletes, client_options, keywords, progress, Opened())
        return merged.joined(deleted, elapsed=cluster.elapsed())


def remove(
    source: str,
    client: distributed.Client | str | None = None,
    *,
    recursive: bool = False,
    progress: ProgressCallback | None = None,
    ranges: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    **options: Any,
) -> ClusterSummary:
    """Delete every key under the prefix `source` (with `recursive`, or a trailing "/") on
    the workers of a Dask cluster: its key space cut into `ranges` ranges (default: 1 per
    worker), each a task that lists its range and deletes its keys 1,000 a request. The
    keywords are `parabyte.remove`'s (`exclude`, `include`, `raw`) and `Client` options."""
    _check_sizes(1, 1, 1, ranges, None)
    keywords, client_options = _split("remove", {"recursive": recursive, **options})
    _refuse_dry_run(keywords)
    if not (recursive or source.endswith("/")):
        raise InvalidInputError(
            f"{source}: a cluster deletes a prefix (recursive=True); delete one key with "
            "parabyte.remove"
        )
    keywords.pop("recursive", None)
    with _Cluster(client, connect_timeout) as cluster:
        local = _client(client_options)
        parts = ranges or WRITE_RANGES_PER_WORKER * cluster.workers
        tasks = plan_remove(local, source, parts)
        return _write_job(cluster, local, tasks, client_options, keywords, progress, Opened())


def move(
    source: str,
    destination: str,
    client: distributed.Client | str | None = None,
    *,
    recursive: bool = False,
    progress: ProgressCallback | None = None,
    task_bytes: int = TASK_BYTES,
    task_objects: int = TASK_OBJECTS,
    driver_keys: int = DRIVER_KEYS,
    ranges: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    **options: Any,
) -> ClusterSummary:
    """Move the objects under the prefix `source` to `destination` (another prefix, or a
    directory every worker sees) on the workers of a Dask cluster: tasks of key ranges as
    `copy` cuts them, each copying its keys and then deleting each whose copy was compared
    with it, as `parabyte.move` does. The keywords are `parabyte.move`'s and `Client`
    options."""
    _check_sizes(task_bytes, task_objects, driver_keys, ranges, None)
    if not source.startswith("s3://"):
        raise InvalidInputError(
            f"{source}: a cluster moves objects of an s3:// prefix; move local files with "
            "parabyte.move"
        )
    return _copy_in_store(
        source,
        destination,
        client,
        moving=True,
        progress=progress,
        task_bytes=task_bytes,
        task_objects=task_objects,
        driver_keys=driver_keys,
        ranges=ranges,
        split_bytes=None,
        connect_timeout=connect_timeout,
        options={"recursive": recursive, **options},
    )


def _copy_in_store(
    source: str,
    destination: str,
    client: distributed.Client | str | None,
    *,
    moving: bool,
    progress: ProgressCallback | None,
    task_bytes: int,
    task_objects: int,
    driver_keys: int,
    ranges: int | None,
    split_bytes: int | None,
    connect_timeout: float,
    options: dict[str, Any],
) -> ClusterSummary:
    """A prefix copied inside the store (or streamed from a store of its own), or moved."""
    keywords, client_options = _split("move" if moving else "copy", options)
    _refuse_dry_run(keywords)
    recursive = keywords.pop("recursive", False)
    if not (recursive or source.endswith("/")):
        raise InvalidInputError(
            f"{source}: a cluster copies a prefix (recursive=True or a trailing '/'); copy "
            "one object with parabyte.copy"
        )
    # Between two stores no copy happens inside one: objects stream through the tasks.
    inside = not any(name.startswith("source_") for name in client_options)
    if inside and destination.startswith("s3://"):
        into, prefix = _prefix_of(destination), _prefix_of(source)
        if into.startswith(prefix) or prefix.startswith(into):
            raise InvalidInputError(
                f"{destination} and {source} overlap: the ranges would list what the job "
                "writes (or delete what it moves); give a destination outside the source"
            )
    with _Cluster(client, connect_timeout) as cluster:
        local = _client(client_options)
        opened = Opened()
        tasks = plan_copy(
            local,
            source,
            destination,
            opened,
            keywords,
            moving=moving,
            in_parts=inside,
            task_bytes=task_bytes,
            task_objects=task_objects,
            split_bytes=split_bytes or COPY_CUTOFF,
            driver_keys=driver_keys,
            ranges=ranges or RANGES_PER_WORKER * cluster.workers,
            workers=cluster.workers,
        )
        return _write_job(cluster, local, tasks, client_options, keywords, progress, opened)


def _manifest_into_store(
    path: str,
    destination: str,
    client: distributed.Client | str | None,
    *,
    progress: ProgressCallback | None,
    task_bytes: int,
    task_objects: int,
    connect_timeout: float,
    options: dict[str, Any],
) -> ClusterSummary:
    """A manifest's lines into `s3://`, `task_objects` lines (or `task_bytes`) a task."""
    keywords, client_options = _split("upload_many", dict(options))
    with _Cluster(client, connect_timeout) as cluster:
        local = _client(client_options)
        tasks = plan_manifest_into_store(
            path, destination, task_bytes=task_bytes, task_objects=task_objects
        )
        return _write_job(cluster, local, tasks, client_options, keywords, progress, Opened())


class _Cluster:
    """The Dask client a job submits through (connected here when given as an address,
    and disconnected when the job ends), its workers, and when the job began."""

    def __init__(self, client: distributed.Client | str | None, timeout: float) -> None:
        self.given = client
        self.dask = _dask_client(client, timeout)
        self.started = time.monotonic()
        self.addresses = list(self.dask.scheduler_info().get("workers", {}))
        self.workers = max(1, len(self.addresses))
        self.sharing = _processes_per_host(self.addresses)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        if isinstance(self.given, str):
            self.dask.close()


def _write_job(
    cluster: _Cluster,
    local: Client,
    tasks: Iterable[Any],
    client_options: dict[str, Any],
    keywords: dict[str, Any],
    progress: ProgressCallback | None,
    opened: Opened,
    *,
    on_result: Any = None,
) -> ClusterSummary:
    """Run a write job's tasks; when it ends, leave no upload of it open: a task that
    failed for good has its leftovers aborted, and so has every shared upload not
    completed (but a file's after Ctrl-C, which the next run resumes)."""
    job = Job(client_options, keywords, "", cluster.sharing)

    def heard(task: Any, result: _TaskResult | None) -> None:
        if isinstance(task, _Shared) and result is not None and not result.summary.failed:
            opened.completed.add(task.source)
        if result is None and isinstance(task, _Call) and task.leftovers is not None:
            abort_leftovers(local, task.leftovers, job.since_ms)
        if on_result is not None:
            on_result(task, result)

    interrupted = False
    try:
        return _run(
            cluster.dask,
            tasks,
            None,
            client_options,
            progress,
            cluster.started,
            [],
            cluster.sharing,
            writes=job,
            on_result=heard,
        )
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        opened.abort_the_rest(local, interrupted=interrupted)


def _check_sizes(
    task_bytes: int, task_objects: int, driver_keys: int, ranges: int | None, split: int | None
) -> None:
    for name, value in (
        ("task_bytes", task_bytes),
        ("task_objects", task_objects),
        ("driver_keys", driver_keys),
    ):
        if value < 1:
            raise InvalidInputError(f"{name} must be at least 1")
    if ranges is not None and ranges < 1:
        raise InvalidInputError("ranges must be at least 1")
    if split is not None and split < 1:
        raise InvalidInputError("split_bytes must be at least 1")


def _refuse_dry_run(keywords: dict[str, Any]) -> None:
    if keywords.pop("dry_run", False):
        raise InvalidInputError(
            "dry_run=True sends no write, so a cluster gains nothing: run the dry run with "
            "the local function (parabyte.sync, parabyte.upload, ...) and the same keywords"
        )
