//! What one transfer did, as Python sees it: the core's `Summary` with plain fields.

use std::sync::Arc;

use pyo3::exceptions::PyBaseException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::{to_py, TransferFailedError};
use crate::pyvalue::{reduce, repr};

/// Requests sent, by kind.
#[pyclass(frozen, eq, get_all, from_py_object, module = "parabyte")]
#[derive(Debug, Clone, PartialEq)]
pub struct Requests {
    pub get: u64,
    pub list: u64,
    pub head: u64,
    /// PUTs of an object or of one upload part.
    pub put: u64,
    /// Create, complete, abort and list-parts requests of multipart uploads.
    pub multipart: u64,
    /// Copies inside the store (CopyObject, UploadPartCopy).
    pub copy: u64,
    /// DeleteObjects requests.
    pub delete: u64,
}

impl Requests {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let fields = PyDict::new(py);
        fields.set_item("get", self.get)?;
        fields.set_item("list", self.list)?;
        fields.set_item("head", self.head)?;
        fields.set_item("put", self.put)?;
        fields.set_item("multipart", self.multipart)?;
        fields.set_item("copy", self.copy)?;
        fields.set_item("delete", self.delete)?;
        Ok(fields)
    }
}

#[pymethods]
impl Requests {
    #[new]
    #[pyo3(signature = (get = 0, list = 0, head = 0, put = 0, multipart = 0, copy = 0, delete = 0))]
    fn new(
        get: u64,
        list: u64,
        head: u64,
        put: u64,
        multipart: u64,
        copy: u64,
        delete: u64,
    ) -> Self {
        Requests {
            get,
            list,
            head,
            put,
            multipart,
            copy,
            delete,
        }
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.fields(py)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        reduce(slf.as_any(), slf.get().fields(slf.py())?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr("Requests", &self.fields(py)?)
    }
}

/// How the objects that arrived were checked.
#[pyclass(frozen, eq, get_all, from_py_object, module = "parabyte")]
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// By the store's full-object CRC32, CRC32C or CRC64NVME.
    pub checksum: u64,
    /// By the MD5 their ETag stands for.
    pub md5: u64,
    /// By their size alone (no checksum, a multipart ETag, discarded, or `verify=False`).
    pub size_only: u64,
}

impl Verified {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let fields = PyDict::new(py);
        fields.set_item("checksum", self.checksum)?;
        fields.set_item("md5", self.md5)?;
        fields.set_item("size_only", self.size_only)?;
        Ok(fields)
    }
}

#[pymethods]
impl Verified {
    #[new]
    #[pyo3(signature = (checksum = 0, md5 = 0, size_only = 0))]
    fn new(checksum: u64, md5: u64, size_only: u64) -> Self {
        Verified {
            checksum,
            md5,
            size_only,
        }
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.fields(py)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        reduce(slf.as_any(), slf.get().fields(slf.py())?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr("Verified", &self.fields(py)?)
    }
}

/// One object that did not arrive, and why.
#[pyclass(frozen, eq, from_py_object, module = "parabyte")]
#[derive(Debug, Clone)]
pub struct Failure {
    /// The source URL, e.g. `s3://bucket/key`.
    #[pyo3(get)]
    pub source: String,
    /// The full error message.
    #[pyo3(get)]
    pub error: String,
    /// The error as the exception a single download would raise; shared by the copies
    /// `Summary.failures` hands out, so each read gives the same exception object.
    exception: Arc<PyErr>,
}

/// The same object failed the same way: the exception objects, made apart (a pickled copy
/// has its own), do not take part.
impl PartialEq for Failure {
    fn eq(&self, other: &Failure) -> bool {
        self.source == other.source && self.error == other.error
    }
}

impl Failure {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let fields = PyDict::new(py);
        fields.set_item("source", &self.source)?;
        fields.set_item("error", &self.error)?;
        fields.set_item("exception", self.exception.value(py))?;
        Ok(fields)
    }
}

