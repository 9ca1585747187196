//! The front door: a [`Client`] resolves a source, plans the objects behind it, and drives
//! the engine over them. Listing feeds downloads through a bounded queue, so the first
//! object starts with the first page and memory stays flat however many keys there are.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, TryStreamExt};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use crate::config::{StoreConfig, TransferConfig};
use crate::counters::Counters;
use crate::disk::local::{copy_local, Selection};
use crate::disk::sink::{adopt_pieces, FilePath, Target};
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::manifest::Item;
use crate::plan::{
    decide, item_target, list_prefix, plan, plan_items, CopyRequest, Destination, Planned, Work,
};
use crate::ranges::ByteRange;
use crate::report::{Failure, ObjectReport, Preview, Reporter, Silent, Status, Summary};
use crate::source::listing::{list, split_key_space, KeyBounds, ListSpec, Listed};
use crate::source::s3::{BucketEntry, S3Store};
use crate::source::web::WebSource;
use crate::source::Sources;
use crate::transfer::engine::{Engine, Finished, Job};
use crate::transfer::throttle::RequestLimit;

/// Jobs waiting between the listing and the downloads; the listing pauses when it is full.
const QUEUE_DEPTH: usize = 4096;

/// A connection to a store with transfer settings; cheap to share between calls and
/// threads, which all draw on its one request limit.
#[derive(Debug)]
pub struct Client {
    /// The store and the web: what the engine fetches from.
    sources: Arc<Sources>,
    transfer: TransferConfig,
    /// Requests in flight across every call on this client, from any thread.
    request_limit: Arc<RequestLimit>,
    /// Chunks of local copies in flight across every call on this client.
    local_chunk_slots: Arc<Semaphore>,
    counters: Arc<Counters>,
}

impl Client {
    /// Resolve credentials, region and endpoint; no request is sent yet.
    pub async fn connect(store: &StoreConfig, transfer: TransferConfig) -> Result<Client> {
        transfer.validate()?;
        let counters = Arc::new(Counters::default());
        let sources = Arc::new(Sources {
            s3: Arc::new(S3Store::connect(store, counters.clone()).await?),
            web: WebSource::new(store, counters.clone())?,
        });
        Ok(Client {
            sources,
            request_limit: RequestLimit::new(transfer.max_requests),
            local_chunk_slots: Arc::new(Semaphore::new(transfer.max_requests)),
            transfer,
            counters,
        })
    }

    /// Copy what `request` names: an S3 object or prefix, a URL, a batch, a manifest or a
    /// local tree. Per-object failures are in the summary; an `Err` means nothing more
    /// could be done (bad bucket, bad credentials, unusable request).
    pub async fn copy(
        &self,
        request: &CopyRequest,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let dry_run = request.options.dry_run;
        match decide(request).await? {
            Work::Store(copy) => {
                let listed = format!("s3://{}/{}", copy.source.bucket, list_prefix(&copy));
                let one_key = (!copy.lists()).then(|| copy.source.clone());
                let planner = plan(
                    self.sources.s3.clone(),
                    self.counters.clone(),
                    self.transfer.clone(),
                    copy,
                    reporter.clone(),
                );
                let mut summary = self.run(planner, listed, dry_run, reporter).await?;
                if let Some(url) = one_key {
                    self.name_the_prefix(&url, &mut summary).await;
                }
                Ok(summary)
            }
            Work::Items {
                items,
                destination,
                refused,
            } => {
                let planner_reporter = reporter.clone();
                let planner = move |queue: mpsc::Sender<Planned>| async move {
                    for failure in refused {
                        if queue.send(Planned::Refused(failure)).await.is_err() {
                            return Ok(());
                        }
                    }
                    plan_items(items, destination, queue, planner_reporter).await
                };
                self.run(planner, String::new(), dry_run, reporter).await
            }
            Work::Local {
                source,
                destination,
                pattern,
            } => {
                let slots = self.local_chunk_slots.clone();
                let selection = Selection {
                    pattern,
                    filters: request.options.filters.clone(),
                    dry_run,
                };
                let transfer = &self.transfer;
                copy_local(&source, &destination, transfer, &selection, slots, reporter).await
            }
        }
    }

