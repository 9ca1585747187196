//! An in-memory store for unit and property tests: many objects under S3 URLs (and web URLs),
//! each one version with its ETag, modification time, stored checksum and upload part
//! size; listings with ListObjectsV2's prefix, delimiter, start-after and continuation
//! rules; and a fault script ([`When`], [`Answer`]) that fails the Nth request of a kind,
//! cuts a body or a page, changes an object between two requests, or lies. It takes
//! writes as S3 does (`writes.rs`): PUTs and multipart uploads, each body checked against
//! the CRC64NVME it came with. It records every request. Real servers and the fault proxy prove the wire; this proves the code
//! above the seam, fast and exactly.

mod script;
mod writes;

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use bytes::Bytes;

use crate::checksum::StoreChecksum;
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::ranges::ByteRange;
use crate::source::listing::{Cursor, ListPage, ListQuery, ObjectEntry, PageSink};
use crate::source::store::{
    Body, Described, Fetched, ListedPart, Shape, Store, StoredHeaders, UploadedPart, WriteOptions,
    Written,
};
use crate::source::write_body::WriteBody;
use crate::timestamp::Timestamp;
use crate::validator::Validator;
use script::{answer_for, Scripted};
pub(crate) use script::{Answer, Request, When};
use writes::Upload;

/// Bodies arrive in chunks of this size, as from a socket.
const CHUNK: usize = 64 * 1024;

/// Objects of a recursive listing page are handed on in batches of this many, so tests
/// cross batch boundaries with small pages.
const LIST_BATCH: usize = 3;

/// One GET as the store received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub range: Option<ByteRange>,
    pub pinned: Option<Validator>,
}

/// One listing request as the store received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListSeen {
    pub prefix: String,
    pub cursor: Cursor,
    pub max_keys: usize,
}

/// One version of one object.
#[derive(Debug, Clone)]
struct Stored {
    data: Bytes,
    validator: Option<Validator>,
    modified: Option<SystemTime>,
    /// The file time an upload stored in its metadata.
    file_time: Option<SystemTime>,
    /// The checksum a HEAD (and a GET of the whole object) tells, and the size of the
    /// upload's parts.
    keeps: Option<(StoreChecksum, u64)>,
    /// Each upload part has an ETag of its own, so a part HEAD pinned to the object's
    /// answers 412 (moto).
    own_part_etags: bool,
    /// The content headers and metadata it was stored with.
    headers: StoredHeaders,
}

#[derive(Debug, Default)]
struct State {
    /// By URL (`s3://bucket/key` sorts as the keys do within a bucket).
    objects: BTreeMap<String, Stored>,
    script: Vec<Scripted>,
    gets: Vec<Seen>,
    /// The GETs by object, in the order received.
    got: Vec<String>,
    /// The HEADs received: the part number each asked for, if any.
    heads: Vec<Option<u32>>,
    lists: Vec<ListSeen>,
    /// Multipart uploads begun and neither completed nor aborted, by upload ID.
    uploads: BTreeMap<String, Upload>,
    /// Upload IDs given out so far.
    uploads_begun: u64,
    /// The write requests received, by kind, in order (a DeleteObjects: one per key).
    writes: Vec<Request>,
    /// DeleteObjects requests received, and the keys each named.
    delete_requests: Vec<usize>,
    /// Stands for reads and writes on two endpoints: nothing is copied inside it.
    two_endpoints: bool,
}

/// The in-memory store.
#[derive(Debug, Default)]
pub(crate) struct MemoryStore {
    state: Mutex<State>,
}

impl MemoryStore {
    pub(crate) fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Store `data` at `url` (`s3://bucket/key` or a web URL) with `etag`.
    pub(crate) fn put(&self, url: &str, data: &[u8], etag: Option<&str>) {
        self.lock().objects.insert(
            url.to_owned(),
            Stored {
                data: Bytes::copy_from_slice(data),
                validator: etag.map(|tag| Validator::ETag(tag.to_owned())),
                modified: None,
                file_time: None,
                keeps: None,
                own_part_etags: false,
                headers: StoredHeaders::default(),
            },
        );
    }

    /// The content headers and metadata the object at `url` was stored with.
    pub(crate) fn headers_of(&self, url: &str) -> Option<StoredHeaders> {
        Some(self.lock().objects.get(url)?.headers.clone())
    }

    /// The object at `url` carries the file time `when` in its metadata.
    pub(crate) fn set_file_time(&self, url: &str, when: SystemTime) {
        if let Some(object) = self.lock().objects.get_mut(url) {
            object.file_time = Some(when);
        }
    }

