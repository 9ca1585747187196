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

    /// The store cannot do what was asked of it at all (a web server cannot list keys).
    #[error("{store} cannot {operation}; use a store that can, or leave out what needs it")]
    Unsupported {
        /// The store, e.g. `a web server`.
        store: &'static str,
        /// What was asked, e.g. `list keys`.
        operation: String,
    },

    /// The object or key does not exist.
    #[error("{what}: not found ({detail}); check the spelling of the bucket, key, prefix or URL")]
    NotFound {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
    },

    /// A prefix or a pattern under which no object matched: nothing to copy.
    #[error("{what}: {detail}")]
    NothingMatched {
        /// The source as the user wrote it, e.g. `s3://bucket/imgs/*.jpg`.
        what: String,
        /// What was looked at, and what to try.
        detail: String,
    },

    /// `s3://bucket/name` is no object, but `name/` is a prefix with objects under it.
    #[error("{url}: no such object, but {url}/ holds objects; add '/' ({url}/) or --recursive to copy them")]
    IsPrefix {
        /// The source as the user wrote it.
        url: String,
    },

    /// `rm` named a key that is not there, but keys lie under it as a prefix: deleting more
    /// than the one key named takes --recursive.
    #[error("{url}: no such key, so nothing was deleted; keys lie under the prefix {prefix}: add --recursive to delete them all")]
    PrefixNotKey {
        /// The key as the user wrote it.
        url: String,
        /// The prefix the keys lie under, e.g. `s3://bucket/dir/`.
        prefix: String,
    },

    /// The bucket itself does not exist: nothing can be fetched from it.
    #[error(
        "bucket '{bucket}' does not exist ({detail}); check the name and --endpoint-url/--region"
    )]
    NoSuchBucket {
        /// The bucket named in the request.
        bucket: String,
        /// What the server or the system said.
        detail: String,
    },

    /// A bucket to create exists already: the caller's own, or another account's (bucket
    /// names are shared by every account of a store).
    #[error("bucket '{bucket}' already exists{}", if *yours {
        " and is yours; nothing was changed"
    } else {
        " and belongs to another account (a bucket's name is taken store-wide); choose another name"
    })]
    BucketExists {
        /// The bucket named.
        bucket: String,
        /// The bucket is the caller's own.
        yours: bool,
    },

    /// A bucket to remove still holds objects: it was kept, with everything in it.
    #[error("bucket '{bucket}' is not empty, so it was kept; delete its objects first, or pass --force to delete every object and then the bucket")]
    BucketNotEmpty {
        /// The bucket named.
        bucket: String,
    },

    /// The store refused access to this object or bucket.
    #[error("{what}: access denied ({detail}); {}", if *anonymous {
        "the request was anonymous (--no-sign-request): give credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or --profile) instead"
    } else {
        "check the credentials' permissions or try --no-sign-request for a public bucket (a requester-pays bucket needs --request-payer requester)"
    })]
    PermissionDenied {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
        /// The request was sent without a signature.
        anonymous: bool,
    },

    /// The credentials were rejected as a whole (unknown key, bad secret, expired token).
    #[error("{what}: credentials rejected ({detail}); check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, --profile, or refresh your session")]
    BadCredentials {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
    },

    /// No credentials could be found in the standard chain.
    #[error("no AWS credentials found ({0}); set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, use --profile, or pass --no-sign-request for a public bucket")]
    NoCredentials(String),

    /// The object changed while it was being downloaded (its ETag or size moved).
    #[error("{what}: the object changed during the download ({detail}); run the command again to fetch the new version")]
    Changed {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
    },

    /// A write with `--no-clobber` met an object already under its key, which was kept.
    #[error("{what}: an object is already there and --no-clobber keeps it; leave out --no-clobber to replace it")]
    Exists {
        /// The object it is about, e.g. `s3://bucket/key`.
        what: String,
    },

    /// A local file changed while it was read for an upload: nothing was stored under its key.
    #[error("{}: the file changed while it was uploaded ({detail}); nothing was stored under its key, run the command again once it is written", path.display())]
    FileChanged {
        /// The file read.
        path: PathBuf,
        /// What moved.
        detail: String,
    },

    /// The request for the checksum the store keeps failed while the object's bytes came:
    /// the object is not saved on a weaker check than the store offers.
    #[error("{what}: the checksum the store keeps could not be read ({detail}); nothing was saved: run the command again, or pass --no-verify to save it checked by its size alone")]
    ChecksumUnavailable {
        /// The object, e.g. `s3://bucket/key`.
        what: String,
        /// Why the request failed.
        detail: String,
    },

    /// The object lives in an archive tier (GLACIER, DEEP_ARCHIVE, Intelligent-Tiering's
    /// archive tiers) and was not restored: no request can read it until it is.
    #[error("{what}: the object is archived and not restored ({detail}); restore it first (aws s3api restore-object), or pass --ignore-glacier-warnings to pass archived objects over without failing")]
    Archived {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the store said.
        detail: String,
    },

    /// The bytes received are not the object's: a checksum or the MD5 in the ETag disagrees.
    #[error("{what}: content check failed: {detail}; nothing was saved, run the command again to fetch it anew")]
    Corrupt {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
    },

    /// The store declares a checksum that cannot be laid over the bytes received (its value
    /// is none, or its parts do not add up to the object): the bytes cannot be vouched for.
    #[error("{what}: the store declares a checksum it cannot be checked by: {detail}; nothing was saved. Tell the store's operator; --no-verify accepts the size alone")]
    Uncheckable {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What is wrong with the checksum.
        detail: String,
    },

    /// A value a listing, a manifest or a store's answer gave for one object that parabyte
    /// will not use: a size beyond any object, an ETag no request can carry. That object
    /// fails alone; no buffer is sized and no request is signed with it.
    #[error(
        "{what}: {detail}; the other objects go on. Check the manifest or listing it came from"
    )]
    Unusable {
        /// The object it is about, e.g. `s3://bucket/key`.
        what: String,
        /// What is wrong with the value.
        detail: String,
    },

    /// The store asked us to slow down.
    #[error("{what}: the store is throttling requests ({detail})")]
    Throttled {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
    },

    /// Any other HTTP failure status.
    #[error("{what}: HTTP {status} ({detail})")]
    Http {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// The HTTP status code.
        status: u16,
        /// What the server or the system said.
        detail: String,
    },

    /// The server's certificate is not trusted: retrying cannot help.
    #[error("{what}: TLS certificate not trusted ({detail}); if the store uses a private CA, pass its certificate with --ca-bundle or AWS_CA_BUNDLE")]
    UntrustedCertificate {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
    },

    /// No connection can be made however often it is tried: the host name does not resolve,
    /// the TLS handshake fails, or the server speaks plain HTTP to an `https://` URL.
    #[error("{what}: cannot connect: {detail}")]
    CannotConnect {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What is wrong and what to write instead.
        detail: String,
    },

    /// The connection failed, reset, or timed out.
    #[error("{what}: network error: {detail}")]
    Network {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
    },

    /// The server answered something that breaks the protocol (bad Content-Range, short body).
    #[error("{what}: unexpected response: {detail}")]
    Protocol {
        /// The request or object it is about, e.g. `GET s3://bucket/key`.
        what: String,
        /// What the server or the system said.
        detail: String,
    },

    /// A listing the store broke off or garbled; the keys it listed before are downloaded or
    /// reported, the keys after are unknown.
    #[error("listing s3://{bucket}/{prefix} cannot go on: {detail}; keys after this point were not listed")]
    BadListing {
        /// The bucket being listed.
        bucket: String,
        /// The prefix being listed.
        prefix: String,
        /// What was wrong with the listing.
        detail: String,
    },

    /// A key with a `.` or `..` path segment: URL libraries remove those segments (encoded
    /// or not) before a request is sent, so the request would name another object.
    #[error("key '{key}' cannot be requested: it has a '{segment}' path segment, which URL normalisation removes before sending, so another object would be fetched instead")]
    UnrequestableKey {
        /// The key as the user or the listing gave it.
        key: String,
        /// The segment (`.` or `..`) that URL normalisation would remove.
        segment: String,
    },

    /// A key that cannot be written safely under the destination directory.
    #[error("key '{key}' cannot be saved as a file: {reason}; download it on its own with an explicit destination file")]
    UnsafeKey {
        /// The key as listed.
        key: String,
        /// Why the key cannot be a path.
        reason: String,
    },

    /// A key and a "folder" of the same name: a file and a directory cannot share a path.
    #[error("key '{key}' collides with key '{other}': one needs '{path}' to be a file, the other a directory; download one of them to another destination")]
    Collision {
        /// The key as listed.
        key: String,
        /// The key that wants the same path as a directory (or a file).
        other: String,
        /// The path both keys need.
        path: String,
    },

    /// A local file operation failed.
    #[error("{op} '{}': {source}", path.display())]
    Io {
        /// What was being done, e.g. "cannot create".
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },

    /// A retryable failure kept happening until the retry budget ran out.
    #[error("{last} (gave up after {attempts} attempts in {:.1}s)", elapsed.as_secs_f64())]
    GaveUp {
        /// Requests sent, the first included.
        attempts: u32,
        /// Time from the first attempt to giving up.
        elapsed: Duration,
        /// The last failure.
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
            | Error::UntrustedCertificate { .. }
            | Error::CannotConnect { .. }
            | Error::Unsupported { .. } => true,
            Error::GaveUp { last, .. } => last.is_fatal(),
            _ => false,
        }
    }

    /// The one rule of what a failed transfer keeps for the next run of the same command,
    /// both ways (a download's temporary file and journal, an upload's recorded parts):
    /// after a failure the network or the store may get past (one a retry could fix, or
    /// retries that ran out), what was moved stays; after any other (a changed source, a
    /// refusal, a wrong answer) it goes.
    pub(crate) fn keeps_progress(&self) -> bool {
        self.is_retryable() || matches!(self, Error::GaveUp { .. })
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
            Error::NotFound { .. }
            | Error::NoSuchBucket { .. }
            | Error::NothingMatched { .. }
            | Error::IsPrefix { .. }
            | Error::PrefixNotKey { .. } => true,
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

/// `head`, then each cause of `error` after a `: `: the chain is what says which sources
/// were tried and what the system answered.
pub(crate) fn with_causes(mut head: String, error: &dyn std::error::Error) -> String {
    let mut source = error.source();
    while let Some(cause) = source {
        head.push_str(": ");
        head.push_str(&cause.to_string());
        source = cause.source();
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_uncheckable_object_fails_alone_and_says_how_to_accept_its_size() {
        let error = Error::Uncheckable {
            what: "GET s3://b/k".into(),
            detail: "the store declares a CRC32 checksum whose value is none".into(),
        };
        let message = error.to_string();
        assert!(message.starts_with("GET s3://b/k: "), "{message}");
        assert!(message.contains("--no-verify"), "{message}");
        assert!(message.contains("nothing was saved"), "{message}");
        // Asking again gets the same header: no retry; the other objects go on.
        assert!(!error.is_retryable() && !error.is_fatal());
    }
}
