//! The shared HTTP client: pooled keep-alive HTTP/1.1 connections over rustls, with a
//! counter on the connector so the summary can say how many connections were opened, a
//! bounded read buffer per connection, and redirects followed here, so that no secret
//! follows them. Requests are built with reqwest's builder (headers, URL credentials) and
//! sent by hyper-util's client, which, unlike reqwest, lets the read buffer be capped.

use std::future::Future;
use std::net::IpAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH, IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH,
    IF_UNMODIFIED_SINCE, LOCATION, RANGE, USER_AGENT,
};
use reqwest::{Request, StatusCode, Url};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::body_buffers::LARGEST_SHARE;
use crate::config::StoreConfig;
use crate::counters::{Counters, RequestKind};
use crate::error::{with_causes, Error, Result};
use crate::location::redact;
use crate::source::connection_demand::{ConnectionDemand, OnDemand, Wanting};
use crate::source::shared_reads::SharedReads;
use crate::source::trusted_roots::TrustedRoots;
use crate::source::write_body::WriteBody;

/// The tracing target of one event per request sent: method, redacted URL, range, status
/// and time taken (until the headers arrived). The library only emits; `parabyte -v`
/// listens.
pub const REQUEST_EVENTS: &str = "parabyte::request";

/// Redirect hops followed for one request, as many as curl and browsers allow.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// hyper's cap on a connection's read buffer (its default is ~400 KiB, which a fast
/// connection fills; every body chunk handed on keeps its part of that buffer alive, so
/// each request in flight held ~800 KiB). The buffer grows in doublings past the cap's
/// last step, so a chunk is at most twice this. The largest share of the body-buffer
/// budget; with more connections open each reads less ([`SharedReads`]).
pub(crate) const READ_BUFFER: usize = LARGEST_SHARE;

/// The only headers a redirect to another origin carries: what to fetch, never who asks.
/// Authorization, cookies, `x-amz-security-token` and the other signing headers stay behind.
const PORTABLE_HEADERS: [HeaderName; 5] = [
    RANGE,
    IF_MATCH,
    IF_NONE_MATCH,
    IF_UNMODIFIED_SINCE,
    IF_MODIFIED_SINCE,
];

type Connector = CountConnections<OnDemand<SharedReads>>;
/// A request body: in memory (a GET's is empty), or a file's part streamed as it is sent.
type Sent = UnsyncBoxBody<Bytes, Error>;
type Sender = hyper_util::client::legacy::Client<Connector, Sent>;

/// One pool of connections: the address it sends from (`None`: the system's choice), and
/// the requests and connections per host its connector opens by.
#[derive(Debug)]
struct Route {
    bound: Option<IpAddr>,
    sender: Sender,
    demand: Arc<ConnectionDemand>,
}

/// The clients every request of a run goes through: one per local address to send from
/// (`--bind`), or one that lets the system choose. Each keeps its own pool, and requests
/// take them in turn, so connections spread evenly over the addresses (and the network
/// interfaces behind them): one interface caps one host's throughput otherwise.
#[derive(Clone, Debug)]
pub(crate) struct HttpClient {
    /// Builds requests only (headers, credentials in URLs); never sends.
    builder: reqwest::Client,
    /// Each sender with the local address it sends from (`None`: the system's choice).
    senders: Arc<[Route]>,
    turn: Arc<AtomicUsize>,
    /// How long one read may wait: for the response head (from the request's start, as
    /// reqwest counted it), then for each body chunk.
    read_timeout: Duration,
    /// The roots every handshake checks certificates against.
    roots: Arc<TrustedRoots>,
}

impl HttpClient {
    pub(crate) fn new(config: &StoreConfig, counters: Arc<Counters>) -> Result<HttpClient> {
        let extra_roots = match &config.ca_bundle {
            Some(path) => read_ca_bundle(path)?,
            None => Vec::new(),
        };
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let roots = TrustedRoots::with(extra_roots, provider.clone());
        let tls = tls_config(roots.clone(), provider)?;
        let build = |local_address: Option<IpAddr>| {
            build_sender(config, counters.clone(), tls.clone(), local_address)
        };
        let senders = if config.local_addresses.is_empty() {
            vec![build(None)]
        } else {
            config
                .local_addresses
                .iter()
                .map(|&address| {
                    check_local_address(address, endpoint_address(config))?;
                    Ok(build(Some(address)))
                })
                .collect::<Result<_>>()?
        };
        // It never sends: given this TLS, it reads no roots of its own.
        let builder = reqwest::Client::builder()
            .tls_backend_preconfigured(tls.clone())
            .build()
            .map_err(|e| Error::InvalidInput(format!("cannot set up the HTTP client: {e}")))?;
        Ok(HttpClient {
            builder,
            senders: senders.into(),
            turn: Arc::default(),
            read_timeout: config.read_timeout,
            roots,
        })
    }

