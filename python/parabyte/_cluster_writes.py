"""The write jobs of a Dask cluster, cut into tasks that each run the one engine on a
worker, with the gates of a local run: uploads from a tree every worker sees, copies inside
a store (or streamed between two), `sync` in every direction, and deletes of a prefix.

- **A call task** (`_Call`) is one engine call: files uploaded (`upload_many`), one range
  of a prefix's key space copied, moved or deleted, one range of a sync merged, or deletes
  a sync's rule allowed. Tasks partition the job's keys, so two never write one key.
- **A shared upload** (`_Shared`) is one large file (or object, copied in UploadPartCopy
  parts) whose multipart upload the driver opened: a task per range of its parts, each
  keeping the parts the store holds of the same bytes when it runs again, then one task
  that completes it through the one commit check (the FULL_OBJECT CRC64NVME; a copy's
  checksum against the source's).
- **Leftovers.** A task that uploads in parts itself (a file of its batch, an object of its
  range) aborts, when it ends, the uploads of its own keys begun since the job started and
  still open: what an earlier attempt left when its worker was lost. Such a file was not
  stored whole, so this attempt sent it in parts again: a task that sent nothing in parts
  has nothing to look for, and sends no request for it. The driver does the
  same for a task that failed for good, and aborts every shared upload not completed, so
  no upload stays open when the job ends (but one kept for the next run after Ctrl-C).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import Client, _native
from ._cluster_worker import _reporter, _TaskResult, _worker_client
from ._native import Failure, Summary
from .exceptions import Error, InvalidInputError

SINCE_MARGIN_S = 300
"""Uploads begun this long before the job started count as the job's when found open: the
store's clock and the driver's may differ by that much."""
SMALLEST_PART = 5 << 20
"""S3's smallest part: a file no larger never goes up in parts, so leaves no upload open."""
DELETES_PER_TASK = 10_000
"""Names per task deleting what a sync's rule allowed: ten DeleteObjects requests."""

# The engine calls a task may make, each given the worker's client first.
_CALLS: dict[str, Callable[..., Any]] = {
    "upload_many": lambda client, items, **keywords: client.upload_many(items, **keywords),
    "copy_range": _native.copy_range,
    "remove_range": _native.remove_range,
    "sync_part": _native.sync_part,
    "sync_deletes": _native.sync_deletes,
    "manifest_into_store": _native.manifest_into_store,
}
# Those that take a progress callback.
_REPORTING = frozenset(
    {"upload_many", "copy_range", "sync_part", "sync_deletes", "manifest_into_store"}
)
# Those that look for an earlier attempt's open uploads themselves, from when the job began.
_SINCE = frozenset({"manifest_into_store"})


@dataclass(frozen=True)
class Leftovers:
    """Where a task's uploads in parts would be found open: under `prefix`, of `keys`, or
    (without them) of the keys after `after` up to `until_after`."""

    prefix: str
    keys: tuple[str, ...] | None = None
    after: str | None = None
    until_after: str | None = None


@dataclass(frozen=True)
class _Call:
    """One engine call on a worker: `call` (a name of `_CALLS`) with `args`, and the job's
    keywords for it."""

    call: str
    args: tuple[Any, ...]
    bytes: int = 0
    objects: int = 0
    covers: tuple[str, ...] = ()
    """What it covers: the objects it holds, or its range; its failure names each."""
    leftovers: Leftovers | None = None


@dataclass(frozen=True)
class _Shared:
    """One multipart upload the driver opened, its parts sent by several tasks: `kind` is
    "upload" (a file, `source` its path) or "copy" (an object, `source` its URL)."""

    kind: str
    source: str
    upload: tuple[str, str, int, int, int, str]
    """(to, upload_id, size, part_size, parts, version), as `_native` gives it."""
    ranges: tuple[tuple[int, int], ...]
    bytes: int
    objects: int = 1

    @property
    def covers(self) -> tuple[str, ...]:
        return (self.source,)


