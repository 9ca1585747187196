//! What a planner queues for the driver: a job, or an object refused on its own.

use std::path::PathBuf;
use std::sync::Arc;

use crate::disk::local::LocalJob;
use crate::error::Error;
use crate::location::{HttpUrl, S3Url};
use crate::report::Failure;
use crate::source::WriteOptions;
use crate::transfer::engine::Job;
use crate::transfer::upload::{CopyJob, UploadJob};

/// One planned item: an object to fetch, a local file to copy or upload, or one that
/// cannot be.
#[derive(Debug)]
pub(crate) enum Planned {
    Job(Job),
    Local(LocalJob),
    Upload(UploadJob),
    /// An object copied inside the store.
    Copy(CopyJob),
    /// A web server's file streamed into the store.
    Web(WebJob),
    /// A key to delete (`rm`, `sync --delete`).
    Delete(S3Url),
    /// A file below `root` to delete (`sync --delete`), never through a link.
    DeleteFile {
        root: PathBuf,
        relative: PathBuf,
    },
    /// Left as it is: the destination already holds it (`sync`).
    Unchanged {
        source: String,
        size: u64,
    },
    Refused(Failure),
    /// Left out by rule, not by failure: a link inside a tree, not followed. Reported with
    /// its reason; the run does not fail for it, and a sync leaves the destination's keys
    /// at and below its name alone, since what it stands for was not read.
    PassedOver(Failure),
}

/// A web file to stream into a key, with what a manifest knew of it.
#[derive(Debug)]
pub(crate) struct WebJob {
    pub from: HttpUrl,
    pub to: S3Url,
    /// Its size: an answer of another length fails the object.
    pub size: Option<u64>,
    /// Its ETag: the GET is pinned to that version.
    pub etag: Option<String>,
    pub options: Arc<WriteOptions>,
}

pub(super) fn refuse(job: &Job, error: Error) -> Planned {
    Planned::Refused(Failure {
        source: job.source.to_string(),
        error,
    })
}