    /// The object at `url` was last modified at `when`.
    pub(crate) fn set_modified(&self, url: &str, when: SystemTime) {
        if let Some(object) = self.lock().objects.get_mut(url) {
            object.modified = Some(when);
        }
    }

    /// HEADs of `url` (and GETs of all of it) answer with `checksum`, as for an upload in
    /// parts of `part_size`.
    pub(crate) fn keep_checksum(&self, url: &str, checksum: StoreChecksum, part_size: u64) {
        if let Some(object) = self.lock().objects.get_mut(url) {
            object.keeps = Some((checksum, part_size));
        }
    }

    /// Stand for a source on another endpoint than the destination: copies must stream
    /// through parabyte ([`Store::copies_inside`] is false).
    pub(crate) fn as_two_endpoints(&self) {
        self.lock().two_endpoints = true;
    }

    /// Give each upload part of the object at `url` an ETag of its own, as moto does.
    pub(crate) fn give_parts_own_etags(&self, url: &str) {
        if let Some(object) = self.lock().objects.get_mut(url) {
            object.own_part_etags = true;
        }
    }

    /// Answer the requests `when` picks as `answer` says; the first scripted answer that
    /// picks a request wins.
    pub(crate) fn script(&self, when: When, answer: Answer) {
        self.lock().script.push(Scripted {
            when,
            answer,
            matched: 0,
        });
    }

    /// The size of the object at `url` (0 when there is none).
    pub(crate) fn size_of(&self, url: &str) -> u64 {
        self.lock()
            .objects
            .get(url)
            .map_or(0, |object| object.data.len() as u64)
    }

    /// The ETag of the object at `url`.
    pub(crate) fn etag_of(&self, url: &str) -> String {
        match self
            .lock()
            .objects
            .get(url)
            .and_then(|o| o.validator.clone())
        {
            Some(Validator::ETag(tag)) => tag,
            _ => String::new(),
        }
    }

