//! `sync --checksum`: whether a key both sides hold at equal sizes has the same bytes.
//! A file parabyte downloaded is judged by its version mark (no read, no request); any
//! other file by its CRC64NVME, read once and kept in a mark; a key by the checksum the
//! store keeps, one HEAD pinned to the listed version. What cannot be compared (a store
//! checksum of another kind, a HEAD that fails) is sent again: never assumed equal.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::far::Located;
use crate::checksum::{Crc, StoreChecksum};
use crate::counters::Counters;
use crate::disk::content_mark::crc64nvme_of;
use crate::disk::resume::{already_there, AlreadyThere};
use crate::location::{ObjectUrl, S3Url};
use crate::plan::planned::Planned;
use crate::retry::{with_retries, RetryPolicy};
use crate::source::Store;
use crate::validator::Validator;

pub(super) struct Contents<S> {
    store: Arc<S>,
    counters: Arc<Counters>,
    retry: RetryPolicy,
    /// A dry run reads but marks nothing.
    dry_run: bool,
}

impl<S: Store<Object = ObjectUrl>> Contents<S> {
    pub(super) fn new(
        store: Arc<S>,
        counters: Arc<Counters>,
        retry: RetryPolicy,
        dry_run: bool,
    ) -> Self {
        Contents {
            store,
            counters,
            retry,
            dry_run,
        }
    }

    /// True only when the two sides are shown to hold the same bytes.
    pub(super) async fn same(&self, item: &Planned, target: &Located) -> bool {
        match (item, target) {
            (Planned::Job(job), Located::File(path)) => {
                let (Some(known), ObjectUrl::S3(url)) = (&job.known, &job.source) else {
                    return false;
                };
                let validator = known.validator.as_ref();
                if already_there(path, known.size, validator, None) == Some(AlreadyThere::Marked) {
                    return true;
                }
                self.file_matches_key(path, url, validator).await
            }
            (Planned::Upload(job), Located::Key { url, etag }) => {
                let validator = etag.clone().map(Validator::ETag);
                self.file_matches_key(&job.from, url, validator.as_ref())
                    .await
            }
            (Planned::Copy(job), Located::Key { url, etag }) => {
                let source_version = job.known.as_ref().and_then(|(_, v)| v.as_ref());
                let target_version = etag.clone().map(Validator::ETag);
                let (source, target) = futures::join!(
                    self.stored(&job.from, source_version),
                    self.stored(url, target_version.as_ref())
                );
                match (source, target) {
                    (Some(source), Some(target)) => {
                        !matches!(source, StoreChecksum::Malformed(_)) && source == target
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// The file's CRC64NVME against the key's whole-object CRC64NVME.
    async fn file_matches_key(
        &self,
        path: &Path,
        url: &S3Url,
        version: Option<&Validator>,
    ) -> bool {
        let Some(StoreChecksum::Full(stored)) = self.stored(url, version).await else {
            return false;
        };
        if stored.algorithm != Crc::Crc64Nvme {
            return false;
        }
        let path = PathBuf::from(path);
        let keep = !self.dry_run;
        let crc = tokio::task::spawn_blocking(move || crc64nvme_of(&path, keep)).await;
        matches!(crc, Ok(Ok(crc)) if crc == stored.value)
    }

    /// The checksum the store keeps for `url` at `version`: one HEAD.
    async fn stored(&self, url: &S3Url, version: Option<&Validator>) -> Option<StoreChecksum> {
        let object = ObjectUrl::S3(url.clone());
        let described = with_retries(&self.retry, &self.counters, || {
            self.store.describe(&object, version, None)
        })
        .await;
        described.ok()??.checksum
    }
}
