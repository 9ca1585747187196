"""`download`'s keywords are written once: the extension parses them in one place for the
sync and async forms, `DownloadOptions` types the same names, and a mistyped one is refused
with the nearest known name."""

from __future__ import annotations

import asyncio
import inspect
import pydoc
import re
import subprocess
import sys
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


def test_every_keyword_list_is_typed_once():
    assert set(_native.UPLOAD_KEYWORDS) == _keywords.UPLOAD_KEYWORDS
    assert set(_native.REMOVE_KEYWORDS) == _keywords.REMOVE_KEYWORDS
    assert set(_native.SYNC_KEYWORDS) == _keywords.SYNC_KEYWORDS
    assert set(_keywords.DEFAULTS) == (
        _keywords.DOWNLOAD_KEYWORDS
        | _keywords.UPLOAD_KEYWORDS
        | _keywords.REMOVE_KEYWORDS
        | _keywords.SYNC_KEYWORDS
    )


# CLI flags that only change what the command prints: Python returns a `Summary`.
SHOWN_ONLY = {"help", "verbose", "json", "json-lines", "quiet", "no-progress", "object-lines"}
# CLI flags that are no keyword in Python, and what stands for them there.
ELSEWHERE = {
    "manifest": "download_many and upload_many",
    "discard": "destination=None",
    "dask-scheduler": "parabyte.dask",
    "dask-split-bytes": "parabyte.dask",
}
# Flags whose Python keyword has another name: a negative flag is its keyword's False, and
# sync's three ways to compare are one keyword.
RENAMED = {
    "dryrun": "dry_run",
    "no-guess-mime-type": "guess_content_type",
    "no-follow-symlinks": "follow_symlinks",
    "no-verify": "verify",
    "size-only": "compare",
    "exact-timestamps": "compare",
    "checksum": "compare",
}
# Keywords that only Python has: a callback, and key ranges for a cluster's tasks.
PYTHON_ONLY = {"progress", "after", "until_after"}
# What each CLI flag of `cp` that only writes to a store is.
UPLOAD_FLAGS = {
    "follow-symlinks",
    "no-follow-symlinks",
    "no-clobber",
    "content-type",
    "no-guess-mime-type",
    "cache-control",
    "content-encoding",
    "storage-class",
    "sse",
    "sse-kms-key-id",
    "metadata",
}


