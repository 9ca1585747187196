//! The local store's way of moving bytes: one file copied in parallel chunks, each moved by
//! the kernel (`copy_file_range`, which on reflinking file systems shares extents instead of
//! copying) with a read/write fallback, into a temporary file beside the destination that is
//! renamed when complete; or streamed in order into a device or FIFO the user named. The
//! driver runs these jobs as it runs downloads; `plan/local.rs` finds them.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use futures::TryStreamExt;
use tokio::sync::Semaphore;

use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::blocking::blocking;
use crate::disk::copy::copy_range;
use crate::disk::sink::{FilePath, FileSink, StreamTarget};
use crate::error::{Error, Result};
use crate::report::{ObjectReport, Preview, Reporter, Status, Verification};

/// One local file to copy.
#[derive(Debug)]
pub(crate) struct LocalJob {
    pub from: PathBuf,
    pub to: LocalTarget,
    /// Its size when the walk found it.
    pub size: u64,
}

/// Where a local file goes.
#[derive(Debug)]
pub(crate) enum LocalTarget {
    /// A file under its final name, through a temporary one.
    File(FilePath),
    /// A character device or FIFO the user named, written in order.
    Stream(StreamTarget),
}

impl LocalJob {
    /// The file it writes, for reports (none for a device).
    pub(crate) fn destination(&self) -> Option<&Path> {
        match &self.to {
            LocalTarget::File(path) => Some(path),
            LocalTarget::Stream(_) => None,
        }
    }
}

/// How one local file ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Copied {
    /// Copied, this many bytes (none in a dry run).
    Bytes(u64),
    /// The destination already had the file's size and modification time: left alone.
    Unchanged(u64),
}

/// Copies local files: chunk size and count per file from the transfer settings, one limit
/// on the chunks in flight across every call of a client.
#[derive(Debug)]
pub(crate) struct LocalCopier {
    part_size: u64,
    ranges_per_object: usize,
    skip_unchanged: bool,
    chunk_slots: Semaphore,
    counters: Arc<Counters>,
}

impl LocalCopier {
    pub(crate) fn new(transfer: &TransferConfig, counters: Arc<Counters>) -> LocalCopier {
        LocalCopier {
            part_size: transfer.part_size.max(1),
            ranges_per_object: transfer.ranges_per_object.max(1),
            skip_unchanged: transfer.skip_unchanged,
            chunk_slots: Semaphore::new(transfer.max_requests.max(1)),
            counters,
        }
    }

    /// Copy one file and report how it ended well (a failure is the driver's to report).
    pub(crate) async fn copy(&self, job: &LocalJob, reporter: &dyn Reporter) -> Result<Copied> {
        let copied = match &job.to {
            LocalTarget::File(to) => self.copy_file(&job.from, to, job.size, reporter).await?,
            LocalTarget::Stream(to) => Copied::Bytes(stream_file(&job.from, to, reporter).await?),
        };
        let (status, verification, bytes) = match copied {
            Copied::Bytes(bytes) => (Status::Copied, Verification::SizeOnly, bytes),
            Copied::Unchanged(_) => {
                self.counters.count_skipped_by_size_and_time();
                (Status::Skipped, Verification::SizeAndTime, 0)
            }
        };
        reporter.object_reported(&ObjectReport {
            source: &job.from.display().to_string(),
            destination: job.destination(),
            bytes,
            status,
            verification: Some(verification),
            error: None,
        });
        Ok(copied)
    }

    /// A dry run's line for one file: the copy it would make, or that it would leave the
    /// destination alone, judged as a real run would.
    pub(crate) fn preview(&self, job: &LocalJob, reporter: &dyn Reporter) -> Copied {
        let source = job.from.display().to_string();
        let (destination, unchanged) = match &job.to {
            LocalTarget::Stream(to) => (to.name(), false),
            LocalTarget::File(to) => {
                let unchanged = self.skip_unchanged
                    && fs::metadata(&job.from)
                        .and_then(|metadata| metadata.modified())
                        .is_ok_and(|modified| same_size_and_time(to, job.size, modified));
                (to.to_path_buf(), unchanged)
            }
        };
        let destination = destination.display().to_string();
        reporter.previewed(Preview::verdict(unchanged, &source, &destination));
        match unchanged {
            true => Copied::Unchanged(job.size),
            false => Copied::Bytes(0),
        }
    }

