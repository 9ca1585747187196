//! A local tree walked for an upload as `cp -r DIR s3://…` walks it (key order, links
//! passed over, FIFOs, devices and reserved names refused by name, filters applied), given
//! to the caller entry by entry instead of uploaded: how a cluster's driver cuts an upload
//! into tasks without holding the tree's paths.

use std::path::PathBuf;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::Client;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::plan::{decide, plan_local, CopyRequest, Planned, Work};
use crate::report::{Failure, Silent};

/// Entries the walk may run ahead of its reader.
const AHEAD: usize = 1024;

/// One entry of a tree walked for an upload.
#[derive(Debug)]
pub enum UploadEntry {
    /// A regular file, to be stored under `to`.
    File {
        /// Where it is.
        path: PathBuf,
        /// Its key.
        to: S3Url,
        /// Its size when the walk found it.
        size: u64,
    },
    /// Left out by rule (a link inside the tree, not followed): said, not a failure.
    PassedOver(Failure),
    /// Refused or unreadable: a failure of its own; the walk goes on.
    Refused(Failure),
}

impl Client {
    /// Walk the local tree of the upload `request` (a directory to an `s3://` prefix), in
    /// key order, as the upload itself would; an `Err` is what would stop the upload as a
    /// whole (no such directory, a destination that is no prefix). Memory holds a
    /// directory's entries at a time, however large the tree. The stream may be polled
    /// again after it ended.
    pub async fn walk_upload(
        &self,
        request: &CopyRequest,
    ) -> Result<BoxStream<'static, UploadEntry>> {
        let Work::Local(copy) = decide(request).await? else {
            return Err(Error::InvalidInput(
                "walking a tree takes a local directory and an s3:// destination".into(),
            ));
        };
        let root = copy.source.display().to_string();
        let (queue, planned) = mpsc::channel(AHEAD);
        let walk = tokio::spawn(plan_local(copy, queue, Arc::new(Silent)));
        let entries = futures::stream::unfold(
            (planned, Some(walk), root),
            |(mut planned, walk, root)| async move {
                loop {
                    if let Some(item) = planned.recv().await {
                        let entry = match item {
                            Planned::Upload(job) => UploadEntry::File {
                                path: job.from,
                                to: job.to,
                                size: job.size,
                            },
                            Planned::PassedOver(failure) => UploadEntry::PassedOver(failure),
                            Planned::Refused(failure) => UploadEntry::Refused(failure),
                            _ => continue,
                        };
                        return Some((entry, (planned, walk, root)));
                    }
                    // The walk ended: what stopped it, if anything, is its last entry.
                    let ended = walk?.await;
                    let error = match ended {
                        Ok(Ok(())) => return None,
                        Ok(Err(error)) => error,
                        Err(join) => Error::InvalidInput(format!("the walk crashed: {join}")),
                    };
                    let failure = Failure {
                        source: root.clone(),
                        error,
                    };
                    return Some((UploadEntry::Refused(failure), (planned, None, root)));
                }
            },
        );
        Ok(entries.fuse().boxed())
    }
}
