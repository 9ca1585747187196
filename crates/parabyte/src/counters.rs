//! What one client has sent and checked so far: requests by kind, connections, retries,
//! and how content was verified. Shared by every layer that sends requests.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::body_buffers::BodyBuffers;
use crate::checksum::{Method, Verified};

/// Requests sent, by kind: every request that went out, redirect hops and retries included;
/// one that never got a connection is not counted. Downloads send no other kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    /// Object GETs, ranged or whole.
    pub get: u64,
    /// ListObjectsV2 pages.
    pub list: u64,
    /// HEADs for the store's checksum of an object that takes more than one GET (and, for a
    /// composite checksum, one more for where its upload parts end).
    pub head: u64,
    /// PUTs of object bytes: a whole object, or one part of a multipart upload.
    pub put: u64,
    /// The other requests of a multipart upload: create, complete, abort, list parts.
    pub multipart: u64,
    /// Copies inside the store: CopyObject, UploadPartCopy.
    pub copy: u64,
    /// DeleteObjects requests (up to 1,000 keys each).
    pub delete: u64,
}

/// The kinds of request parabyte sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    Get,
    List,
    Head,
    Put,
    Multipart,
    Copy,
    Delete,
}

/// Counters shared by everything that sends requests during one run.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    get: AtomicU64,
    list: AtomicU64,
    head: AtomicU64,
    put: AtomicU64,
    multipart: AtomicU64,
    copy: AtomicU64,
    delete: AtomicU64,
    pub(crate) connections: AtomicU64,
    /// The connections open now, which share one budget for body buffers.
    pub(crate) body_buffers: Arc<BodyBuffers>,
    pub(crate) retries: AtomicU64,
    verified_checksum: AtomicU64,
    verified_md5: AtomicU64,
    size_only: AtomicU64,
    skipped_by_size_and_time: AtomicU64,
    resumed: AtomicU64,
    resumed_bytes: AtomicU64,
    sent_with_md5: AtomicU64,
    /// The first [`NAMED_AT_MOST`] of those objects, by name, until a run takes them.
    sent_with_md5_named: Mutex<Vec<String>>,
}

/// Objects sent with Content-MD5 that a run names; past it, they are counted only, so a
/// store that refuses checksums for millions of objects costs no memory per object.
pub const NAMED_AT_MOST: usize = 1000;

impl Counters {
    /// For a run in which one object may hold `connections` at once: the body-buffer
    /// budget sizes reads by it.
    pub(crate) fn for_connections_per_object(connections: usize) -> Counters {
        Counters {
            body_buffers: Arc::new(BodyBuffers::for_connections_per_object(connections)),
            ..Counters::default()
        }
    }

    pub(crate) fn count_request(&self, kind: RequestKind) {
        match kind {
            RequestKind::Get => &self.get,
            RequestKind::List => &self.list,
            RequestKind::Head => &self.head,
            RequestKind::Put => &self.put,
            RequestKind::Multipart => &self.multipart,
            RequestKind::Copy => &self.copy,
            RequestKind::Delete => &self.delete,
        }
        .fetch_add(1, Relaxed);
    }

    /// One object arrived under its final name, its content checked (or, with `None`, only
    /// its size could be checked).
    pub(crate) fn count_verified(&self, method: Option<Method>) {
        match method {
            Some(Method::Crc) => &self.verified_checksum,
            Some(Method::Md5) => &self.verified_md5,
            None => &self.size_only,
        }
        .fetch_add(1, Relaxed);
    }

    /// A file without parabyte's mark was left in place: it had the object's size and time.
    pub(crate) fn count_skipped_by_size_and_time(&self) {
        self.skipped_by_size_and_time.fetch_add(1, Relaxed);
    }

    /// An object was completed from an interrupted run's parts, which held `bytes`.
    pub(crate) fn count_resumed(&self, bytes: u64) {
        self.resumed.fetch_add(1, Relaxed);
        self.resumed_bytes.fetch_add(bytes, Relaxed);
    }

