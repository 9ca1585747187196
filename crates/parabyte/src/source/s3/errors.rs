//! How the store says no: a failed response's body read (bounded) and classified, the one
//! function (`classify`) where an HTTP status and S3 error code become an [`Error`] kind, and
//! the answers that say a bucket lives in another region.
//!
//! [`Error`]: crate::error::Error

use futures::TryStreamExt;
use reqwest::StatusCode;

use super::xml::{self, ErrorDocument};
use crate::error::{Error, Result};
use crate::source::http_client::Response;

/// Error bodies are small; never buffer more than this of one.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// What the first answer to a request says about the region it was signed for.
pub(super) enum RegionCheck {
    /// Nothing about the region: the caller reads the answer.
    Answer(Box<Response>),
    /// The bucket lives in this other region: sign for it and ask again.
    Elsewhere(String),
}

/// Read a failed response's body (bounded) and classify it.
pub(super) async fn error_from_response(
    response: Response,
    what: &str,
    bucket: &str,
    anonymous: bool,
) -> Error {
    let status = response.status().as_u16();
    let error = read_error(response).await;
    classify(status, &error.code, &error.message, what, bucket, anonymous)
}

/// The error document of a failed response, read up to [`MAX_ERROR_BODY`] bytes.
pub(super) async fn read_error(response: Response) -> ErrorDocument {
    xml::parse_error(&read_bounded_body(response).await).unwrap_or_default()
}

/// The body of a failed response, or of a small answer (an upload ID), up to
/// [`MAX_ERROR_BODY`] bytes.
pub(super) async fn read_bounded_body(response: Response) -> Vec<u8> {
    read_body_up_to(response, MAX_ERROR_BODY).await
}

/// A body read up to `limit` bytes (what is past it is not read).
pub(super) async fn read_body_up_to(response: Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Ok(Some(chunk)) = stream.try_next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= limit {
            break;
        }
    }
    body
}

/// What [`Error::Unsupported`] names when a store refused checksum headers.
pub(super) const CHECKSUM_HEADERS: &str = "take checksum headers (x-amz-checksum-*)";

/// The error `S3Store::falling_back` takes for a refusal of checksum headers.
pub(super) fn checksum_refusal() -> Error {
    Error::Unsupported {
        store: "this S3 store",
        operation: CHECKSUM_HEADERS.to_owned(),
    }
}

/// Whether an error answer refuses a write's checksum headers. A PUT is implemented by
/// every store: a NotImplemented or an invalid argument that names a checksum is about the
/// headers (Cloudflare R2 once said "Header 'x-amz-checksum-algorithm' with value
/// 'CRC64NVME' not implemented"). A NotImplemented that says nothing is taken so too.
pub(super) fn refuses_checksums(status: u16, code: &str, message: &str) -> bool {
    let about_checksums = message.to_ascii_lowercase().contains("checksum");
    match code {
        "NotImplemented" => about_checksums || message.is_empty(),
        "InvalidArgument" | "InvalidRequest" | "UnsupportedHeader" => about_checksums,
        "" => status == 501,
        _ => false,
    }
}

/// What Go's HTTP server (MinIO's) answers a plain HTTP request on its TLS port.
const HTTP_TO_HTTPS: &[u8] = b"Client sent an HTTP request to an HTTPS server";

