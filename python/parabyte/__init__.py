"""parabyte: fast, trustworthy downloads from S3-compatible stores.

    import parabyte
    summary = parabyte.download("s3://bucket/dataset/", "./data")
    print(summary.objects, summary.bytes, summary.requests.get)

The module-level functions use one shared default `Client` (options from the AWS
environment) unless given options, in which case they build a `Client` for that call.
Create a `Client` yourself to reuse one connection pool with your own options. Every call
has an `*_async` twin; `list` gives an iterator that also works with `async for`.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ._native import (
    Buffer,
    Client,
    Failure,
    Item,
    ListIterator,
    ObjectInfo,
    Progress,
    Requests,
    Summary,
    Verified,
    __version__,
)
from .exceptions import (
    CredentialsError,
    Error,
    InvalidInputError,
    LocalFileError,
    NetworkError,
    NotFoundError,
    ObjectChangedError,
    PermissionDeniedError,
    StoreError,
    TransferFailedError,
)

__all__ = [
    "Buffer",
    "Client",
    "CredentialsError",
    "Error",
    "Failure",
    "InvalidInputError",
    "Item",
    "ItemLike",
    "ListIterator",
    "LocalFileError",
    "NetworkError",
    "NotFoundError",
    "ObjectChangedError",
    "ObjectInfo",
    "PermissionDeniedError",
    "Progress",
    "Requests",
    "StoreError",
    "Summary",
    "TransferFailedError",
    "Verified",
    "__version__",
    "download",
    "download_async",
    "download_many",
    "download_many_async",
    "get_bytes",
    "get_bytes_async",
    "list",
]

from . import _native

# parabyte's threads must stop calling into Python before the interpreter finalizes.
atexit.register(_native.close_gate)

ProgressCallback = Callable[[Progress], object]
ItemLike = Item | ObjectInfo | str
Destination = str | os.PathLike[str] | None

_default_client: Client | None = None
_default_client_lock = threading.Lock()


def _client(options: dict[str, Any]) -> Client:
    """The shared default client, or a new one when options are given."""
    global _default_client
    if options:
        return Client(**options)
    with _default_client_lock:
        if _default_client is None:
            _default_client = Client()
        return _default_client


def download(
    source: str,
    destination: Destination,
    *,
    recursive: bool = False,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> Summary:
    """Download an object to a file, or everything under a prefix into a directory.

    `options` are `Client` keywords (endpoint_url, workers, part_size, ...).
    """
    return _client(options).download(source, destination, recursive=recursive, progress=progress)


async def download_async(
    source: str,
    destination: Destination,
    *,
    recursive: bool = False,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> Summary:
    """`download` as a coroutine."""
    return await _client(options).download_async(
        source, destination, recursive=recursive, progress=progress
    )


def list(prefix: str, *, recursive: bool = True, **options: Any) -> ListIterator:
    """Entries under `prefix` as they are listed; use with `for` or `async for`."""
    return _client(options).list(prefix, recursive=recursive)


def download_many(
    items: Iterable[ItemLike],
    destination: Destination = ".",
    *,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> Summary:
    """Download many objects into `destination`. Items with a known size (and ETag), such as
    `Item(url, size=..., etag=...)` or entries from `list`, cost no probe request."""
    return _client(options).download_many(items, destination, progress=progress)


async def download_many_async(
    items: Iterable[ItemLike],
    destination: Destination = ".",
    *,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> Summary:
    """`download_many` as a coroutine."""
    return await _client(options).download_many_async(items, destination, progress=progress)


def get_bytes(source: str, **options: Any) -> Buffer:
    """One object's bytes, fetched as parallel ranges into one buffer (no copy to Python)."""
    return _client(options).get_bytes(source)


async def get_bytes_async(source: str, **options: Any) -> Buffer:
    """`get_bytes` as a coroutine."""
    return await _client(options).get_bytes_async(source)
