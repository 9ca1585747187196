//! What the engine tells the outside world: live progress through a [`Reporter`], and a
//! [`Summary`] at the end. The engine never draws anything itself.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

pub use crate::checksum::Verified;
use crate::counters::{RequestCounts, Snapshot};
use crate::error::Error;
use crate::pattern::Filter;

/// Receives progress as it happens. Called from many tasks at once: keep it cheap.
pub trait Reporter: Send + Sync {
    /// An object joined the queue; `size` is known when it came from a listing.
    fn object_queued(&self, _size: Option<u64>) {}
    /// The size of an object queued without one became known from its first response.
    fn size_discovered(&self, _size: u64) {}
    /// Body bytes arrived (and were written, unless discarding).
    fn bytes_transferred(&self, _bytes: u64) {}
    /// Bytes that need no fetching: files and parts an earlier run completed.
    fn bytes_skipped(&self, _bytes: u64) {}
    /// Of those, the bytes an interrupted run left of an object this run completes: part
    /// of the object, done already. Skipped bytes unless a reporter tells them apart.
    fn bytes_resumed(&self, bytes: u64) {
        self.bytes_skipped(bytes);
    }
    /// An object finished, well or badly.
    fn object_finished(&self, _key: &str, _outcome: Result<u64, &Error>) {}
    /// How one object ended, with what a script needs to know of it. Every object of a
    /// copy is reported here exactly once, including each failure the summary lists.
    fn object_reported(&self, _report: &ObjectReport<'_>) {}
    /// A dry run decided what it would do with one object (nothing is fetched or written).
    fn previewed(&self, _preview: Preview<'_>) {}
}

/// What a dry run would do with one object.
#[derive(Debug, Clone, Copy)]
pub enum Preview<'a> {
    /// It would be copied from `source` to `destination`.
    Copy {
        /// `s3://bucket/key`, a URL or a local path.
        source: &'a str,
        /// The file (or stream) it would land in.
        destination: &'a str,
    },
    /// It would be left alone: an earlier run left this same version at `destination`.
    Unchanged {
        /// `s3://bucket/key`, a URL or a local path.
        source: &'a str,
        /// The file that already holds it.
        destination: &'a str,
    },
    /// It would be deleted (`rm`).
    Delete {
        /// `s3://bucket/key`.
        source: &'a str,
    },
    /// A filter leaves it out.
    Excluded {
        /// `s3://bucket/key` or a local path.
        source: &'a str,
        /// The `--exclude` that matched last.
        filter: &'a Filter,
    },
}

impl<'a> Preview<'a> {
    /// A dry run's verdict on one object: left alone when `unchanged`, else copied.
    pub(crate) fn verdict(unchanged: bool, source: &'a str, destination: &'a str) -> Preview<'a> {
        match unchanged {
            true => Preview::Unchanged {
                source,
                destination,
            },
            false => Preview::Copy {
                source,
                destination,
            },
        }
    }
}

/// How one object ended: the CLI streams these as `--json-lines`.
#[derive(Debug, Serialize)]
pub struct ObjectReport<'a> {
    /// The source, e.g. `s3://bucket/key` (URLs redacted).
    pub source: &'a str,
    /// The file written or left in place, when there is one; for an upload, the key's URL.
    #[serde(serialize_with = "as_lossy_path")]
    pub destination: Option<&'a Path>,
    /// Body bytes this run moved for it (a resumed object: only the missing ones).
    pub bytes: u64,
    /// What happened to it.
    pub status: Status,
    /// How its content was checked (a skipped object: how it was known to be unchanged).
    pub verification: Option<Verification>,
    /// Why it failed.
    #[serde(serialize_with = "as_optional_message")]
    pub error: Option<&'a Error>,
}

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fetched (or copied) whole by this run.
    Copied,
    /// Completed from the parts an interrupted run left.
    Resumed,
    /// Already in place: nothing fetched.
    Skipped,
    /// Not in place; see the error.
    Failed,
    /// Removed from the store (`rm`).
    Deleted,
}

/// How an object's content was checked, or how a skipped one was known to be unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verification {
    /// The store's full-object CRC32.
    Crc32,
    /// The store's full-object CRC32C.
    Crc32c,
    /// The store's full-object CRC64NVME.
    Crc64nvme,
    /// The MD5 the ETag is.
    Md5,
    /// Only the size could be checked.
    SizeOnly,
    /// Skipped: the file carries parabyte's mark of this very version.
    VersionMark,
    /// Skipped: a file of the same size whose modification time is the object's (another
    /// tool downloaded it, as `aws s3 sync` judges), or a local copy's source's.
    SizeAndTime,
    /// Skipped: an upload with `--no-clobber` found an object under its key.
    Exists,
}

