//! An HTTP/1.1 reverse proxy on loopback that forwards everything unchanged to one upstream and
//! counts what it saw, so tests can assert how many requests and connections a download made.
//!
//! Every request goes through [`Forwarder::handle`]: classify and record, then forward. That is
//! the one place where a scripted fault (a 503, a reset after N bytes, a stall, a cut body) can
//! later be chosen per request and applied to the request or the response body.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
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

/// How many recent requests [`CountingProxy::requests`] remembers.
const RECENT_REQUESTS: usize = 1024;

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
}

/// The proxy; it stops when dropped. Runs on its own runtime thread, so sync tests can use it.
#[derive(Debug)]
pub struct CountingProxy {
    endpoint: String,
    ledger: Arc<Mutex<Ledger>>,
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
        let (shutdown, stop) = oneshot::channel();
        let forwarder = Arc::new(Forwarder::new(upstream, Arc::clone(&ledger)));
        let thread = std::thread::Builder::new()
            .name("counting-proxy".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("build the counting proxy runtime");
                runtime.block_on(serve(listener, forwarder, stop));
            })
            .expect("spawn the counting proxy thread");
        CountingProxy {
            endpoint,
            ledger,
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

    /// Forgets all counts and requests, e.g. after a test's setup went through the proxy.
    pub fn reset(&self) {
        *lock(&self.ledger) = Ledger::default();
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
}

impl Ledger {
    fn record(&mut self, seen: SeenRequest) {
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
        }
        self.recent.push_back(seen);
    }
}

fn lock(ledger: &Mutex<Ledger>) -> MutexGuard<'_, Ledger> {
    ledger
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn serve(
    listener: std::net::TcpListener,
    forwarder: Arc<Forwarder>,
    mut stop: oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("register the listener");
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of file descriptors, say: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        lock(&forwarder.ledger).counts.connections += 1;
        let _ = stream.set_nodelay(true);
        let forwarder = Arc::clone(&forwarder);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let forwarder = Arc::clone(&forwarder);
                async move { Ok::<_, Infallible>(forwarder.handle(request).await) }
            });
            // A client that hangs up mid-request is part of what tests exercise, not an error.
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[derive(Debug)]
struct Forwarder {
    upstream: Authority,
    client: Client<HttpConnector, ProxyBody>,
    ledger: Arc<Mutex<Ledger>>,
}

impl Forwarder {
    fn new(upstream: Authority, ledger: Arc<Mutex<Ledger>>) -> Forwarder {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Forwarder {
            upstream,
            client,
            ledger,
        }
    }

    async fn handle(&self, request: Request<Incoming>) -> Response<ProxyBody> {
        lock(&self.ledger).record(SeenRequest::of(&request));
        match self.forward(request).await {
            Ok(response) => response,
            Err(e) => Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(full(format!("counting proxy: upstream failed: {e}")))
                .expect("static response parts are valid"),
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

fn full(text: String) -> ProxyBody {
    Full::new(Bytes::from(text))
        .map_err(|never| match never {})
        .boxed()
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
            ledger.record(SeenRequest {
                kind: RequestKind::Head,
                method: Method::HEAD,
                path: format!("/b/{i}"),
                query: String::new(),
                range: None,
                if_match: None,
            });
        }
        assert_eq!(ledger.counts.head, RECENT_REQUESTS as u64 + 3);
        assert_eq!(ledger.recent.len(), RECENT_REQUESTS);
        assert_eq!(ledger.recent[0].path, "/b/3");
    }
}
