//! The S3 store: signed GETs of byte ranges and ListObjectsV2 pages, and the one function
//! that turns an S3 error response into an [`Error`] kind.

mod endpoint;
pub(crate) mod listing;
mod sign;
mod xml;

use std::sync::Arc;
use std::time::SystemTime;

use aws_config::meta::region::RegionProviderChain;
use aws_config::BehaviorVersion;
use futures::TryStreamExt;
use reqwest::header::{HeaderMap, ETAG};
use reqwest::StatusCode;
use tokio::sync::mpsc;

use crate::checksum::{Crc, FullChecksum};
use crate::config::StoreConfig;
use crate::counters::{Counters, RequestKind};
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::http_client::{build_client, describe, transport_error};
use crate::source::{body_of, shape_of, Fetched, RangeSource};
use crate::validator::etag_md5;
use endpoint::{encode_query_value, Endpoint};
use sign::Signer;
use xml::ListError;
pub(crate) use xml::ListPage;

pub use xml::ObjectEntry;

/// Error bodies are small; never buffer more than this of one.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A connection to one S3-compatible store.
#[derive(Debug)]
pub(crate) struct S3Store {
    http: reqwest::Client,
    endpoint: Endpoint,
    /// `None` for anonymous requests (`--no-sign-request`).
    signer: Option<Signer>,
    counters: Arc<Counters>,
}

impl S3Store {
    /// Resolve region, endpoint and credentials the way the AWS CLI does.
    pub(crate) async fn connect(config: &StoreConfig, counters: Arc<Counters>) -> Result<S3Store> {
        let profile = config
            .profile
            .clone()
            .or_else(|| std::env::var("AWS_PROFILE").ok());
        // Region: flag, environment, profile, then us-east-1. Never the instance metadata
        // service: a download tool should not stall on a link-local probe to learn a name.
        let mut profile_region = aws_config::profile::ProfileFileRegionProvider::builder();
        if let Some(name) = &profile {
            profile_region = profile_region.profile_name(name);
        }
        let region_chain =
            RegionProviderChain::first_try(config.region.clone().map(aws_config::Region::new))
                .or_else(aws_config::environment::EnvironmentVariableRegionProvider::new())
                .or_else(profile_region.build())
                .or_else("us-east-1");
        let mut loader = aws_config::defaults(BehaviorVersion::latest()).region(region_chain);
        if let Some(name) = &profile {
            loader = loader.profile_name(name);
        }
        if config.no_sign_request {
            loader = loader.no_credentials();
        } else if let Some(keys) = &config.credentials {
            loader = loader.credentials_provider(aws_credential_types::Credentials::new(
                &keys.access_key_id,
                &keys.secret_access_key,
                keys.session_token.clone(),
                None,
                "parabyte-explicit",
            ));
        }
        let sdk = loader.load().await;
        let region = sdk
            .region()
            .map_or_else(|| "us-east-1".to_owned(), |r| r.to_string());
        let endpoint_url = config
            .endpoint_url
            .clone()
            .or_else(|| std::env::var("AWS_ENDPOINT_URL_S3").ok())
            .or_else(|| sdk.endpoint_url().map(str::to_owned));
        let endpoint = match endpoint_url {
            Some(url) => Endpoint::custom(&url)?,
            None => Endpoint::aws(&region, config.path_style),
        };
        let signer = match (config.no_sign_request, sdk.credentials_provider()) {
            (true, _) => None,
            (false, Some(provider)) => Some(Signer::new(provider, region)),
            (false, None) => {
                return Err(Error::NoCredentials("the credential chain is empty".into()));
            }
        };
        Ok(S3Store {
            http: build_client(config, counters.clone())?,
            endpoint,
            signer,
            counters,
        })
    }

    /// Send a signed (or anonymous) bodiless GET and return the response, whatever its status.
    async fn get(
        &self,
        kind: RequestKind,
        bucket: &str,
        key: &str,
        query: &str,
        extra_headers: &[(&str, &str)],
        what: &str,
    ) -> Result<reqwest::Response> {
        let target = self.endpoint.target(bucket, key, query);
        let mut request = self.http.get(&target.url).header("host", &target.host);
        for (name, value) in extra_headers {
            request = request.header(*name, *value);
        }
        if let Some(signer) = &self.signer {
            let credentials = signer.credentials().await?;
            let mut signed = Vec::with_capacity(extra_headers.len() + 1);
            signed.push(("host", target.host.as_str()));
            signed.extend_from_slice(extra_headers);
            for (name, value) in
                signer.sign(&credentials, SystemTime::now(), "GET", &target.url, &signed)?
            {
                request = request.header(name, value);
            }
        }
        self.counters.count_request(kind);
        request
            .send()
            .await
            .map_err(|e| transport_error(what, &e, &self.endpoint.describe()))
    }

