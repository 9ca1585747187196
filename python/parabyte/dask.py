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
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

try:
    import distributed
except ImportError as error:  # the extra is optional; say how to get it
    raise ImportError(
        "parabyte.dask needs Dask's distributed scheduler: pip install 'parabyte[dask]'"
    ) from error
from distributed.comm import get_address_host

from . import Client, ItemLike, _client
from ._native import (
    Failure,
    Item,
    ObjectInfo,
    Summary,
    parse_manifest,
)
from .exceptions import Error, InvalidInputError, NetworkError

__all__ = ["ClusterProgress", "ClusterSummary", "KeyRange", "WorkerShare", "copy"]

TASK_BYTES = 1 << 30
"""Default bytes per items task: big enough that a task's fixed cost (about 10 ms on the
scheduler and worker) is noise, small enough that a rerun after a lost worker is cheap."""
TASK_OBJECTS = 1_000
"""Default cap on objects per items task, for prefixes of many small objects: a task of
1000 small objects takes a worker about a second, so its fixed cost stays in the noise."""
DRIVER_KEYS = 100_000
"""Default number of keys the driver lists itself before splitting the rest into ranges."""
RANGES_PER_WORKER = 8
"""Default key ranges per worker: enough that fast workers take over slow ranges."""
PROGRESS_INTERVAL_S = 0.5
"""How often a running task reports its progress to the driver, at most."""
CONNECT_TIMEOUT_S = 10.0
"""How long to try to reach a scheduler given by address."""
_PIECE = "/piece-"
"""Between a split object's task name and a piece's first byte, in progress reports."""


@dataclass(frozen=True)
class KeyRange:
    """One range of a prefix's key space (see `Client.split_key_space`): the keys listed
    after `after` up to the first key listed after `until_after` (`None`: from the first
    key, to the end)."""

    prefix: str
    after: str | None
    until_after: str | None

    def __str__(self) -> str:
        start = "from the first" if self.after is None else f"after {self.after!r}"
        end = "the end" if self.until_after is None else f"the first key after {self.until_after!r}"
        return f"{self.prefix} (keys {start} up to {end})"


@dataclass(frozen=True)
class _ItemsTask:
    items: list[Item]
    bytes: int

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent as columns of plain values: pickling a thousand `Item`s one by one cost the
        # driver and the worker about 0.1 CPU s each per 10,000 objects, columns 100x less.
        columns = (
            [item.source for item in self.items],
            [
                None if item.destination is None else os.fspath(item.destination)
                for item in self.items
            ],
            [item.size for item in self.items],
            [item.etag for item in self.items],
        )
        return (_items_task, (columns, self.bytes))


def _items_task(columns: tuple[list[Any], ...], task_bytes: int) -> _ItemsTask:
    """An `_ItemsTask` from the columns `_ItemsTask.__reduce__` sent."""
    sources, destinations, sizes, etags = columns
    items = [
        Item(source, destination, size=size, etag=etag)
        for source, destination, size, etag in zip(sources, destinations, sizes, etags, strict=True)
    ]
    return _ItemsTask(items, task_bytes)


@dataclass(frozen=True)
class _PiecesTask:
    """One object larger than `split_bytes`: a task per piece (`start, end` byte ranges),
    each into a piece file of its own, then one that makes the object of them."""

    item: Item
    bytes: int
    pieces: list[tuple[int, int]]


_Task = _ItemsTask | _PiecesTask | KeyRange


@dataclass(frozen=True)
class _PieceResult:
    worker: str
    start: int
    end: int
    summary: Summary | None
    """`None` when the piece failed: the task that assembles the object fetches its bytes."""
    cpu_seconds: float


@dataclass(frozen=True)
class _TaskResult:
    worker: str
    summary: Summary
    cpu_seconds: float
    pieces: tuple[_PieceResult, ...] = ()


