"""fsspec's own tests for filesystems (`fsspec.tests.abstract`: copy, get, put, open, pipe)
run against `parabyte.fsspec.ParabyteFileSystem` on versitygw and on MinIO, with the fixtures
s3fs gives them: a bucket of its own as the root of each scenario, folders that exist only
while a key is under them (`supports_empty_directories` is False, as in s3fs)."""

from __future__ import annotations

import pytest
from fsspec.tests import abstract
from fsspec.tests.abstract import AbstractFixtures
from fsspec_stores import fsspec_options, started_store

from parabyte.fsspec import ParabyteFileSystem


class ParabyteFixtures(AbstractFixtures):
    @pytest.fixture(scope="class", params=["versitygw", "minio"])
    @classmethod
    def fs(cls, request: pytest.FixtureRequest) -> ParabyteFileSystem:
        store = started_store(request.param, request)
        fs = ParabyteFileSystem(**fsspec_options(store))
        fs.test_root = store.bucket
        return fs

    @pytest.fixture
    def fs_path(self, fs: ParabyteFileSystem) -> str:
        return fs.test_root

    @pytest.fixture
    def supports_empty_directories(self) -> bool:
        return False


class TestParabyteCopy(abstract.AbstractCopyTests, ParabyteFixtures):
    pass


class TestParabyteGet(abstract.AbstractGetTests, ParabyteFixtures):
    pass


class TestParabytePut(abstract.AbstractPutTests, ParabyteFixtures):
    pass


class TestParabytePipe(abstract.AbstractPipeTests, ParabyteFixtures):
    pass


class TestParabyteOpen(abstract.AbstractOpenTests, ParabyteFixtures):
    pass
