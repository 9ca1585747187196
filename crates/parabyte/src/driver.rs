//! The one driver of every copy: a [`CopyRequest`] is decided, planned into jobs on a
//! bounded queue, and the jobs run `workers` at a time through the engine (downloads), the
//! local copier or the uploader, each ending in one [`ObjectReport`]; the [`Summary`] adds them up. Generic over the store, so the CLI,
//! Python and Dask run it against S3 and the web, and the unit tests against the in-memory
//! store. Listing feeds downloads through the queue, so the first object starts with the
//! first page and memory stays flat however many keys there are.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::TryStreamExt;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::blocking::blocking;
use crate::disk::dir::remove_file_below;
use crate::disk::local::{Copied, LocalCopier, LocalJob};
use crate::disk::sink::Target;
use crate::error::{Error, Result};
use crate::location::{Location, ObjectUrl, S3Url};
use crate::plan::{
    decide, list_prefix, plan, plan_into_store, plan_items, plan_local, plan_uploads, CopyRequest,
    Destination, Planned, RemoveRequest, Source, UploadOptions, WebJob, Work,
};
use crate::report::{Failure, ObjectReport, Preview, Reporter, Status, Summary};
use crate::source::listing::{list, KeyBounds, ListSpec};
use crate::source::local::LocalStore;
use crate::source::Store;
use crate::transfer::engine::{Engine, Finished, Job};
use crate::transfer::throttle::RequestLimit;
use crate::transfer::upload::{stream_from, Chunk, CopyJob, UploadJob, Uploader, WriterChunks};
use crate::transfer_scope;
use delete::{delete_batch, report_deleted, DELETE_BATCH};
use web::put_web;

/// Jobs waiting between the listing and the downloads; the listing pauses when it is full.
const QUEUE_DEPTH: usize = 4096;

/// A store with transfer settings, and what every call on it shares: one limit on requests
/// in flight, the local copier (with its limit on chunks in flight), and the counters.
#[derive(Debug)]
pub(crate) struct Driver<S> {
    pub(crate) store: Arc<S>,
    pub(crate) transfer: TransferConfig,
    /// Requests in flight across every call, from any thread.
    request_limit: Arc<RequestLimit>,
    /// How local files are copied, for every call.
    local: Arc<LocalCopier>,
    /// How local files are uploaded, for every call (one memory budget).
    uploader: Arc<Uploader<S>>,
    pub(crate) counters: Arc<Counters>,
}

impl<S: Store<Object = ObjectUrl>> Driver<S> {
    pub(crate) fn new(
        store: Arc<S>,
        transfer: TransferConfig,
        counters: Arc<Counters>,
    ) -> Driver<S> {
        let request_limit = RequestLimit::new(transfer.max_requests);
        let uploader = Uploader::new(
            store.clone(),
            transfer.clone(),
            request_limit.clone(),
            counters.clone(),
        );
        Driver {
            store,
            request_limit,
            local: Arc::new(LocalCopier::new(&transfer, counters.clone())),
            uploader: Arc::new(uploader),
            transfer,
            counters,
        }
    }

