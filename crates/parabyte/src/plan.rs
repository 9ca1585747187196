//! From what the user asked for to jobs for the engine: the requests and destinations of the
//! public API, batch items, and the planners that turn one object, a listing or a batch
//! into a queue of jobs (every key checked to be a safe path, collisions reported).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use tokio::sync::mpsc;

use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::paths::{
    check_writable, linked_directory, relative_path, CollisionGuard, Verdict,
};
use crate::disk::sink::{FilePath, StreamTarget, Target};
use crate::error::{Error, Result};
use crate::location::{local_destination, Location, ObjectUrl, S3Url};
use crate::manifest::{Item, Manifest};
use crate::pattern::{excluded_by, has_wildcard, Filter, Pattern};
use crate::report::{Failure, Preview, Reporter};
use crate::source::listing::{list, KeyBounds, ListSpec, Listed};
use crate::source::Store;
use crate::transfer::engine::{Job, Known};
use crate::validator::Validator;

/// Where downloaded bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A file, or a directory when it exists as one or ends in `/` (a prefix always goes
    /// into a directory).
    Path(PathBuf),
    /// Fetch everything, keep nothing: measures the store and the network, not the disk.
    Discard,
    /// One object's bytes, in order, to standard output (`-` on the command line).
    Stdout,
}

/// What a copy reads from.
#[derive(Debug, Clone)]
pub enum Source {
    /// An S3 object, or a prefix when the key is empty or ends in `/`; an `http(s)://` URL;
    /// or a local file or directory (whose contents are copied).
    Location(Location),
    /// A batch of objects, each with what is already known of it (a list from Python).
    Items(Vec<Item>),
    /// A manifest file (see [`crate::Manifest`]); each bad line is a failure of its own.
    Manifest(PathBuf),
    /// One range of the key space under an S3 prefix: one task of a copy spread over several
    /// machines. Keys land at the same paths as when the whole prefix is copied.
    KeyRange {
        /// The prefix (`dir` means `dir/`, as for a recursive copy).
        prefix: S3Url,
        /// Which of its keys.
        bounds: KeyBounds,
    },
}

/// A copy to run: what [`crate::Client::copy`] takes, from the CLI and Python alike.
#[derive(Debug, Clone)]
pub struct CopyRequest {
    /// Where the bytes come from.
    pub source: Source,
    /// Where they go: a directory for a prefix, a batch or a tree.
    pub destination: Destination,
    /// Take an S3 source as a prefix, even without a trailing `/`.
    pub recursive: bool,
    /// Filters, wildcards and dry runs.
    pub options: CopyOptions,
}

/// How a copy chooses its objects and whether it fetches them.
#[derive(Debug, Clone, Default)]
pub struct CopyOptions {
    /// `--exclude` / `--include` in the order given, matched against each object's path
    /// below the source (the path it gets under the destination); the last match decides.
    pub filters: Vec<Filter>,
    /// Take the source as written: `*`, `?` and `[` in it are part of the name, not a pattern.
    pub raw: bool,
    /// Decide everything, fetch nothing: each object goes to [`Reporter::previewed`] as
    /// what would be copied, or why it would be skipped. Listing requests still go out.
    pub dry_run: bool,
}

impl CopyRequest {
    /// A request for `source` as users write it: `s3://bucket/key`, `s3://bucket/prefix/`,
    /// `http(s)://host/path` or a local path.
    pub fn parse(source: &str, destination: Destination, recursive: bool) -> Result<CopyRequest> {
        Ok(CopyRequest {
            source: Source::Location(Location::parse(source)?),
            destination,
            recursive,
            options: CopyOptions::default(),
        })
    }

    /// True when the request names exactly one remote object (not a prefix, a batch or a
    /// local tree): its failure is the whole request's, which Python raises.
    pub fn names_one_object(&self) -> bool {
        match &self.source {
            Source::Location(Location::S3(url)) => {
                !(self.recursive || url.is_prefix() || self.is_pattern(&url.key))
            }
            Source::Location(Location::Http(_)) => true,
            Source::Location(Location::Local(_))
            | Source::Items(_)
            | Source::Manifest(_)
            | Source::KeyRange { .. } => false,
        }
    }

    /// True when a source reads as a wildcard pattern (it has one, and --raw is off).
    fn is_pattern(&self, source: &str) -> bool {
        !self.options.raw && has_wildcard(source)
    }

