//! What one transfer did, as Python sees it: the core's `Summary` with plain fields.

use std::sync::Arc;

use pyo3::exceptions::PyBaseException;
use pyo3::prelude::*;

use crate::errors::{to_py, TransferFailedError};

/// Requests sent, by kind (downloads send no other kinds).
#[pyclass(frozen, get_all, module = "parabyte")]
#[derive(Debug, Clone)]
pub struct Requests {
    pub get: u64,
    pub list: u64,
}

#[pymethods]
impl Requests {
    fn __repr__(&self) -> String {
        format!("Requests(get={}, list={})", self.get, self.list)
    }
}

/// How the objects that arrived were checked.
#[pyclass(frozen, get_all, module = "parabyte")]
#[derive(Debug, Clone)]
pub struct Verified {
    /// By the store's full-object CRC32, CRC32C or CRC64NVME.
    pub checksum: u64,
    /// By the MD5 their ETag stands for.
    pub md5: u64,
    /// By their size alone (no checksum, a multipart ETag, discarded, or `verify=False`).
    pub size_only: u64,
}

#[pymethods]
impl Verified {
    fn __repr__(&self) -> String {
        format!(
            "Verified(checksum={}, md5={}, size_only={})",
            self.checksum, self.md5, self.size_only
        )
    }
}

/// One object that did not arrive, and why.
#[pyclass(frozen, module = "parabyte")]
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

#[pymethods]
impl Failure {
    /// The error as its `parabyte.Error` subclass (`NotFoundError` is a `FileNotFoundError`).
    #[getter]
    fn exception<'py>(&self, py: Python<'py>) -> Bound<'py, PyBaseException> {
        self.exception.value(py).clone()
    }

    fn __repr__(&self) -> String {
        format!("Failure(source={:?}, error={:?})", self.source, self.error)
    }
}

/// What one transfer did.
#[pyclass(frozen, get_all, module = "parabyte")]
#[derive(Debug, Clone)]
pub struct Summary {
    /// Objects that arrived (or were fetched, when discarding).
    pub objects: u64,
    /// Objects that failed; see `failures`.
    pub failed: u64,
    /// Objects left alone: an earlier download finished this same version.
    pub skipped: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Wall time in seconds.
    pub elapsed: f64,
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
            bytes: summary.bytes,
            elapsed: summary.elapsed.as_secs_f64(),
            first_object_seconds: summary
                .first_object_started
                .map(|started| started.as_secs_f64()),
            bytes_per_second: summary.bytes_per_second,
            requests: Requests {
                get: requests.get,
                list: requests.list,
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

#[pymethods]
impl Summary {
    /// True when every object arrived.
    #[getter]
    fn ok(&self) -> bool {
        self.failures.is_empty()
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

    fn __repr__(&self) -> String {
        format!(
            "Summary(objects={}, failed={}, skipped={}, bytes={}, elapsed={:.3}, requests={}, connections={}, retries={})",
            self.objects,
            self.failed,
            self.skipped,
            self.bytes,
            self.elapsed,
            self.requests.__repr__(),
            self.connections,
            self.retries
        )
    }
}
