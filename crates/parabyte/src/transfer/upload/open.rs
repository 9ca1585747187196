//! A multipart upload begun and not yet completed: the one gate every way out of an upload
//! passes. Completed, it is let go. One that a later run can resume (a file's, recorded)
//! is kept when the network or the store failed it or the run was interrupted, and
//! counted ([`uploads_kept`]) so the command can say so. Any other is aborted: on a failure
//! before the failure is reported; dropped unfinished (the run was interrupted, its task
//! cancelled), from a task of its own, which the command waits for ([`uploads_aborted`])
//! before it exits. So no path leaves parts in the store that nothing will come back for.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use crate::location::S3Url;
use crate::source::Store;

/// Aborts sent from a drop and not yet answered, in this process.
static ABORTS_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Uploads begun and not yet let go, kept or aborted (a cancelled task drops its own a
/// moment after the run that owned it is dropped).
static OPEN: AtomicUsize = AtomicUsize::new(0);
/// Uploads left unfinished in the store, recorded for the next run to resume.
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// How many unfinished uploads this process left in the store for a later run of the same
/// command to resume (each is recorded; see `disk/upload_record.rs`).
pub fn uploads_kept() -> usize {
    KEPT.load(SeqCst)
}

/// Wait (at most `limit`) until every upload of a dropped run has been dropped in turn
/// (kept, or its abort sent) and every abort sent has been answered; returns how many were
/// still open or unanswered then. For a command that was interrupted, before it exits.
pub async fn uploads_aborted(limit: Duration) -> usize {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let left = ABORTS_IN_FLIGHT.load(SeqCst) + OPEN.load(SeqCst);
        if left == 0 || tokio::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// An upload in progress, aborted unless [`OpenUpload::completed`] is called.
pub(super) struct OpenUpload<S: Store> {
    store: Arc<S>,
    to: S3Url,
    pub(super) id: String,
    open: bool,
    /// Recorded for a later run: an interruption keeps it rather than abort it.
    resumable: bool,
}

impl<S: Store> OpenUpload<S> {
    pub(super) fn new(store: Arc<S>, to: S3Url, id: String, resumable: bool) -> OpenUpload<S> {
        OPEN.fetch_add(1, SeqCst);
        OpenUpload {
            store,
            to,
            id,
            open: true,
            resumable,
        }
    }

    /// Leave the upload in the store for a later run to resume.
    pub(super) fn keep(mut self) {
        self.open = false;
        KEPT.fetch_add(1, SeqCst);
    }

    /// The store joined the parts: nothing to abort.
    pub(super) fn completed(mut self) {
        self.open = false;
    }

    /// Abort now and wait for the answer (a failure the caller reports).
    pub(super) async fn abort(mut self) {
        self.open = false;
        // Best effort: the upload's own failure is what the caller reports.
        let _ = self.store.abort_upload(&self.to, &self.id).await;
    }
}

impl<S: Store> Drop for OpenUpload<S> {
    fn drop(&mut self) {
        // Counted as settled once kept or its abort is counted in flight.
        let _settled = Settled;
        if !self.open {
            return;
        }
        if self.resumable {
            KEPT.fetch_add(1, SeqCst);
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (store, to, id) = (
            self.store.clone(),
            self.to.clone(),
            std::mem::take(&mut self.id),
        );
        ABORTS_IN_FLIGHT.fetch_add(1, SeqCst);
        runtime.spawn(async move {
            let _ = store.abort_upload(&to, &id).await;
            ABORTS_IN_FLIGHT.fetch_sub(1, SeqCst);
        });
    }
}

/// Takes one upload off the open count when dropped, after its drop did its part.
struct Settled;

impl Drop for Settled {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, SeqCst);
    }
}
