//! The transfer engine: many objects at once, many ranges per object, all under one cap on
//! requests in flight. Each range streams to its offset as it arrives, resumes from the
//! byte where a broken body stopped, and is pinned to the version the first response saw.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use bytes::BytesMut;
use futures::StreamExt;

use crate::checksum::{check_crc, check_md5, Check, Crc, FullChecksum, Piece};
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::resume;
use crate::disk::sink::{self, Sink, Target};
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::ranges::ByteRange;
use crate::report::Reporter;
use crate::retry::{give_up, with_retries};
use crate::source::{Fetched, RangeSource, Shape};
use crate::transfer::throttle::{RequestLimit, Slot};
use crate::validator::same_etag;

/// Body bytes gathered before one positioned write: few system calls, little memory.
const WRITE_BUFFER: usize = 128 * 1024;

/// Objects up to this size come in one request whatever the part size: a second
/// connection's set-up costs more than it saves on them (seed 002: parallel byte serving
/// gains nothing on small files).
const SINGLE_STREAM: u64 = 1024 * 1024;

/// One object to fetch.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub source: ObjectUrl,
    /// Size and ETag from a listing or manifest: no probing needed.
    pub known: Option<Known>,
    pub target: Target,
}

#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub size: u64,
    pub etag: Option<String>,
}

/// A response holding one of the global request slots until its body is consumed.
struct InFlight {
    fetched: Fetched,
    _slot: Slot,
}

pub(crate) struct Engine<S> {
    source: Arc<S>,
    config: TransferConfig,
    /// Requests in flight across all objects: bounds sockets and buffered bytes, and backs
    /// off when the store throttles.
    request_limit: Arc<RequestLimit>,
    counters: Arc<Counters>,
    reporter: Arc<dyn Reporter>,
}

impl<S: RangeSource<Object = ObjectUrl>> Engine<S> {
    pub(crate) fn new(
        source: Arc<S>,
        config: TransferConfig,
        counters: Arc<Counters>,
        reporter: Arc<dyn Reporter>,
    ) -> Self {
        Engine {
            request_limit: RequestLimit::new(config.max_requests),
            source,
            config,
            counters,
            reporter,
        }
    }

    /// Download one object. An object that changes under us is started again once, on
    /// its new version; a second change fails it.
    pub(crate) async fn download(&self, job: &Job) -> Result<Finished> {
        if let Some(Known {
            size,
            etag: Some(etag),
        }) = &job.known
        {
            if self.already_complete(&job.target, etag, *size).await {
                return Ok(Finished::AlreadyThere(*size));
            }
        }
        let interrupted = match (&job.known, &job.target) {
            (None, Target::File(path)) => self.interrupted_version(path).await,
            _ => None,
        };
        match self
            .attempt(job, job.known.as_ref().or(interrupted.as_ref()))
            .await
        {
            Err(Error::Changed { .. }) => self.attempt(job, None).await,
            other => other,
        }
    }

    /// An earlier run's temporary file tells the size and ETag it was writing: resume those
    /// parts pinned with If-Match, no probe first. A changed object answers 412 and is
    /// fetched again whole.
    async fn interrupted_version(&self, path: &Path) -> Option<Known> {
        let path = path.to_owned();
        let (size, etag) = tokio::task::spawn_blocking(move || sink::interrupted_version(&path))
            .await
            .ok()??;
        self.reporter.size_discovered(size);
        Some(Known {
            size,
            etag: Some(etag),
        })
    }

    /// True when an earlier run left this very version at the target (and skipping is on).
    async fn already_complete(&self, target: &Target, etag: &str, size: u64) -> bool {
        let Target::File(path) = target else {
            return false;
        };
        if !self.config.skip_unchanged {
            return false;
        }
        let (path, etag) = (path.clone(), etag.to_owned());
        let complete =
            tokio::task::spawn_blocking(move || resume::already_complete(&path, &etag, size))
                .await
                .unwrap_or(false);
        if complete {
            self.reporter.bytes_skipped(size);
        }
        complete
    }

