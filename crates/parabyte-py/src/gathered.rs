//! `get_bytes_many`' result: one entry per object asked for, in the order asked. What a
//! failure becomes is the caller's choice (`on_error`): the call raises it, or its entry
//! holds the exception and the others arrive as usual.

use futures::{Stream, StreamExt, TryStreamExt};
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::IntoPyObjectExt;

use crate::buffer::Buffer;
use crate::errors::{to_py, InvalidInputError};

/// What a failed object does to the call.
#[derive(Debug, Clone, Copy)]
pub enum OnError {
    /// The first failure, in the order asked, is the call's; the fetches still running stop.
    Raise,
    /// Each failure takes its object's place in the list; every other object is fetched.
    Return,
}

impl OnError {
    /// `on_error=` as given, or the error that says what it takes.
    pub fn parse(given: &str) -> PyResult<OnError> {
        match given {
            "raise" => Ok(OnError::Raise),
            "return" => Ok(OnError::Return),
            other => Err(InvalidInputError::new_err(format!(
                "on_error={other:?}: give \"raise\" (the first failure raises) or \"return\" \
                 (a failure takes its object's place in the list)"
            ))),
        }
    }
}

/// The objects' buffers, or in `OnError::Return` their exceptions in the failures' places.
pub struct Gathered(Vec<Result<Buffer, PyErr>>);

impl Gathered {
    /// Drain `fetched` (one result per object, in order) as `on_error` says.
    pub async fn collect(
        fetched: impl Stream<Item = parabyte::Result<Vec<u8>>>,
        on_error: OnError,
    ) -> PyResult<Gathered> {
        let entries = match on_error {
            OnError::Raise => fetched
                .map_ok(|bytes| Ok(Buffer::from(bytes)))
                .try_collect()
                .await
                .map_err(to_py)?,
            OnError::Return => {
                fetched
                    .map(|outcome| outcome.map(Buffer::from).map_err(to_py))
                    .collect()
                    .await
            }
        };
        Ok(Gathered(entries))
    }
}

impl<'py> IntoPyObject<'py> for Gathered {
    type Target = PyList;
    type Output = Bound<'py, PyList>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let entries = self
            .0
            .into_iter()
            .map(|entry| match entry {
                Ok(buffer) => buffer.into_bound_py_any(py),
                Err(error) => Ok(error.into_value(py).into_any().into_bound(py)),
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, entries)
    }
}
