//! Copies inside the store: CopyObject (a whole object up to 5 GiB) and UploadPartCopy (one
//! part of a multipart upload from a range of another object), each with the CRC64NVME the
//! store computes. No byte passes through parabyte; a 200 may carry an error.

use super::endpoint::{copy_source, encode_query_value};
use super::errors::{error_in_200, read_bounded_body};
use super::put_object::{metadata_headers, object_headers, parse_crc64nvme, refused_write};
use super::upload_xml::{copied, Completed};
use super::{Call, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::{UploadedPart, WriteOptions, Written};
use crate::validator::Validator;

impl S3Store {
    pub(super) async fn copy_object_to(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        to: &S3Url,
        options: &WriteOptions,
    ) -> Result<Written> {
        let what = format!("CopyObject {from} to {to}");
        let source = copy_source(&from.bucket, &from.key);
        let metadata = metadata_headers(options);
        let mut headers = object_headers(options, &metadata);
        headers.push(("x-amz-copy-source", &source));
        if let Some(Validator::ETag(etag)) = pinned {
            // The version that was listed: a source replaced meanwhile fails (412).
            headers.push(("x-amz-copy-source-if-match", etag));
        }
        if !self.md5_instead() {
            headers.push(("x-amz-checksum-algorithm", "CRC64NVME"));
        }
        // The source's metadata and content headers are kept, as aws s3 cp keeps them.
        headers.push(("x-amz-metadata-directive", "COPY"));
        if options.no_clobber {
            headers.push(("if-none-match", "*"));
        }
        let done = self
            .copy_request(to, "", &headers, &what, "CopyObject")
            .await
            .map_err(|error| refused_write(error, to, options))?;
        Ok(Written {
            etag: done.0,
            crc64nvme: done.1,
            md5_checked: false,
        })
    }

    pub(super) async fn upload_part_copy_of(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        range: ByteRange,
        to: &S3Url,
        upload_id: &str,
        number: u32,
    ) -> Result<UploadedPart> {
        let what = format!("UploadPartCopy {from} {range} to {to} part {number}");
        let source = copy_source(&from.bucket, &from.key);
        let range_header = range.to_string();
        let mut headers = vec![
            ("x-amz-copy-source", source.as_str()),
            ("x-amz-copy-source-range", range_header.as_str()),
        ];
        let etag = match pinned {
            Some(Validator::ETag(etag)) => Some(etag.as_str()),
            _ => None,
        };
        if let Some(etag) = etag {
            // Every part of one version: a source replaced meanwhile fails (412).
            headers.push(("x-amz-copy-source-if-match", etag));
        }
        let query = format!(
            "partNumber={number}&uploadId={}",
            encode_query_value(upload_id)
        );
        let (etag, crc) = self
            .copy_request(to, &query, &headers, &what, "UploadPartCopy")
            .await?;
        match etag {
            // A copy in parts completes without checksums (`WriteOptions::without_checksum`):
            // what a store names for a copied part is not relied on.
            Some(etag) => Ok(UploadedPart {
                number,
                etag,
                crc64nvme: crc.unwrap_or_default(),
            }),
            None => Err(Error::Protocol {
                what,
                detail: "the store copied the part but named no ETag for it".into(),
            }),
        }
    }

    /// One copy request: its ETag and CRC64NVME, or the error of its status or of its body.
    async fn copy_request(
        &self,
        to: &S3Url,
        query: &str,
        headers: &[(&str, &str)],
        what: &str,
        operation: &str,
    ) -> Result<(Option<String>, Option<u64>)> {
        let response = self
            .request(&Call {
                method: &reqwest::Method::PUT,
                kind: RequestKind::Copy,
                bucket: &to.bucket,
                key: &to.key,
                query,
                headers,
                what,
                body: None,
            })
            .await?;
        if !response.status().is_success() {
            return Err(self.write_error(response, what, &to.bucket).await);
        }
        let body = read_bounded_body(response).await;
        let answer = copied(&body, operation).map_err(|detail| Error::Protocol {
            what: what.to_owned(),
            detail,
        })?;
        match answer {
            Completed::Done { etag, crc64nvme } => {
                Ok((etag, crc64nvme.as_deref().and_then(parse_crc64nvme)))
            }
            Completed::Failed(document) => {
                Err(error_in_200(&document, what, &to.bucket, self.anonymous()))
            }
        }
    }
}
