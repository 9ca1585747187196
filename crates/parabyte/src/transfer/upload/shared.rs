//! One multipart upload whose parts several processes send: a file larger than a task's
//! share of a cluster's upload, or an object copied in UploadPartCopy parts by several
//! workers. It is opened once (by the cluster's driver), each range of its parts is sent
//! by a task that may run twice (a worker lost, Dask's retry) and keeps the parts the store
//! holds already when they are the same bytes, and it is completed once, through the one
//! commit check every multipart writer passes (`writer.rs`): a file's by its FULL_OBJECT
//! CRC64NVME, a copy's by what the store keeps for the source. Every task first checks the
//! source is what it was when the upload was opened (a file's size and modification time,
//! an object's ETag), so no upload is ever made of two versions.

use std::ops::RangeInclusive;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use futures::{StreamExt, TryStreamExt};

use super::content::Content;
use super::{cut, file_options, whole_crc, Cut, Parts, Uploader};
use crate::disk::source_file::{changed, SourceFile};
use crate::disk::upload_record::UploadRecord;
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::ranges::ByteRange;
use crate::report::Reporter;
use crate::source::{ListedPart, Store, UploadedPart, WriteOptions};
use crate::transfer::engine::Finished;
use crate::validator::Validator;

/// A multipart upload opened for several processes to send its parts: what each of them
/// needs to send a range of its parts, or to complete it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedUpload {
    /// Where it goes.
    pub to: S3Url,
    /// The store's name for it.
    pub upload_id: String,
    /// The source's size.
    pub size: u64,
    /// How it is cut: parts of `part_size`, the last shorter.
    pub part_size: u64,
    /// How many parts.
    pub parts: u32,
    /// What the source was when the upload was opened: a file's size and modification
    /// time (`SIZE:NANOSECONDS`), an object's ETag. Every task checks it is still that.
    pub version: String,
}

impl SharedUpload {
    /// The bytes of the parts `numbers` (which are parts of it).
    pub(crate) fn bytes_of(&self, numbers: &RangeInclusive<u32>) -> u64 {
        let start = u64::from(numbers.start().saturating_sub(1)) * self.part_size;
        let end = (u64::from(*numbers.end()) * self.part_size).min(self.size);
        end.saturating_sub(start)
    }

    fn cut(&self) -> Cut {
        Cut {
            part_size: self.part_size,
            parts: u64::from(self.parts),
        }
    }

    /// The part numbers in order, each once: exactly those the upload is cut into.
    fn in_order(&self, mut parts: Vec<UploadedPart>) -> Result<Vec<UploadedPart>> {
        parts.sort_by_key(|part| part.number);
        parts.dedup_by_key(|part| part.number);
        let numbered = parts.iter().map(|part| part.number).eq(1..=self.parts);
        match numbered {
            true => Ok(parts),
            false => Err(Error::InvalidInput(format!(
                "{}: {} of its {} parts were given to complete it; send the others first",
                self.to,
                parts.len(),
                self.parts
            ))),
        }
    }

    /// `numbers` when they are parts of this upload.
    fn numbers(&self, numbers: RangeInclusive<u32>) -> Result<RangeInclusive<u64>> {
        let (first, last) = numbers.into_inner();
        if first == 0 || last > self.parts || first > last {
            return Err(Error::InvalidInput(format!(
                "{}: parts {first}..={last} are not parts of its 1..={}",
                self.to, self.parts
            )));
        }
        Ok(u64::from(first)..=u64::from(last))
    }
}

impl<S: Store<Object = ObjectUrl>> Uploader<S> {
    /// Open the upload of the file `from` to `to` in parts, for other processes to send;
    /// one an earlier run of the same job opened (its record) is taken over when the file
    /// is what it was then. `--no-clobber` looks at the key first.
    pub(crate) async fn open_shared_file(
        &self,
        from: &Path,
        to: &S3Url,
        options: &WriteOptions,
    ) -> Result<SharedUpload> {
        let file = SourceFile::open(from).await?;
        let size = file.opened.size;
        let Some(cut) = cut(size, self.transfer.part_size) else {
            return Err(Error::InvalidInput(format!(
                "{}: {size} bytes go up in one PUT, not in parts; upload it whole",
                from.display()
            )));
        };
        let options = file_options(&file, options);
        self.claim(to, &options).await?;
        let version = file.opened.version();
        let record = UploadRecord::new(from, &to.to_string(), cut.part_size);
        let earlier = record.as_ref().and_then(|record| record.read(&file.opened));
        let upload_id = match self.taken_over(to, earlier).await {
            Some(id) => id,
            None => {
                record.iter().for_each(UploadRecord::remove);
                let id = self.send(|| self.store.create_upload(to, &options)).await?;
                // Best effort: without the record the job still works, it only cannot resume.
                if let Some(record) = &record {
                    let _ = record.write(&file.opened, &id);
                }
                id
            }
        };
        Ok(SharedUpload {
            to: to.clone(),
            upload_id,
            size,
            part_size: cut.part_size,
            parts: cut.parts as u32,
            version,
        })
    }

