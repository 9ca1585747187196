//! File-system work handed to tokio's blocking pool, off the async threads.

use std::io;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// Run file-system work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|join| {
            Err(Error::io(
                "file task failed",
                PathBuf::new(),
                io::Error::other(join),
            ))
        })
}
