//! Scripted faults: which requests get one ([`Rule`]), what happens to them ([`Fault`]), and
//! how often it happened ([`FaultHandle`]).
//!
//! Every rule counts the requests that match it, in the order the proxy received them, so "the
//! 2nd GET of big.bin" means the same request in every run. All rules due for a request apply,
//! in the order they were injected, except that a request gets at most one reply instead of
//! the upstream's answer and at most one body fault: the first injected wins.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::{ProxyBody, RequestKind, SeenRequest};

/// The longest a [`Fault::delay_headers`] or a stall may last: long enough for any timeout a
/// test wants to provoke, short enough that a forgotten fault cannot hang a test run.
pub const MAX_FAULT_PAUSE: Duration = Duration::from_secs(120);

/// Which requests a fault applies to: those of a kind, a key and a range start (each optional),
/// and of those the nth, the first n, or (by default) every one.
#[derive(Debug, Clone)]
pub struct Rule {
    kind: Option<RequestKind>,
    key_contains: Option<String>,
    /// Only requests carrying a header whose name starts so (in lower case).
    header_prefix: Option<String>,
    range_start: Option<u64>,
    times: Times,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Times {
    Every,
    Nth(u64),
    First(u64),
    EveryNth(u64),
}

impl Rule {
    /// Every request, whatever its kind.
    pub fn any() -> Rule {
        Rule {
            kind: None,
            key_contains: None,
            header_prefix: None,
            range_start: None,
            times: Times::Every,
        }
    }

    /// Requests of one kind, as the proxy counts them.
    pub fn kind(kind: RequestKind) -> Rule {
        Rule {
            kind: Some(kind),
            ..Rule::any()
        }
    }

    /// GETs of objects (not listings).
    pub fn get() -> Rule {
        Rule::kind(RequestKind::Get)
    }

    /// ListObjects requests.
    pub fn list() -> Rule {
        Rule::kind(RequestKind::List)
    }

    /// Only requests whose object key (decoded, without the bucket) contains `part`.
    pub fn key_contains(mut self, part: &str) -> Rule {
        self.key_contains = Some(part.to_owned());
        self
    }

    /// Only requests carrying a header whose name starts with `prefix` (any case):
    /// `x-amz-checksum-` picks the writes that send a checksum.
    pub fn with_header(mut self, prefix: &str) -> Rule {
        self.header_prefix = Some(prefix.to_ascii_lowercase());
        self
    }

    /// Only requests with a `Range: bytes=<start>-...` header.
    pub fn range_start(mut self, start: u64) -> Rule {
        self.range_start = Some(start);
        self
    }

    /// Only the `n`th matching request, counting from 1.
    pub fn nth(mut self, n: u64) -> Rule {
        assert!(n >= 1, "Rule::nth counts from 1");
        self.times = Times::Nth(n);
        self
    }

    /// Every `n`th matching request: the `n`th, the `2n`th, and so on.
    pub fn every_nth(mut self, n: u64) -> Rule {
        assert!(n >= 1, "Rule::every_nth counts from 1");
        self.times = Times::EveryNth(n);
        self
    }

    /// Only the first `n` matching requests.
    pub fn first(mut self, n: u64) -> Rule {
        self.times = Times::First(n);
        self
    }

    fn matches(&self, seen: &SeenRequest) -> bool {
        self.kind.is_none_or(|kind| kind == seen.kind)
            && self
                .key_contains
                .as_ref()
                .is_none_or(|part| seen.key().contains(part.as_str()))
            && self
                .range_start
                .is_none_or(|start| seen.range_start() == Some(start))
            && self.header_prefix.as_ref().is_none_or(|prefix| {
                seen.header_names
                    .iter()
                    .any(|name| name.starts_with(prefix.as_str()))
            })
    }

