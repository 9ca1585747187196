//! One error type for the whole engine. Each kind says what the caller can do about it,
//! and every message names the object or request it is about.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong in a transfer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The source URL, a size, or an option is malformed (or, like the region, wrong for the store).
    #[error("{0}")]
    InvalidInput(String),

    /// The object or key does not exist.
    #[error("{what}: not found ({detail}); check the spelling of the bucket, key, prefix or URL")]
    NotFound { what: String, detail: String },

    /// The bucket itself does not exist: nothing can be fetched from it.
    #[error(
        "bucket '{bucket}' does not exist ({detail}); check the name and --endpoint-url/--region"
    )]
    NoSuchBucket { bucket: String, detail: String },

    /// The store refused access to this object or bucket.
    #[error("{what}: access denied ({detail}); check the credentials' permissions or try --no-sign-request for a public bucket")]
    PermissionDenied { what: String, detail: String },

    /// The credentials were rejected as a whole (unknown key, bad secret, expired token).
    #[error("{what}: credentials rejected ({detail}); check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, --profile, or refresh your session")]
    BadCredentials { what: String, detail: String },

    /// No credentials could be found in the standard chain.
    #[error("no AWS credentials found ({0}); set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, use --profile, or pass --no-sign-request for a public bucket")]
    NoCredentials(String),

    /// The object changed while it was being downloaded (its ETag or size moved).
    #[error("{what}: the object changed during the download ({detail}); run the command again to fetch the new version")]
    Changed { what: String, detail: String },

    /// The bytes received are not the object's: a checksum or the MD5 in the ETag disagrees.
    #[error("{what}: content check failed: {detail}; nothing was saved, run the command again to fetch it anew")]
    Corrupt { what: String, detail: String },

    /// The store asked us to slow down.
    #[error("{what}: the store is throttling requests ({detail})")]
    Throttled { what: String, detail: String },

    /// Any other HTTP failure status.
    #[error("{what}: HTTP {status} ({detail})")]
    Http {
        what: String,
        status: u16,
        detail: String,
    },

    /// The server's certificate is not trusted: retrying cannot help.
    #[error("{what}: TLS certificate not trusted ({detail}); if the store uses a private CA, pass its certificate with --ca-bundle or AWS_CA_BUNDLE")]
    UntrustedCertificate { what: String, detail: String },

    /// The connection failed, reset, or timed out.
    #[error("{what}: network error: {detail}")]
    Network { what: String, detail: String },

    /// The server answered something that breaks the protocol (bad Content-Range, short body).
    #[error("{what}: unexpected response: {detail}")]
    Protocol { what: String, detail: String },

    /// A key that cannot be written safely under the destination directory.
    #[error("key '{key}' cannot be saved as a file: {reason}; download it on its own with an explicit destination file")]
    UnsafeKey { key: String, reason: String },

    /// A key and a "folder" of the same name: a file and a directory cannot share a path.
    #[error("key '{key}' collides with key '{other}': one needs '{path}' to be a file, the other a directory; download one of them to another destination")]
    Collision {
        key: String,
        other: String,
        path: String,
    },

    /// A local file operation failed.
    #[error("{op} '{}': {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A retryable failure kept happening until the retry budget ran out.
    #[error("{last} (gave up after {attempts} attempts in {:.1}s)", elapsed.as_secs_f64())]
    GaveUp {
        attempts: u32,
        elapsed: Duration,
        last: Box<Error>,
    },
}

impl Error {
    /// Errors after which no other object can succeed either: stop the whole run.
    pub fn is_fatal(&self) -> bool {
        match self {
            Error::InvalidInput(_)
            | Error::NoSuchBucket { .. }
            | Error::BadCredentials { .. }
            | Error::NoCredentials(_)
            | Error::UntrustedCertificate { .. } => true,
            Error::GaveUp { last, .. } => last.is_fatal(),
            _ => false,
        }
    }

    /// Failures that a later attempt of the same request may not meet.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Error::Throttled { .. } | Error::Network { .. } => true,
            Error::Http { status, .. } => *status >= 500,
            // A short or garbled body is usually a connection cut mid-stream.
            Error::Protocol { .. } => true,
            _ => false,
        }
    }

    /// True when the object is absent (maps to FileNotFoundError in Python).
    pub fn is_not_found(&self) -> bool {
        match self {
            Error::NotFound { .. } | Error::NoSuchBucket { .. } => true,
            Error::GaveUp { last, .. } => last.is_not_found(),
            _ => false,
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
