//! One budget for the body bytes a client reads: each open connection's reads get an even
//! share of it. A few fast streams get large buffers (fewer system calls per GiB); many
//! connections get small ones, so memory stays flat as the requests in flight grow
//! (docs/PROFILE.md, stops 36 and 37).

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Body bytes read into buffers across all open connections: 16 connections get the
/// largest share, 64 the smallest.
const BUDGET: usize = 2 << 20;
/// The largest share: one 128 KiB read per system call, what a fast stream needs
/// (32 KiB reads cost 10-35% more CPU per GiB on one server straight, stop 36).
pub(crate) const LARGEST_SHARE: usize = 128 << 10;
/// The smallest share, Go's (s5cmd's) read size: below it the calls per GiB grow faster
/// than the memory falls.
const SMALLEST_SHARE: usize = 32 << 10;

/// The connections a client holds open now, each with its read buffer; idle ones in the
/// pool count too, since they keep theirs.
#[derive(Debug, Default)]
pub(crate) struct BodyBuffers {
    open: AtomicUsize,
}

impl BodyBuffers {
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
