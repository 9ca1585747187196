//! Multipart uploads: create (asking for a whole-object CRC64NVME), one part with its CRC,
//! complete (whose 200 may carry an error), abort.

use bytes::Bytes;
use reqwest::header::ETAG;

use super::checksum_fallback::{check_etag, content_md5, md5_of};
use super::endpoint::encode_query_value;
use super::errors::{error_from_response, error_in_200, read_body_up_to, read_bounded_body};
use super::put_object::{
    checksum_headers, metadata_headers, object_headers, parse_crc64nvme, refused_write,
    render_crc64nvme, CRC64NVME_HEADER,
};
use super::upload_xml::{complete_body, completed, parts_page, upload_id, Completed};
use super::{Call, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::source::{ListedPart, UploadedPart, WriteBody, WriteOptions, Written};

/// ListParts pages read for one upload at most (1,000 parts a page, 10,000 parts).
const MAX_PART_PAGES: usize = 10;
/// The most of one ListParts page read.
const MAX_PARTS_PAGE: usize = 4 * 1024 * 1024;

impl S3Store {
    pub(super) async fn create_multipart_upload(
        &self,
        object: &S3Url,
        options: &WriteOptions,
    ) -> Result<String> {
        let what = format!("CreateMultipartUpload {object}");
        let metadata = metadata_headers(options);
        let mut headers = object_headers(options, &metadata);
        if !self.md5_instead() && !options.without_checksum {
            headers.push(("x-amz-checksum-algorithm", "CRC64NVME"));
            headers.push(("x-amz-checksum-type", "FULL_OBJECT"));
        }
        let response = self
            .request(&Call {
                method: &reqwest::Method::POST,
                kind: RequestKind::Multipart,
                bucket: &object.bucket,
                key: &object.key,
                query: "uploads=",
                headers: &headers,
                what: &what,
                body: None,
            })
            .await?;
        if !response.status().is_success() {
            return Err(self.write_error(response, &what, &object.bucket).await);
        }
        let body = read_bounded_body(response).await;
        upload_id(&body).map_err(|detail| Error::Protocol { what, detail })
    }

    pub(super) async fn upload_part_of(
        &self,
        object: &S3Url,
        upload_id: &str,
        number: u32,
        body: WriteBody,
        crc64nvme: u64,
    ) -> Result<UploadedPart> {
        let what = format!("UploadPart {object} part {number}");
        let query = format!(
            "partNumber={number}&uploadId={}",
            encode_query_value(upload_id)
        );
        let checksum = render_crc64nvme(crc64nvme);
        let md5 = match self.md5_instead() {
            true => Some(md5_of(&body).await?),
            false => None,
        };
        let content_md5 = md5.as_ref().map(content_md5);
        let headers = match &content_md5 {
            Some(content_md5) => vec![("content-md5", content_md5.as_str())],
            None => checksum_headers(&checksum).to_vec(),
        };
        let response = self
            .request(&Call {
                method: &reqwest::Method::PUT,
                kind: RequestKind::Put,
                bucket: &object.bucket,
                key: &object.key,
                query: &query,
                headers: &headers,
                what: &what,
                body: Some(&body),
            })
            .await?;
        if !response.status().is_success() {
            return Err(self.write_error(response, &what, &object.bucket).await);
        }
        if let Some(md5) = &md5 {
            check_etag(&what, response.headers(), md5)?;
        }
        let etag = response.headers().get(ETAG).and_then(|v| v.to_str().ok());
        // Without its ETag the part cannot be named in the complete: send it again.
        let Some(etag) = etag.filter(|etag| !etag.is_empty()) else {
            return Err(Error::Protocol {
                what,
                detail: "the store took the part but named no ETag for it".into(),
            });
        };
        let echoed = response.headers().get(CRC64NVME_HEADER);
        if let Some(echoed) = echoed.and_then(|v| v.to_str().ok()) {
            if parse_crc64nvme(echoed) != Some(crc64nvme) {
                return Err(Error::Corrupt {
                    what,
                    detail: format!(
                        "the store computed CRC64NVME {echoed}, parabyte sent {checksum}"
                    ),
                });
            }
        }
        Ok(UploadedPart {
            number,
            etag: etag.to_owned(),
            crc64nvme,
        })
    }

    pub(super) async fn complete_multipart_upload(
        &self,
        object: &S3Url,
        upload_id: &str,
        parts: &[UploadedPart],
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        let what = format!("CompleteMultipartUpload {object}");
        let query = format!("uploadId={}", encode_query_value(upload_id));
        let checksum = render_crc64nvme(crc64nvme);
        let md5 = self.md5_instead();
        let mut headers = match md5 || options.without_checksum {
            true => vec![],
            false => vec![
                (CRC64NVME_HEADER, checksum.as_str()),
                ("x-amz-checksum-type", "FULL_OBJECT"),
            ],
        };
        if options.no_clobber {
            headers.push(("if-none-match", "*"));
        }
        let with_checksums = !md5 && !options.without_checksum;
        let body = WriteBody::from(Bytes::from(complete_body(parts, with_checksums)));
        let response = self
            .request(&Call {
                method: &reqwest::Method::POST,
                kind: RequestKind::Multipart,
                bucket: &object.bucket,
                key: &object.key,
                query: &query,
                headers: &headers,
                what: &what,
                body: Some(&body),
            })
            .await?;
        if !response.status().is_success() {
            let error = self.write_error(response, &what, &object.bucket).await;
            return Err(refused_write(error, object, options));
        }
        let mut done = super::put_object::written(response.headers());
        if md5 && !options.without_checksum {
            // Each part went with its Content-MD5, which the store checked.
            done.md5_checked = true;
            self.counters
                .count_sent_with_md5(format!("s3://{}/{}", object.bucket, object.key));
        }
        let body = read_bounded_body(response).await;
        match completed(&body).map_err(|detail| Error::Protocol {
            what: what.clone(),
            detail,
        })? {
            Completed::Done { etag, crc64nvme } => {
                done.etag = etag.or(done.etag);
                done.crc64nvme = crc64nvme
                    .as_deref()
                    .and_then(parse_crc64nvme)
                    .or(done.crc64nvme);
                Ok(done)
            }
            // An InternalError here is a 500 in all but status: retried like one.
            Completed::Failed(document) => {
                let error = error_in_200(&document, &what, &object.bucket, self.anonymous());
                Err(refused_write(error, object, options))
            }
        }
    }

    pub(super) async fn list_parts_of(
        &self,
        object: &S3Url,
        upload_id: &str,
    ) -> Result<Option<Vec<ListedPart>>> {
        let what = format!("ListParts {object}");
        let mut parts = Vec::new();
        let mut marker = None;
        // 10,000 parts, 1,000 a page: a store that pages on forever is cut off.
        for _ in 0..=MAX_PART_PAGES {
            let query = match marker {
                Some(marker) => format!(
                    "part-number-marker={marker}&uploadId={}",
                    encode_query_value(upload_id)
                ),
                None => format!("uploadId={}", encode_query_value(upload_id)),
            };
            let response = self
                .request(&Call {
                    method: &reqwest::Method::GET,
                    kind: RequestKind::Multipart,
                    bucket: &object.bucket,
                    key: &object.key,
                    query: &query,
                    headers: &[],
                    what: &what,
                    body: None,
                })
                .await?;
            if response.status().as_u16() == 404 {
                return Ok(None);
            }
            if !response.status().is_success() {
                let error =
                    error_from_response(response, &what, &object.bucket, self.anonymous()).await;
                return Err(error);
            }
            // A page of 1,000 parts is about 250 KiB.
            let body = read_body_up_to(response, MAX_PARTS_PAGE).await;
            let page = parts_page(&body).map_err(|detail| Error::Protocol {
                what: what.clone(),
                detail,
            })?;
            parts.extend(page.parts);
            match page.next {
                Some(next) if Some(next) != marker => marker = Some(next),
                _ => return Ok(Some(parts)),
            }
        }
        Err(Error::Protocol {
            what,
            detail: "the store kept paging past 10,000 parts".into(),
        })
    }

    pub(super) async fn abort_multipart_upload(
        &self,
        object: &S3Url,
        upload_id: &str,
    ) -> Result<()> {
        let what = format!("AbortMultipartUpload {object}");
        let query = format!("uploadId={}", encode_query_value(upload_id));
        let response = self
            .request(&Call {
                method: &reqwest::Method::DELETE,
                kind: RequestKind::Multipart,
                bucket: &object.bucket,
                key: &object.key,
                query: &query,
                headers: &[],
                what: &what,
                body: None,
            })
            .await?;
        match response.status().as_u16() {
            // Gone already is what an abort asks for.
            200..=299 | 404 => Ok(()),
            _ => Err(error_from_response(response, &what, &object.bucket, self.anonymous()).await),
        }
    }
}
