//! One local file (or a buffer) into the store: one PUT up to a part's size, else a
//! multipart upload whose parts are read from the file in parallel (never the whole file
//! in memory), each
//! sent with its CRC64NVME, the whole object's CRC64NVME combined from them as they are
//! read and sent with the complete. A file that changed while it was read stores nothing,
//! and an upload that fails is aborted: no parts are left behind in the store.

mod content;
mod open;
mod pieces;
mod server_copy;
mod shared;
mod stream_copy;
mod writer;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::checksum::{crc64nvme, crc64nvme_after, Method};
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::source_file::SourceFile;
use crate::disk::upload_record::UploadRecord;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::report::{ObjectReport, Reporter, Status, Verification};
use crate::retry::with_retries;
use crate::source::{ListedPart, Store, UploadedPart, WriteOptions, Written};
use crate::timestamp::format_file_time;
use crate::transfer::engine::Finished;
use crate::transfer::throttle::RequestLimit;
use content::Content;
pub use open::{uploads_aborted, uploads_kept};
pub use pieces::Chunk;
pub(crate) use pieces::{stream_from, Answer, Pieces, WriterChunks};
pub(crate) use server_copy::CopyJob;
pub use shared::{SharedSource, SharedUpload};
use writer::{Commit, Opening, Sent};

/// S3's smallest part (all but the last).
const MIN_PART: u64 = 5 * 1024 * 1024;
/// S3's largest part, and its largest single PUT (and CopyObject).
const MAX_PART: u64 = 5 * 1024 * 1024 * 1024;
/// S3's most parts in one upload.
const MAX_PARTS: u64 = 10_000;
/// The most bytes of small files held in memory to be sent, across every upload of a
/// client (larger bodies are streamed from their files: `content.rs`).
const MEMORY_BUDGET: u64 = 64 * 1024 * 1024;
/// The fewest bodies streamed from files at once, across every upload of a client (more
/// when one object sends more: `--ranges-per-object`). Each holds a few 128 KiB chunks
/// (its checksum pass's, the one the connection is sending, the next): at 128 requests in
/// flight, 64 files of 16 MiB peaked at 50 MiB, twice s5cmd's, and went no faster than
/// at 16 (docs/PROFILE.md, stop 32).
const STREAMS_IN_FLIGHT: usize = 16;
/// Memory is counted in these units, so a semaphore holds any budget.
const KIB: u64 = 1024;

/// One local file to store under a key.
#[derive(Debug)]
pub(crate) struct UploadJob {
    pub from: std::path::PathBuf,
    pub to: S3Url,
    /// Its size when the walk found it (the upload reads what it is when opened).
    pub size: u64,
    /// Its modification time then (what `sync` compares).
    pub modified: Option<std::time::SystemTime>,
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
    /// Room for the bodies streamed from files at once.
    streams: Arc<Semaphore>,
    /// The largest object copied inside the store in one request (S3's 5 GiB).
    copy_threshold: u64,
    /// The least part of a copy in parts.
    copy_part: u64,
}

/// The parts of one multipart upload: its ID, how the content is cut, and what an earlier
/// run of it already stored.
#[derive(Debug, Clone, Copy)]
struct Parts<'a> {
    upload_id: &'a str,
    cut: Cut,
    stored: &'a [ListedPart],
    /// Bytes of the parts an earlier run sent and this one kept.
    resumed: &'a AtomicU64,
}

/// How the store took an object: how it confirmed the bytes, and how many of them an
/// earlier run had sent (a resumed upload, reported as a resumed download is).
pub(super) struct Stored {
    pub confirmed: Option<Method>,
    pub resumed: u64,
}

impl From<Option<Method>> for Stored {
    fn from(confirmed: Option<Method>) -> Stored {
        Stored {
            confirmed,
            resumed: 0,
        }
    }
}

/// How a file is cut: its size and each part's (the last may be shorter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    pub part_size: u64,
    pub parts: u64,
}

