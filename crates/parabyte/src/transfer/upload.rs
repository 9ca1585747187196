//! One local file into the store: one PUT up to a part's size, else a multipart upload
//! whose parts are read from the file in parallel (never the whole file in memory), each
//! sent with its CRC64NVME, the whole object's CRC64NVME combined from them as they are
//! read and sent with the complete. A file that changed while it was read stores nothing,
//! and an upload that fails is aborted: no parts are left behind in the store.

mod open;

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use futures::{StreamExt, TryStreamExt};
use tokio::sync::Semaphore;

use crate::checksum::{crc64nvme, crc64nvme_after, Method};
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::source_file::SourceFile;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::report::{ObjectReport, Reporter, Status, Verification};
use crate::retry::with_retries;
use crate::source::{Store, UploadedPart, WriteOptions, Written};
use crate::transfer::engine::Finished;
use crate::transfer::throttle::RequestLimit;
pub use open::uploads_aborted;
use open::OpenUpload;

/// S3's smallest part (all but the last).
const MIN_PART: u64 = 5 * 1024 * 1024;
/// S3's largest part, and its largest single PUT.
const MAX_PART: u64 = 5 * 1024 * 1024 * 1024;
/// S3's most parts in one upload.
const MAX_PARTS: u64 = 10_000;
/// Memory is counted in these units, so a semaphore holds any budget.
const KIB: u64 = 1024;

/// One local file to store under a key.
#[derive(Debug)]
pub(crate) struct UploadJob {
    pub from: std::path::PathBuf,
    pub to: S3Url,
    /// Its size when the walk found it (the upload reads what it is when opened).
    pub size: u64,
    /// What the object is stored with (shared by every job of a copy).
    pub options: Arc<WriteOptions>,
}

/// Uploads files; one per client, so its memory budget bounds every upload at once.
#[derive(Debug)]
pub(crate) struct Uploader<S> {
    store: Arc<S>,
    transfer: TransferConfig,
    request_limit: Arc<RequestLimit>,
    counters: Arc<Counters>,
    /// Bytes of file held in memory for requests being sent, in KiB.
    memory: Arc<Semaphore>,
    memory_kib: u64,
}

/// How a file is cut: its size and each part's (the last may be shorter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    pub part_size: u64,
    pub parts: u64,
}

/// Parts for a file of `size`: of `configured` size, at least S3's 5 MiB, grown (in MiB)
/// so that no file needs more than 10,000; `None` when one PUT takes it.
pub(crate) fn cut(size: u64, configured: u64) -> Option<Cut> {
    let single = configured.clamp(MIN_PART, MAX_PART);
    if size <= single {
        return None;
    }
    let fewest = size.div_ceil(MAX_PARTS).div_ceil(1024 * 1024) * 1024 * 1024;
    let part_size = single.max(fewest).min(MAX_PART);
    Some(Cut {
        part_size,
        parts: size.div_ceil(part_size),
    })
}

impl<S: Store> Uploader<S> {
    pub(crate) fn new(
        store: Arc<S>,
        transfer: TransferConfig,
        request_limit: Arc<RequestLimit>,
        counters: Arc<Counters>,
    ) -> Uploader<S> {
        // As many parts as one object sends at once, whatever the number of objects.
        let memory_kib = (transfer.ranges_per_object.max(2) as u64)
            .saturating_mul(transfer.part_size.clamp(MIN_PART, MAX_PART))
            / KIB;
        Uploader {
            store,
            request_limit,
            counters,
            memory: Arc::new(Semaphore::new(memory_kib as usize)),
            memory_kib,
            transfer,
        }
    }

    /// Store the file of `job` under its key. An existing key with `no_clobber` is
    /// [`Finished::AlreadyThere`].
    pub(crate) async fn upload(
        &self,
        job: &UploadJob,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let file = SourceFile::open(&job.from).await?;
        let size = file.opened.size;
        if size > MAX_PART * MAX_PARTS {
            return Err(Error::InvalidInput(format!(
                "{}: {size} bytes is more than the 5 TiB an S3 object can hold",
                job.from.display()
            )));
        }
        if size != job.size {
            reporter.size_discovered(size);
        }
        let mut options = WriteOptions::clone(&job.options);
        if options.content_type.is_none() && options.guess_content_type {
            // As the AWS CLI does: from the extension, else the store's default.
            let guessed = mime_guess::from_path(&job.from).first_raw();
            options.content_type = guessed.map(str::to_owned);
        }
        let modified = file
            .opened
            .modified
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        // As rclone keeps it, so a download can give the file its time back.
        options.metadata.push((
            "mtime".into(),
            format!("{}.{:09}", modified.as_secs(), modified.subsec_nanos()),
        ));
        let stored = match cut(size, self.transfer.part_size) {
            None => self.put_whole(&file, &job.to, &options, reporter).await,
            Some(cut) => {
                self.put_parts(&file, &job.to, cut, &options, reporter)
                    .await
            }
        };
        let (finished, status, verification) = match stored {
            Ok(confirmed) => {
                // The store checks each body by the CRC64NVME it came with; one that names
                // the object's back has said it stored exactly what was read.
                let verification = match confirmed {
                    true => Verification::Crc64nvme,
                    false => Verification::SizeOnly,
                };
                self.counters
                    .count_verified(confirmed.then_some(Method::Crc));
                (Finished::Downloaded(size), Status::Copied, verification)
            }
            Err(Error::Exists { .. }) if options.no_clobber => {
                let kept = (Finished::AlreadyThere(size), Status::Skipped);
                (kept.0, kept.1, Verification::Exists)
            }
            Err(error) => return Err(error),
        };
        let key = job.to.to_string();
        reporter.object_reported(&ObjectReport {
            source: &job.from.display().to_string(),
            destination: Some(std::path::Path::new(&key)),
            bytes: if status == Status::Copied { size } else { 0 },
            status,
            verification: Some(verification),
            error: None,
        });
        Ok(finished)
    }

