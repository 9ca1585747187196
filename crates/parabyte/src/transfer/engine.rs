//! The transfer engine: many objects at once, many ranges per object, all under one cap on
//! requests in flight. Each range streams to its offset as it arrives, resumes from the
//! byte where a broken body stopped, and is pinned to the version the first response saw.
//!
//! One object's path: without a known size, the first ranged GET is the probe, and its
//! answer becomes the size, the validator and the first part's body (already in flight);
//! from there every object runs the same known-size path.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;

use crate::checksum::{Check, Crc, Method};
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::resume::{self, AlreadyThere};
use crate::disk::sink::{self, FilePath, Sink, Target};
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::ranges::ByteRange;
use crate::report::{ObjectReport, Reporter, Status, Verification};
use crate::retry::{with_retries, Retries};
use crate::source::{Described, Fetched, Shape, Store};
use crate::transfer::check::{ContentCheck, UNKNOWN_PART_GRID};
use crate::transfer::parts::{
    check_part, PartSizes, Pinned, MAX_PART, ONE_REQUEST_PARTS, SINGLE_STREAM,
};
use crate::transfer::throttle::{RequestLimit, Slot};
use crate::validator::Validator;

/// The largest object parabyte moves: the largest S3 stores (5 TiB). A larger size is a
/// mistake or a lie, and would size the plan of parts and the buffers.
pub(crate) const MAX_OBJECT_SIZE: u64 = 5 << 40;

/// The one gate for what a listing, a manifest, a journal or a first answer said of an
/// object, before it sizes a plan or a buffer or goes into a signed request: a hostile
/// value fails this object alone.
fn usable(source: &ObjectUrl, known: &Known) -> Result<()> {
    let unusable = |detail: String| Error::Unusable {
        what: source.to_string(),
        detail,
    };
    if known.size > MAX_OBJECT_SIZE {
        return Err(unusable(format!(
            "its size is given as {} bytes, more than the 5 TiB an object can be",
            known.size
        )));
    }
    let header = known.validator.as_ref().and_then(Validator::precondition);
    if let Some(header) = header {
        if reqwest::header::HeaderValue::from_str(&header.value).is_err() {
            return Err(unusable(format!(
                "its ETag {} has characters no request header can carry",
                header.value.escape_debug()
            )));
        }
    }
    Ok(())
}

/// One object to fetch.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub source: ObjectUrl,
    /// Size and validator from a listing or manifest: no probing needed.
    pub known: Option<Known>,
    pub target: Target,
}

/// What is known of an object's version before its bytes are fetched.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub size: u64,
    pub validator: Option<Validator>,
    /// Its Last-Modified time, when a listing or the first response gave it.
    pub modified: Option<SystemTime>,
}

impl Known {
    /// An empty size given with an ETag that is the MD5 of some other bytes (a manifest
    /// line's `0` beside a real object's ETag): trusting the size would make an empty file
    /// without a request.
    fn contradicts_itself(&self) -> bool {
        const EMPTY_MD5: [u8; 16] = [
            0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04, 0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8,
            0x42, 0x7e,
        ];
        let md5 = self.validator.as_ref().and_then(Validator::md5);
        self.size == 0 && md5.is_some_and(|md5| md5 != EMPTY_MD5)
    }
}

/// A response holding one of the global request slots until its body is consumed.
struct InFlight {
    fetched: Fetched,
    _slot: Slot,
}

/// The probe's answer, whose body covers `range` and is still arriving.
struct FirstPart {
    range: ByteRange,
    response: InFlight,
}

/// What the probe learned.
enum Probed {
    /// The object's size and validator, and the first part's body when it has one.
    Sized {
        known: Known,
        first: Option<FirstPart>,
        /// Where the other parts go: the probe's address after a redirect.
        source: ObjectUrl,
    },
    /// A 200 without a length (chunked): the size is what the body brings.
    Unsized(InFlight),
}

