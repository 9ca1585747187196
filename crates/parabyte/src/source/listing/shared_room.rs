//! The room that parts not yet being read share, kept for the parts nearest the consumer:
//! only the few parts lowest in key order may take it, and when a page's room comes free
//! the waiting part lowest in key order, the next the consumer will read, takes it. First
//! come, first served let the parts the first splits made far ahead fill it while the part
//! being read listed alone, one page after another (docs/PROFILE.md, stop 33).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

pub(super) struct SharedRoom {
    state: Mutex<RoomState>,
    /// How many parts still listing may be below one that takes shared room.
    near_parts: usize,
    /// Woken whenever room comes free or the nearest waiter changes.
    changed: Notify,
}

struct RoomState {
    free: usize,
    /// The start keys of the parts still listing.
    alive: BTreeMap<String, usize>,
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

/// A part's place among the parts still listing, left when its worker ends.
pub(super) struct Alive {
    room: Arc<SharedRoom>,
    key: String,
}

impl Drop for Alive {
    fn drop(&mut self) {
        leave(&mut self.room.lock().alive, &self.key);
        self.room.changed.notify_waiters();
    }
}

fn leave(keys: &mut BTreeMap<String, usize>, key: &str) {
    if let Some(count) = keys.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            keys.remove(key);
        }
    }
}

impl RoomState {
    /// Whether the part at `key` may take shared room now: there is some, no part below it
    /// waits for it, and fewer than `near_parts` parts still listing are below it.
    fn may_take(&self, key: &str, near_parts: usize) -> bool {
        let nearest_waiting = self
            .waiting
            .keys()
            .next()
            .is_none_or(|nearest| nearest.as_str() >= key);
        let below: usize = self
            .alive
            .range::<str, _>((std::ops::Bound::Unbounded, std::ops::Bound::Excluded(key)))
            .map(|(_, count)| count)
            .sum();
        self.free > 0 && nearest_waiting && below < near_parts
    }
}

/// A part's place in the queue, left when the wait ends or is given up.
struct Waiting<'a> {
    room: &'a SharedRoom,
    key: &'a str,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        leave(&mut self.room.lock().waiting, self.key);
        self.room.changed.notify_waiters();
    }
}

impl SharedRoom {
    pub(super) fn new(pages: usize, near_parts: usize) -> Arc<SharedRoom> {
        Arc::new(SharedRoom {
            near_parts,
            state: Mutex::new(RoomState {
                free: pages,
                alive: BTreeMap::new(),
                waiting: BTreeMap::new(),
            }),
            changed: Notify::new(),
        })
    }

    /// Counts the part that starts at `key` among those still listing until the guard drops.
    pub(super) fn enter(self: &Arc<SharedRoom>, key: &str) -> Alive {
        *self.lock().alive.entry(key.to_owned()).or_default() += 1;
        Alive {
            room: self.clone(),
            key: key.to_owned(),
        }
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
                if state.may_take(key, self.near_parts) {
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
        state.may_take(key, self.near_parts).then(|| {
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

    /// Yield until `count` parts wait for room: an event, not a pause.
    async fn until_waiting(room: &SharedRoom, count: usize) {
        while room.lock().waiting.len() < count {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn freed_room_goes_to_the_lowest_waiting_key_not_the_first_to_ask() {
        let room = SharedRoom::new(1, 8);
        let held = room.acquire("a").await;
        let far = tokio::spawn({
            let room = room.clone();
            async move {
                let _permit = room.acquire("z").await;
            }
        });
        // The far part asks first; wait until it is queued.
        until_waiting(&room, 1).await;
        let near = tokio::spawn({
            let room = room.clone();
            async move { room.acquire("m").await }
        });
        until_waiting(&room, 2).await;
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
        let room = SharedRoom::new(1, 8);
        let held = room.acquire("b").await;
        let given_up = tokio::spawn({
            let room = room.clone();
            async move {
                let _permit = room.acquire("a").await;
            }
        });
        until_waiting(&room, 1).await;
        given_up.abort();
        let _ = given_up.await;
        drop(held);
        // "a" gave up: "c" is now the lowest, and gets the room.
        let _permit = room.acquire("c").await;
        assert!(room.lock().waiting.is_empty());
    }

    #[tokio::test]
    async fn only_the_parts_nearest_the_consumer_take_shared_room() {
        let room = SharedRoom::new(4, 2);
        let alive: Vec<Alive> = ["a", "b", "c", "d"].map(|key| room.enter(key)).into();
        assert!(
            room.try_acquire("d").is_none(),
            "three parts below d are listing"
        );
        assert!(room.try_acquire("c").is_none());
        let near = room.try_acquire("b");
        assert!(near.is_some());
        let far = tokio::spawn({
            let room = room.clone();
            async move { room.acquire("c").await }
        });
        until_waiting(&room, 1).await;
        // The parts listing below c end: c is near now, and the room it waits for is free.
        drop(alive);
        let _permit = far.await.unwrap();
        assert_eq!(room.lock().free, 2);
    }
}