    /// Whether the `n`th matching request (from 1) gets the fault.
    fn is_due(&self, n: u64) -> bool {
        match self.times {
            Times::Every => true,
            Times::Nth(nth) => n == nth,
            Times::First(first) => n <= first,
            Times::EveryNth(every) => n % every == 0,
        }
    }
}

/// What happens to a request a [`Rule`] picked. Build one with the constructors below.
#[derive(Debug, Clone)]
pub struct Fault {
    pub(super) action: Action,
    /// Set on the response as well, whatever the action (a Retry-After next to a 503).
    pub(super) headers: Vec<(HeaderName, HeaderValue)>,
}

/// A [`Fault::hook`]: called with the request's number among the rule's matches.
pub(super) type Hook = Arc<dyn Fn(u64, &SeenRequest) + Send + Sync>;
/// The new value of a header from the old one; `None` leaves it as it is.
type HeaderEdit = Arc<dyn Fn(Option<&str>) -> Option<String> + Send + Sync>;

#[derive(Clone)]
pub(super) enum Action {
    /// Answer without asking upstream: this status and an S3 error document with this code.
    Reply {
        status: StatusCode,
        code: String,
        /// The error document's message; a stock one for the code when `None`.
        message: Option<String>,
    },
    /// Run before the request is forwarded; the proxy waits for it.
    Hook(Hook),
    /// Hold the response headers back this long.
    DelayHeaders(Duration),
    /// Change one header of the response; `None` leaves it as it is.
    EditHeader {
        name: HeaderName,
        edit: HeaderEdit,
    },
    /// Remove one header of the response.
    RemoveHeader(HeaderName),
    /// Answer with this status instead of the upstream's, keeping its headers and body.
    Status(StatusCode),
    /// Answer without asking upstream: the requested range of these bytes, as `206` with its
    /// Content-Range and no ETag.
    Serve(Bytes),
    /// Only the extra headers.
    SetHeadersOnly,
    Body(BodyFault),
    /// Invert the bits of the body byte at this offset: bytes that arrive whole but wrong.
    FlipByte(u64),
}

/// A cut in the response body: after `after` bytes, wait `pause`, then go on as `then` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BodyFault {
    pub(super) after: u64,
    pub(super) pause: Duration,
    pub(super) then: AfterStall,
}

/// How a stalled body goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterStall {
    /// Send the rest of the body as if nothing happened.
    Continue,
    /// Close the connection cleanly (FIN): the client sees the body end early.
    Close,
    /// Reset the connection (RST): the client sees "connection reset".
    Reset,
}

impl Fault {
    /// Answers `status` with an S3 error document (`<Error><Code>code</Code>...`) instead of
    /// forwarding: `Fault::error(503, "SlowDown")`, `(500, "InternalError")`, `(403,
    /// "AccessDenied")`, `(404, "NoSuchKey")`. Panics if `status` is not a valid HTTP status.
    pub fn error(status: u16, code: &str) -> Fault {
        let status = StatusCode::from_u16(status)
            .unwrap_or_else(|_| panic!("{status} is not an HTTP status"));
        Fault::new(Action::Reply {
            status,
            code: code.to_owned(),
            message: None,
        })
    }

    /// As [`Fault::error`], with the error document's message: what an older store says
    /// when it refuses a header, `Fault::error_saying(501, "NotImplemented", "Header
    /// 'x-amz-checksum-algorithm' with value 'CRC64NVME' not implemented")`.
    pub fn error_saying(status: u16, code: &str, message: &str) -> Fault {
        let mut fault = Fault::error(status, code);
        if let Action::Reply { message: said, .. } = &mut fault.action {
            *said = Some(message.to_owned());
        }
        fault
    }

    /// Answers `200 OK` whose body is an S3 error document, as S3 may do for some operations:
    /// a client that trusts the status writes the error into the file.
    pub fn error_in_200(code: &str) -> Fault {
        Fault::new(Action::Reply {
            status: StatusCode::OK,
            code: code.to_owned(),
            message: None,
        })
    }

    /// Sends the first `bytes` bytes of the response body, then resets the connection.
    pub fn reset_after(bytes: u64) -> Fault {
        Fault::stall_after(bytes, Duration::ZERO, AfterStall::Reset)
    }