/// Whether an answer says the bucket lives in another region than `signed_for`, as S3
/// (301 PermanentRedirect, 400 AuthorizationHeaderMalformed, both with the
/// `x-amz-bucket-region` header), MinIO (400 with the header and `<Region>`) and versitygw
/// (400 with `<Region>`) say it. Another failure whose body had to be read is classified
/// here; one that refuses the checksum headers a write carried (`carried_checksums`) as
/// such, for the write to fall back to Content-MD5.
pub(super) async fn region_check(
    response: Response,
    signed_for: &str,
    (what, bucket): (&str, &str),
    anonymous: bool,
    carried_checksums: bool,
) -> Result<RegionCheck> {
    let endpoint = format!(
        "{}://{}",
        response.url().scheme(),
        response.url().authority()
    );
    let status = response.status().as_u16();
    if !matches!(status, 301 | 307 | 400) {
        return Ok(RegionCheck::Answer(Box::new(response)));
    }
    let header = response
        .headers()
        .get("x-amz-bucket-region")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body = read_bounded_body(response).await;
    if status == 400 && body.starts_with(HTTP_TO_HTTPS) {
        return Err(Error::CannotConnect {
            what: what.to_owned(),
            detail: format!(
                "the server at {endpoint} speaks HTTPS: use {}",
                endpoint.replacen("http://", "https://", 1)
            ),
        });
    }
    let error = xml::parse_error(&body).unwrap_or_default();
    let about_region = matches!(
        error.code.as_str(),
        "AuthorizationHeaderMalformed" | "PermanentRedirect"
    ) || (status != 400 && error.code.is_empty());
    let named = header.or(error.region.clone());
    match named {
        Some(region) if about_region && region != signed_for && is_region_name(&region) => {
            Ok(RegionCheck::Elsewhere(region))
        }
        _ if carried_checksums && refuses_checksums(status, &error.code, &error.message) => {
            Err(checksum_refusal())
        }
        _ => Err(classify(
            status,
            &error.code,
            &error.message,
            what,
            bucket,
            anonymous,
        )),
    }
}

/// A plausible region name (`eu-west-1`, a MinIO site's own name): nothing that could
/// change a host name or a header when signed or sent.
pub(super) fn is_region_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// The status an error code stands for when it comes inside a 200 (a complete, a copy, a
/// batch delete's key): an InternalError is a 500 in all but status, retried like one.
pub(super) fn status_of_code(code: &str) -> u16 {
    match code {
        "AccessDenied" => 403,
        "InternalError" | "ServiceUnavailable" => 500,
        "SlowDown" => 503,
        _ => 400,
    }
}

/// The error an `<Error>` document inside a 200 stands for.
pub(super) fn error_in_200(
    document: &ErrorDocument,
    what: &str,
    bucket: &str,
    anonymous: bool,
) -> Error {
    let status = status_of_code(&document.code);
    classify(
        status,
        &document.code,
        &document.message,
        what,
        bucket,
        anonymous,
    )
}

