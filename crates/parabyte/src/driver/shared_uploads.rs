//! One multipart upload whose parts several tasks send (Dask): a large file of a cluster's
//! upload, or a large object copied inside the store by several workers. The driver of the
//! job opens it, each task sends a range of its parts, one task completes it; each step is
//! one call here, counted in a summary of its own for the job to add up.

use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Driver;
use crate::error::Result;
use crate::location::{ObjectUrl, S3Url};
use crate::plan::UploadOptions;
use crate::report::{Reporter, Summary};
use crate::source::{Store, UploadedPart};
use crate::transfer::upload::{SharedSource, SharedUpload};

impl<S: Store<Object = ObjectUrl>> Driver<S> {
    /// Open the upload of `from` to `to` in parts (a file's taking over the one an earlier
    /// run of the job opened, when the file is what it was then).
    pub(crate) async fn open_shared(
        &self,
        from: &SharedSource,
        to: &S3Url,
        options: &UploadOptions,
    ) -> Result<SharedUpload> {
        let options = options.write_options()?;
        self.uploader.open_shared(from, to, &options).await
    }

    /// Send the parts `numbers` of `from`'s `upload`: the parts, and a summary of the
    /// bytes sent (no object).
    pub(crate) async fn send_shared_parts(
        &self,
        from: &SharedSource,
        upload: &SharedUpload,
        numbers: RangeInclusive<u32>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<(Vec<UploadedPart>, Summary)> {
        let (started, before) = (Instant::now(), self.counters.snapshot());
        let bytes = upload.bytes_of(&numbers);
        let (parts, kept) = self
            .uploader
            .send_shared_parts(from, upload, numbers, &*reporter)
            .await?;
        let summary = Summary::new(
            0,
            0,
            bytes - kept,
            started.elapsed(),
            Some(Duration::ZERO),
            self.counters.snapshot().since(&before),
            Vec::new(),
        );
        Ok((parts, summary))
    }

    /// Complete `from`'s `upload` with every one of its `parts`, checked: a summary of one
    /// object, or of its failure.
    pub(crate) async fn commit_shared(
        &self,
        from: &SharedSource,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let options = options.write_options()?;
        let commit = self
            .uploader
            .commit_shared(from, upload, parts, &options, &*reporter);
        self.one_upload(commit, &from.to_string(), &*reporter).await
    }

    /// Abort `upload`: the store throws its parts away (a job that ends without it).
    pub(crate) async fn abort_shared(&self, upload: &SharedUpload) -> Result<()> {
        self.store.abort_upload(&upload.to, &upload.upload_id).await
    }
}
