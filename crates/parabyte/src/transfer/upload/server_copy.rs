//! One object copied inside the store, from one key to another: CopyObject up to 5 GiB,
//! else a multipart upload whose parts are UploadPartCopy requests sent in parallel, each
//! pinned to the source's version, the whole object's CRC64NVME combined from the parts'.
//! No byte of the object passes through parabyte.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use super::open::OpenUpload;
use super::{cut, Uploader, MAX_PART};
use crate::checksum::Method;
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::ranges::ByteRange;
use crate::report::Reporter;
use crate::source::{Shape, Store, UploadedPart, WriteOptions};
use crate::transfer::engine::Finished;
use crate::validator::Validator;

/// Parts of a copy in parts are at least this large: they cost one request each and
/// carry no bytes through parabyte, so fewer is better.
pub(super) const COPY_PART: u64 = 512 * 1024 * 1024;

/// One object to copy inside the store (or through parabyte, between stores that cannot).
#[derive(Debug)]
pub(crate) struct CopyJob {
    pub from: S3Url,
    pub to: S3Url,
    /// Its size and ETag, when a listing gave them.
    pub known: Option<(u64, Option<Validator>)>,
    /// When the listing says it was last written (what `sync` compares).
    pub modified: Option<std::time::SystemTime>,
    pub options: Arc<WriteOptions>,
}

impl<S: Store<Object = ObjectUrl>> Uploader<S> {
    /// Copy `job.from` to `job.to` inside the store.
    pub(crate) async fn copy(&self, job: &CopyJob, reporter: &dyn Reporter) -> Result<Finished> {
        if !self.store.copies_inside() {
            return self.copy_streamed(job, reporter).await;
        }
        let (size, pinned) = match &job.known {
            Some(known) => known.clone(),
            None => self.size_of(&job.from).await?,
        };
        let options = &job.options;
        let written = match size <= self.copy_threshold {
            true => self
                .send(|| self.store.copy_object(&job.from, &job.to, options))
                .await
                .map(|written| written.crc64nvme.map(|_| Method::Crc)),
            false => self.copy_parts(job, size, pinned.as_ref(), reporter).await,
        };
        if written.is_ok() && size <= self.copy_threshold {
            reporter.bytes_transferred(size);
        }
        let source = job.from.to_string();
        self.ended(written, size, &source, &job.to, options, reporter)
    }

    /// Copy objects over `threshold` bytes in parts of at least `part` (S3 takes no
    /// object under 5 GiB that way; the in-memory store does).
    #[cfg(test)]
    pub(crate) fn copy_in_parts_over(&mut self, threshold: u64, part: u64) {
        self.copy_threshold = threshold;
        self.copy_part = part;
    }

    /// A single key's size and version, from the first byte's GET (a listed key has them).
    async fn size_of(&self, from: &S3Url) -> Result<(u64, Option<Validator>)> {
        let object = ObjectUrl::S3(from.clone());
        let first = ByteRange { start: 0, end: 0 };
        let fetched = self
            .send(|| self.store.get(&object, Some(first), None))
            .await?;
        let size = match fetched.shape {
            Shape::Partial { total, .. } => total,
            Shape::Whole {
                length: Some(length),
            } => length,
            Shape::Empty => 0,
            Shape::Whole { length: None } => {
                return Err(Error::Protocol {
                    what: format!("GET {from}"),
                    detail: "the store named no size for the object".into(),
                })
            }
        };
        Ok((size, fetched.validator))
    }

    /// A copy in parts, each an UploadPartCopy of the source's version; aborted on failure.
    async fn copy_parts(
        &self,
        job: &CopyJob,
        size: u64,
        pinned: Option<&Validator>,
        reporter: &dyn Reporter,
    ) -> Result<Option<Method>> {
        let Some(cut) = cut(
            size,
            self.transfer.part_size.max(self.copy_part).min(MAX_PART),
        ) else {
            return Err(Error::InvalidInput(format!(
                "{}: nothing to copy in parts",
                job.from
            )));
        };
        let to = &job.to;
        let options = WriteOptions {
            without_checksum: true,
            ..WriteOptions::clone(&job.options)
        };
        let upload_id = self.send(|| self.store.create_upload(to, &options)).await?;
        let upload = OpenUpload::new(self.store.clone(), to.clone(), upload_id, false);
        let upload_id = upload.id.as_str();
        let copied: Result<Vec<UploadedPart>> = futures::stream::iter(1..=cut.parts)
            .map(|number| async move {
                let start = (number - 1) * cut.part_size;
                let end = (start + cut.part_size).min(size) - 1;
                let range = ByteRange { start, end };
                let part = self
                    .send(|| {
                        self.store.upload_part_copy(
                            &job.from,
                            pinned,
                            range,
                            to,
                            upload_id,
                            number as u32,
                        )
                    })
                    .await?;
                reporter.bytes_transferred(end + 1 - start);
                Ok(part)
            })
            .buffered(self.transfer.ranges_per_object.max(1))
            .try_collect()
            .await;
        // No byte passed through parabyte, and the parts' CRCs are not relied on: the
        // object is checked by the store alone (each part copy pinned to one version).
        let completed = match copied {
            Ok(parts) => self
                .send(|| {
                    self.store
                        .complete_upload(to, upload_id, &parts, 0, &options)
                })
                .await
                .map(|_| None),
            Err(error) => Err(error),
        };
        match &completed {
            Ok(_) => upload.completed(),
            Err(_) => upload.abort().await,
        }
        completed
    }
}
