//! What the command shows while it runs: the progress bar and each failure as it happens
//! (only when stderr is a terminal), each delete, and the `--json-lines` stream of objects
//! on stdout.
//! The engine reports; this draws.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use parabyte::{Error, ObjectReport, Preview, Reporter, Status};

/// Bytes, objects, rate and ETA on one line of stderr, as much of it as the terminal's width
/// holds; failures are printed above it as they happen.
pub struct ProgressBarReporter {
    bar: ProgressBar,
    queued: AtomicU64,
    finished: AtomicU64,
    failures_shown: AtomicU64,
}

/// The bar's layouts, widest first, each with the narrowest terminal it fits whatever the
/// numbers (sizes up to "1023.99 GiB", counts up to seven digits). A line wider than the
/// terminal wraps, and the bar's redraws then stack up copies of it.
const LAYOUTS: [(u16, &str); 5] = [
    (
        100,
        "{spinner} [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
    ),
    // The common 80-column terminal keeps the ETA; the rate is in the summary.
    (
        80,
        "{spinner} {wide_bar} {binary_bytes}/{binary_total_bytes} ETA {eta} {msg}",
    ),
    (
        70,
        "{spinner} {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {msg}",
    ),
    (30, "{spinner} {binary_bytes}/{binary_total_bytes} {wide_msg}"),
    (0, "{spinner} {wide_msg}"),
];

impl ProgressBarReporter {
    /// A bar on stderr, laid out for the terminal's width now.
    pub fn new() -> Self {
        let (_, width) = console::Term::stderr().size();
        Self::drawn_on(ProgressDrawTarget::stderr_with_hz(10), width)
    }

    fn drawn_on(target: ProgressDrawTarget, width: u16) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(style_for(width));
        bar.enable_steady_tick(Duration::from_millis(100));
        ProgressBarReporter {
            bar,
            queued: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            failures_shown: AtomicU64::new(0),
        }
    }

    /// Remove the bar before the summary is printed.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Failures printed as they happened.
    pub fn failures_shown(&self) -> u64 {
        self.failures_shown.load(Relaxed)
    }

    fn update_message(&self) {
        let (finished, queued) = (self.finished.load(Relaxed), self.queued.load(Relaxed));
        self.bar.set_message(format!("{finished}/{queued} objects"));
    }
}

/// The widest layout that fits `width` columns.
fn style_for(width: u16) -> ProgressStyle {
    let template = LAYOUTS
        .iter()
        .find(|(narrowest, _)| width >= *narrowest)
        .map_or(LAYOUTS[LAYOUTS.len() - 1].1, |(_, template)| template);
    ProgressStyle::with_template(template)
        .expect("progress templates are valid")
        .progress_chars("=> ")
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
        // The bar shows what this run moves: skipped files leave the total.
        self.bar.dec_length(bytes);
    }

    fn bytes_resumed(&self, bytes: u64) {
        // A resumed object keeps its whole size: what an earlier run kept counts as done,
        // and the rate and ETA start again from what this run moves.
        self.bar.inc(bytes);
        self.bar.reset_eta();
    }

    fn object_finished(&self, _key: &str, _outcome: Result<u64, &Error>) {
        self.finished.fetch_add(1, Relaxed);
        self.update_message();
    }

    fn object_reported(&self, report: &ObjectReport<'_>) {
        // Every failure comes through here once; the summary then only counts them. A
        // source that matched nothing is a warning at the end, not a failed object.
        if let (Status::Failed, Some(error)) = (report.status, report.error) {
            if matches!(error, Error::NothingMatched { .. }) {
                return;
            }
            let line = crate::summary::failure_line(report.source, &error.to_string());
            self.bar
                .suspend(|| crate::status::tell(format_args!("error: {line}")));
            self.failures_shown.fetch_add(1, Relaxed);
        }
    }
}

/// `delete: s3://bucket/key` (or the local file's path) on stderr for each object or file
/// deleted (`rm`, `sync --delete`), `move: SOURCE to DESTINATION` for each source `mv`
/// deleted once its copy arrived, as aws and s5cmd name them, and `skip: PATH: why` for each
/// entry passed over by rule (a link inside a tree); above the bar when one is drawn.
pub struct NamedLines(pub Option<Arc<ProgressBarReporter>>);

