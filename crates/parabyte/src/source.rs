//! The seam between "talk to a store" and "move bytes": the engine asks a [`RangeSource`]
//! for byte ranges and gets back what the response says about the object plus its body.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures::Stream;

use crate::error::Result;
use crate::location::S3Url;
use crate::verify::FullChecksum;

/// A response body, chunk by chunk.
pub(crate) type Body = Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>;

/// Inclusive byte range, as HTTP writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteRange {
    pub start: u64,
    pub end: u64,
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bytes={}-{}", self.start, self.end)
    }
}

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
    pub etag: Option<String>,
    /// The whole object's CRC, when the store sent one with this response.
    pub checksum: Option<FullChecksum>,
    /// The MD5 of the whole object, when the ETag is one.
    pub content_md5: Option<[u8; 16]>,
    pub body: Body,
}

/// Something that serves byte ranges of objects.
pub(crate) trait RangeSource: Send + Sync + 'static {
    /// GET `range` of `object` (the whole object when `None`), pinned to `if_match` when given.
    fn fetch(
        &self,
        object: &S3Url,
        range: Option<ByteRange>,
        if_match: Option<&str>,
    ) -> impl Future<Output = Result<Fetched>> + Send;
}

/// ETags compare without quotes or a weak-validator prefix: listings and GETs differ there.
pub(crate) fn same_etag(a: &str, b: &str) -> bool {
    fn bare(tag: &str) -> &str {
        tag.trim_start_matches("W/").trim_matches('"')
    }
    bare(a) == bare(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_compare_without_quotes() {
        assert!(same_etag("\"abc\"", "abc"));
        assert!(same_etag("W/\"abc\"", "\"abc\""));
        assert!(!same_etag("\"abc\"", "\"abd\""));
    }
}
