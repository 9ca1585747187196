//! `parabyte.Client`: one connection pool and one set of options, reused across calls and
//! threads. Every method is a few lines: parse the arguments, hand the core a future.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use futures::FutureExt;
use parabyte::{CopyRequest, Destination, Location, ObjectUrl, S3Url, Source};
use pyo3::prelude::*;

use crate::awaitable::awaitable;
use crate::buffer::Buffer;
use crate::errors::{to_py, InvalidInputError};
use crate::listing::{ListIterator, ObjectInfo};
use crate::options::{Size, StoreOptions, TransferOptions};
use crate::run::{transfer_async, transfer_sync, wait, Transfer};
use crate::runtime::runtime;
use crate::summary::Summary;

/// One object for `download_many`: where it is, optionally where it goes, and its size and
/// ETag when known (from a manifest or a listing), which spares the probe request.
#[pyclass(frozen, get_all, from_py_object, module = "parabyte")]
#[derive(Debug, Clone)]
pub struct Item {
    pub source: String,
    /// Absolute, or relative to `download_many`'s destination; `None`: the key's last segment.
    pub destination: Option<PathBuf>,
    pub size: Option<u64>,
    pub etag: Option<String>,
}

#[pymethods]
impl Item {
    #[new]
    #[pyo3(signature = (source, destination = None, *, size = None, etag = None))]
    fn new(
        source: String,
        destination: Option<PathBuf>,
        size: Option<u64>,
        etag: Option<String>,
    ) -> Self {
        Item {
            source,
            destination,
            size,
            etag,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Item(source={:?}, destination={:?}, size={:?}, etag={:?})",
            self.source, self.destination, self.size, self.etag
        )
    }
}

/// What `download_many` accepts for one object.
#[derive(Debug, FromPyObject)]
enum ItemLike {
    Item(Item),
    /// From `Client.list`: its size and ETag come along.
    Listed(ObjectInfo),
    Url(String),
}

impl ItemLike {
    fn into_core(self) -> PyResult<parabyte::Item> {
        let (source, destination, size, etag) = match self {
            ItemLike::Item(item) => (item.source, item.destination, item.size, item.etag),
            ItemLike::Listed(info) => (info.url(), None, Some(info.size), info.etag),
            ItemLike::Url(url) => (url, None, None, None),
        };
        Ok(parabyte::Item {
            source: object_url(&source)?,
            destination,
            size,
            etag,
        })
    }
}

/// A connection to a store with transfer settings; create one and reuse it.
#[pyclass(frozen, module = "parabyte")]
#[derive(Debug)]
pub struct Client {
    inner: Arc<parabyte::Client>,
}