    /// Copy what `request` names: an S3 object or prefix, a URL, a batch, a manifest or a
    /// local tree. Per-object failures are in the summary; an `Err` means nothing more
    /// could be done (bad bucket, bad credentials, unusable request).
    pub(crate) async fn copy(
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
                    self.store.clone(),
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
                    match refused_first(refused, &queue).await {
                        true => plan_items(items, destination, queue, planner_reporter).await,
                        false => Ok(()),
                    }
                };
                self.run(planner, String::new(), dry_run, reporter).await
            }
            Work::Local(copy) => {
                let listed = copy.source.display().to_string();
                let planner_reporter = reporter.clone();
                let planner = move |queue| plan_local(copy, queue, planner_reporter);
                self.run(planner, listed, dry_run, reporter).await
            }
            Work::IntoStore {
                items,
                options,
                refused,
            } => {
                let planner_reporter = reporter.clone();
                let planner = move |queue: mpsc::Sender<Planned>| async move {
                    match refused_first(refused, &queue).await {
                        true => plan_into_store(items, options, queue, planner_reporter).await,
                        false => Ok(()),
                    }
                };
                self.run(planner, String::new(), dry_run, reporter).await
            }
            Work::Web { from, to, options } => {
                let job = WebJob {
                    from,
                    to,
                    size: None,
                    etag: None,
                    options: Arc::new(options),
                };
                if dry_run {
                    let from = job.from.to_string();
                    return Ok(self.one_preview(&from, &job.to.to_string(), reporter.as_ref()));
                }
                let put = put_web(&self.uploader, &job, &*reporter);
                self.one_upload(put, &job.to.to_string(), reporter.as_ref())
                    .await
            }
            Work::Stdin { named, to, .. } if dry_run => {
                let from = named.map_or_else(|| "-".into(), |path| path.display().to_string());
                Ok(self.one_preview(&from, &to.to_string(), reporter.as_ref()))
            }
            Work::Stdin { named, to, options } => {
                let input = stream_from(named.as_deref()).await?;
                let put = self.uploader.put_stream(input, &to, &options, &*reporter);
                self.one_upload(put, &to.to_string(), reporter.as_ref())
                    .await
            }
            Work::StdinToFile {
                named: stream,
                directory,
                name,
                options,
            } => {
                let store = Arc::new(LocalStore::new(directory));
                let to = S3Url {
                    bucket: String::new(),
                    key: name,
                };
                let named = store.destination_name(&to);
                if dry_run {
                    return Ok(self.one_preview("-", &named, reporter.as_ref()));
                }
                let uploader = Uploader::new(
                    store,
                    self.transfer.clone(),
                    self.request_limit.clone(),
                    self.counters.clone(),
                );
                let input = stream_from(stream.as_deref()).await?;
                let put = uploader.put_stream(input, &to, &options, &*reporter);
                self.one_upload(put, &named, reporter.as_ref()).await
            }
        }
    }

    /// Copy what `request` names, then delete each source that arrived whole (`mv`; a key
    /// range is a cluster task's share of one). A web server's files cannot be deleted, nor
    /// a batch's sources: both are refused.
    pub(crate) async fn move_objects(
        &self,
        request: &CopyRequest,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let movable = matches!(
            &request.source,
            Source::Location(Location::S3(_) | Location::Local(_)) | Source::KeyRange { .. }
        );
        if !movable {
            return Err(Error::InvalidInput(
                "mv moves S3 objects and local files; a web server's files or a manifest's \
                 cannot be deleted where they are: use cp"
                    .into(),
            ));
        }
        if matches!(
            request.destination,
            Destination::Stdout | Destination::Discard
        ) {
            return Err(Error::InvalidInput(
                "mv deletes each source once its copy is kept, and standard output ('-') or \
                 --discard keeps none: read an object with cat (or cp SOURCE -), then rm it"
                    .into(),
            ));
        }
        if let Some(itself) = moves::onto_itself(request) {
            return Err(Error::InvalidInput(format!(
                "cannot move {itself} onto itself: its destination is the source, and a move \
                 deletes its source; name another destination"
            )));
        }
        let arrived = Arc::new(moves::Arrived::new(reporter.clone(), request));
        let mut summary = self.copy(request, arrived.clone()).await?;
        if !request.options.dry_run {
            moves::delete_sources(
                self.store.clone(),
                &self.transfer,
                &self.counters,
                &arrived,
                reporter.as_ref(),
                &mut summary,
            )
            .await;
        }
        Ok(summary)
    }

    /// Delete what `request` names: a key, or the keys a listing gives that the filters
    /// keep, in batches of up to 1,000 a request. Per-key failures are in the summary.
    pub(crate) async fn remove(
        &self,
        request: &RemoveRequest,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let copy = request.plan()?;
        let listed = format!("s3://{}/{}", copy.source.bucket, list_prefix(&copy));
        let planner = plan(
            self.store.clone(),
            self.counters.clone(),
            self.transfer.clone(),
            copy,
            reporter.clone(),
        );
        let dry_run = request.options.dry_run;
        self.run(planner, listed, dry_run, reporter).await
    }

    /// Delete each of `keys` (of any buckets), up to 1,000 of a bucket a request.
    pub(crate) async fn delete_many(
        &self,
        keys: Vec<S3Url>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let planner_reporter = reporter.clone();
        let planner = move |queue: mpsc::Sender<Planned>| async move {
            for key in keys {
                planner_reporter.object_queued(None);
                if queue.send(Planned::Delete(key)).await.is_err() {
                    break;
                }
            }
            Ok(())
        };
        self.run(planner, String::new(), false, reporter).await
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
            self.store.clone(),
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

    /// Upload each `(file, destination)`, `workers` at a time; failures are in the summary.
    pub(crate) async fn upload_many(
        &self,
        items: Vec<(PathBuf, S3Url)>,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let options = Arc::new(options.write_options()?);
        let planner_reporter = reporter.clone();
        let planner = move |queue| plan_uploads(items, options, queue, planner_reporter);
        self.run(planner, String::new(), false, reporter).await
    }

    /// Store `data` under `to` as one object: an `Err` is its failure.
    pub(crate) async fn put_bytes(
        &self,
        data: Bytes,
        to: &S3Url,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let options = options.write_options()?;
        let put = self.uploader.put_bytes(data, to, &options, &*reporter);
        let mut summary = self
            .one_upload(put, &to.to_string(), reporter.as_ref())
            .await?;
        match summary.failures.pop() {
            Some(failure) => Err(failure.error),
            None => Ok(summary),
        }
    }

    /// Store what a writer sends over `receiver` under `to`, as [`Uploader::put_stream`]
    /// stores standard input: one PUT when it ends within a part, else a multipart upload
    /// sent as it arrives. A writer that stops without [`Chunk::End`] stores nothing.
    pub(crate) async fn put_written(
        &self,
        receiver: mpsc::Receiver<Chunk>,
        to: &S3Url,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let options = options.write_options()?;
        let input = WriterChunks::new(receiver, "(writer)".to_owned());
        let put = self.uploader.put_stream(input, to, &options, &*reporter);
        let mut summary = self
            .one_upload(put, &to.to_string(), reporter.as_ref())
            .await?;
        match summary.failures.pop() {
            Some(failure) => Err(failure.error),
            None => Ok(summary),
        }
    }

    /// A dry run of one upload: its line, and nothing read or written.
    fn one_preview(&self, source: &str, destination: &str, reporter: &dyn Reporter) -> Summary {
        reporter.previewed(Preview::verdict(false, source, destination));
        let now = self.counters.snapshot();
        Summary::new(
            1,
            0,
            0,
            Duration::ZERO,
            Some(Duration::ZERO),
            now.since(&now),
            Vec::new(),
        )
    }

    /// The summary of one upload that `put` runs into `destination`; its failure is the
    /// summary's (a fatal one, the call's).
    async fn one_upload(
        &self,
        put: impl Future<Output = Result<Finished>>,
        destination: &str,
        reporter: &dyn Reporter,
    ) -> Result<Summary> {
        let started = Instant::now();
        let before = self.counters.snapshot();
        let (objects, skipped, bytes, failures) = match put.await {
            Ok(Finished::Downloaded(bytes)) => (1, 0, bytes, Vec::new()),
            Ok(Finished::AlreadyThere(_) | Finished::Deleted) => (0, 1, 0, Vec::new()),
            Err(error) if error.is_fatal() => return Err(error),
            Err(error) => {
                let source = destination.to_owned();
                report_failure(reporter, &source, None, &error);
                (0, 0, 0, vec![Failure { source, error }])
            }
        };
        let mut summary = Summary::new(
            objects,
            skipped,
            bytes,
            started.elapsed(),
            Some(Duration::ZERO),
            self.counters.snapshot().since(&before),
            failures,
        );
        summary.sent_with_md5_objects = self.counters.take_sent_with_md5_named();
        Ok(summary)
    }

    pub(crate) fn engine(&self, reporter: Arc<dyn Reporter>) -> Engine<S> {
        Engine::new(
            self.store.clone(),
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
        // In a set, so that a stopped run aborts its planner too.
        let mut planning = JoinSet::new();
        planning.spawn(transfer_scope::enter(reporter.clone(), planner(queue)));
        let movers = Movers {
            engine: Arc::new(self.engine(reporter.clone())),
            local: self.local.clone(),
            uploader: self.uploader.clone(),
        };
        let workers = self.transfer.workers;
        let driven = transfer_scope::enter(
            reporter.clone(),
            drive(
                movers,
                jobs,
                workers,
                dry_run,
                self.transfer.ignore_archived,
                reporter.clone(),
                started,
            ),
        )
        .await;
        // The planner ends once the queue is drained or dropped; it only fails on listing.
        let listing = match planning.join_next().await {
            Some(Ok(listing)) => listing,
            Some(Err(join)) => Err(Error::InvalidInput(format!("planner crashed: {join}"))),
            None => Ok(()), // never: the one planner was spawned above
        };
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
        let mut summary = Summary::new(
            outcome.objects,
            outcome.skipped,
            outcome.bytes,
            started.elapsed(),
            outcome.first_started,
            self.counters.snapshot().since(&before),
            outcome.failures,
        );
        summary.deleted = outcome.deleted;
        summary.sent_with_md5_objects = self.counters.take_sent_with_md5_named();
        Ok(summary)
    }
}

/// An object passed over for a reason that fails nothing (a link in a tree, an archived
/// object under --ignore-glacier-warnings): a skip that says why.
fn pass_over(reporter: &dyn Reporter, source: &str, why: &Error) {
    reporter.object_reported(&ObjectReport {
        source,
        destination: None,
        bytes: 0,
        status: Status::Skipped,
        verification: None,
        error: Some(why),
    });
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
    deleted: u64,
    bytes: u64,
    failures: Vec<Failure>,
}

/// What moves the bytes of a queued job: the engine for objects of the store, the local
/// copier for local files, the uploader for files to the store.
struct Movers<S> {
    engine: Arc<Engine<S>>,
    local: Arc<LocalCopier>,
    uploader: Arc<Uploader<S>>,
}

/// A queued job to run.
enum Move {
    Object(Job),
    Local(LocalJob),
    Upload(UploadJob),
    Copy(CopyJob),
    Web(WebJob),
    /// Keys of one bucket to delete in one request.
    Delete(Vec<S3Url>),
    /// A file below a directory to delete.
    DeleteFile {
        root: PathBuf,
        relative: PathBuf,
    },
}

/// One job's end: its source, the file it was to write, and how it went.
type Ended = (String, Option<PathBuf>, Result<Finished>);

impl<S: Store<Object = ObjectUrl>> Movers<S> {
    /// Run one job (or preview it, in a dry run) on its own task, which holds `slot` until
    /// the job ends.
    fn start(
        &self,
        job: Move,
        slot: OwnedSemaphorePermit,
        dry_run: bool,
        reporter: Arc<dyn Reporter>,
    ) -> impl Future<Output = Vec<Ended>> + Send + 'static {
        let (engine, local) = (self.engine.clone(), self.local.clone());
        let uploader = self.uploader.clone();
        async move {
            let _slot = slot;
            if let Move::Delete(keys) = job {
                let (store, transfer, counters) = uploader.parts();
                let deleted =
                    delete_batch(store, transfer, counters, keys, dry_run, &*reporter).await;
                let ended = deleted
                    .into_iter()
                    .map(|(source, result)| (source, None, result));
                return ended.collect();
            }
            if let Move::DeleteFile { root, relative } = job {
                return vec![delete_file(root, relative, dry_run, reporter).await];
            }
            // Awaited in the task's own match: an async block held in a local and then
            // awaited was kept twice in the task, 23 KiB instead of 12 for every object.
            let ended = match job {
                Move::Object(job) => {
                    let result = if dry_run {
                        Ok(preview(&engine, &job, &*reporter).await)
                    } else {
                        engine.download(&job).await
                    };
                    let destination = job.target.path().map(Path::to_path_buf);
                    (job.source.to_string(), destination, result)
                }
                Move::Local(job) => {
                    let copied = if dry_run {
                        Ok(local.preview(&job, &*reporter))
                    } else {
                        local.copy(&job, &*reporter).await
                    };
                    let result = copied.map(|copied| match copied {
                        Copied::Bytes(bytes) => Finished::Downloaded(bytes),
                        Copied::Unchanged(size) => Finished::AlreadyThere(size),
                    });
                    (
                        source_of(&job),
                        job.destination().map(Path::to_path_buf),
                        result,
                    )
                }
                Move::Upload(job) => {
                    let source = job.from.display().to_string();
                    let result = match dry_run {
                        true => Ok(preview_write(&*reporter, &source, &job.to)),
                        false => uploader.upload(&job, &*reporter).await,
                    };
                    (source, None, result)
                }
                Move::Copy(job) => {
                    let source = job.from.to_string();
                    let result = match dry_run {
                        true => Ok(preview_write(&*reporter, &source, &job.to)),
                        false => uploader.copy(&job, &*reporter).await,
                    };
                    (source, None, result)
                }
                Move::Web(job) => {
                    let source = job.from.to_string();
                    let result = match dry_run {
                        true => Ok(preview_write(&*reporter, &source, &job.to)),
                        false => put_web(&uploader, &job, &*reporter).await,
                    };
                    (source, None, result)
                }
                // Taken above.
                Move::Delete(_) | Move::DeleteFile { .. } => {
                    (String::new(), None, Ok(Finished::Deleted))
                }
            };
            vec![ended]
        }
    }
}

