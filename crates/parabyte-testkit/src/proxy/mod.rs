//! An HTTP/1.1 reverse proxy on loopback in front of one upstream. It counts what it saw, so
//! tests can assert how many requests and connections a download made, and it injects the
//! faults a test scripted (`fault.rs`), so tests can show that nothing is lost or mixed when a
//! store misbehaves.
//!
//! Every request goes through [`Forwarder::handle`]: record it and pick its faults (one lock,
//! so "the nth request" is well defined), run hooks, reply or forward, then delay, rewrite
//! headers and cut the body (`body.rs`, with the socket control in `socket.rs`).

mod body;
mod fault;
mod socket;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::uri::Authority;
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::sync::oneshot;

use self::body::CutBody;
use self::fault::{Action, Armed, Due, Hook, Script};
use self::socket::{Connection, WatchedStream};
use crate::serve::{accept_until, lock};

pub use self::fault::{AfterStall, Fault, FaultHandle, Rule, MAX_FAULT_PAUSE};

/// How many recent requests [`CountingProxy::requests`] remembers.
const RECENT_REQUESTS: usize = 1024;
/// How long a request waits for a [`Fault::hook`].
const HOOK_LIMIT: Duration = Duration::from_secs(60);
/// How long a request answered by a fault may take to send the body nobody will read.
const DISCARD_LIMIT: Duration = Duration::from_secs(10);
/// How long a stopping proxy waits for hooks still running.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;

/// What a request was, judged from its method, path and query (path-style addressing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// A GET of an object.
    Get,
    /// A GET with `list-type=2` or on a bucket root.
    List,
    Head,
    Put,
    Other,
}

/// Requests by kind and TCP connections accepted, as the proxy's server side saw them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyCounts {
    pub get: u64,
    pub list: u64,
    pub head: u64,
    pub put: u64,
    pub other: u64,
    pub connections: u64,
}

/// One request as it arrived, with the headers tests most often ask about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    pub kind: RequestKind,
    pub method: Method,
    /// The path as sent, still percent-encoded (compare with [`crate::encode_key`]).
    pub path: String,
    /// The raw query string, empty if there was none.
    pub query: String,
    pub range: Option<String>,
    pub if_match: Option<String>,
    pub if_unmodified_since: Option<String>,
    /// The names of every header it carried, in lower case.
    pub header_names: Vec<String>,
}

