//! The shared HTTP client: pooled keep-alive HTTP/1.1 connections over rustls, with a
//! counter on the connector so the summary can say how many connections were opened, and
//! redirects followed here rather than by reqwest, so that no secret follows them.

use std::future::Future;
use std::net::IpAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use reqwest::header::{
    HeaderName, IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_UNMODIFIED_SINCE, LOCATION, RANGE,
};
use reqwest::{Request, Response, StatusCode, Url};

use crate::config::StoreConfig;
use crate::counters::{Counters, RequestKind};
use crate::error::{with_causes, Error, Result};
use crate::location::redact;

/// The tracing target of one event per request sent: method, redacted URL, range, status
/// and time taken (until the headers arrived). The library only emits; `parabyte -v`
/// listens.
pub const REQUEST_EVENTS: &str = "parabyte::request";

/// Redirect hops followed for one request, as many as curl and browsers allow.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// The only headers a redirect to another origin carries: what to fetch, never who asks.
/// Authorization, cookies, `x-amz-security-token` and the other signing headers stay behind.
const PORTABLE_HEADERS: [HeaderName; 5] = [
    RANGE,
    IF_MATCH,
    IF_NONE_MATCH,
    IF_UNMODIFIED_SINCE,
    IF_MODIFIED_SINCE,
];

/// The clients every request of a run goes through: one per local address to send from
/// (`--bind`), or one that lets the system choose. Each keeps its own pool, and requests
/// take them in turn, so connections spread evenly over the addresses (and the network
/// interfaces behind them): one interface caps one host's throughput otherwise.
#[derive(Clone, Debug)]
pub(crate) struct HttpClient {
    clients: Arc<[reqwest::Client]>,
    turn: Arc<AtomicUsize>,
}

impl HttpClient {
    pub(crate) fn new(config: &StoreConfig, counters: Arc<Counters>) -> Result<HttpClient> {
        let extra_roots = match &config.ca_bundle {
            Some(path) => Some(read_ca_bundle(path)?),
            None => None,
        };
        let build = |local_address: Option<IpAddr>| {
            build_client(config, counters.clone(), extra_roots.clone(), local_address)
        };
        let clients = if config.local_addresses.is_empty() {
            vec![build(None)?]
        } else {
            config
                .local_addresses
                .iter()
                .map(|&address| {
                    check_local_address(address)?;
                    build(Some(address))
                })
                .collect::<Result<_>>()?
        };
        Ok(HttpClient {
            clients: clients.into(),
            turn: Arc::default(),
        })
    }

    /// A GET request for `url`, to be sent with [`send_following`].
    pub(crate) fn get(&self, url: impl reqwest::IntoUrl) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::GET, url)
    }

    /// A bodiless request for `url`, to be sent with [`send_following`].
    pub(crate) fn request(
        &self,
        method: reqwest::Method,
        url: impl reqwest::IntoUrl,
    ) -> reqwest::RequestBuilder {
        self.clients[0].request(method, url)
    }

    /// The client for the next request: each local address in turn.
    fn next(&self) -> &reqwest::Client {
        let turn = self.turn.fetch_add(1, Relaxed);
        &self.clients[turn % self.clients.len()]
    }
}

fn read_ca_bundle(path: &Path) -> Result<Vec<reqwest::Certificate>> {
    let pem = std::fs::read(path).map_err(|e| Error::io("cannot read CA bundle", path, e))?;
    reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
        Error::InvalidInput(format!(
            "CA bundle '{}' is not valid PEM: {e}",
            path.display()
        ))
    })
}

/// A bind address that is not this machine's would fail every connection with the same
/// error; say so once, up front.
fn check_local_address(address: IpAddr) -> Result<()> {
    std::net::TcpListener::bind((address, 0))
        .map(drop)
        .map_err(|e| {
            Error::InvalidInput(format!(
                "--bind {address}: cannot send from this address ({e}); give addresses of \
                 this machine's network interfaces"
            ))
        })
}

