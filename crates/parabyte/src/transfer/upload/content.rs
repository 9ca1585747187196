//! What an upload reads its bytes from: a local file (read at offsets, checked unchanged
//! at the end) or bytes already in memory (sliced, never copied).

use bytes::Bytes;

use crate::disk::source_file::SourceFile;
use crate::error::Result;

pub(super) enum Content {
    File(SourceFile),
    Memory(Bytes),
}

impl Content {
    pub(super) fn size(&self) -> u64 {
        match self {
            Content::File(file) => file.opened.size,
            Content::Memory(bytes) => bytes.len() as u64,
        }
    }

    /// Whether reading takes memory of its own (a file's bytes do; a buffer's are there).
    pub(super) fn reads_into_memory(&self) -> bool {
        matches!(self, Content::File(_))
    }

    pub(super) async fn read_at(&self, offset: u64, length: u64) -> Result<Bytes> {
        match self {
            Content::File(file) => file.read_at(offset, length as usize).await,
            Content::Memory(bytes) => Ok(bytes.slice(offset as usize..(offset + length) as usize)),
        }
    }

    /// Fails when a file changed since it was opened; a buffer cannot.
    pub(super) async fn unchanged(&self) -> Result<()> {
        match self {
            Content::File(file) => file.unchanged().await,
            Content::Memory(_) => Ok(()),
        }
    }
}
