//! Picking up where an earlier run stopped, with marks kept in extended attributes:
//! - a finished file carries the ETag it was downloaded at (and its size and mtime then),
//!   so running the same command again skips it while it is still that version and its
//!   ctime shows no change since (`disk/mark.rs`): an edit that keeps size and mtime
//!   is seen;
//! - a large object's temporary file carries a journal of the byte ranges already written,
//!   recorded as each write lands, so an interrupted or failed download resumes from the
//!   byte where each part stopped instead of from zero.
//!
//! File systems without user extended attributes simply download everything again.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use xattr::FileExt as _;

use super::mark;
use crate::ranges::{ByteRange, Coverage};
use crate::validator::Validator;

/// On a finished file: `ETAG\nSIZE\nMTIME_NS`, then the ctime span of [`mark`].
const VERSION_ATTR: &str = "user.parabyte.version";
/// On a temporary file: `ETAG\nSIZE\n` then the written ranges as `START-END,...`.
const JOURNAL_ATTR: &str = "user.parabyte.journal";
/// Keep the journal within what every file system stores in one attribute (ext4: one block).
const JOURNAL_LIMIT: usize = 3500;

/// How a file already at the destination is known to hold the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AlreadyThere {
    /// An earlier run's mark names this version and size, and the file is unchanged since
    /// (its ctime included).
    Marked,
    /// No mark of parabyte's, but the size and modification time (to the second) match:
    /// how `aws s3 sync` judges a file another tool downloaded, so a file of the same size
    /// and time with other bytes passes too.
    SameSizeAndTime,
}

/// Whether `path` already holds the object of `size` bytes at `version` (last modified at
/// `modified`), looked up with one `lstat` and, for a regular file of that size, one read
/// of the mark. A marked file is judged by its mark alone (one that no longer holds says
/// nothing is there); an unmarked one by size and time.
pub(crate) fn already_there(
    path: &Path,
    size: u64,
    version: Option<&Validator>,
    modified: Option<SystemTime>,
) -> Option<AlreadyThere> {
    let metadata = fs::symlink_metadata(path).ok()?;
    if !metadata.is_file() || metadata.len() != size {
        return None;
    }
    let Ok(Some(mark)) = xattr::get(path, VERSION_ATTR) else {
        let same_time = metadata.mtime() == unix_seconds(modified?);
        return same_time.then_some(AlreadyThere::SameSizeAndTime);
    };
    let mark = String::from_utf8_lossy(&mark);
    let mut fields = mark::holding(&mark, &metadata)?.split('\n');
    let (Some(marked_etag), Some(marked_size), Some(marked_mtime)) =
        (fields.next(), fields.next(), fields.next())
    else {
        return None;
    };
    let same = marked_size == size.to_string()
        && marked_mtime == mtime_ns(&metadata).to_string()
        && Validator::from_stored(marked_etag).matches(version?);
    same.then_some(AlreadyThere::Marked)
}

/// Whole seconds since the epoch, rounded down as `st_mtime` is.
fn unix_seconds(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => {
            -i64::try_from(before.duration().as_secs_f64().ceil() as u64).unwrap_or(i64::MAX)
        }
    }
}

/// Mark a complete file with the version it holds, last of all (its time set, its name
/// taken): both move its ctime, which must stay within the mark's span.
pub(crate) fn mark_complete(file: &File, etag: &str, size: u64) -> io::Result<()> {
    let mtime = mtime_ns(&file.metadata()?);
    match mark::set(file, VERSION_ATTR, &format!("{etag}\n{size}\n{mtime}")) {
        // Marks are an optimisation: a file system without them just skips nothing.
        Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => Ok(()),
        other => other,
    }
}

fn mtime_ns(metadata: &fs::Metadata) -> i128 {
    i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec())
}