@dataclass(frozen=True)
class _PartsResult:
    worker: str
    parts: list[tuple[int, str, int]]
    summary: Summary
    cpu_seconds: float


@dataclass
class Job:
    """What every task of one job shares: the client's options, the calls' keywords, where
    progress goes, the cores each host shares, and when the job began (Unix ms)."""

    options: dict[str, Any]
    keywords: dict[str, Any]
    topic: str
    sharing: dict[str, int]
    since_ms: int = field(default_factory=lambda: int((time.time() - SINCE_MARGIN_S) * 1000))


def run_call(task: _Call, job: Job, name: str) -> _TaskResult:
    """A call task, in a worker's process."""
    worker, client = _worker_client(job.options, job.sharing)
    cpu = time.process_time()
    extra: dict[str, Any] = {}
    if task.call in _REPORTING:
        extra["progress"] = _reporter(worker, job.topic, name)
    if task.call in _SINCE:
        extra["since_ms"] = job.since_ms
    outcome = _CALLS[task.call](client, *task.args, **job.keywords, **extra)
    summary, verdict = outcome if isinstance(outcome, tuple) else (outcome, None)
    # An upload an earlier attempt left open is of a file (or object) not stored whole, so
    # this attempt sent it in parts again: only then is there anything to look for.
    if task.leftovers is not None and summary.requests.multipart:
        abort_leftovers(client, task.leftovers, job.since_ms)
    return _TaskResult(worker.address, summary, time.process_time() - cpu, outcome=verdict)


def abort_leftovers(client: Client, leftovers: Leftovers, since_ms: int) -> int:
    """Abort the uploads a task's earlier attempts left open."""
    return _native.abort_uploads_left(
        client,
        leftovers.prefix,
        since_ms,
        keys=None if leftovers.keys is None else list(leftovers.keys),
        after=leftovers.after,
        until_after=leftovers.until_after,
    )


def send_parts(task: _Shared, first: int, last: int, job: Job, name: str) -> _PartsResult:
    """One range of a shared upload's parts, in a worker's process; its progress reported
    under `name`."""
    worker, client = _worker_client(job.options, job.sharing)
    report = _reporter(worker, job.topic, name)
    cpu = time.process_time()
    parts, summary = _native.send_shared_parts(
        client, task.kind, task.source, task.upload, first, last, progress=report
    )
    return _PartsResult(worker.address, parts, summary, time.process_time() - cpu)


def commit(task: _Shared, job: Job, *sent: _PartsResult) -> _TaskResult:
    """A shared upload's last task, once every range of its parts was sent: complete it,
    checked, and add up what its tasks did."""
    worker, client = _worker_client(job.options, job.sharing)
    cpu = time.process_time()
    parts = [part for result in sent for part in result.parts]
    done = _native.commit_shared_upload(
        client, task.kind, task.source, task.upload, parts, **storing(job.keywords)
    )
    summaries = [result.summary for result in sent]
    summary = Summary.merged([*summaries, done], done.elapsed_seconds, resumed_from=[done])
    cpu_seconds = time.process_time() - cpu + sum(result.cpu_seconds for result in sent)
    return _TaskResult(worker.address, summary, cpu_seconds)


# The upload keywords that say how an object is stored (not which files go, nor progress).
_STORING_KEYWORDS = (
    frozenset(_native.UPLOAD_KEYWORDS) - frozenset(_native.UPLOAD_SELECTION_KEYWORDS) - {"progress"}
)


def storing(keywords: dict[str, Any]) -> dict[str, Any]:
    """Of a job's keywords, those that say how objects are stored."""
    return {name: value for name, value in keywords.items() if name in _STORING_KEYWORDS}


