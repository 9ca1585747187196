//! What an S3 answer's headers say about the object's content: the checksum it keeps, the MD5
//! an ETag is, and whether a customer key encrypts it.

use reqwest::header::HeaderMap;

use crate::checksum::{Crc, StoreChecksum};
use crate::validator::Validator;

/// The store's checksum among a response's headers: whole-object, or composite (`-N`) when
/// `x-amz-checksum-type` says so or the value carries a part count.
pub(super) fn store_checksum(headers: &HeaderMap) -> Option<StoreChecksum> {
    let composite = headers
        .get("x-amz-checksum-type")
        .is_some_and(|kind| kind.as_bytes().eq_ignore_ascii_case(b"COMPOSITE"));
    Crc::HEADERS.iter().find_map(|(name, algorithm)| {
        let checksum = StoreChecksum::parse(*algorithm, headers.get(*name)?.to_str().ok()?)?;
        // A composite type with no part count is no value we can rebuild.
        (!composite || matches!(checksum, StoreChecksum::Composite { .. })).then_some(checksum)
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
