//! A listing server whose page costs the same however many keys the bucket holds, as S3's
//! does: sorted keys (held in memory, or made from their place in the order), each page found
//! by binary search and written from there. Real servers on this machine are not that
//! (versitygw walks its directories, moto scans the bucket), so a benchmark of listing at
//! 100,000 or 10,000,000 keys against them measures the server. It answers ListObjectsV2 with
//! S3's rules for `prefix`, `delimiter`, `start-after`, `continuation-token` (opaque; it wins
//! over `start-after`), `max-keys` (at most 1000) and `encoding-type=url`, path-style, checking
//! no signature; a key it does not hold is 404, as on S3.
//!
//! For `sync` and `rm` at scale it serves *twins*: more buckets over the same keys, each with
//! a chosen share of them changed ([`Change`]: one byte longer, or as long with other bytes, a
//! later time and another ETag), picked evenly through the order; and it takes the writes such
//! runs send (PutObject, CopyObject, DeleteObject, DeleteObjects), counting them
//! ([`ListingServer::tally`]). GET and HEAD serve an object's bytes (one repeated byte, so
//! nothing is stored); a key written since the last `POST /?forget-writes` (a request of the
//! kit's own, for a benchmark between runs) reads at the size written, as a tool that checks
//! its copy by a HEAD expects, up to [`WRITES_REMEMBERED`] keys. Listings never change, and a
//! delete changes nothing, so every run starts from the same state. Anything else is refused
//! with 501. It runs on a [`HostileServer`], which records what it was sent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use md5::{Digest, Md5};

use crate::hostile::{escape_xml, HostileServer, ListPage, Received, Reply};
use crate::listing_names::{Generated, Names};
use crate::serve::lock;

/// S3's largest page.
const MAX_KEYS: usize = 1000;
/// Every object's time, and a changed one's (an hour later), as listed and as served.
const LISTED_AT: &str = "2024-01-02T03:04:05.000Z";
const SERVED_AT: &str = "Tue, 02 Jan 2024 03:04:05 GMT";
const CHANGED_LISTED_AT: &str = "2024-01-02T04:04:05.000Z";
const CHANGED_SERVED_AT: &str = "Tue, 02 Jan 2024 04:04:05 GMT";
const MILLION: u64 = 1_000_000;
/// Keys whose written size reads back; past this many, further writes are only counted.
pub const WRITES_REMEMBERED: usize = 1_000_000;

/// How a twin's changed keys differ from the first bucket's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Change {
    /// One byte longer.
    #[default]
    Size,
    /// As long, with other bytes: a later LastModified and another ETag.
    Content,
}

/// The keys a [`ListingServer`] lists, sorted by their UTF-8 bytes as S3 sorts them, each of
/// one same size, in one bucket and in its twins.
#[derive(Debug, Clone)]
pub struct KeySpace {
    buckets: Vec<Bucket>,
    names: Names,
    size: u64,
    change: Change,
    tally: Arc<Counts>,
    /// The size of each key written (bucket, key), until forgotten.
    written: Arc<Mutex<HashMap<(String, String), u64>>>,
}

/// One bucket over the key space: the first holds every key as it is, a twin changes this
/// many in a million of them.
#[derive(Debug, Clone)]
struct Bucket {
    name: String,
    changed_per_million: u64,
}

/// What one key is in one bucket.
struct Object {
    size: u64,
    changed: bool,
}

/// The listings, reads and writes a [`ListingServer`] answered, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    /// ListObjectsV2 pages.
    pub listed: u64,
    /// GETs and HEADs of a key it holds.
    pub fetched: u64,
    pub put: u64,
    pub copied: u64,
    /// Keys deleted: one a DeleteObject, one each key a DeleteObjects names.
    pub deleted: u64,
}

/// The counters behind a [`Tally`].
#[derive(Debug, Default)]
struct Counts {
    listed: AtomicU64,
    fetched: AtomicU64,
    put: AtomicU64,
    copied: AtomicU64,
    deleted: AtomicU64,
}

impl Counts {
    fn tally(&self) -> Tally {
        let read = |count: &AtomicU64| count.load(Ordering::Relaxed);
        Tally {
            listed: read(&self.listed),
            fetched: read(&self.fetched),
            put: read(&self.put),
            copied: read(&self.copied),
            deleted: read(&self.deleted),
        }
    }
}

