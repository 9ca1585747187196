//! `put_bytes`' data: any Python object with the buffer protocol (`bytes`, `bytearray`,
//! `memoryview`, a NumPy array) lent to the upload without a copy. The buffer stays
//! exported (and its object alive) until the last part that slices it has been sent.

use bytes::Bytes;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;

/// A held Python buffer, read as bytes.
struct Lent(PyBuffer<u8>);

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the buffer is C-contiguous (checked in `lend`) and stays exported while
        // `self.0` is held, so `len_bytes` bytes from `buf_ptr` are its memory. A caller
        // that writes to it during the upload sends bytes whose CRC the store refuses.
        unsafe { std::slice::from_raw_parts(self.0.buf_ptr().cast::<u8>(), self.0.len_bytes()) }
    }
}

/// `data`'s bytes, shared with the upload, not copied.
pub fn lend(data: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    let buffer = PyBuffer::<u8>::get(data)?;
    if !buffer.is_c_contiguous() {
        return Err(PyBufferError::new_err(
            "put_bytes needs contiguous bytes: pass bytes(data) or numpy.ascontiguousarray(data)",
        ));
    }
    Ok(Bytes::from_owner(Lent(buffer)))
}