pub(crate) struct Engine<S> {
    source: Arc<S>,
    config: TransferConfig,
    /// Requests in flight across all objects: bounds sockets and buffered bytes, and backs
    /// off when the store throttles.
    request_limit: Arc<RequestLimit>,
    counters: Arc<Counters>,
    reporter: Arc<dyn Reporter>,
    /// Objects up to this size come in one request: [`SINGLE_STREAM`], smaller in tests.
    single_stream: u64,
    /// The largest part: [`MAX_PART`], smaller in tests.
    max_part: u64,
    /// Where upload parts may end: [`UNKNOWN_PART_GRID`].
    part_grid: u64,
    /// One range at a time: nothing to split, so each request runs to the end of what is
    /// missing. (Tests turn it off to see parts one after another.)
    one_request_each: bool,
}

impl<S: Store<Object = ObjectUrl>> Engine<S> {
    /// `request_limit` is shared by every engine of one client, so calls from many threads
    /// stay under one cap and what throttling taught it carries over between calls.
    pub(crate) fn new(
        source: Arc<S>,
        config: TransferConfig,
        request_limit: Arc<RequestLimit>,
        counters: Arc<Counters>,
        reporter: Arc<dyn Reporter>,
    ) -> Self {
        Engine {
            one_request_each: config.ranges_per_object <= 1,
            request_limit,
            source,
            config,
            counters,
            reporter,
            single_stream: SINGLE_STREAM,
            max_part: MAX_PART,
            part_grid: UNKNOWN_PART_GRID,
        }
    }

    fn part_sizes(&self) -> PartSizes {
        PartSizes {
            part_size: self.config.part_size,
            ranges: self.config.ranges_per_object,
            single_stream: self.single_stream,
            max_part: self.max_part,
        }
    }

    /// Download one object. An object that changes under us is started again once, on
    /// its new version; a second change fails it. From a web server, whose pins may not be
    /// enforced, bytes that fail their content check are fetched again whole once too.
    pub(crate) async fn download(&self, job: &Job) -> Result<Finished> {
        let known = match (&job.known, &job.target) {
            (None, Target::File(path)) => self.interrupted_version(path).await,
            (Some(known), target) if self.serves_ranges_unproven(job, known) => match target {
                Target::File(path) => self.interrupted_version(path).await,
                _ => None,
            },
            // A size that what came with it contradicts is not known at all: probed.
            (known, _) => known.clone().filter(|known| !known.contradicts_itself()),
        };
        let web = matches!(job.source, ObjectUrl::Http(_));
        match self.attempt(job, known).await {
            Err(Error::Changed { .. }) => self.attempt(job, None).await,
            Err(Error::Corrupt { .. }) if web => self.attempt(job, None).await,
            other => other,
        }
    }

    /// A web server may not serve ranges at all: a large file of known size from one is
    /// fetched as one of unknown size is, its first ranged GET telling whether the server
    /// honours Range before any other part goes out (a server that does not answers it with
    /// the whole file, which then streams as one). S3 always serves ranges; a file small
    /// enough for one request asks for no range.
    fn serves_ranges_unproven(&self, job: &Job, known: &Known) -> bool {
        matches!(job.source, ObjectUrl::Http(_)) && known.size > self.single_stream
    }

    /// An earlier run's temporary file tells the size and validator it was writing: resume
    /// those parts pinned to it, no probe first. A changed object answers 412 and is
    /// fetched again whole.
    async fn interrupted_version(&self, path: &Path) -> Option<Known> {
        let path = path.to_owned();
        let (size, stored) = tokio::task::spawn_blocking(move || sink::interrupted_version(&path))
            .await
            .ok()??;
        self.reporter.size_discovered(size);
        Some(Known {
            size,
            validator: Some(Validator::from_stored(&stored)),
            modified: None,
        })
    }

