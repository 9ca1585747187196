//! ListObjectsV2: one page, parsed as its body arrives and streamed through the page sink.

use crate::counters::RequestKind;
use crate::error::{Error, Result};
use crate::source::http_client::describe;
use crate::source::listing::{Cursor, ListPage, ListQuery, PageSink};
use futures::TryStreamExt;

use super::endpoint::encode_query_value;
use super::errors::{classify, error_from_response};
use super::xml::{ListError, PageParser};
use super::{Call, S3Store};

/// Bytes of a listing page that may be held per key asked for (a 1024-byte key
/// URL-encoded to 3 KiB plus every field stores add, with room to spare)...
const MAX_LIST_BYTES_PER_KEY: usize = 8 * 1024;
/// ...and for the document around the keys.
const MAX_LIST_OVERHEAD: usize = 64 * 1024;

impl S3Store {
    /// One ListObjectsV2 page, parsed as its body arrives. Objects go out on `batches` as
    /// they are decided (recursive listings), so a page of any size is never held; the
    /// rest of the page is returned at its end. The moment the NextContinuationToken has
    /// gone by it is sent on `early_token`, so the caller can ask for the next page while
    /// this one is still arriving. A retry of a page that broke off skips the objects
    /// `handed_on` counts, after checking the store lists them the same way again.
    pub(super) async fn list_objects_page(
        &self,
        query: &ListQuery<'_>,
        mut sink: PageSink<'_>,
    ) -> Result<ListPage> {
        let what = format!("LIST s3://{}/{}", query.bucket, query.prefix);
        let response = self
            .request(&Call {
                method: &reqwest::Method::GET,
                kind: RequestKind::List,
                bucket: query.bucket,
                key: "",
                query: &list_query_string(query),
                headers: &[],
                what: &what,
                body: None,
            })
            .await?;
        if !response.status().is_success() {
            return Err(error_from_response(response, &what, query.bucket, self.anonymous()).await);
        }
        let fail = |error: ListError| {
            match error {
            ListError::Malformed(detail) => Error::Protocol {
                what: what.clone(),
                detail,
            },
            ListError::ErrorDocument { code, message } => {
                classify(200, &code, &message, &what, query.bucket, self.anonymous())
            }
            ListError::TooLarge(limit) => Error::BadListing {
                bucket: query.bucket.to_owned(),
                prefix: query.prefix.to_owned(),
                detail: format!(
                    "more than {limit} bytes of one page (of at most {} keys) would have to be held before its keys could be used; the store ignored max-keys",
                    query.max_keys
                ),
            },
        }
        };
        // Held at once: what a page of max-keys honest entries could take, with room.
        let hold_limit = query
            .max_keys
            .saturating_mul(MAX_LIST_BYTES_PER_KEY)
            .saturating_add(MAX_LIST_OVERHEAD);
        let mut parser = PageParser::new(query.delimiter.is_none(), hold_limit);
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.try_next().await.map_err(|e| Error::Network {
            what: what.clone(),
            detail: describe(&e),
        })? {
            let batch = parser.feed(&chunk).map_err(fail)?;
            if let Some(token) = parser.next_token() {
                sink.token(token);
            }
            if let Some(batch) = batch {
                if !sink.objects(batch, query).await? {
                    // Nobody reads this page any more.
                    return Ok(ListPage::default());
                }
            }
        }
        let rest = parser.finish().map_err(fail)?;
        sink.finish(rest, query)
    }
}

/// A ListObjectsV2 request's parameters in the sorted order SigV4 canonicalises them in.
fn list_query_string(list: &ListQuery<'_>) -> String {
    let mut query = String::with_capacity(160);
    if let Cursor::Token(token) = list.cursor {
        query.push_str("continuation-token=");
        query.push_str(&encode_query_value(token));
        query.push('&');
    }
    if let Some(delimiter) = list.delimiter {
        query.push_str("delimiter=");
        query.push_str(&encode_query_value(delimiter));
        query.push('&');
    }
    query.push_str("encoding-type=url&list-type=2&max-keys=");
    query.push_str(&list.max_keys.to_string());
    query.push_str("&prefix=");
    query.push_str(&encode_query_value(list.prefix));
    if let Cursor::After(key) = list.cursor {
        query.push_str("&start-after=");
        query.push_str(&encode_query_value(key));
    }
    query
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_queries_are_in_canonical_order() {
        let after = Cursor::After("k/1".into());
        let query = ListQuery {
            bucket: "b",
            prefix: "p/",
            delimiter: Some("/"),
            cursor: &after,
            max_keys: 1000,
        };
        assert_eq!(
            list_query_string(&query),
            "delimiter=%2F&encoding-type=url&list-type=2&max-keys=1000&prefix=p%2F&start-after=k%2F1"
        );
        let token = Cursor::Token("t+=".into());
        let query = ListQuery {
            bucket: "b",
            prefix: "",
            delimiter: None,
            cursor: &token,
            max_keys: 10,
        };
        assert_eq!(
            list_query_string(&query),
            "continuation-token=t%2B%3D&encoding-type=url&list-type=2&max-keys=10&prefix="
        );
    }
}
