//! The destination side of a sync: keys under a prefix of the store, or the files below a
//! directory, listed in key order one page at a time, each named by its path below the
//! destination as the source's keys are.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use futures::stream::BoxStream;
use futures::StreamExt;

use super::compare::Side;
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::paths::is_reserved;
use crate::error::Result;
use crate::location::S3Url;
use crate::plan::planned::Planned;
use crate::source::listing::{list, KeyBounds, ListSpec, Listed};
use crate::source::local::files_in_key_order;
use crate::source::Store;

/// Where a sync writes.
#[derive(Debug, Clone)]
pub(crate) enum Far {
    /// Keys under `prefix` (empty, or ending in `/`).
    Store { bucket: String, prefix: String },
    /// Files below `root`.
    Files { root: PathBuf, name: String },
}

impl Far {
    /// The keys under `url`, taken as a prefix (`s3://b/p` is `s3://b/p/`).
    pub(crate) fn store(url: &S3Url) -> Far {
        let prefix = match url.key.as_str() {
            "" => String::new(),
            key if key.ends_with('/') => key.to_owned(),
            key => format!("{key}/"),
        };
        Far::Store {
            bucket: url.bucket.clone(),
            prefix,
        }
    }

    pub(crate) fn files(root: PathBuf) -> Far {
        let name = root.display().to_string();
        Far::Files { root, name }
    }

    pub(crate) fn name(&self) -> String {
        match self {
            Far::Store { bucket, prefix } => format!("s3://{bucket}/{prefix}"),
            Far::Files { name, .. } => name.clone(),
        }
    }

    /// The name below the destination of the file `path` a download writes.
    pub(super) fn relative_path(&self, path: &Path) -> Option<String> {
        let Far::Files { root, .. } = self else {
            return None;
        };
        path.strip_prefix(root).ok()?.to_str().map(str::to_owned)
    }

    /// The name below the destination of the key an upload or copy writes.
    pub(super) fn relative_key(&self, url: &S3Url) -> Option<String> {
        let Far::Store { bucket, prefix } = self else {
            return None;
        };
        (url.bucket == *bucket)
            .then(|| url.key.strip_prefix(prefix.as_str()).map(str::to_owned))
            .flatten()
    }

    /// Where a listed destination entry is, for a content check.
    pub(super) fn locate(&self, entry: &FarEntry) -> Located {
        match self {
            Far::Store { bucket, prefix } => Located::Key {
                url: S3Url {
                    bucket: bucket.clone(),
                    key: format!("{prefix}{}", entry.relative),
                },
                etag: entry.etag.clone(),
            },
            Far::Files { root, .. } => Located::File(root.join(&entry.relative)),
        }
    }

    /// The delete of a destination entry the source lacks.
    pub(super) fn delete(&self, relative: String) -> Planned {
        match self {
            Far::Store { bucket, prefix } => Planned::Delete(S3Url {
                bucket: bucket.clone(),
                key: format!("{prefix}{relative}"),
            }),
            Far::Files { root, .. } => Planned::DeleteFile {
                root: root.clone(),
                relative: PathBuf::from(relative),
            },
        }
    }
}

/// A range of names below `prefix` as a range of the keys a listing under it gives.
pub(super) fn keys_under(prefix: &str, bounds: &KeyBounds) -> KeyBounds {
    let key = |name: &Option<String>| name.as_ref().map(|name| format!("{prefix}{name}"));
    KeyBounds {
        after: key(&bounds.after),
        until_after: key(&bounds.until_after),
    }
}

/// One destination key: its name below the destination and what the listing said.
#[derive(Debug, Clone)]
pub(crate) struct FarEntry {
    pub relative: String,
    pub side: Side,
    pub etag: Option<String>,
}

/// The destination's listing, read as the merge needs it.
pub(super) struct FarListing {
    pages: BoxStream<'static, Result<Vec<Listed>>>,
    held: VecDeque<FarEntry>,
    prefix: String,
    ended: bool,
    /// The last name listed, and whether one came before the name it follows.
    last: Option<String>,
    disordered: bool,
}

impl FarListing {
    /// The destination's entries whose names below it are in `bounds` (all of them by
    /// default).
    pub(super) fn open<S: Store>(
        far: &Far,
        store: &Arc<S>,
        counters: &Arc<Counters>,
        transfer: &TransferConfig,
        bounds: KeyBounds,
    ) -> FarListing {
        let spec = |bucket: &str, prefix: &str| ListSpec {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            delimiter: None,
            parallelism: transfer.list_parallelism,
            page_size: transfer.list_page_size,
            bounds: keys_under(prefix, &bounds),
        };
        let retry = transfer.retry.clone();
        let (pages, prefix) = match far {
            Far::Store { bucket, prefix } => (
                list(store.clone(), counters.clone(), retry, spec(bucket, prefix)).boxed(),
                prefix.clone(),
            ),
            // A directory not made yet holds nothing. Its walk sends no requests to count.
            Far::Files { root, .. } if std::fs::symlink_metadata(root).is_err() => {
                (futures::stream::empty().boxed(), String::new())
            }
            // One walk, each directory read once (a listing's pages would each walk anew).
            Far::Files { root, .. } => (
                files_in_key_order(root.clone(), transfer.list_page_size, bounds.clone()),
                String::new(),
            ),
        };
        FarListing {
            pages,
            held: VecDeque::new(),
            prefix,
            ended: false,
            last: None,
            disordered: false,
        }
    }

    /// Whether the store listed a name before one that precedes it in key order.
    pub(super) fn disordered(&self) -> bool {
        self.disordered
    }

    /// The next entry, when its name is at most `bound` (any, for `None`); an entry past
    /// it stays for the next call.
    pub(super) async fn next_up_to(&mut self, bound: Option<&str>) -> Result<Option<FarEntry>> {
        while self.held.is_empty() && !self.ended {
            match self.pages.next().await {
                Some(page) => self.hold(page?),
                None => self.ended = true,
            }
        }
        let within = match (self.held.front(), bound) {
            (Some(entry), Some(bound)) => entry.relative.as_str() <= bound,
            (Some(_), None) => true,
            (None, _) => false,
        };
        Ok(within.then(|| self.held.pop_front()).flatten())
    }

    fn hold(&mut self, page: Vec<Listed>) {
        for listed in page {
            let Listed::Object(object) = listed else {
                continue;
            };
            // A console's zero-byte "folder" is no file; names of temporary files are
            // another run's, never compared or deleted.
            let folder = object.key.ends_with('/') && object.size == 0;
            let name = object.key.rsplit('/').next().unwrap_or_default();
            if folder || is_reserved(name.as_ref()) {
                continue;
            }
            // The listing refuses keys outside its prefix, so every key has it.
            let Some(relative) = object.key.strip_prefix(self.prefix.as_str()) else {
                continue;
            };
            if self.last.as_deref().is_some_and(|last| relative <= last) {
                self.disordered = true;
            }
            self.last = Some(relative.to_owned());
            self.held.push_back(FarEntry {
                relative: relative.to_owned(),
                side: Side {
                    size: object.size,
                    modified: object.last_modified.map(SystemTime::from),
                },
                etag: object.etag,
            });
        }
    }
}

/// Where a destination key lives, for a content check: a key of the store or a file.
pub(super) enum Located {
    Key { url: S3Url, etag: Option<String> },
    File(PathBuf),
}
