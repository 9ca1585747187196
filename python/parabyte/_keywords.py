"""The keywords of `download` and `upload` (and their twins), typed once. `Client.download`,
`Client.download_async` and the module's `download` and `download_async` all take
`**options: Unpack[DownloadOptions]`; the extension parses the same names in one place
(`_native.DOWNLOAD_KEYWORDS`), and a test holds the two lists equal."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from ._native import Progress


class DownloadOptions(TypedDict, total=False):
    """What to copy and how it reports.

    recursive: copy everything under the source, as if it ended in "/".
    exclude, include: patterns matched against each object's path below the source; every
        exclude applies before every include (`exclude=["*"], include=["*.jpg"]`).
    raw: take `*`, `?` and `[` in the source literally.
    progress: called on a parabyte thread with a `Progress` as bytes move.
    after, until_after: copy one range of a prefix's key space (boundaries from
        `split_key_space`), each key at the path a copy of the whole prefix gives it.
    """

    recursive: bool
    exclude: Sequence[str]
    include: Sequence[str]
    raw: bool
    progress: Callable[[Progress], object] | None
    after: str | None
    until_after: str | None


DOWNLOAD_KEYWORDS = frozenset(DownloadOptions.__optional_keys__)


class UploadOptions(TypedDict, total=False):
    """Which files go up and how the objects are stored.

    exclude, include, raw: choose files as `DownloadOptions` chooses objects (not for
        `put_bytes`).
    follow_symlinks: read links inside a tree as what they point to, loops refused [False:
        each is passed over, not a failure].
    progress: called on a parabyte thread with a `Progress` as bytes move.
    no_clobber: never replace an object; a key that exists is skipped (If-None-Match: *).
    content_type: the objects' Content-Type [guessed from each file's extension].
    guess_content_type: guess it when `content_type` is not given [True].
    cache_control, content_encoding, storage_class: stored with the objects.
    sse: server-side encryption, "AES256" or "aws:kms"; sse_kms_key_id: the KMS key.
    metadata: user metadata, {name: value} (ASCII); the file's mtime is always kept.
    """

    exclude: Sequence[str]
    include: Sequence[str]
    raw: bool
    follow_symlinks: bool
    progress: Callable[[Progress], object] | None
    no_clobber: bool
    content_type: str | None
    guess_content_type: bool
    cache_control: str | None
    content_encoding: str | None
    storage_class: str | None
    sse: str | None
    sse_kms_key_id: str | None
    metadata: Mapping[str, str] | None


UPLOAD_KEYWORDS = frozenset(UploadOptions.__optional_keys__)