/// A reporter that ignores everything.
#[derive(Debug, Default)]
pub struct Silent;
impl Reporter for Silent {}

/// One object that did not arrive, and why.
#[derive(Debug, Serialize)]
pub struct Failure {
    /// The source, e.g. `s3://bucket/key`.
    pub source: String,
    /// What went wrong, with its kind; JSON carries its full message.
    #[serde(serialize_with = "as_message")]
    pub error: Error,
}

/// What one transfer did.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    /// Objects written (or fetched, when discarding).
    pub objects: u64,
    /// Objects that failed; see `failures`.
    pub failed: u64,
    /// Objects left alone: an earlier run completed this same version.
    pub skipped: u64,
    /// Objects or files deleted (`rm`, `sync --delete`).
    pub deleted: u64,
    /// Of `skipped`, those judged by size and modification time alone (no parabyte mark: a
    /// file another tool downloaded, or an unchanged local copy).
    pub skipped_by_size_and_time: u64,
    /// Objects completed from the parts an interrupted run left.
    pub resumed: u64,
    /// Bytes those parts held: not fetched again.
    pub resumed_bytes: u64,
    /// Objects uploaded with Content-MD5 rather than CRC64NVME: the store refused checksum
    /// headers. Each body's MD5 was checked by the store.
    pub sent_with_md5: u64,
    /// Those objects by name (the first 1,000 of them): stored with no CRC, their MD5
    /// checked by the store as they went up.
    pub sent_with_md5_objects: Vec<String>,
    /// Body bytes received.
    pub bytes: u64,
    /// Wall time of the whole run.
    #[serde(rename = "elapsed_seconds", serialize_with = "as_seconds")]
    pub elapsed: Duration,
    /// `bytes / elapsed`.
    pub bytes_per_second: f64,
    /// From the start until the first object's download began: with a listing, how long
    /// the first page took to arrive.
    #[serde(
        rename = "first_object_seconds",
        serialize_with = "as_optional_seconds"
    )]
    pub first_object_started: Option<Duration>,
    /// Requests sent, by kind.
    pub requests: RequestCounts,
    /// TCP connections opened (keep-alive reuse keeps this near the concurrency).
    pub connections: u64,
    /// Requests sent again after a retryable failure.
    pub retries: u64,
    /// How the objects' content was checked.
    pub verified: Verified,
    /// Per-object failures, in the order they happened.
    pub failures: Vec<Failure>,
}

impl Summary {
    /// The fields as the CLI's `--json` names them: the one list Python's `Summary` and its
    /// stubs are held to.
    pub fn field_names() -> Vec<String> {
        match serde_json::to_value(Summary::default()) {
            Ok(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn new(
        objects: u64,
        skipped: u64,
        bytes: u64,
        elapsed: Duration,
        first_object_started: Option<Duration>,
        counted: Snapshot,
        failures: Vec<Failure>,
    ) -> Summary {
        let seconds = elapsed.as_secs_f64();
        Summary {
            objects,
            failed: failures.len() as u64,
            skipped,
            deleted: 0,
            skipped_by_size_and_time: counted.skipped_by_size_and_time,
            resumed: counted.resumed,
            resumed_bytes: counted.resumed_bytes,
            sent_with_md5: counted.sent_with_md5,
            sent_with_md5_objects: Vec::new(),
            bytes,
            elapsed,
            bytes_per_second: if seconds > 0.0 {
                bytes as f64 / seconds
            } else {
                0.0
            },
            first_object_started,
            requests: counted.requests,
            connections: counted.connections,
            retries: counted.retries,
            verified: counted.verified,
            failures,
        }
    }
}

fn as_message<S: serde::Serializer>(error: &Error, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(error)
}

fn as_optional_message<S: serde::Serializer>(
    error: &Option<&Error>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match error {
        Some(error) => serializer.collect_str(error),
        None => serializer.serialize_none(),
    }
}

fn as_lossy_path<S: serde::Serializer>(
    path: &Option<&Path>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => serializer.collect_str(&path.to_string_lossy()),
        None => serializer.serialize_none(),
    }
}

fn as_optional_seconds<S: serde::Serializer>(
    elapsed: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match elapsed {
        Some(elapsed) => as_seconds(elapsed, serializer),
        None => serializer.serialize_none(),
    }
}

fn as_seconds<S: serde::Serializer>(elapsed: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(elapsed.as_secs_f64())
}
