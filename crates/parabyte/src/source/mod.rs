//! The seam between "talk to a store" and "move bytes": the engine asks a [`RangeSource`]
//! for byte ranges and gets back what the response says about the object plus its body.

pub(crate) mod http_client;
pub(crate) mod s3;
mod sources;
pub(crate) mod web;

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use reqwest::header::{HeaderMap, CONTENT_LENGTH, CONTENT_RANGE};
use reqwest::StatusCode;

use crate::checksum::FullChecksum;
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::ranges::ByteRange;
use http_client::describe;
pub(crate) use sources::Sources;

/// A response body, chunk by chunk.
pub(crate) type Body = Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>;

/// What a GET answered about the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// 206: this range of an object of `total` bytes.
    Partial { range: ByteRange, total: u64 },
    /// 200: the whole object (the server ignored Range, or none was sent).
    Whole { length: Option<u64> },
    /// 416 to a range starting at 0: the object is empty.
    Empty,
}

/// A response whose headers have arrived; the body is still on the wire.
pub(crate) struct Fetched {
    pub shape: Shape,
    /// The version validator: the ETag, or for a web server without a strong ETag its
    /// Last-Modified date. Later ranges are pinned to it.
    pub etag: Option<String>,
    /// The object answered from another address (a redirect): later ranges go there.
    pub moved_to: Option<ObjectUrl>,
    /// The whole object's CRC, when the store sent one with this response.
    pub checksum: Option<FullChecksum>,
    /// The MD5 of the whole object, when the ETag is one.
    pub content_md5: Option<[u8; 16]>,
    pub body: Body,
}

/// Something that serves byte ranges of objects.
pub(crate) trait RangeSource: Send + Sync + 'static {
    /// How this source names an object.
    type Object: Sync;

    /// GET `range` of `object` (the whole object when `None`), pinned to `if_match` (a
    /// validator from an earlier response) when given.
    fn fetch(
        &self,
        object: &Self::Object,
        range: Option<ByteRange>,
        if_match: Option<&str>,
    ) -> impl Future<Output = Result<Fetched>> + Send;
}

/// What a GET's status and headers say about the object, for the statuses that carry it:
/// 206, 200, and 416 to a range from byte 0 (an empty object). `Ok(None)` for any other
/// status, which the source classifies in its own terms.
pub(crate) fn shape_of(
    status: StatusCode,
    headers: &HeaderMap,
    range: Option<ByteRange>,
    what: &str,
) -> Result<Option<Shape>> {
    let shape = match status {
        StatusCode::PARTIAL_CONTENT => {
            let (range, total) = content_range(headers).ok_or_else(|| Error::Protocol {
                what: what.to_owned(),
                detail: "206 without a valid Content-Range".into(),
            })?;
            Shape::Partial { range, total }
        }
        // No Content-Length (chunked): the length is known only when the body ends.
        StatusCode::OK => Shape::Whole {
            length: header_u64(headers, CONTENT_LENGTH.as_str()),
        },
        // S3 answers a range on an empty object with 416: that is an empty file, not an
        // error. Some servers add `Content-Range: bytes */0`, some send nothing.
        StatusCode::RANGE_NOT_SATISFIABLE if range.is_some_and(|r| r.start == 0) => {
            match unsatisfied_length(headers) {
                None | Some(0) => Shape::Empty,
                Some(length) => {
                    return Err(Error::Protocol {
                        what: what.to_owned(),
                        detail: format!("416 for a range starting at 0 of a {length}-byte object"),
                    })
                }
            }
        }
        // A later range beyond the end: the object shrank since the first response.
        StatusCode::RANGE_NOT_SATISFIABLE => {
            return Err(Error::Changed {
                what: what.to_owned(),
                detail: "the range is no longer inside the object".into(),
            })
        }
        _ => return Ok(None),
    };
    Ok(Some(shape))
}

/// A response's body as a stream whose errors name the request.
pub(crate) fn body_of(response: reqwest::Response, what: String) -> Body {
    Box::pin(response.bytes_stream().map_err(move |e| Error::Network {
        what: what.clone(),
        detail: describe(&e),
    }))
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
}