    /// `cp s3://b/imgs DEST` found no object `imgs`: when `imgs/` is a prefix with objects
    /// under it, the user meant it (one LIST of one key, on this failure path only).
    async fn name_the_prefix(&self, url: &S3Url, summary: &mut Summary) {
        let [failure] = summary.failures.as_mut_slice() else {
            return;
        };
        if !matches!(failure.error, Error::NotFound { .. }) || url.key.is_empty() {
            return;
        }
        let spec = ListSpec {
            bucket: url.bucket.clone(),
            prefix: format!("{}/", url.key),
            delimiter: None,
            parallelism: 1,
            page_size: 1,
            bounds: KeyBounds::default(),
        };
        let mut pages = std::pin::pin!(list(
            self.sources.s3.clone(),
            self.counters.clone(),
            self.transfer.retry.clone(),
            spec,
        ));
        if let Some(Ok(page)) = pages.try_next().await.transpose() {
            if !page.is_empty() {
                failure.error = Error::IsPrefix {
                    url: url.to_string(),
                };
            }
        }
    }

    /// One object's bytes in memory, fetched as parallel ranges into a single buffer.
    pub async fn get_bytes(&self, source: impl Into<ObjectUrl>) -> Result<Vec<u8>> {
        let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
        let job = Job {
            source: source.into(),
            known: None,
            target: Target::Memory(buffer.clone()),
        };
        self.engine(Arc::new(Silent)).download(&job).await?;
        let mut buffer = buffer.lock().expect("memory sink poisoned");
        Ok(std::mem::take(&mut *buffer))
    }

