//! One multipart upload whose parts several tasks send (Dask): a large file of a cluster's
//! upload, or a large object copied inside the store by several workers. The driver of the
//! job opens it, each task sends a range of its parts, one task completes it; each step is
//! one call here, counted in a summary of its own for the job to add up.

use std::ops::RangeInclusive;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Driver;
use crate::counters::Snapshot;
use crate::error::Result;
use crate::location::{ObjectUrl, S3Url};
use crate::plan::UploadOptions;
use crate::report::{Reporter, Summary};
use crate::source::{Store, UploadedPart};
use crate::transfer::upload::SharedUpload;

impl<S: Store<Object = ObjectUrl>> Driver<S> {
    /// Open the upload of the file `from` to `to` in parts (taking over the one an earlier
    /// run of the job opened, when the file is what it was then).
    pub(crate) async fn open_shared_file(
        &self,
        from: &Path,
        to: &S3Url,
        options: &UploadOptions,
    ) -> Result<SharedUpload> {
        let options = options.write_options()?;
        self.uploader.open_shared_file(from, to, &options).await
    }

    /// Send the parts `numbers` of the file `from`'s `upload`: the parts, and a summary
    /// of the bytes sent (no object).
    pub(crate) async fn send_shared_parts(
        &self,
        from: &Path,
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
        Ok((parts, self.parts_summary(bytes - kept, started, &before)))
    }

    /// Complete the file `from`'s `upload` with every one of its `parts`, checked by its
    /// whole CRC64NVME: a summary of one object, or of its failure.
    pub(crate) async fn commit_shared_file(
        &self,
        from: &Path,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        options: &UploadOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let options = options.write_options()?;
        let commit = self
            .uploader
            .commit_shared_file(from, upload, parts, &options, &*reporter);
        let name = from.display().to_string();
        self.one_upload(commit, &name, &*reporter).await
    }

    /// Open the copy of `from` (`known`: its size and ETag, as a listing gave them) to
    /// `to` in UploadPartCopy parts.
    pub(crate) async fn open_shared_copy(
        &self,
        from: &S3Url,
        to: &S3Url,
        known: Option<(u64, String)>,
        options: &UploadOptions,
    ) -> Result<SharedUpload> {
        let options = options.write_options()?;
        self.uploader
            .open_shared_copy(from, to, known, &options)
            .await
    }

    /// Copy the parts `numbers` of `from`'s `upload`: the parts, and a summary of the
    /// bytes copied (no object).
    pub(crate) async fn copy_shared_parts(
        &self,
        from: &S3Url,
        upload: &SharedUpload,
        numbers: RangeInclusive<u32>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<(Vec<UploadedPart>, Summary)> {
        let (started, before) = (Instant::now(), self.counters.snapshot());
        let bytes = upload.bytes_of(&numbers);
        let (parts, kept) = self
            .uploader
            .copy_shared_parts(from, upload, numbers, &*reporter)
            .await?;
        Ok((parts, self.parts_summary(bytes - kept, started, &before)))
    }

    /// Complete the copy `upload` of `from` with every one of its `parts`, compared with
    /// the source by what the store keeps for each.
    pub(crate) async fn commit_shared_copy(
        &self,
        from: &S3Url,
        upload: &SharedUpload,
        parts: Vec<UploadedPart>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let commit = self
            .uploader
            .commit_shared_copy(from, upload, parts, &*reporter);
        self.one_upload(commit, &from.to_string(), &*reporter).await
    }

    /// Abort `upload`: the store throws its parts away (a job that ends without it).
    pub(crate) async fn abort_shared(&self, upload: &SharedUpload) -> Result<()> {
        self.store.abort_upload(&upload.to, &upload.upload_id).await
    }

    fn parts_summary(&self, bytes: u64, started: Instant, before: &Snapshot) -> Summary {
        Summary::new(
            0,
            0,
            bytes,
            started.elapsed(),
            Some(Duration::ZERO),
            self.counters.snapshot().since(before),
            Vec::new(),
        )
    }
}
