//! `get_bytes`' result: the engine's buffer handed to Python as it is. `Buffer` exposes the
//! Rust `Vec` through the buffer protocol, so `memoryview(buf)`, `numpy.frombuffer(buf)`
//! and file writes read it in place; `bytes(buf)` makes the one copy a caller asks for.

use std::ffi::c_int;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// An object's bytes, read-only, without a copy.
#[pyclass(frozen, module = "parabyte")]
#[derive(Debug)]
pub struct Buffer {
    data: Vec<u8>,
}

impl From<Vec<u8>> for Buffer {
    fn from(data: Vec<u8>) -> Self {
        Buffer { data }
    }
}

#[pymethods]
impl Buffer {
    fn __len__(&self) -> usize {
        self.data.len()
    }

    /// A copy as `bytes`.
    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.data)
    }

    fn __repr__(&self) -> String {
        format!("<parabyte.Buffer of {} bytes>", self.data.len())
    }

    /// The frozen `Vec` never moves or changes, so views of it stay valid while this object
    /// lives, which every view keeps alive.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let data = &slf.get().data;
        let length = ffi::Py_ssize_t::try_from(data.len())
            .map_err(|_| PyBufferError::new_err("buffer too large"))?;
        // SAFETY: `view` comes from Python; FillInfo takes a new reference to `slf`, which
        // keeps `data` alive until the view is released, and refuses writable requests.
        let filled = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                data.as_ptr().cast_mut().cast(),
                length,
                1,
                flags,
            )
        };
        if filled == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}
