//! Page requests: one in flight with its retries, delivering its objects in batches and its
//! continuation token as soon as the store sends it, and the few keys a split guess asks for.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::page::{Cursor, HandedOn, ListPage, ListQuery, ObjectEntry, PageSink};
use super::spec::Listing;
use crate::error::{Error, Result};
use crate::retry::with_retries;
use crate::source::store::Store;

/// A page request in flight, with the channels its objects and its continuation token
/// arrive on before the page ends.
pub(super) struct PageFetch {
    pub(super) parts: PageParts,
    pub(super) early_token: mpsc::UnboundedReceiver<String>,
}

/// What a page request delivers: batches of objects, then the rest of the page.
pub(super) struct PageParts {
    request: JoinHandle<Result<ListPage>>,
    batches: mpsc::Receiver<Vec<ObjectEntry>>,
}

impl PageFetch {
    pub(super) fn start<S: Store>(listing: &Arc<Listing<S>>, cursor: Cursor) -> PageFetch {
        let (token_sender, early_token) = mpsc::unbounded_channel();
        // One batch in hand: the body waits in the socket until the listing catches up.
        let (batch_sender, batches) = mpsc::channel(1);
        let listing = listing.clone();
        let request = tokio::spawn(async move {
            let spec = &listing.spec;
            let query = ListQuery {
                bucket: &spec.bucket,
                prefix: &spec.prefix,
                delimiter: spec.delimiter.as_deref(),
                cursor: &cursor,
                max_keys: spec.page_size,
            };
            let handed_on = Mutex::new(HandedOn::default());
            with_retries(&listing.retry, &listing.counters, || {
                let sink = PageSink::new(Some(&token_sender), &batch_sender, &handed_on);
                listing.store.list_page(&query, sink)
            })
            .await
        });
        PageFetch {
            parts: PageParts { request, batches },
            early_token,
        }
    }
}

impl PageParts {
    /// The page's next batch of objects, or its rest with the token (true: the last part).
    pub(super) async fn next_part(&mut self) -> Result<(ListPage, bool)> {
        if let Some(objects) = self.batches.recv().await {
            let part = ListPage {
                objects,
                ..ListPage::default()
            };
            return Ok((part, false));
        }
        self.finish().await.map(|page| (page, true))
    }

    async fn finish(&mut self) -> Result<ListPage> {
        (&mut self.request)
            .await
            .unwrap_or_else(|join| Err(Error::InvalidInput(format!("listing task failed: {join}"))))
    }
}

impl Drop for PageFetch {
    fn drop(&mut self) {
        // A page nobody will read is not worth finishing.
        self.parts.request.abort();
    }
}

/// The first keys (up to `max_keys`) the store lists from `cursor`, and whether more follow.
/// One request (with its retries), read to its end.
pub(super) async fn first_keys<S: Store>(
    listing: &Arc<Listing<S>>,
    cursor: Cursor,
    max_keys: usize,
) -> Result<(Vec<String>, bool)> {
    let (batch_sender, mut batches) = mpsc::channel::<Vec<ObjectEntry>>(1);
    let request = {
        let listing = listing.clone();
        async move {
            let spec = &listing.spec;
            let query = ListQuery {
                bucket: &spec.bucket,
                prefix: &spec.prefix,
                delimiter: None,
                cursor: &cursor,
                max_keys,
            };
            let handed_on = Mutex::new(HandedOn::default());
            // `batch_sender` goes with this block, which ends the batches below.
            with_retries(&listing.retry, &listing.counters, || {
                let sink = PageSink::new(None, &batch_sender, &handed_on);
                listing.store.list_page(&query, sink)
            })
            .await
        }
    };
    let streamed = async move {
        let mut keys = Vec::new();
        // A store that ignores max-keys is read no further than asked.
        while keys.len() < max_keys {
            let Some(batch) = batches.recv().await else {
                break;
            };
            keys.extend(batch.into_iter().map(|object| object.key));
        }
        keys
    };
    let (page, mut keys) = tokio::join!(request, streamed);
    let page = page?;
    let more = page.is_truncated || page.next_token.is_some() || keys.len() >= max_keys;
    keys.extend(page.objects.into_iter().map(|object| object.key));
    keys.truncate(max_keys);
    let prefix = &listing.spec.prefix;
    if let Some(key) = keys.iter().find(|key| !key.starts_with(prefix.as_str())) {
        return Err(Error::BadListing {
            bucket: listing.spec.bucket.clone(),
            prefix: prefix.clone(),
            detail: format!(
                "the store returned key '{}', which is not under the prefix",
                key.escape_debug()
            ),
        });
    }
    Ok((keys, more))
}
