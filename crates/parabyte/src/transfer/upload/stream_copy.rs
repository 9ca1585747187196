//! Copies between stores that cannot copy inside themselves (the source on another
//! endpoint, region or account: `--source-endpoint-url`): ranged GETs of the source, pinned
//! to one version, feed the uploads of the same ranges as parts. Each part is held in
//! memory between its GET and its upload, under the uploader's memory budget, and never
//! touches the disk. Without a listed size, the first part's GET tells it: no probe.

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};

use super::writer::{Commit, Opening, Sent};
use super::{cut, whole_crc, CopyJob, Cut, Uploader, MAX_PART, MIN_PART};
use crate::checksum::{crc64nvme, Method};
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::ranges::ByteRange;
use crate::report::Reporter;
use crate::source::{Shape, Store, UploadedPart};
use crate::transfer::engine::Finished;
use crate::validator::Validator;

/// The first bytes of an object, and what their GET said of it.
struct First {
    size: u64,
    pinned: Option<Validator>,
    bytes: Bytes,
}

impl<S: Store<Object = ObjectUrl>> Uploader<S> {
    /// Copy `job.from` to `job.to` through parabyte, a part at a time.
    pub(super) async fn copy_streamed(
        &self,
        job: &CopyJob,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let object = ObjectUrl::S3(job.from.clone());
        let part_size = self.transfer.part_size.clamp(MIN_PART, MAX_PART);
        let first = match &job.known {
            Some((size, pinned)) => First {
                size: *size,
                pinned: pinned.clone(),
                bytes: Bytes::new(),
            },
            None => {
                let _memory = self.reserve(part_size).await;
                self.send(|| self.first_part(&object, part_size)).await?
            }
        };
        reporter.size_discovered(first.size);
        let size = first.size;
        let stored = match self.claim(&job.to, &job.options).await {
            Err(error) => Err(error),
            Ok(()) => match cut(size, part_size) {
                None => self.copy_whole(job, &object, first, reporter).await,
                Some(cut) => self.copy_in_parts(job, &object, cut, first, reporter).await,
            },
        };
        let source = job.from.to_string();
        let stored = stored.map(Into::into);
        self.ended(stored, size, &source, &job.to, &job.options, reporter)
    }

    /// One GET, one PUT.
    async fn copy_whole(
        &self,
        job: &CopyJob,
        object: &ObjectUrl,
        first: First,
        reporter: &dyn Reporter,
    ) -> Result<Option<Method>> {
        let _memory = self.reserve(first.size).await;
        let body = match first.bytes.len() as u64 == first.size {
            true => first.bytes,
            false => {
                let range = (first.size > 0).then(|| ByteRange {
                    start: 0,
                    end: first.size - 1,
                });
                self.send(|| self.fetch(object, range, first.size, first.pinned.as_ref()))
                    .await?
            }
        };
        let crc = crc64nvme(&body);
        let written = self
            .send(|| {
                self.store
                    .put(&job.to, body.clone().into(), crc, &job.options)
            })
            .await?;
        reporter.bytes_transferred(first.size);
        self.check_stored(&job.to, &written, crc)
    }

    /// A multipart upload whose parts are the source's ranges; aborted on any failure.
    async fn copy_in_parts(
        &self,
        job: &CopyJob,
        object: &ObjectUrl,
        cut: Cut,
        first: First,
        reporter: &dyn Reporter,
    ) -> Result<Option<Method>> {
        let (to, size, pinned) = (&job.to, first.size, first.pinned.as_ref());
        // The first part's bytes came with the size; later parts are fetched.
        let first_part = (first.bytes.len() as u64 == cut.part_size).then_some(first.bytes);
        let send = |upload_id: String| async move {
            let upload_id = upload_id.as_str();
            let parts: Vec<UploadedPart> = futures::stream::iter(1..=cut.parts)
                .map(|number| {
                    let first_part = first_part.clone().filter(|_| number == 1);
                    async move {
                        let start = (number - 1) * cut.part_size;
                        let length = cut.part_size.min(size - start);
                        let _memory = self.reserve(length).await;
                        let body = match first_part {
                            Some(bytes) => bytes,
                            None => {
                                let range = Some(ByteRange {
                                    start,
                                    end: start + length - 1,
                                });
                                self.send(|| self.fetch(object, range, length, pinned))
                                    .await?
                            }
                        };
                        let crc = crc64nvme(&body);
                        let part = self
                            .send(|| {
                                self.store.upload_part(
                                    to,
                                    upload_id,
                                    number as u32,
                                    body.clone().into(),
                                    crc,
                                )
                            })
                            .await?;
                        reporter.bytes_transferred(length);
                        Ok::<_, Error>(part)
                    }
                })
                .buffered(self.transfer.ranges_per_object.max(1))
                .try_collect()
                .await?;
            let whole = whole_crc(&parts, &cut.lengths(size));
            Ok(Sent {
                parts,
                check: Commit::Whole(whole),
            })
        };
        self.write_parts(to, &job.options, Opening::New, |_| false, send)
            .await
    }

    /// The object's first `part_size` bytes (all of it, if smaller), its size and version.
    async fn first_part(&self, object: &ObjectUrl, part_size: u64) -> Result<First> {
        let asked = ByteRange {
            start: 0,
            end: part_size - 1,
        };
        let fetched = self.store.get(object, Some(asked), None).await?;
        let (size, length) = match fetched.shape {
            Shape::Partial { range, total } if range.start == 0 => {
                (total, range.end + 1 - range.start)
            }
            Shape::Whole {
                length: Some(length),
            } => (length, length),
            Shape::Empty => (0, 0),
            _ => {
                return Err(Error::Protocol {
                    what: format!("GET {object}"),
                    detail: "the store named no size for the object".into(),
                })
            }
        };
        if length > part_size {
            return Err(Error::Protocol {
                what: format!("GET {object}"),
                detail: format!("{length} bytes answered a request for at most {part_size}"),
            });
        }
        let bytes = read_exactly(fetched.body, length, object).await?;
        Ok(First {
            size,
            pinned: fetched.validator,
            bytes,
        })
    }

    /// `length` bytes at `range` (none: the whole object) of the version `pinned` names.
    async fn fetch(
        &self,
        object: &ObjectUrl,
        range: Option<ByteRange>,
        length: u64,
        pinned: Option<&Validator>,
    ) -> Result<Bytes> {
        let fetched = self.store.get(object, range, pinned).await?;
        let fits = match (fetched.shape, range) {
            (Shape::Partial { range: got, .. }, Some(asked)) => got == asked,
            (Shape::Whole { length: got }, _) => got.is_none_or(|got| got == length),
            (Shape::Empty, _) => length == 0,
            _ => false,
        };
        if !fits {
            return Err(Error::Protocol {
                what: format!("GET {object}"),
                detail: format!("the answer is not the {length} bytes asked for"),
            });
        }
        read_exactly(fetched.body, length, object).await
    }
}

/// A body that must be `length` bytes: more or fewer is an answer cut short or garbled.
async fn read_exactly(
    mut body: crate::source::Body,
    length: u64,
    object: &ObjectUrl,
) -> Result<Bytes> {
    let mut bytes = BytesMut::with_capacity(length as usize);
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        if bytes.len() as u64 + chunk.len() as u64 > length {
            return Err(Error::Protocol {
                what: format!("GET {object}"),
                detail: format!("the body ran past the {length} bytes asked for"),
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    if bytes.len() as u64 != length {
        return Err(Error::Protocol {
            what: format!("GET {object}"),
            detail: format!("the body ended after {} of {length} bytes", bytes.len()),
        });
    }
    Ok(bytes.freeze())
}