    /// The source as a pattern, when it is one.
    fn pattern(&self, source: &str) -> Result<Option<Pattern>> {
        self.is_pattern(source)
            .then(|| Pattern::new(source))
            .transpose()
    }
}

/// A request decided: which of the three ways it runs.
#[derive(Debug)]
pub(crate) enum Work {
    /// One S3 object, or a listing's worth.
    Store(StoreCopy),
    /// A batch; `refused` are manifest lines that are not items, failures of their own.
    Items {
        items: Vec<Item>,
        destination: Destination,
        refused: Vec<Failure>,
    },
    /// A local file or tree (or the files a pattern matches) to another local path.
    Local {
        source: PathBuf,
        destination: PathBuf,
        pattern: Option<Pattern>,
    },
}

/// An S3 object or prefix to a destination.
#[derive(Debug, Clone)]
pub(crate) struct StoreCopy {
    pub source: S3Url,
    pub destination: Destination,
    pub recursive: bool,
    /// The key as a wildcard pattern: list its literal prefix, keep the keys it matches.
    pub pattern: Option<Pattern>,
    pub filters: Vec<Filter>,
    pub dry_run: bool,
    /// The part of a prefix's key space to copy (all of it by default).
    pub bounds: KeyBounds,
}

impl StoreCopy {
    /// True when the request lists (a prefix or a pattern) rather than fetches one key.
    pub(crate) fn lists(&self) -> bool {
        self.recursive || self.source.is_prefix() || self.pattern.is_some()
    }
}

/// Decide how a request runs: the one place that tells S3 from web from local from manifest.
pub(crate) async fn decide(request: &CopyRequest) -> Result<Work> {
    if let Destination::Path(path) = &request.destination {
        local_destination(path.as_os_str())?;
    }
    let destination = request.destination.clone();
    let location = match &request.source {
        Source::Location(location) => location,
        Source::Items(items) => {
            return Ok(Work::Items {
                items: items.clone(),
                destination,
                refused: Vec::new(),
            })
        }
        Source::Manifest(path) => return read_manifest(path, destination).await,
        Source::KeyRange { prefix, bounds } => {
            // A key range is a part of a prefix: filters and dry runs apply as to the whole.
            return Ok(Work::Store(StoreCopy {
                source: prefix.clone(),
                destination,
                recursive: true,
                pattern: None,
                filters: request.options.filters.clone(),
                dry_run: request.options.dry_run,
                bounds: bounds.clone(),
            }));
        }
    };
    match location {
        Location::S3(source) => Ok(Work::Store(StoreCopy {
            source: source.clone(),
            destination,
            recursive: request.recursive,
            pattern: request.pattern(&source.key)?,
            filters: request.options.filters.clone(),
            dry_run: request.options.dry_run,
            bounds: KeyBounds::default(),
        })),
        Location::Http(url) if request.recursive => Err(Error::InvalidInput(format!(
            "a recursive copy needs an s3:// prefix; {url} is one file"
        ))),
        Location::Http(url) => {
            let (item, destination) = to_path(ObjectUrl::Http(url.clone()), destination);
            Ok(Work::Items {
                items: vec![item],
                destination,
                refused: Vec::new(),
            })
        }
        Location::Local(source) => match destination {
            Destination::Path(destination) => Ok(Work::Local {
                pattern: request.pattern(&source.to_string_lossy())?,
                source: source.clone(),
                destination,
            }),
            Destination::Discard => Err(Error::InvalidInput(
                "discarding measures a store or a web server; a local source needs a destination"
                    .into(),
            )),
            Destination::Stdout => Err(Error::InvalidInput(
                "a local source needs a destination path, not stdout".into(),
            )),
        },
    }
}

/// A manifest's items, and its bad lines as failures named `FILE:LINE`; `-` is standard
/// input (`parabyte ls -r --json ... | jq ... | parabyte cp --manifest - DEST`).
async fn read_manifest(path: &Path, destination: Destination) -> Result<Work> {
    let (text, name) = if path == Path::new("-") {
        let read = tokio::task::spawn_blocking(|| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text).map(|_| text)
        });
        let text = read
            .await
            .map_err(std::io::Error::other)
            .and_then(|read| read)
            .map_err(|e| Error::io("cannot read the manifest from", "standard input", e))?;
        (text, "stdin".to_owned())
    } else {
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|e| Error::io("cannot read manifest", path, e))?;
        (text, path.display().to_string())
    };
    let manifest = Manifest::parse(&text);
    let refused = manifest
        .errors
        .into_iter()
        .map(|error| Failure {
            source: format!("{name}:{}", error.line),
            error: Error::InvalidInput(error.message),
        })
        .collect();
    Ok(Work::Items {
        items: manifest.items,
        destination,
        refused,
    })
}