    /// An object (`s3://bucket/key`) was stored from bodies sent with Content-MD5: the
    /// store refused checksum headers, so it has no stored CRC.
    pub(crate) fn count_sent_with_md5(&self, object: String) {
        self.sent_with_md5.fetch_add(1, Relaxed);
        let mut named = self.sent_with_md5_named.lock().expect("never poisoned");
        if named.len() < NAMED_AT_MOST {
            named.push(object);
        }
    }

    /// The objects sent with Content-MD5 since the last call, by name (at most
    /// [`NAMED_AT_MOST`]): a run takes those it sent.
    pub(crate) fn take_sent_with_md5_named(&self) -> Vec<String> {
        std::mem::take(&mut *self.sent_with_md5_named.lock().expect("never poisoned"))
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            requests: RequestCounts {
                get: self.get.load(Relaxed),
                list: self.list.load(Relaxed),
                head: self.head.load(Relaxed),
                put: self.put.load(Relaxed),
                multipart: self.multipart.load(Relaxed),
                copy: self.copy.load(Relaxed),
                delete: self.delete.load(Relaxed),
            },
            connections: self.connections.load(Relaxed),
            retries: self.retries.load(Relaxed),
            verified: Verified {
                checksum: self.verified_checksum.load(Relaxed),
                md5: self.verified_md5.load(Relaxed),
                size_only: self.size_only.load(Relaxed),
            },
            skipped_by_size_and_time: self.skipped_by_size_and_time.load(Relaxed),
            resumed: self.resumed.load(Relaxed),
            resumed_bytes: self.resumed_bytes.load(Relaxed),
            sent_with_md5: self.sent_with_md5.load(Relaxed),
        }
    }
}

/// The counters at one moment; a client reused for several transfers reports each one's share.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    pub(crate) requests: RequestCounts,
    pub(crate) connections: u64,
    pub(crate) retries: u64,
    pub(crate) verified: Verified,
    pub(crate) skipped_by_size_and_time: u64,
    pub(crate) resumed: u64,
    pub(crate) resumed_bytes: u64,
    pub(crate) sent_with_md5: u64,
}

impl Snapshot {
    pub(crate) fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot {
            requests: RequestCounts {
                get: self.requests.get - earlier.requests.get,
                list: self.requests.list - earlier.requests.list,
                head: self.requests.head - earlier.requests.head,
                put: self.requests.put - earlier.requests.put,
                multipart: self.requests.multipart - earlier.requests.multipart,
                copy: self.requests.copy - earlier.requests.copy,
                delete: self.requests.delete - earlier.requests.delete,
            },
            connections: self.connections - earlier.connections,
            retries: self.retries - earlier.retries,
            verified: Verified {
                checksum: self.verified.checksum - earlier.verified.checksum,
                md5: self.verified.md5 - earlier.verified.md5,
                size_only: self.verified.size_only - earlier.verified.size_only,
            },
            skipped_by_size_and_time: self.skipped_by_size_and_time
                - earlier.skipped_by_size_and_time,
            resumed: self.resumed - earlier.resumed,
            resumed_bytes: self.resumed_bytes - earlier.resumed_bytes,
            sent_with_md5: self.sent_with_md5 - earlier.sent_with_md5,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_since_an_earlier_one_counts_only_what_happened_between() {
        let counters = Counters::default();
        counters.count_request(RequestKind::Get);
        counters.count_request(RequestKind::List);
        let earlier = counters.snapshot();
        counters.count_request(RequestKind::Get);
        counters.count_request(RequestKind::Get);
        counters.count_request(RequestKind::Head);
        counters.count_verified(Some(Method::Crc));
        counters.count_verified(None);
        let between = counters.snapshot().since(&earlier);
        assert_eq!(
            (
                between.requests.get,
                between.requests.list,
                between.requests.head
            ),
            (2, 0, 1)
        );
        assert_eq!(
            (between.verified.checksum, between.verified.size_only),
            (1, 1)
        );
    }
}
