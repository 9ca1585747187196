//! `Client.list`: the core's listing stream as a Python iterator and async iterator. Entries
//! are fetched a page's worth at a time, so most `next()` calls never leave Python's thread.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::StreamExt;
use parabyte::Listed;
use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;

use crate::awaitable::awaitable;
use crate::errors::to_py;
use crate::run::wait;

/// Entries taken from the stream in one go: those already listed, up to a page.
const BATCH: usize = 1000;

/// One listed object, or a "folder" (`is_prefix`) in a listing that is not recursive.
#[pyclass(frozen, get_all, from_py_object, module = "parabyte")]
#[derive(Debug, Clone)]
pub struct ObjectInfo {
    pub bucket: String,
    /// The full key (for a folder, the prefix ending in `/`).
    pub key: String,
    /// Size in bytes (0 for a folder).
    pub size: u64,
    /// The ETag with its quotes, as the store sends it.
    pub etag: Option<String>,
    /// ISO 8601 time of the last write, e.g. `2026-01-02T03:04:05.000Z`.
    pub last_modified: Option<String>,
    pub storage_class: Option<String>,
    pub is_prefix: bool,
}

impl ObjectInfo {
    fn new(bucket: &str, listed: Listed) -> Self {
        match listed {
            Listed::Object(object) => ObjectInfo {
                bucket: bucket.to_owned(),
                key: object.key,
                size: object.size,
                etag: object.etag,
                last_modified: object.last_modified.map(|time| time.to_string()),
                storage_class: object.storage_class,
                is_prefix: false,
            },
            Listed::Prefix(prefix) => ObjectInfo {
                bucket: bucket.to_owned(),
                key: prefix,
                size: 0,
                etag: None,
                last_modified: None,
                storage_class: None,
                is_prefix: true,
            },
        }
    }
}

#[pymethods]
impl ObjectInfo {
    /// `s3://bucket/key`, ready to pass to `download` or `download_many`.
    #[getter]
    pub fn url(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }

    fn __repr__(&self) -> String {
        if self.is_prefix {
            format!("ObjectInfo(url={:?}, is_prefix=True)", self.url())
        } else {
            format!(
                "ObjectInfo(url={:?}, size={}, etag={:?})",
                self.url(),
                self.size,
                self.etag
            )
        }
    }
}

/// The stream and what has been taken from it but not yet handed out.
struct Pages {
    bucket: String,
    batches: BoxStream<'static, Vec<parabyte::Result<Listed>>>,
    ready: VecDeque<ObjectInfo>,
    /// An error met inside a batch, raised once the entries before it are handed out.
    deferred: Option<parabyte::Error>,
}

impl Pages {
    async fn next_entry(&mut self) -> parabyte::Result<Option<ObjectInfo>> {
        loop {
            if let Some(entry) = self.ready.pop_front() {
                return Ok(Some(entry));
            }
            if let Some(error) = self.deferred.take() {
                return Err(error);
            }
            let Some(batch) = self.batches.next().await else {
                return Ok(None);
            };
            for listed in batch {
                match listed {
                    Ok(listed) => self.ready.push_back(ObjectInfo::new(&self.bucket, listed)),
                    Err(error) => {
                        self.deferred = Some(error);
                        break;
                    }
                }
            }
        }
    }
}

/// Iterates (`for`) or async-iterates (`async for`) over a listing as its pages arrive.
#[pyclass(frozen, module = "parabyte")]
pub struct ListIterator {
    pages: Arc<tokio::sync::Mutex<Pages>>,
}

impl std::fmt::Debug for ListIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListIterator").finish_non_exhaustive()
    }
}

impl ListIterator {
    pub fn new(
        bucket: String,
        entries: impl futures::Stream<Item = parabyte::Result<Listed>> + Send + 'static,
    ) -> Self {
        let pages = Pages {
            bucket,
            batches: entries.ready_chunks(BATCH).boxed(),
            ready: VecDeque::new(),
            deferred: None,
        };
        ListIterator {
            pages: Arc::new(tokio::sync::Mutex::new(pages)),
        }
    }
}

#[pymethods]
impl ListIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<ObjectInfo>> {
        // Entries already fetched need no trip through the runtime.
        if let Ok(mut pages) = self.pages.try_lock() {
            if let Some(entry) = pages.ready.pop_front() {
                return Ok(Some(entry));
            }
        }
        let pages = self.pages.clone();
        let next = async move { pages.lock().await.next_entry().await.map_err(to_py) };
        wait(py, next, |_| Ok(()))
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pages = self.pages.clone();
        awaitable(py, async move {
            match pages.lock().await.next_entry().await.map_err(to_py)? {
                Some(entry) => Ok(entry),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        })
    }
}
