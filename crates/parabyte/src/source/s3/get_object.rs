//! GetObject: a byte range of one version of an object, pinned with `If-Match`, with the
//! checksum the store sends along with a whole object.

use reqwest::header::ETAG;

use super::checksum_headers::{content_md5, store_checksum};
use super::errors::error_from_response;
use super::{Call, S3Store};
use crate::counters::RequestKind;
use crate::error::Result;
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::{body_of, last_modified, shape_of, Fetched};
use crate::timestamp::parse_file_time;
use crate::validator::Validator;

impl S3Store {
    pub(super) async fn get_object(
        &self,
        object: &S3Url,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        let range_header = range.map(|r| r.to_string());
        let what = match &range_header {
            Some(range) => format!("GET {object} {range}"),
            None => format!("GET {object}"),
        };
        // Asks for the object's checksum, which S3 sends when a GET is for the whole object.
        let mut headers: Vec<(&str, &str)> = vec![("x-amz-checksum-mode", "ENABLED")];
        if let Some(range) = &range_header {
            headers.push(("range", range));
        }
        let precondition = pinned.and_then(Validator::precondition);
        if let Some(precondition) = &precondition {
            headers.push((precondition.name, &precondition.value));
        }
        let response = self
            .request(&Call {
                method: &reqwest::Method::GET,
                kind: RequestKind::Get,
                bucket: &object.bucket,
                key: &object.key,
                query: "",
                headers: &headers,
                what: &what,
                body: None,
            })
            .await?;
        let Some(shape) = shape_of(response.status(), response.headers(), range, &what)? else {
            return Err(
                error_from_response(response, &what, &object.bucket, self.anonymous()).await,
            );
        };
        let validator = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(|etag| Validator::ETag(etag.to_owned()));
        let checksum = store_checksum(response.headers());
        let content_md5 = content_md5(validator.as_ref(), response.headers());
        Ok(Fetched {
            shape,
            validator,
            checksum,
            content_md5,
            modified: last_modified(response.headers()),
            file_time: response
                .headers()
                .get("x-amz-meta-mtime")
                .and_then(|value| value.to_str().ok())
                .and_then(parse_file_time),
            moved_to: None,
            body: body_of(response, what),
        })
    }
}
