//! One budget for the body bytes a client reads: each open connection's reads get an even
//! share of it. A few fast streams get large buffers (fewer system calls per GiB); many
//! connections get small ones, so memory stays flat as the requests in flight grow
//! (docs/PROFILE.md, stops 36 and 37).

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Body bytes read into buffers across all open connections: 16 connections get the
/// largest share, 64 the smallest.
const BUDGET: usize = 2 << 20;
/// The largest share: one read of about 128 KiB per system call, what a fast stream needs
/// (32 KiB reads cost 10-35% more CPU per GiB on one server straight, stop 36); an upload
/// reads its file in chunks of it too (`disk/source_file.rs`). Just under glibc's mmap
/// threshold: setting `MALLOC_TRIM_THRESHOLD_`, as Dask does for its workers, pins the
/// threshold at 128 KiB, and a 128 KiB block was then an mmap and 32 page faults each
/// (docs/PROFILE.md, stop 51).
pub(crate) const LARGEST_SHARE: usize = 124 << 10;
const _: () = assert!(
    LARGEST_SHARE + 64 < 128 << 10,
    "the largest share must stay under the mmap threshold"
);
/// The smallest share, Go's (s5cmd's) read size: below it the calls per GiB grow faster
/// than the memory falls.
pub(crate) const SMALLEST_SHARE: usize = 32 << 10;

/// The connections a client holds open now, each with its read buffer; idle ones in the
/// pool count too, since they keep theirs.
#[derive(Debug, Default)]
pub(crate) struct BodyBuffers {
    open: AtomicUsize,
    /// The one read size of every connection, when the settings let one object alone hold
    /// enough connections that each share is the smallest.
    fixed_read: Option<usize>,
}

impl BodyBuffers {
    /// For a run in which one object may hold `connections` at once. From
    /// `BUDGET / SMALLEST_SHARE` (64) on, every read is the smallest share: hyper's adaptive
    /// buffer grows to twice a read that fills it and keeps the chunk before alive, about
    /// 120 KiB a connection at 32 KiB reads, where a fixed size holds 64 (1 GiB at 64 in
    /// flight peaked 3.7 MiB lower, at the same CPU). Below that a fast stream reads up to
    /// the largest share, since 32 KiB reads cost one stream 30% more CPU
    /// (docs/PROFILE.md, stop 39).
    pub(crate) fn for_connections_per_object(connections: usize) -> BodyBuffers {
        BodyBuffers {
            open: AtomicUsize::new(0),
            fixed_read: (connections >= BUDGET / SMALLEST_SHARE).then_some(SMALLEST_SHARE),
        }
    }

    /// The read size every connection keeps, if fixed; else each reads what hyper's
    /// adaptive buffer offers, up to its share.
    pub(crate) fn fixed_read(&self) -> Option<usize> {
        self.fixed_read
    }

    /// A connection opened: it counts until the returned guard is dropped with it.
    pub(crate) fn open(self: &Arc<Self>) -> OpenConnection {
        self.open.fetch_add(1, Relaxed);
        OpenConnection {
            buffers: self.clone(),
        }
    }

    /// The bytes one connection may read at a time: its even share of the budget.
    pub(crate) fn share(&self) -> usize {
        share_among(self.open.load(Relaxed))
    }
}

fn share_among(connections: usize) -> usize {
    (BUDGET / connections.max(1)).clamp(SMALLEST_SHARE, LARGEST_SHARE)
}

/// Held by an open connection; its drop gives the connection's share back.
#[derive(Debug)]
pub(crate) struct OpenConnection {
    buffers: Arc<BodyBuffers>,
}

impl OpenConnection {
    pub(crate) fn share(&self) -> usize {
        self.buffers.share()
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.buffers.open.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_shrink_as_connections_open_and_grow_as_they_close() {
        let buffers = Arc::new(BodyBuffers::default());
        assert_eq!(buffers.share(), LARGEST_SHARE);
        let first: Vec<_> = (0..16).map(|_| buffers.open()).collect();
        assert_eq!(buffers.share(), LARGEST_SHARE);
        let more: Vec<_> = (0..16).map(|_| buffers.open()).collect();
        assert_eq!(buffers.share(), 64 << 10);
        let most: Vec<_> = (0..96).map(|_| buffers.open()).collect();
        assert_eq!(first[0].share(), SMALLEST_SHARE);
        drop((most, more));
        assert_eq!(first[0].share(), LARGEST_SHARE);
    }

    #[test]
    fn reads_are_fixed_only_where_one_object_may_hold_every_share_at_the_smallest() {
        assert_eq!(BodyBuffers::default().fixed_read(), None);
        assert_eq!(
            BodyBuffers::for_connections_per_object(63).fixed_read(),
            None
        );
        let many = BodyBuffers::for_connections_per_object(64);
        assert_eq!(many.fixed_read(), Some(SMALLEST_SHARE));
        assert_eq!(share_among(64), SMALLEST_SHARE);
    }

    #[test]
    fn the_budget_holds_between_the_bounds() {
        for connections in 0..1_000 {
            let share = share_among(connections);
            assert!((SMALLEST_SHARE..=LARGEST_SHARE).contains(&share));
            if share > SMALLEST_SHARE {
                assert!(share * connections <= BUDGET, "{connections} connections");
            }
        }
    }
}
