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
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(10),
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

/// Run `request` until it succeeds, fails for good, or the retries run out. For requests
/// whose whole answer arrives at once; streamed bodies resume in the engine instead.
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    counters: &Counters,
    mut request: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let started = Instant::now();
    let mut retries = 0;
    loop {
        match request().await {
            Err(error) if error.is_retryable() && retries < policy.max_retries => {
                tokio::time::sleep(policy.delay(retries)).await;
                retries += 1;
                counters.retries.fetch_add(1, Relaxed);
            }
            other => return other.map_err(|error| give_up(error, retries, started)),
        }
    }
}

/// Wrap an error that outlived retries so its message says how hard we tried.
pub(crate) fn give_up(error: Error, retries: u32, started: Instant) -> Error {
    if retries == 0 || !error.is_retryable() {
        return error;
    }
    Error::GaveUp {
        attempts: retries + 1,
        elapsed: started.elapsed(),
        last: Box::new(error),
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
        };
        for retry in 0..30 {
            let ceiling =
                Duration::from_millis(100 * (1u64 << retry.min(16))).min(Duration::from_secs(1));
            for _ in 0..20 {
                assert!(policy.delay(retry) <= ceiling);
            }
        }
    }
}