    /// Byte ranges of one object (`start..end`, end excluded), one ranged GET each, all of
    /// the same version. A range may end past the object (it is cut at the end) but must
    /// start inside it and hold at least one byte.
    pub async fn get_ranges(
        &self,
        source: impl Into<ObjectUrl>,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<Vec<Vec<u8>>> {
        let source = source.into();
        let ranges = ranges
            .iter()
            .map(|range| match range.end.checked_sub(1) {
                Some(end) if range.start <= end => Ok(ByteRange {
                    start: range.start,
                    end,
                }),
                _ => Err(Error::InvalidInput(format!(
                    "{source}: the range {}..{} holds no byte; give start < end",
                    range.start, range.end
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        self.engine(Arc::new(Silent))
            .fetch_slices(&source, &ranges)
            .await
    }

    /// One piece of a large object, its bytes `range` (`start..end`, end excluded), fetched
    /// into a piece file of its own beside where `item` lands under `destination`, pinned to
    /// the item's ETag (`If-Match`): for a job that spreads one object over several hosts
    /// that share a file system. `adopt_pieces` then makes the object of its pieces. The
    /// summary counts the bytes and requests, and no object; `reporter` hears of the bytes.
    pub async fn download_piece(
        &self,
        item: &Item,
        destination: &Path,
        range: std::ops::Range<u64>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let started = Instant::now();
        let before = self.counters.snapshot();
        let (path, size, etag) = piece_target(item, destination)?;
        let span = match range.end.min(size).checked_sub(1) {
            Some(end) if range.start <= end => ByteRange {
                start: range.start,
                end,
            },
            _ => {
                return Err(Error::InvalidInput(format!(
                    "{}: the piece {}..{} holds no byte of its {} bytes",
                    item.source, range.start, range.end, size
                )))
            }
        };
        reporter.size_discovered(span.end + 1 - span.start);
        let bytes = self
            .engine(reporter)
            .fetch_piece(&item.source, &path, size, &etag, span)
            .await?;
        Ok(Summary::new(
            0,
            0,
            bytes,
            started.elapsed(),
            None,
            self.counters.snapshot().since(&before),
            Vec::new(),
        ))
    }

    /// Move the pieces `download_piece` left for `item` (named by their first bytes,
    /// `starts`) into its temporary file, as if an interrupted run had written them, and
    /// remove them. A download of the item then fetches only what no piece brought, checks
    /// the whole object (the store's checksum, or its MD5) and gives it its name. Returns
    /// the bytes the pieces held.
    pub async fn adopt_pieces(
        &self,
        item: &Item,
        destination: &Path,
        starts: &[u64],
    ) -> Result<u64> {
        let (path, size, etag) = piece_target(item, destination)?;
        let starts = starts.to_vec();
        tokio::task::spawn_blocking(move || adopt_pieces(&path, size, &etag, &starts))
            .await
            .map_err(|join| Error::InvalidInput(format!("adopting pieces crashed: {join}")))?
    }

    fn engine(&self, reporter: Arc<dyn Reporter>) -> Engine<Sources> {
        Engine::new(
            self.sources.clone(),
            self.transfer.clone(),
            self.request_limit.clone(),
            self.counters.clone(),
            reporter,
        )
    }

    /// Run a planner that fills the job queue against the engine that drains it, and sum
    /// up. `listed` names what the planner lists, for the failure it leaves if it stops.
    async fn run<P, F>(
        &self,
        planner: P,
        listed: String,
        dry_run: bool,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary>
    where
        P: FnOnce(mpsc::Sender<Planned>) -> F,
        F: Future<Output = Result<()>> + Send + 'static,
    {
        let started = Instant::now();
        let before = self.counters.snapshot();
        let (queue, jobs) = mpsc::channel(QUEUE_DEPTH);
        let planner = tokio::spawn(planner(queue));
        let engine = Arc::new(self.engine(reporter.clone()));
        let workers = self.transfer.workers;
        let driven = drive(engine, jobs, workers, dry_run, reporter.clone(), started).await;
        // The planner ends once the queue is drained or dropped; it only fails on listing.
        let listing = planner
            .await
            .unwrap_or_else(|join| Err(Error::InvalidInput(format!("planner crashed: {join}"))));
        let mut outcome = driven?;
        if let Err(error) = listing {
            // A listing the store broke is a failure of the keys it did not list (exit 1),
            // even when it broke before any key: nothing about the request itself was wrong.
            let nothing_done = outcome.objects + outcome.failures.len() as u64 == 0;
            let store_broke_it = matches!(error, Error::BadListing { .. });
            if error.is_fatal() || (nothing_done && !store_broke_it) {
                return Err(error);
            }
            let source = format!("{listed} (listing stopped, later keys were not downloaded)");
            report_failure(reporter.as_ref(), &source, None, &error);
            outcome.failures.push(Failure { source, error });
        }
        Ok(Summary::new(
            outcome.objects,
            outcome.skipped,
            outcome.bytes,
            started.elapsed(),
            outcome.first_started,
            self.counters.snapshot().since(&before),
            outcome.failures,
        ))
    }

    /// Every bucket the credentials can see, with its creation date (ListBuckets).
    pub async fn list_buckets(&self) -> Result<Vec<BucketEntry>> {
        self.sources.s3.list_buckets().await
    }

    /// Stream the entries under `url`: every key when `recursive`, else one level with
    /// "folders" as [`Listed::Prefix`].
    pub fn list(
        &self,
        url: &S3Url,
        recursive: bool,
    ) -> impl Stream<Item = Result<Listed>> + Send + use<> {
        one_at_a_time(self.list_pages(url, recursive))
    }

    /// [`Client::list`] in the pieces the listing arrives in, each in key order: one level
    /// comes a store page at a time (what `aws s3 ls` prints folders-first), every key in
    /// batches of up to 1000.
    pub fn list_pages(
        &self,
        url: &S3Url,
        recursive: bool,
    ) -> impl Stream<Item = Result<Vec<Listed>>> + Send + use<> {
        let delimiter = (!recursive).then(|| "/".to_owned());
        self.list_within(url, delimiter, KeyBounds::default())
    }

    /// Stream every key under `url` within one range of its key space (see [`KeyBounds`]):
    /// the ranges [`Client::split_key_space`] gives, listed one after another, list exactly
    /// what [`Client::list`] does.
    pub fn list_range(
        &self,
        url: &S3Url,
        bounds: KeyBounds,
    ) -> impl Stream<Item = Result<Listed>> + Send + use<> {
        one_at_a_time(self.list_within(url, None, bounds))
    }
    /// Boundaries that cut the key space under `url` into up to `parts` ranges, found with
    /// about one small request each, without listing the keys between; none when the prefix
    /// fits in one listing page. Ranges are even in key space, not in key count.
    pub async fn split_key_space(&self, url: &S3Url, parts: usize) -> Result<Vec<String>> {
        let spec = self.list_spec(url, None, KeyBounds::default());
        split_key_space(
            self.sources.s3.clone(),
            self.counters.clone(),
            self.transfer.retry.clone(),
            spec,
            parts,
        )
        .await
    }

    fn list_spec(&self, url: &S3Url, delimiter: Option<String>, bounds: KeyBounds) -> ListSpec {
        ListSpec {
            bucket: url.bucket.clone(),
            prefix: url.key.clone(),
            delimiter,
            parallelism: self.transfer.list_parallelism,
            page_size: self.transfer.list_page_size,
            bounds,
        }
    }

    fn list_within(
        &self,
        url: &S3Url,
        delimiter: Option<String>,
        bounds: KeyBounds,
    ) -> impl Stream<Item = Result<Vec<Listed>>> + Send + use<> {
        let spec = self.list_spec(url, delimiter, bounds);
        list(
            self.sources.s3.clone(),
            self.counters.clone(),
            self.transfer.retry.clone(),
            spec,
        )
    }
}

/// A listing's pages as one entry after another.
fn one_at_a_time(
    pages: impl Stream<Item = Result<Vec<Listed>>> + Send,
) -> impl Stream<Item = Result<Listed>> + Send {
    pages
        .map_ok(|page| futures::stream::iter(page.into_iter().map(Ok)))
        .try_flatten()
}

/// Every failure the summary lists is reported as it happens too.
fn report_failure(
    reporter: &dyn Reporter,
    source: &str,
    destination: Option<&Path>,
    error: &Error,
) {
    reporter.object_reported(&ObjectReport {
        source,
        destination,
        bytes: 0,
        status: Status::Failed,
        verification: None,
        error: Some(error),
    });
}

#[derive(Debug, Default)]
struct Outcome {
    first_started: Option<Duration>,
    objects: u64,
    skipped: u64,
    bytes: u64,
    failures: Vec<Failure>,
}

/// Run queued jobs, `workers` objects at a time, until the queue ends or a fatal error.
async fn drive(
    engine: Arc<Engine<Sources>>,
    mut jobs: mpsc::Receiver<Planned>,
    workers: usize,
    dry_run: bool,
    reporter: Arc<dyn Reporter>,
    started: Instant,
) -> Result<Outcome> {
    let object_slots = Arc::new(Semaphore::new(workers));
    let mut running = JoinSet::new();
    let mut outcome = Outcome::default();
    let record = |outcome: &mut Outcome,
                  (source, target, result): (String, Target, Result<Finished>)| {
        match result {
            Ok(Finished::Downloaded(bytes)) => {
                reporter.object_finished(&source, Ok(bytes));
                outcome.objects += 1;
                outcome.bytes += bytes;
                Ok(())
            }
            Ok(Finished::AlreadyThere(bytes)) => {
                reporter.object_finished(&source, Ok(bytes));
                outcome.skipped += 1;
                Ok(())
            }
            Err(error) if error.is_fatal() => Err(error),
            Err(error) => {
                reporter.object_finished(&source, Err(&error));
                report_failure(reporter.as_ref(), &source, target.path(), &error);
                outcome.failures.push(Failure { source, error });
                Ok(())
            }
        }
    };
    while let Some(planned) = jobs.recv().await {
        let job = match planned {
            Planned::Job(job) => job,
            Planned::Refused(failure) => {
                report_failure(reporter.as_ref(), &failure.source, None, &failure.error);
                outcome.failures.push(failure);
                continue;
            }
        };
        let slot = object_slots
            .clone()
            .acquire_owned()
            .await
            .expect("object slots are never closed");
        outcome
            .first_started
            .get_or_insert_with(|| started.elapsed());
        let (engine, job_reporter) = (engine.clone(), reporter.clone());
        running.spawn(async move {
            let result = if dry_run {
                Ok(preview(&engine, &job, &*job_reporter).await)
            } else {
                engine.download(&job).await
            };
            drop(slot);
            (job.source.to_string(), job.target, result)
        });
        while let Some(done) = running.try_join_next() {
            record(&mut outcome, done.expect("download task panicked"))?;
        }
    }
    while let Some(done) = running.join_next().await {
        record(&mut outcome, done.expect("download task panicked"))?;
    }
    Ok(outcome)
}

/// A dry run's verdict on one job, without a request: left alone when an earlier run left
/// the listed version in place (the engine's own test), else copied.
async fn preview(engine: &Engine<Sources>, job: &Job, reporter: &dyn Reporter) -> Finished {
    let source = job.source.to_string();
    let destination = match &job.target {
        Target::File(path) => path.to_path_buf().display().to_string(),
        Target::Stream(stream) => stream.name().display().to_string(),
        Target::Discard => "(discarded)".to_owned(),
        Target::Memory(_) => "(memory)".to_owned(),
    };
    if let Some(known) = &job.known {
        if engine.already_complete(&job.target, known).is_some() {
            reporter.previewed(Preview::Unchanged {
                source: &source,
                destination: &destination,
            });
            return Finished::AlreadyThere(known.size);
        }
    }
    reporter.previewed(Preview::Copy {
        source: &source,
        destination: &destination,
    });
    Finished::Downloaded(0)
}

/// Where the pieces of `item` go under `destination`, and the version they are of: an item
/// split into pieces needs its size and ETag (a listing's or a manifest's) and a file.
fn piece_target(item: &Item, destination: &Path) -> Result<(FilePath, u64, String)> {
    let (Some(size), Some(etag)) = (item.size, item.etag.clone()) else {
        return Err(Error::InvalidInput(format!(
            "{}: an object fetched in pieces needs its size and ETag; give both",
            item.source
        )));
    };
    match item_target(item, &Destination::Path(destination.to_owned()))? {
        Target::File(path) => Ok((path, size, etag)),
        _ => Err(Error::InvalidInput(format!(
            "{}: its destination is not a regular file; pieces need one",
            item.source
        ))),
    }
}