    /// How the target is known to hold this version already (and skipping is on): an earlier
    /// run's mark, or, with no mark, the object's size and Last-Modified time. Only looks:
    /// a dry run asks it too. Looked up on this task: an `lstat` (and a mark read when a file
    /// of that size is there) costs less than handing it to the blocking pool and back.
    pub(crate) fn already_complete(&self, target: &Target, known: &Known) -> Option<Verification> {
        let Target::File(path) = target else {
            return None;
        };
        if !self.config.skip_unchanged {
            return None;
        }
        let how =
            resume::already_there(path, known.size, known.validator.as_ref(), known.modified)?;
        Some(match how {
            AlreadyThere::Marked => Verification::VersionMark,
            AlreadyThere::SameSizeAndTime => Verification::SizeAndTime,
        })
    }

    /// Tell the reporter how `job` ended well.
    fn report(&self, job: &Job, bytes: u64, status: Status, verification: Verification) {
        self.reporter.object_reported(&ObjectReport {
            source: &job.source.to_string(),
            destination: job.target.path(),
            bytes,
            status,
            verification: Some(verification),
            error: None,
        });
    }

    async fn attempt(&self, job: &Job, known: Option<Known>) -> Result<Finished> {
        let (known, first, source) = match known {
            Some(known) => (known, None, job.source.clone()),
            None => match self.probe(job).await? {
                Probed::Sized {
                    known,
                    first,
                    source,
                } => (known, first, source),
                Probed::Unsized(response) => return self.stream_unsized(job, response).await,
            },
        };
        usable(&job.source, &known)?;
        if let Some(how) = self.already_complete(&job.target, &known) {
            self.reporter.bytes_skipped(known.size);
            if how == Verification::SizeAndTime {
                self.counters.count_skipped_by_size_and_time();
            }
            self.report(job, 0, Status::Skipped, how);
            return Ok(Finished::AlreadyThere(known.size));
        }
        self.fetch_known(job, &source, known, first).await
    }

    /// No size known: the first GET is the probe. Its headers give size and validator;
    /// its body is the first part.
    async fn probe(&self, job: &Job) -> Result<Probed> {
        // One range at a time leaves nothing to split: the first GET asks for the whole
        // object. It tells the size and version all the same, and brings the store's
        // checksum (S3 sends it only without a Range), so no HEAD and no second GET follow.
        let asked = (!self.one_request_each).then(|| ByteRange {
            start: 0,
            end: self.config.part_size.max(self.single_stream) - 1,
        });
        let response = with_retries(&self.config.retry, &self.counters, || {
            self.send(&job.source, asked, None)
        })
        .await?;
        let (size, range) = match response.fetched.shape {
            Shape::Empty => (0, None),
            Shape::Whole { length: None } => return Ok(Probed::Unsized(response)),
            Shape::Whole {
                length: Some(length),
            } => (
                length,
                length.checked_sub(1).map(|end| ByteRange { start: 0, end }),
            ),
            Shape::Partial { range, total } => {
                let asked_end = asked.map_or(u64::MAX, |asked| asked.end);
                if range.start != 0 || range.end != asked_end.min(total - 1) {
                    let asked = asked.map_or("the whole object".to_owned(), |a| a.to_string());
                    return Err(Error::Protocol {
                        what: format!("GET {} {asked}", job.source),
                        detail: format!("asked for {asked}, got {range} of {total}"),
                    });
                }
                (total, Some(range))
            }
        };
        self.reporter.size_discovered(size);
        let known = Known {
            size,
            validator: response.fetched.validator.clone(),
            modified: response.fetched.modified,
        };
        // After a redirect (a presigned URL) the other parts go straight there.
        let source = response
            .fetched
            .moved_to
            .clone()
            .unwrap_or_else(|| job.source.clone());
        let first = range.map(|range| FirstPart { range, response });
        Ok(Probed::Sized {
            known,
            first,
            source,
        })
    }

