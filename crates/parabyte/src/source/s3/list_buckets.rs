//! ListBuckets: every bucket the credentials can see, following its continuation token.

use super::endpoint::encode_query_value;
use super::errors::{classify, error_from_response};
use super::{xml, BucketEntry, Get, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};
use crate::source::http_client::describe;

impl S3Store {
    /// Every bucket the credentials can see (ListBuckets), page after page.
    pub(crate) async fn list_buckets(&self) -> Result<Vec<BucketEntry>> {
        let what = "LIST s3://";
        let mut buckets = Vec::new();
        let mut tokens_seen = std::collections::HashSet::new();
        let mut token: Option<String> = None;
        loop {
            let query = match &token {
                Some(token) => format!("continuation-token={}", encode_query_value(token)),
                None => String::new(),
            };
            let response = self
                .request(&Get {
                    method: &reqwest::Method::GET,
                    kind: RequestKind::List,
                    bucket: "",
                    key: "",
                    query: &query,
                    headers: &[],
                    what,
                })
                .await?;
            if !response.status().is_success() {
                return Err(error_from_response(response, what, "", self.anonymous()).await);
            }
            let body = response.bytes().await.map_err(|e| Error::Network {
                what: what.to_owned(),
                detail: describe(&e),
            })?;
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
    }
}
