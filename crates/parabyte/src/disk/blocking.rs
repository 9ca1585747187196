//! File-system work handed to tokio's blocking pool, off the async threads.

use std::io;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::transfer_scope;

/// Run file-system work off the async threads. The work holds its transfer until what it
/// returns is dropped too: stopped mid-way, the files it opened close before the transfer
/// counts as let go (see `transfer_scope`).
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let transfer = transfer_scope::held();
    // A tuple drops in order: the outcome (an open file, say) before the transfer's hold.
    let (outcome, _transfer) = tokio::task::spawn_blocking(move || (work(), transfer))
        .await
        .map_err(|join| Error::io("file task failed", PathBuf::new(), io::Error::other(join)))?;
    outcome
}

#[cfg(test)]
mod tests {
    use std::sync::{mpsc, Arc, Mutex};
    use std::time::Duration;

    use tokio::sync::oneshot;

    use super::*;
    use crate::report::Reporter;

    /// A reporter that says when its last reference is gone.
    #[derive(Debug)]
    struct SaysWhenGone(Mutex<Option<oneshot::Sender<()>>>);

    impl Reporter for SaysWhenGone {}

    impl Drop for SaysWhenGone {
        fn drop(&mut self) {
            if let Some(gone) = self.0.lock().unwrap().take() {
                let _ = gone.send(());
            }
        }
    }

    #[tokio::test]
    async fn a_stopped_transfer_is_held_until_its_blocking_work_and_its_outcome_are_gone() {
        let (gone_tx, mut gone) = oneshot::channel();
        let reporter: Arc<dyn Reporter> = Arc::new(SaysWhenGone(Mutex::new(Some(gone_tx))));
        let (started_tx, started) = oneshot::channel();
        let (release, released) = mpsc::channel::<()>();
        // What the work returns stands for a file it opened: the transfer is let go only
        // once it is dropped too.
        let (outcome_gone_tx, mut outcome_gone) = oneshot::channel();
        let outcome = SaysWhenGone(Mutex::new(Some(outcome_gone_tx)));
        let work = blocking(move || {
            started_tx.send(()).unwrap();
            released.recv().unwrap();
            Ok(outcome)
        });
        let running = tokio::spawn(transfer_scope::enter(reporter, work));
        started.await.unwrap();
        running.abort();
        assert!(running.await.unwrap_err().is_cancelled());
        assert!(
            gone.try_recv().is_err(),
            "the transfer was let go while its work still ran"
        );
        release.send(()).unwrap();
        // Bounded only so that a broken gate fails instead of hanging.
        let limit = Duration::from_secs(30);
        tokio::time::timeout(limit, &mut gone)
            .await
            .unwrap()
            .unwrap();
        assert!(
            outcome_gone.try_recv().is_ok(),
            "the transfer was let go before the work's outcome was dropped"
        );
    }
}
