"""The download jobs of a Dask cluster (`parabyte.dask.copy` into a directory), cut into
tasks: items packed by bytes, an object split into pieces that one more task assembles,
and key ranges a task lists itself. Each task is one ordinary download in the worker's
process."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import distributed

from . import Client, ItemLike
from ._cluster_worker import (
    _PIECE,
    _PieceResult,
    _reporter,
    _TaskResult,
    _worker_client,
)
from ._native import Failure, Item, ObjectInfo, Summary, parse_manifest
from .exceptions import Error, InvalidInputError


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


_DownloadTask = _ItemsTask | _PiecesTask | KeyRange


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
) -> Iterator[_DownloadTask]:
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


def _run_task(
    task: _DownloadTask,
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


def _submit_download(
    dask_client: distributed.Client,
    task: _ItemsTask | _PiecesTask | KeyRange,
    destination: str | None,
    options: dict[str, Any],
    topic: str,
    name: str,
    sharing: dict[str, int],
    pieces: list[distributed.Future],
    weight: int,
) -> distributed.Future:
    """A download task, submitted; a split object's pieces go into `pieces`, followed
    through the task that assembles them."""
    after: list[distributed.Future] = []
    if isinstance(task, _PiecesTask):
        after = [
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
                key=f"{name.replace('parabyte-copy', 'parabyte-piece')}-{start}",
                priority=weight,
            )
            for start, end in task.pieces
        ]
        pieces.extend(after)
    run = _assemble if isinstance(task, _PiecesTask) else _run_task
    return dask_client.submit(
        run, task, destination, options, topic, name, sharing, *after, key=name, priority=weight
    )
