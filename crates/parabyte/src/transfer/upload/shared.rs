//! One multipart upload whose parts several processes send: a file larger than a task's
//! share of a cluster's upload, or an object copied in UploadPartCopy parts by several
//! workers. It is opened once (by the cluster's driver), each range of its parts is sent
//! by a task that may run twice (a worker lost, Dask's retry) and keeps the parts the store
//! holds already when they are the same bytes, and it is completed once, through the one
//! commit check every multipart writer passes (`writer.rs`): a file's by its FULL_OBJECT
//! CRC64NVME, a copy's by what the store keeps for the source. Every task first checks the
//! source is what it was when the upload was opened (a file's size and modification time,
//! an object's ETag), so no upload is ever made of two versions.

use std::fmt;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use futures::{StreamExt, TryStreamExt};

use super::content::Content;
use super::{cut, file_options, whole_crc, Cut, Parts, Uploader};
use crate::checksum::Method;
use crate::disk::source_file::{changed, SourceFile};
use crate::disk::upload_record::UploadRecord;
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::ranges::ByteRange;
use crate::report::Reporter;
use crate::source::{Described, ListedPart, Store, UploadedPart, WriteOptions};
use crate::transfer::engine::Finished;
use crate::validator::Validator;

/// What a shared upload is made of: a local file's bytes, or an object of the same store
/// copied in UploadPartCopy parts. Each step of the upload takes it; only where the two
/// really differ does the step look which it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedSource {
    /// A local file every task can read.
    File(PathBuf),
    /// An object copied inside the store.
    Copy {
        /// The object.
        object: S3Url,
        /// Its size and ETag, when a listing gave them: only opening needs them, else one
        /// GET of its first byte finds them.
        listed: Option<(u64, String)>,
    },
}

