//! What a GET's status and headers say about the object, read the same way for every store
//! that speaks HTTP: the one place where status, Content-Range and Content-Length must
//! agree before a byte is taken.

use std::time::SystemTime;

use futures::TryStreamExt;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_LENGTH, CONTENT_RANGE, LAST_MODIFIED};
use reqwest::StatusCode;

use crate::error::{Error, Result};
use crate::ranges::ByteRange;
use crate::source::http_client::{describe, Response};
use crate::source::store::{Body, Shape};

/// What a GET's status and headers say about the object, for the statuses that carry it:
/// 206, 200, and 416 to a range from byte 0 (an empty object). `Ok(None)` for any other
/// status, which the source classifies in its own terms. Status, Content-Range and
/// Content-Length must agree before a byte is taken: a body is never the whole object when
/// the headers say it is a part.
pub(crate) fn shape_of(
    status: StatusCode,
    headers: &HeaderMap,
    range: Option<ByteRange>,
    what: &str,
) -> Result<Option<Shape>> {
    let protocol = |detail: String| Error::Protocol {
        what: what.to_owned(),
        detail,
    };
    let shape = match status {
        StatusCode::PARTIAL_CONTENT | StatusCode::OK => {
            let length = header_u64(headers, CONTENT_LENGTH.as_str());
            let span = match headers.get(CONTENT_RANGE) {
                None if status == StatusCode::OK => None,
                None => return Err(protocol("206 without a Content-Range".into())),
                // s3rver answers a range of an empty object `206` with `bytes 0-0/0`: no
                // range of nothing can be valid, so that says "empty", as a 416 would.
                Some(value) if of_nothing(value) && length.unwrap_or(0) == 0 => {
                    return Ok(Some(Shape::Empty))
                }
                Some(value) => Some(content_range(value).ok_or_else(|| {
                    protocol(format!(
                        "{} with an invalid Content-Range {value:?}",
                        status.as_u16()
                    ))
                })?),
            };
            match span {
                // No Content-Length (chunked): the length is known only when the body ends.
                None => Shape::Whole { length },
                Some((part, total)) => {
                    let part_length = part.end - part.start + 1;
                    if length.is_some_and(|length| length != part_length) {
                        return Err(protocol(format!(
                            "Content-Length {} disagrees with Content-Range {part} of {total}",
                            length.unwrap_or_default()
                        )));
                    }
                    if part_length == total {
                        Shape::Whole {
                            length: Some(total),
                        }
                    } else {
                        Shape::Partial { range: part, total }
                    }
                }
            }
        }
        // S3 answers a range on an empty object with 416: that is an empty file, not an
        // error. Some servers add `Content-Range: bytes */0`, some send nothing.
        StatusCode::RANGE_NOT_SATISFIABLE if range.is_some_and(|r| r.start == 0) => {
            match unsatisfied_length(headers) {
                None | Some(0) => Shape::Empty,
                Some(length) => {
                    return Err(protocol(format!(
                        "416 for a range starting at 0 of a {length}-byte object"
                    )))
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

/// A response's body as a stream whose errors name the request. An answer that is not a
/// success (the 416 of an empty object) carries an error document, never content: its body
/// is empty here, the one place every store's bodies come from, so no caller can take it
/// for the object's bytes.
pub(crate) fn body_of(response: Response, what: String) -> Body {
    if !response.status().is_success() {
        return Box::pin(futures::stream::empty());
    }
    Box::pin(response.bytes_stream().map_err(move |e| Error::Network {
        what: what.clone(),
        detail: describe(&e),
    }))
}

/// The Last-Modified header as a time, when it is a valid HTTP date.
pub(crate) fn last_modified(headers: &HeaderMap) -> Option<SystemTime> {
    httpdate::parse_http_date(headers.get(LAST_MODIFIED)?.to_str().ok()?).ok()
}

/// `Content-Range: bytes START-END/TOTAL`.
fn content_range(value: &HeaderValue) -> Option<(ByteRange, u64)> {
    let value = value.to_str().ok()?;
    let (span, total) = value.strip_prefix("bytes ")?.split_once('/')?;
    let (start, end) = span.split_once('-')?;
    let range = ByteRange {
        start: start.trim().parse().ok()?,
        end: end.trim().parse().ok()?,
    };
    let total: u64 = total.trim().parse().ok()?;
    (range.start <= range.end && range.end < total).then_some((range, total))
}

/// Whether a Content-Range gives the object's length as 0 (`bytes 0-0/0`).
fn of_nothing(value: &HeaderValue) -> bool {
    let total = value.to_str().ok().and_then(|value| value.rsplit_once('/'));
    total.is_some_and(|(_, total)| total.trim() == "0")
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
    use reqwest::header::HeaderName;

    fn headers(pairs: &[(HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn range(start: u64, end: u64) -> ByteRange {
        ByteRange { start, end }
    }

    #[test]
    fn content_range_gives_range_and_total() {
        let parse = |text: &str| content_range(&HeaderValue::from_str(text).unwrap());
        assert_eq!(
            parse("bytes 0-8388607/1073741824"),
            Some((range(0, 8_388_607), 1 << 30))
        );
        assert_eq!(parse("bytes 5-4/10"), None);
        assert_eq!(parse("bytes 0-10/10"), None);
        assert_eq!(parse("bytes 0-1/*"), None);
    }

    #[test]
    fn an_unsatisfied_range_may_carry_the_length() {
        assert_eq!(
            unsatisfied_length(&headers(&[(CONTENT_RANGE, "bytes */0")])),
            Some(0)
        );
        assert_eq!(unsatisfied_length(&HeaderMap::new()), None);
    }

    fn shape(status: u16, pairs: &[(HeaderName, &str)]) -> Result<Option<Shape>> {
        let status = StatusCode::from_u16(status).unwrap();
        shape_of(status, &headers(pairs), Some(range(0, 99)), "GET x")
    }

    #[test]
    fn a_416_to_a_range_from_0_is_an_empty_object() {
        assert_eq!(shape(416, &[]).unwrap(), Some(Shape::Empty));
        let empty = shape(416, &[(CONTENT_RANGE, "bytes */0")]);
        assert_eq!(empty.unwrap(), Some(Shape::Empty));
        let not_empty = shape(416, &[(CONTENT_RANGE, "bytes */10")]);
        assert!(matches!(not_empty, Err(Error::Protocol { .. })));
    }

    #[test]
    fn a_206_of_nothing_is_an_empty_object() {
        let s3rver = shape(
            206,
            &[(CONTENT_RANGE, "bytes 0-0/0"), (CONTENT_LENGTH, "0")],
        );
        assert_eq!(s3rver.unwrap(), Some(Shape::Empty));
        let bare = shape(206, &[(CONTENT_RANGE, "bytes 0-0/0")]);
        assert_eq!(bare.unwrap(), Some(Shape::Empty));
        let lying = shape(
            206,
            &[(CONTENT_RANGE, "bytes 0-0/0"), (CONTENT_LENGTH, "5")],
        );
        assert!(matches!(lying, Err(Error::Protocol { .. })), "{lying:?}");
    }

    #[test]
    fn a_200_with_a_partial_content_range_is_that_part() {
        // `rclone serve s3` answers a ranged GET so.
        let rclone = shape(
            200,
            &[(CONTENT_RANGE, "bytes 0-99/1000"), (CONTENT_LENGTH, "100")],
        );
        assert_eq!(
            rclone.unwrap(),
            Some(Shape::Partial {
                range: range(0, 99),
                total: 1000
            })
        );
        let whole = shape(200, &[(CONTENT_RANGE, "bytes 0-99/100")]);
        assert_eq!(whole.unwrap(), Some(Shape::Whole { length: Some(100) }));
        let plain = shape(200, &[(CONTENT_LENGTH, "7")]);
        assert_eq!(plain.unwrap(), Some(Shape::Whole { length: Some(7) }));
    }

    #[test]
    fn status_range_and_length_must_agree() {
        let disagree = [
            shape(206, &[(CONTENT_LENGTH, "100")]),
            shape(
                206,
                &[(CONTENT_RANGE, "bytes 0-99/1000"), (CONTENT_LENGTH, "99")],
            ),
            shape(
                200,
                &[(CONTENT_RANGE, "bytes 0-99/1000"), (CONTENT_LENGTH, "1000")],
            ),
            shape(200, &[(CONTENT_RANGE, "bytes 0-99/*")]),
            shape(206, &[(CONTENT_RANGE, "bytes */1000")]),
        ];
        for answer in disagree {
            assert!(
                matches!(answer, Err(Error::Protocol { .. })),
                "{:?}",
                answer.map(|_| ())
            );
        }
    }

    /// Statuses and headers a server could send: every answer is a shape or an error,
    /// never a panic (`make fuzz` runs many more cases).
    mod fuzz {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #[test]
            fn any_status_and_range_headers_give_a_shape_or_an_error(
                status in prop::sample::select(vec![200u16, 206, 416, 304, 500]),
                content_range in prop::option::of("bytes [0-9*]{0,21}-?[0-9]{0,21}/?[0-9*]{0,21}"),
                content_length in prop::option::of("[0-9]{0,21}"),
                start in any::<u64>(),
                length in 0u64..1 << 40,
            ) {
                let mut pairs = Vec::new();
                if let Some(value) = &content_range {
                    pairs.push((CONTENT_RANGE, value.as_str()));
                }
                if let Some(value) = &content_length {
                    pairs.push((CONTENT_LENGTH, value.as_str()));
                }
                let asked = ByteRange { start, end: start.saturating_add(length) };
                let status = StatusCode::from_u16(status).unwrap();
                if let Ok(Some(Shape::Partial { range, total })) =
                    shape_of(status, &headers(&pairs), Some(asked), "GET x")
                {
                    prop_assert!(range.start <= range.end && range.end < total);
                }
            }
        }
    }
}