impl Cut {
    /// Each part's length, for an object of `size`.
    pub(crate) fn lengths(&self, size: u64) -> Vec<u64> {
        (0..self.parts)
            .map(|index| self.part_size.min(size - index * self.part_size))
            .collect()
    }
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
        Uploader {
            store,
            request_limit,
            counters,
            memory: Arc::new(Semaphore::new((MEMORY_BUDGET / KIB) as usize)),
            streams: Arc::new(Semaphore::new(
                STREAMS_IN_FLIGHT.max(transfer.ranges_per_object),
            )),
            copy_threshold: transfer.copy_cutoff,
            copy_part: server_copy::COPY_PART.min(transfer.copy_cutoff),
            transfer,
        }
    }

    /// The store, settings and counters it works with, for the other writes of a run.
    pub(crate) fn parts(&self) -> (Arc<S>, &TransferConfig, &Counters) {
        (self.store.clone(), &self.transfer, &self.counters)
    }

    /// Store the file of `job` under its key. An existing key with `no_clobber` is
    /// [`Finished::AlreadyThere`].
    pub(crate) async fn upload(
        &self,
        job: &UploadJob,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let file = SourceFile::open(&job.from).await?;
        if file.opened.size != job.size {
            reporter.size_discovered(file.opened.size);
        }
        let options = file_options(&file, &job.options);
        let source = job.from.display().to_string();
        self.store(Content::File(file), &source, &job.to, &options, reporter)
            .await
    }

    /// Store `data` under `to`, in one PUT or in parts sliced from it (never copied).
    pub(crate) async fn put_bytes(
        &self,
        data: Bytes,
        to: &S3Url,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        self.store(Content::Memory(data), "(memory)", to, options, reporter)
            .await
    }

    /// Store what `input` gives until it ends (standard input: its length unknown) under
    /// `to`: one PUT when it ends within a part, else a multipart upload sent as it is
    /// read, `ranges_per_object` parts in flight, so memory stays bounded. Parts grow
    /// (doubling every 1,000) so that 10,000 of them hold any stream S3 can store.
    pub(crate) async fn put_stream(
        &self,
        mut input: impl Pieces,
        to: &S3Url,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let part_size = self.transfer.part_size.clamp(MIN_PART, MAX_PART);
        let first = input.next_piece(part_size).await?;
        let source = input.name().to_owned();
        if (first.len() as u64) < part_size {
            return self
                .store(Content::Memory(first), &source, to, options, reporter)
                .await;
        }
        let mut lengths = Vec::new();
        let written = match self.claim(to, options).await {
            // A store that can tell at once (a directory) that --no-clobber keeps the key.
            Err(error) => Err(error),
            Ok(()) => {
                let lengths = &mut lengths;
                let send =
                    |upload_id| self.stream_parts(input, first, upload_id, to, lengths, reporter);
                self.write_parts(to, options, Opening::New, |_| false, send)
                    .await
            }
        };
        let size: u64 = lengths.iter().sum();
        self.ended(
            written.map(Stored::from),
            size,
            &source,
            to,
            options,
            reporter,
        )
    }

    /// The parts of a stream, read one after another and sent `ranges_per_object` at a
    /// time under `upload_id`, the next read while those are sent; `lengths` gets each
    /// part's length.
    async fn stream_parts(
        &self,
        mut input: impl Pieces,
        first: Bytes,
        upload_id: String,
        to: &S3Url,
        lengths: &mut Vec<u64>,
        reporter: &dyn Reporter,
    ) -> Result<Sent> {
        let mut part_size = self.transfer.part_size.clamp(MIN_PART, MAX_PART);
        let mut in_flight = futures::stream::FuturesOrdered::new();
        let mut parts = Vec::new();
        let mut next = Some(first);
        let mut number = 0u32;
        let upload_id = upload_id.as_str();
        while let Some(body) = next.take().filter(|body| !body.is_empty()) {
            number += 1;
            if number > MAX_PARTS as u32 {
                return Err(Error::InvalidInput(format!(
                    "{}: {} holds more than S3's 10,000 parts can take",
                    self.store.destination_name(to),
                    input.name()
                )));
            }
            lengths.push(body.len() as u64);
            in_flight.push_back(async move {
                let crc = crc64nvme(&body);
                let length = body.len() as u64;
                let part = self
                    .send(|| {
                        self.store
                            .upload_part(to, upload_id, number, body.clone().into(), crc)
                    })
                    .await?;
                reporter.bytes_transferred(length);
                Ok::<_, Error>(part)
            });
            if in_flight.len() >= self.transfer.ranges_per_object.max(1) {
                parts.push(in_flight.next().await.expect("one is in flight")?);
            }
            if number % 1000 == 0 {
                part_size = (part_size * 2).min(MAX_PART);
            }
            // The parts in flight go on being sent while the next one is read.
            let read = input.next_piece(part_size);
            tokio::pin!(read);
            next = Some(loop {
                tokio::select! {
                    piece = &mut read => break piece?,
                    Some(part) = in_flight.next(), if !in_flight.is_empty() => {
                        parts.push(part?);
                    }
                }
            });
        }
        while let Some(part) = in_flight.next().await {
            parts.push(part?);
        }
        let whole = whole_crc(&parts, lengths);
        Ok(Sent {
            parts,
            check: Commit::Whole(whole),
        })
    }

    /// With `no_clobber`, a look before the write: a store that ignores `If-None-Match`
    /// would replace what is there. The condition still goes with the write, so a store
    /// that honours it closes the race between the look and the write.
    pub(super) async fn claim(&self, to: &S3Url, options: &WriteOptions) -> Result<()> {
        if !options.no_clobber {
            return Ok(());
        }
        match self.send(|| self.store.look(to)).await {
            Ok(Some(_)) => Err(Error::Exists {
                what: self.store.destination_name(to),
            }),
            Ok(None) | Err(Error::Unsupported { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Store `content` under `to` and report how it ended.
    async fn store(
        &self,
        content: Content,
        source: &str,
        to: &S3Url,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let size = content.size();
        if size > MAX_PART * MAX_PARTS {
            return Err(Error::InvalidInput(format!(
                "{source}: {size} bytes is more than the 5 TiB an S3 object can hold"
            )));
        }
        let resumed = AtomicU64::new(0);
        let stored = match self.claim(to, options).await {
            Err(error) => Err(error),
            Ok(()) => match cut(size, self.transfer.part_size) {
                None => self.put_whole(&content, to, options, reporter).await,
                Some(cut) => {
                    self.put_parts(&content, to, cut, options, reporter, &resumed)
                        .await
                }
            },
        };
        let stored = stored.map(|confirmed| Stored {
            confirmed,
            resumed: resumed.into_inner(),
        });
        self.ended(stored, size, source, to, options, reporter)
    }

    /// How a write of `size` bytes from `source` to `to` ended (`Ok(Some(method))`: how
    /// the store confirmed what it stored): counted, reported, and what the driver adds
    /// up. A key that `--no-clobber` found taken is skipped.
    pub(super) fn ended(
        &self,
        stored: Result<Stored>,
        size: u64,
        source: &str,
        to: &S3Url,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<Finished> {
        let (finished, status, verification) = match stored {
            Ok(Stored { confirmed, resumed }) => {
                // The store checks each body by the CRC64NVME (or the MD5) it came with; one
                // that names the object's CRC back has said it stored exactly what was read.
                let verification = match confirmed {
                    Some(Method::Crc) => Verification::Crc64nvme,
                    Some(Method::Md5) => Verification::Md5,
                    None => Verification::SizeOnly,
                };
                self.counters.count_verified(confirmed);
                let status = match resumed {
                    0 => Status::Copied,
                    resumed => {
                        self.counters.count_resumed(resumed);
                        Status::Resumed
                    }
                };
                let sent = size.saturating_sub(resumed);
                (Finished::Downloaded(sent), status, verification)
            }
            Err(Error::Exists { .. }) if options.no_clobber => {
                let kept = (Finished::AlreadyThere(size), Status::Skipped);
                (kept.0, kept.1, Verification::Exists)
            }
            Err(error) => return Err(error),
        };
        let key = self.store.destination_name(to);
        reporter.object_reported(&ObjectReport {
            source,
            destination: Some(std::path::Path::new(&key)),
            bytes: match finished {
                Finished::Downloaded(sent) => sent,
                _ => 0,
            },
            status,
            verification: Some(verification),
            error: None,
        });
        Ok(finished)
    }

    /// One PUT: read, checked unchanged, sent. True when the store named the CRC it kept.
    async fn put_whole(
        &self,
        content: &Content,
        to: &S3Url,
        options: &WriteOptions,
        reporter: &dyn Reporter,
    ) -> Result<Option<Method>> {
        let size = content.size();
        let _memory = self.hold(content, size).await;
        let (body, crc) = content.body_at(0, size).await?;
        content.unchanged().await?;
        let written = self
            .send(|| self.store.put(to, body.clone(), crc, options))
            .await?;
        let confirmed = self.check_stored(to, &written, crc)?;
        reporter.bytes_transferred(size);
        Ok(confirmed)
    }

    /// A multipart upload, aborted on any failure. True when the store named the CRC it kept.
    async fn put_parts(
        &self,
        content: &Content,
        to: &S3Url,
        cut: Cut,
        options: &WriteOptions,
        reporter: &dyn Reporter,
        resumed_bytes: &AtomicU64,
    ) -> Result<Option<Method>> {
        // A file's upload is recorded, so that the next run of the same command finds it.
        let record = content.record(to, cut.part_size);
        let mut stored = Vec::new();
        let mut resumed = None;
        let earlier = record.as_ref().zip(content.stamp());
        if let Some((id, same_file)) = earlier.and_then(|(record, stamp)| record.read(stamp)) {
            let listed = match same_file {
                true => self.send(|| self.store.list_parts(to, &id)).await,
                false => Ok(None),
            };
            match listed {
                Ok(Some(parts)) => (stored, resumed) = (parts, Some(id)),
                // The file changed since (its parts are of other bytes), or the upload was
                // completed, aborted or expired: start afresh, and let nothing stay behind.
                _ => {
                    let _ = self.store.abort_upload(to, &id).await;
                    record.iter().for_each(UploadRecord::remove);
                }
            }
        }
        let opening = match resumed {
            Some(id) => Opening::Resumed(id),
            None => Opening::New,
        };
        // Best effort: without the record the upload still works, it only cannot resume.
        let mut recorded = None;
        let remember = |upload_id: &str| {
            recorded = record.zip(content.stamp()).and_then(|(record, stamp)| {
                record.write(stamp, upload_id).is_ok().then_some(record)
            });
            recorded.is_some()
        };
        let stored = &stored;
        let send = |upload_id: String| async move {
            let parts = Parts {
                upload_id: &upload_id,
                cut,
                stored,
                resumed: resumed_bytes,
            };
            self.send_parts(content, to, &parts, reporter).await
        };
        let sent = self.write_parts(to, options, opening, remember, send).await;
        if !matches!(&sent, Err(error) if error.keeps_progress()) {
            recorded.iter().for_each(UploadRecord::remove);
        }
        sent
    }

    /// A file's parts, sent `ranges_per_object` at a time, reusing those an earlier run
    /// stored of these very bytes; the file checked unchanged after the last.
    async fn send_parts(
        &self,
        content: &Content,
        to: &S3Url,
        parts: &Parts<'_>,
        reporter: &dyn Reporter,
    ) -> Result<Sent> {
        let numbers = 1..=parts.cut.parts;
        let sent = self
            .send_numbered(content, to, parts, numbers, reporter)
            .await?;
        let whole = whole_crc(&sent, &parts.cut.lengths(content.size()));
        content.unchanged().await?;
        Ok(Sent {
            parts: sent,
            check: Commit::Whole(whole),
        })
    }

    /// The parts `numbers` of a file's upload, `ranges_per_object` at a time, each with its
    /// CRC64NVME; a part the store holds already (`parts.stored`) is kept, not sent again,
    /// when it is these very bytes.
    async fn send_numbered(
        &self,
        content: &Content,
        to: &S3Url,
        parts: &Parts<'_>,
        numbers: std::ops::RangeInclusive<u64>,
        reporter: &dyn Reporter,
    ) -> Result<Vec<UploadedPart>> {
        let Parts {
            upload_id,
            cut,
            stored,
            resumed,
        } = *parts;
        let size = content.size();
        futures::stream::iter(numbers)
            .map(|number| async move {
                let offset = (number - 1) * cut.part_size;
                let length = cut.part_size.min(size - offset);
                let _memory = self.hold(content, length).await;
                let (body, crc) = content.body_at(offset, length).await?;
                // A part an interrupted run sent is kept only when it is these very bytes.
                let kept = stored.iter().find(|part| {
                    part.number as u64 == number
                        && part.size == length
                        && part.crc64nvme == Some(crc)
                });
                if let Some(kept) = kept {
                    resumed.fetch_add(length, Relaxed);
                    reporter.bytes_resumed(length);
                    return Ok(UploadedPart {
                        number: kept.number,
                        etag: kept.etag.clone(),
                        crc64nvme: crc,
                    });
                }
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
            .await
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

    /// Room for a body of `bytes` of `content`: in the memory budget when a file's bytes
    /// are read into memory (all of it, if more), one of the streams when they are
    /// streamed; bytes in memory already take none.
    async fn hold(&self, content: &Content, bytes: u64) -> Option<SemaphorePermit<'_>> {
        if content.reads_into_memory(bytes) {
            return Some(self.reserve(bytes).await);
        }
        if content.streams(bytes) {
            let permit = self.streams.acquire().await;
            return Some(permit.expect("the streams are never closed"));
        }
        None
    }

    /// Room in the memory budget for `bytes` (all of it, if more).
    async fn reserve(&self, bytes: u64) -> SemaphorePermit<'_> {
        let kib = bytes.div_ceil(KIB).clamp(1, MEMORY_BUDGET / KIB);
        let permit = self.memory.acquire_many(kib as u32).await;
        permit.expect("the memory budget is never closed")
    }
}

/// What a file is stored with: `options`, its `Content-Type` guessed from its extension
/// when none is given (as the AWS CLI does), and its modification time as metadata (as
/// rclone keeps it, so a download can give the file its time back).
fn file_options(file: &SourceFile, options: &WriteOptions) -> WriteOptions {
    let mut options = options.clone();
    if options.content_type.is_none() && options.guess_content_type {
        let guessed = mime_guess::from_path(file.path()).first_raw();
        options.content_type = guessed.map(str::to_owned);
    }
    options
        .metadata
        .push(("mtime".into(), format_file_time(file.opened.modified)));
    options
}

/// The whole object's CRC64NVME, from its parts' (in order) and their lengths.
fn whole_crc(parts: &[UploadedPart], lengths: &[u64]) -> u64 {
    let mut whole = 0;
    for (index, (part, length)) in parts.iter().zip(lengths).enumerate() {
        whole = match index {
            0 => part.crc64nvme,
            _ => crc64nvme_after(whole, part.crc64nvme, *length),
        };
    }
    whole
}

impl<S: Store> Uploader<S> {
    /// The store's own CRC64NVME of what it stored must be the one sent; how the store
    /// confirmed what it stored: by naming that CRC, by the MD5s it checked, or not at all.
    pub(super) fn check_stored(
        &self,
        to: &S3Url,
        written: &Written,
        sent: u64,
    ) -> Result<Option<Method>> {
        match written.crc64nvme {
            Some(stored) if stored != sent => Err(Error::Corrupt {
                what: self.store.destination_name(to),
                detail: format!(
                    "the store computed CRC64NVME {stored:016x} for what it stored, parabyte sent {sent:016x}"
                ),
            }),
            Some(_) => Ok(Some(Method::Crc)),
            None => Ok(written.md5_checked.then_some(Method::Md5)),
        }
    }
}

#[cfg(test)]
mod tests;
