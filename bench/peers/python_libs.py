"""The Python libraries side by side, each driven the way its users drive it, for the bench's
Python workloads: many objects whose sizes and ETags are known from a manifest (the render farm
case), and one large object. With --concurrency N each library gets N requests in flight.

    python_libs.py LIBRARY many   --endpoint-url URL --bucket B --manifest FILE --dest DIR
    python_libs.py LIBRARY memory --endpoint-url URL --bucket B --manifest FILE --dest DIR
    python_libs.py LIBRARY object --endpoint-url URL --bucket B --key K --size N --dest DIR

`memory` fetches every object of the manifest into memory (`get_bytes_async` for parabyte,
`get_async` for obstore, N at a time: 64 and 10 by default) and prints the bytes it got.

LIBRARY:
  boto3        s3transfer's TransferManager with its defaults: a HEAD before every download
  boto3-sized  the same, told each size and ETag by a subscriber (`provide_transfer_size`,
               `provide_object_etag`: s3transfer skips its HEAD only with both)
  obstore      obstore's get: asyncio with N (default 10) at a time for many objects, the
               object streamed to the file for one (obstore has no ranged download to a file)
  parabyte     `parabyte.Client.download_many` with sizes and ETags, `download` for one

The manifest is JSON: {"prefix": "w1/", "objects": [[name, size, etag], ...]}; each object
lands at DEST/name. Credentials and region come from the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

DEFAULT_OBSTORE_CONCURRENCY = 10
# parabyte's own default of objects at once (`workers`).
DEFAULT_PARABYTE_CONCURRENCY = 64


Job = tuple[str, Path, int, str | None]  # key, file, size, ETag


def boto3_download(args: argparse.Namespace, jobs: list[Job], sized: bool):
    import boto3
    from boto3.s3.transfer import TransferConfig, create_transfer_manager
    from botocore.config import Config
    from s3transfer.subscribers import BaseSubscriber

    class KnownSize(BaseSubscriber):
        def __init__(self, size: int, etag: str | None) -> None:
            self.size = size
            self.etag = etag

        def on_queued(self, future, **kwargs) -> None:
            future.meta.provide_transfer_size(self.size)
            if self.etag:
                future.meta.provide_object_etag(self.etag)

    n = args.concurrency
    client = boto3.client(
        "s3",
        endpoint_url=args.endpoint_url,
        config=Config(max_pool_connections=n) if n else None,
    )
    config = TransferConfig(max_concurrency=n) if n else TransferConfig()
    with create_transfer_manager(client, config) as manager:
        futures = [
            manager.download(
                args.bucket, key, str(path), subscribers=[KnownSize(size, etag)] if sized else None
            )
            for key, path, size, etag in jobs
        ]
        for future in futures:
            future.result()


def obstore_store(args: argparse.Namespace):
    from obstore.store import S3Store

    return S3Store(
        args.bucket,
        endpoint=args.endpoint_url,
        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        region=os.environ.get("AWS_REGION", "us-east-1"),
        client_options={"allow_http": True},
    )


def obstore_many(args: argparse.Namespace, jobs: list[Job]) -> None:
    import obstore

    store = obstore_store(args)
    limit = asyncio.Semaphore(args.concurrency or DEFAULT_OBSTORE_CONCURRENCY)

    async def fetch(key: str, path: Path) -> None:
        async with limit:
            result = await obstore.get_async(store, key)
            path.write_bytes(await result.bytes_async())

    async def main() -> None:
        await asyncio.gather(*(fetch(key, path) for key, path, _size, _etag in jobs))

    asyncio.run(main())


def obstore_object(args: argparse.Namespace, key: str, path: Path) -> None:
    import obstore

    result = obstore.get(obstore_store(args), key)
    with open(path, "wb") as out:
        for chunk in result.stream(min_chunk_size=8 << 20):
            out.write(chunk)


def memory_total(args: argparse.Namespace, keys: list[str]) -> int:
    """Every object into memory, `--concurrency` at a time; the bytes received."""
    if args.library == "obstore":
        import obstore

        store = obstore_store(args)
        limit = asyncio.Semaphore(args.concurrency or DEFAULT_OBSTORE_CONCURRENCY)

        async def fetch(key: str) -> int:
            async with limit:
                result = await obstore.get_async(store, key)
                return len(await result.bytes_async())
    else:
        client = parabyte_client(args)
        limit = asyncio.Semaphore(args.concurrency or DEFAULT_PARABYTE_CONCURRENCY)

        async def fetch(key: str) -> int:
            async with limit:
                return len(await client.get_bytes_async(f"s3://{args.bucket}/{key}"))

    async def main() -> int:
        return sum(await asyncio.gather(*(fetch(key) for key in keys)))

    return asyncio.run(main())


def parabyte_client(args: argparse.Namespace):
    import parabyte

    n = args.concurrency
    tuning = {"workers": n, "threads": n, "max_requests": n} if n else {}
    return parabyte.Client(endpoint_url=args.endpoint_url, **tuning)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("library", choices=["boto3", "boto3-sized", "obstore", "parabyte"])
    parser.add_argument("mode", choices=["many", "memory", "object"])
    parser.add_argument("--endpoint-url", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--dest", required=True, type=Path)
    parser.add_argument("--manifest", type=Path)
    parser.add_argument("--key")
    parser.add_argument("--size", type=int)
    parser.add_argument("--etag")
    parser.add_argument("--concurrency", type=int)
    args = parser.parse_args()

    if args.mode == "memory":
        manifest = json.loads(args.manifest.read_text())
        keys = [manifest["prefix"] + name for name, _size, _etag in manifest["objects"]]
        print(memory_total(args, keys))
        return 0
    if args.mode == "many":
        manifest = json.loads(args.manifest.read_text())
        objects = [(manifest["prefix"] + name, name, size, etag)
                   for name, size, etag in manifest["objects"]]
        for name in {os.path.dirname(name) for _key, name, _size, _etag in objects}:
            (args.dest / name).mkdir(parents=True, exist_ok=True)
        jobs = [(key, args.dest / name, size, etag) for key, name, size, etag in objects]
    else:
        jobs = [(args.key, args.dest / os.path.basename(args.key), args.size, args.etag)]

    if args.library in ("boto3", "boto3-sized"):
        boto3_download(args, jobs, sized=args.library == "boto3-sized")
    elif args.library == "obstore":
        if args.mode == "many":
            obstore_many(args, jobs)
        else:
            obstore_object(args, *jobs[0][:2])
    else:
        import parabyte

        client = parabyte_client(args)
        if args.mode == "many":
            items = [parabyte.Item(f"s3://{args.bucket}/{key}", name, size=size, etag=etag)
                     for key, name, size, etag in objects]
            client.download_many(items, args.dest).raise_for_failures()
        else:
            client.download(f"s3://{args.bucket}/{args.key}", jobs[0][1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
