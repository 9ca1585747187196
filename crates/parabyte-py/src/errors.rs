//! Core errors as Python exceptions. The classes live in `parabyte/exceptions.py`, where a
//! class can also derive from `FileNotFoundError` or `PermissionError`; this is the one
//! place a core error kind picks its class.

use std::borrow::Borrow;

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

/// The Python exception for a core error (owned, or a failure's), carrying its full message.
pub fn to_py(error: impl Borrow<parabyte::Error>) -> PyErr {
    use parabyte::Error as Core;
    let error = error.borrow();
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
