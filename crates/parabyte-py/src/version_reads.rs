//! Ranged reads pinned to one version of an object, for `parabyte.fsspec`'s open files: a
//! file opened for reading keeps the ETag it saw, and every later read of it sends
//! `If-Match` with that ETag, so an object replaced under an open file fails the read
//! (`ObjectChangedError`) instead of handing back bytes of two versions.

use std::ops::Range;

use pyo3::prelude::*;

use crate::awaitable::awaitable;
use crate::buffer::Buffer;
use crate::byte_range::ByteRangeArg;
use crate::client::Client;
use crate::errors::to_py;
use crate::run::wait;

/// The future both calls wait on: one buffer per range, in the order asked.
fn pinned_ranges(
    py: Python<'_>,
    client: &Client,
    source: &str,
    etag: String,
    ranges: Vec<ByteRangeArg>,
) -> PyResult<impl std::future::Future<Output = PyResult<Vec<Buffer>>> + Send + use<>> {
    let url = parabyte::S3Url::parse(source).map_err(to_py)?;
    let ranges = ranges
        .into_iter()
        .map(ByteRangeArg::into_range)
        .collect::<PyResult<Vec<Range<u64>>>>()?;
    let inner = client.inner(py)?;
    Ok(async move {
        let slices = inner
            .get_ranges_of_version(parabyte::ObjectUrl::S3(url), &ranges, &etag)
            .await
            .map_err(to_py)?;
        Ok(slices.into_iter().map(Buffer::from).collect())
    })
}

/// Byte ranges `(start, end)` of `s3://bucket/key`, each a buffer, all of the version whose
/// ETag is `etag`; another version there raises `ObjectChangedError`.
#[pyfunction]
pub fn get_ranges_of_version(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    source: &str,
    etag: String,
    ranges: Vec<ByteRangeArg>,
) -> PyResult<Vec<Buffer>> {
    let fetch = pinned_ranges(py, &client, source, etag, ranges)?;
    wait(py, fetch, |_| Ok(()))
}

/// `get_ranges_of_version` as an awaitable.
#[pyfunction]
pub fn get_ranges_of_version_async<'py>(
    py: Python<'py>,
    client: PyRef<'_, Client>,
    source: &str,
    etag: String,
    ranges: Vec<ByteRangeArg>,
) -> PyResult<Bound<'py, PyAny>> {
    let fetch = pinned_ranges(py, &client, source, etag, ranges)?;
    awaitable(py, fetch)
}
