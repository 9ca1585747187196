//! A scripted misbehaving server on loopback: every answer comes from the test's script, and
//! every request is recorded exactly as it arrived on the wire, so a test can make a store or
//! web server lie in any way it likes and see what the client under test sent.
//!
//! It speaks plain HTTP/1.1; as an S3 endpoint it is path-style (`/BUCKET/KEY`) and checks no
//! signature. [`ListPage`] writes ListObjectsV2 pages (streamed when they are huge), and
//! [`Reply::object`] serves bytes with Range support, for S3 GETs and web servers alike.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use percent_encoding::{percent_decode_str, utf8_percent_encode, NON_ALPHANUMERIC};
use tokio::sync::oneshot;

use crate::serve::{accept_until, lock};

/// How many requests [`HostileServer::requests`] keeps (the first ones): a client stuck in a
/// loop must not fill the test's memory.
const KEPT_REQUESTS: usize = 10_000;
/// How long a request body the script never reads may take to arrive.
const DISCARD_LIMIT: Duration = Duration::from_secs(10);
/// The most of a POST body handed to the script: a DeleteObjects of 1000 long keys fits.
pub const POST_BODY_LIMIT: usize = 4 << 20;

type Script = dyn Fn(&Received) -> Reply + Send + Sync;
type ServerBody = UnsyncBoxBody<Bytes, Infallible>;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: Method,
    /// The request target as sent on the wire: raw path and query, nothing decoded or
    /// normalised (`/b/dir/%2E%2E/x?partNumber=1`).
    pub target: String,
    /// The raw path part of [`Received::target`].
    pub path: String,
    /// The raw query string, empty if there was none.
    pub query: String,
    pub headers: HeaderMap,
    /// The body of a POST (DeleteObjects names its keys there), at most [`POST_BODY_LIMIT`]
    /// bytes; empty for every other method, whose bodies are read and dropped, and in the
    /// copies [`HostileServer::requests`] keeps.
    pub body: Bytes,
}

impl Received {
    /// A header's value as text, if present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// A query parameter, percent-decoded (`+` stays `+`, as S3 and SigV4 mean it).
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key) == name).then(|| decode(value))
        })
    }

    /// Path-style S3 addressing: the bucket and the decoded key (empty for a bucket request).
    pub fn bucket_and_key(&self) -> (String, String) {
        let path = self.path.strip_prefix('/').unwrap_or(&self.path);
        let (bucket, key) = path.split_once('/').unwrap_or((path, ""));
        (decode(bucket), decode(key))
    }

    /// Whether this is a ListObjectsV2 request.
    pub fn is_listing(&self) -> bool {
        self.method == Method::GET && self.query_param("list-type").as_deref() == Some("2")
    }
}

fn decode(text: &str) -> String {
    percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// What the script answers: a status, headers and a body, whole or generated as it is sent.
pub struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: ReplyBody,
}

enum ReplyBody {
    Whole(Bytes),
    /// Chunks made while the body is sent, so a huge body is never held in memory.
    Generated(Box<dyn Iterator<Item = Bytes> + Send>),
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = match &self.body {
            ReplyBody::Whole(bytes) => format!("{} bytes", bytes.len()),
            ReplyBody::Generated(_) => "generated".to_owned(),
        };
        f.debug_struct("Reply")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &body)
            .finish()
    }
}

impl Reply {
    /// An empty reply with this status.
    pub fn status(status: u16) -> Reply {
        Reply {
            status: StatusCode::from_u16(status).expect("a status code from 100 to 999"),
            headers: HeaderMap::new(),
            body: ReplyBody::Whole(Bytes::new()),
        }
    }

    /// The status this reply carries.
    pub fn status_code(&self) -> u16 {
        self.status.as_u16()
    }

