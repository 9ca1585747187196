//! `mv`: a copy, then each source whose copy was verified deleted. [`may_delete`] is the
//! one rule, for every direction: a source goes only when its destination is another
//! object or file than itself, and the copy's content was compared with the source's (the
//! store's checksum, the MD5 an ETag is, the version mark of that very version, or the
//! kernel's copy of a local file). A failure, a copy nothing compared, a destination judged
//! unchanged by size and time alone, or a key `--no-clobber` kept for another object leaves
//! its source where it was, reported. S3 keys go 1,000 a DeleteObjects request; local
//! files are removed by name, never through a link, and only while still a regular file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::delete::{delete_batch, DELETE_BATCH};
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::dir::remove_file_below;
use crate::error::{Error, Result};
use crate::location::{Location, S3Url};
use crate::pattern::{has_wildcard, Pattern};
use crate::plan::{CopyRequest, Destination, Source};
use crate::report::{
    Failure, ObjectReport, Preview, Reporter, Silent, Status, Summary, Verification,
};
use crate::source::Store;

/// Passes everything on, and keeps each source that arrived, with where it arrived: to
/// delete, or why not.
pub(super) struct Arrived {
    inner: Arc<dyn Reporter>,
    sources: Mutex<Vec<Arrival>>,
    /// For local sources: the directory the user named (or the one a named file or a
    /// pattern is in), below which each source is deleted without following a link.
    local_root: Option<PathBuf>,
}

impl Arrived {
    pub(super) fn new(inner: Arc<dyn Reporter>, request: &CopyRequest) -> Arrived {
        Arrived {
            inner,
            sources: Mutex::new(Vec::new()),
            local_root: local_root(request),
        }
    }

