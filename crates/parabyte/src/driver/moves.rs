//! `mv`: a copy, then each source that arrived whole deleted. Only what the copy reported
//! as in place at its destination (copied, resumed, or that same version already there) is
//! deleted: a failure, or a key `--no-clobber` kept for another object, leaves its source
//! where it was. S3 keys go 1,000 a DeleteObjects request;
//! local files are removed by name, never through a link, and only while still the file
//! that was copied (same size) and a regular file.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::delete::{delete_batch, DELETE_BATCH};
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::error::{Error, Result};
use crate::location::{Location, S3Url};
use crate::report::{Failure, ObjectReport, Preview, Reporter, Status, Summary, Verification};
use crate::source::Store;

/// Passes everything on, and keeps the sources that arrived whole.
pub(super) struct Arrived {
    inner: Arc<dyn Reporter>,
    sources: Mutex<Vec<String>>,
}

impl Arrived {
    pub(super) fn new(inner: Arc<dyn Reporter>) -> Arrived {
        Arrived {
            inner,
            sources: Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> Vec<String> {
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
        // Skipped is in place too (the same version was there), except where --no-clobber
        // kept another object under the key: then the source is all there is of it.
        let kept_theirs = report.verification == Some(Verification::Exists);
        let in_place = matches!(
            report.status,
            Status::Copied | Status::Resumed | Status::Skipped
        );
        if in_place && !kept_theirs {
            self.sources
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(report.source.to_owned());
        }
        self.inner.object_reported(report)
    }
    fn previewed(&self, preview: Preview<'_>) {
        self.inner.previewed(preview)
    }
}

/// Delete the sources `arrived` kept, adding to `summary` each failure and the requests.
pub(super) async fn delete_sources<S: Store>(
    store: Arc<S>,
    transfer: &TransferConfig,
    counters: &Counters,
    arrived: &Arrived,
    reporter: &dyn Reporter,
    summary: &mut Summary,
) {
    let mut keys: Vec<S3Url> = Vec::new();
    let mut ended: Vec<(String, Result<()>)> = Vec::new();
    for source in arrived.take() {
        match Location::parse(&source) {
            Ok(Location::S3(url)) => keys.push(url),
            Ok(Location::Local(path)) => {
                let removed = remove_file(path);
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
    keys.sort_by(|a, b| a.bucket.cmp(&b.bucket));
    for batch in keys.chunk_by(|a, b| a.bucket == b.bucket) {
        for chunk in batch.chunks(DELETE_BATCH) {
            summary.requests.delete += 1;
            let deleted = delete_batch(
                store.clone(),
                transfer,
                counters,
                chunk.to_vec(),
                false,
                reporter,
            )
            .await;
            ended.extend(
                deleted
                    .into_iter()
                    .map(|(source, result)| (source, result.map(drop))),
            );
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

/// Remove a moved local file, only while it is a regular file (never a link's target).
fn remove_file(path: PathBuf) -> Result<()> {
    let metadata =
        std::fs::symlink_metadata(&path).map_err(|e| Error::io("cannot remove", &path, e))?;
    if !metadata.is_file() {
        return Err(Error::io(
            "left in place",
            &path,
            std::io::Error::other("it is no longer a regular file"),
        ));
    }
    std::fs::remove_file(&path).map_err(|e| Error::io("cannot remove", &path, e))
}
