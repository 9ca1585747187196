//! `parabyte.Client`: one connection pool and one set of options, reused across calls and
//! threads. Every method is a few lines: parse the arguments, hand the core a future.

use std::future::Future;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use parabyte::{
    CopyRequest, Destination, KeyBounds, Location, ObjectUrl, RemoveRequest, Reporter, S3Url,
    Source, SourceStore, StoreConfig, TransferConfig,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::awaitable::awaitable;
use crate::buffer::Buffer;
use crate::byte_range::ByteRangeArg;
use crate::download_keywords::{remove_request, DownloadKeywords};
use crate::errors::{to_py, InvalidInputError};
use crate::gathered::{Gathered, OnError};
use crate::lent::lend;
use crate::listing::{ListIterator, ObjectInfo};
use crate::options::{Seconds, Size, StoreOptions, TransferOptions};
use crate::pyvalue::{reduce, repr};
use crate::run::{calling, transfer_async, transfer_sync, wait, Transfer};
use crate::runtime::runtime;
use crate::summary::Summary;
use crate::sync_keywords::SyncKeywords;
use crate::upload_keywords::{store_url, UploadKeywords};

/// One object for `download_many`: where it is, optionally where it goes, and its size and
/// ETag when known (from a manifest or a listing), which spares the probe request.
#[pyclass(frozen, eq, hash, get_all, from_py_object, module = "parabyte")]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Item {
    pub source: String,
    /// Absolute, or relative to `download_many`'s destination; `None`: the key, its folders
    /// kept (for a web URL: the last segment of its path).
    pub destination: Option<PathBuf>,
    pub size: Option<u64>,
    pub etag: Option<String>,
}

impl Item {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let fields = PyDict::new(py);
        fields.set_item("source", &self.source)?;
        fields.set_item("destination", &self.destination)?;
        fields.set_item("size", self.size)?;
        fields.set_item("etag", &self.etag)?;
        Ok(fields)
    }
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

    /// The fields as a dict (`destination` a `pathlib.Path` or `None`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.fields(py)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        reduce(slf.as_any(), slf.get().fields(slf.py())?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr("Item", &self.fields(py)?)
    }
}

/// A manifest's text as items, and its bad lines as `(line, message)`: the same format and
/// rules as `parabyte cp --manifest` (see the core's `manifest` module). An item without a
/// DEST_PATH gets the last segment of its key or URL, as the CLI gives it.
#[pyfunction]
pub fn parse_manifest(text: &str) -> (Vec<Item>, Vec<(usize, String)>) {
    let manifest = parabyte::Manifest::parse(text);
    let items = manifest
        .items
        .into_iter()
        .map(|item| Item {
            destination: Some(
                item.destination
                    .unwrap_or_else(|| item.source.file_name().unwrap_or_default().into()),
            ),
            // The URL itself, not its redacted print: a presigned URL must still work.
            source: match &item.source {
                ObjectUrl::S3(url) => url.to_string(),
                ObjectUrl::Http(url) => url.as_url().to_string(),
            },
            size: item.size,
            etag: item.etag,
        })
        .collect();
    let errors = manifest
        .errors
        .into_iter()
        .map(|error| (error.line, error.message))
        .collect();
    (items, errors)
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
        let source = object_url(&source)?;
        Ok(parabyte::Item {
            destination: destination.or_else(|| key_path(&source)),
            source,
            size,
            etag,
        })
    }
}