/// One source to `destination` as `cp` reads it: into the directory when it is one (exists
/// as one or ends in '/'), else to that file name. Returns the item and the directory the
/// batch goes into.
fn to_path(source: ObjectUrl, destination: Destination) -> (Item, Destination) {
    let mut item = Item {
        source,
        destination: None,
        size: None,
        etag: None,
    };
    let destination = match destination {
        Destination::Path(path) if StreamTarget::device(&path, true).is_some() => {
            // A device or FIFO is written as it is, not as a name in its directory.
            item.destination = Some(std::path::absolute(&path).unwrap_or(path));
            Destination::Path(PathBuf::from("."))
        }
        Destination::Path(path) if !(path.is_dir() || path.to_string_lossy().ends_with('/')) => {
            item.destination = path.file_name().map(PathBuf::from);
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            Destination::Path(parent.unwrap_or(Path::new(".")).to_owned())
        }
        other => other,
    };
    (item, destination)
}

/// One planned item: an object to fetch, or one that cannot be.
#[derive(Debug)]
pub(crate) enum Planned {
    Job(Job),
    Refused(Failure),
}

/// The prefix a recursive request lists: `dir` means `dir/`, as in `aws s3 cp --recursive`;
/// a pattern's literal prefix, as s5cmd lists it.
pub(crate) fn list_prefix(request: &StoreCopy) -> String {
    let key = &request.source.key;
    if let Some(pattern) = &request.pattern {
        pattern.literal_prefix().to_owned()
    } else if key.is_empty() || key.ends_with('/') {
        key.clone()
    } else {
        format!("{key}/")
    }
}

/// The planner of a copy request: one object, or a listing's worth.
pub(crate) fn plan<S: Store>(
    store: Arc<S>,
    counters: Arc<Counters>,
    transfer: TransferConfig,
    request: StoreCopy,
    reporter: Arc<dyn Reporter>,
) -> impl FnOnce(mpsc::Sender<Planned>) -> BoxFuture<'static, Result<()>> {
    move |queue| plan_request(store, counters, transfer, request, queue, reporter).boxed()
}

/// Turn the request into jobs on the queue: one object, or a listing's worth.
async fn plan_request<S: Store>(
    store: Arc<S>,
    counters: Arc<Counters>,
    transfer: TransferConfig,
    request: StoreCopy,
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
) -> Result<()> {
    if request.lists() {
        match &request.destination {
            Destination::Stdout => {
                return Err(Error::InvalidInput(format!(
                    "s3://{}/{} is a prefix: its objects cannot all go to stdout; give a directory",
                    request.source.bucket,
                    list_prefix(&request)
                )))
            }
            Destination::Path(root) => check_writable(root, root)?,
            Destination::Discard => {}
        }
        let prefix = list_prefix(&request);
        let spec = ListSpec {
            bucket: request.source.bucket.clone(),
            prefix: prefix.clone(),
            delimiter: None,
            parallelism: transfer.list_parallelism,
            page_size: transfer.list_page_size,
            bounds: request.bounds.clone(),
        };
        let listing = list(store, counters, transfer.retry, spec);
        return plan_listing(listing, &request, &prefix, &queue, reporter.as_ref()).await;
    }
    // Filters see a single object's name, as the AWS CLI matches its path below the directory.
    let name = request.source.key.rsplit('/').next().unwrap_or_default();
    if let Some(filter) = excluded_by(&request.filters, name) {
        if request.dry_run {
            let source = request.source.to_string();
            reporter.previewed(Preview::Excluded {
                source: &source,
                filter,
            });
        }
        return Ok(());
    }
    let target = match &request.destination {
        Destination::Discard => Ok(Target::Discard),
        Destination::Stdout => Ok(Target::Stream(StreamTarget::stdout())),
        // A path the user named that cannot be written is fatal, before any GET; a key
        // whose name cannot be a file there is refused on its own.
        Destination::Path(path) => match single_object_path(path, &request.source.key) {
            Ok(path) => Ok(user_file_target(&path)?),
            Err(reason) => Err(reason),
        },
    };
    let mut job = Job {
        source: request.source.clone().into(),
        known: None,
        target: Target::Discard,
    };
    let planned = match target {
        Ok(target) => {
            reporter.object_queued(None);
            job.target = target;
            Planned::Job(job)
        }
        Err(reason) => {
            let key = request.source.key;
            refuse(&job, Error::UnsafeKey { key, reason })
        }
    };
    // A closed queue means the downloads stopped (fatal error); nothing to add.
    let _ = queue.send(planned).await;
    Ok(())
}