    /// Sends the headers (with the full Content-Length) and the first `bytes` bytes of the
    /// body, then closes the connection cleanly: the client sees an unexpected end of file.
    pub fn truncate_after(bytes: u64) -> Fault {
        Fault::stall_after(bytes, Duration::ZERO, AfterStall::Close)
    }

    /// Sends the first `bytes` bytes of the response body, sends nothing for `pause`, then
    /// goes on as `then` says. Panics if `pause` is over [`MAX_FAULT_PAUSE`].
    pub fn stall_after(bytes: u64, pause: Duration, then: AfterStall) -> Fault {
        assert_bounded(pause);
        Fault::new(Action::Body(BodyFault {
            after: bytes,
            pause,
            then,
        }))
    }

    /// Holds the response headers (and so the first byte) back by `delay`. Panics if `delay`
    /// is over [`MAX_FAULT_PAUSE`].
    pub fn delay_headers(delay: Duration) -> Fault {
        assert_bounded(delay);
        Fault::new(Action::DelayHeaders(delay))
    }

    /// Sets a response header, present or not: `("content-range", "bytes 0-99/200")` for a
    /// range that is not the one asked for, `("etag", "\"other\"")` for a changed object.
    pub fn set_header(name: &str, value: &str) -> Fault {
        Fault::new(Action::SetHeadersOnly).with_header(name, value)
    }