    async fn attempt(&self, job: &Job, known: Option<&Known>) -> Result<Finished> {
        let Some(known) = known else {
            return self.attempt_unknown_size(job).await;
        };
        let mut sink = Sink::open(&job.target, Some(known.size), known.etag.as_deref()).await?;
        let check = ContentCheck::default();
        let mut restored = 0;
        if known.size > 0 {
            let whole = ByteRange {
                start: 0,
                end: known.size - 1,
            };
            let object = Object {
                source: &job.source,
                sink: &sink,
                check: &check,
                etag: known.etag.as_deref(),
                total: known.size,
            };
            let fetched = self.fetch_ranges(&object, whole).await;
            restored = keep_if_resumable(&mut sink, fetched)?;
        }
        self.verify_and_commit(job, sink, &check, known.size)
            .await?;
        Ok(Finished::Downloaded(known.size - restored))
    }

    /// Check the content where the store gave the means, then give the file its name.
    async fn verify_and_commit(
        &self,
        job: &Job,
        mut sink: Sink,
        check: &ContentCheck,
        total: u64,
    ) -> Result<()> {
        match check.finish(&sink, total).await? {
            Check::Passed(method) => self.counters.count_verified(Some(method)),
            Check::Unchecked => self.counters.count_verified(None),
            Check::Failed(detail) => {
                // Which part went wrong is unknown: nothing of it may be resumed.
                sink.abandon();
                return Err(Error::Corrupt {
                    what: format!("GET {}", job.source),
                    detail,
                });
            }
        }
        sink.commit().await
    }

    /// No size known: the first ranged GET is the probe. Its headers give size and ETag, and
    /// the other ranges go out at once while its body is still arriving.
    async fn attempt_unknown_size(&self, job: &Job) -> Result<Finished> {
        let first_range = ByteRange {
            start: 0,
            end: self.config.part_size.max(SINGLE_STREAM) - 1,
        };
        let first = with_retries(&self.config.retry, &self.counters, || {
            self.send(&job.source, Some(first_range), None)
        })
        .await?;
        match first.fetched.shape {
            Shape::Empty => {
                self.reporter.size_discovered(0);
                let etag = first.fetched.etag.clone();
                let sink = Sink::open(&job.target, Some(0), etag.as_deref()).await?;
                self.verify_and_commit(job, sink, &ContentCheck::default(), 0)
                    .await?;
                Ok(Finished::Downloaded(0))
            }
            Shape::Whole { length } => {
                if let Some(length) = length {
                    self.reporter.size_discovered(length);
                }
                let etag = first.fetched.etag.clone();
                let sink = Sink::open(&job.target, length, etag.as_deref()).await?;
                let check = ContentCheck::default();
                let object = Object {
                    source: &job.source,
                    sink: &sink,
                    check: &check,
                    etag: None,
                    total: length.unwrap_or(0),
                };
                let mut next = 0;
                let end = length.map(|l| l.saturating_sub(1));
                self.stream_into(&object, first, &mut next, end).await?;
                if length.is_some_and(|l| l != next) {
                    return Err(Error::Protocol {
                        what: format!("GET {}", job.source),
                        detail: format!("body ended after {next} of {} bytes", length.unwrap_or(0)),
                    });
                }
                self.verify_and_commit(job, sink, &check, next).await?;
                Ok(Finished::Downloaded(next))
            }
            Shape::Partial { range, total } => {
                if range.start != 0 || range.end != first_range.end.min(total - 1) {
                    return Err(Error::Protocol {
                        what: format!("GET {} {first_range}", job.source),
                        detail: format!("asked for {first_range}, got {range} of {total}"),
                    });
                }
                self.reporter.size_discovered(total);
                let etag = first.fetched.etag.clone();
                if let Some(etag) = &etag {
                    // The first part's headers are all it takes to see the file is current.
                    if self.already_complete(&job.target, etag, total).await {
                        return Ok(Finished::AlreadyThere(total));
                    }
                }
                let mut sink = Sink::open(&job.target, Some(total), etag.as_deref()).await?;
                let check = ContentCheck::default();
                // After a redirect (a presigned URL) the other parts go straight there.
                let moved_to = first.fetched.moved_to.clone();
                let object = Object {
                    source: moved_to.as_ref().unwrap_or(&job.source),
                    sink: &sink,
                    check: &check,
                    etag: etag.as_deref(),
                    total,
                };
                let first_part = self.fetch_range(&object, range, Some(first));
                let rest = async {
                    if range.end + 1 < total {
                        let remaining = ByteRange {
                            start: range.end + 1,
                            end: total - 1,
                        };
                        self.fetch_ranges(&object, remaining).await
                    } else {
                        Ok(0)
                    }
                };
                let fetched = futures::future::try_join(first_part, rest).await;
                let restored = keep_if_resumable(&mut sink, fetched.map(|(_, restored)| restored))?;
                self.verify_and_commit(job, sink, &check, total).await?;
                Ok(Finished::Downloaded(total - restored))
            }
        }
    }