fn build_client(
    config: &StoreConfig,
    counters: Arc<Counters>,
    extra_roots: Option<Vec<reqwest::Certificate>>,
    local_address: Option<IpAddr>,
) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        // One range per connection is the point of parallel byte serving; HTTP/2 would
        // multiplex them onto one connection and its one congestion window.
        .http1_only()
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .connect_timeout(config.connect_timeout)
        .read_timeout(config.read_timeout)
        // reqwest's redirects send a Referer (a presigned URL's signature) and keep every
        // header but Authorization and cookies (so `x-amz-security-token` went along):
        // `send_following` follows them instead.
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .no_proxy()
        .local_address(local_address)
        .user_agent(concat!("parabyte/", env!("CARGO_PKG_VERSION")))
        .connector_layer(CountConnections { counters });
    if let Some(certs) = extra_roots {
        builder = builder.tls_certs_merge(certs);
    }
    builder
        .build()
        .map_err(|e| Error::InvalidInput(format!("cannot set up the HTTP client: {e}")))
}

/// Send a bodiless GET or HEAD and follow its redirects. A hop to the same origin (scheme, host,
/// port) is the same request sent again; a hop to another origin is a new request with
/// only [`PORTABLE_HEADERS`]. No hop ever carries a Referer. Every request that went out
/// is counted, and only those: one that got no connection was never sent.
pub(crate) async fn send_following(
    http: &HttpClient,
    mut request: Request,
    counters: &Counters,
    kind: RequestKind,
) -> std::result::Result<Response, reqwest::Error> {
    for _ in 0..MAX_REDIRECTS {
        // Bodiless requests always clone; the copy is what the next hop is made from.
        let sent = request.try_clone();
        let response = send_counted(http, request, counters, kind).await?;
        match (sent, redirect_target(&response)) {
            (Some(sent), Some(next)) => request = next_hop(sent, next),
            _ => return Ok(response),
        }
    }
    // Still redirected after the last hop: the caller reports the 3xx it got.
    send_counted(http, request, counters, kind).await
}

async fn send_counted(
    http: &HttpClient,
    request: Request,
    counters: &Counters,
    kind: RequestKind,
) -> std::result::Result<Response, reqwest::Error> {
    // Only when someone listens (`parabyte -v`): the request as it went, then its answer.
    let traced = tracing::enabled!(target: REQUEST_EVENTS, tracing::Level::INFO).then(|| {
        let range = request.headers().get(RANGE).and_then(|v| v.to_str().ok());
        let range = range.map_or(String::new(), |range| format!(" {range}"));
        let shown = format!(
            "{} {}{range}",
            request.method(),
            redact(request.url().as_str())
        );
        (shown, Instant::now())
    });
    let result = http.next().execute(request).await;
    if !matches!(&result, Err(error) if error.is_connect() || error.is_builder()) {
        counters.count_request(kind);
    }
    if let Some((shown, started)) = traced {
        let answer = match &result {
            Ok(response) => response.status().as_u16().to_string(),
            Err(error) => format!("failed: {}", describe(error)),
        };
        let millis = started.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(target: REQUEST_EVENTS, "{shown} -> {answer} in {millis:.1} ms");
    }
    result
}

/// Where a redirect response points, when it is one parabyte follows: an http(s) URL
/// (relative ones resolved against the response's own).
fn redirect_target(response: &Response) -> Option<Url> {
    let redirect = matches!(
        response.status(),
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    );
    if !redirect {
        return None;
    }
    let location = response.headers().get(LOCATION)?.to_str().ok()?;
    let next = response.url().join(location).ok()?;
    matches!(next.scheme(), "http" | "https").then_some(next)
}

/// The request for the next hop: the same one to the same origin, a stripped one elsewhere.
fn next_hop(sent: Request, next: Url) -> Request {
    if next.origin() == sent.url().origin() {
        let mut same = sent;
        *same.url_mut() = next;
        return same;
    }
    let mut elsewhere = Request::new(sent.method().clone(), next);
    for name in PORTABLE_HEADERS {
        if let Some(value) = sent.headers().get(&name) {
            elsewhere.headers_mut().insert(name, value.clone());
        }
    }
    elsewhere
}

/// Tower layer that counts successfully established connections.
#[derive(Clone)]
struct CountConnections {
    counters: Arc<Counters>,
}

impl<S> tower_layer::Layer<S> for CountConnections {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counters: self.counters.clone(),
        }
    }
}

#[derive(Clone)]
struct Counted<S> {
    inner: S,
    counters: Arc<Counters>,
}