    /// A temporary file beside `to`, chunks of `part_size` copied up to `ranges_per_object`
    /// at a time, permissions and modification time carried over, then the rename. A
    /// destination with the source's size and modification time is left alone (unless
    /// skipping is off): an earlier run, or another tool that keeps times, copied it.
    async fn copy_file(
        &self,
        from: &Path,
        to: &FilePath,
        size: u64,
        reporter: &dyn Reporter,
    ) -> Result<Copied> {
        let (from_path, to_path) = (from.to_owned(), to.to_owned());
        let skip_unchanged = self.skip_unchanged;
        let opened = blocking(move || -> Result<_> {
            let source =
                File::open(&from_path).map_err(|e| Error::io("cannot open", &from_path, e))?;
            let metadata = source
                .metadata()
                .map_err(|e| Error::io("cannot read", &from_path, e))?;
            let modified = metadata.modified().ok();
            let unchanged =
                modified.is_some_and(|modified| same_size_and_time(&to_path, size, modified));
            if skip_unchanged && unchanged {
                return Ok(None);
            }
            // No version: a local copy is never resumed, a failed one leaves nothing.
            let sink = FileSink::create(&to_path, None, Some(size))?;
            sink.file()
                .set_permissions(metadata.permissions())
                .map_err(|e| Error::io("cannot set permissions of", to_path.to_path_buf(), e))?;
            Ok(Some((Arc::new(source), sink, modified)))
        })
        .await?;
        let Some((source, sink, modified)) = opened else {
            reporter.bytes_skipped(size);
            return Ok(Copied::Unchanged(size));
        };
        let chunks = (0..size)
            .step_by(self.part_size as usize)
            .map(|start| (start, self.part_size.min(size - start)));
        futures::stream::iter(chunks.map(Ok))
            .try_for_each_concurrent(self.ranges_per_object, |(offset, length)| {
                let (source, target) = (source.clone(), sink.file().clone());
                let from = from.to_owned();
                async move {
                    let _slot = self
                        .chunk_slots
                        .acquire()
                        .await
                        .expect("chunk slots are never closed");
                    blocking(move || {
                        copy_range(&source, &target, offset, length)
                            .map_err(|e| Error::io("cannot copy", &from, e))
                    })
                    .await?;
                    reporter.bytes_transferred(length);
                    Ok(())
                }
            })
            .await?;
        blocking(move || sink.rename_into_place(modified)).await?;
        Ok(Copied::Bytes(size))
    }
}

/// A regular file (not through a link) of this size and modification time, to the
/// nanosecond: what a local copy that kept the time left.
fn same_size_and_time(path: &Path, size: u64, modified: SystemTime) -> bool {
    fs::symlink_metadata(path).is_ok_and(|there| {
        there.is_file() && there.len() == size && there.modified().ok() == Some(modified)
    })
}

/// Copy one file, in order, into a device or FIFO (which stays what it is).
async fn stream_file(from: &Path, to: &StreamTarget, reporter: &dyn Reporter) -> Result<u64> {
    let (from, to) = (from.to_owned(), to.clone());
    let copied = blocking(move || -> Result<u64> {
        let mut source = File::open(&from).map_err(|e| Error::io("cannot open", &from, e))?;
        let mut out = to.open()?;
        io::copy(&mut source, &mut out).map_err(|e| Error::io("cannot copy", &from, e))
    })
    .await?;
    reporter.bytes_transferred(copied);
    Ok(copied)
}