    /// Rewrites a response header that is present, e.g. the total of a Content-Range:
    /// `Fault::rewrite_header("content-range", |v| v.replace("/1000", "/999"))`.
    pub fn rewrite_header(
        name: &str,
        rewrite: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> Fault {
        Fault::new(Action::EditHeader {
            name: header_name(name),
            edit: Arc::new(move |value| value.map(&rewrite)),
        })
    }

    /// Removes a response header: `Fault::remove_header("etag")` for a server that sends
    /// no ETag.
    pub fn remove_header(name: &str) -> Fault {
        Fault::new(Action::RemoveHeader(header_name(name)))
    }

    /// Replaces the response's status, keeping its headers and body: `Fault::status(200)` on
    /// a ranged GET is `rclone serve s3`, which answers 200 with a partial Content-Range.
    /// Panics if `status` is not a valid HTTP status.
    pub fn status(status: u16) -> Fault {
        let status = StatusCode::from_u16(status)
            .unwrap_or_else(|_| panic!("{status} is not an HTTP status"));
        Fault::new(Action::Status(status))
    }

    /// Answers without forwarding, with the requested range (`bytes=S-E` or `bytes=S-`) of
    /// `object` as `206` and its Content-Range, and no ETag: a server that ignores If-Match
    /// and serves another version. A request without a range gets all of it as `200`.
    pub fn serve_range(object: impl Into<Bytes>) -> Fault {
        Fault::new(Action::Serve(object.into()))
    }

    /// Runs `hook(n, request)` before the request is forwarded, where `n` counts the requests
    /// the rule matched (from 1); the request waits for it (up to a minute). It runs on a
    /// thread of its own, so it may block, e.g. to replace the object with a
    /// [`crate::BlockingAdmin`]. If it panics, the request is answered 500 and not forwarded.
    /// Passes the whole body but with the byte at offset `at` (within this response's body)
    /// inverted: corruption that neither the length nor the connection shows.
    pub fn flip_byte(at: u64) -> Fault {
        Fault::new(Action::FlipByte(at))
    }

    pub fn hook(hook: impl Fn(u64, &SeenRequest) + Send + Sync + 'static) -> Fault {
        Fault::new(Action::Hook(Arc::new(hook)))
    }

    /// Also sets `name: value` on the response this fault applies to, e.g. a Retry-After
    /// with a 503. Panics if either is not a valid header name or value.
    pub fn with_header(mut self, name: &str, value: &str) -> Fault {
        let value = HeaderValue::from_str(value)
            .unwrap_or_else(|_| panic!("{value:?} is not a valid header value"));
        self.headers.push((header_name(name), value));
        self
    }

    fn new(action: Action) -> Fault {
        Fault {
            action,
            headers: Vec::new(),
        }
    }

    fn is_reply(&self) -> bool {
        matches!(self.action, Action::Reply { .. } | Action::Serve(_))
    }

    fn is_body(&self) -> bool {
        matches!(self.action, Action::Body(_) | Action::FlipByte(_))
    }

    /// The response that replaces the upstream's, if this fault answers by itself.
    pub(super) fn reply(
        &self,
        seen: &SeenRequest,
        request_id: &str,
    ) -> Option<Response<ProxyBody>> {
        let (status, code, message) = match &self.action {
            Action::Reply {
                status,
                code,
                message,
            } => (status, code, message),
            Action::Serve(object) => return Some(serve(object, seen)),
            _ => return None,
        };
        let body = error_document(code, message.as_deref(), &seen.path, request_id);
        let response = Response::builder()
            .status(*status)
            .header(CONTENT_TYPE, "application/xml")
            .header("x-amz-request-id", request_id)
            .body(
                Full::new(Bytes::from(body))
                    .map_err(|never| match never {})
                    .boxed(),
            )
            .expect("the parts of an error reply are valid");
        Some(response)
    }

    /// Applies this fault's status and header changes; whether the response changed.
    pub(super) fn edit_response<B>(&self, response: &mut Response<B>) -> bool {
        match &self.action {
            Action::Status(status) => {
                *response.status_mut() = *status;
                self.edit_headers(response.headers_mut());
                true
            }
            Action::RemoveHeader(name) => {
                let removed = response.headers_mut().remove(name).is_some();
                self.edit_headers(response.headers_mut()) || removed
            }
            _ => self.edit_headers(response.headers_mut()),
        }
    }

    /// Applies this fault's header changes; whether the response changed.
    pub(super) fn edit_headers(&self, headers: &mut HeaderMap) -> bool {
        let mut changed = !self.headers.is_empty();
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
        if let Action::EditHeader { name, edit } = &self.action {
            let old = headers
                .get(name)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
            if let Some(new) = edit(old.as_deref()) {
                let new = HeaderValue::from_str(&new)
                    .unwrap_or_else(|_| panic!("{new:?} is not a valid header value"));
                headers.insert(name.clone(), new);
                changed = true;
            }
        }
        changed
    }
}

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Reply { status, code, .. } => write!(f, "Reply({status} {code})"),
            Action::Hook(_) => f.write_str("Hook"),
            Action::DelayHeaders(delay) => write!(f, "DelayHeaders({delay:?})"),
            Action::EditHeader { name, .. } => write!(f, "EditHeader({name})"),
            Action::RemoveHeader(name) => write!(f, "RemoveHeader({name})"),
            Action::Status(status) => write!(f, "Status({status})"),
            Action::Serve(object) => write!(f, "Serve({} bytes)", object.len()),
            Action::SetHeadersOnly => f.write_str("SetHeaders"),
            Action::Body(cut) => write!(f, "{cut:?}"),
            Action::FlipByte(at) => write!(f, "FlipByte({at})"),
        }
    }
}

/// A rule the proxy is applying; drop it and the fault stays; call [`FaultHandle::remove`] to
/// stop it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct FaultHandle {
    armed: Arc<Armed>,
}

impl FaultHandle {
    /// How many requests matched the rule so far, whether or not they were due.
    pub fn matched(&self) -> u64 {
        self.armed.matched.load(Ordering::SeqCst)
    }

    /// How many times the fault took effect: a reply sent, a hook that returned, a header
    /// changed, a delay served, a body cut at its byte. A body shorter than the cut, or a
    /// HEAD, does not count, so a test can tell a fault that never happened.
    pub fn fired(&self) -> u64 {
        self.armed.fired.load(Ordering::SeqCst)
    }

    /// Stops the fault for requests that arrive from now on.
    pub fn remove(&self) {
        self.armed.removed.store(true, Ordering::SeqCst);
    }
}

/// A rule with its fault and counters, as the proxy holds it.
#[derive(Debug)]
pub(super) struct Armed {
    rule: Rule,
    pub(super) fault: Fault,
    matched: AtomicU64,
    fired: AtomicU64,
    removed: AtomicBool,
}

