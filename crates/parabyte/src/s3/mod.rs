//! The S3 store: signed GETs of byte ranges and ListObjectsV2 pages, and the one function
//! that turns an S3 error response into an [`Error`] kind.

mod endpoint;
mod sign;
mod xml;

use std::sync::Arc;
use std::time::SystemTime;

use aws_config::meta::region::RegionProviderChain;
use aws_config::BehaviorVersion;
use futures::TryStreamExt;
use reqwest::header::{HeaderMap, CONTENT_LENGTH, CONTENT_RANGE, ETAG};
use reqwest::StatusCode;

use crate::config::StoreConfig;
use crate::error::{Error, Result};
use crate::http::{build_client, describe};
use crate::location::S3Url;
use crate::report::{Counters, RequestKind};
use crate::source::{ByteRange, Fetched, RangeSource, Shape};
use endpoint::{encode_query_value, Endpoint};
use sign::Signer;
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
        request.send().await.map_err(|e| Error::Network {
            what: what.to_owned(),
            detail: format!("{} ({})", describe(&e), self.endpoint.describe()),
        })
    }

    /// One ListObjectsV2 page under `prefix`, continuing from `token`.
    pub(crate) async fn list_page(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        token: Option<&str>,
    ) -> Result<ListPage> {
        // Parameters in the canonical (sorted) order SigV4 wants.
        let mut query = String::with_capacity(128);
        if let Some(token) = token {
            query.push_str("continuation-token=");
            query.push_str(&encode_query_value(token));
            query.push('&');
        }
        if let Some(delimiter) = delimiter {
            query.push_str("delimiter=");
            query.push_str(&encode_query_value(delimiter));
            query.push('&');
        }
        query.push_str("encoding-type=url&list-type=2&prefix=");
        query.push_str(&encode_query_value(prefix));
        let what = format!("LIST s3://{bucket}/{prefix}");
        let response = self
            .get(RequestKind::List, bucket, "", &query, &[], &what)
            .await?;
        if !response.status().is_success() {
            return Err(error_from_response(response, &what, bucket).await);
        }
        let body = response.bytes().await.map_err(|e| Error::Network {
            what: what.clone(),
            detail: describe(&e),
        })?;
        xml::parse_list_page(&body).map_err(|detail| Error::Protocol { what, detail })
    }
}

impl RangeSource for S3Store {
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
        let mut headers: Vec<(&str, &str)> = Vec::with_capacity(2);
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
        let status = response.status();
        let shape = match status {
            StatusCode::PARTIAL_CONTENT => {
                let (range, total) =
                    content_range(response.headers()).ok_or_else(|| Error::Protocol {
                        what: what.clone(),
                        detail: "206 without a valid Content-Range".into(),
                    })?;
                Shape::Partial { range, total }
            }
            StatusCode::OK => Shape::Whole {
                length: header_u64(response.headers(), CONTENT_LENGTH.as_str()),
            },
            // S3 answers a range on an empty object with 416: that is an empty file, not an
            // error. Some servers add `Content-Range: bytes */0`, some send nothing.
            StatusCode::RANGE_NOT_SATISFIABLE if range.is_some_and(|r| r.start == 0) => {
                match unsatisfied_length(response.headers()) {
                    None | Some(0) => Shape::Empty,
                    Some(length) => {
                        return Err(Error::Protocol {
                            what,
                            detail: format!(
                                "416 for a range starting at 0 of a {length}-byte object"
                            ),
                        })
                    }
                }
            }
            // A later range beyond the end: the object shrank since the first response.
            StatusCode::RANGE_NOT_SATISFIABLE => {
                return Err(Error::Changed {
                    what,
                    detail: "the range is no longer inside the object".into(),
                })
            }
            _ => return Err(error_from_response(response, &what, &object.bucket).await),
        };
        let etag = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.bytes_stream().map_err(move |e| Error::Network {
            what: what.clone(),
            detail: describe(&e),
        });
        Ok(Fetched {
            shape,
            etag,
            body: Box::pin(body),
        })
    }
}

/// `Content-Range: bytes START-END/TOTAL`.
fn content_range(headers: &HeaderMap) -> Option<(ByteRange, u64)> {
    let value = headers.get(CONTENT_RANGE)?.to_str().ok()?;
    let (span, total) = value.strip_prefix("bytes ")?.split_once('/')?;
    let (start, end) = span.split_once('-')?;
    let range = ByteRange {
        start: start.trim().parse().ok()?,
        end: end.trim().parse().ok()?,
    };
    let total: u64 = total.trim().parse().ok()?;
    (range.start <= range.end && range.end < total).then_some((range, total))
}

/// The length in a 416's `Content-Range: bytes */LENGTH`, if the server sent one.
fn unsatisfied_length(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get(CONTENT_RANGE)?.to_str().ok()?;
    value.strip_prefix("bytes */")?.trim().parse().ok()
}

fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.parse().ok()
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
    use reqwest::header::HeaderValue;

    fn headers(name: reqwest::header::HeaderName, value: &str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(name, HeaderValue::from_str(value).unwrap());
        map
    }

    #[test]
    fn content_range_gives_range_and_total() {
        let parsed = content_range(&headers(CONTENT_RANGE, "bytes 0-8388607/1073741824"));
        assert_eq!(
            parsed,
            Some((
                ByteRange {
                    start: 0,
                    end: 8_388_607
                },
                1 << 30
            ))
        );
        assert_eq!(content_range(&headers(CONTENT_RANGE, "bytes 5-4/10")), None);
        assert_eq!(
            content_range(&headers(CONTENT_RANGE, "bytes 0-10/10")),
            None
        );
        assert_eq!(content_range(&headers(CONTENT_RANGE, "bytes 0-1/*")), None);
    }

    #[test]
    fn an_unsatisfied_range_may_carry_the_length() {
        assert_eq!(
            unsatisfied_length(&headers(CONTENT_RANGE, "bytes */0")),
            Some(0)
        );
        assert_eq!(unsatisfied_length(&HeaderMap::new()), None);
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