    fn take(&self) -> Vec<Arrival> {
        std::mem::take(&mut *self.sources.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Reporter for Arrived {
    fn object_queued(&self, size: Option<u64>) {
        self.inner.object_queued(size)
    }
    fn size_discovered(&self, size: u64) {
        self.inner.size_discovered(size)
    }
    fn bytes_transferred(&self, bytes: u64) {
        self.inner.bytes_transferred(bytes)
    }
    fn bytes_skipped(&self, bytes: u64) {
        self.inner.bytes_skipped(bytes)
    }
    fn bytes_resumed(&self, bytes: u64) {
        self.inner.bytes_resumed(bytes)
    }
    fn object_finished(&self, key: &str, outcome: std::result::Result<u64, &Error>) {
        self.inner.object_finished(key, outcome)
    }
    fn object_reported(&self, report: &ObjectReport<'_>) {
        if let Some(verdict) = may_delete(report) {
            self.sources
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arrival {
                    source: report.source.to_owned(),
                    destination: report.destination.map(Path::to_owned),
                    verdict,
                });
        }
        self.inner.object_reported(report)
    }
    fn previewed(&self, preview: Preview<'_>) {
        self.inner.previewed(preview)
    }
}

/// One source whose copy arrived: where it went, and whether it may be deleted.
struct Arrival {
    source: String,
    destination: Option<PathBuf>,
    verdict: Result<()>,
}

/// The rule of what a move deletes, from how its copy ended: `None` for a copy that did
/// not arrive (its failure is reported already), `Some(Ok(()))` to delete the source,
/// `Some(Err)` to keep it, saying why.
fn may_delete(report: &ObjectReport<'_>) -> Option<Result<()>> {
    let in_place = matches!(
        report.status,
        Status::Copied | Status::Resumed | Status::Skipped
    );
    // A failure, or an entry passed over by rule (a link inside a tree): nothing arrived.
    if !in_place || report.error.is_some() {
        return None;
    }
    let source = report.source;
    let destination = report.destination.map(|path| path.to_string_lossy());
    let keep = |why: &str| {
        Some(Err(Error::InvalidInput(format!(
            "{source}: {why}; the source was kept"
        ))))
    };
    if let Some(destination) = &destination {
        if is_itself(source, destination) {
            return keep("it is its own destination, so moving it would delete its only copy");
        }
    }
    let local = !source.starts_with("s3://")
        && destination
            .as_deref()
            .is_some_and(|destination| !destination.starts_with("s3://"));
    match report.verification {
        Some(
            Verification::Crc32
            | Verification::Crc32c
            | Verification::Crc64nvme
            | Verification::Md5
            | Verification::VersionMark,
        ) => Some(Ok(())),
        // A local copy is the kernel's, of a file checked unchanged while it was read.
        Some(Verification::SizeOnly) if local => Some(Ok(())),
        Some(Verification::Exists) => {
            keep("--no-clobber kept the object already at its destination")
        }
        Some(Verification::SizeAndTime) => {
            keep("its destination was judged the same by size and time alone, not by content")
        }
        Some(Verification::SizeOnly) | None => keep(
            "it was copied, but nothing compared the copy's content with the source's (the \
             store keeps no checksum for one of them)",
        ),
    }
}

/// Whether a source and its destination name one object or one file, however spelled.
fn is_itself(source: &str, destination: &str) -> bool {
    if source == destination {
        return true;
    }
    if source.starts_with("s3://") || destination.starts_with("s3://") {
        return false;
    }
    use std::os::unix::fs::MetadataExt;
    let identity = |path: &str| {
        std::fs::metadata(path)
            .ok()
            .map(|metadata| (metadata.dev(), metadata.ino()))
    };
    identity(source).is_some_and(|source| identity(destination) == Some(source))
}

/// What a move names as both its source and its destination, however spelled (`mv f ./f`,
/// `mv s3://b/d/k s3://b/d/`, a prefix onto itself): refused before anything is copied, as
/// aws refuses it.
pub(super) fn onto_itself(request: &CopyRequest) -> Option<String> {
    let source = match &request.source {
        Source::Location(source) => source.clone(),
        // A cluster task's share of a prefix: the prefix, as a tree.
        Source::KeyRange { prefix, .. } => Location::S3(prefix.clone()),
        _ => return None,
    };
    match (&source, &request.destination) {
        (Location::S3(from), Destination::Store(to)) if from.bucket == to.bucket => {
            let folder = |key: &str| match key {
                "" => String::new(),
                key if key.ends_with('/') => key.to_owned(),
                key => format!("{key}/"),
            };
            let tree = request.recursive || from.key.is_empty() || from.key.ends_with('/');
            let same = match tree {
                true => folder(&from.key) == folder(&to.key),
                false if to.key.is_empty() || to.key.ends_with('/') => {
                    let name = from.key.rsplit('/').next().unwrap_or_default();
                    format!("{}{name}", to.key) == from.key
                }
                false => to.key == from.key,
            };
            same.then(|| from.to_string())
        }
        (Location::Local(from), Destination::Path(to)) => {
            let into = match (to.is_dir() && !from.is_dir(), from.file_name()) {
                (true, Some(name)) => to.join(name),
                _ => to.clone(),
            };
            let (from_text, into_text) = (from.to_string_lossy(), into.to_string_lossy());
            is_itself(&from_text, &into_text).then(|| from.display().to_string())
        }
        _ => None,
    }
}

/// Delete the sources `arrived` kept, adding to `summary` each failure and the requests.
/// Each source deleted is reported with its destination: it was moved there.
pub(super) async fn delete_sources<S: Store>(
    store: Arc<S>,
    transfer: &TransferConfig,
    counters: &Counters,
    arrived: &Arrived,
    reporter: &dyn Reporter,
    summary: &mut Summary,
) {
    let mut keys: Vec<(S3Url, Option<PathBuf>)> = Vec::new();
    let mut ended: Vec<(String, Result<()>)> = Vec::new();
    for Arrival {
        source,
        destination,
        verdict,
    } in arrived.take()
    {
        if let Err(error) = verdict {
            ended.push((source, Err(error)));
            continue;
        }
        match Location::parse(&source) {
            Ok(Location::S3(url)) => keys.push((url, destination)),
            Ok(Location::Local(path)) => {
                let removed = remove_local(arrived.local_root.as_deref(), &path);
                if removed.is_ok() {
                    report_moved(reporter, &source, destination.as_deref());
                }
                ended.push((source, removed));
            }
            _ => ended.push((
                source.clone(),
                Err(Error::InvalidInput(format!(
                    "{source}: arrived, but cannot be deleted where it came from; left in place"
                ))),
            )),
        }
    }
    keys.sort_by(|(a, _), (b, _)| a.bucket.cmp(&b.bucket));
    for batch in keys.chunk_by(|(a, _), (b, _)| a.bucket == b.bucket) {
        for chunk in batch.chunks(DELETE_BATCH) {
            summary.requests.delete += 1;
            let batch = chunk.iter().map(|(url, _)| url.clone()).collect();
            // The batch's deletes are reported below, each with its destination.
            let deleted =
                delete_batch(store.clone(), transfer, counters, batch, false, &Silent).await;
            for ((source, result), (_, destination)) in deleted.into_iter().zip(chunk) {
                if result.is_ok() {
                    report_moved(reporter, &source, destination.as_deref());
                }
                ended.push((source, result.map(drop)));
            }
        }
    }
    for (source, result) in ended {
        if let Err(error) = result {
            reporter.object_reported(&ObjectReport {
                source: &source,
                destination: None,
                bytes: 0,
                status: Status::Failed,
                verification: None,
                error: Some(&error),
            });
            summary.failed += 1;
            summary.failures.push(Failure { source, error });
        }
    }
}

/// A source deleted after its copy arrived at `destination`: moved there.
fn report_moved(reporter: &dyn Reporter, source: &str, destination: Option<&Path>) {
    reporter.object_reported(&ObjectReport {
        source,
        destination,
        bytes: 0,
        status: Status::Deleted,
        verification: None,
        error: None,
    });
}

/// Where a local move's sources are deleted from: the directory named, or the one holding
/// the named file, or a pattern's literal directory.
fn local_root(request: &CopyRequest) -> Option<PathBuf> {
    let Source::Location(Location::Local(path)) = &request.source else {
        return None;
    };
    let text = path.to_string_lossy();
    if !request.options.raw && has_wildcard(&text) {
        let pattern = Pattern::new(&text).ok()?;
        return Some(PathBuf::from(match pattern.literal_directory() {
            "" => ".",
            directory => directory,
        }));
    }
    if path.is_dir() {
        return Some(path.clone());
    }
    // A bare name's parent is empty: the name itself is then the path below it.
    Some(path.parent().map(Path::to_owned).unwrap_or_default())
}

/// Remove a moved local file through the one local delete gate: below the root the user
/// named, never through a link, only while it is a regular file.
fn remove_local(root: Option<&Path>, path: &Path) -> Result<()> {
    let relative = root.and_then(|root| path.strip_prefix(root).ok());
    match (root, relative) {
        (Some(root), Some(relative)) => remove_file_below(root, relative),
        _ => Err(Error::io(
            "left in place",
            path,
            std::io::Error::other("it is not below the source that was named"),
        )),
    }
}
