//! What a listing is asked for (`ListSpec`, `KeyBounds`), what it gives (`Listed`), and what
//! the workers of one listing share (`Listing`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use super::page::{ListPage, ObjectEntry};
use super::shared_room::SharedRoom;
use crate::counters::Counters;
use crate::error::{Error, Result};
use crate::retry::RetryPolicy;
use crate::source::store::Store;

/// Pages the parts not yet being read may hold between them beyond their own
/// [`PAGES_AHEAD`], for each worker slot (packed, 32 bytes an entry beside its text: 64
/// pages of 1000 W4 keys, ~5 MB, at the default 16; see `held_page.rs`). With only their own room, parts behind the one being
/// read stopped after two pages and the listing ran nearly in sequence unless it was cut
/// into many short parts, each of which costs the store a page that the next part lists
/// again (docs/PROFILE.md, stop 15). In step with the workers, so that a sync's two
/// listings, each given half the workers, hold no more together than one listing alone
/// (stop 45).
const PAGES_HELD_AHEAD_PER_WORKER: usize = 4;

/// Parts alive at once, per worker slot. A part waiting for room gives its slot up, so
/// slots alone no longer bound the parts, each of which may hold its own pages.
const PARTS_PER_WORKER: usize = 2;

/// One line of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// An object under the prefix.
    Object(ObjectEntry),
    /// A "folder": keys continue below it (only when listing with a delimiter).
    Prefix(String),
}

impl Listed {
    pub(super) fn key(&self) -> &str {
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
    pub(super) fn check(&self, bucket: &str, prefix: &str) -> Result<()> {
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
pub(super) struct Listing<S> {
    pub(super) store: Arc<S>,
    pub(super) counters: Arc<Counters>,
    pub(super) retry: RetryPolicy,
    pub(super) spec: ListSpec,
    /// Slots for workers beyond the first.
    pub(super) spare_workers: Arc<Semaphore>,
    /// The highest character seen at each position below the prefix: where split points
    /// aim when a part has no upper bound.
    pub(super) widest: Mutex<Vec<char>>,
    /// The lowest guess after which the store listed no key at all: no part's split aims
    /// above it.
    pub(super) end: Mutex<Option<String>>,
    /// Room for pages of the parts not yet being read, beyond each part's own.
    pub(super) shared_room: Arc<SharedRoom>,
    /// Where a listing bounded above stops (none for one that runs to the end).
    pub(super) range_top: Option<RangeTop>,
    /// Parts whose workers are still listing.
    parts: Arc<AtomicUsize>,
    max_parts: usize,
}

/// The top of a listing bounded above: the first key the store lists after the boundary,
/// where the range above starts. Every part of the listing stops there. A task listing the
/// range above may delete that key meanwhile (`rm` and `mv` by ranges do), and a part that
/// never meets its stop key lists on to the end, into every range above; so a page that
/// went past the key in byte order without meeting it asks the store again where the
/// range above starts now.
pub(super) struct RangeTop {
    boundary: String,
    first_above: Mutex<Option<String>>,
}

/// Where the range above starts in one page.
pub(super) enum TopInPage {
    /// At this entry.
    At(usize),
    /// Not in this page, and the page did not go past it.
    NotYet,
    /// The page went past this top key in byte order without meeting it: the key may be
    /// gone, or the store lists out of byte order.
    Passed(String),
}

impl RangeTop {
    pub(super) fn boundary(&self) -> &str {
        &self.boundary
    }

    /// The store's first key after the boundary, as last asked (`None`: none at all, and
    /// the listing runs to the end).
    pub(super) fn set_first_above(&self, first: Option<String>) {
        *self.first_above.lock().expect("range top poisoned") = first;
    }

    pub(super) fn find(&self, entries: &[Listed]) -> TopInPage {
        let first_above = self.first_above.lock().expect("range top poisoned");
        let Some(top) = first_above.as_deref() else {
            return TopInPage::NotYet;
        };
        if let Some(at) = entries.iter().position(|entry| entry.key() == top) {
            return TopInPage::At(at);
        }
        match entries.iter().any(|entry| entry.key() > top) {
            true => TopInPage::Passed(top.to_owned()),
            false => TopInPage::NotYet,
        }
    }
}

/// A part's place among the parts alive, given back when its worker ends.
pub(super) struct PartTicket {
    parts: Arc<AtomicUsize>,
}

impl Drop for PartTicket {
    fn drop(&mut self) {
        self.parts.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<S: Store> Listing<S> {
    pub(super) fn new(
        store: Arc<S>,
        counters: Arc<Counters>,
        retry: RetryPolicy,
        spec: ListSpec,
        workers: usize,
    ) -> Arc<Listing<S>> {
        let range_top = spec.bounds.until_after.clone().map(|boundary| RangeTop {
            boundary,
            first_above: Mutex::new(None),
        });
        Arc::new(Listing {
            store,
            counters,
            retry,
            spare_workers: Arc::new(Semaphore::new(workers.saturating_sub(1))),
            spec,
            widest: Mutex::new(Vec::new()),
            end: Mutex::new(None),
            // Parts listing below one that takes shared room: at most half the workers (a
            // million keys through the WAN: 4.0-4.2 s with 8 of 16, 5.1 s with 6, 5.7 s
            // with 12, 8.5 s with all), and at least two: the part being read and the next.
            shared_room: SharedRoom::new(
                PAGES_HELD_AHEAD_PER_WORKER * workers.max(1),
                workers.div_ceil(2).max(2),
            ),
            range_top,
            parts: Arc::new(AtomicUsize::new(0)),
            max_parts: workers.max(1) * PARTS_PER_WORKER,
        })
    }

    /// A ticket for one more part, if fewer than the most allowed are alive.
    pub(super) fn part_ticket(&self) -> Option<PartTicket> {
        self.parts
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |alive| {
                (alive < self.max_parts).then_some(alive + 1)
            })
            .ok()
            .map(|_| PartTicket {
                parts: self.parts.clone(),
            })
    }
}

/// Objects and common prefixes of one page, merged into key order.
pub(super) fn merge_in_key_order(page: ListPage) -> Vec<Listed> {
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
