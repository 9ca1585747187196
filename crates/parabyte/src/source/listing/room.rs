//! The channels between a part's worker and the consumer, and the room pages take while
//! they wait: a part's own few pages, and a room shared by the parts not yet being read.

use std::sync::Arc;

use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};

use super::spec::Listed;

/// Pages a part may hold for the consumer on its own.
const PAGES_AHEAD: usize = 2;
use crate::error::Error;

/// What a worker sends its consumer.
pub(super) enum Chunk {
    /// Entries, with the room they take until the consumer has them.
    Page(Vec<Listed>, Option<OwnedSemaphorePermit>),
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

    /// Sends entries once there is room for them: the part's own room, or, while the
    /// consumer has not reached this part, the shared room. The part being read waits for
    /// its own room only, so parts ahead that fill the shared room never stall it. False
    /// when nobody will read them.
    pub(super) async fn send(
        &mut self,
        entries: Vec<Listed>,
        shared_room: &Arc<Semaphore>,
    ) -> bool {
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

    pub(super) fn send_last(&self, chunk: Chunk) {
        let _ = self.pages.send(chunk);
    }
}
