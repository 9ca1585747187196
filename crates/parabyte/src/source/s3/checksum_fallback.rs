//! Stores that refuse checksum headers. Writes carry CRC64NVMEs (`x-amz-checksum-*`), which
//! older S3-compatible servers answer with an error rather than ignore. The first such
//! refusal turns every later write of the run to Content-MD5, which every S3 server checks:
//! a body's MD5 goes in its headers, its ETag must name it back, and the request that was
//! refused is sent again at once. The summary counts the objects sent so.

use std::sync::atomic::Ordering::Relaxed;

use base64::Engine as _;
use futures::StreamExt;
use md5::{Digest as _, Md5};
use reqwest::header::HeaderMap;

use super::checksum_headers::encrypted_by_key;
use super::errors::{checksum_refusal, classify, read_error, refuses_checksums, CHECKSUM_HEADERS};

use super::S3Store;
use crate::error::{Error, Result};
use crate::source::http_client::Response;
use crate::source::write_body::WriteBody;

impl S3Store {
    /// Whether writes go with Content-MD5, the store having refused checksum headers.
    pub(super) fn md5_instead(&self) -> bool {
        self.md5_instead.load(Relaxed)
    }

    /// Send a write; when the store refuses its checksum headers, send it again with
    /// Content-MD5, as every later write of the run will be.
    pub(super) async fn falling_back<T, F, Fut>(&self, write: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        match write().await {
            Err(Error::Unsupported { operation, .. }) if operation == CHECKSUM_HEADERS => {
                self.md5_instead.store(true, Relaxed);
                write().await
            }
            other => other,
        }
    }

    /// The error of a failed write: a refusal of checksum headers is told apart, so that
    /// [`S3Store::falling_back`] sends the write again without them. Such a refusal names
    /// the header, so it comes only to a write that carried one, which may have set out
    /// before an earlier refusal turned the run to Content-MD5.
    pub(super) async fn write_error(&self, response: Response, what: &str, bucket: &str) -> Error {
        let status = response.status().as_u16();
        let document = read_error(response).await;
        if refuses_checksums(status, &document.code, &document.message) {
            return checksum_refusal();
        }
        let (code, message) = (&document.code, &document.message);
        classify(status, code, message, what, bucket, self.anonymous())
    }
}

/// The MD5 of a body, read through once (a streamed body from its file).
pub(super) async fn md5_of(body: &WriteBody) -> Result<[u8; 16]> {
    let mut md5 = Md5::new();
    let mut chunks = body.open();
    while let Some(chunk) = chunks.next().await {
        md5.update(chunk?);
    }
    Ok(md5.finalize().into())
}

/// `Content-MD5`'s value: base64 of the digest.
pub(super) fn content_md5(md5: &[u8; 16]) -> String {
    base64::engine::general_purpose::STANDARD.encode(md5)
}

/// A write sent with Content-MD5 must be named back by its ETag (unless a KMS or customer
/// key encrypts it, when the ETag is no MD5).
pub(super) fn check_etag(what: &str, headers: &HeaderMap, md5: &[u8; 16]) -> Result<()> {
    let etag = headers
        .get(reqwest::header::ETAG)
        .and_then(|v| v.to_str().ok());
    let named = etag.map(|etag| etag.trim_matches('"').to_ascii_lowercase());
    match named {
        Some(named) if named != hex::encode(md5) && !encrypted_by_key(headers) => {
            Err(Error::Corrupt {
                what: what.to_owned(),
                detail: format!(
                    "the store named ETag {named} for a body whose MD5 is {}",
                    hex::encode(md5)
                ),
            })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_of_checksum_headers_is_told_from_other_errors() {
        let r2 = "Header 'x-amz-checksum-algorithm' with value 'CRC64NVME' not implemented";
        assert!(refuses_checksums(501, "NotImplemented", r2));
        assert!(refuses_checksums(501, "NotImplemented", ""));
        assert!(refuses_checksums(501, "", ""));
        assert!(refuses_checksums(
            400,
            "InvalidArgument",
            "Unsupported header 'x-amz-checksum-crc64nvme' received"
        ));
        assert!(!refuses_checksums(
            400,
            "InvalidArgument",
            "Invalid storage class."
        ));
        assert!(!refuses_checksums(
            501,
            "NotImplemented",
            "SSE-KMS is not supported"
        ));
        assert!(!refuses_checksums(400, "BadDigest", "checksum mismatch"));
        assert!(!refuses_checksums(403, "AccessDenied", "Access Denied"));
    }

    #[tokio::test]
    async fn a_streamed_body_is_read_through_for_its_md5() {
        let data = bytes::Bytes::from_static(b"the quick brown fox");
        let parts = [data.slice(..4), data.slice(4..)];
        let open: crate::source::write_body::OpenBody = std::sync::Arc::new(move || {
            let chunks = parts.clone().map(Ok::<_, Error>);
            Box::pin(futures::stream::iter(chunks))
        });
        let streamed = WriteBody::Streamed {
            length: data.len() as u64,
            open,
        };
        let whole: [u8; 16] = Md5::digest(&data).into();
        assert_eq!(md5_of(&streamed).await.unwrap(), whole);
        assert_eq!(md5_of(&WriteBody::Memory(data)).await.unwrap(), whole);
    }
}