/// A connection to a store with transfer settings; create one and reuse it. Subclassed by
/// `parabyte.Client` in Python, whose `*_async` methods are coroutines.
#[pyclass(frozen, subclass, module = "parabyte._native")]
#[derive(Debug)]
pub struct Client {
    store: StoreConfig,
    /// Where S3 sources are read, when not `store` (`source_endpoint_url=` and friends).
    source: Option<StoreConfig>,
    transfer: TransferConfig,
    /// The core client and the process it was connected in: after `os.fork()` its pools
    /// belong to the parent's runtime, so a child connects again.
    connected: Mutex<(u32, Arc<parabyte::Client>)>,
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
        bind = None,
        request_payer = None,
        source_endpoint_url = None,
        source_region = None,
        source_profile = None,
        source_no_sign_request = false,
        workers = None,
        ranges_per_object = None,
        threads = None,
        part_size = None,
        max_requests = None,
        copy_cutoff = None,
        retries = None,
        list_parallelism = None,
        list_page_size = None,
        verify = true,
        force = false,
        ignore_glacier_warnings = false,
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
        timeout: Option<Seconds>,
        bind: Option<Vec<String>>,
        request_payer: Option<String>,
        source_endpoint_url: Option<String>,
        source_region: Option<String>,
        source_profile: Option<String>,
        source_no_sign_request: bool,
        workers: Option<usize>,
        ranges_per_object: Option<usize>,
        threads: Option<usize>,
        part_size: Option<Size>,
        max_requests: Option<usize>,
        copy_cutoff: Option<Size>,
        retries: Option<u32>,
        list_parallelism: Option<usize>,
        list_page_size: Option<usize>,
        verify: bool,
        force: bool,
        ignore_glacier_warnings: bool,
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
            bind: bind.unwrap_or_default(),
            request_payer,
        }
        .into_config()?;
        let source = SourceStore {
            endpoint_url: source_endpoint_url,
            region: source_region,
            profile: source_profile,
            no_sign_request: source_no_sign_request,
        }
        .config(&store);
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
            copy_cutoff,
            retries,
            list_parallelism,
            list_page_size,
            verify,
            force,
            ignore_glacier_warnings,
        }
        .into_config()?;
        let inner = connect(py, &store, source.as_ref(), &transfer)?;
        Ok(Client {
            store,
            source,
            transfer,
            connected: Mutex::new((std::process::id(), inner)),
        })
    }

    /// Download an object or a URL to a file, or everything under a prefix (or matching a
    /// wildcard pattern) into a directory. The keywords (`DOWNLOAD_KEYWORDS`) are parsed
    /// in one place for this and `download_async`; `after`/`until_after` copy one range of
    /// a prefix's key space (`split_key_space`).
    #[pyo3(signature = (source, destination, **keywords))]
    fn download(
        &self,
        py: Python<'_>,
        source: &str,
        destination: Option<PathBuf>,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Summary> {
        let mut keywords = DownloadKeywords::parse("download", keywords)?;
        let request = keywords.request(source, destination_of(destination))?;
        transfer_sync(py, self.run(py, request)?, keywords.progress.take())
    }

    /// `download` as an awaitable, with the same keywords.
    #[pyo3(signature = (source, destination, **keywords))]
    fn download_async<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        destination: Option<PathBuf>,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut keywords = DownloadKeywords::parse("download_async", keywords)?;
        let request = keywords.request(source, destination_of(destination))?;
        transfer_async(py, self.run(py, request)?, keywords.progress.take())
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
        let transfer = self.copy_items(py, items, destination)?;
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
        let transfer = self.copy_items(py, items, destination)?;
        transfer_async(py, transfer, progress)
    }

    /// Upload a local file to `destination` (`s3://bucket/key`, or `s3://bucket/prefix/`
    /// to keep its name), or a directory's tree under `destination` as a prefix. The
    /// keywords (`UPLOAD_KEYWORDS`) are parsed in one place for this and `upload_async`.
    #[pyo3(signature = (source, destination, **keywords))]
    fn upload(
        &self,
        py: Python<'_>,
        source: PathBuf,
        destination: &str,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Summary> {
        let mut keywords = UploadKeywords::parse("upload", keywords)?;
        let request = keywords.request(&source, destination)?;
        transfer_sync(py, self.run(py, request)?, keywords.progress.take())
    }

    /// `upload` as an awaitable, with the same keywords.
    #[pyo3(signature = (source, destination, **keywords))]
    fn upload_async<'py>(
        &self,
        py: Python<'py>,
        source: PathBuf,
        destination: &str,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut keywords = UploadKeywords::parse("upload_async", keywords)?;
        let request = keywords.request(&source, destination)?;
        transfer_async(py, self.run(py, request)?, keywords.progress.take())
    }

    /// Upload many files, each `(path, "s3://bucket/key")` (or a prefix ending in "/" to
    /// keep the file's name), many at once; each failure is in the summary.
    #[pyo3(signature = (items, **keywords))]
    fn upload_many(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Summary> {
        let mut keywords = UploadKeywords::parse("upload_many", keywords)?;
        let transfer = self.uploads(py, items, &keywords)?;
        transfer_sync(py, transfer, keywords.progress.take())
    }

    /// `upload_many` as an awaitable.
    #[pyo3(signature = (items, **keywords))]
    fn upload_many_async<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'_, PyAny>,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut keywords = UploadKeywords::parse("upload_many_async", keywords)?;
        let transfer = self.uploads(py, items, &keywords)?;
        transfer_async(py, transfer, keywords.progress.take())
    }

    /// Copy `s3://bucket/key` (or a prefix, with `recursive` or a trailing "/", or a
    /// wildcard pattern) to `destination` inside the store: no byte passes through here.
    #[pyo3(signature = (source, destination, **keywords))]
    fn copy(
        &self,
        py: Python<'_>,
        source: &str,
        destination: &str,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Summary> {
        let mut keywords = UploadKeywords::parse("copy", keywords)?;
        let request = keywords.copy_request(source, destination)?;
        transfer_sync(py, self.run(py, request)?, keywords.progress.take())
    }

    /// `copy` as an awaitable.
    #[pyo3(signature = (source, destination, **keywords))]
    fn copy_async<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        destination: &str,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut keywords = UploadKeywords::parse("copy_async", keywords)?;
        let request = keywords.copy_request(source, destination)?;
        transfer_async(py, self.run(py, request)?, keywords.progress.take())
    }

    /// Delete the one key `s3://bucket/key` names (a trailing "/" is part of the key; a key
    /// that is not there, or that has keys under it, is raised), or with `recursive` (or a
    /// wildcard pattern) every key under it that `exclude`/`include` keep, 1,000 a request.
    /// `dry_run=True` deletes nothing; the summary counts what would go. The keywords
    /// (`REMOVE_KEYWORDS`) are parsed in one place for this and `remove_async`.
    #[pyo3(signature = (source, **keywords))]
    fn remove(
        &self,
        py: Python<'_>,
        source: &str,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Summary> {
        let request = remove_request("remove", source, keywords)?;
        transfer_sync(py, self.removal(py, request)?, None)
    }

    /// `remove` as an awaitable.
    #[pyo3(signature = (source, **keywords))]
    fn remove_async<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = remove_request("remove_async", source, keywords)?;
        transfer_async(py, self.removal(py, request)?, None)
    }

    /// Make `destination` hold what `source` holds: an S3 prefix and a local directory
    /// either way, or two S3 prefixes. Each object missing or changed there is sent
    /// (`compare`: "size_and_time" as aws s3 sync, "size_only", "exact_timestamps",
    /// "checksum" for CRC64NVME contents); with `delete=True` what the source lacks is
    /// removed, only once both sides were listed whole (`max_delete=N`: none when more
    /// would go). `dry_run=True` sends and deletes nothing. The upload keywords apply.
    #[pyo3(signature = (source, destination, **keywords))]
    fn sync(
        &self,
        py: Python<'_>,
        source: PathBuf,
        destination: PathBuf,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Summary> {
        let (transfer, progress) = self.syncing(py, "sync", &source, &destination, keywords)?;
        transfer_sync(py, transfer, progress)
    }

    /// `sync` as an awaitable.
    #[pyo3(signature = (source, destination, **keywords))]
    fn sync_async<'py>(
        &self,
        py: Python<'py>,
        source: PathBuf,
        destination: PathBuf,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (transfer, progress) =
            self.syncing(py, "sync_async", &source, &destination, keywords)?;
        transfer_async(py, transfer, progress)
    }

    /// Copy `source` to `destination` (an S3 key or prefix, or a local file or directory,
    /// either way), then delete each source whose copy was compared with it; one whose copy
    /// failed or could not be compared stays.
    #[pyo3(name = "move", signature = (source, destination, **keywords))]
    fn move_objects(
        &self,
        py: Python<'_>,
        source: PathBuf,
        destination: PathBuf,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Summary> {
        let mut keywords = UploadKeywords::parse("move", keywords)?;
        let request = keywords.tree_request(&source, &destination)?;
        transfer_sync(py, self.moving(py, request)?, keywords.progress.take())
    }

    /// `move` as an awaitable.
    #[pyo3(signature = (source, destination, **keywords))]
    fn move_async<'py>(
        &self,
        py: Python<'py>,
        source: PathBuf,
        destination: PathBuf,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut keywords = UploadKeywords::parse("move_async", keywords)?;
        let request = keywords.tree_request(&source, &destination)?;
        transfer_async(py, self.moving(py, request)?, keywords.progress.take())
    }

    /// Delete the one key `url`; its failure is raised.
    fn delete(&self, py: Python<'_>, url: &str) -> PyResult<Summary> {
        transfer_sync(py, self.deleting(py, vec![url.to_owned()], true)?, None)
    }

    /// `delete` as an awaitable.
    fn delete_async<'py>(&self, py: Python<'py>, url: &str) -> PyResult<Bound<'py, PyAny>> {
        transfer_async(py, self.deleting(py, vec![url.to_owned()], true)?, None)
    }

    /// Delete each of `urls` (s3://bucket/key, of any buckets), 1,000 of a bucket a
    /// request; each failure is in the summary, the others go on.
    fn delete_many(&self, py: Python<'_>, urls: Vec<String>) -> PyResult<Summary> {
        transfer_sync(py, self.deleting(py, urls, false)?, None)
    }

    /// `delete_many` as an awaitable.
    fn delete_many_async<'py>(
        &self,
        py: Python<'py>,
        urls: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        transfer_async(py, self.deleting(py, urls, false)?, None)
    }

    /// Make the bucket `url` names (`s3://bucket`), in the region requests are signed for;
    /// one that exists already is raised, saying whether it is yours.
    fn make_bucket(&self, py: Python<'_>, url: &str) -> PyResult<()> {
        transfer_sync(py, self.bucket_making(py, url)?, None)
    }

    /// `make_bucket` as an awaitable.
    fn make_bucket_async<'py>(&self, py: Python<'py>, url: &str) -> PyResult<Bound<'py, PyAny>> {
        transfer_async(py, self.bucket_making(py, url)?, None)
    }

    /// Remove the bucket `url` names (`s3://bucket`); one that holds objects is refused and
    /// kept. With `force`, every object is deleted first (the whole bucket is listed
    /// before any delete: a listing that fails deletes nothing), then the bucket; a key
    /// that cannot be deleted is raised and keeps the bucket. Returns the objects deleted.
    #[pyo3(signature = (url, *, force = false))]
    fn remove_bucket(&self, py: Python<'_>, url: &str, force: bool) -> PyResult<u64> {
        transfer_sync(py, self.bucket_removal(py, url, force)?, None)
    }

    /// `remove_bucket` as an awaitable.
    #[pyo3(signature = (url, *, force = false))]
    fn remove_bucket_async<'py>(
        &self,
        py: Python<'py>,
        url: &str,
        force: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        transfer_async(py, self.bucket_removal(py, url, force)?, None)
    }

    /// Store any bytes-like `data` (bytes, bytearray, memoryview, a NumPy array) as the
    /// object `destination`, without copying it; the upload keywords that do not choose
    /// files apply.
    #[pyo3(signature = (destination, data, **keywords))]
    fn put_bytes(
        &self,
        py: Python<'_>,
        destination: &str,
        data: &Bound<'_, PyAny>,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Summary> {
        let mut keywords = UploadKeywords::parse("put_bytes", keywords)?;
        let transfer = self.put(py, destination, lend(data)?, &keywords)?;
        transfer_sync(py, transfer, keywords.progress.take())
    }

    /// `put_bytes` as an awaitable.
    #[pyo3(signature = (destination, data, **keywords))]
    fn put_bytes_async<'py>(
        &self,
        py: Python<'py>,
        destination: &str,
        data: &Bound<'_, PyAny>,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut keywords = UploadKeywords::parse("put_bytes_async", keywords)?;
        let transfer = self.put(py, destination, lend(data)?, &keywords)?;
        transfer_async(py, transfer, keywords.progress.take())
    }

    /// One object's (or URL's) bytes, fetched as parallel ranges into one buffer, handed
    /// over uncopied; with `range=(start, end)` those bytes only, with `ranges=[...]` a list
    /// of buffers, one per range, all of the same version.
    #[pyo3(signature = (source, *, range = None, ranges = None))]
    fn get_bytes<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        range: Option<ByteRangeArg>,
        ranges: Option<Vec<ByteRangeArg>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fetch = self.fetch(py, source, range, ranges)?;
        wait(py, fetch, |_| Ok(()))?.into_bound_py_any(py)
    }

    /// `get_bytes` as an awaitable.
    #[pyo3(signature = (source, *, range = None, ranges = None))]
    fn get_bytes_async<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        range: Option<ByteRangeArg>,
        ranges: Option<Vec<ByteRangeArg>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fetch = self.fetch(py, source, range, ranges)?;
        awaitable(py, fetch)
    }

    /// Many objects' bytes, `workers` at a time, as a list of buffers in the order given:
    /// URLs, `Item`s or listed entries (a size and ETag spare the probe). With
    /// `on_error="raise"` the first failure in that order raises; with `"return"` its
    /// exception takes its place in the list and every other object is fetched.
    #[pyo3(signature = (sources, *, on_error = "raise"))]
    fn get_bytes_many(
        &self,
        py: Python<'_>,
        sources: &Bound<'_, PyAny>,
        on_error: &str,
    ) -> PyResult<Gathered> {
        let fetch = self.fetch_many(py, sources, on_error)?;
        wait(py, fetch, |_| Ok(()))
    }

    /// `get_bytes_many` as an awaitable.
    #[pyo3(signature = (sources, *, on_error = "raise"))]
    fn get_bytes_many_async<'py>(
        &self,
        py: Python<'py>,
        sources: &Bound<'_, PyAny>,
        on_error: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fetch = self.fetch_many(py, sources, on_error)?;
        awaitable(py, fetch)
    }

    /// Entries under a prefix as they are listed: every key when `recursive`, else one
    /// level with "folders". Iterate with `for` or `async for`. `after`/`until_after` list
    /// one range of the key space (boundaries from `split_key_space`; recursive only).
    #[pyo3(signature = (prefix, *, recursive = true, after = None, until_after = None))]
    fn list(
        &self,
        py: Python<'_>,
        prefix: &str,
        recursive: bool,
        after: Option<String>,
        until_after: Option<String>,
    ) -> PyResult<ListIterator> {
        let url = S3Url::parse(prefix).map_err(to_py)?;
        let inner = self.inner(py)?;
        // The listing spawns its first worker as soon as it is created.
        let _runtime = runtime().enter();
        let bucket = url.bucket.clone();
        if after.is_none() && until_after.is_none() {
            return Ok(ListIterator::new(bucket, inner.list(&url, recursive)));
        }
        if !recursive {
            return Err(InvalidInputError::new_err(
                "after= and until_after= list a range of every key; they need recursive=True",
            ));
        }
        let bounds = KeyBounds { after, until_after };
        Ok(ListIterator::new(bucket, inner.list_range(&url, bounds)))
    }

    /// Boundaries that cut the key space under `prefix` into up to `parts` ranges (pass
    /// neighbours as `after=`/`until_after=` to `list` or `download`), found with about one
    /// small request each, without listing the keys between. Empty when the prefix fits in
    /// one listing page. Ranges are even in key space, not in key count.
    fn split_key_space(&self, py: Python<'_>, prefix: &str, parts: usize) -> PyResult<Vec<String>> {
        let url = S3Url::parse(prefix).map_err(to_py)?;
        let inner = self.inner(py)?;
        let split = async move { inner.split_key_space(&url, parts).await.map_err(to_py) };
        wait(py, split, |_| Ok(()))
    }

    /// One piece of a large object, bytes `start..end`, fetched into a piece file of its
    /// own beside where `item` lands under `destination`, pinned to the item's ETag: for one
    /// object spread over hosts that share a file system (`parabyte.dask`). The item needs
    /// its size and ETag. `adopt_pieces` then makes the object of its pieces. `progress`
    /// as for `download` (its bytes; no object).
    #[pyo3(signature = (item, destination, start, end, *, progress = None))]
    fn download_piece(
        &self,
        py: Python<'_>,
        item: ItemLike,
        destination: PathBuf,
        start: u64,
        end: u64,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Summary> {
        let item = item.into_core()?;
        let piece = calling(self.inner(py)?, move |client, reporter| async move {
            client
                .download_piece(&item, &destination, start..end, reporter)
                .await
                .map(Summary::from)
                .map_err(to_py)
        });
        transfer_sync(py, piece, progress)
    }

    /// Move the pieces `download_piece` left for `item` (named by their first bytes) into
    /// its temporary file, as an interrupted download's parts, and remove them; returns the
    /// bytes they held. Downloading the item then fetches only what no piece brought,
    /// checks the whole object and gives it its name.
    fn adopt_pieces(
        &self,
        py: Python<'_>,
        item: ItemLike,
        destination: PathBuf,
        starts: Vec<u64>,
    ) -> PyResult<u64> {
        let item = item.into_core()?;
        let inner = self.inner(py)?;
        let adopt = async move {
            inner
                .adopt_pieces(&item, &destination, &starts)
                .await
                .map_err(to_py)
        };
        wait(py, adopt, |_| Ok(()))
    }

    fn __repr__(&self) -> String {
        "parabyte.Client()".to_owned()
    }
}