/// Where the paths of listed keys start: after the last '/' of a pattern's literal prefix
/// (so `imgs/*.jpg` puts `imgs/a/b.jpg` at `a/b.jpg`, as s5cmd does), else after the prefix.
fn relative_base<'a>(request: &'a StoreCopy, prefix: &'a str) -> &'a str {
    match &request.pattern {
        Some(pattern) => pattern.literal_directory(),
        None => prefix,
    }
}

/// Map listed objects to jobs: keep the keys the pattern matches and the filters let through,
/// check each key can be a path, hold keys back until they are known not to collide with a
/// "folder" of the same name, and queue them in listing order. A listing that matches
/// nothing ends with a failure that says so.
async fn plan_listing(
    listing: impl Stream<Item = Result<Vec<Listed>>>,
    request: &StoreCopy,
    prefix: &str,
    queue: &mpsc::Sender<Planned>,
    reporter: &dyn Reporter,
) -> Result<()> {
    let mut listing = std::pin::pin!(listing);
    let mut guard = CollisionGuard::default();
    let base = relative_base(request, prefix);
    let mut matched = false;
    // A key named exactly like the pattern: the user may have meant it literally.
    let mut literal_key_listed = false;
    while let Some(page) = listing.next().await {
        let page = match page {
            Ok(page) => page,
            Err(error) => {
                // Keys already listed are still downloaded or reported, then the listing fails.
                for verdict in guard.finish() {
                    if !send_verdict(queue, verdict, base, &request.destination, reporter).await {
                        break;
                    }
                }
                return Err(error);
            }
        };
        for entry in page {
            let Listed::Object(object) = entry else {
                continue;
            };
            // A zero-byte key ending in '/' is a console-made "folder": nothing to write.
            if object.key.ends_with('/') && object.size == 0 {
                continue;
            }
            if let Some(pattern) = &request.pattern {
                if !pattern.matches(&object.key) {
                    literal_key_listed |= object.key == request.source.key;
                    continue;
                }
            }
            matched = true;
            let relative = object
                .key
                .strip_prefix(prefix)
                .and_then(|_| object.key.get(base.len()..))
                .map(str::to_owned);
            if let Some(filter) = relative
                .as_deref()
                .and_then(|relative| excluded_by(&request.filters, relative))
            {
                if request.dry_run {
                    let source = format!("s3://{}/{}", request.source.bucket, object.key);
                    reporter.previewed(Preview::Excluded {
                        source: &source,
                        filter,
                    });
                }
                continue;
            }
            // An unsafe key fails at once, so it can never pass for one side of a collision.
            let unsafe_reason = match (&relative, &request.destination) {
                (None, _) => Some("it is not under the listed prefix".to_owned()),
                (Some(relative), Destination::Path(_)) => relative_path(relative).err(),
                // A prefix never lists for stdout: that is refused before listing.
                (Some(_), Destination::Discard | Destination::Stdout) => None,
            };
            let refusal = unsafe_reason.map(|reason| Error::UnsafeKey {
                key: object.key.clone(),
                reason,
            });
            let job = Job {
                source: ObjectUrl::S3(S3Url {
                    bucket: request.source.bucket.clone(),
                    key: object.key,
                }),
                known: Some(Known {
                    size: object.size,
                    validator: object.etag.map(Validator::ETag),
                    modified: object.last_modified.map(SystemTime::from),
                }),
                target: Target::Discard,
            };
            if let Some(error) = refusal {
                if queue.send(refuse(&job, error)).await.is_err() {
                    return Ok(());
                }
                continue;
            }
            let relative = relative.unwrap_or_default();
            for verdict in guard.push(relative.clone(), (relative, job)) {
                if !send_verdict(queue, verdict, base, &request.destination, reporter).await {
                    return Ok(());
                }
            }
        }
    }
    for verdict in guard.finish() {
        if !send_verdict(queue, verdict, base, &request.destination, reporter).await {
            return Ok(());
        }
    }
    if !matched {
        let failure = nothing_matched(request, prefix, literal_key_listed);
        let _ = queue.send(Planned::Refused(failure)).await;
    }
    Ok(())
}