/// The proxy; it stops when dropped. Runs on its own runtime thread, so sync tests can use it.
///
/// It forwards everything unchanged until a test calls [`CountingProxy::inject`]; counts and
/// recorded requests always reflect what the client sent, faulted requests included.
#[derive(Debug)]
pub struct CountingProxy {
    endpoint: String,
    ledger: Arc<Mutex<Ledger>>,
    script: Arc<Mutex<Script>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl CountingProxy {
    /// Starts a proxy on a free 127.0.0.1 port in front of `upstream_endpoint`
    /// (`http://127.0.0.1:PORT`). Panics if the upstream is not a loopback address or no port
    /// can be bound: a test can do nothing useful then.
    pub fn start(upstream_endpoint: &str) -> CountingProxy {
        let upstream = loopback_authority(upstream_endpoint);
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
            .expect("bind the counting proxy to a loopback port");
        let endpoint = format!(
            "http://{}",
            listener
                .local_addr()
                .expect("bound listener has an address")
        );
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let script = Arc::new(Mutex::new(Script::default()));
        let (shutdown, stop) = oneshot::channel();
        let forwarder = Arc::new(Forwarder::new(
            upstream,
            Arc::clone(&ledger),
            Arc::clone(&script),
        ));
        let thread = std::thread::Builder::new()
            .name("counting-proxy".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("build the counting proxy runtime");
                runtime.block_on(serve(listener, forwarder, stop));
                // Stalls and delays in flight are dropped; a hook still running gets a moment.
                runtime.shutdown_timeout(SHUTDOWN_LIMIT);
            })
            .expect("spawn the counting proxy thread");
        CountingProxy {
            endpoint,
            ledger,
            script,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`; point the client under test here.
    pub fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    pub fn counts(&self) -> ProxyCounts {
        lock(&self.ledger).counts
    }

    /// The most recent requests, oldest first.
    pub fn requests(&self) -> Vec<SeenRequest> {
        lock(&self.ledger).recent.iter().cloned().collect()
    }

    /// For each of [`CountingProxy::requests`], how many requests were in flight (arrived,
    /// response not yet fully sent) when it arrived, itself included.
    pub fn in_flight_at_arrivals(&self) -> Vec<u64> {
        lock(&self.ledger)
            .in_flight_at_arrival
            .iter()
            .copied()
            .collect()
    }

    /// The client's source address of each connection accepted, in order: what a client
    /// told to bind local addresses really used.
    pub fn connection_peers(&self) -> Vec<IpAddr> {
        lock(&self.ledger).connection_peers.clone()
    }

    /// Forgets all counts and requests, e.g. after a test's setup went through the proxy.
    /// Injected faults stay, and keep counting where they were.
    pub fn reset(&self) {
        *lock(&self.ledger) = Ledger::default();
    }

    /// Applies `fault` to the requests `rule` picks, from the next request on, until the
    /// handle's [`FaultHandle::remove`] or [`CountingProxy::clear_faults`]:
    ///
    /// ```no_run
    /// # use parabyte_testkit::{CountingProxy, Fault, Rule};
    /// # let proxy = CountingProxy::start("http://127.0.0.1:9000");
    /// let reset = proxy.inject(Rule::get().key_contains("big.bin").nth(2), Fault::reset_after(1 << 20));
    /// // ... run the client under test ...
    /// assert_eq!(reset.fired(), 1);
    /// ```
    pub fn inject(&self, rule: Rule, fault: Fault) -> FaultHandle {
        lock(&self.script).add(rule, fault)
    }

    /// Removes every injected fault; requests are forwarded unchanged again.
    pub fn clear_faults(&self) {
        lock(&self.script).clear();
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[derive(Debug, Default)]
struct Ledger {
    counts: ProxyCounts,
    recent: VecDeque<SeenRequest>,
    /// For each of `recent`: requests in flight when it arrived, itself included.
    in_flight_at_arrival: VecDeque<u64>,
    /// The client's address of each connection accepted, in order.
    connection_peers: Vec<IpAddr>,
}

impl Ledger {
    fn record(&mut self, seen: SeenRequest, in_flight: u64) {
        let counter = match seen.kind {
            RequestKind::Get => &mut self.counts.get,
            RequestKind::List => &mut self.counts.list,
            RequestKind::Head => &mut self.counts.head,
            RequestKind::Put => &mut self.counts.put,
            RequestKind::Other => &mut self.counts.other,
        };
        *counter += 1;
        if self.recent.len() == RECENT_REQUESTS {
            self.recent.pop_front();
            self.in_flight_at_arrival.pop_front();
        }
        self.recent.push_back(seen);
        self.in_flight_at_arrival.push_back(in_flight);
    }
}

async fn serve(
    listener: std::net::TcpListener,
    forwarder: Arc<Forwarder>,
    stop: oneshot::Receiver<()>,
) {
    accept_until(listener, stop, |stream| {
        {
            let mut ledger = lock(&forwarder.ledger);
            ledger.counts.connections += 1;
            if let Ok(peer) = stream.peer_addr() {
                ledger.connection_peers.push(peer.ip());
            }
        }
        let forwarder = Arc::clone(&forwarder);
        let connection = Arc::new(Connection::default());
        let stream = WatchedStream::new(stream, Arc::clone(&connection));
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let forwarder = Arc::clone(&forwarder);
                let connection = Arc::clone(&connection);
                async move { Ok::<_, Infallible>(forwarder.handle(request, connection).await) }
            });
            // A client that hangs up mid-request is part of what tests exercise, not an error;
            // so is a body cut on purpose.
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    })
    .await;
}

#[derive(Debug)]
struct Forwarder {
    upstream: Authority,
    client: Client<HttpConnector, ProxyBody>,
    ledger: Arc<Mutex<Ledger>>,
    script: Arc<Mutex<Script>>,
    in_flight: Arc<AtomicU64>,
}

/// Counts one request in flight until its response body is done or dropped.
#[derive(Debug)]
struct InFlight(Arc<AtomicU64>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Forwarder {
    fn new(
        upstream: Authority,
        ledger: Arc<Mutex<Ledger>>,
        script: Arc<Mutex<Script>>,
    ) -> Forwarder {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Forwarder {
            upstream,
            client,
            ledger,
            script,
            in_flight: Arc::default(),
        }
    }

    async fn handle(
        &self,
        request: Request<Incoming>,
        connection: Arc<Connection>,
    ) -> Response<ProxyBody> {
        let in_flight = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        let guard = InFlight(self.in_flight.clone());
        let response = self.respond(request, connection, in_flight).await;
        response.map(|body| {
            body.map_frame(move |frame| {
                let _counted_until_the_body_ends = &guard;
                frame
            })
            .boxed()
        })
    }

    async fn respond(
        &self,
        request: Request<Incoming>,
        connection: Arc<Connection>,
        in_flight: u64,
    ) -> Response<ProxyBody> {
        let seen = SeenRequest::of(&request);
        let faults = {
            let mut ledger = lock(&self.ledger);
            let faults = lock(&self.script).select(&seen);
            ledger.record(seen.clone(), in_flight);
            faults
        };
        if faults.is_empty() {
            return self.forward_or_fail(request).await;
        }

        for due in &faults {
            if let Action::Hook(hook) = &due.armed.fault.action {
                if let Err(failure) = run_hook(Arc::clone(hook), due.n, seen.clone()).await {
                    return text_response(StatusCode::INTERNAL_SERVER_ERROR, failure);
                }
                due.armed.fire();
            }
        }
        let reply = faults.iter().find_map(|due| {
            let request_id = format!("parabyte-fault-{}", due.n);
            Some((due, due.armed.fault.reply(&seen, &request_id)?))
        });
        let mut response = match reply {
            Some((due, reply)) => {
                discard(request.into_body()).await;
                due.armed.fire();
                reply
            }
            None => self.forward_or_fail(request).await,
        };
        for due in &faults {
            if let Action::DelayHeaders(delay) = due.armed.fault.action {
                tokio::time::sleep(delay).await;
                due.armed.fire();
            }
        }
        for due in &faults {
            let changed = due.armed.fault.edit_response(&mut response);
            let only_headers = matches!(
                due.armed.fault.action,
                Action::EditHeader { .. }
                    | Action::SetHeadersOnly
                    | Action::RemoveHeader(_)
                    | Action::Status(_)
            );
            if changed && only_headers {
                due.armed.fire();
            }
        }
        if let Some((armed, at)) = faults.iter().find_map(Due::flipped_byte) {
            let armed = Arc::clone(armed);
            response = response.map(|body| flip_byte(body, at, armed));
        }
        match faults.iter().find_map(Due::body_fault) {
            Some((armed, cut)) => {
                response.map(|body| CutBody::new(body, cut, Arc::clone(armed), connection).boxed())
            }
            None => response,
        }
    }

    async fn forward_or_fail(&self, request: Request<Incoming>) -> Response<ProxyBody> {
        match self.forward(request).await {
            Ok(response) => response,
            Err(e) => text_response(
                StatusCode::BAD_GATEWAY,
                format!("counting proxy: upstream failed: {e}"),
            ),
        }
    }

    /// Sends the request on as it came (Host included, since SigV4 signed it) and streams both
    /// bodies through.
    async fn forward(&self, request: Request<Incoming>) -> Result<Response<ProxyBody>, BoxError> {
        let (mut parts, body) = request.into_parts();
        parts.uri = Uri::builder()
            .scheme("http")
            .authority(self.upstream.clone())
            .path_and_query(parts.uri.path_and_query().map_or("/", |pq| pq.as_str()))
            .build()?;
        let request = Request::from_parts(parts, body.map_err(BoxError::from).boxed());
        let response = self.client.request(request).await?;
        Ok(response.map(|body| body.map_err(BoxError::from).boxed()))
    }
}

impl SeenRequest {
    /// The object key, decoded and without the bucket; empty for a request on a bucket.
    pub fn key(&self) -> String {
        let key = self
            .path
            .trim_start_matches('/')
            .split_once('/')
            .map_or("", |(_bucket, key)| key);
        percent_encoding::percent_decode_str(key)
            .decode_utf8_lossy()
            .into_owned()
    }

    /// Where a `Range: bytes=<start>-...` header starts, if there is one.
    fn range_start(&self) -> Option<u64> {
        let range = self.range.as_deref()?.strip_prefix("bytes=")?;
        range.split_once('-')?.0.trim().parse().ok()
    }

    fn of<B>(request: &Request<B>) -> SeenRequest {
        let header = |name: http::header::HeaderName| {
            request
                .headers()
                .get(name)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        };
        let path = request.uri().path().to_owned();
        let query = request.uri().query().unwrap_or_default().to_owned();
        SeenRequest {
            kind: classify(request.method(), &path, &query),
            method: request.method().clone(),
            path,
            query,
            range: header(http::header::RANGE),
            if_match: header(http::header::IF_MATCH),
            if_unmodified_since: header(http::header::IF_UNMODIFIED_SINCE),
            header_names: request
                .headers()
                .keys()
                .map(|name| name.to_string())
                .collect(),
        }
    }
}

fn classify(method: &Method, path: &str, query: &str) -> RequestKind {
    match *method {
        Method::HEAD => RequestKind::Head,
        Method::PUT => RequestKind::Put,
        Method::GET if query.split('&').any(|pair| pair == "list-type=2") => RequestKind::List,
        Method::GET => match path.trim_start_matches('/').split_once('/') {
            Some((_, "")) => RequestKind::List,
            Some(_) => RequestKind::Get,
            None if path.len() > 1 => RequestKind::List,
            // `GET /` lists the buckets, which is not what tests count as a listing.
            None => RequestKind::Other,
        },
        _ => RequestKind::Other,
    }
}

/// Runs a hook on the blocking pool (it may block on a runtime of its own) and waits for it,
/// within [`HOOK_LIMIT`].
async fn run_hook(hook: Hook, n: u64, seen: SeenRequest) -> Result<(), String> {
    let running = tokio::task::spawn_blocking(move || hook(n, &seen));
    match tokio::time::timeout(HOOK_LIMIT, running).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(format!(
            "fault proxy: the hook for matching request {n} panicked"
        )),
        Err(_) => Err(format!(
            "fault proxy: the hook for matching request {n} did not return within {HOOK_LIMIT:?}"
        )),
    }
}

/// Reads and drops a request body that will not be forwarded, so that the client gets to
/// read the reply instead of failing to send, and the connection stays usable.
async fn discard(body: Incoming) {
    let drain = async move {
        let mut body = body;
        while let Some(Ok(_)) = body.frame().await {}
    };
    let _ = tokio::time::timeout(DISCARD_LIMIT, drain).await;
}

/// The body with the byte at offset `at` inverted, wherever the frames happen to split.
fn flip_byte(body: ProxyBody, at: u64, armed: Arc<Armed>) -> ProxyBody {
    let mut passed = 0u64;
    body.map_frame(move |frame| {
        frame.map_data(|data: Bytes| {
            let start = passed;
            passed += data.len() as u64;
            if !(start..passed).contains(&at) {
                return data;
            }
            let mut changed = BytesMut::from(data);
            changed[(at - start) as usize] ^= 0xff;
            armed.fire();
            changed.freeze()
        })
    })
    .boxed()
}

fn text_response(status: StatusCode, text: String) -> Response<ProxyBody> {
    Response::builder()
        .status(status)
        .body(
            Full::new(Bytes::from(text))
                .map_err(|never| match never {})
                .boxed(),
        )
        .expect("static response parts are valid")
}

/// Only loopback upstreams: this proxy must never send test traffic anywhere else.
fn loopback_authority(endpoint: &str) -> Authority {
    let authority: Authority = endpoint
        .trim_end_matches('/')
        .strip_prefix("http://")
        .and_then(|rest| rest.parse().ok())
        .unwrap_or_else(|| panic!("the proxy upstream must be http://HOST:PORT, not {endpoint}"));
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    assert!(
        loopback,
        "the proxy upstream must be on loopback, not {endpoint}"
    );
    authority
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_classified_like_s3_operations() {
        let cases = [
            (Method::GET, "/b/k", "", RequestKind::Get),
            (Method::GET, "/b/dir/k", "partNumber=1", RequestKind::Get),
            (Method::GET, "/b", "list-type=2&prefix=a", RequestKind::List),
            (Method::GET, "/b/", "", RequestKind::List),
            (Method::GET, "/b", "", RequestKind::List),
            (Method::GET, "/", "", RequestKind::Other),
            (Method::HEAD, "/b/k", "", RequestKind::Head),
            (Method::PUT, "/b/k", "", RequestKind::Put),
            (Method::DELETE, "/b/k", "", RequestKind::Other),
            (Method::POST, "/b/k", "uploads", RequestKind::Other),
        ];
        for (method, path, query, kind) in cases {
            assert_eq!(
                classify(&method, path, query),
                kind,
                "{method} {path}?{query}"
            );
        }
    }

    #[test]
    fn only_loopback_upstreams_are_accepted() {
        assert_eq!(
            loopback_authority("http://127.0.0.1:9000/").as_str(),
            "127.0.0.1:9000"
        );
        assert_eq!(
            loopback_authority("http://localhost:1").as_str(),
            "localhost:1"
        );
        assert!(std::panic::catch_unwind(|| loopback_authority("http://10.0.0.1:80")).is_err());
        assert!(std::panic::catch_unwind(|| loopback_authority("https://127.0.0.1:1")).is_err());
    }

    #[test]
    fn ledger_keeps_only_the_most_recent_requests() {
        let mut ledger = Ledger::default();
        for i in 0..RECENT_REQUESTS + 3 {
            let seen = SeenRequest {
                kind: RequestKind::Head,
                method: Method::HEAD,
                path: format!("/b/{i}"),
                query: String::new(),
                range: None,
                if_match: None,
                if_unmodified_since: None,
                header_names: Vec::new(),
            };
            ledger.record(seen, i as u64);
        }
        assert_eq!(ledger.counts.head, RECENT_REQUESTS as u64 + 3);
        assert_eq!(ledger.recent.len(), RECENT_REQUESTS);
        assert_eq!(ledger.recent[0].path, "/b/3");
        assert_eq!(ledger.in_flight_at_arrival.len(), RECENT_REQUESTS);
        assert_eq!(
            ledger.in_flight_at_arrival[0], 3,
            "in step with the requests"
        );
    }
}
