//! The progress bar: the engine reports, this draws (only when stderr is a terminal).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use parabyte::Reporter;

/// Bytes, objects, rate and ETA on one line of stderr.
pub struct ProgressBarReporter {
    bar: ProgressBar,
    queued: AtomicU64,
    finished: AtomicU64,
}

impl ProgressBarReporter {
    pub fn new() -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
            )
            .expect("progress template is valid")
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        ProgressBarReporter {
            bar,
            queued: AtomicU64::new(0),
            finished: AtomicU64::new(0),
        }
    }

    /// Remove the bar before the summary is printed.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn update_message(&self) {
        let (finished, queued) = (self.finished.load(Relaxed), self.queued.load(Relaxed));
        self.bar.set_message(format!("{finished}/{queued} objects"));
    }
}

impl Reporter for ProgressBarReporter {
    fn object_queued(&self, size: Option<u64>) {
        self.queued.fetch_add(1, Relaxed);
        if let Some(size) = size {
            self.bar.inc_length(size);
        }
        self.update_message();
    }

    fn size_discovered(&self, size: u64) {
        self.bar.inc_length(size);
    }

    fn bytes_transferred(&self, bytes: u64) {
        self.bar.inc(bytes);
    }

    fn bytes_skipped(&self, bytes: u64) {
        // The bar shows what this run moves: skipped bytes leave the total.
        self.bar.dec_length(bytes);
    }

    fn object_finished(&self, key: &str, outcome: Result<u64, &parabyte::Error>) {
        self.finished.fetch_add(1, Relaxed);
        if let Err(error) = outcome {
            self.bar
                .suspend(|| crate::tell(format_args!("error: {key}: {error}")));
        }
        self.update_message();
    }
}
