"""parabyte: fast, trustworthy transfers between S3-compatible stores and local disks.

    import parabyte
    summary = parabyte.download("s3://bucket/dataset/", "./data")
    print(summary.objects, summary.bytes, summary.requests.get)
    parabyte.upload("./results", "s3://bucket/results/")

The module-level functions use one shared default `Client` (options from the AWS
environment); called with options, they reuse a `Client` per distinct set of options (the
last few sets are kept). Create a `Client` yourself to choose when connections are made and
dropped. Every call has an `*_async` twin, a coroutine; `list` gives an iterator that also
works with `async for`.

After `os.fork()` a child process builds its own runtime and connections on first use, so
clients made before the fork keep working in both processes.

`from parabyte import *` imports the classes and the functions except `list` and `copy`,
which would shadow the builtin and the standard module: call them as `parabyte.list` and
`parabyte.copy`.
"""

from __future__ import annotations

import atexit
import builtins
import functools
import inspect
import os
import textwrap
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack, overload

from . import _keywords, _native
from ._keywords import (
    DOWNLOAD_KEYWORDS,
    REMOVE_KEYWORDS,
    SYNC_KEYWORDS,
    UPLOAD_KEYWORDS,
    DownloadOptions,
    RemoveOptions,
    SyncCompare,
    SyncOptions,
    UploadOptions,
)
from ._native import (
    Buffer,
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
    "DownloadOptions",
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
    "RemoveOptions",
    "Requests",
    "StoreError",
    "Summary",
    "SyncCompare",
    "SyncOptions",
    "TransferFailedError",
    "UploadOptions",
    "Verified",
    "__version__",
    "copy_async",
    "delete",
    "delete_async",
    "delete_many",
    "delete_many_async",
    "download",
    "download_async",
    "download_many",
    "download_many_async",
    "get_bytes",
    "get_bytes_async",
    "get_bytes_many",
    "get_bytes_many_async",
    "make_bucket",
    "make_bucket_async",
    "move",
    "move_async",
    "put_bytes",
    "put_bytes_async",
    "remove",
    "remove_async",
    "remove_bucket",
    "remove_bucket_async",
    "sync",
    "sync_async",
    "upload",
    "upload_async",
    "upload_many",
    "upload_many_async",
]


def __dir__() -> builtins.list[str]:
    """The API: what `__all__` names, and `list` and `copy`, which `import *` leaves out so
    as not to shadow the builtin and the standard module. Modules and helpers this one
    uses (`os`, `threading`, `Any`, ...) are no part of it."""
    return sorted({*__all__, "copy", "list"})


# Keywords that choose among files, and the dry run that names them: `upload_many` names
# each file and `put_bytes` has none, so neither takes them.
_CHOOSING = frozenset(_native.UPLOAD_SELECTION_KEYWORDS)

# The keywords of each transfer besides its source and destination, as its CLI command
# takes them (`copy` and `move`: `cp` and `mv`; `remove`: `rm`); every other keyword of a
# module-level function is a `Client` option.
_KEYWORDS_OF: dict[str, frozenset[str]] = {
    "download": DOWNLOAD_KEYWORDS,
    "upload": UPLOAD_KEYWORDS,
    "copy": UPLOAD_KEYWORDS,
    "move": UPLOAD_KEYWORDS,
    "sync": UPLOAD_KEYWORDS - {"recursive"} | SYNC_KEYWORDS,
    "upload_many": UPLOAD_KEYWORDS - _CHOOSING,
    "put_bytes": UPLOAD_KEYWORDS - _CHOOSING,
    "remove": REMOVE_KEYWORDS,
}

# parabyte's threads must stop calling into Python before the interpreter finalizes.
atexit.register(_native.close_gate)

ProgressCallback = Callable[[Progress], object]
ItemLike = Item | ObjectInfo | str
Destination = str | os.PathLike[str] | None
ByteRange = tuple[int, int]
"""`(start, end)`: bytes start to end - 1, as in a slice."""

# Client options that are secrets: a client given one is never pickled.
_SECRET_OPTIONS = ("access_key_id", "secret_access_key", "session_token")


