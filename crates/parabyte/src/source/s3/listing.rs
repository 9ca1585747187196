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

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::Stream;
use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use crate::counters::Counters;
use crate::error::{Error, Result};
use crate::retry::{with_retries, RetryPolicy};
use crate::source::s3::{Cursor, HandedOn, ListPage, ListQuery, ObjectEntry, S3Store};

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
struct Listing {
    store: Arc<S3Store>,
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

impl Listing {
    fn new(
        store: Arc<S3Store>,
        counters: Arc<Counters>,
        retry: RetryPolicy,
        spec: ListSpec,
        workers: usize,
    ) -> Arc<Listing> {
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

/// What a worker sends its consumer.
enum Chunk {
    /// Entries, with the room they take until the consumer has them.
    Page(Vec<Listed>, Option<OwnedSemaphorePermit>),
    /// This range is done; the listing continues with this part.
    Then(PartPages),
    Failed(Error),
}

/// The consumer's end of a part: its pages, and the word that the consumer reads it now.
struct PartPages {
    pages: mpsc::UnboundedReceiver<Chunk>,
    being_read: watch::Sender<bool>,
}

/// A worker's end of a part.
struct PartOutput {
    pages: mpsc::UnboundedSender<Chunk>,
    being_read: watch::Receiver<bool>,
    /// The part's own room: [`PAGES_AHEAD`] pages.
    own_room: Arc<Semaphore>,
}

impl PartOutput {
    /// A new part's two ends; `being_read` for the first part, which the consumer reads
    /// from the start.
    fn new(being_read: bool) -> (PartOutput, PartPages) {
        let (sender, pages) = mpsc::unbounded_channel();
        let (reading, being_read_receiver) = watch::channel(being_read);
        let output = PartOutput {
            pages: sender,
            being_read: being_read_receiver,
            own_room: Arc::new(Semaphore::new(PAGES_AHEAD)),
        };
        (
            output,
            PartPages {
                pages,
                being_read: reading,
            },
        )
    }

    /// Sends entries once there is room for them: the part's own room, or, while the
    /// consumer has not reached this part, the shared room. The part being read waits for
    /// its own room only, so parts ahead that fill the shared room never stall it. False
    /// when nobody will read them.
    async fn send(&mut self, entries: Vec<Listed>, shared_room: &Arc<Semaphore>) -> bool {
        let room = match self.own_room.clone().try_acquire_owned() {
            Ok(room) => Some(room),
            Err(_) => loop {
                if *self.being_read.borrow() {
                    break self.own_room.clone().acquire_owned().await.ok();
                }
                tokio::select! {
                    room = self.own_room.clone().acquire_owned() => break room.ok(),
                    room = shared_room.clone().acquire_owned() => break room.ok(),
                    reader = self.being_read.changed() => if reader.is_err() {
                        return false;
                    },
                }
            },
        };
        self.pages.send(Chunk::Page(entries, room)).is_ok()
    }

    fn send_last(&self, chunk: Chunk) {
        let _ = self.pages.send(chunk);
    }
}

/// Every entry under the prefix (within `spec.bounds`), page by page, in key order.
pub(crate) fn list(
    store: Arc<S3Store>,
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

/// The upper part of a split, until it reports the first key it got.
struct PendingSplit {
    /// The key the new worker started after.
    guess: String,
    /// The first key the new worker got, or `None` if it found none.
    first_key: oneshot::Receiver<Option<String>>,
    /// This worker's stop key before the split (now the new worker's).
    previous_stop: Option<String>,
}

/// How a worker's part ended.
enum Ended {
    /// It met the first key of the next part: the listing continues there.
    AtNextPart,
    /// The store has no keys after it: this part listed everything up to the end.
    AtLastKey,
    /// Nobody is reading any more.
    Abandoned,
}

/// One part of the key space, handed to a new worker.
struct Part {
    /// Where the part starts: after this key, or at the first key.
    start_after: Option<String>,
    /// The first key of the next part, if there is one.
    stop: Option<String>,
    /// Where the part's pages go.
    output: PartOutput,
    /// The next part, handed on when this one reaches it.
    successor: Option<PartPages>,
    /// Set for a part made by a split: where to report its first key.
    report_first: Option<oneshot::Sender<Option<String>>>,
    /// A place among the parallel listing workers, held while the part is listed (the
    /// first part needs none).
    slot: Option<OwnedSemaphorePermit>,
    /// A guess that found nothing between it and `stop`.
    empty_above: Option<String>,
}

/// Split guesses being probed, and the worker slot the split will take.
struct Probing {
    /// Each guess with the first key the store lists after it (`None`: none at all).
    found: JoinHandle<Vec<(String, Option<String>)>>,
    /// Taken by the split; released with the probing otherwise.
    slot: Option<OwnedSemaphorePermit>,
}

impl Drop for Probing {
    fn drop(&mut self) {
        // A part that ended has no use for the answers.
        self.found.abort();
    }
}

async fn run_worker(listing: Arc<Listing>, part: Part) {
    let _slot = part.slot;
    let pages_before_split = if part.report_first.is_some() {
        PAGES_BETWEEN_SPLITS
    } else {
        1
    };
    let mut worker = Worker {
        listing,
        pages_before_split,
        stop: part.stop,
        output: part.output,
        successor: part.successor,
        report_first: part.report_first,
        pending: None,
        probing: None,
        empty_above: part.empty_above,
        last_sent: None,
        tokens_followed: HashSet::new(),
    };
    let last = match worker.list_part(part.start_after).await {
        Ok(Ended::AtNextPart) => worker.successor.take().map(Chunk::Then),
        // Parts after this one could only repeat what it listed: they are dropped unread.
        Ok(Ended::AtLastKey | Ended::Abandoned) => None,
        Err(error) => Some(Chunk::Failed(error)),
    };
    if let Some(chunk) = last {
        worker.output.send_last(chunk);
    }
}

/// Lists one part of the key space. A split hands everything after a guessed key to a new
/// worker, which reports the first key the store gave it; this worker then lists until it
/// meets that key. Boundaries are keys the store itself returned, met in the store's own
/// order, so nothing depends on how the store orders keys or how it reads `start-after`
/// (SeaweedFS walks "directories" and skips some of them after a guessed key). If this
/// worker never meets the key, it has listed to the end itself and the parts after it are
/// dropped: nothing is lost and nothing appears twice.
struct Worker {
    listing: Arc<Listing>,
    /// Full pages still to list before this part may split.
    pages_before_split: usize,
    /// The first key of the next part: where this one stops.
    stop: Option<String>,
    output: PartOutput,
    /// The next part, handed to the consumer when this one reaches it.
    successor: Option<PartPages>,
    /// Set for a worker made by a split: where to report its first key.
    report_first: Option<oneshot::Sender<Option<String>>>,
    pending: Option<PendingSplit>,
    /// Guesses in flight for the next split.
    probing: Option<Probing>,
    /// A guess above which a split found nothing: later guesses aim below it.
    empty_above: Option<String>,
    /// The last key this part sent on: a split must start above it.
    last_sent: Option<String>,
    /// Every continuation token this part was given: one given twice would loop forever.
    tokens_followed: HashSet<String>,
}

impl Worker {
    async fn list_part(&mut self, start_after: Option<String>) -> Result<Ended> {
        let mut next = Some(PageFetch::start(
            &self.listing,
            start_after.map_or(Cursor::Start, Cursor::After),
        ));
        while let Some(mut fetch) = next.take() {
            let mut awaiting_token = true;
            let mut first_key = None;
            let mut last_key = None;
            // A page arrives as batches of objects, then its rest with the token (`last`).
            let more = loop {
                let (mut page, last) = tokio::select! {
                    biased;
                    // Pipelining: the next request goes out as soon as this page's token is
                    // seen, unless the next part's first key may be in this page (its tail
                    // would be waste), or a split waits for its first key: this page may
                    // reach past the split's guess, and the next page would then be the
                    // new part's to list (a page listed twice per split, docs/PROFILE.md).
                    token = fetch.early_token.recv(), if awaiting_token => {
                        awaiting_token = false;
                        if let Some(token) = token {
                            if self.stop.is_none() && self.pending.is_none() {
                                next = Some(PageFetch::start(&self.listing, Cursor::Token(token)));
                            }
                        }
                        continue;
                    }
                    // Guesses answered: split at once, while this page is still arriving.
                    found = probed(&mut self.probing), if self.probing.is_some() => {
                        if let Some((found, slot)) = found {
                            self.split_at_best_guess(found, slot);
                        }
                        continue;
                    }
                    part = fetch.parts.next_part() => part?,
                };
                let broken = self.check(&mut page, last);
                let more = page.next_token.take();
                let (entries, reached_stop) = self.entries_before_stop(page).await;
                if let Some(entry) = entries.first() {
                    first_key.get_or_insert_with(|| entry.key().to_owned());
                }
                if let Some(entry) = entries.last() {
                    last_key = Some(entry.key().to_owned());
                    self.last_sent.clone_from(&last_key);
                }
                if !entries.is_empty()
                    && !self.output.send(entries, &self.listing.shared_room).await
                {
                    return Ok(Ended::Abandoned);
                }
                // The page's good keys went out first: every key the store listed is seen.
                if let Some(error) = broken {
                    return Err(error);
                }
                if reached_stop {
                    return Ok(Ended::AtNextPart); // the rest and a prefetched page go unread
                }
                if last {
                    break more;
                }
            };
            let Some(token) = more else {
                return Ok(Ended::AtLastKey);
            };
            self.pages_before_split = self.pages_before_split.saturating_sub(1);
            if let (Some(first_key), Some(last_key)) = (&first_key, &last_key) {
                if self.pages_before_split == 0 {
                    self.maybe_split(first_key, last_key);
                }
            }
            if next.is_none() {
                next = Some(PageFetch::start(&self.listing, Cursor::Token(token)));
            }
        }
        Ok(Ended::AtLastKey)
    }

    /// Why this page must end the listing, if it must: keys outside the prefix (taken out of
    /// the page), or (at its `last` part) a page that would lose keys or loop forever.
    fn check(&mut self, page: &mut ListPage, last: bool) -> Option<Error> {
        let prefix = self.listing.spec.prefix.as_str();
        let outside = page
            .objects
            .iter()
            .map(|object| &object.key)
            .chain(&page.common_prefixes)
            .find(|key| !key.starts_with(prefix))
            .cloned();
        if let Some(key) = outside {
            page.objects.retain(|object| object.key.starts_with(prefix));
            page.common_prefixes
                .retain(|common| common.starts_with(prefix));
            return Some(self.broken(format!(
                "the store returned key '{}', which is not under the prefix",
                key.escape_debug()
            )));
        }
        if !last {
            return None;
        }
        match &page.next_token {
            None if page.is_truncated => Some(self.broken(
                "the store says more keys follow (IsTruncated) but sent no continuation token"
                    .to_owned(),
            )),
            Some(token) if !self.tokens_followed.insert(token.clone()) => Some(self.broken(format!(
                "the store sent continuation token '{}' a second time; following it would list the same keys forever",
                token.escape_debug()
            ))),
            _ => None,
        }
    }

    fn broken(&self, detail: String) -> Error {
        Error::BadListing {
            bucket: self.listing.spec.bucket.clone(),
            prefix: self.listing.spec.prefix.clone(),
            detail,
        }
    }

    /// The page's entries up to this part's stop key, merged in key order; true when the
    /// stop key was in the page.
    async fn entries_before_stop(&mut self, page: ListPage) -> (Vec<Listed>, bool) {
        let mut entries = merge_in_key_order(page);
        self.note_widest_char(&entries);
        if let Some(report) = self.report_first.take() {
            // A split's first page: its first key is where the part before this one stops.
            let first = entries.first().map(|entry| entry.key().to_owned());
            let empty = first.is_none();
            let _ = report.send(first);
            if empty {
                return (entries, true);
            }
        }
        if let Some(pending) = self.pending.take() {
            // Nothing past the split may go out before its boundary is known.
            self.stop = match pending.first_key.await {
                Ok(Some(first_key)) if Some(&first_key) != pending.previous_stop.as_ref() => {
                    Some(first_key)
                }
                // Nothing between the guess and the old boundary: aim lower next time.
                _ => {
                    self.empty_above = Some(pending.guess);
                    pending.previous_stop
                }
            };
        }
        let Some(stop) = self.stop.as_deref() else {
            return (entries, false);
        };
        match entries.iter().position(|entry| entry.key() == stop) {
            Some(at) => {
                entries.truncate(at);
                (entries, true)
            }
            None => (entries, false),
        }
    }

    fn note_widest_char(&self, entries: &[Listed]) {
        let mut widest = self.listing.widest.lock().expect("widest poisoned");
        note_widest(
            &mut widest,
            &self.listing.spec.prefix,
            entries.iter().map(Listed::key),
        );
    }

    /// After a full page, if a worker slot is free, probe guesses for handing part of what
    /// is left to a new worker, one key each, while this worker keeps listing; the split
    /// goes where a guess found keys (see `split_at_best_guess`), so no worker starts on a
    /// stretch with nothing in it (such a start still costs the store the next page). Below
    /// a known next part (`stop`, a real key) the guess is the middle of the stretch; the
    /// last part has no known top, and gets a few guesses at once ([`split_guesses`]).
    fn maybe_split(&mut self, page_first: &str, last_key: &str) {
        if self.listing.spec.delimiter.is_some() || self.pending.is_some() || self.probing.is_some()
        {
            return;
        }
        let Ok(slot) = self.listing.spare_workers.clone().try_acquire_owned() else {
            return;
        };
        let prefix = &self.listing.spec.prefix;
        let widest = self.listing.widest.lock().expect("widest poisoned").clone();
        let guesses = match &self.stop {
            Some(stop) => {
                let ceiling = self
                    .empty_above
                    .as_ref()
                    .map_or(stop, |empty| empty.min(stop));
                split_point(prefix, last_key, Some(ceiling), &widest)
                    .into_iter()
                    .collect()
            }
            None => {
                let end = self.listing.end.lock().expect("end poisoned").clone();
                let ceiling = [self.empty_above.as_deref(), end.as_deref()]
                    .into_iter()
                    .flatten()
                    .min();
                split_guesses(prefix, page_first, last_key, ceiling, &widest)
            }
        };
        if guesses.is_empty() {
            return;
        }
        let listing = self.listing.clone();
        let found = tokio::spawn(async move {
            let probes = guesses.into_iter().map(|guess| {
                let listing = listing.clone();
                async move {
                    // A failed probe only means no split there: the listing itself goes on
                    // and reports the store's errors.
                    let first = first_keys(&listing, Cursor::After(guess.clone()), 1)
                        .await
                        .ok()
                        .and_then(|(keys, _)| keys.into_iter().next());
                    (guess, first)
                }
            });
            futures::future::join_all(probes).await
        });
        self.probing = Some(Probing {
            found,
            slot: Some(slot),
        });
    }

    /// Hand everything after the highest guess that found a key inside this part (above
    /// what it sent on, below its stop) to a new worker, which reports the first key the
    /// store gave it. Guesses that found nothing become ceilings for later guesses.
    fn split_at_best_guess(
        &mut self,
        found: Vec<(String, Option<String>)>,
        slot: OwnedSemaphorePermit,
    ) {
        let end = found
            .iter()
            .filter(|(_, first)| first.is_none())
            .map(|(guess, _)| guess)
            .min();
        if let Some(end) = end {
            let mut known = self.listing.end.lock().expect("end poisoned");
            if known.as_ref().is_none_or(|known| end < known) {
                *known = Some(end.clone());
            }
        }
        let inside = |first: &Option<String>| {
            first.as_deref().is_some_and(|first| {
                self.last_sent.as_deref().is_none_or(|sent| first > sent)
                    && self.stop.as_deref().is_none_or(|stop| first < stop)
            })
        };
        let best = found
            .iter()
            .filter(|(_, first)| inside(first))
            .map(|(guess, _)| guess)
            .max()
            .cloned();
        // The lowest guess above the split (or anywhere, without one) with nothing inside.
        let empty_above = found
            .iter()
            .filter(|(guess, first)| {
                !inside(first) && best.as_ref().is_none_or(|best| guess > best)
            })
            .map(|(guess, _)| guess)
            .min()
            .cloned();
        match best {
            Some(guess) => self.split_at(guess, slot, empty_above),
            None => self.empty_above = empty_above,
        }
    }

    /// Hand everything after `guess` to a new worker, which reports the first key the
    /// store gave it; `empty_above` is a guess that found nothing in that part.
    fn split_at(&mut self, guess: String, slot: OwnedSemaphorePermit, empty_above: Option<String>) {
        let (report, first_key) = oneshot::channel();
        let previous_stop = self.stop.take();
        let (output, pages) = PartOutput::new(false);
        let successor = self.successor.replace(pages);
        let upper = Part {
            start_after: Some(guess.clone()),
            stop: previous_stop.clone(),
            output,
            successor,
            report_first: Some(report),
            slot: Some(slot),
            empty_above,
        };
        tokio::spawn(run_worker(self.listing.clone(), upper));
        self.pages_before_split = PAGES_BETWEEN_SPLITS;
        self.pending = Some(PendingSplit {
            guess,
            first_key,
            previous_stop,
        });
    }
}

/// The answers to a worker's split guesses, with the slot they hold (`None` if the probing
/// task failed); the probing is over either way.
async fn probed(
    probing: &mut Option<Probing>,
) -> Option<(Vec<(String, Option<String>)>, OwnedSemaphorePermit)> {
    let Some(running) = probing.as_mut() else {
        return std::future::pending().await;
    };
    let found = (&mut running.found).await.ok();
    let mut done = probing.take()?;
    Some((found?, done.slot.take()?))
}

/// A page request in flight, with the channels its objects and its continuation token
/// arrive on before the page ends.
struct PageFetch {
    parts: PageParts,
    early_token: mpsc::UnboundedReceiver<String>,
}

/// What a page request delivers: batches of objects, then the rest of the page.
struct PageParts {
    request: JoinHandle<Result<ListPage>>,
    batches: mpsc::Receiver<Vec<ObjectEntry>>,
}

impl PageFetch {
    fn start(listing: &Arc<Listing>, cursor: Cursor) -> PageFetch {
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
                listing
                    .store
                    .list_page(&query, Some(&token_sender), &batch_sender, &handed_on)
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
    async fn next_part(&mut self) -> Result<(ListPage, bool)> {
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

/// Raise `widest` to the highest character each key has at each position below the prefix.
fn note_widest<'a>(widest: &mut Vec<char>, prefix: &str, keys: impl Iterator<Item = &'a str>) {
    for key in keys {
        let rest = key.get(prefix.len()..).unwrap_or_default();
        for (position, character) in rest.chars().take(MAX_PROFILED_CHARS).enumerate() {
            match widest.get_mut(position) {
                Some(seen) => *seen = (*seen).max(character),
                None => widest.push(character),
            }
        }
    }
}

/// The first keys (up to `max_keys`) the store lists from `cursor`, and whether more follow.
/// One request (with its retries), read to its end.
async fn first_keys(
    listing: &Arc<Listing>,
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
                listing
                    .store
                    .list_page(&query, None, &batch_sender, &handed_on)
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

/// A stretch of the key space while it is being split: `low` is a key inside it, `high` the
/// first key of the stretch above (or a guess above which it was found empty).
struct Stretch {
    low: String,
    high: Option<String>,
    /// Guesses that found nothing new in this stretch.
    misses: u32,
}

/// Guesses that may find nothing new before a stretch is left whole.
const MAX_MISSES: u32 = 12;

/// Up to `parts - 1` boundaries, in order, that cut the prefix's key space into ranges
/// (see [`KeyBounds`]) holding at least one key each when they were found. A first page
/// teaches the shape of the keys; then each stretch is cut in the middle, character-wise
/// (`split_point`), breadth first, and each guess costs one request of one key, so the
/// keys between are never listed: a billion-key prefix costs about `parts` small requests.
/// The ranges are even in key space, not in key count or bytes; a prefix that fits in one
/// page gets no boundary.
pub(crate) async fn split_key_space(
    store: Arc<S3Store>,
    counters: Arc<Counters>,
    retry: RetryPolicy,
    spec: ListSpec,
    parts: usize,
) -> Result<Vec<String>> {
    let page_size = spec.page_size;
    let listing = Listing::new(store, counters, retry, spec, 1);
    let prefix = listing.spec.prefix.clone();
    let (first_page, more) = first_keys(&listing, Cursor::Start, page_size).await?;
    let mut widest = Vec::new();
    note_widest(&mut widest, &prefix, first_page.iter().map(String::as_str));
    let Some(last) = first_page.last().filter(|_| more && parts > 1) else {
        return Ok(Vec::new());
    };
    let mut boundaries = Vec::new();
    let mut stretches = std::collections::VecDeque::from([Stretch {
        low: last.clone(),
        high: None,
        misses: 0,
    }]);
    while boundaries.len() + 1 < parts {
        let Some(mut stretch) = stretches.pop_front() else {
            break;
        };
        let Some(guess) = split_point(&prefix, &stretch.low, stretch.high.as_deref(), &widest)
        else {
            continue; // nothing fits between: this stretch stays whole
        };
        let (keys, _) = first_keys(&listing, Cursor::After(guess.clone()), 1).await?;
        note_widest(&mut widest, &prefix, keys.iter().map(String::as_str));
        match keys.into_iter().next() {
            // A key strictly inside the stretch: a boundary, and two stretches to cut next.
            Some(first) if stretch.high.as_ref().is_none_or(|high| &first < high) => {
                stretches.push_back(Stretch {
                    low: std::mem::replace(&mut stretch.low, first.clone()),
                    high: Some(first.clone()),
                    misses: 0,
                });
                stretches.push_back(stretch);
                boundaries.push(guess);
            }
            // Nothing between the guess and the stretch's top: aim lower next time.
            _ => {
                stretch.high = Some(guess);
                stretch.misses += 1;
                if stretch.misses < MAX_MISSES {
                    stretches.push_front(stretch);
                }
            }
        }
    }
    boundaries.sort();
    Ok(boundaries)
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

/// Up to [`GUESSES_AT_ONCE`] keys strictly between `low`, the last key of a page that
/// started at `page_first`, and `ceiling` (a guess that found nothing above it; none: the
/// end of the key space), to probe for a split. First the middle of the stretch
/// ([`split_point`]); then, from the coarsest level down, the next group after `low` at each
/// level where the page's keys did not differ: after a page `w4/d000/k000000`..
/// `w4/d000/k000999` these are `w4/e`, `w4/d1`, `w4/d01`, steps of growing size that find
/// where sequential names end in one round trip where halving from an unknown top took one
/// per step. Below a ceiling, only the levels down to one below where `low` and the ceiling
/// part: finer steps would split off little more than the next page.
fn split_guesses(
    prefix: &str,
    page_first: &str,
    low: &str,
    ceiling: Option<&str>,
    widest: &[char],
) -> Vec<String> {
    let mut guesses: Vec<String> = split_point(prefix, low, ceiling, widest)
        .into_iter()
        .collect();
    let low_rest: Vec<char> = low
        .get(prefix.len()..)
        .unwrap_or_default()
        .chars()
        .collect();
    let unvaried = page_first
        .get(prefix.len()..)
        .unwrap_or_default()
        .chars()
        .zip(&low_rest)
        .take_while(|(a, b)| a == *b)
        .count();
    let coarse = ceiling.map_or(unvaried, |ceiling| {
        let ceiling_rest = ceiling.get(prefix.len()..).unwrap_or_default().chars();
        let parted = ceiling_rest
            .zip(&low_rest)
            .take_while(|(a, b)| a == *b)
            .count();
        unvaried.min(parted + 2)
    });
    for level in 0..coarse {
        if guesses.len() >= GUESSES_AT_ONCE {
            break;
        }
        let Some(next) = low_rest.get(level).and_then(|&c| char_after(c)) else {
            continue;
        };
        let mut guess = prefix.to_owned();
        guess.extend(&low_rest[..level]);
        guess.push(next);
        let fits = guess.as_str() > low && ceiling.is_none_or(|ceiling| guess.as_str() < ceiling);
        if fits && !guesses.contains(&guess) {
            guesses.push(guess);
        }
    }
    guesses
}

/// The next character after `c` (past the surrogates), if there is one.
fn char_after(c: char) -> Option<char> {
    match u32::from(c) + 1 {
        0xD800 => Some('\u{E000}'),
        next => char::from_u32(next),
    }
}

/// A key strictly between `low` and `high` (both starting with `prefix`; `None` is the end
/// of the prefix's key space, guessed as just past the widest character seen), near the
/// middle character-wise, or `None` when there is no useful one. Correctness never depends
/// on the guess: the two ranges meet exactly at the returned key.
fn split_point(prefix: &str, low: &str, high: Option<&str>, widest: &[char]) -> Option<String> {
    // Just past the widest character seen at a position (printable ASCII when unknown),
    // or past the end of the character's class: having seen only "000" and "001" says
    // little about how far the digits go.
    let above_widest = |position: usize, floor: char| {
        let seen = widest.get(position).copied().unwrap_or('~');
        let class_end = match floor {
            '0'..='9' => '9',
            'a'..='z' => 'z',
            'A'..='Z' => 'Z',
            _ => seen,
        };
        u32::from(seen.max(class_end)) + 1
    };
    let low_rest: Vec<char> = low.get(prefix.len()..)?.chars().collect();
    let high_rest: Vec<char> = match high {
        Some(high) => high.get(prefix.len()..)?.chars().collect(),
        None => vec![char::from_u32(above_widest(0, *low_rest.first()?)).unwrap_or(char::MAX)],
    };
    let shared = low_rest
        .iter()
        .zip(&high_rest)
        .take_while(|(a, b)| a == b)
        .count();
    let high_char = u32::from(*high_rest.get(shared)?);
    let mut split: String = prefix.to_owned();
    split.extend(&low_rest[..shared]);
    match low_rest.get(shared) {
        // `low` is a prefix of `high`: extend it with something below high's next character.
        None => split.push(middle(' ' as u32, high_char)?),
        Some(&low_char)
            if high_char
                .checked_sub(u32::from(low_char))
                .is_some_and(|gap| gap >= 2) =>
        {
            split.push(middle(u32::from(low_char), high_char)?)
        }
        // Adjacent characters: keep low's, then go one deeper above low's next character.
        Some(&low_char) => {
            split.push(low_char);
            let floor = low_rest.get(shared + 1).copied().unwrap_or(' ');
            let ceiling = above_widest(shared + 1, floor).max(u32::from(floor) + 2);
            split.push(middle(u32::from(floor), ceiling)?);
        }
    }
    (split.as_str() > low && high.is_none_or(|high| split.as_str() < high)).then_some(split)
}

/// A character strictly between two code points, or `None` if they are adjacent.
fn middle(low: u32, high: u32) -> Option<char> {
    let mid = low + (high.checked_sub(low)? / 2);
    if mid <= low {
        return None;
    }
    // Surrogates are not characters; step below them (still above `low` when possible).
    let mid = if (0xD800..=0xDFFF).contains(&mid) {
        0xD7FF
    } else {
        mid
    };
    char::from_u32(mid).filter(|c| u32::from(*c) > low)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `widest` gives the widest character seen at each position below the prefix.
    fn check(prefix: &str, low: &str, high: Option<&str>, widest: &str) -> String {
        let widest: Vec<char> = widest.chars().collect();
        let split = split_point(prefix, low, high, &widest).expect("a split point");
        assert!(split.as_str() > low, "{split:?} > {low:?}");
        if let Some(high) = high {
            assert!(split.as_str() < high, "{split:?} < {high:?}");
        }
        assert!(split.starts_with(prefix));
        split
    }

    #[test]
    fn split_points_fall_strictly_inside_the_range() {
        assert_eq!(check("p/", "p/a", Some("p/z"), "z"), "p/m");
        // Unbounded: aim just past the widest character seen at the first position.
        assert_eq!(check("p/", "p/00999.bin", None, "9999.bin"), "p/5");
        assert_eq!(check("p/", "p/f0010.bin", None, "f999.bin"), "p/p");
        assert_eq!(check("p/", "p/00999.bin", Some("p/1"), "19"), "p/05");
        assert_eq!(check("", "a", Some("ab"), "zz"), "aA");
        check("", "dir/x", Some("dir0"), "zzzz");
        check("", "ü", None, "ü");
        check("", "\u{D7FE}", Some("\u{E000}"), "\u{E000}");
    }

    #[test]
    fn guesses_step_out_by_the_levels_a_page_did_not_vary() {
        let widest: Vec<char> = "d000/k000999".chars().collect();
        let first_page = |ceiling| {
            split_guesses(
                "w4/",
                "w4/d000/k000000",
                "w4/d000/k000999",
                ceiling,
                &widest,
            )
        };
        // No top known: the middle towards the widest class, then steps of growing size.
        assert_eq!(first_page(None), ["w4/o", "w4/e", "w4/d1", "w4/d01"]);
        // Below a ceiling: the middle under it, then the coarse steps that fit.
        assert_eq!(first_page(Some("w4/d1")), ["w4/d05", "w4/d01"]);
        let second = split_guesses(
            "w4/",
            "w4/d010/k010000",
            "w4/d010/k010999",
            Some("w4/d1"),
            &widest,
        );
        assert_eq!(second, ["w4/d05", "w4/d02"]);
        // Keys that differ from the first character on: only the middle.
        let flat: Vec<char> = "f".chars().collect();
        assert_eq!(split_guesses("", "0a", "3f", None, &flat), ["M"]);
        // Nothing fits below the ceiling.
        assert!(first_page(Some("w4/d000/k001")).len() < GUESSES_AT_ONCE);
        assert!(split_guesses("", "a", "a", Some("a "), &['z']).is_empty());
    }

    #[test]
    fn no_split_when_nothing_fits_between() {
        assert_eq!(split_point("", "a", Some("a "), &['z']), None);
        assert_eq!(split_point("", "a", Some("a!"), &['z']), None);
        // A store that lists out of byte order can hand us a bound below `low`.
        assert_eq!(split_point("", "b", Some("a"), &['z']), None);
    }

    #[test]
    fn repeated_splits_converge_on_dense_digits() {
        // Sequential numbers: each guess that finds nothing becomes the next ceiling.
        let mut ceiling: Option<String> = None;
        let mut steps = 0;
        loop {
            let guess = check("n/", "n/00999", ceiling.as_deref(), "09999");
            if guess.as_str() < "n/1" {
                break;
            }
            ceiling = Some(guess);
            steps += 1;
            assert!(steps < 8, "no convergence: {ceiling:?}");
        }
    }

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