    /// Fetch `whole` as parts of `part_size`, up to `threads` at a time. Bytes an earlier
    /// run wrote for this version are not fetched again; returns how many those were.
    async fn fetch_ranges(&self, object: &Object<'_>, whole: ByteRange) -> Result<u64> {
        let gaps = object.sink.restored().gaps(whole);
        let missing: u64 = gaps.iter().map(|gap| gap.end + 1 - gap.start).sum();
        let restored = whole.end + 1 - whole.start - missing;
        if restored > 0 {
            self.reporter.bytes_skipped(restored);
        }
        let part_size = self.config.part_size;
        let parts = gaps
            .into_iter()
            .flat_map(move |gap| plan_parts(gap, part_size));
        // After a failure no new part starts, but those in flight finish: their bytes are
        // paid for, and a later run resumes from them.
        let failure = Mutex::new(None);
        futures::stream::iter(parts)
            .filter(|_| std::future::ready(failure.lock().expect("failure poisoned").is_none()))
            .for_each_concurrent(self.config.threads, |part| {
                let failure = &failure;
                async move {
                    if let Err(error) = self.fetch_range(object, part, None).await {
                        object.sink.part_failed();
                        failure
                            .lock()
                            .expect("failure poisoned")
                            .get_or_insert(error);
                    }
                }
            })
            .await;
        failure
            .into_inner()
            .expect("failure poisoned")
            .map_or(Ok(restored), Err)
    }

    /// Fetch one range into the sink, resuming from the first missing byte after a failure.
    async fn fetch_range(
        &self,
        object: &Object<'_>,
        range: ByteRange,
        mut already_sent: Option<InFlight>,
    ) -> Result<()> {
        let Object {
            source,
            etag,
            total,
            ..
        } = *object;
        let mut next = range.start;
        let started = Instant::now();
        let mut retries = 0;
        loop {
            let attempt = async {
                let response = match already_sent.take() {
                    Some(response) => response,
                    None => {
                        let rest = ByteRange {
                            start: next,
                            end: range.end,
                        };
                        let response = self.send(source, Some(rest), etag).await?;
                        check_part(source, &response.fetched, rest, etag, total)?;
                        response
                    }
                };
                self.stream_into(object, response, &mut next, Some(range.end))
                    .await?;
                if next != range.end + 1 {
                    return Err(Error::Protocol {
                        what: format!("GET {source} {range}"),
                        detail: format!("body ended after byte {next} of the range"),
                    });
                }
                Ok(())
            };
            match attempt.await {
                Ok(()) => return object.sink.part_done(range),
                Err(error) if error.is_retryable() && retries < self.config.retry.max_retries => {
                    tokio::time::sleep(self.config.retry.delay(retries)).await;
                    retries += 1;
                    self.counters.retries.fetch_add(1, Relaxed);
                }
                Err(error) => return Err(give_up(error, retries, started)),
            }
        }
    }

    async fn send(
        &self,
        object: &ObjectUrl,
        range: Option<ByteRange>,
        if_match: Option<&str>,
    ) -> Result<InFlight> {
        let slot = self.request_limit.acquire().await;
        match self.source.fetch(object, range, if_match).await {
            Ok(fetched) => {
                self.request_limit.succeeded();
                Ok(InFlight {
                    fetched,
                    _slot: slot,
                })
            }
            Err(error) => {
                if matches!(error, Error::Throttled { .. }) {
                    self.request_limit.throttled();
                }
                Err(error)
            }
        }
    }

