//! A multipart upload begun and not yet completed: the one gate every way out of an upload
//! passes. Completed, it is let go; failed, it is aborted before the failure is reported;
//! dropped unfinished (the run was interrupted, its task cancelled), the abort is sent from
//! a task of its own, which the command waits for ([`uploads_aborted`]) before it exits.
//! So no path leaves parts in the store, where they are kept (and billed) until aborted.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use crate::location::S3Url;
use crate::source::Store;

/// Aborts sent from a drop and not yet answered, in this process.
static ABORTS_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Wait (at most `limit`) until every abort sent for an upload dropped unfinished has been
/// answered; returns how many were still unanswered then. For a command that was
/// interrupted, before it exits.
pub async fn uploads_aborted(limit: Duration) -> usize {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let left = ABORTS_IN_FLIGHT.load(SeqCst);
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
}

impl<S: Store> OpenUpload<S> {
    pub(super) fn new(store: Arc<S>, to: S3Url, id: String) -> OpenUpload<S> {
        OpenUpload {
            store,
            to,
            id,
            open: true,
        }
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
        if !self.open {
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