#[pymethods]
impl Failure {
    /// For unpickling: the exception comes back with the failure.
    #[new]
    fn new(source: String, error: String, exception: Bound<'_, PyBaseException>) -> Self {
        Failure {
            source,
            error,
            exception: Arc::new(PyErr::from_value(exception.into_any())),
        }
    }

    /// `source`, `error` and `exception` as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.fields(py)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        reduce(slf.as_any(), slf.get().fields(slf.py())?)
    }

    /// The error as its `parabyte.Error` subclass (`NotFoundError` is a `FileNotFoundError`).
    #[getter]
    fn exception<'py>(&self, py: Python<'py>) -> Bound<'py, PyBaseException> {
        self.exception.value(py).clone()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let fields = self.fields(py)?;
        fields.del_item("exception")?;
        repr("Failure", &fields)
    }
}

/// What one transfer did.
#[pyclass(frozen, eq, get_all, from_py_object, module = "parabyte")]
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Objects that arrived (or were fetched, when discarding).
    pub objects: u64,
    /// Objects that failed; see `failures`.
    pub failed: u64,
    /// Objects left alone: an earlier download finished this same version.
    pub skipped: u64,
    /// Of `skipped`, those judged by size and modification time alone (a file another tool
    /// downloaded, or an unchanged local copy).
    pub skipped_by_size_and_time: u64,
    /// Objects or files deleted (`remove`, `sync(delete=True)`).
    pub deleted: u64,
    /// Objects completed from the parts an interrupted run left.
    pub resumed: u64,
    /// Bytes those parts held: not fetched again.
    pub resumed_bytes: u64,
    /// Objects uploaded with Content-MD5: the store refused checksum headers.
    pub sent_with_md5: u64,
    /// Those objects as `s3://bucket/key` (the first 1,000): stored without a CRC.
    pub sent_with_md5_objects: Vec<String>,
    /// Body bytes received.
    pub bytes: u64,
    /// Wall time in seconds (the CLI's JSON names it so; `elapsed` is the same).
    pub elapsed_seconds: f64,
    /// Seconds until the first object's download began (with a listing: the first page).
    pub first_object_seconds: Option<f64>,
    /// `bytes / elapsed`.
    pub bytes_per_second: f64,
    /// Requests sent, by kind.
    pub requests: Requests,
    /// TCP connections opened.
    pub connections: u64,
    /// Requests sent again after a failure that may pass.
    pub retries: u64,
    /// How the objects were checked.
    pub verified: Verified,
    /// Per-object failures, in the order they happened.
    pub failures: Vec<Failure>,
}

impl From<parabyte::Summary> for Summary {
    fn from(summary: parabyte::Summary) -> Self {
        let requests = summary.requests;
        Summary {
            objects: summary.objects,
            failed: summary.failed,
            skipped: summary.skipped,
            skipped_by_size_and_time: summary.skipped_by_size_and_time,
            deleted: summary.deleted,
            resumed: summary.resumed,
            resumed_bytes: summary.resumed_bytes,
            sent_with_md5: summary.sent_with_md5,
            sent_with_md5_objects: summary.sent_with_md5_objects,
            bytes: summary.bytes,
            elapsed_seconds: summary.elapsed.as_secs_f64(),
            first_object_seconds: summary
                .first_object_started
                .map(|started| started.as_secs_f64()),
            bytes_per_second: summary.bytes_per_second,
            requests: Requests {
                get: requests.get,
                list: requests.list,
                head: requests.head,
                put: requests.put,
                multipart: requests.multipart,
                copy: requests.copy,
                delete: requests.delete,
            },
            connections: summary.connections,
            retries: summary.retries,
            verified: Verified {
                checksum: summary.verified.checksum,
                md5: summary.verified.md5,
                size_only: summary.verified.size_only,
            },
            failures: summary
                .failures
                .into_iter()
                .map(|failure| Failure {
                    source: failure.source,
                    error: failure.error.to_string(),
                    exception: Arc::new(to_py(&failure.error)),
                })
                .collect(),
        }
    }
}

