//! `Client.list`: the core's listing stream as a Python iterator and async iterator. Entries
//! are fetched a page's worth at a time, so most `next()` calls never leave Python's thread.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::StreamExt;
use parabyte::Listed;
use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyDict, PyTuple};

use crate::pyvalue::{reduce, repr};

use crate::awaitable::awaitable;
use crate::errors::{to_py, InvalidInputError};
use crate::run::wait;

/// Entries taken from the stream in one go: those already listed, up to a page.
const BATCH: usize = 1000;

/// One listed object, or a "folder" (`is_prefix`) in a listing that is not recursive.
/// Equal when every field is; pickles and turns into a dict.
#[pyclass(frozen, eq, hash, from_py_object, module = "parabyte")]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectInfo {
    #[pyo3(get)]
    pub bucket: String,
    /// The full key (for a folder, the prefix ending in `/`).
    #[pyo3(get)]
    pub key: String,
    /// Size in bytes (0 for a folder).
    #[pyo3(get)]
    pub size: u64,
    /// The ETag with its quotes, as the store sends it.
    #[pyo3(get)]
    pub etag: Option<String>,
    /// The last write, in milliseconds since the Unix epoch (a `datetime` in Python).
    last_modified_ms: Option<i64>,
    #[pyo3(get)]
    pub storage_class: Option<String>,
    #[pyo3(get)]
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
                last_modified_ms: object.last_modified.map(|time| time.unix_millis()),
                storage_class: object.storage_class.map(Cow::into_owned),
                is_prefix: false,
            },
            Listed::Prefix(prefix) => ObjectInfo {
                bucket: bucket.to_owned(),
                key: prefix,
                size: 0,
                etag: None,
                last_modified_ms: None,
                storage_class: None,
                is_prefix: true,
            },
        }
    }

    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let fields = PyDict::new(py);
        fields.set_item("bucket", &self.bucket)?;
        fields.set_item("key", &self.key)?;
        fields.set_item("size", self.size)?;
        fields.set_item("etag", &self.etag)?;
        fields.set_item("last_modified", self.last_modified(py)?)?;
        fields.set_item("storage_class", &self.storage_class)?;
        fields.set_item("is_prefix", self.is_prefix)?;
        Ok(fields)
    }
}

/// The Unix epoch as an aware `datetime` and a millisecond as a `timedelta`.
fn epoch_and_millisecond(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Bound<'_, PyAny>)> {
    let datetime = py.import("datetime")?;
    let utc = datetime.getattr("timezone")?.getattr("utc")?;
    let epoch = datetime
        .getattr("datetime")?
        .call((1970, 1, 1, 0, 0, 0, 0, utc), None)?;
    let millisecond = datetime
        .getattr("timedelta")?
        .call((), Some(&[("milliseconds", 1)].into_py_dict(py)?))?;
    Ok((epoch, millisecond))
}

#[pymethods]
impl ObjectInfo {
    /// For unpickling, and for tests that build listings of their own.
    // One keyword per field, as `to_dict` gives them.
    #[allow(clippy::too_many_arguments)]
    #[new]
    #[pyo3(signature = (bucket, key, size = 0, etag = None, last_modified = None, storage_class = None, is_prefix = false))]
    fn py_new(
        py: Python<'_>,
        bucket: String,
        key: String,
        size: u64,
        etag: Option<String>,
        last_modified: Option<Bound<'_, PyAny>>,
        storage_class: Option<String>,
        is_prefix: bool,
    ) -> PyResult<Self> {
        let last_modified_ms = match last_modified {
            None => None,
            Some(time) => {
                let (epoch, millisecond) = epoch_and_millisecond(py)?;
                let since = time.call_method1("__sub__", (epoch,))?;
                Some(
                    since
                        .call_method1("__floordiv__", (millisecond,))?
                        .extract()?,
                )
            }
        };
        Ok(ObjectInfo {
            bucket,
            key,
            size,
            etag,
            last_modified_ms,
            storage_class,
            is_prefix,
        })
    }

    /// The last write as a timezone-aware UTC `datetime` (`None` for a folder).
    #[getter]
    fn last_modified<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(millis) = self.last_modified_ms else {
            return Ok(None);
        };
        let (epoch, millisecond) = epoch_and_millisecond(py)?;
        let since = millisecond.call_method1("__mul__", (millis,))?;
        Ok(Some(epoch.call_method1("__add__", (since,))?))
    }

    /// `s3://bucket/key`, ready to pass to `download` or `download_many`.
    #[getter]
    pub fn url(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }

    /// The fields as a dict (`last_modified` a `datetime`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.fields(py)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        reduce(slf.as_any(), slf.get().fields(slf.py())?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr("ObjectInfo", &self.fields(py)?)
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
    /// The process the listing runs in: its tasks do not survive `os.fork()`.
    process: u32,
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
            process: std::process::id(),
        }
    }
}

impl ListIterator {
    /// A listing iterated after a fork would wait forever for its parent's tasks.
    fn same_process(&self) -> PyResult<()> {
        if self.process == std::process::id() {
            return Ok(());
        }
        Err(InvalidInputError::new_err(
            "this listing was started before os.fork(); list again in this process",
        ))
    }
}

#[pymethods]
impl ListIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<ObjectInfo>> {
        self.same_process()?;
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
        self.same_process()?;
        let pages = self.pages.clone();
        awaitable(py, async move {
            match pages.lock().await.next_entry().await.map_err(to_py)? {
                Some(entry) => Ok(entry),
                None => Err(PyStopAsyncIteration::new_err(())),
            }
        })
    }
}