/// A dry run's line for an upload or a copy to `to`: it would be written.
fn preview_write(reporter: &dyn Reporter, source: &str, to: &S3Url) -> Finished {
    reporter.previewed(Preview::verdict(false, source, &to.to_string()));
    Finished::Downloaded(0)
}

/// Delete one file of a sync's destination (in a dry run, say so), on a blocking thread.
async fn delete_file(
    root: PathBuf,
    relative: PathBuf,
    dry_run: bool,
    reporter: Arc<dyn Reporter>,
) -> Ended {
    let path = root.join(&relative);
    let source = path.display().to_string();
    if dry_run {
        reporter.previewed(Preview::Delete { source: &source });
        return (source, None, Ok(Finished::Deleted));
    }
    let removed = blocking(move || remove_file_below(&root, &relative)).await;
    if removed.is_ok() {
        report_deleted(reporter.as_ref(), &source);
    }
    (source, None, removed.map(|()| Finished::Deleted))
}

fn source_of(job: &LocalJob) -> String {
    job.from.display().to_string()
}

/// Run queued jobs, `workers` objects at a time, until the queue ends or a fatal error.
/// `ignore_archived`: an object in an archive tier is passed over, not a failure.
async fn drive<S: Store<Object = ObjectUrl>>(
    movers: Movers<S>,
    mut jobs: mpsc::Receiver<Planned>,
    workers: usize,
    dry_run: bool,
    ignore_archived: bool,
    reporter: Arc<dyn Reporter>,
    started: Instant,
) -> Result<Outcome> {
    let object_slots = Arc::new(Semaphore::new(workers));
    let mut running: JoinSet<Vec<Ended>> = JoinSet::new();
    let mut outcome = Outcome::default();
    let mut deletes: Vec<S3Url> = Vec::new();
    let record = |outcome: &mut Outcome, (source, destination, result): Ended| match result {
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
        Ok(Finished::Deleted) => {
            reporter.object_finished(&source, Ok(0));
            outcome.deleted += 1;
            Ok(())
        }
        Err(error) if error.is_fatal() => Err(error),
        // --ignore-glacier-warnings: said as a skip with its reason, and no failure.
        Err(error @ Error::Archived { .. }) if ignore_archived => {
            reporter.object_finished(&source, Ok(0));
            pass_over(reporter.as_ref(), &source, &error);
            outcome.skipped += 1;
            Ok(())
        }
        Err(error) => {
            reporter.object_finished(&source, Err(&error));
            report_failure(reporter.as_ref(), &source, destination.as_deref(), &error);
            outcome.failures.push(Failure { source, error });
            Ok(())
        }
    };
    loop {
        let planned = jobs.recv().await;
        let job = match planned {
            Some(Planned::Job(job)) => Move::Object(job),
            Some(Planned::Local(job)) => Move::Local(job),
            Some(Planned::Upload(job)) => Move::Upload(job),
            Some(Planned::Copy(job)) => Move::Copy(job),
            Some(Planned::Web(job)) => Move::Web(job),
            // A batch is of one bucket: another bucket's key starts the next one.
            Some(Planned::Delete(key)) => match deletes.first() {
                Some(first) if first.bucket != key.bucket => {
                    Move::Delete(std::mem::replace(&mut deletes, vec![key]))
                }
                _ => {
                    deletes.push(key);
                    if deletes.len() < DELETE_BATCH {
                        continue;
                    }
                    Move::Delete(std::mem::take(&mut deletes))
                }
            },
            Some(Planned::DeleteFile { root, relative }) => Move::DeleteFile { root, relative },
            Some(Planned::Unchanged { source, size }) => {
                reporter.bytes_skipped(size);
                reporter.object_reported(&ObjectReport {
                    source: &source,
                    destination: None,
                    bytes: 0,
                    status: Status::Skipped,
                    verification: None,
                    error: None,
                });
                record(
                    &mut outcome,
                    (source, None, Ok(Finished::AlreadyThere(size))),
                )?;
                continue;
            }
            Some(Planned::Refused(failure)) => {
                report_failure(reporter.as_ref(), &failure.source, None, &failure.error);
                outcome.failures.push(failure);
                continue;
            }
            Some(Planned::PassedOver(passed)) => {
                pass_over(reporter.as_ref(), &passed.source, &passed.error);
                outcome.skipped += 1;
                continue;
            }
            // The queue ended: what is left to delete goes in a last batch.
            None if !deletes.is_empty() => Move::Delete(std::mem::take(&mut deletes)),
            None => break,
        };
        let slot = object_slots
            .clone()
            .acquire_owned()
            .await
            .expect("object slots are never closed");
        outcome
            .first_started
            .get_or_insert_with(|| started.elapsed());
        let job = movers.start(job, slot, dry_run, reporter.clone());
        running.spawn(transfer_scope::carry(job));
        while let Some(done) = running.try_join_next() {
            for ended in done.expect("download task panicked") {
                record(&mut outcome, ended)?;
            }
        }
    }
    while let Some(done) = running.join_next().await {
        for ended in done.expect("download task panicked") {
            record(&mut outcome, ended)?;
        }
    }
    Ok(outcome)
}

