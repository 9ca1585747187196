//! A local directory as a store: its files are the objects, their paths below the root
//! (`/`-separated) the keys, listed in S3's key order by a walk that never follows a link.
//! A version is the file as it is now: its device, inode, size and modification time make
//! the validator a pinned read checks. It is a destination too (`writes.rs`): files are
//! created, written and committed through `disk/`'s gates, the one place that does.

mod files_in_order;
mod folder_entries;
mod stat;
mod tree_keys;
mod walk;
mod writes;

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use futures::StreamExt;

use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::listing::page::{Cursor, ListPage, ListQuery, ObjectEntry, PageSink};
use crate::source::store::{
    Described, Fetched, ListedPart, Shape, Store, UploadedPart, WriteOptions, Written,
};
use crate::source::write_body::WriteBody;
use crate::timestamp::Timestamp;
use crate::validator::Validator;
pub(crate) use files_in_order::files_in_key_order;
pub(crate) use stat::Stat;
pub(crate) use tree_keys::Window;
pub(crate) use walk::{Kind, Next, Walked};

/// How much of a file one chunk of a body holds.
const READ_CHUNK: usize = 256 * 1024;

/// A directory whose files are read and written as objects. It is one bucket: the bucket
/// name of a listing or a write is not looked at.
#[derive(Debug, Clone)]
pub(crate) struct LocalStore {
    root: PathBuf,
    uploads: writes::Uploads,
}

impl LocalStore {
    pub(crate) fn new(root: impl Into<PathBuf>) -> LocalStore {
        LocalStore {
            root: root.into(),
            uploads: writes::Uploads::default(),
        }
    }

    /// Every entry of the tree in `window`, in key order, links and FIFOs included (which a
    /// listing leaves out): what a copy of the tree plans from.
    pub(crate) fn walk(&self, window: Window<'_>, visit: impl FnMut(Walked) -> Next) {
        walk::walk(&self.root, window, visit);
    }

    /// Open `key` for reading, never through a link, and read what it is now.
    fn open(&self, key: &str) -> Result<(File, Metadata, String)> {
        let what = format!("GET {}", self.root.join(key).display());
        let missing = |detail: String| Error::NotFound {
            what: what.clone(),
            detail,
        };
        let relative =
            tree_keys::path_of(key).ok_or_else(|| missing("not a path below the root".into()))?;
        let path = self.root.join(relative);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENOENT) => missing(e.to_string()),
                Some(libc::ELOOP) => {
                    missing("it is a symbolic link, which parabyte never follows".into())
                }
                _ => Error::io("cannot open", &path, e),
            })?;
        let metadata = file
            .metadata()
            .map_err(|e| Error::io("cannot read", &path, e))?;
        if !metadata.is_file() {
            return Err(missing("it is not a regular file".into()));
        }
        Ok((file, metadata, what))
    }
}

/// The version a file is now: what changes when it is replaced or written.
fn version_of(stat: &Stat) -> Validator {
    Validator::ETag(stat.version())
}

fn refuse_other_version(metadata: &Metadata, pinned: Option<&Validator>, what: &str) -> Result<()> {
    match pinned {
        Some(pinned) if *pinned != version_of(&Stat::from(metadata)) => Err(Error::Changed {
            what: what.to_owned(),
            detail: "the file changed since its first read".into(),
        }),
        _ => Ok(()),
    }
}

/// The bytes `range` of `file`, read in chunks off the runtime's threads.
fn body(file: File, range: ByteRange, path: PathBuf) -> crate::source::store::Body {
    let file = Arc::new(file);
    let chunks = (range.start..range.end + 1).step_by(READ_CHUNK);
    let end = range.end;
    futures::stream::iter(chunks)
        .then(move |offset| {
            let (file, path) = (file.clone(), path.clone());
            let length = (end + 1 - offset).min(READ_CHUNK as u64) as usize;
            async move {
                tokio::task::spawn_blocking(move || {
                    let mut chunk = vec![0; length];
                    file.read_exact_at(&mut chunk, offset)
                        .map(|()| Bytes::from(chunk))
                        .map_err(|e| Error::io("cannot read", &path, e))
                })
                .await
                .map_err(|e| Error::io("cannot read", PathBuf::new(), io::Error::other(e)))?
            }
        })
        .boxed()
}

impl Store for LocalStore {
    type Object = String;