    /// Fetch an object of known size and version into its target, starting with the first
    /// part's body when the probe brought it. An object that takes more than one GET gets
    /// its checksum from a HEAD sent alongside its other parts.
    async fn fetch_known(
        &self,
        job: &Job,
        source: &ObjectUrl,
        known: Known,
        first: Option<FirstPart>,
    ) -> Result<Finished> {
        let stored = known.validator.as_ref().map(Validator::stored);
        let mut sink = Sink::open(&job.target, Some(known.size), stored).await?;
        let parts = match known.size.checked_sub(1) {
            None => Vec::new(),
            Some(end) => self.plan(
                ByteRange { start: 0, end },
                first.as_ref().map(|first| first.range),
                &sink,
            ),
        };
        // Only a GET of the whole object carries its checksum.
        let one_get = match (&first, parts.as_slice()) {
            (Some(first), []) => first.range.end + 1 == known.size,
            (None, [only]) => only.start == 0 && only.end + 1 == known.size,
            _ => known.size == 0,
        };
        // One GET of the whole object is checked by the checksum that came with it, or by
        // the MD5 its ETag is. With neither (a multipart or encrypted ETag), a HEAD asks
        // S3 for the checksum it may keep: the size alone checks only what the store
        // offers nothing stronger for. A web server keeps no checksum to ask for.
        let web = matches!(source, ObjectUrl::Http(_));
        let one_get_checks_it = web
            || match &first {
                Some(first) => {
                    let fetched = &first.response.fetched;
                    fetched.checksum.is_some() || fetched.content_md5.is_some()
                }
                None => known.validator.as_ref().and_then(Validator::md5).is_some(),
            };
        let head_for = known.validator.clone().filter(|_| {
            let nothing_to_check = known.size == 0;
            self.config.verify_content && !(one_get && (one_get_checks_it || nothing_to_check))
        });
        let check = ContentCheck::new(
            self.config.verify_content,
            head_for.is_some(),
            self.part_grid,
        );
        let object = Object {
            source,
            sink: &sink,
            check: &check,
            pinned: Pinned::new(known.validator),
            total: known.size,
            modified: OnceLock::new(),
            file_time: OnceLock::new(),
        };
        let describe = async {
            match &head_for {
                Some(validator) => self.describe(&object, validator).await,
                None => Ok(()),
            }
        };
        let rest = self.fetch_ranges(&object, parts);
        let first = async {
            match first {
                Some(FirstPart { range, response }) => {
                    self.fetch_range(&object, range, Some(response)).await
                }
                None => Ok(()),
            }
        };
        // The HEAD is polled before the parts, so it takes the first free slot: under a
        // tight request cap it would otherwise wait behind every part, and until it answers
        // each byte is run through every CRC in 1 MiB pieces. A resumed object fetches
        // little, and its journal gave the size and version: its GETs go first, the HEAD
        // after them.
        let fetched = match sink.restored().bytes() > 0 {
            true => {
                async {
                    let ((), restored) = futures::future::try_join(first, rest).await?;
                    describe.await.map(|()| restored)
                }
                .await
            }
            false => futures::future::try_join3(first, describe, rest)
                .await
                .map(|((), (), restored)| restored),
        };
        // A GET of the whole object may have brought a composite checksum: where its parts
        // end is learned now, the bytes being in.
        if let (Ok(_), Some(validator)) = (&fetched, object.pinned.validator()) {
            self.learn_parts(&object, validator).await;
        }
        // The file's own time when an upload stored it; else the object's, from the listing,
        // or (a resumed object) from the responses for its missing parts.
        let modified = (object.file_time.get().copied())
            .or(known.modified)
            .or(object.modified.get().copied());
        drop(object);
        let restored = keep_if_resumable(&mut sink, fetched)?;
        let verification = self
            .verify_and_commit(job, sink, &check, known.size, modified)
            .await?;
        let fetched = known.size - restored;
        let status = if restored > 0 {
            self.counters.count_resumed(restored);
            Status::Resumed
        } else {
            Status::Copied
        };
        self.report(job, fetched, status, verification);
        Ok(Finished::Downloaded(fetched))
    }