    /// This client will speak HTTPS: read the trusted roots now, beside the first
    /// request's connection rather than inside its handshake.
    pub(crate) fn expect_https(&self) {
        self.roots.read_ahead();
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
        self.builder.request(method, url)
    }

    /// The sender for the next request to `host`: each local address in turn, of those of
    /// the host's family when the host is an address. None when `--bind` gave addresses of
    /// the other family only: every connection would fail alike, so it is said up front.
    fn next(&self, host: Option<IpAddr>) -> std::result::Result<&Route, HttpError> {
        let turn = self.turn.fetch_add(1, Relaxed);
        let reaches = |route: &&Route| match (route.bound, host) {
            (Some(bound), Some(host)) => bound.is_ipv4() == host.is_ipv4(),
            _ => true,
        };
        let mut usable = self.senders.iter().filter(reaches);
        let count = usable.clone().count();
        match usable.nth(turn % count.max(1)) {
            Some(route) => Ok(route),
            None => Err(HttpError::new(
                Kind::Bind,
                unreachable_by_binds(&self.senders, host),
            )),
        }
    }

    /// Send one request as it is (no redirects followed).
    async fn execute(
        &self,
        mut request: Request,
        body: WriteBody,
    ) -> std::result::Result<Response, HttpError> {
        let url = request.url().clone();
        let route = self.next(host_address(&url))?;
        let uri: hyper::Uri = url
            .as_str()
            .parse()
            .map_err(|e| HttpError::new(Kind::Builder, e))?;
        let length = body.length();
        let body = match body {
            WriteBody::Memory(bytes) => Full::new(bytes)
                .map_err(|never| match never {})
                .boxed_unsync(),
            streamed => StreamBody::new(streamed.open().map_ok(Frame::data)).boxed_unsync(),
        };
        let mut sent = hyper::Request::new(body);
        *sent.method_mut() = request.method().clone();
        *sent.uri_mut() = uri;
        // Moved, not copied: the request is consumed here.
        *sent.headers_mut() = std::mem::take(request.headers_mut());
        if length > 0 {
            // A stream's length is unknown to hyper, which would send it chunked: S3 wants
            // the length, and hyper fails a body that ends short of it or runs past it.
            sent.headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(length));
        }
        sent.headers_mut()
            .entry(USER_AGENT)
            .or_insert(HeaderValue::from_static(concat!(
                "parabyte/",
                env!("CARGO_PKG_VERSION")
            )));
        let wanting = route.demand.want(sent.uri());
        let sending = Wanting::scope(wanting.as_ref(), route.sender.request(sent));
        let answer = tokio::time::timeout(self.read_timeout, sending).await;
        if let Some(wanting) = &wanting {
            wanting.answered();
        }
        let answer = answer.map_err(|_| HttpError::timed_out())?.map_err(|e| {
            let kind = if e.is_connect() {
                Kind::Connect
            } else {
                Kind::Request
            };
            HttpError::new(kind, e)
        })?;
        let (head, body) = answer.into_parts();
        Ok(Response {
            status: head.status,
            headers: head.headers,
            url,
            body,
            wanting,
            read_timeout: self.read_timeout,
        })
    }
}

/// One response: its head, and its body still to be read.
#[derive(Debug)]
pub(crate) struct Response {
    status: StatusCode,
    headers: HeaderMap,
    url: Url,
    body: Incoming,
    /// The request's place in its host's demand for connections, until the body is read
    /// or dropped.
    wanting: Option<Wanting>,
    read_timeout: Duration,
}

impl Response {
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    pub(crate) fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The URL this response answered (after redirects: the last hop's).
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    /// The body, chunk by chunk as the connection read it (at most twice [`READ_BUFFER`]).
    pub(crate) fn bytes_stream(
        self,
    ) -> Pin<Box<dyn Stream<Item = std::result::Result<Bytes, HttpError>> + Send>> {
        let read_timeout = self.read_timeout;
        // The stream's state carries the request's place, given back at the body's end.
        Box::pin(futures::stream::try_unfold(
            (self.body, self.wanting),
            move |(mut body, wanting)| async move {
                loop {
                    let frame = tokio::time::timeout(read_timeout, body.frame())
                        .await
                        .map_err(|_| HttpError::timed_out())?;
                    match frame {
                        None => return Ok(None),
                        Some(Err(error)) => return Err(HttpError::new(Kind::Body, error)),
                        // Trailers carry nothing parabyte reads.
                        Some(Ok(frame)) => {
                            if let Ok(data) = frame.into_data() {
                                return Ok(Some((data, (body, wanting))));
                            }
                        }
                    }
                }
            },
        ))
    }
}

/// Why a request got no (whole) response.
#[derive(Debug)]
pub(crate) struct HttpError {
    kind: Kind,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The request could not be made (a URL hyper cannot take): never sent.
    Builder,
    /// No connection: never sent.
    Connect,
    /// No `--bind` address can reach the host: never sent.
    Bind,
    /// Sent, and the response head never came whole.
    Request,
    /// The body broke off.
    Body,
    TimedOut,
}

impl HttpError {
    fn new(kind: Kind, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        HttpError {
            kind,
            source: Some(source.into()),
        }
    }

