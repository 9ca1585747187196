//! The room that parts not yet being read share, handed out nearest first: when a page's
//! room comes free, the waiting part lowest in key order, the next the consumer will read,
//! takes it. First come, first served let the parts the first splits made far ahead hold it
//! all while the parts just ahead of the consumer listed one page at a time
//! (docs/PROFILE.md, stop 33).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

pub(super) struct SharedRoom {
    state: Mutex<RoomState>,
    /// Woken whenever room comes free or the nearest waiter changes.
    changed: Notify,
}

struct RoomState {
    free: usize,
    /// The start keys of the parts waiting, with how many wait under each (one, in practice).
    waiting: BTreeMap<String, usize>,
}

/// One page's worth of shared room, given back when dropped.
pub(super) struct SharedPermit {
    room: Arc<SharedRoom>,
}

impl Drop for SharedPermit {
    fn drop(&mut self) {
        self.room.lock().free += 1;
        self.room.changed.notify_waiters();
    }
}

/// A part's place in the queue, left when the wait ends or is given up.
struct Waiting<'a> {
    room: &'a SharedRoom,
    key: &'a str,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.room.lock();
        if let Some(count) = state.waiting.get_mut(self.key) {
            *count -= 1;
            if *count == 0 {
                state.waiting.remove(self.key);
            }
        }
        drop(state);
        self.room.changed.notify_waiters();
    }
}

impl SharedRoom {
    pub(super) fn new(pages: usize) -> Arc<SharedRoom> {
        Arc::new(SharedRoom {
            state: Mutex::new(RoomState {
                free: pages,
                waiting: BTreeMap::new(),
            }),
            changed: Notify::new(),
        })
    }

    /// A page of room for the part that starts at `key`, once no part below it waits.
    /// Cancel-safe: a part that stops waiting leaves the queue.
    pub(super) async fn acquire(self: &Arc<SharedRoom>, key: &str) -> SharedPermit {
        *self.lock().waiting.entry(key.to_owned()).or_default() += 1;
        let _waiting = Waiting { room: self, key };
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the check, so a release between the two still wakes us.
            changed.as_mut().enable();
            {
                let mut state = self.lock();
                let nearest = state.waiting.keys().next().map(String::as_str);
                if state.free > 0 && nearest == Some(key) {
                    state.free -= 1;
                    return SharedPermit { room: self.clone() };
                }
            }
            changed.await;
        }
    }

    /// A page of room for the part at `key` if there is one now and no part below it waits.
    pub(super) fn try_acquire(self: &Arc<SharedRoom>, key: &str) -> Option<SharedPermit> {
        let mut state = self.lock();
        let below = state
            .waiting
            .keys()
            .next()
            .is_some_and(|nearest| nearest.as_str() < key);
        (state.free > 0 && !below).then(|| {
            state.free -= 1;
            SharedPermit { room: self.clone() }
        })
    }

    fn lock(&self) -> MutexGuard<'_, RoomState> {
        // Nothing here can panic while the lock is held.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn freed_room_goes_to_the_lowest_waiting_key_not_the_first_to_ask() {
        let room = SharedRoom::new(1);
        let held = room.acquire("a").await;
        let far = tokio::spawn({
            let room = room.clone();
            async move {
                let _permit = room.acquire("z").await;
            }
        });
        // The far part asks first; wait until it is queued.
        while room.lock().waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        let near = tokio::spawn({
            let room = room.clone();
            async move { room.acquire("m").await }
        });
        while room.lock().waiting.len() < 2 {
            tokio::task::yield_now().await;
        }
        drop(held);
        let near = near.await.unwrap();
        assert!(
            !far.is_finished(),
            "the far part took the room before the near one"
        );
        drop(near);
        far.await.unwrap();
        assert_eq!(room.lock().free, 1);
        assert!(room.lock().waiting.is_empty());
    }

    #[tokio::test]
    async fn a_wait_given_up_leaves_the_queue() {
        let room = SharedRoom::new(1);
        let held = room.acquire("b").await;
        let given_up = tokio::spawn({
            let room = room.clone();
            async move {
                let _permit = room.acquire("a").await;
            }
        });
        while room.lock().waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        given_up.abort();
        let _ = given_up.await;
        drop(held);
        // "a" gave up: "c" is now the lowest, and gets the room.
        let _permit = room.acquire("c").await;
        assert!(room.lock().waiting.is_empty());
    }
}