class Client(_native.Client):
    """A connection pool and options, reused across calls and threads; the `*_async`
    methods are coroutines, so `asyncio.create_task`, `asyncio.gather` and type checkers
    take them. A client pickles as its options (a `multiprocessing` worker connects
    again), except one given keys as arguments: those are secrets, and never go into a
    pickle. Every option is a keyword; left out, it keeps the default in brackets. The
    keywords, each a CLI flag's (`--part-size`: `part_size`), are listed below from the
    one table of options the command line declares (`_native.option_table()`).
    """

    _options: dict[str, Any]

    if not TYPE_CHECKING:  # type checkers read the keywords from `_native.Client`

        def __init__(self, **options: Any) -> None:
            # The native constructor has read and checked the options already.
            self._options = options

        __signature__ = inspect.signature(_native.Client)

    def __reduce__(self) -> tuple[Any, ...]:
        given = [name for name in _SECRET_OPTIONS if self._options.get(name)]
        if given:
            raise TypeError(
                f"a Client given {', '.join(given)} is not pickled, so the secret never lands"
                " in a pickle: give the keys through the environment or a profile, or make"
                " the Client in the process that uses it"
            )
        return (functools.partial(Client, **self._options), ())

    def download(
        self,
        source: str,
        destination: Destination,
        **options: Unpack[DownloadOptions],
    ) -> Summary:
        """Download an object or a URL to a file, or everything under a prefix (or matching a
        wildcard pattern) into a directory; the keywords are `DownloadOptions`, the `cp`
        flags of the same names (`dry_run` is `--dryrun`)."""
        return super().download(source, destination, **options)

    async def download_async(
        self,
        source: str,
        destination: Destination,
        **options: Unpack[DownloadOptions],
    ) -> Summary:
        """`download` as a coroutine, with the same keywords (`DownloadOptions`); cancelling
        it cancels the transfer. The progress callback runs on a parabyte thread."""
        return await super().download_async(source, destination, **options)

    async def download_many_async(
        self,
        items: Iterable[ItemLike],
        destination: Destination,
        *,
        progress: ProgressCallback | None = None,
    ) -> Summary:
        """`download_many` as a coroutine."""
        return await super().download_many_async(items, destination, progress=progress)

    def upload(
        self,
        source: str | os.PathLike[str],
        destination: str,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Upload a file to `s3://bucket/key` (or under `s3://bucket/prefix/`), or a
        directory's tree under `destination` as a prefix; the keywords are `UploadOptions`,
        the `cp` flags of the same names."""
        return super().upload(source, destination, **options)

    async def upload_async(
        self,
        source: str | os.PathLike[str],
        destination: str,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """`upload` as a coroutine, with the same keywords (`UploadOptions`); cancelling it
        cancels the transfer, and aborts its unfinished multipart uploads."""
        return await super().upload_async(source, destination, **options)

    def copy(
        self,
        source: str,
        destination: str,
        *,
        recursive: bool = False,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Copy `s3://bucket/key` (or a prefix, with `recursive` or a trailing "/", or a
        wildcard pattern) to `destination` inside the store: no byte passes through here.
        Keywords as for `upload`, plus `recursive`."""
        return super().copy(source, destination, recursive=recursive, **options)

    async def copy_async(
        self,
        source: str,
        destination: str,
        *,
        recursive: bool = False,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """`copy` as a coroutine."""
        return await super().copy_async(source, destination, recursive=recursive, **options)

    def upload_many(
        self,
        items: Iterable[tuple[str | os.PathLike[str], str]],
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Upload each `(path, "s3://bucket/key")` (a destination ending in "/" keeps the
        file's name), many at once; the keywords are `UploadOptions` but those that choose
        files (`recursive`, `exclude`, `include`, `raw`, `follow_symlinks`, `dry_run`)."""
        return super().upload_many(items, **options)

    async def upload_many_async(
        self,
        items: Iterable[tuple[str | os.PathLike[str], str]],
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """`upload_many` as a coroutine."""
        return await super().upload_many_async(items, **options)

    def remove(self, source: str, **options: Unpack[RemoveOptions]) -> Summary:
        """Delete the one key `s3://bucket/key` names (a trailing "/" is part of the key; a
        key that is not there raises), or with `recursive` (or a wildcard pattern) every key
        under it that `exclude`/`include` keep; the keywords are `RemoveOptions`, the `rm`
        flags of the same names (`dry_run` deletes nothing)."""
        return super().remove(source, **options)

    async def remove_async(self, source: str, **options: Unpack[RemoveOptions]) -> Summary:
        """`remove` as a coroutine."""
        return await super().remove_async(source, **options)

    def sync(
        self,
        source: str | os.PathLike[str],
        destination: str | os.PathLike[str],
        **options: Unpack[SyncOptions],
    ) -> Summary:
        """Make `destination` hold what `source` holds (an S3 prefix and a local directory
        either way, or two S3 prefixes); the keywords are `SyncOptions`, the `sync` flags of
        the same names (`compare` for `--size-only`, `--exact-timestamps`, `--checksum`)."""
        return super().sync(source, destination, **options)

    async def sync_async(
        self,
        source: str | os.PathLike[str],
        destination: str | os.PathLike[str],
        **options: Unpack[SyncOptions],
    ) -> Summary:
        """`sync` as a coroutine."""
        return await super().sync_async(source, destination, **options)

    def move(
        self,
        source: str | os.PathLike[str],
        destination: str | os.PathLike[str],
        *,
        recursive: bool = False,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Copy `source` to `destination` (S3 keys or prefixes, local files or directories),
        then delete each source whose copy was compared with it; keywords as for `copy`
        (`dry_run` moves nothing)."""
        return super().move(source, destination, recursive=recursive, **options)

    async def move_async(
        self,
        source: str | os.PathLike[str],
        destination: str | os.PathLike[str],
        *,
        recursive: bool = False,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """`move` as a coroutine."""
        return await super().move_async(source, destination, recursive=recursive, **options)

    async def delete_async(self, url: str) -> Summary:
        """`delete` as a coroutine."""
        return await super().delete_async(url)

    async def delete_many_async(self, urls: Sequence[str]) -> Summary:
        """`delete_many` as a coroutine."""
        return await super().delete_many_async(urls)

    def put_bytes(self, destination: str, data: Any, **options: Unpack[UploadOptions]) -> Summary:
        """Store any contiguous bytes-like `data` as the object `destination`, uncopied; the
        keywords are `UploadOptions` but those that choose files."""
        return super().put_bytes(destination, data, **options)

    async def put_bytes_async(
        self, destination: str, data: Any, **options: Unpack[UploadOptions]
    ) -> Summary:
        """`put_bytes` as a coroutine."""
        return await super().put_bytes_async(destination, data, **options)

    @overload
    async def get_bytes_async(
        self, source: str, *, ranges: builtins.list[ByteRange]
    ) -> builtins.list[Buffer]: ...
    @overload
    async def get_bytes_async(self, source: str, *, range: ByteRange | None = None) -> Buffer: ...
    @overload
    async def get_bytes_async(
        self,
        source: str,
        *,
        range: ByteRange | None = None,
        ranges: builtins.list[ByteRange] | None = None,
    ) -> Buffer | builtins.list[Buffer]: ...
    async def get_bytes_async(
        self,
        source: str,
        *,
        range: ByteRange | None = None,
        ranges: builtins.list[ByteRange] | None = None,
    ) -> Buffer | builtins.list[Buffer]:
        """`get_bytes` as a coroutine."""
        return await super().get_bytes_async(source, range=range, ranges=ranges)

    @overload
    async def get_bytes_many_async(
        self, sources: Iterable[ItemLike], *, on_error: Literal["raise"] = "raise"
    ) -> builtins.list[Buffer]: ...
    @overload
    async def get_bytes_many_async(
        self, sources: Iterable[ItemLike], *, on_error: Literal["return"]
    ) -> builtins.list[Buffer | Exception]: ...
    async def get_bytes_many_async(
        self, sources: Iterable[ItemLike], *, on_error: Literal["raise", "return"] = "raise"
    ) -> builtins.list[Buffer] | builtins.list[Buffer | Exception]:
        """`get_bytes_many` as a coroutine."""
        return await super().get_bytes_many_async(sources, on_error=on_error)


# Clients made for module-level calls with options, most recently used last. A client holds
# a connection pool, so only a few are kept.


def _client_keywords() -> str:
    """The keywords of `Client`, as its docstring lists them: each client-wide option of
    the one table, its help text and its default."""
    lines = ["access_key_id, secret_access_key, session_token: explicit keys [the AWS chain]."]
    seen: set[str] = set()
    for row in _native.option_table():
        # A flag some command words for itself (rm's --workers) keeps its first meaning.
        if row["reach"] != "client" or row["keyword"] in seen:
            continue
        seen.add(row["keyword"])
        switch_off = row["flag"].startswith("no-") and not row["keyword"].startswith("no_")
        switch = "True" if switch_off else "False"
        default = row["default"] or ("None" if row["value_name"] else switch)
        help = row["help"].replace("\n", " ")
        if switch_off:
            help = f"False: {help[0].lower()}{help[1:]}"
        text = f"{row['keyword']}: {help} [{default}]"
        lines.extend(textwrap.wrap(text, 88, subsequent_indent="    "))
    lines.append("threads: the old name of ranges_per_object.")
    return "\n".join(lines)


Client.__doc__ = f"{Client.__doc__}\n{textwrap.indent(_client_keywords(), '    ')}\n"

_CACHED_CLIENTS = 8
_clients: OrderedDict[tuple[tuple[str, Any], ...], Client] = OrderedDict()
_clients_lock = threading.Lock()


def _client(options: dict[str, Any]) -> Client:
    """The client for these options (the default one when there are none), made on first
    use and reused after."""
    # A list (`bind=[...]`) is no dictionary key; as a tuple it names the same options.
    key = tuple(
        sorted(
            (name, tuple(v) if isinstance(v, builtins.list) else v) for name, v in options.items()
        )
    )
    try:
        hash(key)
    except TypeError:  # an option value that cannot be a key: this call gets its own client
        return Client(**options)
    with _clients_lock:
        client = _clients.get(key)
        if client is not None:
            _clients.move_to_end(key)
            return client
    # Made outside the lock: connecting may take a while (credentials, a profile's SSO).
    client = Client(**options)
    with _clients_lock:
        client = _clients.setdefault(key, client)
        _clients.move_to_end(key)
        while len(_clients) > _CACHED_CLIENTS:
            _clients.popitem(last=False)
    return client


# The keywords a `Client` takes, which every module-level function passes on to one.
_CLIENT_OPTIONS = frozenset(inspect.signature(_native.Client).parameters)


def _split(
    function: str, options: dict[str, Any], own: Iterable[str] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A module-level call's keywords: those of the transfer (`_KEYWORDS_OF`), and the
    `Client` options. Any other is refused, naming `function` and the nearest keyword it
    takes (its own named ones, `own`, among them)."""
    names = _KEYWORDS_OF.get(function.removesuffix("_async"), frozenset())
    keywords = {name: options.pop(name) for name in names if name in options}
    _keywords.check(function, options, _CLIENT_OPTIONS | names | set(own))
    return keywords, options


def _client_options(function: str, options: dict[str, Any], own: Iterable[str] = ()) -> Client:
    """The client for a module-level call that has no keywords of its own but `own`."""
    return _client(_split(function, options, own)[1])


def download(source: str, destination: Destination, **options: Any) -> Summary:
    """Download an object to a file, or everything under a prefix (or matching a wildcard
    pattern such as `s3://bucket/imgs/*.jpg`) into a directory.

    The download's keywords are `DownloadOptions` (`recursive`, `exclude`, `include`, `raw`,
    `dry_run`, `progress`, `after`, `until_after`), as `cp` takes them; every other keyword
    is a `Client` option (endpoint_url, workers, part_size, ...).
    """
    keywords, client_options = _split("download", options)
    return _client(client_options).download(source, destination, **keywords)


async def download_async(source: str, destination: Destination, **options: Any) -> Summary:
    """`download` as a coroutine, with the same keywords."""
    keywords, client_options = _split("download_async", options)
    return await _client(client_options).download_async(source, destination, **keywords)


def upload(source: str | os.PathLike[str], destination: str, **options: Any) -> Summary:
    """Upload a file to `s3://bucket/key` (or under `s3://bucket/prefix/`), or a directory's
    files under `destination` as a prefix.

    The upload's keywords are `UploadOptions` (`exclude`, `include`, `raw`, `dry_run`,
    `progress`, `no_clobber`, `content_type`, `metadata`, ...), as `cp` takes them; every
    other keyword is a `Client` option (endpoint_url, part_size, ...).
    """
    keywords, client_options = _split("upload", options)
    return _client(client_options).upload(source, destination, **keywords)


async def upload_async(source: str | os.PathLike[str], destination: str, **options: Any) -> Summary:
    """`upload` as a coroutine, with the same keywords."""
    keywords, client_options = _split("upload_async", options)
    return await _client(client_options).upload_async(source, destination, **keywords)


def copy(source: str, destination: str, *, recursive: bool = False, **options: Any) -> Summary:
    """Copy `s3://bucket/key` (or a prefix, or a pattern) to `destination` inside the store;
    keywords as for `upload`, plus `recursive`."""
    keywords, client_options = _split("copy", options)
    return _client(client_options).copy(source, destination, recursive=recursive, **keywords)


async def copy_async(
    source: str, destination: str, *, recursive: bool = False, **options: Any
) -> Summary:
    """`copy` as a coroutine."""
    keywords, client_options = _split("copy_async", options)
    return await _client(client_options).copy_async(
        source, destination, recursive=recursive, **keywords
    )


def upload_many(items: Iterable[tuple[str | os.PathLike[str], str]], **options: Any) -> Summary:
    """Upload each `(path, "s3://bucket/key")`, many at once; the keywords are
    `UploadOptions` but those that choose files (`recursive`, `exclude`, `include`, `raw`,
    `follow_symlinks`, `dry_run`); every other one is a `Client` option."""
    keywords, client_options = _split("upload_many", options)
    return _client(client_options).upload_many(items, **keywords)


async def upload_many_async(
    items: Iterable[tuple[str | os.PathLike[str], str]], **options: Any
) -> Summary:
    """`upload_many` as a coroutine."""
    keywords, client_options = _split("upload_many_async", options)
    return await _client(client_options).upload_many_async(items, **keywords)


def remove(source: str, **options: Any) -> Summary:
    """Delete one key (a trailing "/" is part of it; a key that is not there raises), or with
    `recursive` every key under a prefix; the keywords are `RemoveOptions` (`recursive`,
    `exclude`, `include`, `raw`, `dry_run`), as `rm` takes them; every other one is a
    `Client` option."""
    keywords, client_options = _split("remove", options)
    return _client(client_options).remove(source, **keywords)


async def remove_async(source: str, **options: Any) -> Summary:
    """`remove` as a coroutine."""
    keywords, client_options = _split("remove_async", options)
    return await _client(client_options).remove_async(source, **keywords)


def sync(
    source: str | os.PathLike[str], destination: str | os.PathLike[str], **options: Any
) -> Summary:
    """Make `destination` hold what `source` holds (an S3 prefix and a local directory either
    way, or two S3 prefixes): what is missing or changed is sent, and with `delete=True` what
    the source lacks is removed once both sides were listed whole and the source was read
    without a failure or refusal. Keywords: `SyncOptions` (`delete`, `max_delete`,
    `delete_if_source_empty` (an empty source deletes nothing without it), `compare`, and
    the `UploadOptions`, `dry_run` among them); every other one is a `Client` option."""
    keywords, client_options = _split("sync", options)
    return _client(client_options).sync(source, destination, **keywords)


async def sync_async(
    source: str | os.PathLike[str], destination: str | os.PathLike[str], **options: Any
) -> Summary:
    """`sync` as a coroutine."""
    keywords, client_options = _split("sync_async", options)
    return await _client(client_options).sync_async(source, destination, **keywords)


def move(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    recursive: bool = False,
    **options: Any,
) -> Summary:
    """Copy, then delete each source whose copy was compared with it (keys or local
    files); a move onto itself is refused. Keywords as for `copy` (`dry_run` moves
    nothing)."""
    keywords, client_options = _split("move", options)
    return _client(client_options).move(source, destination, recursive=recursive, **keywords)


async def move_async(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    recursive: bool = False,
    **options: Any,
) -> Summary:
    """`move` as a coroutine."""
    keywords, client_options = _split("move_async", options)
    return await _client(client_options).move_async(
        source, destination, recursive=recursive, **keywords
    )


def delete(url: str, **options: Any) -> Summary:
    """Delete one key; a refusal is raised. Every keyword is a `Client` option."""
    return _client_options("delete", options).delete(url)


async def delete_async(url: str, **options: Any) -> Summary:
    """`delete` as a coroutine."""
    return await _client_options("delete_async", options).delete_async(url)


def delete_many(urls: Sequence[str], **options: Any) -> Summary:
    """Delete each key, 1,000 of a bucket a request; failures are in the summary. Every
    keyword is a `Client` option."""
    return _client_options("delete_many", options).delete_many(urls)


async def delete_many_async(urls: Sequence[str], **options: Any) -> Summary:
    """`delete_many` as a coroutine."""
    return await _client_options("delete_many_async", options).delete_many_async(urls)


def make_bucket(url: str, **options: Any) -> None:
    """Make the bucket `s3://bucket`, as `parabyte mb` does, in the region requests are
    signed for; one that exists already is raised, saying whether it is yours. Every
    keyword is a `Client` option."""
    _client_options("make_bucket", options).make_bucket(url)


async def make_bucket_async(url: str, **options: Any) -> None:
    """`make_bucket` as a coroutine."""
    await _client_options("make_bucket_async", options).make_bucket_async(url)


def remove_bucket(url: str, *, force: bool = False, **options: Any) -> int:
    """Remove the bucket `s3://bucket`, as `parabyte rb` does: one that holds objects is
    refused and kept. With `force=True` every object is deleted first, the whole bucket
    listed before any delete (a listing that fails deletes nothing), then the bucket; a
    key that cannot be deleted is raised and keeps the bucket. Returns the number of
    objects deleted. Every other keyword is a `Client` option."""
    client = _client_options("remove_bucket", options, own=("force",))
    return client.remove_bucket(url, force=force)


async def remove_bucket_async(url: str, *, force: bool = False, **options: Any) -> int:
    """`remove_bucket` as a coroutine."""
    client = _client_options("remove_bucket_async", options, own=("force",))
    return await client.remove_bucket_async(url, force=force)


def put_bytes(destination: str, data: Any, **options: Any) -> Summary:
    """Store any contiguous bytes-like `data` as the object `destination`, uncopied."""
    keywords, client_options = _split("put_bytes", options)
    return _client(client_options).put_bytes(destination, data, **keywords)


async def put_bytes_async(destination: str, data: Any, **options: Any) -> Summary:
    """`put_bytes` as a coroutine."""
    keywords, client_options = _split("put_bytes_async", options)
    return await _client(client_options).put_bytes_async(destination, data, **keywords)


def list(prefix: str, *, recursive: bool = True, **options: Any) -> ListIterator:
    """Entries under `prefix` as they are listed; use with `for` or `async for`."""
    return _client_options("list", options, ["recursive"]).list(prefix, recursive=recursive)


def download_many(
    items: Iterable[ItemLike],
    destination: Destination = ".",
    *,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> Summary:
    """Download many objects into `destination`. Items with a known size (and ETag), such as
    `Item(url, size=..., etag=...)` or entries from `list`, cost no probe request."""
    client = _client_options("download_many", options, ["progress"])
    return client.download_many(items, destination, progress=progress)


async def download_many_async(
    items: Iterable[ItemLike],
    destination: Destination = ".",
    *,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> Summary:
    """`download_many` as a coroutine."""
    client = _client_options("download_many_async", options, ["progress"])
    return await client.download_many_async(items, destination, progress=progress)


@overload
def get_bytes(
    source: str, *, ranges: builtins.list[ByteRange], **options: Any
) -> builtins.list[Buffer]: ...
@overload
def get_bytes(source: str, *, range: ByteRange | None = None, **options: Any) -> Buffer: ...
def get_bytes(
    source: str,
    *,
    range: ByteRange | None = None,
    ranges: builtins.list[ByteRange] | None = None,
    **options: Any,
) -> Buffer | builtins.list[Buffer]:
    """One object's bytes, fetched as parallel ranges into one buffer (no copy to Python).
    `range=(start, end)` fetches those bytes only (end excluded, cut at the object's end);
    `ranges=[(start, end), ...]` gives a list of buffers, all of the same version."""
    return _client_options("get_bytes", options, ["range", "ranges"]).get_bytes(
        source, range=range, ranges=ranges
    )


@overload
async def get_bytes_async(
    source: str, *, ranges: builtins.list[ByteRange], **options: Any
) -> builtins.list[Buffer]: ...
@overload
async def get_bytes_async(
    source: str, *, range: ByteRange | None = None, **options: Any
) -> Buffer: ...
async def get_bytes_async(
    source: str,
    *,
    range: ByteRange | None = None,
    ranges: builtins.list[ByteRange] | None = None,
    **options: Any,
) -> Buffer | builtins.list[Buffer]:
    """`get_bytes` as a coroutine."""
    client = _client_options("get_bytes_async", options, ["range", "ranges"])
    return await client.get_bytes_async(source, range=range, ranges=ranges)


@overload
def get_bytes_many(
    sources: Iterable[ItemLike], *, on_error: Literal["raise"] = "raise", **options: Any
) -> builtins.list[Buffer]: ...
@overload
def get_bytes_many(
    sources: Iterable[ItemLike], *, on_error: Literal["return"], **options: Any
) -> builtins.list[Buffer | Exception]: ...
def get_bytes_many(
    sources: Iterable[ItemLike],
    *,
    on_error: Literal["raise", "return"] = "raise",
    **options: Any,
) -> builtins.list[Buffer] | builtins.list[Buffer | Exception]:
    """Many objects' bytes, `workers` at a time, as a list in the order given (URLs, `Item`s
    or listed entries; a known size spares the probe). `on_error="raise"`: the first failure
    raises; `"return"`: its exception takes its object's place and the others arrive."""
    return _client_options("get_bytes_many", options, ["on_error"]).get_bytes_many(
        sources, on_error=on_error
    )


@overload
async def get_bytes_many_async(
    sources: Iterable[ItemLike], *, on_error: Literal["raise"] = "raise", **options: Any
) -> builtins.list[Buffer]: ...
@overload
async def get_bytes_many_async(
    sources: Iterable[ItemLike], *, on_error: Literal["return"], **options: Any
) -> builtins.list[Buffer | Exception]: ...
async def get_bytes_many_async(
    sources: Iterable[ItemLike],
    *,
    on_error: Literal["raise", "return"] = "raise",
    **options: Any,
) -> builtins.list[Buffer] | builtins.list[Buffer | Exception]:
    """`get_bytes_many` as a coroutine."""
    client = _client_options("get_bytes_many_async", options, ["on_error"])
    return await client.get_bytes_many_async(sources, on_error=on_error)


def _hinted(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` (one whose keywords are all named), refusing a keyword it does not take
    with the nearest one it does, as the methods the extension parses keywords for do."""
    takes = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = inspect.signature(method).parameters.values()
    valid = frozenset(p.name for p in parameters if p.kind in takes and p.name != "self")
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def call_async(self: Client, *args: Any, **keywords: Any) -> Any:
            _keywords.check(name, keywords, valid)
            return await method(self, *args, **keywords)

        return call_async

    @functools.wraps(method)
    def call(self: Client, *args: Any, **keywords: Any) -> Any:
        _keywords.check(name, keywords, valid)
        return method(self, *args, **keywords)

    return call


def _finish_the_api() -> None:
    """Every method of `Client` refuses an unknown keyword naming the nearest one, and
    `help()` of each transfer, method or module-level function, lists its keywords."""
    for name in dir(_native.Client):
        if name.startswith("_"):
            continue
        method = getattr(Client, name)
        kinds = [p.kind for p in inspect.signature(method).parameters.values()]
        if inspect.Parameter.VAR_KEYWORD not in kinds:
            setattr(Client, name, _hinted(name, method))
    for transfer, names in _KEYWORDS_OF.items():
        for name in (transfer, f"{transfer}_async"):
            _keywords.show_keywords(getattr(Client, name), names, forwards=False)
            _keywords.show_keywords(globals()[name], names, forwards=True)


_finish_the_api()
