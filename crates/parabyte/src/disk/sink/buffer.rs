//! Bytes kept in memory: a small object gathered whole before its one write, or the
//! caller's own buffer. Positioned writes go in, and `ReadAt` reads them back out.

use std::io;
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Reads written bytes back: fills the buffer from the offset, exactly.
pub(crate) type ReadAt<'a> = dyn Fn(u64, &mut [u8]) -> io::Result<()> + 'a;

pub(super) fn read_buffer<T>(
    buffer: &Mutex<Vec<u8>>,
    work: impl FnOnce(&ReadAt<'_>) -> io::Result<T>,
) -> Result<T> {
    let data = buffer.lock().expect("sink buffer poisoned");
    let read = |at: u64, into: &mut [u8]| {
        let bytes = usize::try_from(at)
            .ok()
            .and_then(|start| data.get(start..start.checked_add(into.len())?))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        into.copy_from_slice(bytes);
        Ok(())
    };
    work(&read).map_err(|e| Error::io("cannot read back", "the memory buffer", e))
}

pub(super) fn write_into(buffer: &Mutex<Vec<u8>>, data: &[u8], offset: u64) -> Result<()> {
    let mut buffer = buffer.lock().expect("sink buffer poisoned");
    let end = offset as usize + data.len();
    if buffer.len() < end {
        buffer.resize(end, 0);
    }
    buffer[offset as usize..end].copy_from_slice(data);
    Ok(())
}
