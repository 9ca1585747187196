//! What the engine tells the outside world: live progress through a [`Reporter`], and a
//! [`Summary`] at the end. The engine never draws anything itself.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use serde::Serialize;

use crate::verify::Method;
pub use crate::verify::Verified;

/// Receives progress as it happens. Called from many tasks at once: keep it cheap.
pub trait Reporter: Send + Sync {
    /// An object joined the queue; `size` is known when it came from a listing.
    fn object_queued(&self, _size: Option<u64>) {}
    /// The size of an object queued without one became known from its first response.
    fn size_discovered(&self, _size: u64) {}
    /// Body bytes arrived (and were written, unless discarding).
    fn bytes_transferred(&self, _bytes: u64) {}
    /// An object finished, well or badly.
    fn object_finished(&self, _key: &str, _outcome: Result<u64, &crate::Error>) {}
}

/// A reporter that ignores everything.
#[derive(Debug, Default)]
pub struct Silent;
impl Reporter for Silent {}

/// Requests sent, by kind, as the engine sent them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    pub get: u64,
    pub list: u64,
    pub head: u64,
    pub put: u64,
}

/// The kinds of request parabyte sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    Get,
    List,
}

/// Counters shared by everything that sends requests during one run.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    get: AtomicU64,
    list: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) retries: AtomicU64,
    verified_checksum: AtomicU64,
    verified_md5: AtomicU64,
    size_only: AtomicU64,
}

impl Counters {
    pub(crate) fn count_request(&self, kind: RequestKind) {
        match kind {
            RequestKind::Get => &self.get,
            RequestKind::List => &self.list,
        }
        .fetch_add(1, Relaxed);
    }

    /// One object's content check passed (or, with `None`, only its size could be checked).
    pub(crate) fn count_verified(&self, method: Option<Method>) {
        match method {
            Some(Method::Crc) => &self.verified_checksum,
            Some(Method::Md5) => &self.verified_md5,
            None => &self.size_only,
        }
        .fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            requests: RequestCounts {
                get: self.get.load(Relaxed),
                list: self.list.load(Relaxed),
                // Downloads never send these; they are reported so users can see that.
                head: 0,
                put: 0,
            },
            connections: self.connections.load(Relaxed),
            retries: self.retries.load(Relaxed),
            verified: Verified {
                checksum: self.verified_checksum.load(Relaxed),
                md5: self.verified_md5.load(Relaxed),
                size_only: self.size_only.load(Relaxed),
            },
        }
    }
}

/// The counters at one moment; a client reused for several transfers reports each one's share.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    requests: RequestCounts,
    connections: u64,
    retries: u64,
    verified: Verified,
}

impl Snapshot {
    pub(crate) fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot {
            requests: RequestCounts {
                get: self.requests.get - earlier.requests.get,
                list: self.requests.list - earlier.requests.list,
                head: self.requests.head - earlier.requests.head,
                put: self.requests.put - earlier.requests.put,
            },
            connections: self.connections - earlier.connections,
            retries: self.retries - earlier.retries,
            verified: Verified {
                checksum: self.verified.checksum - earlier.verified.checksum,
                md5: self.verified.md5 - earlier.verified.md5,
                size_only: self.verified.size_only - earlier.verified.size_only,
            },
        }
    }
}

/// One object that did not arrive, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The source, e.g. `s3://bucket/key`.
    pub source: String,
    /// The full error message.
    pub error: String,
}

/// What one transfer did.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Objects written (or fetched, when discarding).
    pub objects: u64,
    /// Objects that failed; see `failures`.
    pub failed: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Wall time of the whole run.
    #[serde(rename = "elapsed_seconds", serialize_with = "as_seconds")]
    pub elapsed: Duration,
    /// `bytes / elapsed`.
    pub bytes_per_second: f64,
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
        bytes: u64,
        elapsed: Duration,
        counted: Snapshot,
        failures: Vec<Failure>,
    ) -> Summary {
        let seconds = elapsed.as_secs_f64();
        Summary {
            objects,
            failed: failures.len() as u64,
            bytes,
            elapsed,
            bytes_per_second: if seconds > 0.0 {
                bytes as f64 / seconds
            } else {
                0.0
            },
            requests: counted.requests,
            connections: counted.connections,
            retries: counted.retries,
            verified: counted.verified,
            failures,
        }
    }
}

fn as_seconds<S: serde::Serializer>(elapsed: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(elapsed.as_secs_f64())
}