    fn name(&self) -> &'static str {
        "a local directory"
    }

    fn destination_name(&self, object: &S3Url) -> String {
        self.file_name_of(object)
    }

    /// Its files are copied by `disk/`'s local copier, not through the store.
    fn copies_inside(&self) -> bool {
        false
    }

    async fn get(
        &self,
        key: &String,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        let (file, metadata, what) = self.open(key)?;
        refuse_other_version(&metadata, pinned, &what)?;
        let total = metadata.len();
        let (shape, served) = match range {
            _ if total == 0 => (Shape::Empty, None),
            None => {
                let whole = ByteRange {
                    start: 0,
                    end: total - 1,
                };
                (
                    Shape::Whole {
                        length: Some(total),
                    },
                    Some(whole),
                )
            }
            Some(range) if range.start >= total => {
                return Err(Error::InvalidInput(format!(
                    "{what}: the range starts at byte {}, past the end of a {total}-byte file",
                    range.start
                )))
            }
            Some(range) => {
                let range = ByteRange {
                    start: range.start,
                    end: range.end.min(total - 1),
                };
                (Shape::Partial { range, total }, Some(range))
            }
        };
        let body = match served {
            Some(range) => body(file, range, self.root.join(key)),
            None => futures::stream::empty().boxed(),
        };
        Ok(Fetched {
            shape,
            validator: Some(version_of(&Stat::from(&metadata))),
            moved_to: None,
            checksum: None,
            content_md5: None,
            modified: metadata.modified().ok(),
            file_time: None,
            body,
        })
    }

    /// A file keeps nothing a read did not say: no stored checksum, no parts.
    async fn describe(
        &self,
        key: &String,
        pinned: Option<&Validator>,
        _part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        let (_, metadata, what) = self.open(key)?;
        refuse_other_version(&metadata, pinned, &what)?;
        Ok(Some(Described::default()))
    }

    async fn list_page(&self, query: &ListQuery<'_>, sink: PageSink<'_>) -> Result<ListPage> {
        let root = self.root.clone();
        let (prefix, delimiter) = (query.prefix.to_owned(), query.delimiter.map(str::to_owned));
        let after = match query.cursor {
            Cursor::Start => None,
            Cursor::Token(key) | Cursor::After(key) => Some(key.clone()),
        };
        let max_keys = query.max_keys.max(1);
        let page = tokio::task::spawn_blocking(move || {
            list(
                &root,
                &prefix,
                delimiter.as_deref(),
                after.as_deref(),
                max_keys,
            )
        })
        .await
        .map_err(|e| Error::io("cannot list", &self.root, io::Error::other(e)))??;
        sink.finish(page, query)
    }

    async fn put(
        &self,
        object: &S3Url,
        body: WriteBody,
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.put_file(object, body, crc64nvme, options).await
    }

    async fn create_upload(&self, object: &S3Url, options: &WriteOptions) -> Result<String> {
        self.open_upload(object, options).await
    }

    async fn upload_part(
        &self,
        _object: &S3Url,
        upload_id: &str,
        number: u32,
        body: WriteBody,
        crc64nvme: u64,
    ) -> Result<UploadedPart> {
        self.write_part(upload_id, number, body, crc64nvme).await
    }

    async fn complete_upload(
        &self,
        _object: &S3Url,
        upload_id: &str,
        parts: &[UploadedPart],
        crc64nvme: u64,
        _options: &WriteOptions,
    ) -> Result<Written> {
        self.join_upload(upload_id, parts, crc64nvme).await
    }

    async fn list_parts(
        &self,
        _object: &S3Url,
        upload_id: &str,
    ) -> Result<Option<Vec<ListedPart>>> {
        Ok(self.held_parts(upload_id))
    }

    async fn abort_upload(&self, _object: &S3Url, upload_id: &str) -> Result<()> {
        self.drop_upload(upload_id);
        Ok(())
    }
}

/// One page of the files below `root` in key order. Only `/` is a delimiter a tree of
/// files can roll keys up by; the token is the last key or folder of the page.
fn list(
    root: &Path,
    prefix: &str,
    delimiter: Option<&str>,
    after: Option<&str>,
    max_keys: usize,
) -> Result<ListPage> {
    if delimiter.is_some_and(|delimiter| delimiter != "/") {
        return Err(Error::InvalidInput(format!(
            "a local directory rolls keys up only by '/', not by {delimiter:?}"
        )));
    }
    let mut page = ListPage::default();
    let mut failure = None;
    let mut count = 0;
    let window = Window {
        prefix: prefix.as_bytes(),
        after: after.map(str::as_bytes),
        ..Window::default()
    };
    walk::walk(root, window, |walked| {
        let Some(key) = walked.relative.to_str().map(str::to_owned) else {
            return Next::PassBy;
        };
        if count == max_keys {
            page.is_truncated = true;
            return Next::Stop;
        }
        match walked.kind {
            Kind::Directory if delimiter.is_some() && key.len() + 1 > prefix.len() => {
                let folder = format!("{key}/");
                page.next_token = Some(folder.clone());
                page.common_prefixes.push(folder);
                count += 1;
                Next::PassBy
            }
            Kind::Directory => Next::Continue,
            Kind::File(metadata) => {
                page.next_token = Some(key.clone());
                page.objects.push(entry(key, &metadata));
                count += 1;
                Next::Continue
            }
            // A link, FIFO or device holds no object's bytes.
            Kind::Other(_) => Next::Continue,
            Kind::Unreadable(error) => {
                failure = Some(Error::io("cannot list", root.join(&walked.relative), error));
                Next::Stop
            }
        }
    });
    if let Some(error) = failure {
        return Err(error);
    }
    if !page.is_truncated {
        page.next_token = None;
    }
    Ok(page)
}

fn entry(key: String, stat: &Stat) -> ObjectEntry {
    ObjectEntry {
        key,
        size: stat.len(),
        etag: Some(stat.version()),
        last_modified: stat.modified().and_then(timestamp),
        storage_class: None,
    }
}

fn timestamp(time: SystemTime) -> Option<Timestamp> {
    let millis = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_millis();
    Some(Timestamp::from_unix_millis(i64::try_from(millis).ok()?))
}

#[cfg(test)]
mod tests;