impl Client {
    /// The core client of this process: after a fork, the child connects its own.
    pub(crate) fn inner(&self, py: Python<'_>) -> PyResult<Arc<parabyte::Client>> {
        let pid = std::process::id();
        {
            let connected = self
                .connected
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if connected.0 == pid {
                return Ok(connected.1.clone());
            }
        }
        // Not under the lock: waiting takes the GIL back now and then.
        let inner = connect(py, &self.store, self.source.as_ref(), &self.transfer)?;
        *self
            .connected
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = (pid, inner.clone());
        Ok(inner)
    }

    /// The core's one entry point for a request; a request naming one object raises that
    /// object's failure, as its own typed exception.
    fn run(&self, py: Python<'_>, request: CopyRequest) -> PyResult<Transfer<Summary>> {
        let one_object = request.names_one_object();
        Ok(settled(
            self.inner(py)?,
            one_object,
            move |client, reporter| async move { client.copy(&request, reporter).await },
        ))
    }

    /// `upload_many`'s transfer: any iterable of `(path, url)` pairs.
    fn uploads(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        keywords: &UploadKeywords,
    ) -> PyResult<Transfer<Summary>> {
        let items = items
            .try_iter()?
            .map(|item| {
                let (path, url): (PathBuf, String) = item?.extract()?;
                Ok((path, store_url(&url)?))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let options = keywords.options.clone();
        Ok(settled(
            self.inner(py)?,
            false,
            move |client, reporter| async move { client.upload_many(items, &options, reporter).await },
        ))
    }

    /// `sync`'s transfer, and its progress callback.
    fn syncing(
        &self,
        py: Python<'_>,
        method: &str,
        source: &Path,
        destination: &Path,
        keywords: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<(Transfer<Summary>, Option<Py<PyAny>>)> {
        let (sync, rest) = SyncKeywords::take(method, keywords)?;
        let mut keywords = UploadKeywords::parse(method, rest.as_ref())?;
        let request = keywords.tree_request(source, destination)?;
        let options = sync.options;
        let transfer = settled(self.inner(py)?, false, move |client, reporter| async move {
            client.sync(&request, &options, reporter).await
        });
        Ok((transfer, keywords.progress.take()))
    }

    /// `move`'s transfer.
    fn moving(&self, py: Python<'_>, request: CopyRequest) -> PyResult<Transfer<Summary>> {
        let one_object = request.names_one_object();
        Ok(settled(
            self.inner(py)?,
            one_object,
            move |client, reporter| async move { client.move_objects(&request, reporter).await },
        ))
    }

    /// `delete` and `delete_many`'s transfer; with `raise_failure`, a failure is raised.
    fn deleting(
        &self,
        py: Python<'_>,
        urls: Vec<String>,
        raise_failure: bool,
    ) -> PyResult<Transfer<Summary>> {
        let keys = urls
            .iter()
            .map(|url| S3Url::parse(url).map_err(to_py))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(settled(
            self.inner(py)?,
            raise_failure,
            move |client, reporter| async move { client.delete_many(keys, reporter).await },
        ))
    }

    /// `make_bucket`'s call.
    fn bucket_making(&self, py: Python<'_>, url: &str) -> PyResult<Transfer<()>> {
        let bucket = bucket_named(url)?;
        Ok(calling(self.inner(py)?, move |client, _| async move {
            client.create_bucket(&bucket).await.map_err(to_py)
        }))
    }

    /// `remove_bucket`'s call: the objects deleted first with `force`, then the bucket.
    fn bucket_removal(&self, py: Python<'_>, url: &str, force: bool) -> PyResult<Transfer<u64>> {
        let bucket = bucket_named(url)?;
        let removal = calling(self.inner(py)?, move |client, reporter| async move {
            let deleted = match force {
                true => {
                    let summary = client
                        .empty_bucket(&bucket, reporter)
                        .await
                        .map_err(to_py)?;
                    if let Some(failure) = summary.failures.first() {
                        return Err(to_py(&failure.error));
                    }
                    summary.deleted
                }
                false => 0,
            };
            client.delete_bucket(&bucket).await.map_err(to_py)?;
            Ok(deleted)
        });
        Ok(removal)
    }

    /// `remove`'s transfer.
    fn removal(&self, py: Python<'_>, request: RemoveRequest) -> PyResult<Transfer<Summary>> {
        let one_key = request.names_one_key();
        Ok(settled(
            self.inner(py)?,
            one_key,
            move |client, reporter| async move { client.remove(&request, reporter).await },
        ))
    }

    /// `put_bytes`' transfer: one object, whose failure is raised.
    fn put(
        &self,
        py: Python<'_>,
        destination: &str,
        data: bytes::Bytes,
        keywords: &UploadKeywords,
    ) -> PyResult<Transfer<Summary>> {
        let client = self.inner(py)?;
        let to = store_url(destination)?;
        let options = keywords.options.clone();
        Ok(calling(client, move |client, reporter| async move {
            let summary = client.put_bytes(data, &to, &options, reporter).await;
            summary.map(Summary::from).map_err(|error| to_py(&error))
        }))
    }

    /// `download_many`'s request; any iterable of items will do.
    fn copy_items(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        destination: Option<PathBuf>,
    ) -> PyResult<Transfer<Summary>> {
        let items = items
            .try_iter()?
            .map(|item| item?.extract::<ItemLike>()?.into_core())
            .collect::<PyResult<Vec<_>>>()?;
        self.run(
            py,
            CopyRequest {
                source: Source::Items(items),
                destination: destination_of(destination),
                recursive: false,
                options: Default::default(),
            },
        )
    }

    /// `get_bytes_many`: every source checked before the first request.
    fn fetch_many(
        &self,
        py: Python<'_>,
        sources: &Bound<'_, PyAny>,
        on_error: &str,
    ) -> PyResult<impl Future<Output = PyResult<Gathered>> + use<>> {
        let on_error = OnError::parse(on_error)?;
        let items = sources
            .try_iter()?
            .map(|source| source?.extract::<ItemLike>()?.into_core())
            .collect::<PyResult<Vec<_>>>()?;
        let fetched = self.inner(py)?.get_bytes_many(items);
        Ok(Gathered::collect(fetched, on_error))
    }

    /// `get_bytes`: the whole object, one range of it, or a list of ranges.
    fn fetch(
        &self,
        py: Python<'_>,
        source: &str,
        range: Option<ByteRangeArg>,
        ranges: Option<Vec<ByteRangeArg>>,
    ) -> PyResult<impl Future<Output = PyResult<Fetched>> + use<>> {
        let source = object_url(source)?;
        let client = self.inner(py)?;
        let asked: Option<(Vec<Range<u64>>, bool)> = match (range, ranges) {
            (Some(_), Some(_)) => {
                return Err(InvalidInputError::new_err(
                    "give range=(start, end) or ranges=[...], not both",
                ))
            }
            (Some(range), None) => Some((vec![range.into_range()?], false)),
            (None, Some(ranges)) => Some((
                ranges
                    .into_iter()
                    .map(ByteRangeArg::into_range)
                    .collect::<PyResult<_>>()?,
                true,
            )),
            (None, None) => None,
        };
        Ok(async move {
            let Some((ranges, as_list)) = asked else {
                let bytes = client.get_bytes(source).await.map_err(to_py)?;
                return Ok(Fetched::One(Buffer::from(bytes)));
            };
            let mut slices = client
                .get_ranges(source, &ranges)
                .await
                .map_err(to_py)?
                .into_iter()
                .map(Buffer::from);
            match (as_list, slices.next()) {
                (false, Some(one)) => Ok(Fetched::One(one)),
                (_, first) => Ok(Fetched::Many(first.into_iter().chain(slices).collect())),
            }
        })
    }
}

/// What `get_bytes` hands back: one buffer, or one per range asked for.
#[derive(IntoPyObject)]
enum Fetched {
    One(Buffer),
    Many(Vec<Buffer>),
}

/// Resolve credentials, region and endpoint for a core client (no request is sent).
fn connect(
    py: Python<'_>,
    store: &StoreConfig,
    source: Option<&StoreConfig>,
    transfer: &TransferConfig,
) -> PyResult<Arc<parabyte::Client>> {
    let (store, source, transfer) = (store.clone(), source.cloned(), transfer.clone());
    let connect = async move {
        parabyte::Client::connect_reading_from(&store, source.as_ref(), transfer)
            .await
            .map_err(to_py)
    };
    wait(py, connect, |_| Ok(())).map(Arc::new)
}

/// Where an S3 object goes in `download_many` when its item names no destination: its
/// key, folders kept, relative to the batch's directory (which the core checks it stays
/// in). A key starting with '/' would read as an absolute path, so it keeps the core's
/// default, the last segment; so do web URLs.
fn key_path(source: &ObjectUrl) -> Option<PathBuf> {
    match source {
        ObjectUrl::S3(url) if !url.key.starts_with('/') => Some(PathBuf::from(&url.key)),
        _ => None,
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

/// A summary as Python gets it; with `raise_first`, its first failure raised instead (a
/// request for one object, whose failure is the call's).
/// The bucket `url` names: `s3://bucket`, with no key.
fn bucket_named(url: &str) -> PyResult<String> {
    let url = S3Url::parse(url).map_err(to_py)?;
    match url.key.is_empty() {
        true => Ok(url.bucket),
        false => Err(InvalidInputError::new_err(format!(
            "a bucket is s3://{} with no key; '{}' names a key",
            url.bucket, url.key
        ))),
    }
}

/// The transfer that runs `call` with `client`; with `raise_first`, the summary's first
/// failure is raised instead (a request naming one object raises that object's failure,
/// as its own typed exception).
fn settled<Fut>(
    client: Arc<parabyte::Client>,
    raise_first: bool,
    call: impl FnOnce(Arc<parabyte::Client>, Arc<dyn Reporter>) -> Fut + Send + 'static,
) -> Transfer<Summary>
where
    Fut: Future<Output = parabyte::Result<parabyte::Summary>> + Send + 'static,
{
    calling(client, move |client, reporter| async move {
        let summary = call(client, reporter).await.map_err(to_py)?;
        match summary.failures.first() {
            Some(failure) if raise_first => Err(to_py(&failure.error)),
            _ => Ok(Summary::from(summary)),
        }
    })
}
