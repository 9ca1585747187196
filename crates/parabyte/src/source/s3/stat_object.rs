//! HeadObject for `parabyte stat`: what the store keeps about one object, as it says it.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use reqwest::header::{HeaderMap, CONTENT_LENGTH, CONTENT_TYPE, ETAG, LAST_MODIFIED};
use serde::Serialize;

use super::head_object::user_metadata;
use super::S3Store;
use crate::checksum::Crc;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::timestamp::Timestamp;

/// One object as a HEAD describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectInfo {
    /// `s3://bucket/key`.
    pub url: String,
    /// Bytes.
    pub size: u64,
    /// With its quotes, as the store sent it.
    pub etag: Option<String>,
    /// When it was last written.
    pub last_modified: Option<Timestamp>,
    /// `Content-Type`, as uploaded.
    pub content_type: Option<String>,
    /// `STANDARD` when the store names none, as S3 does.
    pub storage_class: String,
    /// The stored checksum's algorithm, value and type, e.g. `CRC64NVME`, `...==`,
    /// `FULL_OBJECT` (the type when the store says it).
    pub checksum: Option<StoredChecksum>,
    /// On a versioned bucket, the version described.
    pub version_id: Option<String>,
    /// The user metadata (`x-amz-meta-*`), names without the prefix.
    pub metadata: BTreeMap<String, String>,
}

/// A checksum as the store reports it, not interpreted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredChecksum {
    /// `CRC64NVME`, `CRC32C` or `CRC32`.
    pub algorithm: String,
    /// The header's value: base64, with `-N` for a composite of N parts.
    pub value: String,
    /// `FULL_OBJECT` or `COMPOSITE`, when the store says.
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

impl S3Store {
    /// HEAD `object` with `x-amz-checksum-mode: ENABLED`.
    pub(crate) async fn stat_object(&self, object: &S3Url) -> Result<ObjectInfo> {
        let what = format!("HEAD {object}");
        let checksums = [("x-amz-checksum-mode", "ENABLED")];
        let response = self.head(object, "", &checksums, &what).await?;
        info_from(object, response.headers()).map_err(|detail| Error::Protocol { what, detail })
    }
}

/// What the headers of a HEAD say; an answer without a usable Content-Length is no answer.
fn info_from(object: &S3Url, headers: &HeaderMap) -> std::result::Result<ObjectInfo, String> {
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let size = text(CONTENT_LENGTH.as_str())
        .and_then(|length| length.parse().ok())
        .ok_or("the answer has no Content-Length")?;
    let last_modified = text(LAST_MODIFIED.as_str())
        .and_then(|date| httpdate::parse_http_date(date).ok())
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .and_then(|since| i64::try_from(since.as_millis()).ok())
        .map(Timestamp::from_unix_millis);
    let checksum = Crc::HEADERS.iter().find_map(|(name, algorithm)| {
        Some(StoredChecksum {
            algorithm: algorithm.name().to_owned(),
            value: text(name)?.to_owned(),
            kind: text("x-amz-checksum-type").map(str::to_owned),
        })
    });
    let metadata = user_metadata(headers);
    Ok(ObjectInfo {
        url: object.to_string(),
        size,
        etag: text(ETAG.as_str()).map(str::to_owned),
        last_modified,
        content_type: text(CONTENT_TYPE.as_str()).map(str::to_owned),
        storage_class: text("x-amz-storage-class").unwrap_or("STANDARD").to_owned(),
        checksum,
        version_id: text("x-amz-version-id").map(str::to_owned),
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn a_head_reads_as_what_the_store_keeps() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("content-length", "1234"),
            ("etag", "\"abc-2\""),
            ("last-modified", "Wed, 25 Nov 2026 07:00:00 GMT"),
            ("content-type", "application/json"),
            ("x-amz-checksum-crc64nvme", "AAAAAAAAAAA="),
            ("x-amz-checksum-type", "FULL_OBJECT"),
            ("x-amz-meta-mtime", "1764054000"),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }
        let object = S3Url::parse("s3://b/k").unwrap();
        let info = info_from(&object, &headers).unwrap();
        assert_eq!(info.size, 1234);
        assert_eq!(info.etag.as_deref(), Some("\"abc-2\""));
        assert_eq!(info.storage_class, "STANDARD");
        assert_eq!(
            info.last_modified.map(Timestamp::unix_millis),
            Some(1_795_590_000_000)
        );
        let checksum = info.checksum.unwrap();
        assert_eq!(
            (checksum.algorithm.as_str(), checksum.kind.as_deref()),
            ("CRC64NVME", Some("FULL_OBJECT"))
        );
        assert_eq!(info.metadata["mtime"], "1764054000");
        headers.remove("content-length");
        assert!(info_from(&object, &headers).is_err());
    }
}