    /// Copy a body into the sink from byte `*next` on, advancing `*next` past every byte
    /// written, so that after a failure it names the first byte still missing.
    async fn stream_into(
        &self,
        object: &Object<'_>,
        response: InFlight,
        next: &mut u64,
        end: Option<u64>,
    ) -> Result<()> {
        let InFlight { fetched, _slot } = response;
        let sink = object.sink;
        let check = object.check;
        check.observe(&fetched, sink, self.config.verify_content);
        let mut crc = check.crc().map(Crc::digest);
        let start = *next;
        let mut body = fetched.body;
        let mut buffer = BytesMut::new();
        let mut failure = None;
        while let Some(chunk) = body.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            };
            let arrived = *next + (buffer.len() + chunk.len()) as u64;
            if end.is_some_and(|end| arrived > end + 1) {
                return Err(Error::Protocol {
                    what: format!("GET {}", object.source),
                    detail: format!(
                        "body runs past the requested range (byte {arrived}, range end {})",
                        end.unwrap_or(0)
                    ),
                });
            }
            if let Some(crc) = &mut crc {
                crc.update(&chunk);
            }
            self.reporter.bytes_transferred(chunk.len() as u64);
            if buffer.len() + chunk.len() > buffer.capacity() {
                // Write out rather than grow: a grown buffer doubles, and with it the
                // memory each request in flight holds.
                write_out(sink, &mut buffer, next).await?;
            }
            if chunk.len() >= WRITE_BUFFER {
                // Large enough to go to the file as it arrived, without a copy.
                let length = chunk.len() as u64;
                sink.write_at(chunk, *next).await?;
                *next += length;
                continue;
            }
            if buffer.capacity() == 0 {
                // No more than the range still needs: a 1 KiB object gets a 1 KiB buffer.
                let still_needed = end.map_or(WRITE_BUFFER as u64, |end| end + 1 - *next) as usize;
                buffer.reserve(WRITE_BUFFER.min(still_needed).max(chunk.len()));
            }
            buffer.extend_from_slice(&chunk);
            if buffer.len() >= WRITE_BUFFER {
                write_out(sink, &mut buffer, next).await?;
            }
        }
        write_out(sink, &mut buffer, next).await?;
        if let Some(crc) = crc {
            check.add_piece(Piece {
                start,
                length: *next - start,
                crc: crc.finalize(),
            });
        }
        failure.map_or(Ok(()), Err)
    }
}

/// `whole` as consecutive parts of `part_size`; one part when it is small enough that
/// splitting cannot pay.
fn plan_parts(whole: ByteRange, part_size: u64) -> impl Iterator<Item = ByteRange> {
    let length = whole.end - whole.start + 1;
    let part_size = if length <= SINGLE_STREAM {
        length
    } else {
        part_size
    };
    (whole.start..=whole.end)
        .step_by(part_size as usize)
        .map(move |start| ByteRange {
            start,
            end: (start + part_size - 1).min(whole.end),
        })
}

/// How an object ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finished {
    /// Fetched now; the bytes this run fetched (less than its size when it resumed).
    Downloaded(u64),
    /// An earlier run left this same version in place; its size.
    AlreadyThere(u64),
}

/// Write what `buffer` holds at `next` and move `next` past it; the buffer is left empty,
/// with no capacity.
async fn write_out(sink: &Sink, buffer: &mut BytesMut, next: &mut u64) -> Result<()> {
    if buffer.is_empty() {
        return Ok(());
    }
    let data = std::mem::take(buffer).freeze();
    let length = data.len() as u64;
    sink.write_at(data, *next).await?;
    *next += length;
    Ok(())
}

/// After a failure that a later run may get past (the network, the store), the parts
/// written so far stay for it; after any other, the temporary file goes.
fn keep_if_resumable<T>(sink: &mut Sink, fetched: Result<T>) -> Result<T> {
    if let Err(error) = &fetched {
        let transient = error.is_retryable() || matches!(error, Error::GaveUp { .. });
        if !transient {
            sink.abandon();
        }
    }
    fetched
}