    /// A whole body as text (empty for a generated one), for the kit's own tests.
    #[cfg(test)]
    pub(crate) fn body_text(&self) -> String {
        match &self.body {
            ReplyBody::Whole(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            ReplyBody::Generated(_) => String::new(),
        }
    }

    /// Adds a header (repeatable; a test may send duplicates or contradictions on purpose).
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.append(
            HeaderName::from_bytes(name.as_bytes()).expect("a valid header name"),
            HeaderValue::from_str(value).expect("a valid header value"),
        );
        self
    }

    pub fn body(mut self, body: impl Into<Bytes>) -> Reply {
        self.body = ReplyBody::Whole(body.into());
        self
    }

    /// A body produced chunk by chunk while it is sent, chunked unless a Content-Length
    /// header says otherwise.
    pub fn generated(mut self, chunks: impl Iterator<Item = Bytes> + Send + 'static) -> Reply {
        self.body = ReplyBody::Generated(Box::new(chunks));
        self
    }

    /// A redirect; `location` may be another [`HostileServer`]'s endpoint plus
    /// [`Received::target`], to see what the client sends after it.
    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::status(status).header("location", location)
    }

    /// An S3 error document.
    pub fn s3_error(status: u16, code: &str, message: &str) -> Reply {
        Reply::status(status)
            .header("content-type", "application/xml")
            .body(format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message></Error>",
                escape_xml(code),
                escape_xml(message)
            ))
    }

    /// `data` as an object or web file: 200 with all of it, or 206 with the one range the
    /// request's `Range: bytes=...` asks for (416 if it lies outside). `etag` is sent quoted
    /// as given; add Last-Modified and the like with [`Reply::header`].
    pub fn object(request: &Received, data: &[u8], etag: Option<&str>) -> Reply {
        let total = data.len() as u64;
        let reply = match request
            .header("range")
            .map(|range| byte_range(range, total))
        {
            None => Reply::status(200).body(Bytes::copy_from_slice(data)),
            Some(Some((first, last))) => Reply::status(206)
                .header("content-range", &format!("bytes {first}-{last}/{total}"))
                .body(Bytes::copy_from_slice(
                    &data[first as usize..=last as usize],
                )),
            Some(None) => Reply::status(416).header("content-range", &format!("bytes */{total}")),
        };
        let reply = reply.header("accept-ranges", "bytes");
        match etag {
            Some(etag) => reply.header("etag", etag),
            None => reply,
        }
    }
}

/// The inclusive byte range a single-range `Range` header asks for, if it is satisfiable.
fn byte_range(header: &str, total: u64) -> Option<(u64, u64)> {
    let (first, last) = header.strip_prefix("bytes=")?.split_once('-')?;
    let (first, last) = match (first.trim(), last.trim()) {
        ("", suffix) => (
            total.saturating_sub(suffix.parse().ok()?),
            total.checked_sub(1)?,
        ),
        (first, "") => (first.parse().ok()?, total.checked_sub(1)?),
        (first, last) => (
            first.parse().ok()?,
            last.parse::<u64>().ok()?.min(total.checked_sub(1)?),
        ),
    };
    (first <= last).then_some((first, last))
}

/// A ListObjectsV2 page. Keys are URL-encoded when the request asked for
/// `encoding-type=url` (as S3 does), so any key, control characters included, can be listed.
/// Entries carry no ETag, so whatever [`Reply::object`] sends is the object's version.
#[derive(Debug, Clone, Default)]
pub struct ListPage {
    prefix: String,
    objects: Vec<ListedObject>,
    common_prefixes: Vec<String>,
    is_truncated: bool,
    next_token: Option<String>,
}

impl ListPage {
    pub fn new(prefix: &str) -> ListPage {
        ListPage {
            prefix: prefix.to_owned(),
            ..ListPage::default()
        }
    }

    pub fn object(mut self, key: &str, size: u64) -> ListPage {
        self.objects.push(ListedObject {
            key: key.to_owned(),
            size,
            etag: None,
            last_modified: None,
        });
        self
    }

