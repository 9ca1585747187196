//! The calls of one multipart upload whose parts several processes send (a task each, on
//! a cluster): opened once, a range of parts per task, completed once by the one commit
//! check, aborted when the job ends without it. See [`SharedUpload`].

use std::ops::RangeInclusive;
use std::path::Path;
use std::sync::Arc;

use super::Client;
use crate::error::Result;
use crate::location::S3Url;
use crate::plan::UploadOptions;
use crate::report::{Reporter, Summary};
use crate::source::UploadedPart;
use crate::transfer::upload::SharedUpload;

impl Client {
    /// Open the upload of the file `from` (too large for one PUT) to the key `to` in parts,
    /// asking for a FULL_OBJECT CRC64NVME; an upload an earlier run of the same job opened
    /// is taken over when the file is what it was then, so its parts are kept. With
    /// `no_clobber` an existing key fails with [`crate::Error::Exists`].
    pub async fn open_shared_upload(
        &self,
        from: &Path,
        to: &S3Url,
        options: &UploadOptions,
    ) -> Result<SharedUpload> {
        self.driver.open_shared_file(from, to, options).await
    }

    /// Send the parts `numbers` (from 1) of `upload` from the file `from`, each with its
    /// CRC64NVME, keeping those the store already holds of these very bytes (a task run
    /// again). Fails when the file changed since the upload was opened. Gives the parts,
    /// for the one that completes it, and a summary of the bytes sent.
    pub async fn send_shared_parts(
        &self,
        from: &Path,
        upload: &SharedUpload,
        numbers: RangeInclusive<u32>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<(Vec<UploadedPart>, Summary)> {
        self.driver
            .send_shared_parts(from, upload, numbers, reporter)
            .await
    }

    /// Complete `upload` of the file `from` with every one of its `parts`, and check what
    /// the store stored by the whole file's CRC64NVME (an answer lost on the way is
    /// settled by looking at the key): a summary of the one object, or of its failure.
    pub async fn commit_shared_upload(
        &self,
        from: &Path,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.driver
            .commit_shared_file(from, upload, parts, options, reporter)
            .await
    }

    /// Open the copy of the object `from` to `to` inside the store in UploadPartCopy parts;
    /// `known` is its size and ETag when a listing gave them (else one GET of its first
    /// byte finds them). Its parts are pinned to that ETag.
    pub async fn open_shared_copy(
        &self,
        from: &S3Url,
        to: &S3Url,
        known: Option<(u64, String)>,
        options: &UploadOptions,
    ) -> Result<SharedUpload> {
        self.one_store("a copy in parts")?;
        self.driver.open_shared_copy(from, to, known, options).await
    }

    /// Copy the parts `numbers` of the copy `upload` of `from`, keeping those the store
    /// holds already. Gives the parts and a summary of the bytes copied.
    pub async fn copy_shared_parts(
        &self,
        from: &S3Url,
        upload: &SharedUpload,
        numbers: RangeInclusive<u32>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<(Vec<UploadedPart>, Summary)> {
        self.driver
            .copy_shared_parts(from, upload, numbers, reporter)
            .await
    }

    /// Complete the copy `upload` of `from` with every one of its `parts`; it counts as
    /// verified when the store keeps for the copy the checksum it keeps for the source.
    pub async fn commit_shared_copy(
        &self,
        from: &S3Url,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        self.driver
            .commit_shared_copy(from, upload, parts, reporter)
            .await
    }

    /// Abort `upload`: a job that ends without completing it leaves nothing open.
    pub async fn abort_shared_upload(&self, upload: &SharedUpload) -> Result<()> {
        self.driver.abort_shared(upload).await
    }
}
