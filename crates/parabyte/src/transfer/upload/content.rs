//! What an upload reads its bytes from: a local file (read at offsets, checked unchanged
//! at the end) or bytes already in memory (sliced, never copied).

use std::sync::Arc;

use bytes::Bytes;

use crate::checksum::crc64nvme;
use crate::disk::source_file::{SourceFile, Stamp};
use crate::disk::upload_record::UploadRecord;
use crate::error::Result;
use crate::location::S3Url;
use crate::source::WriteBody;

/// A file's bodies this large or larger are streamed as they are sent, after a pass that
/// reads them for their CRC64NVME (from the page cache, the second time): memory holds a
/// few chunks of each rather than whole parts. Smaller ones are read once, into memory.
const STREAMED: u64 = 1024 * 1024;

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

    /// Whether a body of `length` takes memory of its own until it is sent: a small part of
    /// a file does; a streamed one holds only chunks, and a buffer's bytes are there.
    pub(super) fn reads_into_memory(&self, length: u64) -> bool {
        matches!(self, Content::File(_)) && length < STREAMED
    }

    /// Whether a body of `length` is streamed from a file as it is sent.
    pub(super) fn streams(&self, length: u64) -> bool {
        matches!(self, Content::File(_)) && length >= STREAMED
    }

    /// The body of `length` bytes from `offset`, and their CRC64NVME.
    pub(super) async fn body_at(&self, offset: u64, length: u64) -> Result<(WriteBody, u64)> {
        let bytes = match self {
            Content::Memory(bytes) => bytes.slice(offset as usize..(offset + length) as usize),
            Content::File(file) if length < STREAMED => {
                file.read_at(offset, length as usize).await?
            }
            Content::File(file) => {
                let crc = file.crc_at(offset, length).await?;
                let file = file.clone();
                let open = Arc::new(move || -> crate::source::Body {
                    Box::pin(file.stream(offset, length, crc))
                });
                return Ok((WriteBody::Streamed { length, open }, crc));
            }
        };
        let crc = crc64nvme(&bytes);
        Ok((bytes.into(), crc))
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