    /// An object listed with its ETag (sent quoted as given) and LastModified (ISO 8601).
    pub fn object_tagged(
        mut self,
        key: &str,
        size: u64,
        etag: &str,
        last_modified: &str,
    ) -> ListPage {
        self.objects.push(ListedObject {
            key: key.to_owned(),
            size,
            etag: Some(etag.to_owned()),
            last_modified: Some(last_modified.to_owned()),
        });
        self
    }

    pub fn common_prefix(mut self, prefix: &str) -> ListPage {
        self.common_prefixes.push(prefix.to_owned());
        self
    }

    /// `IsTruncated=true`, with this `NextContinuationToken` (or none, which a store must not do).
    pub fn truncated(mut self, next_token: Option<&str>) -> ListPage {
        self.is_truncated = true;
        self.next_token = next_token.map(str::to_owned);
        self
    }

    /// The page as one body.
    pub fn reply(self, request: &Received) -> Reply {
        let (head, entries, tail) = self.pieces(request);
        Reply::status(200)
            .header("content-type", "application/xml")
            .body(head + &entries.concat() + &tail)
    }

    /// The page with `count` more objects after the listed ones, named `key_of(i)` and of
    /// `size_of_generated` bytes, written while the body is sent: a page of any size without
    /// holding it.
    pub fn generated(
        self,
        request: &Received,
        count: u64,
        size_of_generated: u64,
        key_of: impl Fn(u64) -> String + Send + 'static,
    ) -> Reply {
        let encode = url_encoded(request);
        let (head, entries, tail) = self.pieces(request);
        let generated = (0..count).map(move |i| {
            let object = ListedObject {
                key: key_of(i),
                size: size_of_generated,
                etag: None,
                last_modified: None,
            };
            Bytes::from(contents_xml(&object, encode))
        });
        let chunks = std::iter::once(head)
            .chain(entries)
            .map(Bytes::from)
            .chain(generated)
            .chain(std::iter::once(Bytes::from(tail)));
        Reply::status(200)
            .header("content-type", "application/xml")
            .generated(chunks)
    }

    /// The document's head, one piece per listed object, and its tail.
    fn pieces(self, request: &Received) -> (String, Vec<String>, String) {
        let encode = url_encoded(request);
        let mut head = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>{}</Name><Prefix>{}</Prefix><KeyCount>{}</KeyCount><IsTruncated>{}</IsTruncated>",
            escape_xml(&request.bucket_and_key().0),
            text(&self.prefix, encode),
            self.objects.len(),
            self.is_truncated,
        );
        if encode {
            head.push_str("<EncodingType>url</EncodingType>");
        }
        if let Some(token) = &self.next_token {
            head.push_str(&format!(
                "<NextContinuationToken>{}</NextContinuationToken>",
                escape_xml(token)
            ));
        }
        let entries = self
            .objects
            .iter()
            .map(|object| contents_xml(object, encode))
            .collect();
        let mut tail: String = self
            .common_prefixes
            .iter()
            .map(|prefix| {
                format!(
                    "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
                    text(prefix, encode)
                )
            })
            .collect();
        tail.push_str("</ListBucketResult>");
        (head, entries, tail)
    }
}

fn url_encoded(request: &Received) -> bool {
    request.query_param("encoding-type").as_deref() == Some("url")
}

/// One entry of a page.
#[derive(Debug, Clone)]
struct ListedObject {
    key: String,
    size: u64,
    etag: Option<String>,
    last_modified: Option<String>,
}

/// One listed object; without an ETag the object's own reply gives the only one.
fn contents_xml(object: &ListedObject, encode: bool) -> String {
    let etag = object
        .etag
        .as_ref()
        .map(|etag| format!("<ETag>{}</ETag>", escape_xml(etag)))
        .unwrap_or_default();
    format!(
        "<Contents><Key>{}</Key><LastModified>{}</LastModified>{etag}<Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
        text(&object.key, encode),
        object.last_modified.as_deref().unwrap_or("2024-01-02T03:04:05.000Z"),
        object.size,
    )
}

