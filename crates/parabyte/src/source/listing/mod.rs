//! Listing at full speed. Each part of the key space is listed by its own worker, which
//! asks for its next page the moment the current page's NextContinuationToken has gone by
//! (pipelining), and hands the upper part of its range to a new worker whenever a page
//! shows there is more to list and a worker slot is free (parallel listing). Workers feed
//! channels that the consumer reads part after part, so the result is exactly the
//! sequential listing. Pages wait for the consumer in room of bounded size: a few pages per
//! part, and for the parts not yet being read a shared room of a few pages per worker, so a
//! part far ahead of the consumer keeps listing while a slow consumer still stalls the
//! listing instead of filling memory.
//! A page is parsed as its body arrives and its objects go on in batches, so memory does
//! not grow with the size of a page either (a store may ignore max-keys).
//!
//! A listing never ends quietly on a store's mistake: a page that says it is truncated but
//! gives no token, a token given twice (which would loop), or a key outside the prefix is
//! [`Error::BadListing`], after the page's good keys went out.
//!
//! A listing may cover one range of a prefix's key space ([`KeyBounds`]), so that tasks on
//! several machines each list their own range; [`split_key_space`] finds the boundaries
//! with one small request per guess, without listing the keys between.

mod fetch;
mod held_page;
pub(crate) mod page;
mod room;
mod shared_room;
mod spec;
mod split;
mod worker;

use std::sync::Arc;

use futures::Stream;

use crate::counters::Counters;
use crate::error::Result;
use crate::retry::RetryPolicy;
use crate::source::store::Store;
use fetch::first_keys;
pub use page::ObjectEntry;
pub(crate) use page::{storage_class, Cursor, ListPage, ListQuery, PageSink};
use room::{Chunk, PartOutput, PartPages};
pub(crate) use spec::ListSpec;
use spec::Listing;
pub use spec::{KeyBounds, Listed};
pub(crate) use split::split_key_space;
use worker::{run_worker, Part};

/// The first key under `prefix` in `bucket`, if any: one request of one key (with its
/// retries), never a page more.
pub(crate) async fn first_key<S: Store>(
    store: Arc<S>,
    counters: Arc<Counters>,
    retry: RetryPolicy,
    bucket: &str,
    prefix: String,
) -> Result<Option<String>> {
    let spec = ListSpec {
        bucket: bucket.to_owned(),
        prefix,
        delimiter: None,
        parallelism: 1,
        page_size: 1,
        bounds: KeyBounds::default(),
    };
    let listing = Listing::new(store, counters, retry, spec, 1);
    let (keys, _) = first_keys(&listing, Cursor::Start, 1).await?;
    Ok(keys.into_iter().next())
}

/// Every entry under the prefix (within `spec.bounds`), page by page, in key order.
pub(crate) fn list<S: Store>(
    store: Arc<S>,
    counters: Arc<Counters>,
    retry: RetryPolicy,
    spec: ListSpec,
) -> impl Stream<Item = Result<Vec<Listed>>> + Send {
    let workers = spec.parallelism;
    let listing = Listing::new(store, counters, retry, spec, workers);
    let (output, first) = PartOutput::new(true);
    tokio::spawn(async move {
        let bounds = listing.spec.bounds.clone();
        // The range ends where the next one starts: at the first key after its boundary.
        let stop = match bounds.check(&listing.spec.bucket, &listing.spec.prefix) {
            Err(error) => Err(error),
            Ok(()) => match &bounds.until_after {
                Some(boundary) => first_keys(&listing, Cursor::After(boundary.clone()), 1)
                    .await
                    .map(|(keys, _)| keys.into_iter().next()),
                None => Ok(None),
            },
        };
        let stop = match stop {
            Ok(stop) => {
                if let Some(top) = &listing.range_top {
                    top.set_first_above(stop.clone());
                }
                stop
            }
            Err(error) => {
                output.send_last(Chunk::Failed(error));
                return;
            }
        };
        let whole = Part {
            start_after: bounds.after,
            stop,
            output,
            successor: None,
            report_first: None,
            slot: None,
            ticket: listing.part_ticket(),
            empty_above: None,
        };
        run_worker(listing, whole).await;
    });
    futures::stream::unfold(Some(first), |current| async move {
        let mut current: PartPages = current?;
        loop {
            match current.pages.recv().await? {
                // The page's room is free again once the consumer has it.
                Chunk::Page(page, _room) => return Some((Ok(page.into_entries()), Some(current))),
                Chunk::Then(next) => {
                    next.being_read.send_replace(true);
                    current = next;
                }
                Chunk::Failed(error) => return Some((Err(error), None)),
            }
        }
    })
}

#[cfg(test)]
mod tests;