    /// One PUT: read, checked unchanged, sent. True when the store named the CRC it kept.
    async fn put_whole(
        &self,
        file: &SourceFile,
        to: &S3Url,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<bool> {
        let size = file.opened.size;
        let _memory = self.hold(size).await;
        let body = file.read_at(0, size as usize).await?;
        let crc = crc64nvme(&body);
        file.unchanged().await?;
        let written = self
            .send(|| self.store.put(to, body.clone(), crc, options))
            .await?;
        let confirmed = check_stored(to, &written, crc)?;
        reporter.bytes_transferred(size);
        Ok(confirmed)
    }

    /// A multipart upload, aborted on any failure. True when the store named the CRC it kept.
    async fn put_parts(
        &self,
        file: &SourceFile,
        to: &S3Url,
        cut: Cut,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<bool> {
        let upload_id = self.send(|| self.store.create_upload(to, options)).await?;
        let upload = OpenUpload::new(self.store.clone(), to.clone(), upload_id);
        let sent = self
            .send_parts(file, to, &upload.id, cut, options, reporter)
            .await;
        match sent {
            Ok(_) => upload.completed(),
            Err(_) => upload.abort().await,
        }
        sent
    }

    async fn send_parts(
        &self,
        file: &SourceFile,
        to: &S3Url,
        upload_id: &str,
        cut: Cut,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<bool> {
        let size = file.opened.size;
        let parts: Vec<UploadedPart> = futures::stream::iter(1..=cut.parts)
            .map(|number| async move {
                let offset = (number - 1) * cut.part_size;
                let length = cut.part_size.min(size - offset);
                let _memory = self.hold(length).await;
                let body = file.read_at(offset, length as usize).await?;
                let crc = crc64nvme(&body);
                let part = self
                    .send(|| {
                        self.store
                            .upload_part(to, upload_id, number as u32, body.clone(), crc)
                    })
                    .await?;
                reporter.bytes_transferred(length);
                Ok::<_, Error>(part)
            })
            .buffered(self.transfer.ranges_per_object.max(1))
            .try_collect()
            .await?;
        let mut whole = 0;
        for (part, number) in parts.iter().zip(0..) {
            let length = cut.part_size.min(size - number * cut.part_size);
            whole = match number {
                0 => part.crc64nvme,
                _ => crc64nvme_after(whole, part.crc64nvme, length),
            };
        }
        file.unchanged().await?;
        let written = self
            .send(|| {
                self.store
                    .complete_upload(to, upload_id, &parts, whole, options)
            })
            .await?;
        check_stored(to, &written, whole)
    }

    /// One request with its retries, each attempt under the client's request limit.
    async fn send<T, F, Fut>(&self, mut request: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        with_retries(&self.transfer.retry, &self.counters, || {
            let attempt = request();
            async move {
                let _slot = self.request_limit.acquire().await;
                let answer = attempt.await;
                match &answer {
                    Err(Error::Throttled { .. }) => self.request_limit.throttled(),
                    Ok(_) => self.request_limit.succeeded(),
                    Err(_) => {}
                }
                answer
            }
        })
        .await
    }

    /// Room in the memory budget for `bytes` of file (all of it, if more).
    async fn hold(&self, bytes: u64) -> tokio::sync::SemaphorePermit<'_> {
        let kib = bytes.div_ceil(KIB).clamp(1, self.memory_kib.max(1));
        self.memory
            .acquire_many(kib as u32)
            .await
            .expect("the memory budget is never closed")
    }
}

/// The store's own CRC64NVME of what it stored must be the one sent; true when it named one.
fn check_stored(to: &S3Url, written: &Written, sent: u64) -> Result<bool> {
    match written.crc64nvme {
        Some(stored) if stored != sent => Err(Error::Corrupt {
            what: to.to_string(),
            detail: format!(
                "the store computed CRC64NVME {stored:016x} for what it stored, parabyte sent {sent:016x}"
            ),
        }),
        stored => Ok(stored.is_some()),
    }
}

#[cfg(test)]
mod tests;