/// The version (size, ETag) an earlier run was writing into the temporary file `temp`, from
/// its journal: a download that knows nothing else yet can resume from it without a probe.
pub(crate) fn interrupted_version(temp: &Path) -> Option<(u64, String)> {
    let stored = xattr::get(temp, JOURNAL_ATTR).ok()??;
    let stored = String::from_utf8(stored).ok()?;
    let mut fields = stored.split('\n');
    let etag = fields.next().filter(|etag| !etag.is_empty())?;
    let size = fields.next()?.parse().ok()?;
    Some((size, etag.to_owned()))
}

/// A temporary file started afresh must not keep an older run's journal: the bytes it
/// vouched for are gone.
pub(crate) fn clear_journal(file: &File) -> io::Result<()> {
    match file.remove_xattr(JOURNAL_ATTR) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENODATA | libc::ENOTSUP)) => Ok(()),
        other => other,
    }
}

/// Bytes recorded in memory before the journal on the file is brought up to date: what a
/// SIGKILL may lose of one object, beyond what was in flight.
const SAVE_EVERY: u64 = 4 * 1024 * 1024;

/// The ranges of one object version written into a temporary file so far: every write is
/// recorded as it lands, and the record on the file is brought up to date at least every
/// [`SAVE_EVERY`] bytes, when a part completes, and when the download stops (`save`).
#[derive(Debug)]
pub(crate) struct Journal {
    header: String,
    written: Coverage,
    /// Bytes recorded since the file's record was last brought up to date.
    unsaved: u64,
}

impl Journal {
    pub(crate) fn new(etag: &str, size: u64) -> Journal {
        Journal {
            header: format!("{etag}\n{size}\n"),
            written: Coverage::default(),
            unsaved: 0,
        }
    }

    /// Record that `range` reached the file; the file's record follows every
    /// [`SAVE_EVERY`] bytes.
    pub(crate) fn landed(&mut self, file: &File, range: ByteRange) -> io::Result<()> {
        self.written.add(range.start, range.end + 1);
        self.unsaved += range.end + 1 - range.start;
        if self.unsaved >= SAVE_EVERY {
            return self.save(file);
        }
        Ok(())
    }

    /// Bring the record on the file up to date with what landed.
    pub(crate) fn save(&mut self, file: &File) -> io::Result<()> {
        if self.unsaved == 0 {
            return Ok(());
        }
        self.unsaved = 0;
        self.store(file)
    }

    /// The journal an earlier run left on `file`, if it was for this same version.
    pub(crate) fn restore(file: &File, etag: &str, size: u64) -> Option<Journal> {
        let mut journal = Journal::new(etag, size);
        let stored = file.get_xattr(JOURNAL_ATTR).ok()??;
        let stored = String::from_utf8(stored).ok()?;
        journal.written = Coverage::parse(stored.strip_prefix(&journal.header)?)?;
        let fits = journal.written.stretches().all(|(_, end)| end <= size);
        (fits && journal.written.bytes() > 0).then_some(journal)
    }

    /// Record that `range` is written, on the file at once, so a later run can trust it.
    pub(crate) fn record(&mut self, file: &File, range: ByteRange) -> io::Result<()> {
        self.written.add(range.start, range.end + 1);
        self.unsaved = 0;
        self.store(file)
    }

    fn store(&self, file: &File) -> io::Result<()> {
        let value = format!("{}{}", self.header, self.written.render());
        if value.len() > JOURNAL_LIMIT {
            // Too scattered to store: what is recorded already stays valid.
            return Ok(());
        }
        match file.set_xattr(JOURNAL_ATTR, value.as_bytes()) {
            Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => Ok(()),
            other => other,
        }
    }

    pub(crate) fn written(&self) -> &Coverage {
        &self.written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: u64) -> ByteRange {
        ByteRange { start, end }
    }

