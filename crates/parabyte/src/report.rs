//! What the engine tells the outside world: live progress through a [`Reporter`], and a
//! [`Summary`] at the end. The engine never draws anything itself.

use std::time::Duration;

use serde::Serialize;

pub use crate::checksum::{CheckedBy, Verified};
use crate::counters::{RequestCounts, Snapshot};
use crate::error::Error;

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
    /// An object finished, well or badly.
    fn object_finished(&self, _key: &str, _outcome: Result<u64, &Error>) {}
    /// An object got its final name, its content checked so (`source` as in [`Failure`]).
    fn object_verified(&self, _source: &str, _checked_by: CheckedBy) {}
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
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Objects written (or fetched, when discarding).
    pub objects: u64,
    /// Objects that failed; see `failures`.
    pub failed: u64,
    /// Objects left alone: an earlier run completed this same version.
    pub skipped: u64,
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