    /// The upload an earlier run recorded, when it was of the same bytes and the store
    /// still holds it; one of other bytes is aborted.
    async fn taken_over(&self, to: &S3Url, earlier: Option<(String, bool)>) -> Option<String> {
        let (id, same_file) = earlier?;
        if same_file {
            if let Ok(Some(_)) = self.send(|| self.store.list_parts(to, &id)).await {
                return Some(id);
            }
        }
        let _ = self.store.abort_upload(to, &id).await;
        None
    }

    /// Send the parts `numbers` of `upload` from the file `from`, keeping those the store
    /// holds of these very bytes (a task run again after its worker was lost). Gives the
    /// parts, and the bytes kept rather than sent.
    pub(crate) async fn send_shared_parts(
        &self,
        from: &Path,
        upload: &SharedUpload,
        numbers: RangeInclusive<u32>,
        reporter: &dyn Reporter,
    ) -> Result<(Vec<UploadedPart>, u64)> {
        let numbers = upload.numbers(numbers)?;
        let content = self.same_file(from, upload).await?;
        let Some(stored) = self.stored_parts(upload).await? else {
            // Completed already (its parts were lost with a worker and asked for again,
            // after the commit): their CRCs are all the commit's check needs.
            let parts = self.part_crcs(&content, upload, numbers).await?;
            return Ok((parts, 0));
        };
        let resumed = AtomicU64::new(0);
        let parts = Parts {
            upload_id: &upload.upload_id,
            cut: upload.cut(),
            stored: &stored,
            resumed: &resumed,
        };
        let sent = self
            .send_numbered(&content, &upload.to, &parts, numbers, reporter)
            .await?;
        content.unchanged().await?;
        Ok((sent, resumed.into_inner()))
    }

    /// Complete `upload` of the file `from` with `parts` (every one, from the tasks that
    /// sent them) and check it by its whole CRC64NVME: the one commit check.
    pub(crate) async fn commit_shared_file(
        &self,
        from: &Path,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let parts = upload.in_order(parts)?;
        let content = self.same_file(from, upload).await?;
        let Content::File(file) = &content else {
            unreachable!("same_file opens a file")
        };
        let options = file_options(file, options);
        let whole = whole_crc(&parts, &upload.cut().lengths(upload.size));
        content.unchanged().await?;
        let stored = self
            .commit(&upload.to, &upload.upload_id, &parts, whole, &options)
            .await;
        let source = from.display().to_string();
        let stored = stored.map(Into::into);
        self.ended(stored, upload.size, &source, &upload.to, &options, reporter)
    }

    /// Open the copy of `from` (of `size` bytes and the ETag `etag`, as its listing gave
    /// them, or found by one GET of its first byte) to `to` in UploadPartCopy parts.
    pub(crate) async fn open_shared_copy(
        &self,
        from: &S3Url,
        to: &S3Url,
        known: Option<(u64, String)>,
        options: &WriteOptions,
    ) -> Result<SharedUpload> {
        let (size, pinned) = match known {
            Some((size, etag)) => (size, Validator::ETag(etag)),
            None => match self.size_of(from).await? {
                (size, Some(pinned @ Validator::ETag(_))) => (size, pinned),
                _ => {
                    return Err(Error::InvalidInput(format!(
                        "{from}: the store named no ETag for it, so its parts cannot be \
                         pinned to one version; copy it whole"
                    )))
                }
            },
        };
        let Some(cut) = cut(size, self.copy_part_size()) else {
            return Err(Error::InvalidInput(format!(
                "{from}: {size} bytes are copied in one request, not in parts"
            )));
        };
        let object = ObjectUrl::S3(from.clone());
        let source = self
            .send(|| self.store.describe(&object, Some(&pinned), None))
            .await?
            .unwrap_or_default();
        let options = WriteOptions {
            without_checksum: true,
            ..options.keeping(&source.headers)
        };
        self.claim(to, &options).await?;
        let upload_id = self.send(|| self.store.create_upload(to, &options)).await?;
        let Validator::ETag(version) = pinned else {
            unreachable!("pinned to an ETag above")
        };
        Ok(SharedUpload {
            to: to.clone(),
            upload_id,
            size,
            part_size: cut.part_size,
            parts: cut.parts as u32,
            version,
        })
    }

