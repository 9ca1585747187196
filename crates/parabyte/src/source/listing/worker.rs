//! One worker per part of the key space: it lists its part page after page, pipelined, and
//! hands the upper part of what is left to a new worker whenever a page shows there is
//! more and a worker slot is free.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::{oneshot, OwnedSemaphorePermit};
use tokio::task::JoinHandle;

use super::fetch::{first_keys, PageFetch};
use super::page::{Cursor, ListPage};
use super::room::{Chunk, PartOutput, PartPages};
use super::spec::{merge_in_key_order, Listed, Listing, PartTicket, TopInPage};
use super::split::{note_widest, split_guesses, split_point};
use crate::error::{Error, Result};

/// Full pages a part lists before it splits again, and before a part made by a split
/// splits at all (the first part splits after its first page). Each part costs the store
/// about one page more (its last page runs past its end, into the next part); splitting
/// after every page cut 100 pages into ~50 parts and cost ~50 pages more.
const PAGES_BETWEEN_SPLITS: usize = 2;
use crate::source::store::Store;

/// The upper part of a split, until it reports the first key it got.
struct PendingSplit {
    /// The key the new worker started after.
    guess: String,
    /// The first key the new worker got, or `None` if it found none.
    first_key: oneshot::Receiver<Option<String>>,
    /// This worker's stop key before the split (now the new worker's).
    previous_stop: Option<String>,
}

