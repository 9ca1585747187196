//! The calls of one multipart upload whose parts several processes send (a task each, on
//! a cluster): opened once, a range of parts per task, completed once by the one commit
//! check, aborted when the job ends without it. See [`SharedUpload`]; its source, a file
//! or an object copied inside the store, is a [`SharedSource`].

use std::ops::RangeInclusive;
use std::sync::Arc;

use super::Client;
use crate::error::Result;
use crate::location::S3Url;
use crate::plan::UploadOptions;
use crate::report::{Reporter, Summary};
use crate::source::UploadedPart;
use crate::transfer::upload::{SharedSource, SharedUpload};

impl Client {
    /// Open the upload of `from` to the key `to` in parts. A file (too large for one PUT)
    /// goes up asking for a FULL_OBJECT CRC64NVME, and an upload an earlier run of the same
    /// job opened is taken over when the file is what it was then, so its parts are kept.
    /// An object is copied in UploadPartCopy parts pinned to its ETag. With `no_clobber`
    /// an existing key fails with [`crate::Error::Exists`].
    pub async fn open_shared_upload(
        &self,
        from: &SharedSource,
        to: &S3Url,
        options: &UploadOptions,
    ) -> Result<SharedUpload> {
        if let SharedSource::Copy { .. } = from {
            self.one_store("a copy in parts")?;
        }
        self.driver.open_shared(from, to, options).await
    }

    /// Send the parts `numbers` (from 1) of `upload` from `from`, keeping those the store
    /// already holds of these very bytes (a task run again); a file's go each with its
    /// CRC64NVME, and fail when the file changed since the upload was opened. Gives the
    /// parts, for the one that completes it, and a summary of the bytes sent.
    pub async fn send_shared_parts(
        &self,
        from: &SharedSource,
        upload: &SharedUpload,
        numbers: RangeInclusive<u32>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<(Vec<UploadedPart>, Summary)> {
        self.driver
            .send_shared_parts(from, upload, numbers, reporter)
            .await
    }

    /// Complete `upload` of `from` with every one of its `parts`, and check what the store
    /// stored: a file by its whole CRC64NVME (an answer lost on the way is settled by
    /// looking at the key), a copy by the checksum the store keeps for the source. A
    /// summary of the one object, or of its failure.
    pub async fn commit_shared_upload(
        &self,
        from: &SharedSource,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.driver
            .commit_shared(from, upload, parts, options, reporter)
            .await
    }

    /// Abort `upload`: a job that ends without completing it leaves nothing open.
    pub async fn abort_shared_upload(&self, upload: &SharedUpload) -> Result<()> {
        self.driver.abort_shared(upload).await
    }
}