/// The failure of a prefix or pattern under which nothing was listed: it names what was
/// asked for and what was looked at.
fn nothing_matched(request: &StoreCopy, prefix: &str, literal_key_listed: bool) -> Failure {
    let bucket = &request.source.bucket;
    let (what, detail) = match &request.pattern {
        Some(pattern) if literal_key_listed => (
            format!("s3://{bucket}/{pattern}"),
            "no key matches this wildcard pattern, but a key of exactly this name exists; \
             add --raw to copy that key"
                .to_owned(),
        ),
        Some(pattern) => (
            format!("s3://{bucket}/{pattern}"),
            format!(
                "no key matches this wildcard pattern (every key under s3://{bucket}/{prefix} \
                 was compared); --raw takes '*', '?' and '[' literally"
            ),
        ),
        None => (
            format!("s3://{bucket}/{prefix}"),
            "no object under this prefix; check the spelling of the bucket and prefix".to_owned(),
        ),
    };
    Failure {
        source: what.clone(),
        error: Error::NothingMatched { what, detail },
    }
}

/// Queue one decided key; false when the downloads have stopped listening.
async fn send_verdict(
    queue: &mpsc::Sender<Planned>,
    verdict: Verdict<(String, Job)>,
    prefix: &str,
    destination: &Destination,
    reporter: &dyn Reporter,
) -> bool {
    let planned = match verdict {
        Verdict::Collides {
            item: (relative, job),
            other,
        } => {
            let key = format!("{prefix}{relative}");
            // The shorter key is the one that wants to be a file where the other needs a directory.
            let path = if relative.len() < other.len() {
                relative
            } else {
                other.clone()
            };
            let collision = Error::Collision {
                key,
                other: format!("{prefix}{other}"),
                path,
            };
            refuse(&job, collision)
        }
        Verdict::Clear((relative, mut job)) => match destination {
            // A prefix never plans for stdout (refused before listing).
            Destination::Discard | Destination::Stdout => Planned::Job(job),
            Destination::Path(root) => match relative_path(&relative) {
                Ok(path) => match linked_directory(root, &path) {
                    None => {
                        job.target = key_target(FilePath::below(root, &path));
                        Planned::Job(job)
                    }
                    Some(link) => {
                        let reason = format!(
                            "'{}' in the destination is a symbolic link, and parabyte never writes through links",
                            link.display()
                        );
                        refuse(
                            &job,
                            Error::UnsafeKey {
                                key: format!("{prefix}{relative}"),
                                reason,
                            },
                        )
                    }
                },
                Err(reason) => refuse(
                    &job,
                    Error::UnsafeKey {
                        key: format!("{prefix}{relative}"),
                        reason,
                    },
                ),
            },
        },
    };
    if let Planned::Job(job) = &planned {
        reporter.object_queued(job.known.as_ref().map(|k| k.size));
    }
    queue.send(planned).await.is_ok()
}

/// Queue a batch in the order given. Each item's path is checked as a listed key's would be,
/// and two items may not share a path: they would write into one temporary file.
pub(crate) async fn plan_items(
    items: Vec<Item>,
    destination: Destination,
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
) -> Result<()> {
    if destination == Destination::Stdout && items.len() > 1 {
        return Err(Error::InvalidInput(format!(
            "{} objects cannot all go to stdout; give a directory",
            items.len()
        )));
    }
    let mut taken = HashMap::new();
    let mut root_checked = false;
    for item in items {
        let job = Job {
            known: item.size.map(|size| Known {
                size,
                validator: item.etag.clone().map(Validator::ETag),
                modified: None,
            }),
            target: Target::Discard,
            source: item.source.clone(),
        };
        let target = item_target(&item, &destination);
        if let (Ok(Target::File(_)), Destination::Path(root)) = (&target, &destination) {
            if !std::mem::replace(&mut root_checked, true) {
                // Once, before the first file is fetched: a destination that cannot be
                // written fails the whole batch, not every item in turn.
                check_writable(root, root)?;
            }
        }
        let planned = match target {
            Err(error) => refuse(&job, error),
            Ok(target) => {
                let clash = match &target {
                    Target::File(path) => taken.insert(path.clone(), item.source.clone()),
                    _ => None,
                };
                match clash {
                    Some(first) => refuse(
                        &job,
                        Error::InvalidInput(format!(
                            "{} has the same destination as {first}; give one of them another path",
                            item.source
                        )),
                    ),
                    None => {
                        reporter.object_queued(item.size);
                        Planned::Job(Job { target, ..job })
                    }
                }
            }
        };
        if queue.send(planned).await.is_err() {
            break;
        }
    }
    Ok(())
}