impl Reporter for NamedLines {
    fn object_reported(&self, report: &ObjectReport<'_>) {
        let line = match (report.status, report.error, report.destination) {
            (Status::Deleted, _, Some(destination)) => {
                let destination = destination.to_string_lossy();
                format!("move: {}", from_to(report.source, Some(&destination)))
            }
            (Status::Deleted, _, None) => {
                format!("delete: {}", crate::escape::printable(report.source))
            }
            (Status::Skipped, Some(why), _) => {
                let line = crate::summary::failure_line(report.source, &why.to_string());
                format!("skip: {line}")
            }
            _ => return,
        };
        tell_above(self.0.as_deref(), &line);
    }
}

/// When each object copied, uploaded or downloaded gets its line on stderr
/// (`--object-lines`); deletes and moves are named whenever anything is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ObjectLines {
    /// Where no progress bar is drawn: stderr is not a terminal, or --no-progress, or -v.
    #[default]
    Auto,
    /// Above the progress bar too.
    Always,
    /// Never, nor deletes and moves: the summary and errors only.
    Never,
}

/// `upload: ./a to s3://b/a`, `download: s3://b/a to a`, `copy: s3://b/a to s3://b/c` on
/// stderr for each object that arrived (copied whole or resumed), as `aws s3 cp` prints
/// them; above the bar when one is drawn. An object already in place gets no line.
pub struct CopyLines(pub Option<Arc<ProgressBarReporter>>);

impl Reporter for CopyLines {
    fn object_reported(&self, report: &ObjectReport<'_>) {
        if !matches!(report.status, Status::Copied | Status::Resumed) || report.error.is_some() {
            return;
        }
        let destination = report.destination.map(|path| path.to_string_lossy());
        let verb = verb(report.source, destination.as_deref().unwrap_or_default());
        let line = format!("{verb}: {}", from_to(report.source, destination.as_deref()));
        tell_above(self.0.as_deref(), &line);
    }
}

/// What aws calls a copy from `source` to `destination`: a remote source to here is a
/// download, here to S3 an upload, S3 to S3 (or one local file to another) a copy.
pub(crate) fn verb(source: &str, destination: &str) -> &'static str {
    match (source.contains("://"), destination.starts_with("s3://")) {
        (true, false) => "download",
        (false, true) => "upload",
        _ => "copy",
    }
}

/// `SOURCE to DESTINATION`, both escaped (keys come from the store); the source alone when
/// nothing was written (`--discard`).
fn from_to(source: &str, destination: Option<&str>) -> String {
    let source = crate::escape::printable(source);
    match destination {
        Some(destination) => format!("{source} to {}", crate::escape::printable(destination)),
        None => source.into_owned(),
    }
}

/// One line on stderr, above the bar when one is drawn.
fn tell_above(progress: Option<&ProgressBarReporter>, line: &str) {
    match progress {
        Some(progress) => progress
            .bar
            .suspend(|| crate::status::tell(format_args!("{line}"))),
        None => crate::status::tell(format_args!("{line}")),
    }
}

/// `--json-lines`: one JSON object per object on stdout as each finishes. A reader that has
/// gone (`| head -1`) ends the stream quietly; the run goes on.
#[derive(Debug, Default)]
pub struct JsonLines {
    gone: AtomicBool,
}

impl Reporter for JsonLines {
    fn object_reported(&self, report: &ObjectReport<'_>) {
        if self.gone.load(Relaxed) {
            return;
        }
        let Ok(line) = serde_json::to_string(report) else {
            return;
        };
        let mut out = std::io::stdout().lock();
        let written =
            writeln!(out, "{}", crate::escape::json_line(line)).and_then(|()| out.flush());
        if let Err(error) = written {
            self.gone.store(true, Relaxed);
            if error.kind() != std::io::ErrorKind::BrokenPipe {
                crate::status::tell(format_args!(
                    "warning: --json-lines stopped, stdout cannot be written: {error}"
                ));
            }
        }
    }
}

