//! `get_bytes`' result: the engine's buffer handed to Python as it is. `Buffer` exposes the
//! Rust `Vec` through the buffer protocol, so `memoryview(buf)`, `numpy.frombuffer(buf)`
//! and file writes read it in place; `bytes(buf)` makes the one copy a caller asks for.
//! Otherwise it reads as `bytes` does: equal to the same bytes, indexed and sliced,
//! decoded, hashed, pickled.

use std::ffi::c_int;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyIndexError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PySlice, PyTuple};

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
    /// A copy of any bytes-like object, as pickle rebuilds one.
    #[new]
    fn new(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Buffer> {
        Ok(Buffer {
            data: PyBuffer::<u8>::get(data)?.to_vec(py)?,
        })
    }

    fn __len__(&self) -> usize {
        self.data.len()
    }

    /// Equal to any bytes-like object with the same bytes (`buf == b"..."`).
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> bool {
        if let Ok(other) = other.cast::<Buffer>() {
            return self.data == other.get().data;
        }
        match PyBuffer::<u8>::get(other) {
            Ok(view) => {
                view.len_bytes() == self.data.len()
                    && view.to_vec(py).is_ok_and(|bytes| bytes == self.data)
            }
            Err(_) => false,
        }
    }

    /// As `bytes` hashes: equal values, equal hashes.
    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        PyBytes::new(py, &self.data).hash()
    }

    /// `buf[i]` is an int, `buf[a:b]` a copy as `bytes`, as for `bytes`.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(slice) = key.cast::<PySlice>() {
            return PyBytes::new(py, &self.data).as_any().get_item(slice);
        }
        let index: isize = key.extract()?;
        let length = self.data.len() as isize;
        let at = if index < 0 { index + length } else { index };
        match usize::try_from(at).ok().and_then(|at| self.data.get(at)) {
            Some(byte) => Ok(byte.into_pyobject(py)?.into_any()),
            None => Err(PyIndexError::new_err("index out of range")),
        }
    }

    /// The bytes decoded, as `bytes.decode` does.
    #[pyo3(signature = (encoding = "utf-8", errors = "strict"))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        encoding: &str,
        errors: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        PyBytes::new(py, &self.data).call_method1("decode", (encoding, errors))
    }

    /// Pickled as its bytes, rebuilt as a `Buffer` (a `multiprocessing` pool can return it).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let bytes = PyBytes::new(py, &slf.get().data);
        PyTuple::new(
            py,
            [
                slf.get_type().into_any(),
                PyTuple::new(py, [bytes])?.into_any(),
            ],
        )
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