/// Where one item of a batch goes, or why it cannot go there.
pub(crate) fn item_target(item: &Item, destination: &Destination) -> Result<Target> {
    let root = match destination {
        Destination::Path(root) => root,
        Destination::Stdout => return Ok(Target::Stream(StreamTarget::stdout())),
        Destination::Discard => return Ok(Target::Discard),
    };
    let unsafe_path = |reason: String| Error::UnsafeKey {
        key: item.source.to_string(),
        reason,
    };
    let path = match &item.destination {
        // Absolute: the user's own choice of path, a device behind a link included.
        Some(path) if path.is_absolute() => {
            return Ok(match StreamTarget::device(path, true) {
                Some(stream) => Target::Stream(stream),
                None => Target::File(FilePath::at(path)),
            })
        }
        Some(path) => {
            let text = path
                .to_str()
                .ok_or_else(|| unsafe_path(format!("its destination {path:?} is not UTF-8")))?;
            relative_path(text)
                .map_err(|reason| unsafe_path(format!("its destination {reason}")))?
        }
        None => {
            let name = item.source.file_name().unwrap_or_default();
            relative_path(&name).map_err(unsafe_path)?
        }
    };
    if let Some(link) = linked_directory(root, &path) {
        return Err(unsafe_path(format!(
            "'{}' in the destination is a symbolic link, and parabyte never writes through links",
            link.display()
        )));
    }
    Ok(key_target(FilePath::below(root, &path)))
}

/// A path chosen by a key or a batch item: a character device or FIFO already there gets
/// the bytes streamed (never through a link); anything else is a file, which the sink
/// refuses to put in place of what it may not replace.
fn key_target(path: FilePath) -> Target {
    match StreamTarget::device(&path, false) {
        Some(stream) => Target::Stream(stream),
        None => Target::File(path),
    }
}