/// Where a page starts: after a key, or past every key under a common prefix sent before.
enum After {
    Start,
    Key(String),
    Group(String),
}

/// What a request asks, as S3 names its operations (and as the access log writes them).
pub fn operation(request: &Received) -> &'static str {
    let (_, key) = request.bucket_and_key();
    let method = request.method.as_str();
    match (method, key.is_empty()) {
        ("GET", true) if request.is_listing() => "ListObjectsV2",
        ("POST", true) if request.query_param("delete").is_some() => "DeleteObjects",
        ("HEAD", true) => "HeadBucket",
        ("GET", false) => "GetObject",
        ("HEAD", false) => "HeadObject",
        ("PUT", false) if request.header("x-amz-copy-source").is_some() => "CopyObject",
        ("PUT", false) => "PutObject",
        ("DELETE", false) => "DeleteObject",
        _ => "Other",
    }
}

/// The keys a DeleteObjects request names.
pub fn keys_to_delete(request: &Received) -> Vec<String> {
    let body = String::from_utf8_lossy(&request.body);
    body.split("<Key>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</Key>").map(|(key, _)| unescape_xml(key)))
        .collect()
}

impl KeySpace {
    /// `keys` in any order; duplicates count once.
    pub fn new(bucket: &str, keys: Vec<String>, size: u64) -> KeySpace {
        KeySpace::over(bucket, Names::listed(keys), size)
    }

    /// `count` keys named as W4's: `PREFIXdFFF/kNNNNNN` with key `i` in folder `i % folders`,
    /// or `PREFIXkNNNNNN` when `folders` is 0; none held in memory.
    pub fn generated(bucket: &str, prefix: &str, count: u64, folders: u64, size: u64) -> KeySpace {
        KeySpace::over(
            bucket,
            Names::Generated(Generated::new(prefix, count, folders)),
            size,
        )
    }

    fn over(bucket: &str, names: Names, size: u64) -> KeySpace {
        KeySpace {
            buckets: vec![Bucket {
                name: bucket.to_owned(),
                changed_per_million: 0,
            }],
            names,
            size,
            change: Change::default(),
            tally: Arc::default(),
            written: Arc::default(),
        }
    }

    /// Another bucket over the same keys, `changed_per_million` of every million of them
    /// changed (as `change_by` says), spread evenly: exactly
    /// `len * changed_per_million / 1_000_000` of them, rounded down.
    pub fn with_twin(mut self, bucket: &str, changed_per_million: u64) -> KeySpace {
        self.buckets.push(Bucket {
            name: bucket.to_owned(),
            changed_per_million: changed_per_million.min(MILLION),
        });
        self
    }

    /// How the twins' changed keys differ.
    pub fn change_by(mut self, change: Change) -> KeySpace {
        self.change = change;
        self
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.len() == 0
    }

    /// What was answered so far.
    pub fn tally(&self) -> Tally {
        self.tally.tally()
    }