def worker_share(parts: int, part_size: int, workers: int) -> int:
    """The bytes of a shared upload's parts when they go one range a worker."""
    return -(-parts // workers) * part_size


def part_ranges(parts: int, part_size: int, task_bytes: int) -> tuple[tuple[int, int], ...]:
    """A shared upload's parts, `task_bytes` a task (at least one part)."""
    per_task = max(1, task_bytes // part_size)
    return tuple(
        (first, min(first + per_task - 1, parts)) for first in range(1, parts + 1, per_task)
    )


@dataclass
class Opened:
    """The shared uploads the driver opened, and which of them completed: those that did
    not are aborted when the job ends (but a file's, after Ctrl-C: its next run resumes
    it)."""

    uploads: dict[str, tuple[str, tuple[str, str, int, int, int, str]]] = field(
        default_factory=dict
    )
    completed: set[str] = field(default_factory=set)

    def abort_the_rest(self, client: Client, *, interrupted: bool) -> None:
        for source, (kind, upload) in self.uploads.items():
            if source in self.completed or (interrupted and kind == "upload"):
                continue
            try:
                _native.abort_shared_upload(client, upload)
            except Error:
                pass  # best effort: the object's own failure is what the job reports


def plan_upload(
    local: Client,
    source: str,
    destination: str,
    keywords: dict[str, Any],
    opened: Opened,
    *,
    task_bytes: int,
    task_objects: int,
    split_bytes: int,
    workers: int,
) -> Iterator[_Call | _Shared | Failure]:
    """An upload's tasks, as the driver walks the tree (as a local upload walks it): files
    packed into tasks by bytes in key order, a file of more than `split_bytes` a shared
    upload whose parts go `task_bytes` a task, or more where that would make more tasks
    than `workers`."""
    selecting = {k: v for k, v in keywords.items() if k not in ("progress",)}
    held: list[tuple[str, str]] = []
    held_bytes = 0
    in_parts: list[str] = []
    prefix = _prefix_of(destination)

    def flush() -> _Call:
        leftovers = Leftovers(prefix, keys=tuple(in_parts)) if in_parts else None
        task = _Call(
            "upload_many",
            (list(held),),
            bytes=held_bytes,
            objects=len(held),
            covers=tuple(path for path, _ in held),
            leftovers=leftovers,
        )
        held.clear()
        in_parts.clear()
        return task

    for entry in _native.walk_upload(local, source, destination, **selecting):
        kind = entry[0]
        if kind == "refused":
            yield Failure(entry[1], entry[2], Error(entry[2]))
            continue
        if kind != "file":
            continue  # a link passed over: said by a local run, and no failure
        _, path, url, size = entry
        if size > split_bytes and size > SMALLEST_PART:
            try:
                upload = _native.open_shared_upload(local, "upload", path, url, **storing(keywords))
            except Error as error:
                yield Failure(str(path), str(error), error)
                continue
            opened.uploads[str(path)] = ("upload", upload)
            # No more tasks than workers: a fifth task on four workers would start a second
            # wave, which ends on its slowest part while the other workers wait for the
            # commit (docs/PROFILE.md, stop 52). Parts a lost task sent are reused.
            per_worker = worker_share(upload[4], upload[3], workers)
            ranges = part_ranges(upload[4], upload[3], max(task_bytes, per_worker))
            yield _Shared("upload", str(path), upload, ranges, size)
            continue
        if held and (held_bytes + size > task_bytes or len(held) >= task_objects):
            yield flush()
            held_bytes = 0
        held.append((str(path), url))
        held_bytes += size
        if size > SMALLEST_PART:
            in_parts.append(url)
    if held:
        yield flush()


def plan_copy(
    local: Client,
    source: str,
    destination: str,
    opened: Opened,
    keywords: dict[str, Any],
    *,
    moving: bool,
    in_parts: bool,
    task_bytes: int,
    task_objects: int,
    split_bytes: int,
    driver_keys: int,
    ranges: int,
    workers: int,
) -> Iterator[_Call | _Shared | Failure]:
    """A prefix copied (or moved) inside the store, or streamed from another: the driver
    lists up to `driver_keys` keys and cuts them into key ranges of `task_bytes` or
    `task_objects`, each a task that lists and copies its range; an object of more than
    `split_bytes` (with `in_parts`: inside one store, not moving) a shared copy in
    UploadPartCopy parts, a range of them for each of the `workers`. Past `driver_keys`, the rest of the key space is cut into `ranges`
    ranges, found with a few one-key requests."""
    prefix = _prefix_of(source)
    into = _prefix_of(destination)
    root = _bucket_root(prefix)
    below = len(prefix) - len(root)
    into_key = into[len(_bucket_root(into)) :]

    def range_task(after: str | None, until_after: str | None, size: int, count: int) -> _Call:
        # Where the range's keys land: uploads in parts its attempts left are found there.
        leftovers = Leftovers(
            into,
            after=None if after is None else into_key + after[below:],
            until_after=None if until_after is None else into_key + until_after[below:],
        )
        return _Call(
            "copy_range",
            (prefix, destination, after, until_after, moving),
            bytes=size,
            objects=count,
            covers=(f"{prefix} (keys after {after!r} up to {until_after!r})",),
            leftovers=leftovers,
        )

    after: str | None = None  # the range being gathered starts after this key
    last: str | None = None  # the last key listed
    run_bytes = run_objects = 0
    listed_all = True
    for count, entry in enumerate(local.list(prefix)):
        if entry.is_prefix:
            continue
        big = in_parts and not moving and entry.size > split_bytes and entry.etag
        if not big:
            if run_objects and (run_bytes + entry.size > task_bytes or run_objects >= task_objects):
                yield range_task(after, last, run_bytes, run_objects)
                after, run_bytes, run_objects = last, 0, 0
            run_bytes += entry.size
            run_objects += 1
            last = entry.key
        else:
            if run_objects:
                yield range_task(after, last, run_bytes, run_objects)
                run_bytes = run_objects = 0
            url = root + entry.key
            to = into + entry.key[below:]
            try:
                upload = _native.open_shared_upload(
                    local, "copy", url, to, entry.size, entry.etag, **storing(keywords)
                )
            except Error as error:
                yield Failure(url, str(error), error)
            else:
                opened.uploads[url] = ("copy", upload)
                # No byte of a copy passes through a worker: its parts go one range a
                # worker, each copying its parts in parallel, as a local run copies them.
                per_worker = worker_share(upload[4], upload[3], workers)
                parts = part_ranges(upload[4], upload[3], per_worker)
                yield _Shared("copy", url, upload, parts, entry.size)
            after = last = entry.key
        if count + 1 >= driver_keys:
            listed_all = False
            break
    if run_objects:
        yield range_task(after, last, run_bytes, run_objects)
    # The rest of the key space: keys past the driver's last (or come since it listed).
    boundaries = [] if listed_all else local.split_key_space(prefix, ranges)
    boundaries = [boundary for boundary in boundaries if last is None or boundary > last]
    lows: list[str | None] = [last, *boundaries]
    highs: list[str | None] = [*boundaries, None]
    for low, high in zip(lows, highs, strict=True):
        yield range_task(low, high, 0, 0)


def plan_manifest_into_store(
    path: str, destination: str, *, task_bytes: int, task_objects: int
) -> Iterator[_Call]:
    """A manifest into `s3://` (local files, objects, web URLs, each to its key), cut into
    tasks of `task_objects` lines or `task_bytes` of the sizes the lines give; each task runs
    its lines as `cp --manifest` runs them, its bad lines failures named `FILE:LINE`."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines(keepends=True)
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInputError(f"cannot read manifest {path}: {error}") from error
    first, held, held_bytes = 1, [], 0
    for number, line in enumerate(lines, start=1):
        items, _ = _native.parse_manifest(line)
        size = sum(item.size or 0 for item in items)
        if held and (len(held) >= task_objects or held_bytes + size > task_bytes):
            yield _lines_task(path, first, held, destination, held_bytes)
            first, held, held_bytes = number, [], 0
        held.append(line)
        held_bytes += size
    if held:
        yield _lines_task(path, first, held, destination, held_bytes)


def _lines_task(path: str, first: int, lines: list[str], destination: str, size: int) -> _Call:
    last = first + len(lines) - 1
    return _Call(
        "manifest_into_store",
        (path, first, "".join(lines), destination),
        bytes=size,
        objects=len(lines),
        covers=(f"{path}:{first}-{last}",),
    )


def plan_remove(local: Client, source: str, ranges: int) -> Iterator[_Call]:
    """A prefix deleted by ranges of its key space, each a task that lists and deletes its
    range 1,000 keys a request."""
    prefix = _prefix_of(source)
    boundaries = local.split_key_space(prefix, ranges)
    lows: list[str | None] = [None, *boundaries]
    highs: list[str | None] = [*boundaries, None]
    for low, high in zip(lows, highs, strict=True):
        covers = (f"{prefix} (keys after {low!r} up to {high!r})",)
        yield _Call("remove_range", (prefix, low, high), covers=covers)


def sync_boundaries(local: Client, source: str, destination: str, ranges: int) -> list[str]:
    """Where a sync's key space is cut: names below both sides. A directory's top-level
    names cost no request and follow the tree's own shape (its folders); a store's prefix is
    cut by `split_key_space` (a few one-key requests) when no directory side has enough."""
    for side in (source, destination):
        if not side.startswith("s3://") and os.path.isdir(side):
            names = sorted(
                entry.name + ("/" if entry.is_dir(follow_symlinks=False) else "")
                for entry in os.scandir(side)
                if _is_key(entry.name)
            )
            if len(names) >= ranges:
                step = len(names) // ranges
                return names[step - 1 : step * (ranges - 1) : step]
    for side in (source, destination):
        if side.startswith("s3://"):
            prefix = _prefix_of(side)
            below = len(prefix) - len(_bucket_root(prefix))
            return [b[below:] for b in local.split_key_space(prefix, ranges)]
    return []


def plan_sync(local: Client, source: str, destination: str, ranges: int) -> Iterator[_Call]:
    """A sync's first stage: a task per range of the key space, each listing both sides
    within its range and merging them; its deletes come back, not made."""
    boundaries = sync_boundaries(local, source, destination, ranges)
    lows: list[str | None] = [None, *boundaries]
    highs: list[str | None] = [*boundaries, None]
    into = _prefix_of(destination) if destination.startswith("s3://") else None
    for low, high in zip(lows, highs, strict=True):
        leftovers = None
        if into is not None:
            root_key = into[len(_bucket_root(into)) :]
            leftovers = Leftovers(
                into,
                after=None if low is None else root_key + low,
                until_after=None if high is None else root_key + high,
            )
        covers = (f"{source} (names after {low!r} up to {high!r})",)
        yield _Call(
            "sync_part", (source, destination, low, high), covers=covers, leftovers=leftovers
        )


def delete_tasks(source: str, destination: str, names: Iterable[str]) -> Iterator[_Call]:
    """A sync's second stage: the deletes its rule allowed, `DELETES_PER_TASK` a task."""
    batch: list[str] = []
    for name in names:
        batch.append(name)
        if len(batch) >= DELETES_PER_TASK:
            yield _delete_task(source, destination, batch)
            batch = []
    if batch:
        yield _delete_task(source, destination, batch)


def _delete_task(source: str, destination: str, names: list[str]) -> _Call:
    covers = tuple(f"{destination.rstrip('/')}/{name}" for name in names)
    return _Call("sync_deletes", (source, destination, names), objects=len(names), covers=covers)


def _is_key(name: str) -> bool:
    """A file name that can be (part of) a key: UTF-8, as every key is."""
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def _bucket_root(url: str) -> str:
    bucket = url.removeprefix("s3://").split("/", 1)[0]
    return f"s3://{bucket}/"


def _prefix_of(url: str) -> str:
    """An `s3://` source or destination as a prefix: `s3://b/p` is `s3://b/p/`."""
    if url == _bucket_root(url) or url.endswith("/"):
        return url
    return url + "/"