/// Several reporters as one.
pub struct Tee(pub Vec<Arc<dyn Reporter>>);

impl Reporter for Tee {
    fn object_queued(&self, size: Option<u64>) {
        self.0.iter().for_each(|r| r.object_queued(size));
    }

    fn size_discovered(&self, size: u64) {
        self.0.iter().for_each(|r| r.size_discovered(size));
    }

    fn bytes_transferred(&self, bytes: u64) {
        self.0.iter().for_each(|r| r.bytes_transferred(bytes));
    }

    fn bytes_skipped(&self, bytes: u64) {
        self.0.iter().for_each(|r| r.bytes_skipped(bytes));
    }

    fn bytes_resumed(&self, bytes: u64) {
        self.0.iter().for_each(|r| r.bytes_resumed(bytes));
    }

    fn object_finished(&self, key: &str, outcome: Result<u64, &Error>) {
        self.0.iter().for_each(|r| r.object_finished(key, outcome));
    }

    fn object_reported(&self, report: &ObjectReport<'_>) {
        self.0.iter().for_each(|r| r.object_reported(report));
    }

    fn previewed(&self, preview: Preview<'_>) {
        self.0.iter().for_each(|r| r.previewed(preview));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::TermLike;
    use std::sync::Mutex;

    /// A terminal of a given width that keeps the text of each line drawn on it.
    #[derive(Debug)]
    struct Screen {
        width: u16,
        lines: Arc<Mutex<Vec<String>>>,
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            self.width
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, line: &str) -> std::io::Result<()> {
            self.write_str(line)
        }
        fn write_str(&self, text: &str) -> std::io::Result<()> {
            self.lines.lock().unwrap().push(text.to_owned());
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The lines a bar draws at `width` columns with large numbers on it.
    fn drawn_at(width: u16) -> Vec<String> {
        let lines = Arc::new(Mutex::default());
        let screen = Screen {
            width,
            lines: lines.clone(),
        };
        let target = ProgressDrawTarget::term_like(Box::new(screen));
        let bar = ProgressBarReporter::drawn_on(target, width);
        for _ in 0..1_000_000 {
            bar.queued.fetch_add(1, Relaxed);
        }
        bar.object_queued(Some(1000 << 30));
        bar.bytes_transferred(999 << 30);
        bar.object_finished("k", Ok(1));
        bar.bar.tick();
        let drawn = lines.lock().unwrap().clone();
        drawn
    }

    #[test]
    fn a_resumed_object_shows_its_whole_size_and_a_skipped_one_leaves_the_total() {
        let bar = ProgressBarReporter::drawn_on(ProgressDrawTarget::hidden(), 100);
        bar.object_queued(Some(1000));
        bar.object_queued(Some(300));
        // 400 bytes kept by an interrupted run, 100 fetched now; the other file complete.
        bar.bytes_resumed(400);
        bar.bytes_transferred(100);
        bar.bytes_skipped(300);
        assert_eq!((bar.bar.position(), bar.bar.length()), (500, Some(1000)));
    }

    #[test]
    fn the_bar_fits_narrow_terminals() {
        for width in [120, 100, 80, 79, 70, 40, 20] {
            let lines = drawn_at(width);
            let drawn: Vec<_> = lines.iter().filter(|l| !l.trim().is_empty()).collect();
            assert!(!drawn.is_empty(), "nothing drawn at {width} columns");
            for line in drawn {
                let columns = console::measure_text_width(line);
                assert!(
                    columns <= usize::from(width),
                    "{columns} columns at {width}: {line:?}"
                );
            }
        }
        // Where there is room, the bar itself shows, and from 80 columns the ETA.
        for width in [70, 80, 100] {
            assert!(
                drawn_at(width).iter().any(|line| line.contains("=>")),
                "no bar at {width} columns"
            );
        }
        for width in [80, 100, 120] {
            assert!(
                drawn_at(width).iter().any(|line| line.contains("ETA")),
                "no ETA at {width} columns"
            );
        }
    }
}