    /// One ListObjectsV2 page. The body is read as a stream; the moment its
    /// NextContinuationToken has gone by, it is sent on `early_token`, so the caller can ask
    /// for the next page while this one is still arriving and being parsed.
    pub(crate) async fn list_page(
        &self,
        query: &ListQuery<'_>,
        early_token: Option<&mpsc::UnboundedSender<String>>,
    ) -> Result<ListPage> {
        let what = format!("LIST s3://{}/{}", query.bucket, query.prefix);
        let response = self
            .get(
                RequestKind::List,
                query.bucket,
                "",
                &query.to_query_string(),
                &[],
                &what,
            )
            .await?;
        if !response.status().is_success() {
            return Err(error_from_response(response, &what, query.bucket).await);
        }
        let mut body = Vec::new();
        let mut token_scan = early_token.map(|sender| (sender, TokenScan::default()));
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.try_next().await.map_err(|e| Error::Network {
            what: what.clone(),
            detail: describe(&e),
        })? {
            body.extend_from_slice(&chunk);
            if let Some((sender, scan)) = &mut token_scan {
                if let Some(token) = scan.find(&body) {
                    let _ = sender.send(token);
                    token_scan = None;
                }
            }
        }
        xml::parse_list_page(&body).map_err(|error| match error {
            ListError::Malformed(detail) => Error::Protocol { what, detail },
            ListError::ErrorDocument { code, message } => {
                classify(200, &code, &message, &what, query.bucket)
            }
        })
    }
}

/// Where a ListObjectsV2 request starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cursor {
    /// The first key under the prefix.
    Start,
    /// Where a previous page said to continue.
    Token(String),
    /// The first key after this one.
    After(String),
}

/// One ListObjectsV2 request.
#[derive(Debug)]
pub(crate) struct ListQuery<'a> {
    pub bucket: &'a str,
    pub prefix: &'a str,
    pub delimiter: Option<&'a str>,
    pub cursor: &'a Cursor,
    pub max_keys: usize,
}

impl ListQuery<'_> {
    /// Parameters in the sorted order SigV4 canonicalises them in.
    fn to_query_string(&self) -> String {
        let mut query = String::with_capacity(160);
        if let Cursor::Token(token) = self.cursor {
            query.push_str("continuation-token=");
            query.push_str(&encode_query_value(token));
            query.push('&');
        }
        if let Some(delimiter) = self.delimiter {
            query.push_str("delimiter=");
            query.push_str(&encode_query_value(delimiter));
            query.push('&');
        }
        query.push_str("encoding-type=url&list-type=2&max-keys=");
        query.push_str(&self.max_keys.to_string());
        query.push_str("&prefix=");
        query.push_str(&encode_query_value(self.prefix));
        if let Cursor::After(key) = self.cursor {
            query.push_str("&start-after=");
            query.push_str(&encode_query_value(key));
        }
        query
    }
}

/// Finds `<NextContinuationToken>...</NextContinuationToken>` in a body that grows chunk by
/// chunk, without rescanning what it has already passed.
#[derive(Debug, Default)]
struct TokenScan {
    scanned: usize,
}

impl TokenScan {
    const OPEN: &'static [u8] = b"<NextContinuationToken>";
    const CLOSE: &'static [u8] = b"</NextContinuationToken>";