    /// The answer to one request.
    pub fn answer(&self, request: &Received) -> Reply {
        let (bucket, key) = request.bucket_and_key();
        if bucket.is_empty()
            && request.method == http::Method::POST
            && request.query_param("forget-writes").is_some()
        {
            self.forget_writes();
            return Reply::status(204);
        }
        let Some(bucket) = self.buckets.iter().find(|b| b.name == bucket) else {
            return Reply::s3_error(404, "NoSuchBucket", "The specified bucket does not exist");
        };
        let count = |counter: &AtomicU64, n: u64| counter.fetch_add(n, Ordering::Relaxed);
        match operation(request) {
            "ListObjectsV2" => {
                count(&self.tally.listed, 1);
                self.listing(bucket, request)
            }
            "HeadBucket" => Reply::status(200),
            "GetObject" | "HeadObject" => match self.read(bucket, &key) {
                Some(object) => {
                    count(&self.tally.fetched, 1);
                    object.reply(request, self.change)
                }
                // As S3 answers a HEAD or GET of a key it does not have (a tool may look first).
                None => Reply::s3_error(404, "NoSuchKey", "The specified key does not exist."),
            },
            "PutObject" => {
                count(&self.tally.put, 1);
                let size = request
                    .header("content-length")
                    .and_then(|length| length.parse().ok())
                    .unwrap_or(0);
                let object = self.write(bucket, &key, size);
                Reply::status(200).header("etag", &object.etag(self.change))
            }
            "CopyObject" => {
                count(&self.tally.copied, 1);
                let source = request.header("x-amz-copy-source").unwrap_or_default();
                let source = Received {
                    path: format!("/{}", source.trim_start_matches('/')),
                    ..request.clone()
                };
                let (from_bucket, from_key) = source.bucket_and_key();
                let from_key = from_key.split("?versionId=").next().unwrap_or_default();
                let from = self.buckets.iter().find(|b| b.name == from_bucket);
                let Some(object) = from.and_then(|from| self.read(from, from_key)) else {
                    return Reply::s3_error(404, "NoSuchKey", "The copy source does not exist.");
                };
                self.write(bucket, &key, object.size);
                Reply::status(200)
                    .header("content-type", "application/xml")
                    .body(format!(
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CopyObjectResult><LastModified>{LISTED_AT}</LastModified><ETag>\"d41d8cd98f00b204e9800998ecf8427e\"</ETag></CopyObjectResult>"
                    ))
            }
            "DeleteObject" => {
                count(&self.tally.deleted, 1);
                Reply::status(204)
            }
            "DeleteObjects" => {
                let keys = keys_to_delete(request);
                count(&self.tally.deleted, keys.len() as u64);
                deleted(&request.body, &keys)
            }
            _ => Reply::s3_error(501, "NotImplemented", "This server only lists and counts"),
        }
    }

    fn listing(&self, bucket: &Bucket, request: &Received) -> Reply {
        let after = match request.query_param("continuation-token") {
            Some(token) => match read_token(&token) {
                Some(after) => after,
                None => {
                    return Reply::s3_error(
                        400,
                        "InvalidArgument",
                        "The continuation token provided is incorrect",
                    )
                }
            },
            None => request
                .query_param("start-after")
                .filter(|key| !key.is_empty())
                .map_or(After::Start, After::Key),
        };
        let max_keys = match request.query_param("max-keys") {
            None => MAX_KEYS,
            Some(text) => match text.parse::<usize>() {
                Ok(n) => n.min(MAX_KEYS),
                Err(_) => {
                    return Reply::s3_error(400, "InvalidArgument", "max-keys is not a number")
                }
            },
        };
        let prefix = request.query_param("prefix").unwrap_or_default();
        let delimiter = request.query_param("delimiter").filter(|d| !d.is_empty());
        self.page(bucket, &prefix, delimiter.as_deref(), after, max_keys)
            .reply(request)
    }

    fn page(
        &self,
        bucket: &Bucket,
        prefix: &str,
        delimiter: Option<&str>,
        after: After,
        max_keys: usize,
    ) -> ListPage {
        let mut at = self.names.partition_point(|key| key < prefix);
        at = at.max(match &after {
            After::Start => 0,
            After::Key(key) => self.past(key),
            After::Group(group) => self.past_group(group),
        });
        let mut page = ListPage::new(prefix);
        let mut last = None;
        let mut count = 0;
        while count < max_keys {
            let Some(key) = self.names.get(at).filter(|key| key.starts_with(prefix)) else {
                break;
            };
            let group = delimiter.and_then(|delimiter| {
                let below = &key[prefix.len()..];
                below
                    .find(delimiter)
                    .map(|i| key[..prefix.len() + i + delimiter.len()].to_owned())
            });
            match group {
                Some(group) => {
                    page = page.common_prefix(&group);
                    at = self.past_group(&group);
                    last = Some(format!("g{group}"));
                }
                None => {
                    let object = self.object(bucket, at);
                    let listed_at = match object.changed && self.change == Change::Content {
                        true => CHANGED_LISTED_AT,
                        false => LISTED_AT,
                    };
                    let etag = object.etag(self.change);
                    page = page.object_tagged(&key, object.size, &etag, listed_at);
                    at += 1;
                    last = Some(format!("k{key}"));
                }
            }
            count += 1;
        }
        let more = self
            .names
            .get(at)
            .is_some_and(|key| key.starts_with(prefix));
        match last {
            Some(last) if more => page.truncated(Some(&hex_encode(&last))),
            _ => page,
        }
    }

