"""What an upload left in the bench bucket, read back and cleared whichever server keeps it:
versitygw's posix root holds each object as a file; MinIO keeps its own format on disk, so its
objects are listed, fetched and deleted through its S3 API, outside the timing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

from .setup import BUCKET, Store, _upload_client


class StoredObjects:
    def __init__(self, store: Store, scratch: Path):
        self.store = store
        self.scratch = scratch
        self.client = _upload_client(store.endpoint("direct")) if store.server == "minio" else None

    def files(self, prefix: str) -> Path:
        """A directory in which `prefix` holds the objects stored under it, as files."""
        if self.client is None:
            return self.store.root / BUCKET
        shutil.rmtree(self.scratch, ignore_errors=True)
        for key in self._keys(prefix):
            path = self.scratch / key
            path.parent.mkdir(parents=True, exist_ok=True)
            self.client.download_file(BUCKET, key, str(path))
        return self.scratch

    def remove(self, prefix: str) -> None:
        """Removes every object under `prefix`, and every multipart upload left open."""
        if self.client is None:
            shutil.rmtree(self.store.root / BUCKET / prefix, ignore_errors=True)
            shutil.rmtree(self.store.root / BUCKET / ".sgwtmp/multipart", ignore_errors=True)
            return
        shutil.rmtree(self.scratch, ignore_errors=True)
        keys = list(self._keys(prefix))
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            self.client.delete_objects(Bucket=BUCKET, Delete={"Objects": batch, "Quiet": True})
        for upload in self.client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []):
            self.client.abort_multipart_upload(
                Bucket=BUCKET, Key=upload["Key"], UploadId=upload["UploadId"]
            )

    def _keys(self, prefix: str) -> Iterator[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        for page in pages:
            for entry in page.get("Contents", []):
                yield entry["Key"]