    /// Every GET so far, in the order received.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.lock().gets.clone()
    }

    /// The objects GETs asked for, in the order received.
    pub(crate) fn got(&self) -> Vec<String> {
        self.lock().got.clone()
    }

    /// The HEADs so far, by the part number each asked for.
    pub(crate) fn heads(&self) -> Vec<Option<u32>> {
        self.lock().heads.clone()
    }

    /// The listing requests so far.
    pub(crate) fn lists(&self) -> Vec<ListSeen> {
        self.lock().lists.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("memory store poisoned")
    }

    fn answer_get(
        &self,
        url: &str,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        let mut state = self.lock();
        state.gets.push(Seen {
            range,
            pinned: pinned.cloned(),
        });
        state.got.push(url.to_owned());
        let answer = answer_for(&mut state.script, Request::Get, url, range.map(|r| r.start));
        let what = format!("GET {url} {range:?}");
        if let Some((data, validator)) = answer.replace {
            let object = state.objects.entry(url.to_owned()).or_insert(Stored {
                data: Bytes::new(),
                validator: None,
                modified: None,
                file_time: None,
                keeps: None,
                own_part_etags: false,
                headers: StoredHeaders::default(),
            });
            object.data = data;
            object.validator = validator;
        }
        if let Some(error) = answer.fail {
            return Err(error());
        }
        let Some(object) = state.objects.get(url) else {
            return Err(Error::NotFound {
                what,
                detail: "404 NoSuchKey".into(),
            });
        };
        let pin_failed = pinned
            .zip(object.validator.as_ref())
            .is_some_and(|(pinned, current)| !pinned.matches(current));
        if pin_failed && !answer.ignore_pin {
            return Err(Error::Changed {
                what,
                detail: "412 Precondition Failed".into(),
            });
        }
        let total = object.data.len() as u64;
        let (shape, body) = match range.filter(|_| !answer.whole) {
            None => (
                Shape::Whole {
                    length: Some(total),
                },
                object.data.clone(),
            ),
            Some(range) if total == 0 && range.start == 0 => (Shape::Empty, Bytes::new()),
            Some(range) if range.start >= total => {
                return Err(Error::Changed {
                    what,
                    detail: "416".into(),
                })
            }
            Some(range) => {
                let end = range.end.min(total - 1);
                let served = ByteRange {
                    start: range.start,
                    end,
                };
                let body = object.data.slice(range.start as usize..=end as usize);
                (
                    Shape::Partial {
                        range: served,
                        total,
                    },
                    body,
                )
            }
        };
        Ok(Fetched {
            shape: answer.shape.unwrap_or(shape),
            validator: answer.validator.unwrap_or_else(|| object.validator.clone()),
            moved_to: None,
            // As S3: the checksum comes with a GET of the whole object, never a range.
            checksum: (object.keeps)
                .filter(|_| range.is_none())
                .map(|(checksum, _)| checksum),
            content_md5: object.validator.as_ref().and_then(Validator::md5),
            modified: object.modified,
            file_time: object.file_time,
            body: chunked(
                body,
                answer.break_after,
                answer.chunk_sizes.as_deref(),
                what,
            ),
        })
    }

    fn answer_head(
        &self,
        url: &str,
        pinned: Option<&Validator>,
        part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        let mut state = self.lock();
        state.heads.push(part_number);
        let answer = answer_for(&mut state.script, Request::Head, url, None);
        if let Some(error) = answer.fail {
            return Err(error());
        }
        let Some(object) = state.objects.get(url) else {
            return Err(Error::NotFound {
                what: format!("HEAD {url}"),
                detail: "404".into(),
            });
        };
        let pinned_elsewhere = pinned.is_some_and(|pinned| {
            let part_etag = part_number.is_some() && object.own_part_etags;
            part_etag
                || !object
                    .validator
                    .as_ref()
                    .is_some_and(|now| pinned.matches(now))
        });
        if pinned_elsewhere {
            return Err(Error::Changed {
                what: format!("HEAD {url}"),
                detail: "412 Precondition Failed".into(),
            });
        }
        let total = object.data.len() as u64;
        let part = part_number
            .zip(object.keeps)
            .and_then(|(number, (_, size))| {
                let start = u64::from(number - 1) * size;
                (start < total).then(|| ByteRange {
                    start,
                    end: (start + size).min(total) - 1,
                })
            });
        let (checksum, part) = answer
            .described
            .unwrap_or((object.keeps.map(|(checksum, _)| checksum), part));
        Ok(Some(Described {
            checksum,
            content_md5: object.validator.as_ref().and_then(Validator::md5),
            part,
            headers: object.headers.clone(),
        }))
    }

    /// One page as ListObjectsV2 gives it: keys under the prefix after the cursor, with
    /// those below a delimiter rolled into common prefixes, `max_keys` entries at most.
    fn page(&self, query: &ListQuery<'_>) -> (ListPage, Answer) {
        let mut state = self.lock();
        state.lists.push(ListSeen {
            prefix: query.prefix.to_owned(),
            cursor: query.cursor.clone(),
            max_keys: query.max_keys,
        });
        let answer = answer_for(&mut state.script, Request::List, query.prefix, None);
        let bucket_root = format!("s3://{}/", query.bucket);
        let after = match query.cursor {
            Cursor::Start => None,
            Cursor::Token(token) | Cursor::After(token) => Some(token.as_str()),
        };
        let mut page = ListPage::default();
        let mut entries = 0;
        let mut last = None;
        let start = format!("{bucket_root}{}", query.prefix);
        for (url, object) in state.objects.range(start.clone()..) {
            let Some(key) = url.strip_prefix(&bucket_root) else {
                break;
            };
            if !key.starts_with(query.prefix) {
                break;
            }
            let rolled = query.delimiter.and_then(|delimiter| {
                let below = &key[query.prefix.len()..];
                below
                    .find(delimiter)
                    .map(|at| key[..query.prefix.len() + at + delimiter.len()].to_owned())
            });
            let name = rolled.clone().unwrap_or_else(|| key.to_owned());
            if after.is_some_and(|after| name.as_str() <= after) {
                continue;
            }
            if page.common_prefixes.last() == Some(&name) {
                continue;
            }
            if entries == query.max_keys {
                page.is_truncated = true;
                break;
            }
            entries += 1;
            last = Some(name.clone());
            match rolled {
                Some(prefix) => page.common_prefixes.push(prefix),
                None => page.objects.push(entry(key, object)),
            }
        }
        if page.is_truncated {
            page.next_token = last;
        }
        (page, answer)
    }
}

fn entry(key: &str, object: &Stored) -> ObjectEntry {
    ObjectEntry {
        key: key.to_owned(),
        size: object.data.len() as u64,
        etag: object.validator.as_ref().map(|validator| match validator {
            Validator::ETag(tag) => tag.clone(),
            Validator::LastModified(_) => String::new(),
        }),
        last_modified: object.modified.map(|when| {
            let millis = when
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as i64);
            Timestamp::from_unix_millis(millis)
        }),
        storage_class: Some("STANDARD".into()),
    }
}

