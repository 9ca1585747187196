//! When and how long to wait before trying a failed request again.

use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::counters::Counters;
use crate::error::{Error, Result};

/// Exponential backoff with full jitter, so many clients hitting one throttled store spread out.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts after the first one.
    pub max_retries: u32,
    /// Upper bound of the first wait.
    pub base_delay: Duration,
    /// No wait is longer than this.
    pub max_delay: Duration,
    /// No retry starts (or waits) past this much time since the first attempt; `None`: the
    /// retries alone bound it.
    pub max_elapsed: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(10),
            max_elapsed: None,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based): uniform in [0, min(max, base * 2^retry)].
    pub(crate) fn delay(&self, retry: u32) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(1u32 << retry.min(16))
            .min(self.max_delay);
        ceiling.mul_f64(rand::rng().random::<f64>())
    }
}

/// One request's (or one streamed range's) retries so far: the only place that decides
/// whether a failure is waited out and tried again or given up, and that tells the whole
/// story (attempts, elapsed time) when it is given up.
#[derive(Debug)]
pub(crate) struct Retries<'a> {
    policy: &'a RetryPolicy,
    counters: &'a Counters,
    retries: u32,
    started: Instant,
}

impl<'a> Retries<'a> {
    pub(crate) fn new(policy: &'a RetryPolicy, counters: &'a Counters) -> Retries<'a> {
        Retries {
            policy,
            counters,
            retries: 0,
            started: Instant::now(),
        }
    }

    /// After a failed attempt: wait and return `Ok` when another one is due, else the error
    /// to report.
    pub(crate) async fn after(&mut self, error: Error) -> Result<()> {
        if !error.is_retryable() {
            return Err(error);
        }
        let delay = self.policy.delay(self.retries);
        let out_of_time = self
            .policy
            .max_elapsed
            .is_some_and(|budget| self.started.elapsed() + delay > budget);
        if self.retries >= self.policy.max_retries || out_of_time {
            // A first failure that was never retried speaks for itself, unless time ran out.
            if self.retries == 0 && !out_of_time {
                return Err(error);
            }
            return Err(Error::GaveUp {
                attempts: self.retries + 1,
                elapsed: self.started.elapsed(),
                last: Box::new(error),
            });
        }
        tokio::time::sleep(delay).await;
        self.retries += 1;
        self.counters.retries.fetch_add(1, Relaxed);
        Ok(())
    }
}

/// Run `request` until it succeeds, fails for good, or the retries run out. For requests
/// whose whole answer arrives at once; streamed bodies resume in the engine, with the same
/// [`Retries`].
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    counters: &Counters,
    mut request: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut retries = Retries::new(policy, counters);
    loop {
        match request().await {
            Err(error) => retries.after(error).await?,
            success => return success,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_stay_capped() {
        let policy = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
            max_elapsed: None,
        };
        for retry in 0..30 {
            let ceiling =
                Duration::from_millis(100 * (1u64 << retry.min(16))).min(Duration::from_secs(1));
            for _ in 0..20 {
                assert!(policy.delay(retry) <= ceiling);
            }
        }
    }

    fn quick(max_retries: u32, max_elapsed: Option<Duration>) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
            max_elapsed,
        }
    }

    fn throttled() -> Error {
        Error::Throttled {
            what: "GET x".into(),
            detail: "503 SlowDown".into(),
        }
    }

    /// Runs a request that always fails with `error`; how many attempts it got, and the end.
    async fn run(policy: &RetryPolicy, error: fn() -> Error) -> (u32, Error) {
        let counters = Counters::default();
        let mut attempts = 0;
        let end = with_retries(policy, &counters, || {
            attempts += 1;
            std::future::ready(Err::<(), _>(error()))
        })
        .await;
        (attempts, end.unwrap_err())
    }

    #[tokio::test]
    async fn retryable_failures_are_tried_again_then_given_up_with_the_story() {
        let (attempts, error) = run(&quick(3, None), throttled).await;
        assert_eq!(attempts, 4);
        let Error::GaveUp { attempts, last, .. } = error else {
            panic!("{error}");
        };
        assert_eq!(attempts, 4);
        assert!(matches!(*last, Error::Throttled { .. }));
    }

    #[tokio::test]
    async fn other_failures_are_not_tried_again() {
        let not_found = || Error::NotFound {
            what: "GET x".into(),
            detail: "404".into(),
        };
        let (attempts, error) = run(&quick(3, None), not_found).await;
        assert_eq!(attempts, 1);
        assert!(error.is_not_found() && !matches!(error, Error::GaveUp { .. }));
    }

    #[tokio::test]
    async fn the_time_budget_ends_retries_early() {
        let (attempts, error) = run(&quick(1000, Some(Duration::ZERO)), throttled).await;
        assert_eq!(attempts, 1, "no time left for a second attempt");
        assert!(
            error.to_string().contains("gave up after 1 attempts"),
            "{error}"
        );
    }
}