impl fmt::Display for SharedSource {
    /// The source as summaries and failures name it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SharedSource::File(path) => write!(f, "{}", path.display()),
            SharedSource::Copy { object, .. } => write!(f, "{object}"),
        }
    }
}

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
    fn new(to: &S3Url, upload_id: String, size: u64, cut: Cut, version: String) -> Self {
        SharedUpload {
            to: to.clone(),
            upload_id,
            size,
            part_size: cut.part_size,
            parts: cut.parts as u32,
            version,
        }
    }

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
    /// Open the upload of `from` to `to` in parts, for other processes to send.
    /// `--no-clobber` looks at the key first.
    pub(crate) async fn open_shared(
        &self,
        from: &SharedSource,
        to: &S3Url,
        options: &WriteOptions,
    ) -> Result<SharedUpload> {
        match from {
            SharedSource::File(path) => self.open_shared_file(path, to, options).await,
            SharedSource::Copy { object, listed } => {
                self.open_shared_copy(object, to, listed.clone(), options)
                    .await
            }
        }
    }

    /// Send the parts `numbers` of `upload` from `from`, keeping those the store holds of
    /// these very bytes (a task run again after its worker was lost). Gives the parts, and
    /// the bytes kept rather than sent.
    pub(crate) async fn send_shared_parts(
        &self,
        from: &SharedSource,
        upload: &SharedUpload,
        numbers: RangeInclusive<u32>,
        reporter: &dyn Reporter,
    ) -> Result<(Vec<UploadedPart>, u64)> {
        let numbers = upload.numbers(numbers)?;
        match from {
            SharedSource::File(path) => self.send_file_parts(path, upload, numbers, reporter).await,
            SharedSource::Copy { object, .. } => {
                self.copy_shared_parts(object, upload, numbers, reporter)
                    .await
            }
        }
    }

    /// Complete `upload` of `from` with `parts` (every one, from the tasks that sent them)
    /// and check it, through the one commit check: a file's by its whole CRC64NVME, a
    /// copy's by comparing what the store keeps for it with what it keeps for the source.
    /// `options` are those a file's object is stored with; a copy's were the source's,
    /// taken when it was opened.
    pub(crate) async fn commit_shared(
        &self,
        from: &SharedSource,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let parts = upload.in_order(parts)?;
        let (stored, options) = match from {
            SharedSource::File(path) => self.commit_file(path, upload, &parts, options).await?,
            SharedSource::Copy { object, .. } => self.commit_copy(object, upload, &parts).await?,
        };
        let stored = stored.map(Into::into);
        let source = from.to_string();
        self.ended(stored, upload.size, &source, &upload.to, &options, reporter)
    }

    /// Open the upload of the file `from`; one an earlier run of the same job opened (its
    /// record) is taken over when the file is what it was then.
    async fn open_shared_file(
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
        Ok(SharedUpload::new(
            to,
            upload_id,
            size,
            cut,
            file.opened.version(),
        ))
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

    /// Open the copy of `from` (of `size` bytes and the ETag `etag`, as its listing gave
    /// them, or found by one GET of its first byte) to `to` in UploadPartCopy parts.
    async fn open_shared_copy(
        &self,
        from: &S3Url,
        to: &S3Url,
        listed: Option<(u64, String)>,
        options: &WriteOptions,
    ) -> Result<SharedUpload> {
        let (size, pinned) = match listed {
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
        let source = self.described(from, &pinned).await?;
        let options = WriteOptions {
            without_checksum: true,
            ..options.keeping(&source.headers)
        };
        self.claim(to, &options).await?;
        let upload_id = self.send(|| self.store.create_upload(to, &options)).await?;
        let Validator::ETag(version) = pinned else {
            unreachable!("pinned to an ETag above")
        };
        Ok(SharedUpload::new(to, upload_id, size, cut, version))
    }

    /// Send the parts `numbers` of `upload` from the file `from`.
    async fn send_file_parts(
        &self,
        from: &Path,
        upload: &SharedUpload,
        numbers: RangeInclusive<u64>,
        reporter: &dyn Reporter,
    ) -> Result<(Vec<UploadedPart>, u64)> {
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

    /// Copy the parts `numbers` of `upload` from `from`, each pinned to the version it was
    /// opened of; a part the store holds already at its size is kept (a task run again).
    async fn copy_shared_parts(
        &self,
        from: &S3Url,
        upload: &SharedUpload,
        numbers: RangeInclusive<u64>,
        reporter: &dyn Reporter,
    ) -> Result<(Vec<UploadedPart>, u64)> {
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

    /// Complete the file `from`'s `upload` with the whole file's CRC64NVME, once the file
    /// is still what it was: what was stored, and the options it was stored with.
    async fn commit_file(
        &self,
        from: &Path,
        upload: &SharedUpload,
        parts: &[UploadedPart],
        options: &WriteOptions,
    ) -> Result<(Result<Option<Method>>, WriteOptions)> {
        let content = self.same_file(from, upload).await?;
        let Content::File(file) = &content else {
            unreachable!("same_file opens a file")
        };
        let options = file_options(file, options);
        let whole = whole_crc(parts, &upload.cut().lengths(upload.size));
        content.unchanged().await?;
        let stored = self
            .commit(&upload.to, &upload.upload_id, parts, whole, &options)
            .await;
        Ok((stored, options))
    }

    /// Complete the copy `upload` of `from`, compared with what the store keeps for the
    /// source (one HEAD of each): what was stored, and the options it was completed with.
    async fn commit_copy(
        &self,
        from: &S3Url,
        upload: &SharedUpload,
        parts: &[UploadedPart],
    ) -> Result<(Result<Option<Method>>, WriteOptions)> {
        let pinned = Validator::ETag(upload.version.clone());
        let source = self.described(from, &pinned).await?;
        let options = WriteOptions {
            without_checksum: true,
            ..WriteOptions::default()
        };
        let stored = self
            .commit_unchecked(
                &upload.to,
                &upload.upload_id,
                parts,
                source.checksum,
                &options,
            )
            .await;
        Ok((stored, options))
    }

    /// What the store tells of the object `from` at the version `pinned`.
    async fn described(&self, from: &S3Url, pinned: &Validator) -> Result<Described> {
        let object = ObjectUrl::S3(from.clone());
        let described = self
            .send(|| self.store.describe(&object, Some(pinned), None))
            .await?;
        Ok(described.unwrap_or_default())
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