    /// From now on every key reads as generated again, whatever was written before.
    pub fn forget_writes(&self) {
        lock(&self.written).clear();
    }

    /// `key` as `bucket` holds it: as written since the last forgetting, or as generated.
    fn read(&self, bucket: &Bucket, key: &str) -> Option<Object> {
        let written = lock(&self.written)
            .get(&(bucket.name.clone(), key.to_owned()))
            .copied();
        match written {
            Some(size) => Some(Object {
                size,
                changed: false,
            }),
            None => self.names.position(key).map(|at| self.object(bucket, at)),
        }
    }

    /// Remember that `key` was written with `size` bytes, while there is room.
    fn write(&self, bucket: &Bucket, key: &str, size: u64) -> Object {
        let mut written = lock(&self.written);
        if written.len() < WRITES_REMEMBERED {
            written.insert((bucket.name.clone(), key.to_owned()), size);
        }
        Object {
            size,
            changed: false,
        }
    }

    /// Key `at` (in the sorted order) as `bucket` holds it.
    fn object(&self, bucket: &Bucket, at: usize) -> Object {
        let changed = is_changed(bucket.changed_per_million, at as u64);
        let grown = changed && self.change == Change::Size;
        Object {
            size: self.size + u64::from(grown),
            changed,
        }
    }

    /// The index of the first key after `key`.
    fn past(&self, key: &str) -> usize {
        self.names.partition_point(|listed| listed <= key)
    }

    /// The index of the first key after every key that starts with `group`.
    fn past_group(&self, group: &str) -> usize {
        self.names
            .partition_point(|listed| listed < group || listed.starts_with(group))
    }
}

/// Whether the key at place `at` is one of the `per_million` changed: the places where
/// `place * per_million / 1_000_000` steps up, so that exactly that share of any first
/// `n` keys is changed, rounded down, and spread evenly.
fn is_changed(per_million: u64, at: u64) -> bool {
    (at + 1) * per_million / MILLION > at * per_million / MILLION
}

impl Object {
    /// The bytes: one repeated byte, another where the contents changed.
    fn body(&self, change: Change) -> Vec<u8> {
        let byte = match self.changed && change == Change::Content {
            true => b'b',
            false => b'a',
        };
        vec![byte; self.size as usize]
    }

    /// The MD5 of the body, as S3 gives a single-part object's ETag, quoted.
    fn etag(&self, change: Change) -> String {
        format!("\"{}\"", hex::encode(Md5::digest(self.body(change))))
    }

    fn reply(&self, request: &Received, change: Change) -> Reply {
        let served_at = match self.changed && change == Change::Content {
            true => CHANGED_SERVED_AT,
            false => SERVED_AT,
        };
        Reply::object(request, &self.body(change), Some(&self.etag(change)))
            .header("last-modified", served_at)
    }
}

/// A DeleteObjects answer: nothing in quiet mode, else each key as deleted.
fn deleted(body: &[u8], keys: &[String]) -> Reply {
    let quiet = String::from_utf8_lossy(body).contains("<Quiet>true</Quiet>");
    let listed: String = match quiet {
        true => String::new(),
        false => keys
            .iter()
            .map(|key| format!("<Deleted><Key>{}</Key></Deleted>", escape_xml(key)))
            .collect(),
    };
    Reply::status(200)
        .header("content-type", "application/xml")
        .body(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{listed}</DeleteResult>"
        ))
}