    #[test]
    fn writes_reach_the_files_record_every_few_mebibytes_and_when_saved() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("t")).unwrap();
        let size = 64 * 1024 * 1024;
        let mut journal = Journal::new("\"e1\"", size);
        let recorded =
            |file: &File| Journal::restore(file, "\"e1\"", size).map_or(0, |j| j.written().bytes());
        let mib = 1024 * 1024;
        journal.landed(&file, range(0, 3 * mib - 1)).unwrap();
        assert_eq!(recorded(&file), 0, "below the cadence: in memory only");
        journal.landed(&file, range(8 * mib, 9 * mib - 1)).unwrap();
        assert_eq!(recorded(&file), 4 * mib, "4 MiB landed: on the file");
        journal.landed(&file, range(3 * mib, 3 * mib + 99)).unwrap();
        assert_eq!(recorded(&file), 4 * mib);
        journal.save(&file).unwrap();
        assert_eq!(recorded(&file), 4 * mib + 100, "a stop saves the rest");
    }

    #[test]
    fn a_journal_survives_only_for_the_same_version() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("t")).unwrap();
        let mut journal = Journal::new("\"e1\"", 100);
        journal.record(&file, range(0, 9)).unwrap();
        journal.record(&file, range(50, 59)).unwrap();
        let restored = Journal::restore(&file, "\"e1\"", 100).unwrap();
        assert_eq!(restored.written(), journal.written());
        assert!(Journal::restore(&file, "\"e2\"", 100).is_none());
        assert!(Journal::restore(&file, "\"e1\"", 101).is_none());
    }

    #[test]
    fn an_unmarked_file_matches_by_size_and_time_to_the_second() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello").unwrap();
        let modified = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_250);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        let later = |millis| modified + std::time::Duration::from_millis(millis);
        let same_size_and_time =
            |size, modified| already_there(&path, size, None, Some(modified)).is_some();
        assert!(same_size_and_time(5, modified));
        assert!(same_size_and_time(5, later(700)), "same second");
        assert!(!same_size_and_time(5, later(750)), "next second");
        assert!(!same_size_and_time(6, modified), "other size");
        // A file parabyte marked is judged by its mark alone.
        mark_complete(&File::open(&path).unwrap(), "\"abc\"", 5).unwrap();
        assert!(!same_size_and_time(5, modified));
        assert_eq!(
            unix_seconds(UNIX_EPOCH - std::time::Duration::from_millis(1500)),
            -2
        );
    }

    #[test]
    fn a_marked_file_is_complete_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello").unwrap();
        let file = File::open(&path).unwrap();
        mark_complete(&file, "\"abc\"", 5).unwrap();
        let etag = |tag: &str| Validator::ETag(tag.to_owned());
        let complete = |tag: &str, size| {
            already_there(&path, size, Some(&etag(tag)), None) == Some(AlreadyThere::Marked)
        };
        assert!(complete("abc", 5));
        assert!(!complete("\"abd\"", 5));
        assert!(!complete("\"abc\"", 6));
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&path, b"HELLO").unwrap();
        assert!(!complete("\"abc\"", 5), "edited since");
    }

    #[test]
    fn an_edit_in_place_that_keeps_size_and_mtime_undoes_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello").unwrap();
        let file = File::options().write(true).open(&path).unwrap();
        file.set_modified(UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000))
            .unwrap();
        mark_complete(&file, "\"abc\"", 5).unwrap();
        let etag = Validator::ETag("\"abc\"".to_owned());
        let there = || already_there(&path, 5, Some(&etag), None);
        assert_eq!(there(), Some(AlreadyThere::Marked));
        let mtime = file.metadata().unwrap().modified().unwrap();
        mark::past_the_deadline();
        std::fs::write(&path, b"HELLO").unwrap();
        file.set_modified(mtime).unwrap();
        assert_eq!(there(), None, "the ctime moved");
    }

    #[test]
    fn a_version_mark_of_the_older_form_is_not_believed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello").unwrap();
        let mtime = mtime_ns(&std::fs::metadata(&path).unwrap());
        let older_form = format!("\"abc\"\n5\n{mtime}");
        if xattr::set(&path, VERSION_ATTR, older_form.as_bytes()).is_err() {
            return; // no user attributes here
        }
        let etag = Validator::ETag("\"abc\"".to_owned());
        assert_eq!(already_there(&path, 5, Some(&etag), None), None);
    }
}
