//! ListBuckets: every bucket the credentials can see, following its continuation token.

use futures::TryStreamExt;

use super::endpoint::encode_query_value;
use super::errors::{classify, error_from_response};
use super::{xml, BucketEntry, Call, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};
use crate::source::http_client::{describe, Response};

/// The largest page of the bucket list read: 10,000 buckets of the longest names and
/// dates fit in under 4 MiB.
const MAX_PAGE_BYTES: usize = 16 << 20;
/// The most pages followed: a million buckets at S3's smallest page, far past any quota.
const MAX_PAGES: usize = 100_000;

impl S3Store {
    /// Every bucket the credentials can see (ListBuckets), page after page.
    pub(crate) async fn list_buckets(&self) -> Result<Vec<BucketEntry>> {
        let what = "LIST s3://";
        let mut buckets = Vec::new();
        let mut tokens_seen = std::collections::HashSet::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let query = match &token {
                Some(token) => format!("continuation-token={}", encode_query_value(token)),
                None => String::new(),
            };
            let response = self
                .request(&Call {
                    method: &reqwest::Method::GET,
                    kind: RequestKind::List,
                    bucket: "",
                    key: "",
                    query: &query,
                    headers: &[],
                    what,
                    body: None,
                })
                .await?;
            if !response.status().is_success() {
                return Err(error_from_response(response, what, "", self.anonymous()).await);
            }
            let body = read_page(response, what).await?;
            let (page, next) =
                xml::parse_bucket_list(&body).map_err(|detail| match xml::parse_error(&body) {
                    Some(error) => {
                        classify(200, &error.code, &error.message, what, "", self.anonymous())
                    }
                    None => Error::Protocol {
                        what: what.to_owned(),
                        detail,
                    },
                })?;
            buckets.extend(page);
            match next {
                // A token given twice would loop forever.
                Some(next) if tokens_seen.insert(next.clone()) => token = Some(next),
                Some(_) => {
                    return Err(Error::Protocol {
                        what: what.to_owned(),
                        detail: "the store gave the same continuation token twice".into(),
                    })
                }
                None => return Ok(buckets),
            }
        }
        Err(Error::Protocol {
            what: what.to_owned(),
            detail: format!("the bucket list goes on past {MAX_PAGES} pages"),
        })
    }
}

/// One page of the bucket list, read up to [`MAX_PAGE_BYTES`]: a store sends at most
/// 10,000 buckets a page, a few MiB, so memory never grows with what a server sends.
async fn read_page(response: Response, what: &str) -> Result<Vec<u8>> {
    let too_large = || Error::Protocol {
        what: what.to_owned(),
        detail: format!(
            "a page of the bucket list is over {} MiB, more than any store sends",
            MAX_PAGE_BYTES >> 20
        ),
    };
    // A length announced past the cap is refused before a byte of the body is read.
    let announced = response
        .headers()
        .get(reqwest::header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|length| length > MAX_PAGE_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.try_next().await.map_err(|e| Error::Network {
        what: what.to_owned(),
        detail: describe(&e),
    })? {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
