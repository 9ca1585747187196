//! One object copied inside the store, from one key to another: CopyObject up to 5 GiB,
//! else a multipart upload whose parts are UploadPartCopy requests sent in parallel, each
//! pinned to the source's version, the whole object's CRC64NVME combined from the parts'.
//! No byte of the object passes through parabyte.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use super::writer::{Commit, Opening, Sent};
use super::{cut, Uploader, MAX_PART};
use crate::checksum::{Crc, FullChecksum, Method, StoreChecksum};
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::ranges::ByteRange;
use crate::report::Reporter;
use crate::source::{Shape, Store, UploadedPart, WriteOptions, Written};
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
        let pinned = pinned.as_ref();
        let claimed = self.claim(&job.to, options).await;
        let written = match size <= self.copy_threshold {
            _ if claimed.is_err() => claimed.map(|()| None),
            true => match self
                .send(|| self.store.copy_object(&job.from, pinned, &job.to, options))
                .await
            {
                Ok(written) => Ok(self.copy_verified(&job.from, pinned, &written).await),
                Err(error) => Err(error),
            },
            false => self.copy_parts(job, size, pinned, reporter).await,
        };
        if written.is_ok() && size <= self.copy_threshold {
            reporter.bytes_transferred(size);
        }
        let source = job.from.to_string();
        let written = written.map(Into::into);
        self.ended(written, size, &source, &job.to, options, reporter)
    }

    /// Copy objects over `threshold` bytes in parts of at least `part` (S3 takes no
    /// object under 5 GiB that way; the in-memory store does).
    #[cfg(test)]
    pub(crate) fn copy_in_parts_over(&mut self, threshold: u64, part: u64) {
        self.copy_threshold = threshold;
        self.copy_part = part;
    }

    /// How a CopyObject's result is known to hold the source's bytes: its ETag is the MD5
    /// the source's pinned ETag is, or its CRC64NVME is the one the source keeps (one HEAD
    /// of the source). `None`: nothing compared them, so the copy is not verified and `mv`
    /// keeps its source.
    async fn copy_verified(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        written: &Written,
    ) -> Option<Method> {
        let copied_etag = written.etag.as_deref().map(Validator::from_stored);
        if let (Some(pinned), Some(copied)) = (pinned, &copied_etag) {
            if pinned.md5().is_some() && pinned.matches(copied) {
                return Some(Method::Md5);
            }
        }
        let copied = written.crc64nvme?;
        match self.stored_checksum(from, pinned).await {
            Some(StoreChecksum::Full(FullChecksum {
                algorithm: Crc::Crc64Nvme,
                value,
            })) if value == copied => Some(Method::Crc),
            _ => None,
        }
    }

    /// The part size of a copy in parts: the configured one, at least `copy_part`.
    pub(super) fn copy_part_size(&self) -> u64 {
        self.transfer.part_size.max(self.copy_part).min(MAX_PART)
    }

    /// The checksum the store keeps for `object` (of the version `pinned` names), by HEAD.
    async fn stored_checksum(
        &self,
        object: &S3Url,
        pinned: Option<&Validator>,
    ) -> Option<StoreChecksum> {
        let object = ObjectUrl::S3(object.clone());
        let described = self
            .send(|| self.store.describe(&object, pinned, None))
            .await
            .ok()??;
        described.checksum
    }

    /// A single key's size and version, from the first byte's GET (a listed key has them).
    pub(super) async fn size_of(&self, from: &S3Url) -> Result<(u64, Option<Validator>)> {
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
    /// One HEAD of the source first: its headers and metadata go with the new upload (only
    /// a one-request copy keeps them by itself), and its checksum is compared with the
    /// copy's once complete. Stores give a copy in parts a checksum of their own making,
    /// so that often cannot say the copy is verified (`None`); `mv` then keeps the source.
    async fn copy_parts(
        &self,
        job: &CopyJob,
        size: u64,
        pinned: Option<&Validator>,
        reporter: &dyn Reporter,
    ) -> Result<Option<Method>> {
        let object = ObjectUrl::S3(job.from.clone());
        let source = self
            .send(|| self.store.describe(&object, pinned, None))
            .await?
            .unwrap_or_default();
        let Some(cut) = cut(size, self.copy_part_size()) else {
            return Err(Error::InvalidInput(format!(
                "{}: nothing to copy in parts",
                job.from
            )));
        };
        let to = &job.to;
        let options = WriteOptions {
            without_checksum: true,
            ..job.options.keeping(&source.headers)
        };
        let source_checksum = source.checksum;
        let send = |upload_id: String| async move {
            let upload_id = upload_id.as_str();
            let parts: Vec<UploadedPart> = futures::stream::iter(1..=cut.parts)
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
                    Ok::<_, Error>(part)
                })
                .buffered(self.transfer.ranges_per_object.max(1))
                .try_collect()
                .await?;
            // No byte passed through parabyte, and the parts' CRCs are not relied on: the
            // copy is checked against what the store keeps for the source.
            Ok(Sent {
                parts,
                check: Commit::SameAs(source_checksum),
            })
        };
        self.write_parts(to, &options, Opening::New, |_| false, send)
            .await
    }
}
