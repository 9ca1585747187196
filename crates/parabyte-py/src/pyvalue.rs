//! What makes a result class behave like a Python value: a repr in Python's own syntax,
//! pickling and `to_dict()`. Each class lists its fields once, as a dict of keyword
//! arguments its constructor takes back.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

/// `Name(field=repr(value), ...)`, the way a dataclass shows itself.
pub fn repr(name: &str, fields: &Bound<'_, PyDict>) -> PyResult<String> {
    let shown = fields
        .iter()
        .map(|(field, value)| Ok(format!("{field}={}", value.repr()?)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(format!("{name}({})", shown.join(", ")))
}

/// `__reduce__`: rebuild `value` by calling its class with `fields` as keywords.
pub fn reduce<'py>(
    value: &Bound<'py, PyAny>,
    fields: Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = value.py();
    // Taken from the module, so pickle finds it by name.
    let restore = py.import("parabyte._native")?.getattr("_restore")?;
    let arguments = PyTuple::new(py, [value.get_type().into_any(), fields.into_any()])?;
    PyTuple::new(py, [restore, arguments.into_any()])
}

/// Unpickling: `cls(**fields)`.
#[pyfunction]
#[pyo3(name = "_restore")]
pub fn restore<'py>(
    cls: &Bound<'py, PyType>,
    fields: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    cls.call((), Some(fields))
}