def _took(task: _Task) -> list[str | KeyRange]:
    """What a task covered, as `WorkerShare.took` lists it."""
    if isinstance(task, KeyRange):
        return [task]
    if isinstance(task, _PiecesTask):
        return [task.item.source]
    return [item.source for item in task.items]


@dataclass
class WorkerShare:
    """What one worker did: its tasks, their totals, and which objects (or key ranges) it
    took, which for node-local destinations says where each file is."""

    tasks: int = 0
    objects: int = 0
    skipped: int = 0
    failed: int = 0
    bytes: int = 0
    cpu_seconds: float = 0.0
    """CPU time of its tasks' process while they ran (a worker thread per task counts the
    whole process, so run workers with one thread for exact figures)."""
    took: list[str | KeyRange] = field(default_factory=list)


@dataclass(frozen=True)
class ClusterSummary:
    """The job's `Summary` (totals over every task, `elapsed` the driver's wall time) and
    what each worker did. Reads like a `Summary`: `objects`, `bytes`, `failures`, `ok`,
    `raise_for_failures()` ... come from `summary`."""

    summary: Summary
    workers: dict[str, WorkerShare]
    tasks: int

    def __getattr__(self, name: str) -> Any:
        # Only the summary's own fields: dunder lookups (pickle, copy) and a half-built
        # instance must not recurse into here.
        summary = self.__dict__.get("summary")
        if name.startswith("__") or summary is None:
            raise AttributeError(name)
        return getattr(summary, name)

    def to_dict(self) -> dict[str, Any]:
        """The summary's fields, then `tasks` and `workers` (key ranges as text)."""
        shares = {
            address: {
                "tasks": share.tasks,
                "objects": share.objects,
                "skipped": share.skipped,
                "failed": share.failed,
                "bytes": share.bytes,
                "cpu_seconds": share.cpu_seconds,
                "took": [str(part) for part in share.took],
            }
            for address, share in self.workers.items()
        }
        return {**self.summary.to_dict(), "tasks": self.tasks, "workers": shares}


@dataclass(frozen=True)
class ClusterProgress:
    """How far the job has come, as passed to `copy(progress=...)`. Totals grow while
    key-range tasks list."""

    objects_done: int
    objects_failed: int
    objects_total: int
    bytes_done: int
    bytes_total: int
    tasks_done: int
    tasks_total: int


ProgressCallback = Callable[[ClusterProgress], object]


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
    """
    for name, value in (
        ("task_bytes", task_bytes),
        ("task_objects", task_objects),
        ("driver_keys", driver_keys),
    ):
        if value < 1:
            raise InvalidInputError(f"{name} must be at least 1")
    if ranges is not None and ranges < 1:
        raise InvalidInputError("ranges must be at least 1")
    if split_bytes is not None and split_bytes < 1:
        raise InvalidInputError("split_bytes must be at least 1")
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


def _read_manifest(path: os.PathLike[str]) -> tuple[list[Item], list[Failure]]:
    """A manifest's items, and its bad lines as failures named `FILE:LINE`."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInputError(f"cannot read manifest {os.fspath(path)}: {error}") from error
    items, errors = parse_manifest(text)
    refused = [
        Failure(f"{os.fspath(path)}:{line}", message, InvalidInputError(message))
        for line, message in errors
    ]
    return items, refused


