//! Listing a prefix: ListObjectsV2 pages, one after another, as a stream of entries.

use std::sync::Arc;

use futures::Stream;

use crate::error::Result;
use crate::report::Counters;
use crate::retry::{with_retries, RetryPolicy};
use crate::s3::{ObjectEntry, S3Store};

/// One line of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// An object under the prefix.
    Object(ObjectEntry),
    /// A "folder": keys continue below it (only when listing with a delimiter).
    Prefix(String),
}

/// Every page under `prefix` in key order, each as it arrives.
pub(crate) fn pages(
    store: Arc<S3Store>,
    counters: Arc<Counters>,
    retry: RetryPolicy,
    bucket: String,
    prefix: String,
    delimiter: Option<String>,
) -> impl Stream<Item = Result<Vec<Listed>>> + Send {
    // State: the token for the next page, or None once the last page has been read.
    futures::stream::try_unfold(Some(None::<String>), move |state| {
        let (store, counters, retry) = (store.clone(), counters.clone(), retry.clone());
        let (bucket, prefix, delimiter) = (bucket.clone(), prefix.clone(), delimiter.clone());
        async move {
            let Some(token) = state else { return Ok(None) };
            let page = with_retries(&retry, &counters, || {
                store.list_page(&bucket, &prefix, delimiter.as_deref(), token.as_deref())
            })
            .await?;
            let mut entries: Vec<Listed> = page.objects.into_iter().map(Listed::Object).collect();
            entries.extend(page.common_prefixes.into_iter().map(Listed::Prefix));
            Ok(Some((entries, page.next_token.map(Some))))
        }
    })
}
