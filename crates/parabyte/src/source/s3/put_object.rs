//! PutObject: one object in one request, with its CRC64NVME for the store to check, and
//! the headers every write shares (conditions, content type, metadata).

use reqwest::header::{HeaderMap, ETAG};

use super::checksum_fallback::{check_etag, content_md5, md5_of};
use super::{Call, S3Store};
use crate::checksum::{Crc, FullChecksum};
use crate::counters::RequestKind;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::source::{Encryption, WriteBody, WriteOptions, Written};

/// The header a CRC64NVME travels in, requests and answers alike.
pub(super) const CRC64NVME_HEADER: &str = "x-amz-checksum-crc64nvme";

impl S3Store {
    pub(super) async fn put_object(
        &self,
        object: &S3Url,
        body: WriteBody,
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        let what = format!("PUT {object}");
        let checksum = render_crc64nvme(crc64nvme);
        let metadata = metadata_headers(options);
        let mut headers = object_headers(options, &metadata);
        let md5 = match self.md5_instead() {
            true => Some(md5_of(&body).await?),
            false => None,
        };
        let content_md5 = md5.as_ref().map(content_md5);
        match &content_md5 {
            Some(content_md5) => headers.push(("content-md5", content_md5)),
            None => headers.extend(checksum_headers(&checksum)),
        }
        if options.no_clobber {
            headers.push(("if-none-match", "*"));
        }
        let response = self
            .request(&Call {
                method: &reqwest::Method::PUT,
                kind: RequestKind::Put,
                bucket: &object.bucket,
                key: &object.key,
                query: "",
                headers: &headers,
                what: &what,
                body: Some(&body),
            })
            .await?;
        if !response.status().is_success() {
            let error = self.write_error(response, &what, &object.bucket).await;
            return Err(refused_write(error, object, options));
        }
        if let Some(md5) = &md5 {
            check_etag(&what, response.headers(), md5)?;
            self.counters
                .count_sent_with_md5(format!("s3://{}/{}", object.bucket, object.key));
        }
        let mut written = written(response.headers());
        written.md5_checked = md5.is_some();
        Ok(written)
    }
}

/// The headers that send a body's CRC64NVME. The algorithm header is what the AWS SDKs
/// send beside it, and moto reads the checksum only when it is there.
pub(super) fn checksum_headers(checksum: &str) -> [(&'static str, &str); 2] {
    [
        ("x-amz-sdk-checksum-algorithm", "CRC64NVME"),
        (CRC64NVME_HEADER, checksum),
    ]
}

/// A CRC64NVME as S3's headers and XML carry it: base64 of its big-endian bytes.
pub(super) fn render_crc64nvme(value: u64) -> String {
    FullChecksum {
        algorithm: Crc::Crc64Nvme,
        value,
    }
    .render()
}

/// The CRC64NVME an answer names, when it names a well-formed one.
pub(super) fn parse_crc64nvme(text: &str) -> Option<u64> {
    FullChecksum::parse(Crc::Crc64Nvme, text).map(|checksum| checksum.value)
}

/// `x-amz-meta-NAME` for each metadata entry, owned so the headers can borrow them.
pub(super) fn metadata_headers(options: &WriteOptions) -> Vec<(String, &str)> {
    options
        .metadata
        .iter()
        .map(|(name, value)| (format!("x-amz-meta-{name}"), value.as_str()))
        .collect()
}

/// The headers an object is stored with: its content headers, storage class, encryption
/// and metadata.
pub(super) fn object_headers<'a>(
    options: &'a WriteOptions,
    metadata: &'a [(String, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut headers = Vec::with_capacity(metadata.len() + 6);
    let named = [
        ("content-type", &options.content_type),
        ("cache-control", &options.cache_control),
        ("content-encoding", &options.content_encoding),
        ("content-disposition", &options.content_disposition),
        ("content-language", &options.content_language),
        ("x-amz-storage-class", &options.storage_class),
    ];
    for (name, value) in named {
        if let Some(value) = value {
            headers.push((name, value.as_str()));
        }
    }
    match &options.encryption {
        None => {}
        Some(Encryption::Aes256) => headers.push(("x-amz-server-side-encryption", "AES256")),
        Some(Encryption::Kms { key_id }) => {
            headers.push(("x-amz-server-side-encryption", "aws:kms"));
            if let Some(key_id) = key_id {
                headers.push(("x-amz-server-side-encryption-aws-kms-key-id", key_id));
            }
        }
    }
    headers.extend(metadata.iter().map(|(name, value)| (name.as_str(), *value)));
    headers
}

/// What the store's answer to a finished write says of the new object.
pub(super) fn written(headers: &HeaderMap) -> Written {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    Written {
        etag: header(ETAG.as_str()).map(str::to_owned),
        crc64nvme: header(CRC64NVME_HEADER).and_then(parse_crc64nvme),
        md5_checked: false,
    }
}

/// A refused conditional write is an existing key kept, not a changed object.
pub(super) fn refused_write(error: Error, object: &S3Url, options: &WriteOptions) -> Error {
    match error {
        Error::Changed { .. } if options.no_clobber => Error::Exists {
            what: object.to_string(),
        },
        other => other,
    }
}