def _dask_client(client: distributed.Client | str | None, timeout: float) -> distributed.Client:
    """The client to submit through; an address is connected to, with a clear error."""
    if isinstance(client, distributed.Client):
        return client
    if client is None:
        try:
            return distributed.get_client()
        except ValueError as error:
            raise InvalidInputError(
                "no Dask client: pass client=distributed.Client('tcp://HOST:PORT') or a "
                "scheduler address, or create a client first"
            ) from error
    try:
        return distributed.Client(client, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as error:
        raise NetworkError(
            f"cannot reach the Dask scheduler at {client} within {timeout:g} s "
            f"({error}); check the address (tcp://HOST:PORT) and that the scheduler runs"
        ) from error


def _plan(
    local: Client,
    source: str | Iterable[ItemLike],
    *,
    recursive: bool,
    task_bytes: int,
    task_objects: int,
    driver_keys: int,
    ranges: int,
    split_bytes: int | None,
) -> Iterator[_Task]:
    """The job's tasks: items packed by bytes, then key ranges for what the driver did not
    list."""
    if not isinstance(source, str):
        yield from _pack(_items(source), task_bytes, task_objects, split_bytes)
        return
    if not (source.startswith("s3://") and (recursive or source.endswith("/"))):
        if recursive:
            raise InvalidInputError(f"a recursive copy needs an s3:// prefix; {source} is one file")
        # One object: one task; it lands where `download_many` puts it (its key's path).
        yield _ItemsTask([Item(source)], 0)
        return
    prefix = source if source.endswith("/") or source == _bucket_root(source) else source + "/"
    below = len(prefix) - len(_bucket_root(prefix))  # keys land relative to the prefix
    listed = local.list(prefix)
    last_key: list[str] = []

    def first_keys() -> Iterator[tuple[Item, int]]:
        for count, (item, size) in enumerate(_items(listed)):
            last_key[:] = [item.source]
            key = item.source[len(_bucket_root(prefix)) :]
            yield Item(item.source, key[below:], size=item.size, etag=item.etag), size
            if count + 1 >= driver_keys:
                return

    yield from _pack(first_keys(), task_bytes, task_objects, split_bytes)
    try:
        more = next(listed, None) is not None
    except Error:
        more = True  # the range tasks list it again and report what breaks
    if not more:
        return
    after = last_key[0][len(_bucket_root(prefix)) :] if last_key else None
    boundaries = [b for b in local.split_key_space(prefix, ranges) if after is None or b > after]
    lows = [after, *boundaries]
    highs = [*boundaries, None]
    yield from (KeyRange(prefix, low, high) for low, high in zip(lows, highs, strict=True))


def _bucket_root(url: str) -> str:
    bucket = url.removeprefix("s3://").split("/", 1)[0]
    return f"s3://{bucket}/"


def _items(source: Iterable[ItemLike]) -> Iterator[tuple[Item, int]]:
    """Each item with its size (0 when unknown); destinations as `download_many` gives them."""
    for entry in source:
        if isinstance(entry, ObjectInfo):
            if entry.is_prefix or (entry.key.endswith("/") and entry.size == 0):
                continue  # a "folder": nothing to write, as in a local prefix copy
            yield Item(entry.url, None, size=entry.size, etag=entry.etag), entry.size
        elif isinstance(entry, Item):
            yield entry, entry.size or 0
        else:
            yield Item(entry), 0


def _pack(
    items: Iterable[tuple[Item, int]],
    task_bytes: int,
    task_objects: int,
    split_bytes: int | None = None,
) -> Iterator[_ItemsTask | _PiecesTask]:
    """Items into tasks, in order: each task up to `task_bytes` and `task_objects`; an item
    of `task_bytes` or more alone; one of more than `split_bytes` (with its ETag, which
    pins its pieces to one version) in pieces of `task_bytes`, at most `split_bytes`."""
    held: list[Item] = []
    held_bytes = 0
    for item, size in items:
        if split_bytes is not None and size > split_bytes and item.etag:
            piece = min(task_bytes, split_bytes)
            pieces = [(start, min(start + piece, size)) for start in range(0, size, piece)]
            yield _PiecesTask(item, size, pieces)
            continue
        if size >= task_bytes:
            yield _ItemsTask([item], size)
            continue
        if held and (held_bytes + size > task_bytes or len(held) >= task_objects):
            yield _ItemsTask(held, held_bytes)
            held, held_bytes = [], 0
        held.append(item)
        held_bytes += size
    if held:
        yield _ItemsTask(held, held_bytes)


def _processes_per_host(addresses: Iterable[str]) -> dict[str, int]:
    """How many worker processes each host runs."""
    hosts: dict[str, int] = {}
    for address in addresses:
        host = get_address_host(address)
        hosts[host] = hosts.get(host, 0) + 1
    return hosts


def _share_the_cores(worker_address: str, sharing: dict[str, int]) -> None:
    """Before this process's engine starts, give it its share of the host's cores: each
    engine runs one thread per core by default, and several worker processes on one host
    (a LocalCluster, `dask worker --nworkers N`) would otherwise run N threads per core and
    spend CPU switching between them. A user's own TOKIO_WORKER_THREADS wins."""
    processes = sharing.get(get_address_host(worker_address), 1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if processes > 1:
        os.environ.setdefault("TOKIO_WORKER_THREADS", str(max(1, (cores or 1) // processes)))


def _run_task(
    task: _Task,
    destination: str | None,
    options: dict[str, Any],
    topic: str,
    name: str,
    sharing: dict[str, int],
) -> _TaskResult:
    """One task, in a worker's process: one parabyte download with the job's options."""
    worker, client = _worker_client(options, sharing)
    report = _reporter(worker, topic, name)
    cpu = time.process_time()
    if isinstance(task, KeyRange):
        summary = client.download(
            task.prefix,
            destination,
            progress=report,
            after=task.after,
            until_after=task.until_after,
        )
    else:
        summary = client.download_many(task.items, destination, progress=report)
    return _TaskResult(worker.address, summary, time.process_time() - cpu)


def _worker_client(
    options: dict[str, Any], sharing: dict[str, int]
) -> tuple[distributed.Worker, Client]:
    """In a task: this worker, and its process's client for the job's options, its engine
    given the process's share of the host's cores first."""
    worker = distributed.get_worker()
    _share_the_cores(worker.address, sharing)
    return worker, _client(options)


def _reporter(worker: distributed.Worker, topic: str, name: str) -> Callable[[Any], None]:
    """A progress callback that sends a task's figures to the driver through Dask's event
    log, at most every `PROGRESS_INTERVAL_S`."""
    reported = [0.0]

    def report(now: Any) -> None:
        moment = time.monotonic()
        if moment - reported[0] < PROGRESS_INTERVAL_S:
            return
        reported[0] = moment
        figures = [
            now.objects_done,
            now.objects_failed,
            now.objects_total,
            now.bytes_done,
            now.bytes_total,
        ]
        worker.log_event(topic, {"task": name, "figures": figures})

    return report


def _run_piece(
    item: Item,
    destination: str,
    start: int,
    end: int,
    options: dict[str, Any],
    topic: str,
    name: str,
    sharing: dict[str, int],
) -> _PieceResult:
    """One piece of a split object, in a worker's process. A piece that fails is not the
    object's failure: the task that assembles it fetches what the piece did not bring.
    Its progress is reported under `name`, its object's task name and its first byte."""
    worker, client = _worker_client(options, sharing)
    report = _reporter(worker, topic, f"{name}{_PIECE}{start}")
    cpu = time.process_time()
    try:
        summary: Summary | None = client.download_piece(
            item, destination, start, end, progress=report
        )
    except Error:
        summary = None
    return _PieceResult(worker.address, start, end, summary, time.process_time() - cpu)


def _assemble(
    task: _PiecesTask,
    destination: str,
    options: dict[str, Any],
    topic: str,
    name: str,
    sharing: dict[str, int],
    *pieces: _PieceResult,
) -> _TaskResult:
    """The last task of a split object, once its pieces ran: their bytes go into the
    object's temporary file, then an ordinary download of the object fetches whatever they
    lack (a failed piece, or pieces on another host's disk), checks the whole object by the
    store's checksum and gives it its name."""
    worker, client = _worker_client(options, sharing)
    cpu = time.process_time()
    client.adopt_pieces(task.item, destination, [start for start, _ in task.pieces])
    result = _run_task(
        _ItemsTask([task.item], task.bytes), destination, options, topic, name, sharing
    )
    return _TaskResult(worker.address, result.summary, time.process_time() - cpu, pieces)


class _Progress:
    """The figures running tasks last reported, and those of finished tasks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[str, list[int]] = {}
        self.finished = [0, 0, 0, 0, 0]
        self.tasks_done = 0
        self.tasks_total = 0
        # Known before a task runs: its items' count and bytes.
        self.planned_objects = 0
        self.planned_bytes = 0

    def submitted(self, task: _Task) -> None:
        with self.lock:
            self.tasks_total += 1
            if isinstance(task, _ItemsTask):
                self.planned_objects += len(task.items)
                self.planned_bytes += task.bytes
            elif isinstance(task, _PiecesTask):
                self.tasks_total += len(task.pieces)
                self.planned_objects += 1
                self.planned_bytes += task.bytes

    def on_event(self, event: tuple[float, dict[str, Any]]) -> None:
        _, message = event
        with self.lock:
            self.running[message["task"]] = message["figures"]

    def task_done(
        self,
        name: str,
        task: _Task,
        summary: Summary | None,
        pieces: tuple[_PieceResult, ...] = (),
    ) -> None:
        """Task `name` ended: with its summary and, for a split object, its pieces' results;
        `None` when it failed for good (its pieces end with it)."""
        piece_bytes = sum(piece.summary.bytes for piece in pieces if piece.summary)
        piece_tasks = len(task.pieces) if isinstance(task, _PiecesTask) else 0
        with self.lock:
            self.running.pop(name, None)
            for piece in [task for task in self.running if task.startswith(name + _PIECE)]:
                del self.running[piece]
            self.tasks_done += 1 + piece_tasks
            if summary is not None:
                done = summary.objects + summary.skipped
                fetched = summary.bytes + piece_bytes
                figures = [done, summary.failed, done + summary.failed, fetched, 0]
                self.finished = [a + b for a, b in zip(self.finished, figures, strict=True)]

    def snapshot(self) -> ClusterProgress:
        with self.lock:
            sums = list(self.finished)
            for figures in self.running.values():
                sums = [a + b for a, b in zip(sums, figures, strict=True)]
            return ClusterProgress(
                objects_done=sums[0],
                objects_failed=sums[1],
                objects_total=max(sums[2], self.planned_objects),
                bytes_done=sums[3],
                bytes_total=max(sums[4], self.planned_bytes),
                tasks_done=self.tasks_done,
                tasks_total=self.tasks_total,
            )


def _run(
    dask_client: distributed.Client,
    tasks: Iterable[_Task],
    destination: str | None,
    options: dict[str, Any],
    progress: ProgressCallback | None,
    started: float,
    refused: list[Failure],
    sharing: dict[str, int],
) -> ClusterSummary:
    """Submit the tasks as they are planned (among those waiting, bigger ones first),
    follow them, and sum up."""
    job = uuid.uuid4().hex[:12]
    topic = f"parabyte-progress-{job}"
    tally = _Progress()
    if progress is not None:
        dask_client.subscribe_topic(topic, tally.on_event)
    names = {}
    futures = []
    pieces: list[distributed.Future] = []  # followed through the tasks that assemble them
    results: list[tuple[_TaskResult, _Task]] = []
    failures: list[Failure] = list(refused)
    finished: queue.SimpleQueue[distributed.Future] = queue.SimpleQueue()
    try:
        for index, task in enumerate(tasks):
            # The task stream shows them as "parabyte-copy" (and "parabyte-piece").
            name = f"parabyte-copy-{job}-{index}"
            weight = 0 if isinstance(task, KeyRange) else task.bytes
            if isinstance(task, _PiecesTask):
                parts = [
                    dask_client.submit(
                        _run_piece,
                        task.item,
                        destination,
                        start,
                        end,
                        options,
                        topic,
                        name,
                        sharing,
                        key=f"parabyte-piece-{job}-{index}-{start}",
                        priority=weight,
                    )
                    for start, end in task.pieces
                ]
                pieces.extend(parts)
                run, after = _assemble, parts  # runs once its pieces have
            else:
                run, after = _run_task, []
            future = dask_client.submit(
                run,
                task,
                destination,
                options,
                topic,
                name,
                sharing,
                *after,
                key=name,
                priority=weight,
            )
            names[future.key] = (name, task)
            futures.append(future)
            tally.submitted(task)
            future.add_done_callback(finished.put)
        for _ in futures:
            future = _next_finished(finished, progress, tally)
            name, task = names[future.key]
            outcome = _outcome(future, task)
            if isinstance(outcome, _TaskResult):
                results.append((outcome, task))
                tally.task_done(name, task, outcome.summary, outcome.pieces)
            else:
                failures.extend(outcome)
                tally.task_done(name, task, None)
            if progress is not None:
                progress(tally.snapshot())
    finally:
        # One request for whatever still runs (an error, Ctrl-C), not one per task.
        unfinished = [future for future in [*futures, *pieces] if not future.done()]
        if unfinished:
            dask_client.cancel(unfinished)
        if progress is not None:
            dask_client.unsubscribe_topic(topic)
    tasks_run = len(futures) + len(pieces)
    return _sum_up(results, failures, tasks_run, time.monotonic() - started)


def _next_finished(
    finished: queue.SimpleQueue[distributed.Future],
    progress: ProgressCallback | None,
    tally: _Progress,
) -> distributed.Future:
    """The next task to finish, telling `progress` how the running ones go meanwhile."""
    while True:
        try:
            return finished.get(timeout=PROGRESS_INTERVAL_S)
        except queue.Empty:
            if progress is not None:
                progress(tally.snapshot())


def _outcome(future: distributed.Future, task: _Task) -> _TaskResult | list[Failure]:
    """A finished task's result; a task that failed for good becomes a failure per object it
    held. A parabyte error that stops a whole run (bad credentials, no such bucket) stops
    the job, as it would a local run."""
    try:
        return future.result()
    except Error:
        raise
    except Exception as error:  # noqa: BLE001 - any cluster failure is reported by name
        message = f"the task failed on the cluster: {type(error).__name__}: {error}"
        exception = Error(message)
        if isinstance(task, KeyRange):
            return [Failure(str(task), message, exception)]
        return [Failure(item.source, message, exception) for item in task.items]


def _sum_up(
    results: list[tuple[_TaskResult, _Task]], failures: list[Failure], tasks: int, elapsed: float
) -> ClusterSummary:
    workers: dict[str, WorkerShare] = {}
    summaries = [result.summary for result, _ in results]
    for result, task in results:
        for piece in result.pieces:
            share = workers.setdefault(piece.worker, WorkerShare())
            share.took.append(f"{_took(task)[0]} bytes {piece.start}..{piece.end}")
            share.tasks += 1
            share.cpu_seconds += piece.cpu_seconds
            if piece.summary is not None:
                share.bytes += piece.summary.bytes
                summaries.append(piece.summary)
        share = workers.setdefault(result.worker, WorkerShare())
        summary = result.summary
        share.took.extend(_took(task))
        share.tasks += 1
        share.objects += summary.objects
        share.skipped += summary.skipped
        share.failed += summary.failed
        share.bytes += summary.bytes
        share.cpu_seconds += result.cpu_seconds
        failures.extend(summary.failures)

    # A split object's pieces were put together as an interrupted download's parts would
    # be; nothing of it was resumed from an earlier run.
    whole = [result.summary for result, _ in results if not result.pieces]
    summary = Summary.merged(summaries, elapsed, failures=failures, resumed_from=whole)
    return ClusterSummary(summary, workers, tasks)
