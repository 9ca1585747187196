//! The one multipart writer. Every multipart upload parabyte makes (a file's, a stream's, a
//! copy streamed between stores, a copy inside the store in parts) is opened, fed and ended
//! here: created (or taken over from an earlier run), its parts sent by the caller, then
//! completed and checked by the one commit check, or else aborted (kept, for a recorded
//! file's upload whose failure leaves progress a later run can use). So the lifecycle and
//! its checks are written once, and the whole-source-or-nothing property covers them all.

use std::future::Future;

use super::open::OpenUpload;
use super::Uploader;
use crate::checksum::{Crc, Method, StoreChecksum};
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::source::{Store, UploadedPart, WriteOptions};

/// Where a multipart upload starts.
pub(super) enum Opening {
    /// A new upload.
    New,
    /// One an earlier run began, whose parts the caller keeps where they match.
    Resumed(String),
}

/// The parts a writer sent, and how what the store joins from them is checked.
pub(super) struct Sent {
    pub parts: Vec<UploadedPart>,
    pub check: Commit,
}

/// How a completed upload is known to hold the source's bytes.
pub(super) enum Commit {
    /// The whole object's CRC64NVME, sent with the complete and checked by the store and by
    /// [`Uploader::commit`].
    Whole(u64),
    /// No CRC could go with it (a copy in parts: stores disagree on copied parts'
    /// checksums): the copy is verified only when the store keeps for it the checksum it
    /// keeps for the source, given here.
    SameAs(Option<StoreChecksum>),
}

impl<S: Store> Uploader<S> {
    /// Open a multipart upload to `to` as `opening` says; `recorded` is told its ID and
    /// says whether a later run could resume it. `send` sends the parts under that ID.
    /// Then the parts are completed and checked, or the upload is aborted; a recorded one
    /// whose failure leaves progress ([`Error::keeps_progress`]) is kept instead.
    pub(super) async fn write_parts<F, Fut>(
        &self,
        to: &S3Url,
        options: &WriteOptions,
        opening: Opening,
        recorded: impl FnOnce(&str) -> bool,
        send: F,
    ) -> Result<Option<Method>>
    where
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = Result<Sent>>,
    {
        let upload_id = match opening {
            Opening::Resumed(id) => id,
            Opening::New => self.send(|| self.store.create_upload(to, options)).await?,
        };
        let resumable = recorded(&upload_id);
        let upload = OpenUpload::new(self.store.clone(), to.clone(), upload_id, resumable);
        let completed = match send(upload.id.clone()).await {
            Ok(Sent {
                parts,
                check: Commit::Whole(whole),
            }) => self.commit(to, &upload.id, &parts, whole, options).await,
            Ok(Sent {
                parts,
                check: Commit::SameAs(source),
            }) => {
                self.commit_unchecked(to, &upload.id, &parts, source, options)
                    .await
            }
            Err(error) => Err(error),
        };
        match &completed {
            Err(error) if resumable && error.keeps_progress() => upload.keep(),
            Ok(_) => upload.completed(),
            Err(_) => upload.abort().await,
        }
        completed
    }

    /// Complete an upload sent without a whole CRC, then compare what the store keeps for
    /// it with `source`, what it keeps for the source (a HEAD of the copy). A complete that
    /// fails may still have been committed (its answer lost): a copy that keeps the
    /// source's checksum then is this upload, committed; else the failure stands.
    pub(super) async fn commit_unchecked(
        &self,
        to: &S3Url,
        upload_id: &str,
        parts: &[UploadedPart],
        source: Option<StoreChecksum>,
        options: &WriteOptions,
    ) -> Result<Option<Method>> {
        let completed = self
            .send(|| self.store.complete_upload(to, upload_id, parts, 0, options))
            .await;
        if let Err(error @ Error::Exists { .. }) = completed {
            return Err(error);
        }
        let copy = match self.send(|| self.store.look(to)).await {
            Ok(looked) => looked.and_then(|described| described.checksum),
            Err(Error::Unsupported { .. }) => None,
            // The complete's own failure, when it failed, says more.
            Err(error) => return Err(completed.err().unwrap_or(error)),
        };
        let same = match (source, copy) {
            (Some(StoreChecksum::Malformed(_)), _) => false,
            (Some(source), Some(copy)) => source == copy,
            _ => false,
        };
        match completed {
            Err(error) if !same => Err(error),
            _ => Ok(same.then_some(Method::Crc)),
        }
    }

    /// Complete an upload whose parts are all in, and check what the store stored. When
    /// the complete fails, the store may still have committed it (an answer lost on the
    /// way back, whose retry then finds no such upload or completes it again): then, and
    /// when its answer names no CRC, the key is looked at, and an object whose CRC64NVME is
    /// the one sent is this upload, committed and checked; one that keeps another
    /// CRC64NVME is a failure.
    pub(super) async fn commit(
        &self,
        to: &S3Url,
        upload_id: &str,
        parts: &[UploadedPart],
        whole: u64,
        options: &WriteOptions,
    ) -> Result<Option<Method>> {
        let completed = self
            .send(|| {
                self.store
                    .complete_upload(to, upload_id, parts, whole, options)
            })
            .await;
        let failed = match completed {
            Ok(written) => match self.check_stored(to, &written, whole)? {
                Some(confirmed) => return Ok(Some(confirmed)),
                None => None,
            },
            Err(error @ Error::Exists { .. }) => return Err(error),
            Err(error) => Some(error),
        };
        let looked = self.send(|| self.store.look(to)).await;
        // moto names the checksum without its type: one equal to the whole CRC is it.
        let kept = match looked
            .ok()
            .flatten()
            .and_then(|described| described.checksum)
        {
            Some(StoreChecksum::Full(crc) | StoreChecksum::Unlabeled { crc, .. })
                if crc.algorithm == Crc::Crc64Nvme =>
            {
                Some(crc.value)
            }
            _ => None,
        };
        match (kept, failed) {
            (Some(kept), _) if kept == whole => Ok(Some(Method::Crc)),
            (_, Some(error)) => Err(error),
            (Some(kept), None) => Err(Error::Corrupt {
                what: format!("CompleteMultipartUpload {to}"),
                detail: format!(
                    "the store keeps CRC64NVME {kept:016x} for the object, not the {whole:016x} \
                     its parts were sent with"
                ),
            }),
            (None, None) => Ok(None),
        }
    }
}