/// The path the user named for one object: a character device or FIFO (even behind a link
/// the user chose, such as /dev/stdout) gets the bytes streamed; a regular file or nothing
/// becomes the file; anything else is refused, and so is a directory that cannot be
/// written, before any byte is fetched.
fn user_file_target(path: &Path) -> Result<Target> {
    if let Some(stream) = StreamTarget::device(path, true) {
        return Ok(Target::Stream(stream));
    }
    if let Ok(metadata) = std::fs::symlink_metadata(path) {
        if !metadata.is_file() {
            let kind = if metadata.is_symlink() {
                "a symbolic link"
            } else if metadata.is_dir() {
                "a directory"
            } else {
                "neither a regular file, a character device nor a FIFO"
            };
            return Err(Error::io(
                "will not replace",
                path,
                std::io::Error::other(format!(
                    "it is {kind}; parabyte writes regular files, devices and FIFOs, never through links"
                )),
            ));
        }
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    check_writable(parent.unwrap_or(Path::new(".")), path)?;
    Ok(Target::File(FilePath::at(path)))
}

fn refuse(job: &Job, error: Error) -> Planned {
    Planned::Refused(Failure {
        source: job.source.to_string(),
        error,
    })
}

/// `cp s3://b/dir/file DEST`: DEST itself, or DEST/file when DEST is a directory, where the
/// key's last segment must be a plain file name (not `..`, which would leave DEST).
fn single_object_path(destination: &Path, key: &str) -> std::result::Result<PathBuf, String> {
    let is_directory =
        destination.as_os_str().to_string_lossy().ends_with('/') || destination.is_dir();
    if is_directory {
        let name = key.rsplit('/').next().unwrap_or(key);
        relative_path(name).map(|name| destination.join(name))
    } else {
        Ok(destination.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Silent;
    use crate::source::listing::ObjectEntry;

    fn object(key: &str, size: u64) -> Listed {
        Listed::Object(ObjectEntry {
            key: key.to_owned(),
            size,
            etag: Some("\"e\"".to_owned()),
            last_modified: None,
            storage_class: None,
        })
    }

    /// Plan a synthetic listing under `prefix/` into `/dest`; returns (key -> path) and failures.
    async fn plan_keys(pages: Vec<Vec<Listed>>) -> (Vec<(String, PathBuf)>, Vec<Failure>) {
        let (planned, listing) = plan_pages(pages.into_iter().map(Ok).collect()).await;
        listing.unwrap();
        planned
    }

    /// The same, for pages that may fail; also returns how the listing ended.
    async fn plan_pages(
        pages: Vec<Result<Vec<Listed>>>,
    ) -> ((Vec<(String, PathBuf)>, Vec<Failure>), Result<()>) {
        plan_request_pages("prefix/", Vec::new(), pages).await
    }

    /// Plan `pages` as listed for the source key `key` (a prefix, or a pattern when it has
    /// wildcards) with `filters`.
    async fn plan_request_pages(
        key: &str,
        filters: Vec<Filter>,
        pages: Vec<Result<Vec<Listed>>>,
    ) -> ((Vec<(String, PathBuf)>, Vec<Failure>), Result<()>) {
        let request = StoreCopy {
            source: S3Url {
                bucket: "b".into(),
                key: key.into(),
            },
            destination: Destination::Path("/dest".into()),
            recursive: false,
            pattern: has_wildcard(key).then(|| Pattern::new(key).unwrap()),
            filters,
            dry_run: false,
            bounds: KeyBounds::default(),
        };
        let prefix = list_prefix(&request);
        let (queue, mut planned) = mpsc::channel(100);
        let listing = futures::stream::iter(pages);
        let ended = plan_listing(listing, &request, &prefix, &queue, &Silent).await;
        drop(queue);
        let (mut jobs, mut failures) = (Vec::new(), Vec::new());
        while let Some(item) = planned.recv().await {
            match item {
                Planned::Job(Job {
                    source,
                    target: Target::File(path),
                    ..
                }) => jobs.push((source.to_string(), path.to_path_buf())),
                Planned::Job(job) => panic!("{job:?} goes to no file"),
                Planned::Refused(failure) => failures.push(failure),
            }
        }
        ((jobs, failures), ended)
    }

    #[tokio::test]
    async fn keys_listed_before_a_failed_page_are_all_planned() {
        let broken = Error::BadListing {
            bucket: "b".into(),
            prefix: "prefix/".into(),
            detail: "page 2 failed".into(),
        };
        // `prefix/a` is held back until a key shows it is no folder: page 2 never comes.
        let ((jobs, failures), ended) = plan_pages(vec![
            Ok(vec![object("prefix/0", 1), object("prefix/a", 1)]),
            Err(broken),
        ])
        .await;
        let keys: Vec<_> = jobs.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, vec!["s3://b/prefix/0", "s3://b/prefix/a"]);
        assert!(failures.is_empty());
        assert!(matches!(ended, Err(Error::BadListing { .. })));
    }

    #[tokio::test]
    async fn a_key_outside_the_prefix_is_refused_not_sliced() {
        let (jobs, failures) = plan_keys(vec![vec![
            object("elsewhere", 1),
            object("prefiü", 1),
            object("prefix/ok", 1),
        ]])
        .await;
        assert_eq!(jobs.len(), 1);
        assert_eq!(failures.len(), 2);
        assert!(
            failures[1]
                .error
                .to_string()
                .contains("not under the listed prefix"),
            "{failures:?}"
        );
    }

    #[tokio::test]
    async fn a_dot_segment_key_is_unsafe_not_a_collision() {
        let (jobs, failures) = plan_keys(vec![vec![
            object("prefix/x", 1),
            object("prefix/x/..", 1),
            object("prefix/y", 1),
        ]])
        .await;
        let keys: Vec<_> = jobs.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, vec!["s3://b/prefix/x", "s3://b/prefix/y"]);
        assert_eq!(failures.len(), 1);
        assert!(
            failures[0].error.to_string().contains("'..' path segment"),
            "{failures:?}"
        );
    }

    #[tokio::test]
    async fn unsafe_keys_fail_alone_and_the_rest_goes_on() {
        let (jobs, failures) = plan_keys(vec![
            vec![
                object("prefix/../escape", 1),
                object("prefix/a//b", 1),
                object("prefix/ok.txt", 1),
            ],
            vec![
                object("prefix//abs", 1),
                object("prefix/sub/", 0),
                object("prefix/z/./y", 1),
            ],
        ])
        .await;
        assert_eq!(
            jobs,
            vec![(
                "s3://b/prefix/ok.txt".to_owned(),
                PathBuf::from("/dest/ok.txt")
            )]
        );
        let failed: Vec<_> = failures.iter().map(|f| f.source.as_str()).collect();
        assert_eq!(
            failed,
            vec![
                "s3://b/prefix/../escape",
                "s3://b/prefix/a//b",
                "s3://b/prefix//abs",
                "s3://b/prefix/z/./y"
            ]
        );
        let first = failures[0].error.to_string();
        assert!(first.contains("'..' path segment"), "{first}");
    }

    #[tokio::test]
    async fn a_key_and_a_folder_of_the_same_name_both_fail() {
        let (jobs, failures) = plan_keys(vec![
            vec![object("prefix/a.txt", 1), object("prefix/a.txt.bak", 1)],
            vec![object("prefix/a.txt/b", 1), object("prefix/c", 1)],
        ])
        .await;
        let keys: Vec<_> = jobs.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, vec!["s3://b/prefix/a.txt.bak", "s3://b/prefix/c"]);
        assert_eq!(failures.len(), 2);
        for failure in &failures {
            let error = failure.error.to_string();
            assert!(error.contains("collides with key 'prefix/a.txt"), "{error}");
            assert!(error.contains("'a.txt'"), "{error}");
        }
    }

    #[tokio::test]
    async fn a_pattern_keeps_its_matches_below_the_literal_directory() {
        let keys = vec![
            object("prefix/a.txt", 1),
            object("prefix/b/c.txt", 1),
            object("prefix/b/skip.txt", 1),
            object("prefix/d.bin", 1),
            object("prefix2/e.txt", 1),
        ];
        let filters = vec![Filter::exclude("*skip*").unwrap()];
        let ((jobs, failures), ended) =
            plan_request_pages("prefix/*.txt", filters, vec![Ok(keys)]).await;
        ended.unwrap();
        assert!(failures.is_empty(), "{failures:?}");
        let paths: Vec<_> = jobs.iter().map(|(_, path)| path.clone()).collect();
        assert_eq!(
            paths,
            vec![PathBuf::from("/dest/a.txt"), "/dest/b/c.txt".into()]
        );
        // A literal prefix without '/': the whole key is the path.
        let ((jobs, _), _) = plan_request_pages(
            "pre*/e.txt",
            Vec::new(),
            vec![Ok(vec![object("prefix2/e.txt", 1)])],
        )
        .await;
        assert_eq!(jobs[0].1, PathBuf::from("/dest/prefix2/e.txt"));
    }

    #[tokio::test]
    async fn nothing_matched_is_one_failure_naming_the_source() {
        for (key, says) in [
            ("prefix/*.gif", "no key matches this wildcard pattern"),
            ("prefix/", "no object under this prefix"),
        ] {
            let ((jobs, failures), ended) =
                plan_request_pages(key, Vec::new(), vec![Ok(vec![object("prefix/", 0)])]).await;
            ended.unwrap();
            assert!(jobs.is_empty());
            assert_eq!(failures.len(), 1, "{key}");
            assert_eq!(failures[0].source, format!("s3://b/{key}"));
            let error = failures[0].error.to_string();
            assert!(error.contains(says), "{error}");
        }
        // Filters that leave nothing are not "nothing matched": the source did match.
        let excluded = vec![Filter::exclude("*").unwrap()];
        let ((_, failures), _) =
            plan_request_pages("prefix/", excluded, vec![Ok(vec![object("prefix/a", 1)])]).await;
        assert!(failures.is_empty(), "{failures:?}");
    }

    #[test]
    fn a_single_object_lands_in_a_directory_or_at_a_path() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            single_object_path(dir.path(), "x/y/model.bin"),
            Ok(dir.path().join("model.bin"))
        );
        assert_eq!(
            single_object_path(Path::new("new/"), "x/model.bin"),
            Ok(PathBuf::from("new/model.bin"))
        );
        assert_eq!(
            single_object_path(Path::new("out.bin"), "x/model.bin"),
            Ok(PathBuf::from("out.bin"))
        );
        for key in ["x/..", "x/."] {
            assert!(single_object_path(dir.path(), key).is_err(), "{key}");
        }
    }
}
