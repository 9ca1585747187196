//! Listing at full speed. Each part of the key space is listed by its own worker, which
//! asks for its next page the moment the current page's NextContinuationToken has gone by
//! (pipelining), and hands the upper part of its range to a new worker whenever a page
//! shows there is more to list and a worker slot is free (parallel listing). Workers feed
//! channels that the consumer reads part after part, so the result is exactly the
//! sequential listing. Pages wait for the consumer in room of bounded size: a few pages per
//! part, and for the parts not yet being read a shared room of [`PAGES_HELD_AHEAD`], so a
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
mod page;
mod room;
mod split;
mod worker;

use std::sync::{Arc, Mutex};

use futures::Stream;
use tokio::sync::Semaphore;

use crate::counters::Counters;
use crate::error::{Error, Result};
use crate::retry::RetryPolicy;
use crate::source::store::Store;
use fetch::first_keys;
pub(crate) use page::{Cursor, ListPage, ListQuery, PageSink};
pub use page::ObjectEntry;
use room::{Chunk, PartOutput, PartPages};
pub(crate) use split::split_key_space;
use worker::{run_worker, Part};

/// Pages a part may hold for the consumer on its own.
const PAGES_AHEAD: usize = 2;

/// Pages the parts not yet being read may hold between them beyond their own
/// [`PAGES_AHEAD`] (about 200 bytes an entry: ~13 MB of 1000-key pages). With only their own
/// room, parts behind the one being read stopped after two pages and the listing ran
/// nearly in sequence unless it was cut into many short parts, each of which costs the
/// store a page that the next part lists again (docs/PROFILE.md, stop 15).
const PAGES_HELD_AHEAD: usize = 64;

/// Split guesses look at this many leading characters below the prefix.
const MAX_PROFILED_CHARS: usize = 64;

/// Split guesses probed at once, each a request for one key. One guess at a time cost a
/// round trip per empty guess (9 of them before the first split of `w4/dNNN/kNNNNNN`); a
/// guess per free slot loaded the store with requests that mostly find nothing.
const GUESSES_AT_ONCE: usize = 4;

/// Full pages a part lists before it splits again, and before a part made by a split
/// splits at all (the first part splits after its first page). Each part costs the store
/// about one page more (its last page runs past its end, into the next part); splitting
/// after every page cut 100 pages into ~50 parts and cost ~50 pages more.
const PAGES_BETWEEN_SPLITS: usize = 2;

/// One line of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// An object under the prefix.
    Object(ObjectEntry),
    /// A "folder": keys continue below it (only when listing with a delimiter).
    Prefix(String),
}

impl Listed {
    fn key(&self) -> &str {
        match self {
            Listed::Object(object) => &object.key,
            Listed::Prefix(prefix) => prefix,
        }
    }
}

/// What to list and how hard to push.
#[derive(Debug, Clone)]
pub(crate) struct ListSpec {
    pub bucket: String,
    pub prefix: String,
    /// `Some("/")` lists one level, with "folders"; such listings stay sequential.
    pub delimiter: Option<String>,
    /// Ranges listed at the same time; 1 is pipelined but sequential.
    pub parallelism: usize,
    /// Keys per page (ListObjectsV2 max-keys).
    pub page_size: usize,
    /// The range of the key space to list (all of it by default).
    pub bounds: KeyBounds,
}

/// One range of a prefix's key space: the keys the store lists after `after` (from the
/// first key when `None`), up to but not including the first key it lists after
/// `until_after` (to the end when `None`). A boundary is a guess, not a key: both ranges
/// it separates resolve it against the store the same way (`start-after=<guess>`), so they
/// meet exactly, in the store's own order, even if keys come and go at the boundary before
/// the listings start. [`split_key_space`] gives the boundaries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyBounds {
    /// The boundary below the range: it lists the keys the store gives after this.
    pub after: Option<String>,
    /// The boundary above the range: it stops at the first key the store gives after this.
    pub until_after: Option<String>,
}

impl KeyBounds {
    /// Both boundaries must be under the prefix, the lower below the upper.
    fn check(&self, bucket: &str, prefix: &str) -> Result<()> {
        let outside = [&self.after, &self.until_after]
            .into_iter()
            .flatten()
            .find(|bound| !bound.starts_with(prefix));
        if let Some(bound) = outside {
            return Err(Error::InvalidInput(format!(
                "the key range boundary '{}' is not under s3://{bucket}/{prefix}; boundaries come from splitting that prefix",
                bound.escape_debug()
            )));
        }
        if let (Some(after), Some(until)) = (&self.after, &self.until_after) {
            if after >= until {
                return Err(Error::InvalidInput(format!(
                    "the key range after '{}' until after '{}' is empty or reversed; give the lower boundary first",
                    after.escape_debug(),
                    until.escape_debug()
                )));
            }
        }
        Ok(())
    }
}

