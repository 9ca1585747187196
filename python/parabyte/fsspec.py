"""parabyte as an fsspec filesystem: pandas, pyarrow, Dask, xarray/zarr and every other
library that reads `s3://` through fsspec read and write through parabyte's engine.

    import parabyte.fsspec
    parabyte.fsspec.register_s3()                 # s3:// URLs in this process go to parabyte
    df = pandas.read_parquet("s3://bucket/data.parquet", storage_options={...})

or, without touching `s3://`, the protocol `parabyte://bucket/key` (the package's entry point
registers it with fsspec), or `ParabyteFileSystem(endpoint_url=...)` directly. The
constructor takes the keywords `parabyte.Client` takes.

Paths are `bucket/key` (or with `s3://`, `s3a://`, `parabyte://` in front). Folders are
prefixes, as in s3fs: `bucket/a` is a directory when a key starts with `bucket/a/`; an
empty one does not exist (making one does nothing).

What parabyte adds under the usual calls: listings are parabyte's pipelined listing; `cat`
of many paths and `get` of a tree or a list are one batch each in the engine (a size known
from a listing spares the probe); `cp_file` copies inside the store; `rm` deletes 1,000 keys
a request; a file opened for reading fetches its read-ahead as parallel ranges and is
pinned to the version it saw at open (`If-Match`), so an object replaced under it fails the
read (`parabyte.ObjectChangedError`) instead of mixing bytes; a file opened for writing
stores nothing unless it is closed without an error, and `"xb"` and
`pipe_file(mode="create")` refuse a key that exists (`FileExistsError`).
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterable
from typing import Any

from fsspec.asyn import AsyncFileSystem
from fsspec.caching import ReadAheadCache, register_cache
from fsspec.callbacks import DEFAULT_CALLBACK
from fsspec.implementations.local import LocalFileSystem, make_path_posix, trailing_sep
from fsspec.spec import AbstractBufferedFile
from fsspec.utils import other_paths

from . import Client, Item, _native
from .exceptions import InvalidInputError

__all__ = ["GrowingReadAhead", "ParabyteFile", "ParabyteFileSystem", "register_s3"]

# The keywords fsspec's base class takes for itself; every other one is a `Client` option.
_FSSPEC_KEYWORDS = frozenset(
    {
        "asynchronous",
        "loop",
        "batch_size",
        "skip_instance_cache",
        "use_listings_cache",
        "listings_expiry_time",
        "max_paths",
    }
)

_PROTOCOLS = ("parabyte", "s3", "s3a")


def register_s3(clobber: bool = True) -> None:
    """Make `s3://` (and `s3a://`) URLs in this process open through parabyte: pandas,
    pyarrow, Dask and the rest then read and write with parabyte's engine, with no other
    change to their calls."""
    import fsspec

    for protocol in ("s3", "s3a"):
        fsspec.register_implementation(protocol, ParabyteFileSystem, clobber=clobber)


def _file_info(bucket: str, entry: Any) -> dict[str, Any]:
    name = f"{bucket}/{entry.key}"
    if entry.is_prefix:
        return {
            "name": name.rstrip("/"),
            "size": 0,
            "type": "directory",
            "StorageClass": "DIRECTORY",
        }
    return {
        "name": name,
        "size": entry.size,
        "type": "file",
        "ETag": entry.etag,
        "LastModified": entry.last_modified,
        "StorageClass": entry.storage_class or "STANDARD",
    }


def _dir_info(name: str) -> dict[str, Any]:
    return {"name": name, "size": 0, "type": "directory", "StorageClass": "DIRECTORY"}


# The most a sequential reader's read-ahead grows to: 8 ranges of 8 MiB in flight.
MAX_READ_AHEAD = 64 << 20


class GrowingReadAhead(ReadAheadCache):
    """fsspec's read-ahead cache, whose read-ahead doubles (from the block size up to 64
    MiB) while reads go on where the last fetch ended, and falls back to one block at a
    jump: a sequential reader keeps many of the engine's parallel ranges busy, a reader
    that seeks (a Parquet footer, a zip's directory) fetches little past what it asked.
    A read larger than a block is fetched as asked, nothing ahead: it goes out as parallel
    ranges by itself, and a window past it would only be held beside the reader's own copy
    (pyarrow reads a Parquet file's column chunks so, tens of MiB at a time)."""

    name = "parabyte"

    def __init__(self, blocksize: int, fetcher: Any, size: int) -> None:
        super().__init__(blocksize, fetcher, size)
        self.ahead = blocksize

    def _fetch(self, start: int | None, end: int | None) -> bytes:
        begin = 0 if start is None else start
        stop = self.size if end is None else min(end, self.size)
        if begin >= stop:
            return b""
        hit = self.start <= begin and stop <= self.end
        if not hit and stop - begin > self.blocksize:
            self.miss_count += 1
            self.total_requested_bytes += stop - begin
            # The window is let go; a read on from here is still sequential.
            self.cache, self.start, self.end = b"", stop, stop
            return self.fetcher(begin, stop)
        if not hit:
            # A miss: reading on from the end of the last fetch is sequential.
            sequential = self.end > 0 and self.start <= begin <= self.end
            self.ahead = min(self.ahead * 2, MAX_READ_AHEAD) if sequential else self.blocksize
            self.blocksize, block = self.ahead, self.blocksize
            try:
                return super()._fetch(start, end)
            finally:
                self.blocksize = block
        return super()._fetch(start, end)


register_cache(GrowingReadAhead, clobber=True)


class ParabyteFileSystem(AsyncFileSystem):
    """S3 (and S3-compatible stores) through parabyte's engine, as an fsspec filesystem.

    Keywords: those of `parabyte.Client` (`endpoint_url`, `region`, `profile`,
    `access_key_id`, `secret_access_key`, `session_token`, `timeout`, `workers`,
    `part_size`, ...), and fsspec's own (`asynchronous`, `loop`, `batch_size`,
    `skip_instance_cache`). `default_block_size` sets how many bytes a file opened for
    reading fetches ahead at first (8 MiB; doubled, up to 64 MiB, while reads are
    sequential); `default_cache_type` its fsspec cache ("parabyte": `GrowingReadAhead`).
    """

    protocol = _PROTOCOLS
    root_marker = ""
    async_impl = True
    mirror_sync_methods = True

    def __init__(
        self,
        *,
        default_block_size: int = 8 << 20,
        default_cache_type: str = "parabyte",
        **options: Any,
    ) -> None:
        own = {name: value for name, value in options.items() if name in _FSSPEC_KEYWORDS}
        client_options = {
            name: value for name, value in options.items() if name not in _FSSPEC_KEYWORDS
        }
        super().__init__(**own)
        self.client = Client(**client_options)
        self.default_block_size = default_block_size
        self.default_cache_type = default_cache_type

    # -- paths -------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = make_path_posix(str(path)) if isinstance(path, os.PathLike) else str(path)
        for protocol in _PROTOCOLS:
            if path.startswith(f"{protocol}://"):
                path = path[len(protocol) + 3 :]
                break
        return path.rstrip("/").lstrip("/")

    @staticmethod
    def _get_kwargs_from_urls(path: str) -> dict[str, Any]:
        return {}

    @staticmethod
    def split_path(path: str) -> tuple[str, str]:
        """`(bucket, key)` of a path without its protocol."""
        bucket, _, key = path.partition("/")
        return bucket, key

    def _url(self, path: str) -> str:
        return f"s3://{self._strip_protocol(path)}"

    def unstrip_protocol(self, name: str) -> str:
        return f"s3://{name}"

    # -- listing and metadata ----------------------------------------------------------

    async def _ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        path = self._strip_protocol(path)
        if not path:
            raise NotImplementedError("listing buckets is not supported; name a bucket")
        bucket, key = self.split_path(path)
        prefix = f"{key}/" if key else ""
        out = []
        async for entry in self.client.list(f"s3://{bucket}/{prefix}", recursive=False):
            if entry.key == prefix:
                continue  # a folder's marker object is the folder, not an entry in it
            out.append(_file_info(bucket, entry))
        if not out:
            info = await self._info(path)
            out = [info] if info["type"] == "file" else []
        return out if detail else [info["name"] for info in out]

    async def _info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        path = self._strip_protocol(path)
        if not path:
            return _dir_info("")  # the root, above the buckets
        bucket, key = self.split_path(path)
        if not key:
            # A bucket: there when it can be listed.
            async for _ in self.client.list(f"s3://{bucket}/", recursive=False):
                break
            return _dir_info(bucket)
        folder = f"{key}/"
        # One level listed from the key: the key itself comes first, then keys that extend
        # it with characters before "/", then the folder; nothing after that is needed.
        async for entry in self.client.list(f"s3://{bucket}/{key}", recursive=False):
            if entry.key == key and not entry.is_prefix:
                return _file_info(bucket, entry)
            if entry.key == folder:
                return _dir_info(path)
            if entry.key > folder:
                break
        raise FileNotFoundError(f"s3://{path}: no such key or prefix")

    async def _find(
        self,
        path: str,
        maxdepth: int | None = None,
        withdirs: bool = False,
        detail: bool = False,
        prefix: str = "",
        **kwargs: Any,
    ) -> Any:
        if maxdepth is not None and maxdepth < 1:
            raise ValueError("maxdepth must be at least 1")
        path = self._strip_protocol(path)
        bucket, key = self.split_path(path)
        base = f"{key}/" if key else ""
        found: dict[str, dict[str, Any]] = {}
        root_marker = False
        async for entry in self.client.list(f"s3://{bucket}/{base}{prefix}", recursive=True):
            relative = entry.key[len(base) :]
            if not relative:
                root_marker = True  # the folder's own marker object
                continue
            parts = relative.split("/")
            # Every folder on the way is a directory; a key ending in "/" is a folder's
            # marker object, which `rm` deletes with the folder.
            for depth in range(1, len(parts)):
                if maxdepth is not None and depth > maxdepth:
                    break
                name = f"{path}/{'/'.join(parts[:depth])}"
                if withdirs and name not in found:
                    found[name] = _dir_info(name)
                if withdirs and depth == len(parts) - 1 and not parts[-1]:
                    found[name]["marker"] = True
            if entry.key.endswith("/") or (maxdepth is not None and len(parts) > maxdepth):
                continue
            info = _file_info(bucket, entry)
            found[info["name"]] = info
        if withdirs and (found or root_marker) and not prefix and key:
            found[path] = _dir_info(path)
            if root_marker:
                found[path]["marker"] = True
        if not found and key and not prefix:
            try:
                info = await self._info(path)
            except FileNotFoundError:
                info = None
            if info is not None and info["type"] == "file":
                found[path] = info
        names = sorted(found)
        return {name: found[name] for name in names} if detail else names

    async def _exists(self, path: str, **kwargs: Any) -> bool:
        try:
            await self._info(path)
            return True
        except FileNotFoundError:
            return False

    async def _isdir(self, path: str) -> bool:
        try:
            return (await self._info(path))["type"] == "directory"
        except FileNotFoundError:
            return False

    async def _isfile(self, path: str) -> bool:
        try:
            return (await self._info(path))["type"] == "file"
        except FileNotFoundError:
            return False

    async def _du(
        self, path: str, total: bool = True, maxdepth: int | None = None, **kwargs: Any
    ) -> Any:
        sizes = {
            name: info["size"]
            for name, info in (await self._find(path, maxdepth=maxdepth, detail=True)).items()
        }
        return sum(sizes.values()) if total else sizes

    async def _modified(self, path: str) -> Any:
        info = await self._info(path)
        if info["type"] != "file":
            raise IsADirectoryError(path)
        return info["LastModified"]

    async def _mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        """Folders are prefixes: nothing to make. A bucket must exist already."""

    async def _makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Folders are prefixes: nothing to make."""

    # -- reading -----------------------------------------------------------------------

    async def _cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any
    ) -> bytes:
        url = self._url(path)
        if start is None and end is None:
            return bytes(await self.client.get_bytes_async(url))
        if (start is not None and start < 0) or (end is not None and end < 0) or end is None:
            size = (await self._info(path))["size"]
            start = 0 if start is None else (max(size + start, 0) if start < 0 else start)
            end = size if end is None else (max(size + end, 0) if end < 0 else end)
        start = start or 0
        if start >= end:
            return b""
        try:
            return bytes(await self.client.get_bytes_async(url, range=(start, end)))
        except InvalidInputError:
            # The start lies past the end of the object: no byte, as a file read there.
            if start >= (await self._info(path))["size"]:
                return b""
            raise

    async def _cat(
        self, path: Any, recursive: bool = False, on_error: str = "raise", **kwargs: Any
    ) -> Any:
        """Many objects in one batch of the engine, `workers` at a time; objects found by a
        listing (a folder with `recursive`, a pattern) carry their size and ETag, so each is
        fetched with no probe and pinned to the listed version."""
        if isinstance(path, str) and not recursive and not _has_magic(path):
            return await self._cat_file(path)
        sources: dict[str, Any] = {}
        for one in [path] if isinstance(path, str) else list(path):
            one = self._strip_protocol(one)
            if _has_magic(one) or recursive:
                listed = (
                    await self._glob(one, detail=True)
                    if _has_magic(one)
                    else await self._find(one, detail=True)
                )
                for name, info in listed.items():
                    if info["type"] == "file":
                        sources[name] = Item(
                            self._url(name), size=info["size"], etag=info.get("ETag")
                        )
            else:
                sources[one] = self._url(one)
        if not sources:
            raise FileNotFoundError(path)
        fetched = await self.client.get_bytes_many_async(list(sources.values()), on_error="return")
        out: dict[str, Any] = {}
        for name, value in zip(sources, fetched):
            if isinstance(value, BaseException):
                if on_error == "raise":
                    raise value
                if on_error == "omit":
                    continue
                out[name] = value
            else:
                out[name] = bytes(value)
        return out

    async def _cat_ranges(
        self,
        paths: list[str],
        starts: Any,
        ends: Any,
        max_gap: int | None = None,
        on_error: str = "return",
        **kwargs: Any,
    ) -> list[Any]:
        """Byte ranges of many objects: the ranges of one object in one call of the engine
        (parallel GETs, all of one version), the objects at once."""
        if not isinstance(paths, list):
            raise TypeError("paths must be a list")
        if not isinstance(starts, Iterable):
            starts = [starts] * len(paths)
        if not isinstance(ends, Iterable):
            ends = [ends] * len(paths)
        starts, ends = list(starts), list(ends)
        if len(starts) != len(paths) or len(ends) != len(paths):
            raise ValueError("paths, starts and ends must be as long as each other")
        out: list[Any] = [b""] * len(paths)
        by_path: dict[str, list[int]] = {}
        for index, path in enumerate(paths):
            by_path.setdefault(self._strip_protocol(path), []).append(index)

        async def one_object(path: str, indices: list[int]) -> None:
            try:
                wanted = [(starts[i], ends[i]) for i in indices]
                if any(s is None or s < 0 or e is None or e < 0 for s, e in wanted):
                    size = (await self._info(path))["size"]
                    wanted = [_absolute(s, e, size) for s, e in wanted]
                asked = [(i, s, e) for i, (s, e) in zip(indices, wanted) if s < e]
                if not asked:
                    return
                try:
                    got = await self.client.get_bytes_async(
                        self._url(path), ranges=[(s, e) for _, s, e in asked]
                    )
                except InvalidInputError:
                    # A range starts past the end: cut every range at the end, as files read.
                    size = (await self._info(path))["size"]
                    asked = [(i, s, min(e, size)) for i, s, e in asked if s < size]
                    if not asked:
                        return
                    got = await self.client.get_bytes_async(
                        self._url(path), ranges=[(s, e) for _, s, e in asked]
                    )
                for (i, _, _), data in zip(asked, got):
                    out[i] = bytes(data)
            except Exception as error:  # noqa: BLE001 - each range takes its own failure
                for i in indices:
                    out[i] = error

        await asyncio.gather(*(one_object(p, ix) for p, ix in by_path.items()))
        if on_error != "return":
            for value in out:
                if isinstance(value, BaseException):
                    raise value
        return out

    async def _get_file(self, rpath: str, lpath: str, **kwargs: Any) -> None:
        if os.path.isdir(lpath):
            return
        await self.client.download_async(self._url(rpath), os.fspath(lpath))

    async def _get(
        self,
        rpath: Any,
        lpath: Any,
        recursive: bool = False,
        callback: Any = DEFAULT_CALLBACK,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Files to local paths as fsspec maps them, all in one batch of the engine
        (`download_many`: parallel, resumable, each checked); sizes and ETags from the
        listing spare the probes."""
        infos: dict[str, dict[str, Any]] = {}
        if isinstance(lpath, list) and isinstance(rpath, list):
            rpaths, lpaths = [self._strip_protocol(p) for p in rpath], lpath
        else:
            source_is_str = isinstance(rpath, str)
            source_not_trailing_sep = source_is_str and not trailing_sep(rpath)
            rpath = self._strip_protocol(rpath)
            rpaths = await self._expand_infos(rpath, recursive, maxdepth, infos)
            if source_is_str and (not recursive or maxdepth is not None):
                rpaths = [p for p in rpaths if infos[p]["type"] != "directory"]
                if not rpaths:
                    return
            lpath = make_path_posix(lpath)
            source_is_file = len(rpaths) == 1
            dest_is_dir = isinstance(lpath, str) and (
                trailing_sep(lpath) or LocalFileSystem().isdir(lpath)
            )
            exists = source_is_str and (
                (_has_magic(rpath) and source_is_file)
                or (not _has_magic(rpath) and dest_is_dir and source_not_trailing_sep)
            )
            lpaths = other_paths(rpaths, lpath, exists=exists, flatten=not source_is_str)
        items = []
        for rp, lp in zip(rpaths, lpaths):
            info = infos.get(rp)
            if info is not None and info["type"] == "directory":
                os.makedirs(lp, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(os.path.abspath(lp)) or ".", exist_ok=True)
            if os.path.isdir(lp):
                continue
            size, etag = (info["size"], info.get("ETag")) if info else (None, None)
            items.append(Item(self._url(rp), os.path.abspath(lp), size=size, etag=etag))
        callback.set_size(len(items))
        if not items:
            return
        # Each item names its absolute path; the batch's directory is what holds them all.
        within = os.path.commonpath([os.path.dirname(item.destination) for item in items])
        summary = await self.client.download_many_async(items, within)
        callback.relative_update(summary.objects + summary.skipped)
        _raise_first(summary)

    async def _expand_infos(
        self,
        path: str | list[str],
        recursive: bool,
        maxdepth: int | None,
        infos: dict[str, dict[str, Any]],
    ) -> list[str]:
        """fsspec's `expand_path`, keeping what the listings said of each path."""
        if not isinstance(path, str):
            for one in path:
                await self._expand_infos(self._strip_protocol(one), recursive, maxdepth, infos)
            return sorted(infos)
        if _has_magic(path):
            listed = await self._glob(path, maxdepth=maxdepth, detail=True)
            infos.update(listed)
            if recursive and not (maxdepth is not None and maxdepth <= 1):
                for name, info in list(listed.items()):
                    if info["type"] == "directory":
                        infos.update(
                            await self._find(
                                name,
                                maxdepth=None if maxdepth is None else maxdepth - 1,
                                withdirs=True,
                                detail=True,
                            )
                        )
        else:
            if recursive:
                infos.update(await self._find(path, maxdepth=maxdepth, withdirs=True, detail=True))
            if path not in infos:
                infos[path] = await self._info(path)
        if not infos:
            raise FileNotFoundError(path)
        return sorted(infos)

    # -- writing -----------------------------------------------------------------------

    async def _pipe_file(
        self, path: str, value: Any, mode: str = "overwrite", **kwargs: Any
    ) -> None:
        create = mode == "create"
        summary = await self.client.put_bytes_async(self._url(path), value, no_clobber=create)
        if create and summary.skipped:
            raise FileExistsError(f"{self._url(path)} exists; mode='create' does not replace it")

    async def _put_file(
        self, lpath: str, rpath: str, mode: str = "overwrite", **kwargs: Any
    ) -> None:
        if os.path.isdir(lpath):
            return
        create = mode == "create"
        summary = await self.client.upload_async(
            os.fspath(lpath), self._url(rpath), no_clobber=create
        )
        if create and summary.skipped:
            raise FileExistsError(f"{self._url(rpath)} exists; mode='create' does not replace it")

    async def _put(
        self,
        lpath: Any,
        rpath: Any,
        recursive: bool = False,
        callback: Any = DEFAULT_CALLBACK,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Local files to keys as fsspec maps them, all in one batch of the engine
        (`upload_many`: parallel parts, each with its CRC64NVME)."""
        if isinstance(lpath, list) and isinstance(rpath, list):
            rpaths, lpaths = rpath, lpath
        else:
            source_is_str = isinstance(lpath, str)
            if source_is_str:
                lpath = make_path_posix(lpath)
            local = LocalFileSystem()
            lpaths = local.expand_path(lpath, recursive=recursive, maxdepth=maxdepth)
            if source_is_str and (not recursive or maxdepth is not None):
                lpaths = [p for p in lpaths if not (trailing_sep(p) or local.isdir(p))]
                if not lpaths:
                    return
            source_is_file = len(lpaths) == 1
            dest_is_dir = isinstance(rpath, str) and (
                trailing_sep(rpath) or await self._isdir(rpath)
            )
            rpath = self._strip_protocol(rpath)
            exists = source_is_str and (
                (_has_magic(lpath) and source_is_file)
                or (not _has_magic(lpath) and dest_is_dir and not trailing_sep(lpath))
            )
            rpaths = other_paths(lpaths, rpath, exists=exists, flatten=not source_is_str)
        pairs = [
            (os.fspath(lp), self._url(rp))
            for lp, rp in zip(lpaths, rpaths)
            if not os.path.isdir(lp)
        ]
        callback.set_size(len(pairs))
        if not pairs:
            return
        mode = kwargs.get("mode", "overwrite")
        summary = await self.client.upload_many_async(pairs, no_clobber=mode == "create")
        callback.relative_update(summary.objects + summary.skipped)
        _raise_first(summary)
        if mode == "create" and summary.skipped:
            raise FileExistsError(f"{summary.skipped} of the keys exist; mode='create' keeps them")

    async def _cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        """A copy inside the store: CopyObject, or UploadPartCopy parts above the copy
        cutoff; no byte passes through here."""
        if (await self._info(path1))["type"] == "directory":
            return  # folders are prefixes: there is nothing to copy for one
        await self.client.copy_async(self._url(path1), self._url(path2))

    async def _rm_file(self, path: str, **kwargs: Any) -> None:
        await self.client.delete_async(self._url(path))

    async def _rm(
        self, path: Any, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any
    ) -> None:
        """Every key the paths name (with `recursive`, every key under them), 1,000 a
        request."""
        infos: dict[str, dict[str, Any]] = {}
        for one in [path] if isinstance(path, str) else list(path):
            await self._expand_infos(self._strip_protocol(one), recursive, maxdepth, infos)
        files = [self._url(name) for name, info in infos.items() if info["type"] == "file"]
        summary = await self.client.delete_many_async(files)
        _raise_first(summary)
        # Folders' marker objects ("dir/") once what is under them is gone, deepest first:
        # a store on a file system (versitygw) refuses to delete a folder that holds keys.
        markers = sorted(
            (name for name, info in infos.items() if info.get("marker")),
            key=lambda name: -name.count("/"),
        )
        for marker in markers:
            _raise_first(await self.client.delete_many_async([self._url(marker) + "/"]))

    # -- files -------------------------------------------------------------------------

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: dict[str, Any] | None = None,
        cache_type: str | None = None,
        **kwargs: Any,
    ) -> ParabyteFile:
        if mode not in ("rb", "wb", "xb"):
            raise NotImplementedError(f"mode {mode!r}: parabyte files open 'rb', 'wb' or 'xb'")
        if not autocommit:
            raise NotImplementedError("autocommit=False: a file is stored when it is closed")
        return ParabyteFile(
            self,
            path,
            mode,
            block_size=block_size or self.default_block_size,
            cache_type=cache_type or self.default_cache_type,
            cache_options=cache_options,
            **kwargs,
        )


class ParabyteFile(AbstractBufferedFile):
    """A file of a `ParabyteFileSystem`.

    Read ("rb"): random access through fsspec's cache, each fetch split into parallel
    ranged GETs of the part size, every one pinned (`If-Match`) to the ETag seen at open:
    an object replaced under the open file fails the read with `ObjectChangedError`.

    Write ("wb", "xb"): streamed; from the first full block (`block_size`) a multipart
    upload runs, its parts (each with its CRC64NVME) going up while the writer goes on, so
    memory stays bounded; a file that ends within a part is one PUT. Only `close()` stores
    the object: a file closed by an exception inside its `with` block, or never closed,
    aborts the upload and stores nothing. "xb" refuses a key
    that exists, at open and again at close (`If-None-Match`).
    """

    fs: ParabyteFileSystem

    def __init__(
        self,
        fs: ParabyteFileSystem,
        path: str,
        mode: str = "rb",
        block_size: int = 8 << 20,
        cache_type: str = "parabyte",
        cache_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        path = fs._strip_protocol(path)
        self.etag: str | None = None
        size = None
        if mode == "rb":
            info = fs.info(path)
            if info["type"] != "file":
                raise IsADirectoryError(f"s3://{path} is a folder, not an object")
            self.etag = info.get("ETag")
            size = info["size"]
            kwargs["size"] = size
        elif mode == "xb" and fs.exists(path):
            raise FileExistsError(f"s3://{path} exists; mode 'xb' does not replace it")
        super().__init__(
            fs,
            path,
            mode=mode,
            block_size=block_size,
            autocommit=True,
            cache_type=cache_type,
            cache_options=cache_options,
            **kwargs,
        )
        self._part_size = max(1 << 20, block_size // 4)

    def _fetch_range(self, start: int, end: int) -> bytes:
        end = min(end, self.size)
        if start >= end:
            return b""
        url = f"s3://{self.path}"
        # Enough ranges to keep the engine's ranges in flight busy, none smaller than a part.
        step = max(self._part_size, -(-(end - start) // 16))
        ranges = [(offset, min(offset + step, end)) for offset in range(start, end, step)]
        if self.etag is None:
            pieces = self.fs.client.get_bytes(url, ranges=ranges)
        else:
            pieces = _native.get_ranges_of_version(self.fs.client, url, self.etag, ranges)
        if len(pieces) == 1:
            return bytes(pieces[0])
        return b"".join(memoryview(piece) for piece in pieces)

    # Writing: a streamed upload runs from the first full block; each block the buffer
    # fills goes to it (parts go up while the writer goes on), and only close stores.
    _upload: Any = None

    def _initiate_upload(self) -> None:
        self._upload = _native.start_upload(
            self.fs.client, f"s3://{self.path}", no_clobber=self.mode == "xb"
        )

    def _upload_chunk(self, final: bool = False) -> bool:
        data = self.buffer.getvalue()
        if data:
            self._upload.write(data)
        if not final:
            return True
        summary = self._upload.close()
        if self.mode == "xb" and summary.skipped:
            raise FileExistsError(f"s3://{self.path} exists; mode 'xb' does not replace it")
        return True

    def discard(self) -> None:
        """Drop what was written: the upload is aborted and nothing is stored."""
        if self.writable():
            self.buffer = io.BytesIO()
            if self._upload is not None:
                self._upload.abort()
        self.closed = True

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is not None and self.writable():
            self.discard()  # the writer failed: store nothing
        else:
            self.close()

    def __del__(self) -> None:
        # A writer never closed stores nothing (fsspec's default would store it here).
        if not self.closed and self.writable():
            self.discard()
        elif not self.closed:
            self.close()


def _absolute(start: int | None, end: int | None, size: int) -> tuple[int, int]:
    start = 0 if start is None else (max(size + start, 0) if start < 0 else start)
    end = size if end is None else (max(size + end, 0) if end < 0 else end)
    return min(start, size), min(end, size)


def _has_magic(path: str) -> bool:
    return any(char in path for char in "*?[")


def _raise_first(summary: Any) -> None:
    """A batch's first failure raised as its own exception (`NotFoundError` is a
    `FileNotFoundError`, `PermissionDeniedError` a `PermissionError`)."""
    if summary.failures:
        raise summary.failures[0].exception