    fn timed_out() -> Self {
        HttpError {
            kind: Kind::TimedOut,
            source: None,
        }
    }

    fn is_connect(&self) -> bool {
        self.kind == Kind::Connect
    }

    fn is_builder(&self) -> bool {
        matches!(self.kind, Kind::Builder | Kind::Bind)
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.kind {
            Kind::Builder => "cannot make the request",
            Kind::Connect => "could not connect",
            Kind::Bind => "cannot send from the --bind addresses",
            Kind::Request => "request failed",
            Kind::Body => "connection broke while reading the body",
            Kind::TimedOut => "timed out",
        })
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

/// reqwest's builder fails only on a request it cannot make.
impl From<reqwest::Error> for HttpError {
    fn from(error: reqwest::Error) -> Self {
        HttpError::new(Kind::Builder, error)
    }
}

fn read_ca_bundle(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let pem = std::fs::read(path).map_err(|e| Error::io("cannot read CA bundle", path, e))?;
    let invalid = |e: &dyn std::fmt::Display| {
        Error::InvalidInput(format!(
            "CA bundle '{}' is not valid PEM: {e}",
            path.display()
        ))
    };
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| invalid(&e))?;
    if certs.is_empty() {
        return Err(invalid(&"no certificate in it"));
    }
    Ok(certs)
}

/// TLS trusting `roots`: the system's and the `--ca-bundle` ones, read at the first
/// handshake or ahead of it.
fn tls_config(
    roots: Arc<TrustedRoots>,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<rustls::ClientConfig> {
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::InvalidInput(format!("cannot set up TLS for the HTTP client: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(roots)
        .with_no_client_auth())
}

/// A bind address that is not this machine's would fail every connection with the same
/// error; say so once, up front.
/// A local address to send from must name one interface of this machine, of a family the
/// endpoint has (when the endpoint is an address).
fn check_local_address(address: IpAddr, endpoint: Option<IpAddr>) -> Result<()> {
    let refuse = |why: String| {
        Error::InvalidInput(format!(
            "--bind {address}: {why}; give addresses of this machine's network interfaces"
        ))
    };
    let family = |ip: IpAddr| if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    if address.is_unspecified() {
        return Err(refuse("the unspecified address names no interface".into()));
    }
    if address.is_multicast() {
        return Err(refuse(
            "a multicast address cannot open a connection".into(),
        ));
    }
    if matches!(address, IpAddr::V4(v4) if v4.is_broadcast()) {
        return Err(refuse(
            "the broadcast address cannot open a connection".into(),
        ));
    }
    if let Some(endpoint) = endpoint.filter(|endpoint| endpoint.is_ipv4() != address.is_ipv4()) {
        return Err(refuse(format!(
            "the endpoint {endpoint} is {}, and an {} address cannot reach it",
            family(endpoint),
            family(address)
        )));
    }
    std::net::TcpListener::bind((address, 0))
        .map(drop)
        .map_err(|e| refuse(format!("cannot send from this address ({e})")))
}

/// The endpoint's address, when the endpoint URL names one rather than a host name.
fn endpoint_address(config: &StoreConfig) -> Option<IpAddr> {
    host_address(&reqwest::Url::parse(config.endpoint_url.as_deref()?).ok()?)
}

/// A URL's host, when it is an address rather than a name.
fn host_address(url: &Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Why no `--bind` address reaches `host`, worded as [`check_local_address`] words it.
fn unreachable_by_binds(senders: &[Route], host: Option<IpAddr>) -> String {
    let bound: Vec<String> = senders
        .iter()
        .filter_map(|route| route.bound.map(|address| address.to_string()))
        .collect();
    let family = |ip: IpAddr| if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    match host {
        Some(host) => format!(
            "--bind {}: the host {host} is {}, and no address given is; give one of its family",
            bound.join(","),
            family(host)
        ),
        None => format!(
            "--bind {}: no address given reaches the host",
            bound.join(",")
        ),
    }
}

fn build_sender(
    config: &StoreConfig,
    counters: Arc<Counters>,
    tls: rustls::ClientConfig,
    local_address: Option<IpAddr>,
) -> Route {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(config.connect_timeout));
    tcp.set_local_address(local_address);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        // One range per connection is the point of parallel byte serving; HTTP/2 would
        // multiplex them onto one connection and its one congestion window.
        .enable_http1()
        .wrap_connector(tcp);
    let shared = SharedReads {
        connector,
        buffers: counters.body_buffers.clone(),
    };
    let demand = Arc::new(ConnectionDemand::default());
    let on_demand = OnDemand {
        inner: shared,
        demand: demand.clone(),
    };
    // No proxies: none was ever read from the environment. Redirects are not followed by
    // the client (`send_following` does, without secrets).
    let mut builder = hyper_util::client::legacy::Client::builder(TokioExecutor::new());
    builder
        .pool_max_idle_per_host(1024)
        .pool_timer(TokioTimer::new());
    match counters.body_buffers.fixed_read() {
        Some(size) => builder.http1_read_buf_exact_size(size),
        None => builder.http1_max_buf_size(READ_BUFFER),
    };
    let sender = builder.build(CountConnections {
        inner: on_demand,
        counters,
    });
    Route {
        bound: local_address,
        sender,
        demand,
    }
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
) -> std::result::Result<Response, HttpError> {
    for _ in 0..MAX_REDIRECTS {
        // Bodiless requests always clone; the copy is what the next hop is made from.
        let sent = request.try_clone();
        let response = send_counted(http, request, WriteBody::default(), counters, kind).await?;
        match (sent, redirect_target(&response)) {
            (Some(sent), Some(next)) => request = next_hop(sent, next),
            _ => return Ok(response),
        }
    }
    // Still redirected after the last hop: the caller reports the 3xx it got.
    send_counted(http, request, WriteBody::default(), counters, kind).await
}

/// Send a request with `body` (empty for a GET) as it is, following no redirect: a 3xx is
/// the answer.
pub(crate) async fn send_once(
    http: &HttpClient,
    request: Request,
    body: WriteBody,
    counters: &Counters,
    kind: RequestKind,
) -> std::result::Result<Response, HttpError> {
    send_counted(http, request, body, counters, kind).await
}

async fn send_counted(
    http: &HttpClient,
    request: Request,
    body: WriteBody,
    counters: &Counters,
    kind: RequestKind,
) -> std::result::Result<Response, HttpError> {
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
    let result = http.execute(request, body).await;
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

/// The connector, counting the connections it established.
#[derive(Clone, Debug)]
struct CountConnections<S> {
    inner: S,
    counters: Arc<Counters>,
}

impl<S, R> tower_service::Service<R> for CountConnections<S>
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
pub(crate) fn transport_error(what: &str, error: &HttpError, endpoint: &str) -> Error {
    // A streamed body stops the request when its file changed: that, not the connection,
    // is what failed, and sending it again would not help.
    if let Some(Error::FileChanged { path, detail }) = body_failure(error) {
        return Error::FileChanged {
            path: path.clone(),
            detail: detail.clone(),
        };
    }
    let detail = describe(error);
    let what = what.to_owned();
    if error.kind == Kind::Bind {
        let why = error.source.as_deref().map(ToString::to_string);
        return Error::InvalidInput(format!("{what}: {}", why.unwrap_or(detail)));
    }
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

/// The error a request's own body failed with, when that is what stopped it.
fn body_failure(error: &HttpError) -> Option<&Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> =
        error.source.as_deref().map(|e| e as _);
    while let Some(now) = cause {
        if let Some(ours) = now.downcast_ref::<Error>() {
            return Some(ours);
        }
        cause = now.source();
    }
    None
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
pub(crate) fn describe(error: &HttpError) -> String {
    with_causes(error.to_string(), error)
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

#[cfg(test)]
mod read_buffer {
    use super::*;
    use crate::body_buffers::SMALLEST_SHARE;
    use futures::TryStreamExt;
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    const BODY: usize = 8 << 20;

    /// The largest body chunk of an 8 MiB response sent in one write, and the bytes that
    /// arrived, through a client whose counters are `counters`: over TCP, or over TLS when
    /// `tls` names the server's certificate and key.
    async fn largest_chunk(
        counters: Arc<Counters>,
        tls: Option<TestCertificate>,
    ) -> (usize, usize) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let acceptor = tls.as_ref().map(TestCertificate::acceptor);
        let server = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            match acceptor {
                Some(acceptor) => answer_big(acceptor.accept(socket).await.unwrap()).await,
                None => answer_big(socket).await,
            }
        });
        let (scheme, config) = match &tls {
            Some(certificate) => ("https", certificate.trusting()),
            None => ("http", StoreConfig::default()),
        };
        let http = HttpClient::new(&config, counters).unwrap();
        let request = http
            .get(format!("{scheme}://{address}/big"))
            .build()
            .unwrap();
        let response = http.execute(request, WriteBody::default()).await.unwrap();
        let (mut total, mut largest) = (0, 0);
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.try_next().await.unwrap() {
            total += chunk.len();
            largest = largest.max(chunk.len());
        }
        server.await.unwrap();
        (total, largest)
    }

    /// Read the GET (one small request arrives in one read on loopback; its content does
    /// not matter) and answer with [`BODY`] bytes in one write.
    async fn answer_big(mut socket: impl AsyncRead + AsyncWrite + Unpin) {
        let mut head = vec![0; 4096];
        let _ = socket.read(&mut head).await.unwrap();
        let mut answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {BODY}\r\n\r\n").into_bytes();
        answer.resize(answer.len() + BODY, b'x');
        socket.write_all(&answer).await.unwrap();
        socket.shutdown().await.unwrap();
    }

    /// A self-signed certificate for 127.0.0.1, written where a client can be told to trust it.
    struct TestCertificate {
        certified: rcgen::CertifiedKey<rcgen::KeyPair>,
        pem: tempfile::NamedTempFile,
    }

    impl TestCertificate {
        fn new() -> TestCertificate {
            let certified = rcgen::generate_simple_self_signed(["127.0.0.1".to_owned()]).unwrap();
            let pem = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(pem.path(), certified.cert.pem()).unwrap();
            TestCertificate { certified, pem }
        }

        fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
            let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            let key = rustls::pki_types::PrivateKeyDer::try_from(
                self.certified.signing_key.serialize_der(),
            )
            .unwrap();
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![self.certified.cert.der().clone()], key)
                .unwrap();
            tokio_rustls::TlsAcceptor::from(Arc::new(config))
        }

        fn trusting(&self) -> StoreConfig {
            StoreConfig {
                ca_bundle: Some(self.pem.path().to_path_buf()),
                ..StoreConfig::default()
            }
        }
    }

    /// A server that sends a large body in one write fills a connection's read buffer as
    /// fast as it is read: hyper then grows it (to ~400 KiB), and every chunk handed on
    /// keeps that much alive. The cap holds however fast the bytes come.
    #[tokio::test]
    async fn no_body_chunk_is_larger_than_the_read_buffer() {
        let (total, largest) = largest_chunk(Arc::default(), None).await;
        assert_eq!(total, BODY);
        assert!(largest <= 2 * READ_BUFFER, "a chunk of {largest} bytes");
    }

    /// With 64 other connections open, this one reads its share of the body-buffer budget
    /// at a time: the smallest.
    async fn reads_its_share_among_many(tls: Option<TestCertificate>) {
        let counters = Arc::new(Counters::default());
        let others: Vec<_> = (0..64).map(|_| counters.body_buffers.open()).collect();
        let (total, largest) = largest_chunk(counters.clone(), tls).await;
        assert_eq!(total, BODY);
        let share = counters.body_buffers.share();
        assert_eq!(share, SMALLEST_SHARE);
        assert!(
            largest <= share,
            "a chunk of {largest} bytes, the share {share}"
        );
        drop(others);
    }

    /// A run in which one object may hold 64 connections reads the smallest share at a
    /// time from its first connection on: hyper's buffer stays that size.
    #[tokio::test]
    async fn a_run_planned_for_many_connections_reads_the_smallest_share_alone_too() {
        let counters = Arc::new(Counters::for_connections_per_object(64));
        let (total, largest) = largest_chunk(counters.clone(), None).await;
        assert_eq!(total, BODY);
        assert_eq!(
            counters.body_buffers.share(),
            READ_BUFFER,
            "alone, the largest share"
        );
        assert!(largest <= SMALLEST_SHARE, "a chunk of {largest} bytes");
    }

    #[tokio::test]
    async fn a_connection_among_many_reads_its_share() {
        reads_its_share_among_many(None).await;
    }

    /// The share caps what HTTP reads from TLS, not what TLS reads from TCP: rustls hands
    /// on all it has decrypted, whatever its own reads were.
    #[tokio::test]
    async fn a_tls_connection_among_many_reads_its_share() {
        reads_its_share_among_many(Some(TestCertificate::new())).await;
    }
}