def _flags(command: str) -> set[str]:
    """The long flags `parabyte COMMAND --help` lists."""
    shown = subprocess.run(
        [sys.executable, "-m", "parabyte", command, "--help"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(re.findall(r"^\s+(?:-\w, )?--([a-z0-9-]+)", shown, re.MULTILINE))


@pytest.mark.parametrize(
    ("function", "command", "not_for_it"),
    [
        ("download", "cp", UPLOAD_FLAGS),
        ("upload", "cp", set()),
        ("copy", "cp", set()),
        ("move", "mv", set()),
        ("sync", "sync", set()),
        ("remove", "rm", set()),
    ],
)
def test_each_function_takes_its_commands_options_under_the_same_names(
    function: str, command: str, not_for_it: set[str]
):
    client_options = set(inspect.signature(parabyte.Client).parameters)
    for transfer in (getattr(parabyte, function), getattr(parabyte.Client, function)):
        for form in (transfer, getattr(parabyte, f"{function}_async")):
            keywords = set(inspect.signature(form).parameters) - {"self", "options"}
            flags = _flags(command) - SHOWN_ONLY - set(ELSEWHERE) - not_for_it
            named = {RENAMED.get(flag, flag.replace("-", "_")) for flag in flags}
            missing = named - keywords - client_options
            assert not missing, f"{function}() lacks what `{command}` takes: {sorted(missing)}"
            extra = keywords - named - PYTHON_ONLY - {"source", "destination", "items", "data"}
            assert not extra, f"{function}() takes what `{command}` does not: {sorted(extra)}"


@pytest.mark.parametrize(
    ("function", "typo", "nearest"),
    [
        ("upload", "dryrun", "dry_run"),
        ("download", "exlcude", "exclude"),
        ("sync", "delete_if_empty", "delete_if_source_empty"),
        ("remove", "recursve", "recursive"),
        ("copy", "endpoint", "endpoint_url"),
        ("list", "recurse", "recursive"),
        ("get_bytes", "rnage", "range"),
        ("delete_many", "worker", "workers"),
    ],
)
def test_an_unknown_keyword_names_the_function_and_the_nearest_one(
    function: str, typo: str, nearest: str
):
    expected = (
        rf"^{function}\(\) got an unexpected keyword argument '{typo}'; did you mean '{nearest}'\?$"
    )
    arguments = {
        "remove": ["s3://bucket/key"],
        "list": ["s3://bucket/"],
        "get_bytes": ["s3://bucket/key"],
        "delete_many": [["s3://bucket/key"]],
    }.get(function, ["s3://bucket/key", "s3://bucket/copy"])
    with pytest.raises(TypeError, match=expected):
        getattr(parabyte, function)(*arguments, **{typo: True})
    # The method of a `Client` (made with no connection yet) says the same of itself,
    # nearest among its own keywords.
    method = getattr(parabyte.Client(region="us-east-1"), function)
    with pytest.raises(TypeError, match=rf"^{function}\(\) got an unexpected keyword argument"):
        method(*arguments, **{typo: True})


def test_help_shows_each_functions_keywords():
    for function in ("download", "upload", "copy", "move", "sync", "remove"):
        for form in (function, f"{function}_async"):
            for owner in (parabyte, parabyte.Client):
                shown = pydoc.render_doc(getattr(owner, form))
                assert "dry_run" in shown and "exclude" in shown, (owner, form, shown)
    assert "compare" in pydoc.render_doc(parabyte.sync)
    assert "content_type" in pydoc.render_doc(parabyte.Client.upload)


def test_dir_lists_only_the_api():
    listed = set(dir(parabyte))
    assert set(parabyte.__all__) | {"list", "copy"} == listed
    for internal in ("os", "threading", "Any", "functools", "builtins", "inspect", "atexit"):
        assert internal not in listed, internal


def test_a_dry_run_writes_and_deletes_nothing_in_every_direction(
    client: parabyte.Client, store: Store, tmp_path: Path
):
    options = store.client_options()
    small = store.url("small/")
    count = len(store.keys("small/"))
    assert client.download(small, tmp_path / "down", dry_run=True).objects == count
    assert parabyte.download(small, tmp_path / "down", dry_run=True, **options).objects == count
    assert not (tmp_path / "down").exists()

    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_bytes(b"a")
    (tree / "sub" / "b.txt").write_bytes(b"b")
    up = store.url("dry-run/up/")
    assert parabyte.upload(tree, up, dry_run=True, **options).objects == 2
    assert parabyte.sync(tree, up, dry_run=True, **options).objects == 2

    async def main() -> parabyte.Summary:
        return await client.upload_async(tree, up, dry_run=True)

    assert asyncio.run(main()).objects == 2
    one = store.url("small/00007.bin")
    assert parabyte.copy(one, store.url("dry-run/copy.bin"), dry_run=True, **options).objects == 1
    assert client.move(one, tmp_path / "moved.bin", dry_run=True).objects == 1
    assert not (tmp_path / "moved.bin").exists()
    assert client.remove(one, dry_run=True).deleted == 1
    assert parabyte.remove(small, recursive=True, dry_run=True, **options).deleted == count
    assert len(store.keys("small/")) == count
    assert not (store.root / store.bucket / "dry-run").exists()

    # One key that is not there: raised, as the copy itself would, after one HEAD.
    with pytest.raises(parabyte.NotFoundError, match="missing.bin"):
        client.download(store.url("missing.bin"), tmp_path / "m", dry_run=True)
    with pytest.raises(parabyte.NotFoundError, match="missing.bin"):
        parabyte.move(store.url("missing.bin"), tmp_path / "m", dry_run=True, **options)
