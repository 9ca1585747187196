//! Requests in flight, adapted to the store. When it throttles (503 SlowDown, 429), the
//! limit drops to half of what was in flight; after every `limit` requests that succeed it
//! grows by one, up to the configured maximum. Additive increase, multiplicative decrease,
//! as TCP does: the store sees fewer requests at once instead of the same number retried.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// One burst of throttling answers (many requests in flight all hear it) cuts the limit once.
const CUT_COOLDOWN: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(crate) struct RequestLimit {
    slots: Arc<Semaphore>,
    max: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    limit: usize,
    /// Permits still out that are destroyed instead of returned: the limit dropped below
    /// what was in flight.
    debt: usize,
    successes: usize,
    last_cut: Option<Instant>,
}

/// A request's place under the limit, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    permit: Option<OwnedSemaphorePermit>,
    limit: Arc<RequestLimit>,
}

impl RequestLimit {
    pub(crate) fn new(max: usize) -> Arc<RequestLimit> {
        Arc::new(RequestLimit {
            slots: Arc::new(Semaphore::new(max)),
            max,
            state: Mutex::new(State {
                limit: max,
                debt: 0,
                successes: 0,
                last_cut: None,
            }),
        })
    }

    pub(crate) async fn acquire(self: &Arc<Self>) -> Slot {
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("request slots are never closed");
        Slot {
            permit: Some(permit),
            limit: self.clone(),
        }
    }

    /// A slot for the one request that every other in flight waits on (the next bytes of a
    /// stream, which later parts wait to write behind): it takes no permit, so it can never
    /// wait for the slots those parts hold.
    pub(crate) fn first_in_line(self: &Arc<Self>) -> Slot {
        Slot {
            permit: None,
            limit: self.clone(),
        }
    }

    /// The store asked to slow down.
    pub(crate) fn throttled(&self) {
        let mut state = self.state.lock().expect("request limit poisoned");
        if state
            .last_cut
            .is_some_and(|cut| cut.elapsed() < CUT_COOLDOWN)
        {
            return;
        }
        let in_flight = (state.limit + state.debt).saturating_sub(self.slots.available_permits());
        let new_limit = (state.limit.min(in_flight) / 2).max(1);
        let cut = state.limit.saturating_sub(new_limit);
        let forgotten = self.slots.forget_permits(cut);
        state.debt += cut - forgotten;
        state.limit = new_limit;
        state.successes = 0;
        state.last_cut = Some(Instant::now());
    }

    /// A request got through.
    pub(crate) fn succeeded(&self) {
        let mut state = self.state.lock().expect("request limit poisoned");
        if state.limit >= self.max {
            return;
        }
        state.successes += 1;
        if state.successes >= state.limit {
            state.successes = 0;
            state.limit += 1;
            if state.debt > 0 {
                state.debt -= 1;
            } else {
                self.slots.add_permits(1);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn limit(&self) -> usize {
        self.state.lock().expect("request limit poisoned").limit
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        let mut state = self.limit.state.lock().expect("request limit poisoned");
        if state.debt > 0 {
            state.debt -= 1;
            permit.forget();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn throttling_halves_what_was_in_flight_and_success_grows_it_back() {
        let limit = RequestLimit::new(64);
        let held: Vec<Slot> = futures::future::join_all((0..40).map(|_| limit.acquire())).await;
        limit.throttled();
        assert_eq!(limit.limit(), 20, "half of the 40 in flight");
        limit.throttled();
        assert_eq!(limit.limit(), 20, "one burst cuts once");
        drop(held);
        assert_eq!(
            limit.slots.available_permits(),
            20,
            "the 20 permits over the limit were destroyed on return"
        );
        for _ in 0..20 {
            limit.succeeded();
        }
        assert_eq!(limit.limit(), 21);
        assert_eq!(limit.slots.available_permits(), 21);
        for _ in 0..10_000 {
            limit.succeeded();
        }
        assert_eq!(limit.limit(), 64, "never above the maximum");
        assert_eq!(limit.slots.available_permits(), 64);
    }

    #[tokio::test]
    async fn the_limit_never_drops_below_one() {
        let limit = RequestLimit::new(4);
        let _one = limit.acquire().await;
        limit.throttled();
        assert_eq!(limit.limit(), 1);
    }
}