    /// Copy the parts `numbers` of `upload` from `from`, each pinned to the version it was
    /// opened of; a part the store holds already at its size is kept (a task run again).
    /// Gives the parts, and the bytes kept rather than copied.
    pub(crate) async fn copy_shared_parts(
        &self,
        from: &S3Url,
        upload: &SharedUpload,
        numbers: RangeInclusive<u32>,
        reporter: &dyn Reporter,
    ) -> Result<(Vec<UploadedPart>, u64)> {
        let numbers = upload.numbers(numbers)?;
        let Some(stored) = self.stored_parts(upload).await? else {
            // Completed already: the commit finds the copy at its key.
            let gone = numbers.map(|number| UploadedPart {
                number: number as u32,
                etag: String::new(),
                crc64nvme: 0,
            });
            return Ok((gone.collect(), 0));
        };
        let pinned = Validator::ETag(upload.version.clone());
        let resumed = AtomicU64::new(0);
        let (pinned, stored, kept_bytes) = (&pinned, &stored, &resumed);
        let cut = upload.cut();
        let parts = futures::stream::iter(numbers)
            .map(|number| async move {
                let start = (number - 1) * cut.part_size;
                let end = (start + cut.part_size).min(upload.size) - 1;
                let length = end + 1 - start;
                // Copied before from the same pinned version: the same bytes.
                let kept = stored
                    .iter()
                    .find(|part| u64::from(part.number) == number && part.size == length);
                if let Some(kept) = kept {
                    kept_bytes.fetch_add(length, Relaxed);
                    reporter.bytes_resumed(length);
                    return Ok(UploadedPart {
                        number: kept.number,
                        etag: kept.etag.clone(),
                        crc64nvme: 0,
                    });
                }
                let range = ByteRange { start, end };
                let part = self
                    .send(|| {
                        self.store.upload_part_copy(
                            from,
                            Some(pinned),
                            range,
                            &upload.to,
                            &upload.upload_id,
                            number as u32,
                        )
                    })
                    .await?;
                reporter.bytes_transferred(length);
                Ok::<_, Error>(part)
            })
            .buffered(self.transfer.ranges_per_object.max(1))
            .try_collect()
            .await?;
        Ok((parts, resumed.into_inner()))
    }

    /// Complete the copy `upload` of `from` with `parts` and compare what the store keeps
    /// for it with what it keeps for the source (one HEAD of each): the commit check of a
    /// copy in parts.
    pub(crate) async fn commit_shared_copy(
        &self,
        from: &S3Url,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let parts = upload.in_order(parts)?;
        let pinned = Validator::ETag(upload.version.clone());
        let object = ObjectUrl::S3(from.clone());
        let source = self
            .send(|| self.store.describe(&object, Some(&pinned), None))
            .await?
            .unwrap_or_default();
        let options = WriteOptions {
            without_checksum: true,
            ..WriteOptions::default()
        };
        let stored = self
            .commit_unchecked(
                &upload.to,
                &upload.upload_id,
                &parts,
                source.checksum,
                &options,
            )
            .await;
        let stored = stored.map(Into::into);
        self.ended(
            stored,
            upload.size,
            &from.to_string(),
            &upload.to,
            &options,
            reporter,
        )
    }

    /// The file `from`, when it is still what it was when `upload` was opened.
    async fn same_file(&self, from: &Path, upload: &SharedUpload) -> Result<Content> {
        let file = SourceFile::open(from).await?;
        if file.opened.version() != upload.version {
            return Err(changed(
                from,
                "its size or modification time moved since its upload began",
            ));
        }
        Ok(Content::File(file))
    }

    /// The parts the store holds of `upload`; `None` when it holds no such upload any more
    /// (completed, aborted or expired): the commit then tells which by the key.
    async fn stored_parts(&self, upload: &SharedUpload) -> Result<Option<Vec<ListedPart>>> {
        self.send(|| self.store.list_parts(&upload.to, &upload.upload_id))
            .await
    }

    /// The parts `numbers` of a file's upload as the commit checks them, read for their
    /// CRC64NVMEs and not sent.
    async fn part_crcs(
        &self,
        content: &Content,
        upload: &SharedUpload,
        numbers: RangeInclusive<u64>,
    ) -> Result<Vec<UploadedPart>> {
        let mut parts = Vec::new();
        for number in numbers {
            let offset = (number - 1) * upload.part_size;
            let length = upload.part_size.min(upload.size - offset);
            let (_, crc) = content.body_at(offset, length).await?;
            parts.push(UploadedPart {
                number: number as u32,
                etag: String::new(),
                crc64nvme: crc,
            });
        }
        Ok(parts)
    }
}
