//! The shared HTTP client: pooled keep-alive HTTP/1.1 connections over rustls, with a
//! counter on the connector so the summary can say how many connections were opened.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::config::StoreConfig;
use crate::counters::Counters;
use crate::error::{Error, Result};

/// Build the client every request of a run goes through.
pub(crate) fn build_client(
    config: &StoreConfig,
    counters: Arc<Counters>,
) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        // One range per connection is the point of parallel byte serving; HTTP/2 would
        // multiplex them onto one connection and its one congestion window.
        .http1_only()
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .connect_timeout(config.connect_timeout)
        .read_timeout(config.read_timeout)
        .redirect(reqwest::redirect::Policy::limited(10))
        .no_proxy()
        .user_agent(concat!("parabyte/", env!("CARGO_PKG_VERSION")))
        .connector_layer(CountConnections { counters });
    if let Some(path) = &config.ca_bundle {
        let pem = std::fs::read(path).map_err(|e| Error::io("cannot read CA bundle", path, e))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
            Error::InvalidInput(format!(
                "CA bundle '{}' is not valid PEM: {e}",
                path.display()
            ))
        })?;
        builder = builder.tls_certs_merge(certs);
    }
    builder
        .build()
        .map_err(|e| Error::InvalidInput(format!("cannot set up the HTTP client: {e}")))
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

/// The error for a request that failed before any response: a certificate problem (fatal:
/// no retry can fix it) or a network failure (retryable).
pub(crate) fn transport_error(what: &str, error: &reqwest::Error, endpoint: &str) -> Error {
    let detail = describe(error);
    if detail.contains("certificate") {
        Error::UntrustedCertificate {
            what: what.to_owned(),
            detail: format!("{detail} ({endpoint})"),
        }
    } else {
        Error::Network {
            what: what.to_owned(),
            detail: format!("{detail} ({endpoint})"),
        }
    }
}

/// Describe a transport error without leaking the URL's query (presigned signatures live there).
pub(crate) fn describe(error: &reqwest::Error) -> String {
    let mut text = if error.is_timeout() {
        "timed out".to_owned()
    } else if error.is_connect() {
        "could not connect".to_owned()
    } else if error.is_body() || error.is_decode() {
        "connection broke while reading the body".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
