//! Core errors as Python exceptions. The classes live in `parabyte/exceptions.py`, where a
//! class can also derive from `FileNotFoundError` or `PermissionError`; this is the one
//! place a core error kind picks its class.

use std::sync::{Arc, Mutex, PoisonError};

use parabyte::Reporter;
use pyo3::exceptions::PyRuntimeError;
use pyo3::PyErr;

pyo3::import_exception!(parabyte.exceptions, Error);
pyo3::import_exception!(parabyte.exceptions, InvalidInputError);
pyo3::import_exception!(parabyte.exceptions, NotFoundError);
pyo3::import_exception!(parabyte.exceptions, PermissionDeniedError);
pyo3::import_exception!(parabyte.exceptions, CredentialsError);
pyo3::import_exception!(parabyte.exceptions, ObjectChangedError);
pyo3::import_exception!(parabyte.exceptions, NetworkError);
pyo3::import_exception!(parabyte.exceptions, StoreError);
pyo3::import_exception!(parabyte.exceptions, LocalFileError);
pyo3::import_exception!(parabyte.exceptions, TransferFailedError);

/// The Python exception for a core error, carrying the core's full message.
pub fn to_py(error: parabyte::Error) -> PyErr {
    exception_for(&error)
}

fn exception_for(error: &parabyte::Error) -> PyErr {
    use parabyte::Error as Core;
    let message = error.to_string();
    // A retry budget that ran out is reported as what kept failing.
    let mut kind = error;
    while let Core::GaveUp { last, .. } = kind {
        kind = last;
    }
    match kind {
        Core::InvalidInput(_) | Core::UnsafeKey { .. } | Core::Collision { .. } => {
            InvalidInputError::new_err(message)
        }
        Core::NotFound { .. } | Core::NoSuchBucket { .. } => NotFoundError::new_err(message),
        Core::PermissionDenied { .. } => PermissionDeniedError::new_err(message),
        Core::BadCredentials { .. } | Core::NoCredentials(_) => CredentialsError::new_err(message),
        Core::Changed { .. } => ObjectChangedError::new_err(message),
        Core::Network { .. } | Core::UntrustedCertificate { .. } => NetworkError::new_err(message),
        Core::Throttled { .. } | Core::Http { .. } | Core::Protocol { .. } => {
            StoreError::new_err(message)
        }
        Core::Io { .. } => LocalFileError::new_err(message),
        _ => Error::new_err(message),
    }
}

/// A transfer task that panicked or was torn down: a bug, not a store failure.
pub fn task_failed(join: tokio::task::JoinError) -> PyErr {
    PyRuntimeError::new_err(format!("parabyte transfer task failed: {join}"))
}

/// Passes progress on, and keeps the first object's error as its Python exception: a
/// single-object download raises it (a missing key is a `FileNotFoundError`) where a
/// prefix download lists it in the summary.
pub struct FirstError {
    reporter: Arc<dyn Reporter>,
    error: Mutex<Option<PyErr>>,
}

impl std::fmt::Debug for FirstError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirstError").finish_non_exhaustive()
    }
}

impl FirstError {
    pub fn new(reporter: Arc<dyn Reporter>) -> Self {
        FirstError {
            reporter,
            error: Mutex::new(None),
        }
    }

    pub fn take(&self) -> Option<PyErr> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl Reporter for FirstError {
    fn object_queued(&self, size: Option<u64>) {
        self.reporter.object_queued(size);
    }

    fn size_discovered(&self, size: u64) {
        self.reporter.size_discovered(size);
    }

    fn bytes_transferred(&self, bytes: u64) {
        self.reporter.bytes_transferred(bytes);
    }

    fn bytes_skipped(&self, bytes: u64) {
        self.reporter.bytes_skipped(bytes);
    }

    fn object_finished(&self, key: &str, outcome: Result<u64, &parabyte::Error>) {
        if let Err(error) = outcome {
            let mut first = self.error.lock().unwrap_or_else(PoisonError::into_inner);
            first.get_or_insert_with(|| exception_for(error));
        }
        self.reporter.object_finished(key, outcome);
    }
}