    /// The parts of `whole` still to fetch after `first` (the probe's). The gaps an earlier
    /// run left are cut into parts of `part_size`. Otherwise an object whose size was known
    /// beforehand and is at most [`ONE_REQUEST_PARTS`] parts is one request; a larger one a
    /// first part of `part_size`, then parts grown to keep `ranges_per_object` busy.
    fn plan(&self, whole: ByteRange, first: Option<ByteRange>, sink: &Sink) -> Vec<ByteRange> {
        let sizes = self.part_sizes();
        let part_size = self.config.part_size.max(1);
        let rest = match first {
            Some(first) if first.end >= whole.end => return Vec::new(),
            Some(first) => ByteRange {
                start: first.end + 1,
                end: whole.end,
            },
            None => whole,
        };
        let restored = sink.restored();
        if restored.bytes() > 0 {
            let gaps = restored.gaps(rest);
            if self.one_request_each {
                return gaps;
            }
            return gaps.into_iter().flat_map(|gap| sizes.fixed(gap)).collect();
        }
        if first.is_some() {
            return sizes.grown(rest);
        }
        if self.one_request_each || whole.end < part_size.saturating_mul(ONE_REQUEST_PARTS) {
            return vec![whole];
        }
        let first = ByteRange {
            start: 0,
            end: part_size - 1,
        };
        let rest = ByteRange {
            start: part_size,
            end: whole.end,
        };
        std::iter::once(first).chain(sizes.grown(rest)).collect()
    }

    /// HEAD the object for its checksum, pinned to its version, and hand the answer to the
    /// content check. A HEAD that fails fails the object: the store may keep a checksum,
    /// and the object is checked by it or not saved (a weaker check only with --no-verify,
    /// which sends no HEAD).
    async fn describe(&self, object: &Object<'_>, validator: &Validator) -> Result<()> {
        let described = match self.head(object, Some(validator), None).await {
            Ok(described) => described,
            Err(error @ Error::Changed { .. }) => return Err(error),
            Err(error) => {
                return Err(Error::ChecksumUnavailable {
                    what: object.source.to_string(),
                    detail: error.to_string(),
                })
            }
        };
        object.check.described(described.as_ref(), object.sink);
        self.learn_parts(object, validator).await;
        Ok(())
    }

    /// For a composite checksum, HEAD the first upload part to learn where the parts end.
    /// A store that refuses the pin there (moto gives each part its own ETag, so it answers
    /// 412) is asked again unpinned: the object's own HEAD and every GET were pinned, so a
    /// new version cannot pass unseen, and a layout that lies only makes the check fail.
    async fn learn_parts(&self, object: &Object<'_>, validator: &Validator) {
        if !object.check.needs_part_size() {
            return;
        }
        let described = match self.head(object, Some(validator), Some(1)).await {
            Err(Error::Changed { .. }) => self.head(object, None, Some(1)).await,
            other => other,
        };
        if let Ok(Some(Described {
            part: Some(part), ..
        })) = described
        {
            object
                .check
                .parts_of(part.end - part.start + 1, object.total);
        }
    }

    async fn head(
        &self,
        object: &Object<'_>,
        validator: Option<&Validator>,
        part: Option<u32>,
    ) -> Result<Option<Described>> {
        with_retries(&self.config.retry, &self.counters, || async {
            // A request like any other: under the client's cap, and a lesson for it.
            let _slot = self.request_limit.acquire().await;
            let described = self.source.describe(object.source, validator, part).await;
            match &described {
                Err(Error::Throttled { .. }) => self.request_limit.throttled(),
                Err(_) => {}
                Ok(_) => self.request_limit.succeeded(),
            }
            described
        })
        .await
    }

    /// A 200 without a length: one stream, whose end gives the size. Nothing to resume
    /// from, since a later request could not be told where the object ends.
    async fn stream_unsized(&self, job: &Job, response: InFlight) -> Result<Finished> {
        let validator = response.fetched.validator.clone();
        let modified = response.fetched.file_time.or(response.fetched.modified);
        let stored = validator.as_ref().map(Validator::stored);
        let sink = Sink::open(&job.target, None, stored).await?;
        let check = ContentCheck::new(self.config.verify_content, false, self.part_grid);
        let object = Object {
            source: &job.source,
            sink: &sink,
            check: &check,
            pinned: Pinned::new(validator),
            total: 0,
            modified: OnceLock::new(),
            file_time: OnceLock::new(),
        };
        let mut next = 0;
        self.stream_into(&object, response, &mut next, None).await?;
        drop(object);
        self.reporter.size_discovered(next);
        let verification = self
            .verify_and_commit(job, sink, &check, next, modified)
            .await?;
        self.report(job, next, Status::Copied, verification);
        Ok(Finished::Downloaded(next))
    }

