"""The keywords of `download`, `upload`, `remove` and `sync` (and their twins), typed once.
`Client.download`, `Client.download_async` and the module's `download` and `download_async`
all take `**options: Unpack[DownloadOptions]`; the extension parses the same names in one
place (`_native.DOWNLOAD_KEYWORDS`, `UPLOAD_KEYWORDS`, `REMOVE_KEYWORDS`, `SYNC_KEYWORDS`),
and a test holds the lists equal. Each is the option of the same name of the CLI command
(`dry_run` is `--dryrun`), with the same default (`DEFAULTS`).

A keyword no function takes is refused with the nearest one (`unexpected`), and `help()` of
each function lists its keywords (`show_keywords`)."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ForwardRef, Literal, TypedDict

if TYPE_CHECKING:
    from ._native import Progress


class DownloadOptions(TypedDict, total=False):
    """What to copy and how it reports.

    recursive: copy everything under the source, as if it ended in "/".
    exclude, include: patterns matched against each object's path below the source; every
        exclude applies before every include (`exclude=["*"], include=["*.jpg"]`).
    raw: take `*`, `?` and `[` in the source literally.
    dry_run: fetch and write nothing: the summary counts what would be copied (`cp
        --dryrun`); one key that is not there raises, as its copy would (one HEAD).
    progress: called on a parabyte thread with a `Progress` as bytes move.
    after, until_after: copy one range of a prefix's key space (boundaries from
        `split_key_space`), each key at the path a copy of the whole prefix gives it.
    """

    recursive: bool
    exclude: Sequence[str]
    include: Sequence[str]
    raw: bool
    dry_run: bool
    progress: Callable[[Progress], object] | None
    after: str | None
    until_after: str | None


DOWNLOAD_KEYWORDS = frozenset(DownloadOptions.__optional_keys__)


class UploadOptions(TypedDict, total=False):
    """Which files go up and how the objects are stored.

    recursive: take the source as a prefix (`copy`, `move`); a directory is uploaded whole
        with or without it, as `cp` uploads one with or without `-r`.
    exclude, include, raw: choose files as `DownloadOptions` chooses objects (not for
        `put_bytes`).
    follow_symlinks: read links inside a tree as what they point to, loops refused [False:
        each is passed over, not a failure].
    dry_run: read, send and delete nothing: the summary counts what would be sent (`cp
        --dryrun`; not for `upload_many` and `put_bytes`).
    progress: called on a parabyte thread with a `Progress` as bytes move.
    no_clobber: never replace an object; a key that exists is skipped (If-None-Match: *).
    content_type: the objects' Content-Type [guessed from each file's extension].
    guess_content_type: guess it when `content_type` is not given [True].
    cache_control, content_encoding, storage_class: stored with the objects.
    sse: server-side encryption, "AES256" or "aws:kms"; sse_kms_key_id: the KMS key.
    metadata: user metadata, {name: value} (ASCII); the file's mtime is always kept.
    """

    recursive: bool
    exclude: Sequence[str]
    include: Sequence[str]
    raw: bool
    follow_symlinks: bool
    dry_run: bool
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


class RemoveOptions(TypedDict, total=False):
    """Which keys `remove` deletes, as `rm` chooses them.

    recursive: every key under the source as a prefix, not the one key named.
    exclude, include, raw: choose keys as `DownloadOptions` chooses objects.
    dry_run: delete nothing: the summary counts what would go (`rm --dryrun`).
    """

    recursive: bool
    exclude: Sequence[str] | None
    include: Sequence[str] | None
    raw: bool
    dry_run: bool


REMOVE_KEYWORDS = frozenset(RemoveOptions.__optional_keys__)


SyncCompare = Literal["size_and_time", "size_only", "exact_timestamps", "checksum"]
"""How `sync` tells a changed object: size and time (as aws s3 sync), size alone, exact
times (downloads), or CRC64NVME contents."""


class SyncOptions(UploadOptions, total=False):
    """What `sync` sends and deletes, besides the `UploadOptions`.

    delete: remove from the destination what the source lacks, once both sides were listed
        whole and the source was read without a failure or refusal.
    max_delete: with `delete`, delete none when more than this would go.
    delete_if_source_empty: with `delete`, a source that holds nothing empties the
        destination.
    compare: how a changed object is told: "size_and_time" (as aws s3 sync), "size_only",
        "exact_timestamps" (downloads) or "checksum" (CRC64NVME contents).
    """

    delete: bool
    max_delete: int | None
    delete_if_source_empty: bool
    compare: SyncCompare


SYNC_KEYWORDS = frozenset(SyncOptions.__optional_keys__) - UPLOAD_KEYWORDS

# What each keyword is when it is not given: the CLI's defaults.
DEFAULTS: dict[str, object] = {
    "recursive": False,
    "exclude": None,
    "include": None,
    "raw": False,
    "follow_symlinks": False,
    "dry_run": False,
    "progress": None,
    "after": None,
    "until_after": None,
    "no_clobber": False,
    "content_type": None,
    "guess_content_type": True,
    "cache_control": None,
    "content_encoding": None,
    "storage_class": None,
    "sse": None,
    "sse_kms_key_id": None,
    "metadata": None,
    "delete": False,
    "max_delete": None,
    "delete_if_source_empty": False,
    "compare": "size_and_time",
}


def unexpected(function: str, name: str, valid: Iterable[str]) -> TypeError:
    """The TypeError for a keyword `function` does not take, naming the nearest of `valid`
    (a few letters off, or the start of one), as the extension words it."""
    known = sorted(set(valid))
    nearest = [known_name for known_name in known if len(name) >= 3 and known_name.startswith(name)]
    nearest = nearest or difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean '{nearest[0]}'?" if nearest else f"; it takes {', '.join(known)}"
    return TypeError(f"{function}() got an unexpected keyword argument '{name}'{hint}")


def check(function: str, given: Collection[str], valid: Collection[str]) -> None:
    """Raise `unexpected` for the first of `given` that is not `valid`."""
    for name in given:
        if name not in valid:
            raise unexpected(function, name, valid)


def _annotations() -> dict[str, object]:
    """Each keyword's type as written in the TypedDicts above."""
    written: dict[str, object] = {}
    for typed in (DownloadOptions, SyncOptions, RemoveOptions):
        for name, annotation in typed.__annotations__.items():
            if isinstance(annotation, ForwardRef):
                annotation = annotation.__forward_arg__
            written.setdefault(name, annotation)
    return written


_ANNOTATIONS = _annotations()


def show_keywords(function: Callable[..., Any], names: Collection[str], *, forwards: bool) -> None:
    """Give `function` the signature `help()` shows: its own parameters, then each of
    `names` as a keyword with its default, then, where it `forwards` the rest to a `Client`
    (a module-level function), its `**options`."""
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())
    forwarded = [p for p in parameters if p.kind is inspect.Parameter.VAR_KEYWORD and forwards]
    own = [p for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD]
    present = {p.name for p in own}
    order = [name for name in DEFAULTS if name in names and name not in present]
    added = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=DEFAULTS[name],
            annotation=_ANNOTATIONS.get(name, inspect.Parameter.empty),
        )
        for name in order
    ]
    function.__signature__ = signature.replace(parameters=[*own, *added, *forwarded])  # type: ignore[attr-defined]