impl Armed {
    pub(super) fn fire(&self) {
        self.fired.fetch_add(1, Ordering::SeqCst);
    }
}

/// One fault due for one request: the `n`th the rule matched.
#[derive(Debug, Clone)]
pub(super) struct Due {
    pub(super) armed: Arc<Armed>,
    pub(super) n: u64,
}

impl Due {
    /// This fault's cut in the body, if it is a body fault.
    pub(super) fn body_fault(&self) -> Option<(&Arc<Armed>, BodyFault)> {
        match self.armed.fault.action {
            Action::Body(cut) => Some((&self.armed, cut)),
            _ => None,
        }
    }

    /// The body offset this fault corrupts, if it is a flipped byte.
    pub(super) fn flipped_byte(&self) -> Option<(&Arc<Armed>, u64)> {
        match self.armed.fault.action {
            Action::FlipByte(at) => Some((&self.armed, at)),
            _ => None,
        }
    }
}

/// The injected rules, in order.
#[derive(Debug, Default)]
pub(super) struct Script {
    rules: Vec<Arc<Armed>>,
}

impl Script {
    pub(super) fn add(&mut self, rule: Rule, fault: Fault) -> FaultHandle {
        let armed = Arc::new(Armed {
            rule,
            fault,
            matched: AtomicU64::new(0),
            fired: AtomicU64::new(0),
            removed: AtomicBool::new(false),
        });
        self.rules.push(Arc::clone(&armed));
        FaultHandle { armed }
    }

    pub(super) fn clear(&mut self) {
        for armed in self.rules.drain(..) {
            armed.removed.store(true, Ordering::SeqCst);
        }
    }

    /// Counts `seen` against every rule and returns the faults that apply to it, in order,
    /// with at most one reply and one body fault.
    pub(super) fn select(&mut self, seen: &SeenRequest) -> Vec<Due> {
        self.rules
            .retain(|armed| !armed.removed.load(Ordering::SeqCst));
        let (mut replied, mut cut) = (false, false);
        let mut due = Vec::new();
        for armed in &self.rules {
            if !armed.rule.matches(seen) {
                continue;
            }
            let n = armed.matched.fetch_add(1, Ordering::SeqCst) + 1;
            if !armed.rule.is_due(n) {
                continue;
            }
            let fault = &armed.fault;
            if (fault.is_reply() && replied) || (fault.is_body() && cut) {
                continue;
            }
            replied |= fault.is_reply();
            cut |= fault.is_body();
            due.push(Due {
                armed: Arc::clone(armed),
                n,
            });
        }
        due
    }
}

/// The requested range of `object`, as a server that keeps no ETag would answer it.
fn serve(object: &Bytes, seen: &SeenRequest) -> Response<ProxyBody> {
    let total = object.len() as u64;
    let requested = seen
        .range
        .as_deref()
        .and_then(|range| range.strip_prefix("bytes="))
        .and_then(|range| range.split_once('-'))
        .and_then(|(start, end)| {
            let start: u64 = start.trim().parse().ok()?;
            let end = match end.trim() {
                "" => total.checked_sub(1)?,
                end => end.parse::<u64>().ok()?.min(total.checked_sub(1)?),
            };
            (start <= end).then_some((start, end))
        });
    let builder = Response::builder();
    let (builder, body) = match requested {
        Some((start, end)) => (
            builder
                .status(StatusCode::PARTIAL_CONTENT)
                .header("content-range", format!("bytes {start}-{end}/{total}")),
            object.slice(start as usize..=end as usize),
        ),
        None => (builder.status(StatusCode::OK), object.clone()),
    };
    builder
        .header(CONTENT_TYPE, "application/octet-stream")
        .body(Full::new(body).map_err(|never| match never {}).boxed())
        .expect("the parts of a served range are valid")
}

fn assert_bounded(pause: Duration) {
    assert!(
        pause <= MAX_FAULT_PAUSE,
        "a fault may pause for at most {MAX_FAULT_PAUSE:?}, not {pause:?}"
    );
}