/// A dry run's verdict on one job, without a request: left alone when an earlier run left
/// the listed version in place (the engine's own test), else copied.
async fn preview<S: Store<Object = ObjectUrl>>(
    engine: &Engine<S>,
    job: &Job,
    reporter: &dyn Reporter,
) -> Finished {
    let source = job.source.to_string();
    let destination = match &job.target {
        Target::File(path) => path.to_path_buf().display().to_string(),
        Target::Stream(stream) => stream.name().display().to_string(),
        Target::Discard => "(discarded)".to_owned(),
        Target::Memory(_) => "(memory)".to_owned(),
    };
    let unchanged = job
        .known
        .as_ref()
        .filter(|known| engine.already_complete(&job.target, known).is_some());
    reporter.previewed(Preview::verdict(unchanged.is_some(), &source, &destination));
    match unchanged {
        Some(known) => Finished::AlreadyThere(known.size),
        None => Finished::Downloaded(0),
    }
}

/// Queue the failures found while the request was read (a manifest's bad lines) ahead of
/// what is planned; false when the run stopped listening.
async fn refused_first(refused: Vec<Failure>, queue: &mpsc::Sender<Planned>) -> bool {
    for failure in refused {
        if queue.send(Planned::Refused(failure)).await.is_err() {
            return false;
        }
    }
    true
}

mod delete;
mod moves;
mod pieces;
mod shared_uploads;
mod sync;
#[cfg(test)]
mod tests;
mod web;