    fn find(&mut self, body: &[u8]) -> Option<String> {
        let from = self
            .scanned
            .saturating_sub(Self::OPEN.len() + Self::CLOSE.len());
        let open = find(&body[from..], Self::OPEN).map(|at| from + at + Self::OPEN.len());
        let Some(start) = open else {
            self.scanned = body.len();
            return None;
        };
        let Some(length) = find(&body[start..], Self::CLOSE) else {
            // The opening tag is here but the token is still arriving: look again from it.
            self.scanned = start - Self::OPEN.len();
            return None;
        };
        self.scanned = body.len();
        let raw = std::str::from_utf8(&body[start..start + length]).ok()?;
        quick_xml::escape::unescape(raw)
            .ok()
            .map(|token| token.into_owned())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

impl RangeSource for S3Store {
    type Object = S3Url;

    async fn fetch(
        &self,
        object: &S3Url,
        range: Option<ByteRange>,
        if_match: Option<&str>,
    ) -> Result<Fetched> {
        let range_header = range.map(|r| r.to_string());
        let what = match &range_header {
            Some(range) => format!("GET {object} {range}"),
            None => format!("GET {object}"),
        };
        // Asks for the whole-object CRC, which S3 sends when a response covers the object.
        let mut headers: Vec<(&str, &str)> = vec![("x-amz-checksum-mode", "ENABLED")];
        if let Some(range) = &range_header {
            headers.push(("range", range));
        }
        if let Some(etag) = if_match {
            headers.push(("if-match", etag));
        }
        let response = self
            .get(
                RequestKind::Get,
                &object.bucket,
                &object.key,
                "",
                &headers,
                &what,
            )
            .await?;
        let Some(shape) = shape_of(response.status(), response.headers(), range, &what)? else {
            return Err(error_from_response(response, &what, &object.bucket).await);
        };
        let etag = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let checksum = full_checksum(response.headers());
        let content_md5 = etag
            .as_deref()
            .filter(|_| !encrypted_by_key(response.headers()))
            .and_then(etag_md5);
        Ok(Fetched {
            shape,
            etag,
            checksum,
            content_md5,
            moved_to: None,
            body: body_of(response, what),
        })
    }
}

/// The whole-object CRC among the response's headers; a composite checksum of a multipart
/// upload covers parts, not the object, and is left out.
fn full_checksum(headers: &HeaderMap) -> Option<FullChecksum> {
    let composite = headers
        .get("x-amz-checksum-type")
        .is_some_and(|kind| kind.as_bytes().eq_ignore_ascii_case(b"COMPOSITE"));
    if composite {
        return None;
    }
    Crc::HEADERS.iter().find_map(|(name, algorithm)| {
        FullChecksum::parse(*algorithm, headers.get(*name)?.to_str().ok()?)
    })
}

/// With SSE-KMS or a customer key the ETag is not the MD5 of the content.
fn encrypted_by_key(headers: &HeaderMap) -> bool {
    let kms = headers
        .get("x-amz-server-side-encryption")
        .is_some_and(|value| value.as_bytes().starts_with(b"aws:kms"));
    kms || headers.contains_key("x-amz-server-side-encryption-customer-algorithm")
}

/// Read a failed response's body (bounded) and classify it.
async fn error_from_response(response: reqwest::Response, what: &str, bucket: &str) -> Error {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Ok(Some(chunk)) = stream.try_next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    let (code, message) = xml::parse_error(&body).unwrap_or_default();
    classify(status, &code, &message, what, bucket)
}

/// The one place an HTTP status and S3 error code become an [`Error`] kind.
fn classify(status: u16, code: &str, message: &str, what: &str, bucket: &str) -> Error {
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
        (_, "AuthorizationHeaderMalformed") => Error::InvalidInput(format!(
            "{what}: the store is in another region ({detail}); set its region with --region or AWS_REGION"
        )),
        (_, "PreconditionFailed") | (412, _) => Error::Changed { what, detail },
        (_, "SlowDown" | "Throttling" | "RequestLimitExceeded") | (429 | 503, _) => {
            Error::Throttled { what, detail }
        }
        (404, _) | (_, "NoSuchKey") => Error::NotFound { what, detail },
        (401 | 403, _) => Error::PermissionDenied { what, detail },
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
    fn the_token_is_found_as_the_body_arrives() {
        let body = b"<ListBucketResult><Name>b</Name><NextContinuationToken>a&amp;b=</NextContinuationToken><Contents>";
        let mut scan = TokenScan::default();
        // Fed a few bytes at a time, the token appears once its closing tag has arrived.
        let mut found = None;
        for end in (0..=body.len()).step_by(7).chain([body.len()]) {
            if let Some(token) = scan.find(&body[..end]) {
                found = Some((end, token));
                break;
            }
        }
        let (end, token) = found.expect("token found");
        assert_eq!(token, "a&b=");
        assert!(end >= body.len() - b"<Contents>".len() - 7);
        assert_eq!(
            TokenScan::default().find(b"<ListBucketResult><Contents>"),
            None
        );
    }

    #[test]
    fn list_queries_are_in_canonical_order() {
        let after = Cursor::After("k/1".into());
        let query = ListQuery {
            bucket: "b",
            prefix: "p/",
            delimiter: Some("/"),
            cursor: &after,
            max_keys: 1000,
        };
        assert_eq!(
            query.to_query_string(),
            "delimiter=%2F&encoding-type=url&list-type=2&max-keys=1000&prefix=p%2F&start-after=k%2F1"
        );
        let token = Cursor::Token("t+=".into());
        let query = ListQuery {
            bucket: "b",
            prefix: "",
            delimiter: None,
            cursor: &token,
            max_keys: 10,
        };
        assert_eq!(
            query.to_query_string(),
            "continuation-token=t%2B%3D&encoding-type=url&list-type=2&max-keys=10&prefix="
        );
    }

    #[test]
    fn statuses_and_codes_become_kinds() {
        let kind = |status, code| classify(status, code, "m", "GET s3://b/k", "b");
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
        let message = kind(404, "NoSuchKey").to_string();
        assert!(
            message.starts_with("GET s3://b/k: not found (404 NoSuchKey: m)"),
            "{message}"
        );
    }
}