fn text(value: &str, url_encode: bool) -> String {
    if url_encode {
        utf8_percent_encode(value, NON_ALPHANUMERIC).to_string()
    } else {
        escape_xml(value)
    }
}

pub(crate) fn escape_xml(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The server; it stops when dropped. Runs on its own runtime thread, so sync tests can use it.
pub struct HostileServer {
    endpoint: String,
    ledger: Arc<Ledger>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for HostileServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostileServer")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Ledger {
    seen: Mutex<Seen>,
    arrived: Condvar,
}

#[derive(Default)]
struct Seen {
    count: u64,
    kept: VecDeque<Received>,
}

impl HostileServer {
    /// Starts a server on a free 127.0.0.1 port that answers every request with
    /// `script(request)`. The script runs on the server's runtime: it must not block.
    pub fn start(script: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> HostileServer {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
            .expect("bind the hostile server to a loopback port");
        let endpoint = format!(
            "http://{}",
            listener
                .local_addr()
                .expect("bound listener has an address")
        );
        let ledger = Arc::new(Ledger::default());
        let script: Arc<Script> = Arc::new(script);
        let (shutdown, stop) = oneshot::channel();
        let serving = Arc::clone(&ledger);
        let thread = std::thread::Builder::new()
            .name("hostile-server".to_owned())
            .spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("build the hostile server runtime")
                    .block_on(serve(listener, script, serving, stop));
            })
            .expect("spawn the hostile server thread");
        HostileServer {
            endpoint,
            ledger,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    /// The requests received so far, oldest first (the first 10 000).
    pub fn requests(&self) -> Vec<Received> {
        lock(&self.ledger.seen).kept.iter().cloned().collect()
    }

    /// How many requests arrived, including those past what [`HostileServer::requests`] keeps.
    pub fn request_count(&self) -> u64 {
        lock(&self.ledger.seen).count
    }

    /// Waits until at least `count` requests have arrived; false if `limit` passed first.
    pub fn wait_for_requests(&self, count: u64, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut seen = lock(&self.ledger.seen);
        while seen.count < count {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            seen = self
                .ledger
                .arrived
                .wait_timeout(seen, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        true
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    script: Arc<Script>,
    ledger: Arc<Ledger>,
    stop: oneshot::Receiver<()>,
) {
    accept_until(listener, stop, |stream| {
        let script = Arc::clone(&script);
        let ledger = Arc::clone(&ledger);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let script = Arc::clone(&script);
                let ledger = Arc::clone(&ledger);
                async move { Ok::<_, Infallible>(answer(request, &*script, &ledger).await) }
            });
            // A client that hangs up mid-body is part of what tests exercise, not an error.
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    })
    .await;
}

async fn answer(
    request: Request<Incoming>,
    script: &Script,
    ledger: &Ledger,
) -> Response<ServerBody> {
    let target = request
        .uri()
        .path_and_query()
        .map_or_else(|| request.uri().to_string(), |pq| pq.as_str().to_owned());
    let mut received = Received {
        method: request.method().clone(),
        path: request.uri().path().to_owned(),
        query: request.uri().query().unwrap_or_default().to_owned(),
        target,
        headers: request.headers().clone(),
        body: Bytes::new(),
    };
    {
        let mut seen = lock(&ledger.seen);
        seen.count += 1;
        if seen.kept.len() < KEPT_REQUESTS {
            seen.kept.push_back(received.clone());
        }
    }
    ledger.arrived.notify_all();
    let keep = received.method == Method::POST;
    let drain = async move {
        let mut body = request.into_body();
        let mut kept = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref().filter(|_| keep) {
                let room = POST_BODY_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&data[..data.len().min(room)]);
            }
        }
        Bytes::from(kept)
    };
    if let Ok(body) = tokio::time::timeout(DISCARD_LIMIT, drain).await {
        received.body = body;
    }

    let reply = script(&received);
    let body = match reply.body {
        ReplyBody::Whole(bytes) => Full::new(bytes).boxed_unsync(),
        ReplyBody::Generated(chunks) => {
            StreamBody::new(stream::iter(chunks.map(|chunk| Ok(Frame::data(chunk))))).boxed_unsync()
        }
    };
    let mut response = Response::new(body);
    *response.status_mut() = reply.status;
    *response.headers_mut() = reply.headers;
    response
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// Sends `request` on a fresh connection and returns the whole response text.
    fn exchange(server: &HostileServer, request: &str) -> String {
        let address = server.endpoint().trim_start_matches("http://").to_owned();
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    #[test]
    fn records_the_target_as_sent_and_answers_as_scripted() {
        let origin =
            HostileServer::start(|request| Reply::object(request, b"0123456789", Some("\"e\"")));
        let location = origin.endpoint();
        let front = HostileServer::start(move |request| {
            Reply::redirect(307, &format!("{location}{}", request.target))
        });

        let response = exchange(
            &front,
            "GET /b/dir/../x%2E?list-type=2&prefix=a%2Fb HTTP/1.1\r\nhost: h\r\nx-amz-security-token: t\r\nconnection: close\r\n\r\n",
        );
        assert!(response.starts_with("HTTP/1.1 307"), "{response}");
        let seen = &front.requests()[0];
        assert_eq!(seen.target, "/b/dir/../x%2E?list-type=2&prefix=a%2Fb");
        assert_eq!(
            seen.bucket_and_key(),
            ("b".to_owned(), "dir/../x.".to_owned())
        );
        assert_eq!(seen.query_param("prefix").as_deref(), Some("a/b"));
        assert!(seen.is_listing());
        assert_eq!(seen.header("x-amz-security-token"), Some("t"));
        assert!(response.contains(&format!("location: {}/b/dir/../x%2E?", origin.endpoint())));

        let response = exchange(
            &origin,
            "GET /f HTTP/1.1\r\nhost: h\r\nrange: bytes=2-4\r\nconnection: close\r\n\r\n",
        );
        assert!(response.starts_with("HTTP/1.1 206"), "{response}");
        assert!(
            response.contains("content-range: bytes 2-4/10"),
            "{response}"
        );
        assert!(response.ends_with("\r\n\r\n234"), "{response}");
        assert!(origin.wait_for_requests(1, Duration::from_secs(5)));
        assert_eq!(origin.request_count(), 1);
    }

    #[test]
    fn generated_listing_pages_are_whole_documents() {
        let server = HostileServer::start(|request| {
            ListPage::new("p/")
                .object("p/first\n", 1)
                .truncated(Some("t&1"))
                .generated(request, 3, 7, |i| format!("p/{i}"))
        });
        let response = exchange(
            &server,
            "GET /b?list-type=2&prefix=p%2F&encoding-type=url HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        );
        assert!(
            response.contains("transfer-encoding: chunked"),
            "{response}"
        );
        for part in [
            "<Name>b</Name><Prefix>p%2F</Prefix>",
            "<IsTruncated>true</IsTruncated><EncodingType>url</EncodingType>",
            "<NextContinuationToken>t&amp;1</NextContinuationToken>",
            "<Key>p%2Ffirst%0A</Key>",
            "<Key>p%2F2</Key>",
            "<Size>7</Size>",
            "</ListBucketResult>",
        ] {
            assert!(response.contains(part), "{part} in {response}");
        }
    }

    #[test]
    fn byte_ranges_follow_rfc_9110() {
        assert_eq!(byte_range("bytes=0-9", 100), Some((0, 9)));
        assert_eq!(byte_range("bytes=90-200", 100), Some((90, 99)));
        assert_eq!(byte_range("bytes=95-", 100), Some((95, 99)));
        assert_eq!(byte_range("bytes=-10", 100), Some((90, 99)));
        assert_eq!(byte_range("bytes=-200", 100), Some((0, 99)));
        assert_eq!(byte_range("bytes=100-", 100), None);
        assert_eq!(byte_range("bytes=5-4", 100), None);
        assert_eq!(byte_range("items=0-1", 100), None);
    }
}
