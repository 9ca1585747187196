//! The transfer a piece of work belongs to, carried to work that can outlive the task that
//! started it.
//!
//! A caller stops a transfer by dropping its future: the tasks it spawned are aborted (and
//! dropped a moment later, on whichever thread runs them), and work already handed to the
//! blocking pool runs to its end, holding files open. Every such task and hand-off holds
//! the transfer's reporter: once the caller's own reference is the last, nothing of the
//! transfer runs or holds a file. The Python binding waits for that before a cancelled call
//! returns, so the next call can take up the temporary file at once.

use std::future::Future;
use std::sync::Arc;

use crate::report::Reporter;

tokio::task_local! {
    static TRANSFER: Option<Arc<dyn Reporter>>;
}

/// Run `work` as part of the transfer that reports to `reporter`.
pub(crate) fn enter<F: Future>(
    reporter: Arc<dyn Reporter>,
    work: F,
) -> impl Future<Output = F::Output> {
    TRANSFER.scope(Some(reporter), work)
}

/// `work`, to be spawned as part of the transfer the current task belongs to (if any).
pub(crate) fn carry<F: Future>(work: F) -> impl Future<Output = F::Output> {
    TRANSFER.scope(held(), work)
}

/// The current task's transfer, for work handed off the task to hold.
pub(crate) fn held() -> Option<Arc<dyn Reporter>> {
    TRANSFER.try_with(Option::clone).ok().flatten()
}