fn header_name(name: &str) -> HeaderName {
    HeaderName::from_bytes(name.as_bytes())
        .unwrap_or_else(|_| panic!("{name:?} is not a valid header name"))
}

/// The body S3 sends with an error, with the message S3 uses for the common codes.
fn error_document(code: &str, message: Option<&str>, resource: &str, request_id: &str) -> String {
    let message = message.unwrap_or(match code {
        "SlowDown" => "Please reduce your request rate.",
        "InternalError" => "We encountered an internal error. Please try again.",
        "ServiceUnavailable" => "Service is unable to handle request.",
        "AccessDenied" => "Access Denied",
        "NoSuchKey" => "The specified key does not exist.",
        "PreconditionFailed" => "At least one of the pre-conditions you specified did not hold",
        _ => "Injected by the parabyte test kit's fault proxy.",
    });
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message>\
         <Resource>{}</Resource><RequestId>{}</RequestId></Error>",
        escape(code),
        escape(message),
        escape(resource),
        escape(request_id)
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use http::Method;

    use super::*;

    fn get(path: &str, range: Option<&str>) -> SeenRequest {
        SeenRequest {
            kind: RequestKind::Get,
            method: Method::GET,
            path: path.to_owned(),
            query: String::new(),
            range: range.map(str::to_owned),
            if_match: None,
            if_unmodified_since: None,
            header_names: Vec::new(),
        }
    }

    fn list() -> SeenRequest {
        SeenRequest {
            kind: RequestKind::List,
            query: "list-type=2".to_owned(),
            ..get("/b", None)
        }
    }

    /// For each request, the indices (in injection order) of the rules that applied.
    fn run(rules: Vec<(Rule, Fault)>, requests: &[SeenRequest]) -> Vec<Vec<usize>> {
        let mut script = Script::default();
        let handles: Vec<FaultHandle> = rules
            .into_iter()
            .map(|(rule, fault)| script.add(rule, fault))
            .collect();
        requests
            .iter()
            .map(|seen| {
                script
                    .select(seen)
                    .iter()
                    .map(|due| {
                        handles
                            .iter()
                            .position(|h| Arc::ptr_eq(&h.armed, &due.armed))
                            .unwrap()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn nth_first_and_every_count_matching_requests_only() {
        let requests = [
            get("/b/big.bin", None),
            list(),
            get("/b/small.bin", None),
            get("/b/big.bin", None),
            get("/b/big.bin", None),
        ];
        let slow = || Fault::error(503, "SlowDown");
        let applied = run(
            vec![
                (Rule::get().key_contains("big").nth(2), slow()),
                (Rule::get().first(2), Fault::delay_headers(Duration::ZERO)),
                (Rule::list(), Fault::set_header("x-a", "1")),
                (Rule::any().nth(3), Fault::set_header("x-b", "1")),
                (Rule::get().every_nth(2), Fault::set_header("x-c", "1")),
            ],
            &requests,
        );
        assert_eq!(applied, [vec![1], vec![2], vec![1, 3, 4], vec![0], vec![4]]);
    }

    #[test]
    fn keys_are_matched_decoded_and_ranges_by_their_start() {
        let requests = [
            get("/b/dir/with%20space.bin", Some("bytes=0-99")),
            get("/b/dir/with%20space.bin", Some("bytes=100-199")),
            get("/b/other", Some("bytes=100-")),
        ];
        let applied = run(
            vec![
                (
                    Rule::get().key_contains("h space"),
                    Fault::set_header("x-a", "1"),
                ),
                (Rule::get().range_start(100), Fault::set_header("x-b", "1")),
                (
                    Rule::any().key_contains("b/"),
                    Fault::set_header("x-c", "1"),
                ),
            ],
            &requests,
        );
        // The bucket is not part of the key.
        assert_eq!(applied, [vec![0], vec![0, 1], vec![1]]);
    }

    #[test]
    fn a_request_gets_one_reply_and_one_body_fault_at_most() {
        let applied = run(
            vec![
                (Rule::get(), Fault::reset_after(10)),
                (Rule::get(), Fault::error(500, "InternalError")),
                (Rule::get(), Fault::error(503, "SlowDown")),
                (Rule::get(), Fault::truncate_after(5)),
                (Rule::get(), Fault::hook(|_, _| ())),
            ],
            &[get("/b/k", None)],
        );
        assert_eq!(applied, [vec![0, 1, 4]]);
    }

    #[test]
    fn removed_and_cleared_rules_stop_applying() {
        let mut script = Script::default();
        let first = script.add(Rule::get(), Fault::set_header("x-a", "1"));
        let second = script.add(Rule::get(), Fault::set_header("x-b", "1"));
        assert_eq!(script.select(&get("/b/k", None)).len(), 2);
        first.remove();
        assert_eq!(script.select(&get("/b/k", None)).len(), 1);
        script.clear();
        assert!(script.select(&get("/b/k", None)).is_empty());
        assert_eq!((first.matched(), second.matched()), (1, 2));
    }

    #[test]
    fn replies_are_s3_error_documents() {
        let fault = Fault::error(503, "SlowDown").with_header("retry-after", "2");
        let response = fault.reply(&get("/b/a&b", None), "fault-1").unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = futures::executor::block_on(response.into_body().collect())
            .unwrap()
            .to_bytes();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.contains("<Code>SlowDown</Code>"), "{body}");
        assert!(body.contains("<Resource>/b/a&amp;b</Resource>"), "{body}");
        let mut headers = HeaderMap::new();
        assert!(fault.edit_headers(&mut headers));
        assert_eq!(headers["retry-after"], "2");
        assert!(Fault::reset_after(1)
            .reply(&get("/b/k", None), "x")
            .is_none());
    }

    #[test]
    fn header_edits_set_or_rewrite() {
        let mut headers = HeaderMap::new();
        headers.insert("content-range", HeaderValue::from_static("bytes 0-9/1000"));
        let total = Fault::rewrite_header("content-range", |v| v.replace("/1000", "/999"));
        assert!(total.edit_headers(&mut headers));
        assert_eq!(headers["content-range"], "bytes 0-9/999");
        assert!(!Fault::rewrite_header("etag", |v| v.to_owned()).edit_headers(&mut headers));
        assert!(Fault::set_header("etag", "\"x\"").edit_headers(&mut headers));
        assert_eq!(headers["etag"], "\"x\"");
    }

    #[test]
    fn statuses_and_headers_can_be_changed_or_removed() {
        let mut response = Response::builder()
            .status(StatusCode::PARTIAL_CONTENT)
            .header("etag", "\"e\"")
            .header("content-range", "bytes 0-9/100")
            .body(())
            .unwrap();
        assert!(Fault::status(200).edit_response(&mut response));
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-range"], "bytes 0-9/100");
        assert!(Fault::remove_header("etag").edit_response(&mut response));
        assert!(!response.headers().contains_key("etag"));
        assert!(!Fault::remove_header("etag").edit_response(&mut response));
    }

    #[test]
    fn served_ranges_are_the_requested_bytes_without_an_etag() {
        let fault = Fault::serve_range(Bytes::from_static(b"0123456789"));
        let answer = |range: Option<&str>| {
            let response = fault.reply(&get("/b/k", range), "x").unwrap();
            let status = response.status();
            let headers = response.headers().clone();
            let body = futures::executor::block_on(response.into_body().collect())
                .unwrap()
                .to_bytes();
            (status, headers, body)
        };
        let (status, headers, body) = answer(Some("bytes=2-4"));
        assert_eq!(status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(headers["content-range"], "bytes 2-4/10");
        assert!(!headers.contains_key("etag"));
        assert_eq!(&body[..], b"234");
        let (_, headers, body) = answer(Some("bytes=8-"));
        assert_eq!(headers["content-range"], "bytes 8-9/10");
        assert_eq!(&body[..], b"89");
        let (status, _, body) = answer(None);
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"0123456789"[..]));
    }

    #[test]
    #[should_panic(expected = "at most")]
    fn pauses_are_bounded() {
        let _ = Fault::delay_headers(MAX_FAULT_PAUSE + Duration::from_secs(1));
    }
}