/// One attempt at one object, as every range of it sees it.
#[derive(Clone, Copy)]
struct Object<'a> {
    /// Where its ranges are fetched from: the job's source, or where that redirected to.
    source: &'a ObjectUrl,
    sink: &'a Sink,
    check: &'a ContentCheck,
    /// The version every range is pinned to.
    etag: Option<&'a str>,
    total: u64,
}

/// How one attempt checks its object's content. The first response decides (by what the
/// store sent), before any byte is written; every range is then streamed the same way.
#[derive(Debug, Default)]
struct ContentCheck {
    plan: OnceLock<Expectation>,
    pieces: Mutex<Vec<Piece>>,
}

#[derive(Debug, Clone, Copy)]
enum Expectation {
    Crc(FullChecksum),
    Md5([u8; 16]),
    SizeOnly,
}

impl ContentCheck {
    fn observe(&self, fetched: &Fetched, sink: &Sink, enabled: bool) {
        self.plan
            .get_or_init(|| match (fetched.checksum, fetched.content_md5) {
                _ if !enabled => Expectation::SizeOnly,
                // A CRC costs next to nothing per byte; MD5 is the fallback.
                (Some(checksum), _) => Expectation::Crc(checksum),
                (None, Some(md5)) => {
                    sink.track_md5();
                    Expectation::Md5(md5)
                }
                (None, None) => Expectation::SizeOnly,
            });
    }

    fn crc(&self) -> Option<Crc> {
        match self.plan.get() {
            Some(Expectation::Crc(checksum)) => Some(checksum.algorithm),
            _ => None,
        }
    }

    fn add_piece(&self, piece: Piece) {
        self.pieces.lock().expect("pieces poisoned").push(piece);
    }

    async fn finish(&self, sink: &Sink, total: u64) -> Result<Check> {
        Ok(match self.plan.get() {
            None | Some(Expectation::SizeOnly) => Check::Unchecked,
            Some(Expectation::Crc(expected)) => {
                let mut pieces = self.pieces.lock().expect("pieces poisoned");
                check_crc(*expected, &mut pieces, total)
            }
            Some(Expectation::Md5(expected)) => match sink.md5(total).await {
                None => Check::Unchecked,
                Some(digest) => check_md5(*expected, digest?),
            },
        })
    }
}

/// A later range must come from the same version: same total size, same ETag, exact range.
fn check_part(
    object: &ObjectUrl,
    fetched: &Fetched,
    asked: ByteRange,
    etag: Option<&str>,
    total: u64,
) -> Result<()> {
    let what = || format!("GET {object} {asked}");
    let Shape::Partial { range, total: now } = fetched.shape else {
        return Err(Error::Protocol {
            what: what(),
            detail: "the server ignored the Range header on a later part".into(),
        });
    };
    if now != total {
        return Err(Error::Changed {
            what: what(),
            detail: format!("size went from {total} to {now} bytes"),
        });
    }
    if let (Some(expected), Some(got)) = (etag, fetched.etag.as_deref()) {
        if !same_etag(expected, got) {
            return Err(Error::Changed {
                what: what(),
                detail: format!("ETag went from {expected} to {got}"),
            });
        }
    }
    if range != asked {
        return Err(Error::Protocol {
            what: what(),
            detail: format!("asked for {asked}, got {range}"),
        });
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: u64) -> ByteRange {
        ByteRange { start, end }
    }

    #[test]
    fn small_objects_are_one_part_whatever_the_part_size() {
        let parts: Vec<_> = plan_parts(range(0, SINGLE_STREAM - 1), 64 * 1024).collect();
        assert_eq!(parts, vec![range(0, SINGLE_STREAM - 1)]);
    }

    #[test]
    fn large_objects_are_cut_into_part_size_pieces() {
        let parts: Vec<_> =
            plan_parts(range(10, 10 + 5 * SINGLE_STREAM), 2 * SINGLE_STREAM).collect();
        assert_eq!(
            parts,
            vec![
                range(10, 10 + 2 * SINGLE_STREAM - 1),
                range(10 + 2 * SINGLE_STREAM, 10 + 4 * SINGLE_STREAM - 1),
                range(10 + 4 * SINGLE_STREAM, 10 + 5 * SINGLE_STREAM),
            ]
        );
    }
}