impl Summary {
    /// The fields as the constructor takes them (nested ones as objects).
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let fields = PyDict::new(py);
        fields.set_item("objects", self.objects)?;
        fields.set_item("failed", self.failed)?;
        fields.set_item("skipped", self.skipped)?;
        fields.set_item("skipped_by_size_and_time", self.skipped_by_size_and_time)?;
        fields.set_item("deleted", self.deleted)?;
        fields.set_item("resumed", self.resumed)?;
        fields.set_item("resumed_bytes", self.resumed_bytes)?;
        fields.set_item("sent_with_md5", self.sent_with_md5)?;
        fields.set_item("sent_with_md5_objects", self.sent_with_md5_objects.clone())?;
        fields.set_item("bytes", self.bytes)?;
        fields.set_item("elapsed_seconds", self.elapsed_seconds)?;
        fields.set_item("first_object_seconds", self.first_object_seconds)?;
        fields.set_item("bytes_per_second", self.bytes_per_second)?;
        fields.set_item("requests", self.requests.clone())?;
        fields.set_item("connections", self.connections)?;
        fields.set_item("retries", self.retries)?;
        fields.set_item("verified", self.verified.clone())?;
        fields.set_item("failures", self.failures.clone())?;
        Ok(fields)
    }
}

#[pymethods]
impl Summary {
    /// For unpickling.
    #[allow(clippy::too_many_arguments)]
    #[new]
    #[pyo3(signature = (
        *,
        objects = 0,
        failed = 0,
        skipped = 0,
        skipped_by_size_and_time = 0,
        deleted = 0,
        resumed = 0,
        resumed_bytes = 0,
        sent_with_md5 = 0,
        sent_with_md5_objects = Vec::new(),
        bytes = 0,
        elapsed_seconds = 0.0,
        first_object_seconds = None,
        bytes_per_second = 0.0,
        requests = Requests { get: 0, list: 0, head: 0, put: 0, multipart: 0, copy: 0, delete: 0 },
        connections = 0,
        retries = 0,
        verified = Verified { checksum: 0, md5: 0, size_only: 0 },
        failures = Vec::new(),
    ))]
    fn new(
        objects: u64,
        failed: u64,
        skipped: u64,
        skipped_by_size_and_time: u64,
        deleted: u64,
        resumed: u64,
        resumed_bytes: u64,
        sent_with_md5: u64,
        sent_with_md5_objects: Vec<String>,
        bytes: u64,
        elapsed_seconds: f64,
        first_object_seconds: Option<f64>,
        bytes_per_second: f64,
        requests: Requests,
        connections: u64,
        retries: u64,
        verified: Verified,
        failures: Vec<Failure>,
    ) -> Self {
        Summary {
            objects,
            failed,
            skipped,
            skipped_by_size_and_time,
            deleted,
            resumed,
            resumed_bytes,
            sent_with_md5,
            sent_with_md5_objects,
            bytes,
            elapsed_seconds,
            first_object_seconds,
            bytes_per_second,
            requests,
            connections,
            retries,
            verified,
            failures,
        }
    }

    /// True when every object arrived.
    #[getter]
    fn ok(&self) -> bool {
        self.failures.is_empty()
    }

    /// `elapsed_seconds`, by its shorter name.
    #[getter]
    fn elapsed(&self) -> f64 {
        self.elapsed_seconds
    }

    /// The one way summaries add up (a job spread over a cluster): every count summed,
    /// `failures` (or the parts' own, in order) listed, the objects stored without a CRC
    /// named up to a thousand, `bytes_per_second` over `elapsed_seconds`, and `resumed`
    /// counted of `resumed_from` only (by default every part).
    #[staticmethod]
    #[pyo3(signature = (parts, elapsed_seconds, *, failures = None, resumed_from = None))]
    fn merged(
        parts: Vec<Summary>,
        elapsed_seconds: f64,
        failures: Option<Vec<Failure>>,
        resumed_from: Option<Vec<Summary>>,
    ) -> Summary {
        let total = |count: fn(&Summary) -> u64| parts.iter().map(count).sum::<u64>();
        let failures =
            failures.unwrap_or_else(|| parts.iter().flat_map(|p| p.failures.clone()).collect());
        let resumed = resumed_from.as_deref().unwrap_or(&parts);
        let bytes = total(|s| s.bytes);
        Summary {
            objects: total(|s| s.objects),
            failed: failures.len() as u64,
            skipped: total(|s| s.skipped),
            skipped_by_size_and_time: total(|s| s.skipped_by_size_and_time),
            deleted: total(|s| s.deleted),
            resumed: resumed.iter().map(|s| s.resumed).sum(),
            resumed_bytes: resumed.iter().map(|s| s.resumed_bytes).sum(),
            sent_with_md5: total(|s| s.sent_with_md5),
            sent_with_md5_objects: parts
                .iter()
                .flat_map(|s| s.sent_with_md5_objects.iter().cloned())
                .take(parabyte::NAMED_AT_MOST)
                .collect(),
            bytes,
            elapsed_seconds,
            first_object_seconds: parts
                .iter()
                .filter_map(|s| s.first_object_seconds)
                .reduce(f64::min),
            bytes_per_second: match elapsed_seconds > 0.0 {
                true => bytes as f64 / elapsed_seconds,
                false => 0.0,
            },
            requests: Requests {
                get: total(|s| s.requests.get),
                list: total(|s| s.requests.list),
                head: total(|s| s.requests.head),
                put: total(|s| s.requests.put),
                multipart: total(|s| s.requests.multipart),
                copy: total(|s| s.requests.copy),
                delete: total(|s| s.requests.delete),
            },
            connections: total(|s| s.connections),
            retries: total(|s| s.retries),
            verified: Verified {
                checksum: total(|s| s.verified.checksum),
                md5: total(|s| s.verified.md5),
                size_only: total(|s| s.verified.size_only),
            },
            failures,
        }
    }

    /// Raise `parabyte.TransferFailedError` (with this summary) if any object failed.
    fn raise_for_failures(slf: &Bound<'_, Self>) -> PyResult<()> {
        let summary = slf.get();
        let Some(first) = summary.failures.first() else {
            return Ok(());
        };
        let message = format!(
            "{} of {} objects failed; the first: {}: {}",
            summary.failed,
            summary.objects + summary.failed,
            first.source,
            first.error
        );
        Err(TransferFailedError::new_err((
            message,
            slf.clone().unbind(),
        )))
    }

    /// Every field as a dict, the nested ones too (`requests`, `verified`, `failures`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let fields = self.fields(py)?;
        fields.set_item("requests", self.requests.fields(py)?)?;
        fields.set_item("verified", self.verified.fields(py)?)?;
        let failures = self
            .failures
            .iter()
            .map(|failure| failure.fields(py))
            .collect::<PyResult<Vec<_>>>()?;
        fields.set_item("failures", failures)?;
        Ok(fields)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        reduce(slf.as_any(), slf.get().fields(slf.py())?)
    }

    /// Every field, as a dataclass shows itself (times to the millisecond).
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let fields = self.fields(py)?;
        let millis = |seconds: f64| (seconds * 1000.0).round() / 1000.0;
        fields.set_item("elapsed_seconds", millis(self.elapsed_seconds))?;
        fields.set_item(
            "first_object_seconds",
            self.first_object_seconds.map(millis),
        )?;
        fields.set_item("bytes_per_second", self.bytes_per_second.round())?;
        repr("Summary", &fields)
    }
}