#[pymethods]
impl Client {
    // One keyword per CLI flag is the API users asked for; they all land in two structs.
    #[allow(clippy::too_many_arguments)]
    #[new]
    #[pyo3(signature = (
        *,
        endpoint_url = None,
        region = None,
        profile = None,
        access_key_id = None,
        secret_access_key = None,
        session_token = None,
        no_sign_request = false,
        path_style = false,
        ca_bundle = None,
        timeout = None,
        workers = None,
        ranges_per_object = None,
        threads = None,
        part_size = None,
        max_requests = None,
        retries = None,
        list_parallelism = None,
        list_page_size = None,
        verify = true,
        force = false,
    ))]
    fn new(
        py: Python<'_>,
        endpoint_url: Option<String>,
        region: Option<String>,
        profile: Option<String>,
        access_key_id: Option<String>,
        secret_access_key: Option<String>,
        session_token: Option<String>,
        no_sign_request: bool,
        path_style: bool,
        ca_bundle: Option<PathBuf>,
        timeout: Option<f64>,
        workers: Option<usize>,
        ranges_per_object: Option<usize>,
        threads: Option<usize>,
        part_size: Option<Size>,
        max_requests: Option<usize>,
        retries: Option<u32>,
        list_parallelism: Option<usize>,
        list_page_size: Option<usize>,
        verify: bool,
        force: bool,
    ) -> PyResult<Self> {
        let store = StoreOptions {
            endpoint_url,
            region,
            profile,
            access_key_id,
            secret_access_key,
            session_token,
            no_sign_request,
            path_style,
            ca_bundle,
            timeout,
        }
        .into_config()?;
        // `threads` is the old name of `ranges_per_object`, still accepted.
        let ranges_per_object = match (ranges_per_object, threads) {
            (Some(_), Some(_)) => {
                return Err(InvalidInputError::new_err(
                    "give ranges_per_object or its old name threads, not both",
                ))
            }
            (given, old_name) => given.or(old_name),
        };
        let transfer = TransferOptions {
            workers,
            ranges_per_object,
            part_size,
            max_requests,
            retries,
            list_parallelism,
            list_page_size,
            verify,
            force,
        }
        .into_config()?;
        let connect = async move {
            parabyte::Client::connect(&store, transfer)
                .await
                .map_err(to_py)
        };
        let inner = wait(py, connect, |_| Ok(()))?;
        Ok(Client {
            inner: Arc::new(inner),
        })
    }

    /// Download an object or a URL to a file, or everything under a prefix into a directory.
    #[pyo3(signature = (source, destination, *, recursive = false, progress = None))]
    fn download(
        &self,
        py: Python<'_>,
        source: &str,
        destination: Option<PathBuf>,
        recursive: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Summary> {
        let request = CopyRequest::parse(source, destination_of(destination), recursive);
        transfer_sync(py, self.copy(request.map_err(to_py)?), progress)
    }

    /// `download` as an awaitable.
    #[pyo3(signature = (source, destination, *, recursive = false, progress = None))]
    fn download_async<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        destination: Option<PathBuf>,
        recursive: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = CopyRequest::parse(source, destination_of(destination), recursive);
        transfer_async(py, self.copy(request.map_err(to_py)?), progress)
    }

    /// Download many objects into `destination`; items with a known size cost no probe.
    #[pyo3(signature = (items, destination, *, progress = None))]
    fn download_many(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        destination: Option<PathBuf>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Summary> {
        let transfer = self.copy_items(items, destination)?;
        transfer_sync(py, transfer, progress)
    }

    /// `download_many` as an awaitable.
    #[pyo3(signature = (items, destination, *, progress = None))]
    fn download_many_async<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'_, PyAny>,
        destination: Option<PathBuf>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let transfer = self.copy_items(items, destination)?;
        transfer_async(py, transfer, progress)
    }

    /// One object's (or URL's) bytes, fetched as parallel ranges into one buffer, handed
    /// over uncopied.
    fn get_bytes(&self, py: Python<'_>, source: &str) -> PyResult<Buffer> {
        let fetch = self.fetch(source)?;
        wait(py, fetch, |_| Ok(()))
    }

    /// `get_bytes` as an awaitable.
    fn get_bytes_async<'py>(&self, py: Python<'py>, source: &str) -> PyResult<Bound<'py, PyAny>> {
        let fetch = self.fetch(source)?;
        awaitable(py, fetch)
    }

    /// Entries under a prefix as they are listed: every key when `recursive`, else one
    /// level with "folders". Iterate with `for` or `async for`.
    #[pyo3(signature = (prefix, *, recursive = true))]
    fn list(&self, prefix: &str, recursive: bool) -> PyResult<ListIterator> {
        let url = S3Url::parse(prefix).map_err(to_py)?;
        // The listing spawns its first worker as soon as it is created.
        let _runtime = runtime().enter();
        Ok(ListIterator::new(
            url.bucket.clone(),
            self.inner.list(&url, recursive),
        ))
    }

    fn __repr__(&self) -> String {
        "parabyte.Client()".to_owned()
    }
}

impl Client {
    /// The core's one entry point for a request; a request naming one object raises that
    /// object's failure, as its own typed exception.
    fn copy(&self, request: CopyRequest) -> Transfer<Summary> {
        let client = self.inner.clone();
        Box::new(move |reporter| {
            async move {
                let summary = client.copy(&request, reporter).await.map_err(to_py)?;
                match summary.failures.first() {
                    Some(failure) if request.names_one_object() => Err(to_py(&failure.error)),
                    _ => Ok(Summary::from(summary)),
                }
            }
            .boxed()
        })
    }

    /// `download_many`'s request; any iterable of items will do.
    fn copy_items(
        &self,
        items: &Bound<'_, PyAny>,
        destination: Option<PathBuf>,
    ) -> PyResult<Transfer<Summary>> {
        let items = items
            .try_iter()?
            .map(|item| item?.extract::<ItemLike>()?.into_core())
            .collect::<PyResult<Vec<_>>>()?;
        Ok(self.copy(CopyRequest {
            source: Source::Items(items),
            destination: destination_of(destination),
            recursive: false,
        }))
    }

    fn fetch(&self, source: &str) -> PyResult<impl Future<Output = PyResult<Buffer>> + use<>> {
        let source = object_url(source)?;
        let client = self.inner.clone();
        Ok(async move {
            let bytes = client.get_bytes(source).await.map_err(to_py)?;
            Ok(Buffer::from(bytes))
        })
    }
}

/// `destination=None` fetches and keeps nothing.
fn destination_of(destination: Option<PathBuf>) -> Destination {
    destination.map_or(Destination::Discard, Destination::Path)
}

/// Parse a source with the core's `Location` rules; a local path cannot be a source.
fn object_url(text: &str) -> PyResult<ObjectUrl> {
    match Location::parse(text).map_err(to_py)? {
        Location::S3(url) => Ok(ObjectUrl::S3(url)),
        Location::Http(url) => Ok(ObjectUrl::Http(url)),
        Location::Local(_) => Err(InvalidInputError::new_err(format!(
            "'{text}' is not a URL; write s3://bucket/key, s3://bucket/prefix/ or https://host/path"
        ))),
    }
}
