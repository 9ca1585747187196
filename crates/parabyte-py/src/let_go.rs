//! Knowing when a stopped transfer has let go of everything. The core holds a transfer's
//! reporter in every task and blocking hand-off of it (its `transfer_scope`), so the
//! reporter handed to a transfer is wrapped: when its last reference drops, nothing of the
//! transfer runs or holds a file, and a cancelled call may return. Returning earlier lets
//! the next call find the temporary file still locked, as if another process wrote it.

use std::sync::Arc;

use parabyte::{Error, ObjectReport, Preview, Reporter};
use tokio::sync::oneshot;

/// Resolves once the transfer let go of its reporter.
pub type LetGo = oneshot::Receiver<()>;

/// `inner`, for one transfer, and the signal that it let go of it.
pub fn watched(inner: Arc<dyn Reporter>) -> (Arc<dyn Reporter>, LetGo) {
    let (sender, receiver) = oneshot::channel();
    let watched = Watched {
        inner,
        let_go: Some(sender),
    };
    (Arc::new(watched), receiver)
}

/// Passes everything on; its drop is the signal.
struct Watched {
    inner: Arc<dyn Reporter>,
    let_go: Option<oneshot::Sender<()>>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(let_go) = self.let_go.take() {
            // Nobody waiting is fine: the call was not cancelled.
            let _ = let_go.send(());
        }
    }
}

impl Reporter for Watched {
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
    fn object_finished(&self, key: &str, outcome: Result<u64, &Error>) {
        self.inner.object_finished(key, outcome)
    }
    fn object_reported(&self, report: &ObjectReport<'_>) {
        self.inner.object_reported(report)
    }
    fn previewed(&self, preview: Preview<'_>) {
        self.inner.previewed(preview)
    }
}
