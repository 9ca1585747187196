//! ListMultipartUploads: the uploads begun under a prefix and neither completed nor
//! aborted. Their parts stay stored (and, on AWS, billed) until each is aborted: what an
//! interrupted `cp` keeps for its next run, or what another tool left behind.

use std::collections::HashSet;

use quick_xml::events::Event;
use quick_xml::Reader;
use serde::Serialize;

use super::endpoint::encode_query_value;
use super::errors::{error_from_response, read_body_up_to};
use super::xml::push_reference;
use super::{Call, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::timestamp::Timestamp;

/// A page of 1,000 uploads with the longest keys is about 2 MiB.
const MAX_PAGE_BYTES: usize = 8 << 20;
/// The most pages followed: ten million unfinished uploads, far past any real bucket.
const MAX_PAGES: usize = 10_000;

/// One multipart upload begun and not finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnfinishedUpload {
    /// The key it would complete into.
    #[serde(serialize_with = "as_text")]
    pub url: S3Url,
    /// What aborts it.
    pub upload_id: String,
    /// When it was begun, as the store says.
    pub initiated: Option<Timestamp>,
}

fn as_text<S: serde::Serializer>(
    url: &S3Url,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.collect_str(url)
}

/// One page: its uploads, and the markers the next page starts after.
#[derive(Debug, Default, PartialEq, Eq)]
struct UploadsPage {
    uploads: Vec<(String, String, Option<Timestamp>)>,
    next: Option<(String, String)>,
}

impl S3Store {
    /// Every unfinished multipart upload of `bucket` whose key starts with `prefix`, page
    /// after page.
    pub(crate) async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
    ) -> Result<Vec<UnfinishedUpload>> {
        let what = format!("ListMultipartUploads s3://{bucket}/{prefix}");
        let mut uploads = Vec::new();
        let mut markers: Option<(String, String)> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut query = format!("prefix={}&uploads=", encode_query_value(prefix));
            if let Some((key, id)) = &markers {
                query = format!(
                    "key-marker={}&prefix={}&upload-id-marker={}&uploads=",
                    encode_query_value(key),
                    encode_query_value(prefix),
                    encode_query_value(id)
                );
            }
            let response = self
                .request(&Call {
                    method: &reqwest::Method::GET,
                    kind: RequestKind::Multipart,
                    bucket,
                    key: "",
                    query: &query,
                    headers: &[],
                    what: &what,
                    body: None,
                })
                .await?;
            if !response.status().is_success() {
                return Err(error_from_response(response, &what, bucket, self.anonymous()).await);
            }
            let body = read_body_up_to(response, MAX_PAGE_BYTES).await;
            let page = uploads_page(&body).map_err(|detail| Error::Protocol {
                what: what.clone(),
                detail,
            })?;
            uploads.extend(page.uploads.into_iter().map(|(key, upload_id, initiated)| {
                UnfinishedUpload {
                    url: S3Url {
                        bucket: bucket.to_owned(),
                        key,
                    },
                    upload_id,
                    initiated,
                }
            }));
            match page.next {
                // Markers given twice would loop forever.
                Some(next) if seen.insert(next.clone()) => markers = Some(next),
                Some(_) => {
                    return Err(Error::Protocol {
                        what,
                        detail: "the store gave the same markers twice".into(),
                    })
                }
                None => return Ok(uploads),
            }
        }
        Err(Error::Protocol {
            what,
            detail: format!("the upload list goes on past {MAX_PAGES} pages"),
        })
    }
}

/// Parse a ListMultipartUploads page. An upload whose key or ID cannot be read fails the
/// page: nothing is aborted by a guess at its name.
fn uploads_page(body: &[u8]) -> std::result::Result<UploadsPage, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the answer is not UTF-8".to_owned())?;
    let mut reader = Reader::from_str(text);
    let mut page = UploadsPage::default();
    let (mut truncated, mut next_key, mut next_id) = (false, None, None);
    let mut value = String::new();
    let mut upload: Option<[Option<String>; 3]> = None;
    let mut root = None;
    loop {
        match reader
            .read_event()
            .map_err(|e| format!("the answer is not XML: {e}"))?
        {
            Event::Start(start) => {
                value.clear();
                let name = start.local_name().as_ref().to_owned();
                root.get_or_insert_with(|| name.clone());
                if name == "Upload" {
                    upload = Some(Default::default());
                }
            }
            Event::Text(chunk) => value.push_str(&chunk),
            Event::GeneralRef(reference) => push_reference(&mut value, &reference)?,
            Event::End(end) => {
                let name = end.local_name().as_ref().to_owned();
                let slot = ["Key", "UploadId", "Initiated"]
                    .iter()
                    .position(|wanted| *wanted == name);
                match (&mut upload, slot, name.as_str()) {
                    (Some(fields), Some(index), _) => fields[index] = Some(value.clone()),
                    (Some(fields), None, "Upload") => {
                        let [key, id, initiated] = std::mem::take(fields);
                        let (Some(key), Some(id)) = (key, id) else {
                            return Err("a listed upload lacks its key or ID".into());
                        };
                        let initiated = initiated.and_then(|t| Timestamp::parse_iso8601(t.trim()));
                        page.uploads.push((key, id, initiated));
                        upload = None;
                    }
                    (None, _, "IsTruncated") => truncated = value.trim() == "true",
                    (None, _, "NextKeyMarker") => next_key = Some(value.clone()),
                    (None, _, "NextUploadIdMarker") => next_id = Some(value.clone()),
                    _ => {}
                }
                value.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if root.as_deref() != Some("ListMultipartUploadsResult") {
        return Err("the answer is not a ListMultipartUploadsResult".into());
    }
    if truncated {
        let key = next_key.ok_or("a truncated page names no NextKeyMarker")?;
        page.next = Some((key, next_id.unwrap_or_default()));
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_lists_each_upload_and_where_the_next_starts() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>
  <NextKeyMarker>big &amp; old.bin</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>
  <IsTruncated>true</IsTruncated>
  <Upload><Key>a.bin</Key><UploadId>u1</UploadId><Initiated>2026-11-28T05:00:00.000Z</Initiated></Upload>
  <Upload><Key>big &amp; old.bin</Key><UploadId>u2</UploadId></Upload>
</ListMultipartUploadsResult>"#;
        let page = uploads_page(body).unwrap();
        assert_eq!(page.uploads.len(), 2);
        assert_eq!(page.uploads[0].0, "a.bin");
        assert!(page.uploads[0].2.is_some());
        assert_eq!(
            (page.uploads[1].0.as_str(), page.uploads[1].1.as_str()),
            ("big & old.bin", "u2")
        );
        assert_eq!(page.next, Some(("big & old.bin".into(), "u2".into())));
    }

    #[test]
    fn an_upload_without_its_id_or_another_document_fails_the_page() {
        let no_id = b"<ListMultipartUploadsResult><Upload><Key>a</Key></Upload></ListMultipartUploadsResult>";
        assert!(uploads_page(no_id).is_err());
        assert!(uploads_page(b"<Error><Code>AccessDenied</Code></Error>").is_err());
        let last = b"<ListMultipartUploadsResult><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>";
        assert_eq!(uploads_page(last).unwrap(), UploadsPage::default());
    }
}
