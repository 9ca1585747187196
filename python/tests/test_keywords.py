"""`download`'s keywords are written once: the extension parses them in one place for the
sync and async forms, `DownloadOptions` types the same names, and a mistyped one is refused
with the nearest known name."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import parabyte
from conftest import Store
from parabyte import _keywords, _native


def test_the_typed_keywords_are_the_parsed_ones():
    assert set(_native.DOWNLOAD_KEYWORDS) == _keywords.DOWNLOAD_KEYWORDS
    assert set(parabyte.DownloadOptions.__optional_keys__) == _keywords.DOWNLOAD_KEYWORDS


def test_the_async_form_takes_every_keyword_the_sync_one_does(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    prefix = store.url("small/")
    keys = store.keys("small/")
    low, high = f"small/{Path(keys[9]).name}", f"small/{Path(keys[19]).name}"
    sync = client.download(prefix, tmp_path / "sync", after=low, until_after=high)

    async def main() -> parabyte.Summary:
        return await client.download_async(prefix, tmp_path / "async", after=low, until_after=high)

    summary = asyncio.run(main())
    # The keys after the 10th up to and including the 20th: the range's keys, no more.
    assert sync.objects == summary.objects == 10
    assert sorted(p.name for p in (tmp_path / "async").iterdir()) == sorted(
        p.name for p in (tmp_path / "sync").iterdir()
    )
    module_level = parabyte.download(
        prefix, tmp_path / "module", after=low, until_after=high, **store.client_options()
    )
    assert module_level.objects == 10


@pytest.mark.parametrize(
    ("typo", "nearest"),
    [("exlcude", "exclude"), ("recursve", "recursive"), ("until", "until_after")],
)
def test_a_mistyped_keyword_names_the_nearest_one(
    client: parabyte.Client, store: Store, tmp_path: Path, typo: str, nearest: str
):
    with pytest.raises(
        TypeError, match=f"unexpected keyword argument '{typo}'; did you mean '{nearest}'"
    ):
        client.download(store.url("small/"), tmp_path, **{typo: ["*"]})
    assert not any(tmp_path.iterdir()), "refused before anything moved"


def test_a_lone_pattern_string_is_refused(client: parabyte.Client, store: Store, tmp_path: Path):
    with pytest.raises(TypeError, match=r"exclude= takes a list of patterns"):
        client.download(store.url("small/"), tmp_path, exclude="*.tmp")
