//! Progress for Python: the engine reports into atomic counters from many tasks at once, and
//! the user's callback is called with a snapshot at most every 100 ms (and once at the end),
//! so a busy transfer never waits on the GIL.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

use parabyte::Reporter;
use pyo3::prelude::*;
use tokio::sync::oneshot;

/// Resolves once a transfer let go of its tally.
pub type LetGo = oneshot::Receiver<()>;

/// Counters the engine updates as it goes: the reporter of one transfer.
#[derive(Debug, Default)]
pub struct Tally {
    objects_total: AtomicU64,
    objects_done: AtomicU64,
    objects_failed: AtomicU64,
    bytes_total: AtomicU64,
    bytes_done: AtomicU64,
    let_go: Mutex<Option<oneshot::Sender<()>>>,
}

impl Drop for Tally {
    fn drop(&mut self) {
        let sender = self.let_go.get_mut().ok().and_then(Option::take);
        // Nobody waiting is fine: the call was not cancelled.
        let _ = sender.map(|let_go| let_go.send(()));
    }
}

impl Reporter for Tally {
    fn object_queued(&self, size: Option<u64>) {
        self.objects_total.fetch_add(1, Relaxed);
        if let Some(size) = size {
            self.bytes_total.fetch_add(size, Relaxed);
        }
    }

    fn size_discovered(&self, size: u64) {
        self.bytes_total.fetch_add(size, Relaxed);
    }

    fn bytes_transferred(&self, bytes: u64) {
        self.bytes_done.fetch_add(bytes, Relaxed);
    }

    fn bytes_skipped(&self, bytes: u64) {
        // The total is what this call moves: bytes already on disk leave it.
        let _ = self
            .bytes_total
            .fetch_update(Relaxed, Relaxed, |total| Some(total.saturating_sub(bytes)));
    }

    fn object_finished(&self, _key: &str, outcome: Result<u64, &parabyte::Error>) {
        match outcome {
            Ok(_) => &self.objects_done,
            Err(_) => &self.objects_failed,
        }
        .fetch_add(1, Relaxed);
    }
}

impl Tally {
    /// A tally for one transfer, and word once its last reference is gone. The core holds
    /// a transfer's reporter in every task and blocking hand-off of it (its
    /// `transfer_scope`), so then nothing of the transfer runs or holds a file, and a
    /// cancelled call may return; earlier, the next call would find the temporary file
    /// still locked, as if another process wrote it.
    pub fn watched() -> (Arc<Tally>, LetGo) {
        let (sender, receiver) = oneshot::channel();
        let tally = Tally::default();
        *tally.let_go.lock().unwrap_or_else(PoisonError::into_inner) = Some(sender);
        (Arc::new(tally), receiver)
    }

    fn snapshot(&self) -> Progress {
        Progress {
            objects_done: self.objects_done.load(Relaxed),
            objects_failed: self.objects_failed.load(Relaxed),
            objects_total: self.objects_total.load(Relaxed),
            bytes_done: self.bytes_done.load(Relaxed),
            bytes_total: self.bytes_total.load(Relaxed),
        }
    }
}

/// How far a transfer has come, as passed to a `progress=` callback.
#[pyclass(frozen, get_all, module = "parabyte")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Objects finished well.
    pub objects_done: u64,
    /// Objects that failed (see the summary for why).
    pub objects_failed: u64,
    /// Objects known so far; grows while a listing is still being read.
    pub objects_total: u64,
    /// Body bytes received.
    pub bytes_done: u64,
    /// Total size of the objects known so far.
    pub bytes_total: u64,
}

#[pymethods]
impl Progress {
    fn __repr__(&self) -> String {
        format!(
            "Progress(objects_done={}, objects_failed={}, objects_total={}, bytes_done={}, bytes_total={})",
            self.objects_done, self.objects_failed, self.objects_total, self.bytes_done, self.bytes_total
        )
    }
}

/// A user's `progress=` callable, called when the counters moved since its last call.
#[derive(Debug)]
pub struct Callback {
    function: Py<PyAny>,
    tally: Arc<Tally>,
    last: Mutex<Option<Progress>>,
}

impl Callback {
    pub fn new(function: Py<PyAny>, tally: Arc<Tally>) -> Self {
        Callback {
            function,
            tally,
            last: Mutex::new(None),
        }
    }

    /// Call the function if anything changed; its exception stops the transfer.
    pub fn notify(&self, py: Python<'_>) -> PyResult<()> {
        let now = self.tally.snapshot();
        {
            let mut last = self
                .last
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if last.as_ref() == Some(&now) {
                return Ok(());
            }
            *last = Some(now.clone());
        }
        self.function.call1(py, (now,)).map(drop)
    }
}
