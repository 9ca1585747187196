"""Running one cluster job, whatever its tasks: submit them as the driver plans them
(bigger first among those waiting), follow them, report progress, and add up what each
worker did into one `ClusterSummary`."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import distributed

from ._cluster_downloads import KeyRange, _ItemsTask, _PiecesTask, _submit_download
from ._cluster_worker import (
    _PIECE,
    PROGRESS_INTERVAL_S,
    _PieceResult,
    _TaskResult,
)
from ._cluster_writes import Job, _Call, _Shared, commit, run_call, send_parts
from ._native import Failure, Summary
from .exceptions import Error, InvalidInputError, NetworkError

_Task = _ItemsTask | _PiecesTask | KeyRange | _Call | _Shared


def _took(task: _Task) -> list[str | KeyRange]:
    """What a task covered, as `WorkerShare.took` lists it."""
    if isinstance(task, KeyRange):
        return [task]
    if isinstance(task, _PiecesTask):
        return [task.item.source]
    if isinstance(task, _Call | _Shared):
        return list(task.covers)
    return [item.source for item in task.items]


def _shown(task: _Task) -> list[str | KeyRange]:
    """What a task covered, as `WorkerShare.took` keeps it: a write task's batch of files or
    names as its first and last (a job of millions of files keeps no list of them all)."""
    took = _took(task)
    if isinstance(task, _Call) and len(took) > 1:
        return [f"{took[0]} .. {took[-1]} ({len(took)} items)"]
    return took


@dataclass
class WorkerShare:
    """What one worker did: its tasks, their totals, and which objects (or key ranges) it
    took, which for node-local destinations says where each file is (a write job's batch
    of files or names is shown by its first and last)."""

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

    def joined(
        self,
        later: ClusterSummary | None,
        *,
        elapsed: float,
        failures: Iterable[Failure] = (),
    ) -> ClusterSummary:
        """This summary and `later`'s (another stage of the same job, a sync's deletes) as
        one, with `failures` more of the job's; `elapsed` is the whole job's."""
        stages = [self] if later is None else [self, later]
        every_failure = [f for stage in stages for f in stage.summary.failures] + list(failures)
        summary = Summary.merged(
            [stage.summary for stage in stages], elapsed, failures=every_failure
        )
        workers: dict[str, WorkerShare] = {}
        for stage in stages:
            for address, share in stage.workers.items():
                mine = workers.setdefault(address, WorkerShare())
                mine.tasks += share.tasks
                mine.objects += share.objects
                mine.skipped += share.skipped
                mine.failed += share.failed
                mine.bytes += share.bytes
                mine.cpu_seconds += share.cpu_seconds
                mine.took.extend(share.took)
        return ClusterSummary(summary, workers, sum(stage.tasks for stage in stages))

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
            elif isinstance(task, _Call | _Shared):
                self.planned_objects += task.objects
                self.planned_bytes += task.bytes
                if isinstance(task, _Shared):
                    self.tasks_total += len(task.ranges)
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
        piece_tasks = (
            len(task.pieces)
            if isinstance(task, _PiecesTask)
            else len(task.ranges)
            if isinstance(task, _Shared)
            else 0
        )
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
    tasks: Iterable[_Task | Failure],
    destination: str | None,
    options: dict[str, Any],
    progress: ProgressCallback | None,
    started: float,
    refused: list[Failure],
    sharing: dict[str, int],
    *,
    writes: Job | None = None,
    on_result: Callable[[_Task, _TaskResult | None], None] | None = None,
) -> ClusterSummary:
    """Submit the tasks as they are planned (among those waiting, bigger ones first),
    follow them, and sum up. A failure the planner gives instead of a task is one of the
    job's. `writes`: what a write job's tasks share; `on_result` hears of each task as it
    ends (`None`: it failed for good)."""
    job = uuid.uuid4().hex[:12]
    topic = f"parabyte-progress-{job}"
    if writes is not None:
        writes.topic = topic
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
            if isinstance(task, Failure):
                failures.append(task)
                continue
            # The task stream shows them as "parabyte-copy" (and "parabyte-piece").
            name = f"parabyte-copy-{job}-{index}"
            weight = 0 if isinstance(task, KeyRange) else task.bytes
            if isinstance(task, _Call):
                future = dask_client.submit(run_call, task, writes, name, key=name, priority=weight)
            elif isinstance(task, _Shared):
                parts = [
                    dask_client.submit(
                        send_parts,
                        task,
                        first,
                        last,
                        writes,
                        f"{name}{_PIECE}{first}",
                        key=f"parabyte-piece-{job}-{index}-{first}",
                        priority=weight,
                    )
                    for first, last in task.ranges
                ]
                pieces.extend(parts)
                future = dask_client.submit(commit, task, writes, *parts, key=name, priority=weight)
            else:
                future = _submit_download(
                    dask_client, task, destination, options, topic, name, sharing, pieces, weight
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
            if on_result is not None:
                on_result(task, outcome if isinstance(outcome, _TaskResult) else None)
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
        return [Failure(str(name), message, exception) for name in _took(task)]


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
        share.took.extend(_shown(task))
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
