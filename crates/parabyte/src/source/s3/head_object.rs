//! HeadObject: the checksum the store keeps for one version of an object, which no ranged
//! GET carries, and by part number where that upload part lies.

use reqwest::header::ETAG;

use super::checksum_headers::{content_md5, store_checksum};
use super::errors::classify;
use super::{Call, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::http_client::Response;
use crate::source::{shape_of, Described, Shape, StoredHeaders};
use crate::validator::Validator;

impl S3Store {
    /// HEAD `object`: an answer that is not a success is its error.
    pub(super) async fn head(
        &self,
        object: &S3Url,
        query: &str,
        headers: &[(&str, &str)],
        what: &str,
    ) -> Result<Response> {
        let response = self
            .request(&Call {
                method: &reqwest::Method::HEAD,
                kind: RequestKind::Head,
                bucket: &object.bucket,
                key: &object.key,
                query,
                headers,
                what,
                body: None,
            })
            .await?;
        let status = response.status();
        if !status.is_success() {
            // A HEAD's answer has no body: its status is all there is to classify.
            return Err(classify(
                status.as_u16(),
                "",
                "",
                what,
                &object.bucket,
                self.anonymous(),
            ));
        }
        Ok(response)
    }

    /// HEAD with `x-amz-checksum-mode: ENABLED`: the store's checksum, which no ranged GET
    /// carries. By part number, where that upload part lies (its Content-Range). Pinned, an
    /// answer for another version is [`Error::Changed`].
    pub(super) async fn head_object(
        &self,
        object: &S3Url,
        pinned: Option<&Validator>,
        part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        let query = part_number.map_or_else(String::new, |part| format!("partNumber={part}"));
        let what = match part_number {
            Some(part) => format!("HEAD {object} part {part}"),
            None => format!("HEAD {object}"),
        };
        let mut headers: Vec<(&str, &str)> = vec![("x-amz-checksum-mode", "ENABLED")];
        let precondition = pinned.and_then(Validator::precondition);
        if let Some(precondition) = &precondition {
            headers.push((precondition.name, &precondition.value));
        }
        let response = self.head(object, &query, &headers, &what).await?;
        let status = response.status();
        let validator = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(|etag| Validator::ETag(etag.to_owned()));
        if let Some(pinned) = pinned {
            if !validator.as_ref().is_some_and(|got| pinned.matches(got)) {
                return Err(Error::Changed {
                    what,
                    detail: format!("{pinned} became {validator:?}"),
                });
            }
        }
        let part = match part_number {
            None => None,
            Some(_) => {
                shape_of(status, response.headers(), None, &what)?.and_then(|shape| match shape {
                    Shape::Partial { range, .. } => Some(range),
                    Shape::Whole {
                        length: Some(length),
                    } if length > 0 => Some(ByteRange {
                        start: 0,
                        end: length - 1,
                    }),
                    _ => None,
                })
            }
        };
        Ok(Some(Described {
            checksum: store_checksum(response.headers()),
            content_md5: content_md5(validator.as_ref(), response.headers()),
            part,
            headers: stored_headers(response.headers()),
        }))
    }
}

/// The content headers and user metadata an answer says the object is stored with.
fn stored_headers(headers: &reqwest::header::HeaderMap) -> StoredHeaders {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    StoredHeaders {
        content_type: text("content-type"),
        cache_control: text("cache-control"),
        content_disposition: text("content-disposition"),
        content_encoding: text("content-encoding"),
        content_language: text("content-language"),
        metadata: user_metadata(headers),
    }
}

/// The object's `x-amz-meta-*` headers, by name without the prefix (in lower case, as
/// HTTP gives header names); values that are not text are left out.
pub(super) fn user_metadata<C: FromIterator<(String, String)>>(
    headers: &reqwest::header::HeaderMap,
) -> C {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let name = name.as_str().strip_prefix("x-amz-meta-")?;
            Some((name.to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect()
}
