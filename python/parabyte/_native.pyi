"""Type stubs for the Rust extension module. Use these classes through `parabyte`."""

import datetime
import os
import pathlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, Literal, SupportsIndex, TypeAlias, Unpack, overload

from ._keywords import DownloadOptions, RemoveOptions, SyncOptions, UploadOptions

__version__: str
DOWNLOAD_KEYWORDS: tuple[str, ...]
UPLOAD_KEYWORDS: tuple[str, ...]
UPLOAD_SELECTION_KEYWORDS: tuple[str, ...]
SUMMARY_FIELDS: list[str]
"""`Summary`'s fields, as the CLI's `--json` names them."""
REMOVE_KEYWORDS: tuple[str, ...]
SYNC_KEYWORDS: tuple[str, ...]

class Client:
    """A connection pool and options, reused across calls and threads. `parabyte.Client`
    subclasses this one so that the `*_async` methods are coroutines; use that one.

    Store options default to the AWS chain (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_PROFILE`,
    `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, `~/.aws/config`, SSO, instance roles, ...).
    Transfer options are the CLI's flags with the same defaults.
    """

    def __init__(
        self,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        no_sign_request: bool = False,
        path_style: bool = False,
        ca_bundle: _Path | None = None,
        timeout: float | str | None = None,
        bind: list[str] | None = None,
        request_payer: Literal["requester"] | None = None,
        source_endpoint_url: str | None = None,
        source_region: str | None = None,
        source_profile: str | None = None,
        source_no_sign_request: bool = False,
        workers: int | None = None,
        ranges_per_object: int | None = None,
        threads: int | None = None,
        part_size: int | str | None = None,
        max_requests: int | None = None,
        copy_cutoff: int | str | None = None,
        retries: int | None = None,
        list_parallelism: int | None = None,
        list_page_size: int | None = None,
        verify: bool = True,
        force: bool = False,
        ignore_glacier_warnings: bool = False,
    ) -> None:
        """
        Args:
            endpoint_url: an S3-compatible endpoint, e.g. "http://127.0.0.1:9000".
            region: the region to sign for (default: AWS_REGION, the profile, us-east-1).
            profile: a named profile from ~/.aws/config.
            access_key_id, secret_access_key, session_token: explicit keys.
            no_sign_request: anonymous requests, for public buckets.
            path_style: https://host/bucket/key addressing on AWS too.
            ca_bundle: a PEM file of extra certificate authorities (default AWS_CA_BUNDLE).
            timeout: seconds to wait for a connection or the next byte: 30, 0.5 or "5s",
                "500ms", "2m" (30).
            bind: local IP addresses to send from, taken in turn (several NICs).
            source_endpoint_url, source_region, source_profile, source_no_sign_request:
                where S3 sources are read when not where the destination is (another
                endpoint, region or account; anonymously for a public bucket): `copy`
                then streams through parabyte (ranged GETs feed the part uploads, a few
                parts in memory, nothing on disk); `sync`, `move` and `delete` refuse.
            workers: objects in flight (64).
            ranges_per_object: ranged requests in flight per object (16).
            threads: the old name of ranges_per_object, still accepted.
            part_size: bytes of an object's first ranged GET (later ones grow in multiples
                of it, up to 64 MiB, to keep ranges_per_object busy), an int or "8MiB",
                "16M" (8 MiB).
            max_requests: requests in flight overall (128).
            copy_cutoff: a copy inside the store of an object larger than this goes in
                parallel parts (UploadPartCopy), a smaller one in one CopyObject: 5 MiB to
                5 GiB, an int or "1GiB" (5 GiB).
            retries: retries of a failed request (5).
            list_parallelism: key ranges listed at once (16).
            list_page_size: keys per listing request (1000).
            verify: check content by the store's CRC or the ETag's MD5, not size alone.
            force: download again files that an earlier download finished (by default a
                file whose recorded size and ETag still match the object is skipped).
            ignore_glacier_warnings: pass over objects in an archive tier (GLACIER,
                DEEP_ARCHIVE) that are not restored, each reported as skipped, instead of
                failing them.

        Raises:
            InvalidInputError: an option that cannot work.
            CredentialsError: no credentials could be set up.
        """

    def download(
        self,
        source: str,
        destination: _Path | None,
        **options: Unpack[DownloadOptions],
    ) -> Summary:
        """Download `s3://bucket/key` or `https://host/path` to a file (or into a directory
        that exists or ends in "/"), or everything under `s3://bucket/prefix/` (or any S3
        source with `recursive`) into a directory; a local file or directory is copied the
        same careful way. `destination=None` fetches and keeps nothing.

        A source with `*`, `?` or `[...]` is a wildcard pattern (`s3://b/imgs/*.jpg`; `*`
        crosses "/"): its literal prefix is listed and each match lands at its path after
        that prefix's last "/"; `raw=True` takes those characters literally. `exclude` and
        `include` patterns are matched against each object's path below the source, every
        exclude before every include. A prefix or pattern that matches nothing is a failure
        in the summary (`NotFoundError`), named with what was looked at.

        A single object that fails raises (`NotFoundError` is a `FileNotFoundError`); under a
        prefix, objects that fail are listed in the summary and the others arrive.
        The GIL is released while bytes move; Ctrl-C cancels and raises KeyboardInterrupt,
        leaving no partial file.

        The keywords are `DownloadOptions`: `recursive`, `exclude`, `include`, `raw`,
        `progress`, and `after`/`until_after`, which copy one range of a prefix's key space
        (boundaries from `split_key_space`), each key at the path a copy of the whole
        prefix gives it. A mistyped keyword raises TypeError naming the nearest one.
        """

    def download_async(
        self,
        source: str,
        destination: _Path | None,
        **options: Unpack[DownloadOptions],
    ) -> Awaitable[Summary]:
        """`download` as an asyncio future (`parabyte.Client` makes it a coroutine), with the
        same keywords; cancelling it cancels the transfer. The progress callback runs on a
        parabyte thread."""

    def download_many(
        self,
        items: Iterable[_ItemLike],
        destination: _Path | None,
        *,
        progress: _Progress | None = None,
    ) -> Summary:
        """Download many objects into the `destination` directory. An item is an `Item`, an
        `ObjectInfo` from `list`, or a URL; items with a known size (and ETag) cost exactly
        one GET per part and no probe. An S3 item without a destination lands at its key,
        folders kept, below `destination`. Objects that fail are listed in the summary."""

    def download_many_async(
        self,
        items: Iterable[_ItemLike],
        destination: _Path | None,
        *,
        progress: _Progress | None = None,
    ) -> Awaitable[Summary]:
        """`download_many` as an awaitable."""

    def upload(
        self,
        source: _Path,
        destination: str,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Upload a local file to `s3://bucket/key` (or under `s3://bucket/prefix/`, keeping
        its name), or a directory's files under `destination` as a prefix, each at its path
        below the directory. A file up to the part size is one PUT; a larger one goes in
        parts read in parallel, each with its CRC64NVME, and the object keeps a whole-object
        CRC64NVME that a later download checks. A file that changes while it is read, a
        link, a FIFO or a name that is not UTF-8 is not stored; a failed upload is aborted.
        One file's failure is raised; a tree's are listed in the summary."""

    def upload_async(
        self,
        source: _Path,
        destination: str,
        **options: Unpack[UploadOptions],
    ) -> Awaitable[Summary]:
        """`upload` as an awaitable, with the same keywords."""

    def copy(
        self,
        source: str,
        destination: str,
        *,
        recursive: bool = False,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Copy `s3://bucket/key` to `destination` inside the store (a prefix with
        `recursive` or a trailing "/", or a wildcard pattern: each object under the
        destination prefix at its path below the source). CopyObject up to 5 GiB, parts
        copied in parallel above; no byte passes through parabyte. One object's failure is
        raised; a prefix's are listed in the summary."""

    def copy_async(
        self,
        source: str,
        destination: str,
        *,
        recursive: bool = False,
        **options: Unpack[UploadOptions],
    ) -> Awaitable[Summary]:
        """`copy` as an awaitable."""

    def upload_many(
        self,
        items: Iterable[tuple[_Path, str]],
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Upload each `(path, "s3://bucket/key")` (a destination ending in "/" keeps the
        file's name), many at once, as `upload` sends one file; `exclude`, `include` and
        `raw` do not apply. Each failure is in the summary, and the others go on."""

    def upload_many_async(
        self,
        items: Iterable[tuple[_Path, str]],
        **options: Unpack[UploadOptions],
    ) -> Awaitable[Summary]:
        """`upload_many` as an awaitable."""

    def remove(
        self,
        source: str,
        **options: Unpack[RemoveOptions],
    ) -> Summary:
        """Delete the one key `s3://bucket/key` names (a trailing "/" is part of the key),
        or with `recursive` (or a wildcard pattern) every key under it that
        `exclude`/`include` keep, 1,000 a request (DeleteObjects). One named key that is not
        there raises `NotFoundError`, as does one with keys under it (those take
        `recursive=True`; nothing is deleted). `summary.deleted` counts the keys deleted; a
        key of a prefix or pattern the store refused is in `summary.failures`. `dry_run`
        deletes nothing and counts what would go."""

    def remove_async(
        self,
        source: str,
        **options: Unpack[RemoveOptions],
    ) -> Awaitable[Summary]:
        """`remove` as an awaitable."""

    def sync(
        self,
        source: _Path,
        destination: _Path,
        **options: Unpack[SyncOptions],
    ) -> Summary:
        """Make `destination` hold what `source` holds: an S3 prefix and a local directory
        either way, or two S3 prefixes. Each object missing or changed there is sent
        (`compare`: "size_and_time" as aws s3 sync, "size_only", "exact_timestamps" for
        downloads, "checksum" for CRC64NVME contents); `summary.skipped` counts the
        unchanged. With `delete`, what the source lacks is removed (`summary.deleted`), but
        only once both sides were listed whole and the source was read without a failure or
        refusal; with `max_delete`, none when more would go; a source that holds nothing
        deletes nothing unless `delete_if_source_empty`.
        `dry_run` sends and deletes nothing. Failures are in the summary."""

    def sync_async(
        self,
        source: _Path,
        destination: _Path,
        **options: Unpack[SyncOptions],
    ) -> Awaitable[Summary]:
        """`sync` as an awaitable."""

    def move(
        self,
        source: _Path,
        destination: _Path,
        *,
        recursive: bool = False,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Copy `source` to `destination` (S3 keys or prefixes, local files or directories,
        either way or inside the store), then delete each source whose copy was compared
        with it (the store's checksum or MD5); one whose copy failed or could not be compared
        stays, and a move onto itself is refused. One object's failure is raised."""

    def move_async(
        self,
        source: _Path,
        destination: _Path,
        *,
        recursive: bool = False,
        **options: Unpack[UploadOptions],
    ) -> Awaitable[Summary]:
        """`move` as an awaitable."""

    def delete(self, url: str) -> Summary:
        """Delete the key `s3://bucket/key`; a refusal is raised."""

    def delete_async(self, url: str) -> Awaitable[Summary]:
        """`delete` as an awaitable."""

    def delete_many(self, urls: Sequence[str]) -> Summary:
        """Delete each `s3://bucket/key` (of any buckets), 1,000 of a bucket a request;
        `summary.deleted` counts them, each refusal is in `summary.failures`."""

    def delete_many_async(self, urls: Sequence[str]) -> Awaitable[Summary]:
        """`delete_many` as an awaitable."""

    def make_bucket(self, url: str) -> None:
        """Make the bucket `s3://bucket`, in the region requests are signed for; one that
        exists already is raised, saying whether it is yours."""

    def make_bucket_async(self, url: str) -> Awaitable[None]:
        """`make_bucket` as an awaitable."""

    def remove_bucket(self, url: str, *, force: bool = False) -> int:
        """Remove the bucket `s3://bucket`; one that holds objects is refused and kept. With
        `force`, every object is deleted first (the whole bucket listed before any delete:
        a listing that fails deletes nothing), then the bucket; a key that cannot be
        deleted is raised and keeps the bucket. Returns the objects deleted."""

    def remove_bucket_async(self, url: str, *, force: bool = False) -> Awaitable[int]:
        """`remove_bucket` as an awaitable."""

    def put_bytes(
        self,
        destination: str,
        data: Any,
        **options: Unpack[UploadOptions],
    ) -> Summary:
        """Store `data` (bytes, bytearray, memoryview, a NumPy array: any contiguous buffer)
        as the object `destination`, without copying it; do not change it while it goes
        up. Its failure is raised."""

    def put_bytes_async(
        self,
        destination: str,
        data: Any,
        **options: Unpack[UploadOptions],
    ) -> Awaitable[Summary]:
        """`put_bytes` as an awaitable."""

    @overload
    def get_bytes(self, source: str, *, ranges: list[_Range]) -> list[Buffer]: ...
    @overload
    def get_bytes(self, source: str, *, range: _Range | None = None) -> Buffer: ...
    @overload
    def get_bytes(
        self, source: str, *, range: _Range | None = None, ranges: list[_Range] | None = None
    ) -> Buffer | list[Buffer]:
        """One object's (`s3://` or `http(s)://`) bytes, fetched as parallel ranges into one
        buffer and handed over without a copy. Raises `NotFoundError` and friends on failure.

        `range=(start, end)`: bytes `start` to `end - 1` only (one ranged GET; an end past
        the object is cut at its end, a start past it raises `InvalidInputError`).
        `ranges=[(start, end), ...]`: a list of buffers, one per range, fetched in parallel
        and all of the same version of the object (a change midway raises
        `ObjectChangedError`)."""
    @overload
    def get_bytes_async(self, source: str, *, ranges: list[_Range]) -> Awaitable[list[Buffer]]: ...
    @overload
    def get_bytes_async(self, source: str, *, range: _Range | None = None) -> Awaitable[Buffer]: ...
    @overload
    def get_bytes_async(
        self, source: str, *, range: _Range | None = None, ranges: list[_Range] | None = None
    ) -> Awaitable[Buffer | list[Buffer]]:
        """`get_bytes` as an asyncio future (`parabyte.Client` makes it a coroutine)."""

    @overload
    def get_bytes_many(
        self, sources: Iterable[_ItemLike], *, on_error: Literal["raise"] = "raise"
    ) -> list[Buffer]: ...
    @overload
    def get_bytes_many(
        self, sources: Iterable[_ItemLike], *, on_error: Literal["return"]
    ) -> list[Buffer | Exception]: ...
    def get_bytes_many(
        self, sources: Iterable[_ItemLike], *, on_error: Literal["raise", "return"] = "raise"
    ) -> list[Buffer] | list[Buffer | Exception]:
        """Many objects' bytes, each fetched as `get_bytes` fetches one, `workers` objects at
        a time, returned as a list in the order given. A source is a URL, an `Item` or an
        `ObjectInfo` from `list`; a known size (and ETag) spares the probe request.

        `on_error="raise"`: the first failure (in the order given) raises, and the fetches
        still running stop. `on_error="return"`: a failure's exception (a `parabyte.Error`)
        takes its object's place in the list, and every other object is fetched."""
    @overload
    def get_bytes_many_async(
        self, sources: Iterable[_ItemLike], *, on_error: Literal["raise"] = "raise"
    ) -> Awaitable[list[Buffer]]: ...
    @overload
    def get_bytes_many_async(
        self, sources: Iterable[_ItemLike], *, on_error: Literal["return"]
    ) -> Awaitable[list[Buffer | Exception]]: ...
    def get_bytes_many_async(
        self, sources: Iterable[_ItemLike], *, on_error: Literal["raise", "return"] = "raise"
    ) -> Awaitable[list[Buffer] | list[Buffer | Exception]]:
        """`get_bytes_many` as an asyncio future (`parabyte.Client` makes it a coroutine)."""

    def list(
        self,
        prefix: str,
        *,
        recursive: bool = True,
        after: str | None = None,
        until_after: str | None = None,
    ) -> ListIterator:
        """Entries under `s3://bucket/prefix` as the listing arrives: every key when
        `recursive`, else one level with folders (`ObjectInfo.is_prefix`). Iterate with
        `for` or `async for`. The listing starts at once and reads ahead a bounded number of
        pages. `after`/`until_after` (boundaries from `split_key_space`) list one range: the
        keys after `after` up to the first key after `until_after`."""
    def split_key_space(self, prefix: str, parts: int) -> list[str]:
        """Up to `parts - 1` boundaries, in order, that cut the key space under `prefix` into
        ranges (neighbours are `after=`/`until_after=` of `list` and `download`), found with
        about one one-key request each, without listing the keys between; empty when the
        prefix fits in one listing page. Even in key space, not in key count."""
    def download_piece(
        self,
        item: _ItemLike,
        destination: str | os.PathLike[str],
        start: int,
        end: int,
        *,
        progress: _Progress | None = None,
    ) -> Summary:
        """Bytes `start..end` of one large object into a piece file of its own beside where
        `item` lands under `destination`, pinned to the item's ETag (`If-Match`): for one
        object spread over hosts that share a file system (`parabyte.dask`). The item needs
        its size and ETag; the summary counts bytes and requests, and no object. `progress`
        as for `download` (bytes only)."""
    def adopt_pieces(
        self, item: _ItemLike, destination: str | os.PathLike[str], starts: list[int]
    ) -> int:
        """Move the pieces `download_piece` left for `item` (named by their first bytes) into
        its temporary file, as an interrupted download's parts, and remove them; returns the
        bytes they held. Downloading the item then fetches only what no piece brought, checks
        the whole object and gives it its name."""

class Item:
    """One object for `download_many`."""

    source: str
    destination: pathlib.Path | None
    size: int | None
    etag: str | None
    def __init__(
        self,
        source: str,
        destination: _Path | None = None,
        *,
        size: int | None = None,
        etag: str | None = None,
    ) -> None:
        """
        Args:
            source: s3://bucket/key.
            destination: absolute, or relative to download_many's destination (which it may
                not leave); None: the key, folders kept (a web URL: its last segment).
            size: the object's size, when known: no probe request is sent.
            etag: the ETag, when known with the size: pins the version.
        """
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def to_dict(self) -> dict[str, Any]:
        """source, destination, size and etag."""

class ObjectInfo:
    """One listed object, or a folder (`is_prefix`) in a listing that is not recursive.
    Equal (and hashed) by every field; pickles."""

    bucket: str
    key: str
    size: int
    etag: str | None
    last_modified: datetime.datetime | None
    """Timezone-aware, in UTC, to the millisecond; None for a folder."""
    storage_class: str | None
    is_prefix: bool
    def __init__(
        self,
        bucket: str,
        key: str,
        size: int = 0,
        etag: str | None = None,
        last_modified: datetime.datetime | None = None,
        storage_class: str | None = None,
        is_prefix: bool = False,
    ) -> None: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def to_dict(self) -> dict[str, Any]:
        """The fields above, `ObjectInfo(**d)` gives the entry back."""
    @property
    def url(self) -> str:
        """s3://bucket/key."""

class ListIterator(Iterator[ObjectInfo], AsyncIterator[ObjectInfo]):
    """A listing, streamed page by page."""

    def __iter__(self) -> ListIterator: ...
    def __next__(self) -> ObjectInfo: ...
    def __aiter__(self) -> ListIterator: ...
    def __anext__(self) -> Awaitable[ObjectInfo]: ...

class Buffer:
    """Read-only bytes supporting the buffer protocol: use `memoryview(buf)`,
    `numpy.frombuffer(buf, ...)`, `file.write(buf)`, or `bytes(buf)` for a copy. Otherwise
    it reads as `bytes` does: `buf == b"..."`, `buf[0]`, `buf[:5]` (a copy as `bytes`),
    `buf.decode()`, `hash(buf)`, and it pickles."""

    def __init__(self, data: Buffer | bytes | bytearray | memoryview, /) -> None: ...
    def __len__(self) -> int: ...
    def __bytes__(self) -> bytes: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    @overload
    def __getitem__(self, index: SupportsIndex, /) -> int: ...
    @overload
    def __getitem__(self, index: slice, /) -> bytes: ...
    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str: ...

class Progress:
    """How far a transfer has come; passed to `progress=` at most every 100 ms and at the end."""

    objects_done: int
    objects_failed: int
    objects_total: int
    """Objects known so far; grows while a listing is read."""
    bytes_done: int
    bytes_total: int
    """Total size of the objects known so far."""

class Requests:
    """Requests sent, by kind: redirect hops and retries included, never a request that got
    no connection. `head` counts the HEADs for the store's checksum of objects that take
    more than one GET. `put` counts PUTs of an object or of one upload part, `multipart`
    the create, complete, abort and list-parts requests of multipart uploads, `copy` the
    copies inside the store (CopyObject, UploadPartCopy), `delete` the DeleteObjects
    requests."""

    get: int
    list: int
    head: int
    put: int
    multipart: int
    copy: int
    delete: int
    def __init__(
        self,
        get: int = 0,
        list: int = 0,
        head: int = 0,
        put: int = 0,
        multipart: int = 0,
        copy: int = 0,
        delete: int = 0,
    ) -> None: ...
    def to_dict(self) -> dict[str, int]: ...

class Verified:
    """How the objects that arrived were checked."""

    checksum: int
    md5: int
    size_only: int
    def __init__(self, checksum: int = 0, md5: int = 0, size_only: int = 0) -> None: ...
    def to_dict(self) -> dict[str, int]: ...

class Failure:
    """One object that did not arrive."""

    source: str
    error: str
    def __init__(self, source: str, error: str, exception: BaseException) -> None: ...
    def to_dict(self) -> dict[str, Any]:
        """source, error and exception."""
    @property
    def exception(self) -> Exception:
        """The error as the `parabyte.Error` subclass a single download would raise
        (`NotFoundError` is also a `FileNotFoundError`)."""

class Summary:
    """What one transfer did."""

    objects: int
    failed: int
    skipped: int
    """Objects left alone: an earlier download finished this same version."""
    skipped_by_size_and_time: int
    deleted: int
    """Of `skipped`, those judged by size and modification time alone (a file another tool
    downloaded, or an unchanged local copy)."""
    resumed: int
    """Objects completed from the parts an interrupted run left."""
    resumed_bytes: int
    """Bytes those parts held: not fetched again."""
    sent_with_md5: int
    """Objects uploaded with Content-MD5 rather than CRC64NVME: the store refused checksum
    headers. Each body's MD5 was checked by the store."""
    sent_with_md5_objects: list[str]
    """Those objects as `s3://bucket/key` (the first 1,000): stored without a CRC."""
    bytes: int
    elapsed_seconds: float
    """Wall time in seconds (`elapsed` is the same)."""
    first_object_seconds: float | None
    """Seconds until the first object's download began (with a listing: the first page)."""
    bytes_per_second: float
    requests: Requests
    connections: int
    """TCP connections opened."""
    retries: int
    verified: Verified
    failures: list[Failure]
    def __init__(
        self,
        *,
        objects: int = 0,
        failed: int = 0,
        skipped: int = 0,
        skipped_by_size_and_time: int = 0,
        deleted: int = 0,
        resumed: int = 0,
        resumed_bytes: int = 0,
        sent_with_md5: int = 0,
        sent_with_md5_objects: list[str] = ...,
        bytes: int = 0,
        elapsed_seconds: float = 0.0,
        first_object_seconds: float | None = None,
        bytes_per_second: float = 0.0,
        requests: Requests = ...,
        connections: int = 0,
        retries: int = 0,
        verified: Verified = ...,
        failures: list[Failure] = ...,
    ) -> None:
        """Summaries come from transfers; this is for unpickling."""
    def to_dict(self) -> dict[str, Any]:
        """Every field, the nested ones (requests, verified, failures) as dicts too."""
    @property
    def ok(self) -> bool:
        """True when every object arrived."""
    @property
    def elapsed(self) -> float:
        """`elapsed_seconds`, by its shorter name."""
    @staticmethod
    def merged(
        parts: list[Summary],
        elapsed_seconds: float,
        *,
        failures: list[Failure] | None = None,
        resumed_from: list[Summary] | None = None,
    ) -> Summary:
        """The one way summaries add up (a job spread over a cluster): every count summed,
        `failures` (or the parts' own) listed, `resumed` counted of `resumed_from` only
        (by default every part)."""
    def raise_for_failures(self) -> None:
        """Raise `TransferFailedError` (with this summary) if any object failed."""

def close_gate() -> None:
    """Called at exit: parabyte's threads stop calling into Python."""

def _restore(cls: type[Any], fields: dict[str, Any]) -> Any:
    """Unpickling: `cls(**fields)`."""

def run_cli(argv: list[str]) -> int:
    """The `parabyte` command line on `argv` (program name first); returns its exit status."""

def cluster_job_args(argv: list[str]) -> dict[str, Any] | None:
    """`parabyte cp|sync|mv|rm --dask-scheduler ...` parsed by the command line's flags
    (`command`, `scheduler`, `source`, `destination`, `manifest`, `recursive`, `json`,
    `quiet`, `options`, the `Client` keywords, and `keywords`, the function's own); `None`
    for any other command line."""

# The calls `parabyte.dask` cuts a write job into (see python/parabyte/_cluster_writes.py).
_Upload: TypeAlias = tuple[str, str, int, int, int, str]
_SharedKind: TypeAlias = Literal["upload", "copy"]
_Part: TypeAlias = tuple[int, str, int]

def sync_part(
    client: Client,
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    after: str | None,
    until_after: str | None,
    **keywords: Any,
) -> tuple[Summary, tuple[int, list[str] | str] | None]:
    """One range of a sync (names below both sides); with `delete=True` its verdict on
    deletes, which it does not make."""

def sync_deletes_allowed(
    verdicts: Sequence[tuple[int, list[str] | str] | None],
    source: str,
    destination: str,
    **keywords: Any,
) -> tuple[int | None, str | None]:
    """The delete rule over every range's verdict: `(count, None)`, or `(None, reason)`."""

def sync_deletes(
    client: Client,
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    names: list[str],
    **keywords: Any,
) -> Summary:
    """Delete `names` below the sync's destination, as the sync deletes them."""

def copy_range(
    client: Client,
    prefix: str,
    destination: str,
    after: str | None,
    until_after: str | None,
    moving: bool = False,
    **keywords: Any,
) -> Summary:
    """One range of a prefix copied (or moved) to `destination`."""

def remove_range(
    client: Client, prefix: str, after: str | None, until_after: str | None, **keywords: Any
) -> Summary:
    """One range of a prefix deleted."""

class TreeWalk:
    """A tree walked for an upload: `("file", path, url, size)`, `("passed_over", name,
    why)` or `("refused", name, why)`."""

    def __iter__(self) -> TreeWalk: ...
    def __next__(self) -> tuple[Any, ...]: ...

def walk_upload(
    client: Client, source: str | os.PathLike[str], destination: str, **keywords: Any
) -> TreeWalk:
    """The tree `source` walked as an upload to `destination` walks it."""

def open_shared_upload(
    client: Client,
    kind: _SharedKind,
    source: str | os.PathLike[str],
    destination: str,
    size: int | None = None,
    etag: str | None = None,
    **keywords: Any,
) -> _Upload:
    """Open the upload of a large file ("upload": `source` its path) or the copy of an
    object ("copy": `source` its URL; `size` and `etag` as its listing gave them) in parts,
    for workers to send."""

def send_shared_parts(
    client: Client,
    kind: _SharedKind,
    source: str | os.PathLike[str],
    upload: _Upload,
    first: int,
    last: int,
    *,
    progress: Callable[[Progress], object] | None = None,
) -> tuple[list[_Part], Summary]:
    """Send parts `first..=last` of a shared upload."""

def commit_shared_upload(
    client: Client,
    kind: _SharedKind,
    source: str | os.PathLike[str],
    upload: _Upload,
    parts: list[_Part],
    **keywords: Any,
) -> Summary:
    """Complete a shared upload: a file's checked by its whole CRC64NVME, a copy's
    compared with its source."""

def abort_shared_upload(client: Client, upload: _Upload) -> None:
    """Abort a shared upload."""

def manifest_into_store(
    client: Client,
    name: str,
    first_line: int,
    text: str,
    destination: str,
    since_ms: int,
    **keywords: Any,
) -> Summary:
    """Some lines of a manifest into `s3://`, as `cp --manifest` runs them; bad lines are
    failures named `NAME:LINE`."""

def abort_uploads_left(
    client: Client,
    prefix: str,
    since_ms: int,
    *,
    keys: list[str] | None = None,
    after: str | None = None,
    until_after: str | None = None,
) -> int:
    """Abort the uploads a task's earlier attempts left open; returns how many."""

def parse_manifest(text: str) -> tuple[list[Item], list[tuple[int, str]]]:
    """A manifest's items (each with its destination path) and its bad lines as
    `(line, message)`, read as `parabyte cp --manifest` reads them."""

def get_ranges_of_version(
    client: Client, source: str, etag: str, ranges: Sequence[_Range]
) -> list[Buffer]:
    """Byte ranges `(start, end)` of `s3://bucket/key`, each a buffer, all of the version
    whose ETag is `etag` (`If-Match` on every GET); another version there raises
    `ObjectChangedError`. What `parabyte.fsspec`'s files read with."""

def get_ranges_of_version_async(
    client: Client, source: str, etag: str, ranges: Sequence[_Range]
) -> Awaitable[list[Buffer]]:
    """`get_ranges_of_version` as an awaitable."""

class StreamedUpload:
    """One object being written (`start_upload`): `write` its bytes, then `close` to store
    it; `abort`, or dropping it unclosed, stores nothing."""

    def write(self, data: bytes) -> int:
        """Hand `data` to the upload (parts go up while the writer goes on)."""
    def close(self) -> Summary:
        """Store the object; its failure is raised."""
    def abort(self) -> None:
        """Abort the upload: nothing is stored."""

def start_upload(client: Client, destination: str, *, no_clobber: bool = False) -> StreamedUpload:
    """Begin a streamed upload to `s3://bucket/key` (what `parabyte.fsspec`'s files open
    for writing use); with `no_clobber` a key that exists is kept (`summary.skipped`)."""

_Path: TypeAlias = str | os.PathLike[str]
_Progress: TypeAlias = Callable[[Progress], object]
_ItemLike: TypeAlias = Item | ObjectInfo | str
_Range: TypeAlias = tuple[int, int] | list[int]
