//! What an S3 answer's headers say about the object's content: the checksum it keeps, the MD5
//! an ETag is, and whether a customer key encrypts it.

use reqwest::header::{HeaderMap, HeaderValue, ETAG};

use crate::checksum::{Crc, StoreChecksum};
use crate::validator::Validator;

/// The store's checksum among a response's headers: whole-object, or composite (`-N`) when
/// `x-amz-checksum-type` says so or the value carries a part count. A checksum header whose
/// value is none (not text, not base64 of the right width) is [`StoreChecksum::Malformed`]:
/// declared, so never a reason to check less. A value without a part count is read by the
/// ETag's part count when the store leaves it out: COMPOSITE with the ETag's count, or with
/// no type at all on a multipart object [`StoreChecksum::Unlabeled`] (moto labels neither).
pub(super) fn store_checksum(headers: &HeaderMap) -> Option<StoreChecksum> {
    let kind = headers
        .get("x-amz-checksum-type")
        .map(HeaderValue::as_bytes);
    let composite = kind.is_some_and(|kind| kind.eq_ignore_ascii_case(b"COMPOSITE"));
    let etag_parts = headers
        .get(ETAG)
        .and_then(|etag| etag.to_str().ok())
        .and_then(|etag| Validator::ETag(etag.to_owned()).upload_parts());
    Crc::HEADERS.iter().find_map(|(name, algorithm)| {
        let value = headers.get(*name)?;
        let checksum = match value.to_str() {
            Ok(text) => StoreChecksum::parse(*algorithm, text),
            Err(_) => StoreChecksum::Malformed(*algorithm),
        };
        Some(match (checksum, etag_parts) {
            (StoreChecksum::Full(crc), Some(parts)) if composite => {
                StoreChecksum::Composite { crc, parts }
            }
            (StoreChecksum::Full(_), None) if composite => StoreChecksum::Malformed(*algorithm),
            (StoreChecksum::Full(crc), Some(parts)) if kind.is_none() => {
                StoreChecksum::Unlabeled { crc, parts }
            }
            (checksum, _) => checksum,
        })
    })
}

/// The MD5 an ETag stands for, unless the object is encrypted by a key.
pub(super) fn content_md5(validator: Option<&Validator>, headers: &HeaderMap) -> Option<[u8; 16]> {
    validator
        .filter(|_| !encrypted_by_key(headers))
        .and_then(Validator::md5)
}

/// With SSE-KMS or a customer key the ETag is not the MD5 of the content.
pub(super) fn encrypted_by_key(headers: &HeaderMap) -> bool {
    let kms = headers
        .get("x-amz-server-side-encryption")
        .is_some_and(|value| value.as_bytes().starts_with(b"aws:kms"));
    kms || headers.contains_key("x-amz-server-side-encryption-customer-algorithm")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    #[test]
    fn a_declared_checksum_that_is_none_is_malformed_not_absent() {
        let crc32 = "x-amz-checksum-crc32";
        assert_eq!(store_checksum(&headers(&[])), None);
        let malformed = Some(StoreChecksum::Malformed(Crc::Crc32));
        assert_eq!(store_checksum(&headers(&[(crc32, b"!!")])), malformed);
        assert_eq!(store_checksum(&headers(&[(crc32, b"\xff\xfe")])), malformed);
        let composite_without_parts =
            headers(&[(crc32, b"DUoRhQ=="), ("x-amz-checksum-type", b"COMPOSITE")]);
        assert_eq!(store_checksum(&composite_without_parts), malformed);
        let whole = store_checksum(&headers(&[(crc32, b"DUoRhQ==")]));
        assert!(matches!(whole, Some(StoreChecksum::Full(_))), "{whole:?}");
    }

    #[test]
    fn a_value_without_a_part_count_takes_the_etags() {
        let crc32 = "x-amz-checksum-crc32";
        let multipart: &[u8] = b"\"9ace7737ef330b667f76f612a2ffc1f3-2\"";
        let unlabeled = store_checksum(&headers(&[(crc32, b"DUoRhQ=="), ("etag", multipart)]));
        assert!(
            matches!(unlabeled, Some(StoreChecksum::Unlabeled { parts: 2, .. })),
            "{unlabeled:?}"
        );
        let composite = store_checksum(&headers(&[
            (crc32, b"DUoRhQ=="),
            ("etag", multipart),
            ("x-amz-checksum-type", b"COMPOSITE"),
        ]));
        assert!(
            matches!(composite, Some(StoreChecksum::Composite { parts: 2, .. })),
            "{composite:?}"
        );
        let full = store_checksum(&headers(&[
            (crc32, b"DUoRhQ=="),
            ("etag", multipart),
            ("x-amz-checksum-type", b"FULL_OBJECT"),
        ]));
        assert!(matches!(full, Some(StoreChecksum::Full(_))), "{full:?}");
        let single: &[u8] = b"\"9ace7737ef330b667f76f612a2ffc1f3\"";
        let whole = store_checksum(&headers(&[(crc32, b"DUoRhQ=="), ("etag", single)]));
        assert!(matches!(whole, Some(StoreChecksum::Full(_))), "{whole:?}");
    }
}
