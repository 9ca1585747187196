"""The keywords of `download` and `download_async`, typed once. `Client.download`,
`Client.download_async` and the module's `download` and `download_async` all take
`**options: Unpack[DownloadOptions]`; the extension parses the same names in one place
(`_native.DOWNLOAD_KEYWORDS`), and a test holds the two lists equal."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
