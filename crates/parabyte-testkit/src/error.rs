use std::time::Duration;

use crate::kind::ServerKind;

/// Everything that can go wrong while setting up a test: each variant says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{binary} is not installed (looked in {searched}); run scripts/install-test-servers.sh"
    )]
    ToolMissing {
        binary: &'static str,
        searched: String,
    },

    #[error("could not start {binary}: {source}")]
    Spawn {
        binary: &'static str,
        source: std::io::Error,
    },

    #[error("{kind} exited during startup ({status}); its log:\n{log_excerpt}")]
    ServerExited {
        kind: ServerKind,
        status: String,
        log_excerpt: String,
    },

    #[error(
        "{kind} did not answer S3 requests within {waited:?} (last error: {last_error}); \
         its log:\n{log_excerpt}"
    )]
    ServerTimeout {
        kind: ServerKind,
        waited: Duration,
        last_error: String,
        log_excerpt: String,
    },

    /// nginx (the test web server) did not come up.
    #[error("{0}")]
    WebServer(String),

    #[error("{method} {url} answered {status}: {body}")]
    Status {
        method: http::Method,
        url: String,
        status: http::StatusCode,
        body: String,
    },

    #[error("{method} {url} failed: {message}")]
    Transport {
        method: http::Method,
        url: String,
        message: String,
    },

    #[error("{method} {url} timed out after {after:?}")]
    Timeout {
        method: http::Method,
        url: String,
        after: Duration,
    },

    #[error("could not sign {method} {url}: {message}")]
    Signing {
        method: http::Method,
        url: String,
        message: String,
    },

    /// Making a test server's certificates, or reading a CA PEM for a client, went wrong.
    #[error("{0}")]
    Certificate(String),

    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