/// The one place an HTTP status and S3 error code become an [`Error`] kind.
/// `anonymous`: the request was sent unsigned (`--no-sign-request`), which a refusal's
/// hint must not suggest again.
pub(super) fn classify(
    status: u16,
    code: &str,
    message: &str,
    what: &str,
    bucket: &str,
    anonymous: bool,
) -> Error {
    let reason = StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let detail = match (code.is_empty(), message.is_empty()) {
        (true, _) => format!("{status} {reason}"),
        (false, true) => format!("{status} {code}"),
        (false, false) => format!("{status} {code}: {message}"),
    };
    let what = what.to_owned();
    match (status, code) {
        (_, "NoSuchBucket") => Error::NoSuchBucket {
            bucket: bucket.to_owned(),
            detail,
        },
        // versitygw answers an unknown access key with 404 XAdminUserNotFound.
        (
            _,
            "InvalidAccessKeyId"
            | "SignatureDoesNotMatch"
            | "ExpiredToken"
            | "InvalidToken"
            | "TokenRefreshRequired"
            | "XAdminUserNotFound",
        ) => Error::BadCredentials { what, detail },
        // How S3, MinIO and versitygw refuse a signature made for another region: every request
        // would be refused alike, so it stops the run like any other wrong option.
        // Only when the answer did not say which region (else the request was signed again).
        (_, "AuthorizationHeaderMalformed" | "PermanentRedirect") | (301, "") => {
            Error::InvalidInput(format!(
                "{what}: the store is in another region ({detail}); set its region with --region or AWS_REGION"
            ))
        }
        (_, "PreconditionFailed") | (412, _) => Error::Changed { what, detail },
        // A GET (InvalidObjectState) or a copy's source (ObjectNotInActiveTierError) in an
        // archive tier: every attempt meets it until the object is restored.
        (_, "InvalidObjectState" | "ObjectNotInActiveTierError") => {
            Error::Archived { what, detail }
        }
        (_, "SlowDown" | "Throttling" | "RequestLimitExceeded") | (429 | 503, _) => {
            Error::Throttled { what, detail }
        }
        (404, _) | (_, "NoSuchKey") => Error::NotFound { what, detail },
        // Stores over a file system (versitygw's posix, MinIO) cannot keep `tree` beside
        // `tree/...`: the key is a folder there.
        (_, "ExistingObjectIsDirectory" | "ObjectExistsAsDirectory" | "XMinioObjectExistsAsDirectory") => {
            let object = what
                .split_whitespace()
                .find(|word| word.starts_with("s3://"))
                .unwrap_or("the key")
                .trim_end_matches('/')
                .to_owned();
            Error::Http {
                what,
                status,
                detail: format!(
                    "{detail}: {object}/ is a prefix with objects under it, and this store \
                     cannot keep an object of the same name; upload into {object}/ (with the \
                     '/') to keep the file's name there, or choose another key"
                ),
            }
        }
        // S3 requests go to the endpoint the user gave and nowhere else, whatever an answer
        // points at.
        (300..=399, _) => Error::Http {
            what,
            status,
            detail: format!(
                "{detail}: a redirect, which parabyte does not follow for S3; give the store's own address with --endpoint-url, or its region with --region"
            ),
        },
        (401 | 403, _) => Error::PermissionDenied {
            what,
            detail,
            anonymous,
        },
        _ => Error::Http {
            what,
            status,
            detail,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_is_an_answer_that_says_it_is_not_followed() {
        // A bare 301 is S3's wrong-region answer; the others are plain redirects.
        for status in [302, 303, 307, 308] {
            let error = classify(status, "", "", "GET s3://b/k", "b", false);
            assert!(matches!(error, Error::Http { .. }), "{status}: {error:?}");
            let message = error.to_string();
            assert!(message.contains("does not follow"), "{message}");
            assert!(message.contains("--endpoint-url"), "{message}");
            assert!(!error.is_retryable() && !error.is_fatal(), "{status}");
        }
    }

    #[test]
    fn statuses_and_codes_become_kinds() {
        let kind = |status, code| classify(status, code, "m", "GET s3://b/k", "b", false);
        assert!(matches!(
            kind(404, "NoSuchBucket"),
            Error::NoSuchBucket { .. }
        ));
        assert!(matches!(kind(404, "NoSuchKey"), Error::NotFound { .. }));
        assert!(matches!(
            kind(403, "SignatureDoesNotMatch"),
            Error::BadCredentials { .. }
        ));
        assert!(matches!(
            kind(403, "AccessDenied"),
            Error::PermissionDenied { .. }
        ));
        let wrong_region = kind(400, "AuthorizationHeaderMalformed");
        assert!(wrong_region.is_fatal());
        assert!(
            wrong_region.to_string().contains("--region"),
            "{wrong_region}"
        );
        assert!(matches!(kind(412, ""), Error::Changed { .. }));
        assert!(matches!(kind(503, "SlowDown"), Error::Throttled { .. }));
        assert!(matches!(
            kind(500, "InternalError"),
            Error::Http { status: 500, .. }
        ));
        assert!(kind(500, "").is_retryable());
        assert!(!kind(403, "AccessDenied").is_retryable());
        for code in ["InvalidObjectState", "ObjectNotInActiveTierError"] {
            let archived = kind(403, code);
            assert!(matches!(archived, Error::Archived { .. }), "{code}");
            assert!(!archived.is_retryable() && !archived.is_fatal(), "{code}");
        }
        let folder = classify(
            409,
            "ExistingObjectIsDirectory",
            "m",
            "PUT s3://b/tree",
            "b",
            false,
        );
        let message = folder.to_string();
        assert!(message.contains("s3://b/tree/ is a prefix"), "{message}");
        assert!(!folder.is_retryable() && !folder.is_fatal(), "{message}");
        let message = kind(404, "NoSuchKey").to_string();
        assert!(
            message.starts_with("GET s3://b/k: not found (404 NoSuchKey: m)"),
            "{message}"
        );
    }
}