/// `data` in socket-sized chunks (or of `sizes`, in turn); cut with a network error after
/// `break_after` bytes.
fn chunked(data: Bytes, break_after: Option<usize>, sizes: Option<&[usize]>, what: String) -> Body {
    let sent = break_after.map_or(data.clone(), |cut| data.slice(..cut.min(data.len())));
    let sizes = sizes.unwrap_or(&[CHUNK]);
    let mut chunks: Vec<Result<Bytes>> = Vec::new();
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at >= sent.len() {
            break;
        }
        let end = (at + size).min(sent.len());
        chunks.push(Ok(sent.slice(at..end)));
        at = end;
    }
    if break_after.is_some() {
        chunks.push(Err(Error::Network {
            what,
            detail: "connection reset".into(),
        }));
    }
    Box::pin(futures::stream::iter(chunks))
}

impl Store for MemoryStore {
    type Object = ObjectUrl;

    fn name(&self) -> &'static str {
        "the in-memory store"
    }

    fn copies_inside(&self) -> bool {
        !self.lock().two_endpoints
    }

    async fn get(
        &self,
        object: &ObjectUrl,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        self.answer_get(&object.to_string(), range, pinned)
    }

    async fn describe(
        &self,
        object: &ObjectUrl,
        pinned: Option<&Validator>,
        part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        self.answer_head(&object.to_string(), pinned, part_number)
    }

    async fn list_page(&self, query: &ListQuery<'_>, mut sink: PageSink<'_>) -> Result<ListPage> {
        let (mut page, answer) = self.page(query);
        let what = format!("LIST s3://{}/{}", query.bucket, query.prefix);
        if let Some(error) = answer.fail {
            return Err(error());
        }
        if answer.reversed {
            page.objects.reverse();
            page.common_prefixes.reverse();
        }
        if answer.same_token {
            if let Cursor::Token(token) = query.cursor {
                page.next_token = Some(token.clone());
            }
        }
        if answer.no_token {
            page.is_truncated = true;
            page.next_token = None;
        }
        if let Some(key) = &answer.stray_key {
            page.objects.push(ObjectEntry {
                key: key.clone(),
                size: 1,
                etag: None,
                last_modified: None,
                storage_class: None,
            });
        }
        if let Some(token) = &page.next_token {
            sink.token(token);
        }
        if let Some(cut) = answer.break_after {
            page.objects.truncate(cut);
        }
        // A recursive page's objects go on in batches as they arrive, as S3's do.
        if query.delimiter.is_none() {
            let objects = std::mem::take(&mut page.objects);
            for batch in objects.chunks(LIST_BATCH) {
                if !sink.objects(batch.to_vec(), query).await? {
                    return Ok(ListPage::default());
                }
            }
        }
        if answer.break_after.is_some() {
            return Err(Error::Network {
                what,
                detail: "connection reset".into(),
            });
        }
        sink.finish(page, query)
    }

    async fn put(
        &self,
        object: &S3Url,
        body: WriteBody,
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.answer_put(object, body, crc64nvme, options).await
    }

    async fn create_upload(&self, object: &S3Url, _options: &WriteOptions) -> Result<String> {
        self.answer_create(object)
    }

    async fn upload_part(
        &self,
        object: &S3Url,
        upload_id: &str,
        number: u32,
        body: WriteBody,
        crc64nvme: u64,
    ) -> Result<UploadedPart> {
        self.answer_part(object, upload_id, number, body, crc64nvme)
            .await
    }

    async fn complete_upload(
        &self,
        object: &S3Url,
        upload_id: &str,
        parts: &[UploadedPart],
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.answer_complete(object, upload_id, parts, crc64nvme, options)
    }

    async fn copy_object(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        to: &S3Url,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.answer_copy(from, pinned, to, options)
    }

    async fn upload_part_copy(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        range: ByteRange,
        to: &S3Url,
        upload_id: &str,
        number: u32,
    ) -> Result<UploadedPart> {
        self.answer_part_copy(from, pinned, range, to, upload_id, number)
    }

    async fn list_parts(&self, object: &S3Url, upload_id: &str) -> Result<Option<Vec<ListedPart>>> {
        self.answer_list_parts(object, upload_id)
    }

    async fn abort_upload(&self, object: &S3Url, upload_id: &str) -> Result<()> {
        self.answer_abort(object, upload_id)
    }

    async fn look(&self, object: &S3Url) -> Result<Option<Described>> {
        match self.answer_head(&object.to_string(), None, None) {
            Err(Error::NotFound { .. }) => Ok(None),
            looked => looked,
        }
    }

    async fn delete_objects(&self, bucket: &str, keys: &[String]) -> Result<Vec<(String, Error)>> {
        self.answer_delete(bucket, keys)
    }
}

#[cfg(test)]
mod tests;
