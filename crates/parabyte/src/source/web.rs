//! Files on plain web servers (nginx, a CDN, presigned URLs): the same ranged GETs as for a
//! store, with HTTP's own validators. The first response's strong ETag pins later ranges
//! with `If-Match`; a server without one gets `If-Unmodified-Since` with its Last-Modified
//! date. Either way a file that changes between two parts answers 412 and is never mixed.

use std::sync::Arc;

use reqwest::header::{HeaderMap, ETAG, LAST_MODIFIED, RANGE};
use reqwest::StatusCode;

use crate::config::StoreConfig;
use crate::counters::{Counters, RequestKind};
use crate::error::{Error, Result};
use crate::location::{HttpUrl, ObjectUrl};
use crate::ranges::ByteRange;
use crate::source::http_client::{send_following, transport_error, HttpClient, MAX_REDIRECTS};
use crate::source::{body_of, last_modified, shape_of, Described, Fetched, Store};
use crate::validator::Validator;

/// Any web server, reached through the run's pooled client (redirects followed without
/// credentials to other origins, rustls with the system's roots plus `--ca-bundle`).
#[derive(Debug)]
pub(crate) struct WebSource {
    http: HttpClient,
    counters: Arc<Counters>,
}

impl WebSource {
    pub(crate) fn new(config: &StoreConfig, counters: Arc<Counters>) -> Result<WebSource> {
        Ok(WebSource {
            http: HttpClient::new(config, counters.clone())?,
            counters,
        })
    }
}

impl Store for WebSource {
    type Object = HttpUrl;

    fn name(&self) -> &'static str {
        "a web server"
    }

    /// A web server keeps no checksum, so a HEAD could say nothing the GET did not.
    async fn describe(
        &self,
        _object: &HttpUrl,
        _pinned: Option<&Validator>,
        _part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        Ok(None)
    }

    async fn get(
        &self,
        object: &HttpUrl,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        let what = match range {
            Some(range) => format!("GET {object} {range}"),
            None => format!("GET {object}"),
        };
        let mut request = self.http.get(object.as_url().clone());
        if let Some(range) = range {
            request = request.header(RANGE, range.to_string());
        }
        if let Some(precondition) = pinned.and_then(Validator::precondition) {
            request = request.header(precondition.name, precondition.value);
        }
        let request = request
            .build()
            .map_err(|e| transport_error(&what, &e.into(), &origin(object)))?;
        // The URL as sent: a user name and password in it have become an Authorization header.
        let sent_to = request.url().clone();
        let response = send_following(&self.http, request, &self.counters, RequestKind::Get)
            .await
            .map_err(|e| transport_error(&what, &e, &origin(object)))?;
        let status = response.status();
        let Some(shape) = shape_of(status, response.headers(), range, &what)? else {
            return Err(classify(status, what));
        };
        let moved_to = (*response.url() != sent_to)
            .then(|| HttpUrl::try_from(response.url().clone()).ok())
            .flatten()
            .map(ObjectUrl::Http);
        Ok(Fetched {
            shape,
            validator: validator(response.headers()),
            // A web server's ETag is opaque (nginx's is time and size), never a content
            // MD5, and it sends no S3 checksums: only the sizes are checked.
            checksum: None,
            content_md5: None,
            modified: last_modified(response.headers()),
            // A web server's file keeps no upload's time: its Last-Modified is the time.
            file_time: None,
            moved_to,
            body: body_of(response, what),
        })
    }
}

/// What pins this version: a strong ETag, else the Last-Modified date. A weak ETag cannot be
/// used with `If-Match` (it compares strongly), so it does not count.
fn validator(headers: &HeaderMap) -> Option<Validator> {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let strong_etag = header(ETAG).filter(|etag| !etag.starts_with("W/"));
    match strong_etag {
        Some(etag) => Some(Validator::ETag(etag.to_owned())),
        None => header(LAST_MODIFIED).map(|date| Validator::LastModified(date.to_owned())),
    }
}

/// `scheme://host:port`: where a failed connection was going, without path or query.
fn origin(url: &HttpUrl) -> String {
    url.as_url().origin().ascii_serialization()
}

/// The one place a web server's error status becomes an [`Error`] kind.
fn classify(status: StatusCode, what: String) -> Error {
    let detail = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default()
    );
    match status.as_u16() {
        404 | 410 => Error::NotFound { what, detail },
        412 => Error::Changed { what, detail },
        429 | 503 => Error::Throttled { what, detail },
        401 | 403 => Error::Http {
            what,
            status: status.as_u16(),
            detail: format!(
                "{detail}; a presigned URL may have expired, or the server wants credentials"
            ),
        },
        code @ 300..=399 => Error::Http {
            what,
            status: code,
            detail: format!(
                "{detail}; a redirect not followed: more than {MAX_REDIRECTS} hops, or no \
                 http(s) Location"
            ),
        },
        code => Error::Http {
            what,
            status: code,
            detail,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(reqwest::header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    const DATE: &str = "Sun, 22 Nov 2026 07:00:00 GMT";

    #[test]
    fn a_strong_etag_pins_else_the_date() {
        let both = headers(&[(ETAG, "\"abc-12\""), (LAST_MODIFIED, DATE)]);
        assert_eq!(
            validator(&both),
            Some(Validator::ETag("\"abc-12\"".to_owned()))
        );
        let weak = headers(&[(ETAG, "W/\"abc\""), (LAST_MODIFIED, DATE)]);
        assert_eq!(
            validator(&weak),
            Some(Validator::LastModified(DATE.to_owned()))
        );
        assert_eq!(validator(&headers(&[(ETAG, "W/\"abc\"")])), None);
    }

    #[test]
    fn statuses_become_kinds() {
        let kind = |code| classify(StatusCode::from_u16(code).unwrap(), "GET u".into());
        assert!(kind(404).is_not_found());
        assert!(matches!(kind(412), Error::Changed { .. }));
        assert!(kind(503).is_retryable());
        assert!(kind(500).is_retryable());
        assert!(!kind(403).is_retryable());
        assert!(kind(403)
            .to_string()
            .contains("presigned URL may have expired"));
        assert!(kind(302).to_string().contains("redirect not followed"));
    }
}
