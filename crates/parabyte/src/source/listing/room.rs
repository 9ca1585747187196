//! The channels between a part's worker and the consumer, and the room pages take while
//! they wait: a part's own few pages, and a room shared by the parts not yet being read.

use std::sync::Arc;

use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};

use super::held_page::HeldPage;
use super::shared_room::{SharedPermit, SharedRoom};
use super::spec::Listed;
use crate::error::Error;

/// Pages a part may hold for the consumer on its own.
const PAGES_AHEAD: usize = 2;

/// The room one page takes until the consumer has it: the part's own, or shared.
pub(super) struct PageRoom {
    _own: Option<OwnedSemaphorePermit>,
    _shared: Option<SharedPermit>,
}

/// What a worker sends its consumer.
pub(super) enum Chunk {
    /// Entries, with the room they take until the consumer has them.
    Page(HeldPage, PageRoom),
    /// This range is done; the listing continues with this part.
    Then(PartPages),
    Failed(Error),
}

/// The consumer's end of a part: its pages, and the word that the consumer reads it now.
pub(super) struct PartPages {
    pub(super) pages: mpsc::UnboundedReceiver<Chunk>,
    pub(super) being_read: watch::Sender<bool>,
}

/// A worker's end of a part.
pub(super) struct PartOutput {
    pages: mpsc::UnboundedSender<Chunk>,
    being_read: watch::Receiver<bool>,
    /// The part's own room: [`PAGES_AHEAD`] pages.
    own_room: Arc<Semaphore>,
}

impl PageRoom {
    fn own(permit: OwnedSemaphorePermit) -> PageRoom {
        PageRoom {
            _own: Some(permit),
            _shared: None,
        }
    }

    fn shared(permit: SharedPermit) -> PageRoom {
        PageRoom {
            _own: None,
            _shared: Some(permit),
        }
    }
}

impl PartOutput {
    /// A new part's two ends; `being_read` for the first part, which the consumer reads
    /// from the start.
    pub(super) fn new(being_read: bool) -> (PartOutput, PartPages) {
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

    /// Whether the consumer reads this part now.
    pub(super) fn is_being_read(&self) -> bool {
        *self.being_read.borrow()
    }

    /// Resolves when the consumer starts reading this part (at once if it does), or never
    /// if nobody will.
    pub(super) async fn reading_starts(&mut self) {
        if self.being_read.wait_for(|reading| *reading).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Room for one more page now, if there is any: the part's own, or, while the consumer
    /// has not reached this part, the shared room (see [`SharedRoom`]).
    pub(super) fn room_now(&self, shared_room: &Arc<SharedRoom>, key: &str) -> Option<PageRoom> {
        if let Ok(own) = self.own_room.clone().try_acquire_owned() {
            return Some(PageRoom::own(own));
        }
        if self.is_being_read() {
            return None;
        }
        shared_room.try_acquire(key).map(PageRoom::shared)
    }

    /// Waits for room for one more page: the part's own room, or, while the consumer has
    /// not reached this part, the shared room, which goes to the waiting part nearest the
    /// consumer (`key` is where this part starts). The part being read waits for its own
    /// room only, so parts ahead that fill the shared room never stall it. `None` when
    /// nobody will read the page.
    pub(super) async fn wait_for_room(
        &mut self,
        shared_room: &Arc<SharedRoom>,
        key: &str,
    ) -> Option<PageRoom> {
        loop {
            if self.is_being_read() {
                return self
                    .own_room
                    .clone()
                    .acquire_owned()
                    .await
                    .ok()
                    .map(PageRoom::own);
            }
            tokio::select! {
                own = self.own_room.clone().acquire_owned() => return own.ok().map(PageRoom::own),
                shared = shared_room.acquire(key) => return Some(PageRoom::shared(shared)),
                reader = self.being_read.changed() => if reader.is_err() {
                    return None;
                },
            }
        }
    }

    /// Hands entries to the consumer in the room they take, packed while the consumer has
    /// not reached this part; false when nobody will read them.
    pub(super) fn send(&self, entries: Vec<Listed>, room: PageRoom) -> bool {
        let page = match self.is_being_read() {
            true => HeldPage::Loose(entries),
            false => HeldPage::packed(entries),
        };
        self.pages.send(Chunk::Page(page, room)).is_ok()
    }

    pub(super) fn send_last(&self, chunk: Chunk) {
        let _ = self.pages.send(chunk);
    }
}