    /// Check the content where the store gave the means, then give the file its name and
    /// the object's modification time. Returns how the content was checked.
    async fn verify_and_commit(
        &self,
        job: &Job,
        mut sink: Sink,
        check: &ContentCheck,
        total: u64,
        modified: Option<SystemTime>,
    ) -> Result<Verification> {
        let method = match check.finish(&sink, total).await? {
            Check::Passed(method) => Some(method),
            Check::Unchecked => None,
            Check::Failed(detail) => {
                // Which part went wrong is unknown: nothing of it may be resumed.
                sink.abandon();
                return Err(Error::Corrupt {
                    what: format!("GET {}", job.source),
                    detail,
                });
            }
            // A checksum the store declared but that cannot be laid over the bytes never
            // becomes a size check: the object fails, and says how to accept the size alone.
            Check::Uncheckable(detail) => {
                sink.abandon();
                return Err(Error::Uncheckable {
                    what: format!("GET {}", job.source),
                    detail,
                });
            }
            Check::Untiled => unreachable!("the content check reads back untiled pieces"),
        };
        sink.commit(modified).await?;
        // Counted once the file has its name: an object that failed to arrive is not verified.
        self.counters.count_verified(method);
        Ok(match (method, check.crc()) {
            (Some(Method::Crc), Some(Crc::Crc32)) => Verification::Crc32,
            (Some(Method::Crc), Some(Crc::Crc32c)) => Verification::Crc32c,
            (Some(Method::Crc), Some(Crc::Crc64Nvme)) => Verification::Crc64nvme,
            (Some(Method::Md5), _) => Verification::Md5,
            (Some(Method::Crc), None) | (None, _) => Verification::SizeOnly,
        })
    }
}

/// How an object ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finished {
    /// Fetched now; the bytes this run fetched (less than its size when it resumed).
    Downloaded(u64),
    /// An earlier run left this same version in place; its size.
    AlreadyThere(u64),
    /// Deleted (`rm`, `sync --delete`): no bytes moved.
    Deleted,
}

/// What was written stays for a later run when [`Error::keeps_progress`] says so; else
/// the temporary file goes.
fn keep_if_resumable<T>(sink: &mut Sink, fetched: Result<T>) -> Result<T> {
    if fetched.as_ref().is_err_and(|error| !error.keeps_progress()) {
        sink.abandon();
    }
    fetched
}

/// One attempt at one object, as every range of it sees it.
struct Object<'a> {
    /// Where its ranges are fetched from: the job's source, or where that redirected to.
    source: &'a ObjectUrl,
    sink: &'a Sink,
    check: &'a ContentCheck,
    /// The version every range must be of.
    pinned: Pinned,
    /// Its size; unknown (0) only for a chunked whole body, which asks for no ranges.
    total: u64,
    /// The Last-Modified time the first response that had one gave.
    modified: OnceLock<SystemTime>,
    /// The uploaded file's time (`x-amz-meta-mtime`) the first response that had one gave.
    file_time: OnceLock<SystemTime>,
}

impl Object<'_> {
    /// Keep the times a response tells: every GET's headers carry them, so none costs a
    /// request of its own.
    fn learn_times(&self, fetched: &crate::source::Fetched) {
        if let Some(modified) = fetched.modified {
            let _ = self.modified.set(modified);
        }
        if let Some(file_time) = fetched.file_time {
            let _ = self.file_time.set(file_time);
        }
    }
}

mod pieces;
mod ranges;
#[cfg(test)]
mod tests;