/// How far one page took a part.
enum Reached {
    /// The first key of the next part: this part is done.
    Stop,
    /// The first key of the range above a bounded listing: the whole listing is done.
    RangeTop,
    Neither,
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
pub(super) struct Part {
    /// Where the part starts: after this key, or at the first key.
    pub(super) start_after: Option<String>,
    /// The first key of the next part, if there is one.
    pub(super) stop: Option<String>,
    /// Where the part's pages go.
    pub(super) output: PartOutput,
    /// The next part, handed on when this one reaches it.
    pub(super) successor: Option<PartPages>,
    /// Set for a part made by a split: where to report its first key.
    pub(super) report_first: Option<oneshot::Sender<Option<String>>>,
    /// A place among the parallel listing workers, held while the part lists and not while
    /// it waits for room (the part being read needs none).
    pub(super) slot: Option<OwnedSemaphorePermit>,
    /// Its place among the parts alive.
    pub(super) ticket: Option<PartTicket>,
    /// A guess that found nothing between it and `stop`.
    pub(super) empty_above: Option<String>,
}

/// Split guesses being probed, and the worker slot the split will take.
struct Probing {
    /// Each guess with the first key the store lists after it (`None`: none at all).
    found: JoinHandle<Vec<(String, Option<String>)>>,
    /// Taken by the split; released with the probing otherwise.
    slot: Option<OwnedSemaphorePermit>,
    /// The new part's place among the parts alive, likewise.
    ticket: Option<PartTicket>,
}

impl Drop for Probing {
    fn drop(&mut self) {
        // A part that ended has no use for the answers.
        self.found.abort();
    }
}

pub(super) async fn run_worker<S: Store>(listing: Arc<Listing<S>>, part: Part) {
    let _ticket = part.ticket;
    let pages_before_split = if part.report_first.is_some() {
        PAGES_BETWEEN_SPLITS
    } else {
        1
    };
    let key = part.start_after.clone().unwrap_or_default();
    let _alive = listing.shared_room.enter(&key);
    let mut worker = Worker {
        listing,
        key,
        slot: part.slot,
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
struct Worker<S> {
    listing: Arc<Listing<S>>,
    /// Where this part starts: its place in the shared room's queue.
    key: String,
    /// Its worker slot, while it lists (see [`Part::slot`]).
    slot: Option<OwnedSemaphorePermit>,
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

impl<S: Store> Worker<S> {
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
                    // would be waste), or a split waits for its first key, or guesses for
                    // one are out: a split made while the next page is already asked for
                    // may start inside that page, whose successor both parts would then
                    // ask for (a page listed twice per split, docs/PROFILE.md).
                    token = fetch.early_token.recv(), if awaiting_token => {
                        awaiting_token = false;
                        if let Some(token) = token {
                            let splitting = self.pending.is_some() || self.probing.is_some();
                            // A part that gave its slot up lists again once it has one.
                            let may_list = self.slot.is_some() || self.output.is_being_read();
                            if self.stop.is_none() && !splitting && may_list {
                                next = Some(PageFetch::start(&self.listing, Cursor::Token(token)));
                            }
                        }
                        continue;
                    }
                    // Guesses answered: split at once, while this page is still arriving.
                    found = probed(&mut self.probing), if self.probing.is_some() => {
                        if let Some((found, slot, ticket)) = found {
                            self.split_at_best_guess(found, slot, ticket);
                        }
                        continue;
                    }
                    part = fetch.parts.next_part() => part?,
                };
                let broken = self.check(&mut page, last);
                let more = page.next_token.take();
                let (entries, reached) = self.entries_before_stop(page).await;
                if let Some(entry) = entries.first() {
                    first_key.get_or_insert_with(|| entry.key().to_owned());
                }
                if let Some(entry) = entries.last() {
                    last_key = Some(entry.key().to_owned());
                    self.last_sent.clone_from(&last_key);
                }
                if !entries.is_empty() && !self.send(entries).await {
                    return Ok(Ended::Abandoned);
                }
                // The page's good keys went out first: every key the store listed is seen.
                if let Some(error) = broken {
                    return Err(error);
                }
                match reached {
                    // The rest and a prefetched page go unread.
                    Reached::Stop => return Ok(Ended::AtNextPart),
                    // Everything to the range's end is listed: parts after this one could
                    // only repeat it.
                    Reached::RangeTop => return Ok(Ended::AtLastKey),
                    Reached::Neither => {}
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
                self.take_slot().await;
                next = Some(PageFetch::start(&self.listing, Cursor::Token(token)));
            }
        }
        Ok(Ended::AtLastKey)
    }

    /// Hands entries to the consumer once there is room for them. A part the consumer has
    /// not reached that must wait gives up its worker slot and any split it is probing for
    /// meanwhile: waiting is not listing, and the part being read may want the slots to
    /// split. False when nobody will read the entries.
    async fn send(&mut self, entries: Vec<Listed>) -> bool {
        let shared_room = &self.listing.shared_room;
        let room = match self.output.room_now(shared_room, &self.key) {
            Some(room) => Some(room),
            None => {
                if !self.output.is_being_read() {
                    self.slot = None;
                    self.probing = None;
                }
                self.output.wait_for_room(shared_room, &self.key).await
            }
        };
        room.is_some_and(|room| self.output.send(entries, room))
    }

    /// Takes a worker slot again before the next request, unless the consumer reads this
    /// part (it lists without one) or starts to meanwhile.
    async fn take_slot(&mut self) {
        if self.slot.is_some() || self.output.is_being_read() {
            return;
        }
        let spare = self.listing.spare_workers.clone();
        self.slot = tokio::select! {
            slot = spare.acquire_owned() => slot.ok(),
            () = self.output.reading_starts() => None,
        };
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

    /// The page's entries up to this part's stop key or the listing's range top, merged in
    /// key order, and which of them the page reached.
    async fn entries_before_stop(&mut self, page: ListPage) -> (Vec<Listed>, Reached) {
        let mut entries = merge_in_key_order(page);
        self.note_widest_char(&entries);
        if let Some(report) = self.report_first.take() {
            // A split's first page: its first key is where the part before this one stops.
            let first = entries.first().map(|entry| entry.key().to_owned());
            let empty = first.is_none();
            let _ = report.send(first);
            if empty {
                return (entries, Reached::Stop);
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
        let stop_at = self
            .stop
            .as_deref()
            .and_then(|stop| entries.iter().position(|entry| entry.key() == stop));
        let top_at = self.range_top_in(&entries).await;
        let (at, reached) = match (stop_at, top_at) {
            (Some(stop), Some(top)) if top < stop => (top, Reached::RangeTop),
            (Some(stop), _) => (stop, Reached::Stop),
            (None, Some(top)) => (top, Reached::RangeTop),
            (None, None) => return (entries, Reached::Neither),
        };
        entries.truncate(at);
        (entries, reached)
    }

    /// Where the range above this bounded listing starts in `entries`, if it does. A page
    /// past the top key that did not meet it costs one request of one key, to learn where
    /// the range above starts now; a failed one leaves the top as it was (a key listed
    /// twice at worst, never one lost).
    async fn range_top_in(&self, entries: &[Listed]) -> Option<usize> {
        let top = self.listing.range_top.as_ref()?;
        let was = match top.find(entries) {
            TopInPage::At(at) => return Some(at),
            TopInPage::NotYet => return None,
            TopInPage::Passed(was) => was,
        };
        let cursor = Cursor::After(top.boundary().to_owned());
        let (first_above, _) = first_keys(&self.listing, cursor, 1).await.ok()?;
        let now = first_above.into_iter().next();
        top.set_first_above(now.clone());
        match top.find(entries) {
            TopInPage::At(at) => Some(at),
            // The same top, still ahead: the store lists out of byte order.
            _ if now.as_ref() == Some(&was) => None,
            // The top moved past this page, or nothing is above any more: this page's keys
            // after the boundary were deleted since it was listed (by the range above),
            // and none of them is this range's.
            TopInPage::NotYet | TopInPage::Passed(_) => entries
                .iter()
                .position(|entry| entry.key() > top.boundary()),
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
        let Some(ticket) = self.listing.part_ticket() else {
            return;
        };
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
            ticket: Some(ticket),
        });
    }

    /// Hand everything after the highest guess that found a key inside this part (above
    /// what it sent on, below its stop) to a new worker, which reports the first key the
    /// store gave it. Guesses that found nothing become ceilings for later guesses.
    fn split_at_best_guess(
        &mut self,
        found: Vec<(String, Option<String>)>,
        slot: OwnedSemaphorePermit,
        ticket: PartTicket,
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
            Some(guess) => self.split_at(guess, slot, ticket, empty_above),
            None => self.empty_above = empty_above,
        }
    }

    /// Hand everything after `guess` to a new worker, which reports the first key the
    /// store gave it; `empty_above` is a guess that found nothing in that part.
    fn split_at(
        &mut self,
        guess: String,
        slot: OwnedSemaphorePermit,
        ticket: PartTicket,
        empty_above: Option<String>,
    ) {
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
            ticket: Some(ticket),
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

/// The answers to a worker's split guesses, with the slot and part ticket they hold (`None`
/// if the probing task failed); the probing is over either way.
async fn probed(
    probing: &mut Option<Probing>,
) -> Option<(
    Vec<(String, Option<String>)>,
    OwnedSemaphorePermit,
    PartTicket,
)> {
    let Some(running) = probing.as_mut() else {
        return std::future::pending().await;
    };
    let found = (&mut running.found).await.ok();
    let mut done = probing.take()?;
    Some((found?, done.slot.take()?, done.ticket.take()?))
}
