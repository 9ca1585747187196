//! What an upload reads its bytes from: a local file (read at offsets, checked unchanged
//! at the end) or bytes already in memory (sliced, never copied).

use bytes::Bytes;

use crate::disk::source_file::{SourceFile, Stamp};
use crate::disk::upload_record::UploadRecord;
use crate::error::Result;
use crate::location::S3Url;

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

    /// Where an upload of a file in parts of `part_size` to `to` is recorded, so that
    /// another run may resume it; bytes in memory are gone after the run.
    pub(super) fn record(&self, to: &S3Url, part_size: u64) -> Option<UploadRecord> {
        match self {
            Content::File(file) => UploadRecord::new(file.path(), &to.to_string(), part_size),
            Content::Memory(_) => None,
        }
    }

    /// What a file was when opened, for its upload's record.
    pub(super) fn stamp(&self) -> Option<&Stamp> {
        match self {
            Content::File(file) => Some(&file.opened),
            Content::Memory(_) => None,
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