/// Everything the workers of one listing share.
struct Listing<S> {
    store: Arc<S>,
    counters: Arc<Counters>,
    retry: RetryPolicy,
    spec: ListSpec,
    /// Slots for workers beyond the first.
    spare_workers: Arc<Semaphore>,
    /// The highest character seen at each position below the prefix: where split points
    /// aim when a part has no upper bound.
    widest: Mutex<Vec<char>>,
    /// The lowest guess after which the store listed no key at all: no part's split aims
    /// above it.
    end: Mutex<Option<String>>,
    /// Room for pages of the parts not yet being read, beyond each part's own.
    shared_room: Arc<Semaphore>,
}

impl<S: Store> Listing<S> {
    fn new(
        store: Arc<S>,
        counters: Arc<Counters>,
        retry: RetryPolicy,
        spec: ListSpec,
        workers: usize,
    ) -> Arc<Listing<S>> {
        Arc::new(Listing {
            store,
            counters,
            retry,
            spare_workers: Arc::new(Semaphore::new(workers.saturating_sub(1))),
            spec,
            widest: Mutex::new(Vec::new()),
            end: Mutex::new(None),
            shared_room: Arc::new(Semaphore::new(PAGES_HELD_AHEAD)),
        })
    }
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
            Ok(stop) => stop,
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
            empty_above: None,
        };
        run_worker(listing, whole).await;
    });
    futures::stream::unfold(Some(first), |current| async move {
        let mut current: PartPages = current?;
        loop {
            match current.pages.recv().await? {
                // The page's room is free again once the consumer has it.
                Chunk::Page(page, _room) => return Some((Ok(page), Some(current))),
                Chunk::Then(next) => {
                    next.being_read.send_replace(true);
                    current = next;
                }
                Chunk::Failed(error) => return Some((Err(error), None)),
            }
        }
    })
}

/// Objects and common prefixes of one page, merged into key order.
fn merge_in_key_order(page: ListPage) -> Vec<Listed> {
    let mut merged = Vec::with_capacity(page.objects.len() + page.common_prefixes.len());
    let mut prefixes = page.common_prefixes.into_iter().peekable();
    for object in page.objects {
        while prefixes
            .next_if(|prefix| prefix.as_str() < object.key.as_str())
            .map(|prefix| merged.push(Listed::Prefix(prefix)))
            .is_some()
        {}
        merged.push(Listed::Object(object));
    }
    merged.extend(prefixes.map(Listed::Prefix));
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_bounds_must_be_under_the_prefix_and_in_order() {
        let bounds = |after: Option<&str>, until: Option<&str>| KeyBounds {
            after: after.map(str::to_owned),
            until_after: until.map(str::to_owned),
        };
        for fine in [
            bounds(None, None),
            bounds(Some("p/a"), None),
            bounds(None, Some("p/a")),
            bounds(Some("p/a"), Some("p/b")),
        ] {
            assert!(fine.check("b", "p/").is_ok(), "{fine:?}");
        }
        let outside = bounds(Some("q/a"), None).check("b", "p/").unwrap_err();
        assert!(
            outside.to_string().contains("not under s3://b/p/"),
            "{outside}"
        );
        for reversed in [
            bounds(Some("p/b"), Some("p/a")),
            bounds(Some("p/a"), Some("p/a")),
        ] {
            let error = reversed.check("b", "p/").unwrap_err();
            assert!(error.to_string().contains("empty or reversed"), "{error}");
        }
    }

    #[test]
    fn pages_merge_objects_and_prefixes_in_order() {
        let object = |key: &str| ObjectEntry {
            key: key.into(),
            size: 0,
            etag: None,
            last_modified: None,
            storage_class: None,
        };
        let page = ListPage {
            objects: vec![object("a"), object("c"), object("e")],
            common_prefixes: vec!["b/".into(), "d/".into(), "f/".into()],
            next_token: None,
            is_truncated: false,
        };
        let keys: Vec<String> = merge_in_key_order(page)
            .iter()
            .map(|e| e.key().to_owned())
            .collect();
        assert_eq!(keys, vec!["a", "b/", "c", "d/", "e", "f/"]);
    }
}