impl<S, R> tower_service::Service<R> for Counted<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let counters = self.counters.clone();
        let connecting = self.inner.call(request);
        Box::pin(async move {
            let connection = connecting.await;
            if connection.is_ok() {
                counters.connections.fetch_add(1, Relaxed);
            }
            connection
        })
    }
}

/// The error for a request that failed before any response. What no retry can change is
/// fatal: an untrusted certificate, a host name that does not resolve, a TLS handshake that
/// fails (an `https://` URL to a plain HTTP server is named as such). The rest is a network
/// failure, retried.
pub(crate) fn transport_error(what: &str, error: &reqwest::Error, endpoint: &str) -> Error {
    let detail = describe(error);
    let what = what.to_owned();
    // rustls' words when the first bytes back are not a TLS record: plain HTTP.
    if detail.contains("InvalidContentType") {
        let plain = endpoint.replacen("https://", "http://", 1);
        return Error::CannotConnect {
            what,
            detail: format!("the server at {endpoint} speaks plain HTTP: use {plain}"),
        };
    }
    if detail.contains("certificate") {
        return Error::UntrustedCertificate {
            what,
            detail: format!("{detail} ({endpoint})"),
        };
    }
    if error.is_connect() && detail.contains("dns error") && !detail.contains("Temporary failure") {
        return Error::CannotConnect {
            what,
            detail: format!(
                "the host name in {endpoint} does not resolve ({detail}); check its spelling"
            ),
        };
    }
    if error.is_connect() && caused_by(error, std::io::ErrorKind::InvalidData) {
        return Error::CannotConnect {
            what,
            detail: format!(
                "the TLS handshake with {endpoint} failed ({detail}); check that the scheme and port are the server's"
            ),
        };
    }
    Error::Network {
        what,
        detail: format!("{detail} ({endpoint})"),
    }
}

/// Whether an I/O error of this kind is among the causes of `error` (TLS failures reach
/// reqwest as `InvalidData`).
fn caused_by(error: &dyn std::error::Error, kind: std::io::ErrorKind) -> bool {
    let mut source = error.source();
    while let Some(cause) = source {
        if cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// Describe a transport error without leaking the URL's query (presigned signatures live there).
pub(crate) fn describe(error: &reqwest::Error) -> String {
    let text = if error.is_timeout() {
        "timed out".to_owned()
    } else if error.is_connect() {
        "could not connect".to_owned()
    } else if error.is_body() || error.is_decode() {
        "connection broke while reading the body".to_owned()
    } else {
        "request failed".to_owned()
    };
    with_causes(text, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderValue, AUTHORIZATION, COOKIE};

    fn signed_get(url: &str) -> Request {
        let mut request = Request::new(reqwest::Method::GET, Url::parse(url).unwrap());
        let headers = request.headers_mut();
        for (name, value) in [
            ("authorization", "AWS4-HMAC-SHA256 Credential=AKIA/..."),
            ("x-amz-security-token", "session"),
            ("x-amz-date", "20261122T000000Z"),
            ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
            ("cookie", "id=1"),
            ("range", "bytes=0-9"),
            ("if-match", "\"abc\""),
        ] {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        request
    }

    #[test]
    fn a_hop_to_another_origin_carries_only_what_to_fetch() {
        for elsewhere in [
            "http://other:9000/b/k",
            "http://store:9001/b/k",
            "https://store:9000/b/k",
        ] {
            let hop = next_hop(
                signed_get("http://store:9000/b/k?X-Amz-Signature=s"),
                Url::parse(elsewhere).unwrap(),
            );
            let mut names: Vec<&str> = hop.headers().keys().map(HeaderName::as_str).collect();
            names.sort_unstable();
            assert_eq!(names, ["if-match", "range"], "{elsewhere}");
            assert_eq!(hop.url().as_str(), elsewhere);
        }
    }

    #[test]
    fn a_hop_to_the_same_origin_is_the_same_request() {
        let hop = next_hop(
            signed_get("http://store:9000/b/k"),
            Url::parse("http://store:9000/b/k2").unwrap(),
        );
        assert!(hop.headers().contains_key(AUTHORIZATION));
        assert!(hop.headers().contains_key(COOKIE));
        assert!(hop.headers().contains_key("x-amz-security-token"));
        assert_eq!(hop.url().path(), "/b/k2");
    }
}