fn unescape_xml(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The token names where the page ended; hex, so that it is opaque and safe in a query.
fn hex_encode(text: &str) -> String {
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

fn read_token(token: &str) -> Option<After> {
    let bytes = (0..token.len())
        .step_by(2)
        .map(|i| {
            token
                .get(i..i + 2)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()?;
    let text = String::from_utf8(bytes).ok()?;
    let (kind, rest) = text.split_at_checked(1)?;
    match kind {
        "k" => Some(After::Key(rest.to_owned())),
        "g" => Some(After::Group(rest.to_owned())),
        _ => None,
    }
}

/// A [`KeySpace`] served on a free 127.0.0.1 port; it stops when dropped.
#[derive(Debug)]
pub struct ListingServer {
    server: HostileServer,
    keys: Arc<KeySpace>,
}

impl ListingServer {
    pub fn start(keys: KeySpace) -> ListingServer {
        ListingServer::start_logging(keys, |_, _| {})
    }

    /// As [`ListingServer::start`]; `log` is told of each request and the status it got.
    pub fn start_logging(
        keys: KeySpace,
        log: impl Fn(&Received, u16) + Send + Sync + 'static,
    ) -> ListingServer {
        let keys = Arc::new(keys);
        let answering = Arc::clone(&keys);
        let server = HostileServer::start(move |request| {
            let reply = answering.answer(request);
            log(request, reply.status_code());
            reply
        });
        ListingServer { server, keys }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        self.server.endpoint()
    }

    /// The requests received so far, oldest first (the first 10 000).
    pub fn requests(&self) -> Vec<Received> {
        self.server.requests()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> u64 {
        self.server.request_count()
    }

    /// The listings, reads and writes answered so far.
    pub fn tally(&self) -> Tally {
        self.keys.tally()
    }

    /// Every key reads as generated again (as `POST /?forget-writes` does over the wire).
    pub fn forget_writes(&self) {
        self.keys.forget_writes();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http::{HeaderMap, HeaderValue, Method};

    fn request(query: &str) -> Received {
        Received {
            method: Method::GET,
            target: format!("/b?{query}"),
            path: "/b".to_owned(),
            query: query.to_owned(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
        }
    }

    /// Keys, common prefixes and the next token of one answer, read from its XML.
    fn listed(space: &KeySpace, query: &str) -> (Vec<String>, Vec<String>, Option<String>) {
        let body = space.answer(&request(query)).body_text();
        let all = |open: &str, close: &str| -> Vec<String> {
            body.split(open)
                .skip(1)
                .map(|rest| rest.split(close).next().unwrap_or("").to_owned())
                .collect()
        };
        let keys = all("<Key>", "</Key>");
        let prefixes = all("<CommonPrefixes><Prefix>", "</Prefix>");
        let token = all("<NextContinuationToken>", "</NextContinuationToken>")
            .into_iter()
            .next();
        (keys, prefixes, token)
    }

    fn space(keys: &[&str]) -> KeySpace {
        KeySpace::new("b", keys.iter().map(|key| (*key).to_owned()).collect(), 7)
    }

    /// Following the tokens page by page gives every key under the prefix once, in order,
    /// at every page size.
    #[test]
    fn following_the_tokens_lists_every_key_once() {
        let keys: Vec<String> = (0..250)
            .map(|i| format!("p/d{:02}/k{i:04}", i % 7))
            .collect();
        let space = KeySpace::new("b", keys.iter().rev().cloned().collect(), 7);
        let mut expected = keys.clone();
        expected.sort();
        for max_keys in [1, 3, 100, 1000] {
            let mut seen = Vec::new();
            let mut token: Option<String> = None;
            for _ in 0..1000 {
                let query = match &token {
                    Some(token) => {
                        format!("list-type=2&prefix=p%2F&max-keys={max_keys}&continuation-token={token}")
                    }
                    None => format!("list-type=2&prefix=p%2F&max-keys={max_keys}"),
                };
                let (page, _, next) = listed(&space, &query);
                assert!(page.len() <= max_keys);
                seen.extend(page);
                token = next;
                if token.is_none() {
                    break;
                }
            }
            assert_eq!(seen, expected, "max-keys {max_keys}");
        }
    }

    #[test]
    fn a_delimiter_rolls_keys_up_and_a_token_after_a_group_skips_it() {
        let space = space(&["a/1", "a/2", "b", "c/x/1", "c/y", "d"]);
        let (keys, prefixes, token) = listed(&space, "list-type=2&delimiter=%2F&max-keys=2");
        assert_eq!(
            (keys, prefixes.clone()),
            (vec!["b".to_owned()], vec!["a/".to_owned()])
        );
        let token = token.expect("more after two entries");
        let (keys, prefixes, token) = listed(
            &space,
            &format!("list-type=2&delimiter=%2F&continuation-token={token}"),
        );
        assert_eq!(keys, ["d"]);
        assert_eq!(prefixes, ["c/"]);
        assert_eq!(token, None);
        let (keys, prefixes, _) = listed(&space, "list-type=2&prefix=c%2F&delimiter=%2F");
        assert_eq!(
            (keys, prefixes),
            (vec!["c/y".to_owned()], vec!["c/x/".to_owned()])
        );
    }

    #[test]
    fn start_after_and_prefix_bound_the_page_and_a_token_wins_over_start_after() {
        let space = space(&["a", "p/1", "p/2", "p/3", "q"]);
        let (keys, _, _) = listed(&space, "list-type=2&prefix=p%2F&start-after=p%2F1");
        assert_eq!(keys, ["p/2", "p/3"]);
        let (keys, _, _) = listed(&space, "list-type=2&prefix=p%2F&start-after=a");
        assert_eq!(keys, ["p/1", "p/2", "p/3"]);
        let (keys, _, _) = listed(&space, "list-type=2&prefix=p%2F&start-after=z");
        assert!(keys.is_empty());
        let (_, _, token) = listed(&space, "list-type=2&prefix=p%2F&max-keys=1");
        let token = token.expect("more after one");
        let (keys, _, _) = listed(
            &space,
            &format!("list-type=2&prefix=p%2F&start-after=p%2F2&continuation-token={token}"),
        );
        assert_eq!(keys, ["p/2", "p/3"]);
    }

    #[test]
    fn what_it_cannot_answer_is_refused() {
        let space = space(&["a"]);
        let status = |target: &str, method: Method| {
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            let seen = Received {
                method,
                target: target.to_owned(),
                path: path.to_owned(),
                query: query.to_owned(),
                headers: HeaderMap::new(),
                body: Bytes::new(),
            };
            space.answer(&seen).status_code()
        };
        assert_eq!(status("/b?list-type=2", Method::GET), 200);
        assert_eq!(status("/other?list-type=2", Method::GET), 404);
        assert_eq!(status("/b/missing", Method::HEAD), 404);
        assert_eq!(status("/b", Method::PUT), 501);
        assert_eq!(status("/b/a?uploads", Method::POST), 501);
        assert_eq!(
            status("/b?list-type=2&continuation-token=zz", Method::GET),
            400
        );
        assert_eq!(
            status("/b?list-type=2&continuation-token=7a61", Method::GET),
            400
        );
        assert_eq!(status("/b?list-type=2&max-keys=many", Method::GET), 400);
    }

    #[test]
    fn keys_are_url_encoded_when_asked() {
        let space = space(&["p/a b&c"]);
        let (keys, _, _) = listed(&space, "list-type=2&encoding-type=url");
        assert_eq!(keys, ["p%2Fa%20b%26c"]);
        let (keys, _, _) = listed(&space, "list-type=2");
        assert_eq!(keys, ["p/a b&amp;c"]);
    }

    /// Every entry of `bucket` under `p/`, page after page: key, size, ETag and time.
    fn everything(space: &KeySpace, bucket: &str) -> Vec<(String, u64, String, String)> {
        let mut entries = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let query = match &token {
                Some(token) => format!("list-type=2&prefix=p%2F&continuation-token={token}"),
                None => "list-type=2&prefix=p%2F".to_owned(),
            };
            let mut seen = request(&query);
            seen.path = format!("/{bucket}");
            let body = space.answer(&seen).body_text();
            let field = |entry: &str, name: &str| {
                let open = format!("<{name}>");
                let rest = entry.split(&open).nth(1).unwrap_or("");
                rest.split(&format!("</{name}>"))
                    .next()
                    .unwrap_or("")
                    .to_owned()
            };
            for entry in body.split("<Contents>").skip(1) {
                let size = field(entry, "Size").parse().unwrap();
                entries.push((
                    field(entry, "Key"),
                    size,
                    field(entry, "ETag"),
                    field(entry, "LastModified"),
                ));
            }
            token = body
                .split("<NextContinuationToken>")
                .nth(1)
                .and_then(|rest| rest.split('<').next())
                .map(str::to_owned);
            if token.is_none() {
                return entries;
            }
        }
    }

    /// A twin differs from the first bucket in exactly its share of the keys, by size or by
    /// contents (time and ETag), and in nothing else; a twin with no share is the same.
    #[test]
    fn twins_differ_in_exactly_their_share_of_keys() {
        const KEYS: u64 = 12_345;
        for change in [Change::Size, Change::Content] {
            let space = KeySpace::generated("base", "p/", KEYS, 7, 5)
                .with_twin("same", 0)
                .with_twin("one-percent", 10_000)
                .with_twin("third", 333_333)
                .change_by(change);
            let base = everything(&space, "base");
            assert_eq!(base.len() as u64, KEYS);
            assert!(base.windows(2).all(|pair| pair[0].0 < pair[1].0));
            assert!(base.iter().all(|entry| entry.1 == 5));
            for (twin, expected) in [("same", 0), ("one-percent", 123), ("third", 4114)] {
                let listed = everything(&space, twin);
                assert_eq!(listed.len(), base.len());
                let differing: Vec<_> = base.iter().zip(&listed).filter(|(a, b)| a != b).collect();
                assert_eq!(differing.len(), expected, "{twin}, {change:?}");
                for (a, b) in differing {
                    assert_eq!(a.0, b.0);
                    match change {
                        Change::Size => assert_eq!((b.1, b.2 != a.2, &b.3), (6, true, &a.3)),
                        Change::Content => {
                            assert_eq!(b.1, a.1);
                            assert_ne!(b.2, a.2);
                            assert!(b.3 > a.3, "a changed key is newer: {} {}", b.3, a.3);
                        }
                    }
                }
            }
        }
    }

    /// What a sync or rm sends is taken and counted: copies, uploads, single and batch deletes;
    /// a read serves the key's bytes as the bucket holds it, or as written until forgotten.
    #[test]
    fn writes_and_reads_are_answered_and_counted() {
        let space = KeySpace::generated("base", "p/", 200, 0, 3).with_twin("twin", 500_000);
        let send = |method: Method, path: &str, query: &str, body: &str| {
            let mut seen = request(query);
            seen.method = method;
            seen.path = path.to_owned();
            seen.body = Bytes::from(body.to_owned());
            seen
        };
        let mut copy = send(Method::PUT, "/base/p/k000001", "", "");
        copy.headers.insert(
            "x-amz-copy-source",
            HeaderValue::from_static("/twin/p/k000001"),
        );
        assert_eq!(space.answer(&copy).status_code(), 200);
        assert!(space
            .answer(&copy)
            .body_text()
            .contains("<CopyObjectResult>"));
        let mut put = send(Method::PUT, "/base/p/new", "", "");
        put.headers
            .insert("content-length", HeaderValue::from_static("2"));
        assert_eq!(space.answer(&put).status_code(), 200);
        let delete = send(Method::DELETE, "/base/p/k000002", "", "");
        assert_eq!(space.answer(&delete).status_code(), 204);
        let batch = send(
            Method::POST,
            "/base",
            "delete",
            "<Delete><Quiet>true</Quiet><Object><Key>p/k000003</Key></Object><Object><Key>p/a&amp;b</Key></Object><Object><Key>p/k000005</Key></Object></Delete>",
        );
        assert_eq!(keys_to_delete(&batch), ["p/k000003", "p/a&b", "p/k000005"]);
        let answer = space.answer(&batch);
        assert_eq!(answer.status_code(), 200);
        assert!(!answer.body_text().contains("<Deleted>"));
        let loud = send(
            Method::POST,
            "/base",
            "delete",
            "<Delete><Object><Key>p/k000006</Key></Object></Delete>",
        );
        assert!(space
            .answer(&loud)
            .body_text()
            .contains("<Deleted><Key>p/k000006</Key></Deleted>"));
        // Key 1 of the twin is changed (every other key is): one byte longer.
        let get = |path: &str| space.answer(&send(Method::GET, path, "", "")).body_text();
        assert_eq!(get("/twin/p/k000001"), "aaaa");
        assert_eq!(get("/twin/p/k000000"), "aaa");
        // Read back as written (the copy of the longer key, the upload of two bytes) ...
        assert_eq!(get("/base/p/k000001"), "aaaa");
        assert_eq!(get("/base/p/new"), "aa");
        // ... until forgotten; the listing never changes.
        let forget = send(Method::POST, "/", "forget-writes", "");
        assert_eq!(space.answer(&forget).status_code(), 204);
        assert_eq!(get("/base/p/k000001"), "aaa");
        assert_eq!(
            space
                .answer(&send(Method::GET, "/base/p/new", "", ""))
                .status_code(),
            404
        );
        assert_eq!(
            space.tally(),
            Tally {
                listed: 0,
                fetched: 5,
                put: 1,
                copied: 2,
                deleted: 5
            }
        );
    }
}
