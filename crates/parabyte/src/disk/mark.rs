//! What a mark kept in an extended attribute may vouch for: a file as it was when marked.
//! Its size and mtime can be put back by anyone (`touch -r`, an editor that keeps the
//! time); its ctime cannot, and every change to its bytes, times or attributes moves it.
//! Setting the mark moves it too, so a mark cannot name the ctime it leaves behind: it
//! names a span, from the file's ctime before the mark to a deadline [`LANDS_WITHIN`]
//! after it, that its own write lands in and any later change lands past.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use xattr::FileExt as _;

/// How long after the clock is read the mark's own write may land. Longer only widens the
/// moment after marking in which an edit that keeps size and mtime goes unseen.
pub(crate) const LANDS_WITHIN: Duration = Duration::from_millis(10);

/// Set `attr` on `file` to `facts` and the span of ctimes the mark holds for. A mark whose
/// write landed past its deadline (a thread held up) is written once more; one that still
/// did never counts, and what it would have saved is done again next time.
pub(crate) fn set(file: &File, attr: &str, facts: &str) -> io::Result<()> {
    for _ in 0..2 {
        let from = ctime_ns(&file.metadata()?);
        let until = since_epoch_ns(SystemTime::now() + LANDS_WITHIN);
        file.set_xattr(attr, format!("{facts}\nctime {from} {until}").as_bytes())?;
        if ctime_ns(&file.metadata()?) <= until {
            break;
        }
    }
    Ok(())
}

/// The facts a mark holds, when the file (now `metadata`) had no change past the mark's
/// span; a mark written in an older form, without a span, holds nothing.
pub(crate) fn holding<'a>(mark: &'a str, metadata: &Metadata) -> Option<&'a str> {
    let (facts, span) = mark.rsplit_once("\nctime ")?;
    let (from, until) = span.split_once(' ')?;
    let (from, until): (i128, i128) = (from.parse().ok()?, until.parse().ok()?);
    (from..=until)
        .contains(&ctime_ns(metadata))
        .then_some(facts)
}

fn ctime_ns(metadata: &Metadata) -> i128 {
    i128::from(metadata.ctime()) * 1_000_000_000 + i128::from(metadata.ctime_nsec())
}

fn since_epoch_ns(time: SystemTime) -> i128 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// Holds the thread until the kernel stamps any change past every deadline a mark set so
/// far names: what a test waits for before a change that must be seen. The kernel's clock
/// for ctimes is the coarse one, a tick behind the fine one.
#[cfg(test)]
pub(crate) fn past_the_deadline() {
    let coarse_now = || {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid timespec for the call to fill.
        assert_eq!(
            unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut now) },
            0
        );
        i128::from(now.tv_sec) * 1_000_000_000 + i128::from(now.tv_nsec)
    };
    let deadline = since_epoch_ns(SystemTime::now() + LANDS_WITHIN);
    while coarse_now() <= deadline {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_holds_until_the_files_ctime_moves_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"bytes").unwrap();
        let file = File::options().write(true).open(&path).unwrap();
        let read = || String::from_utf8(xattr::get(&path, "user.t").ok()??).ok();
        if set(&file, "user.t", "facts").is_err() {
            return; // no user attributes here: nothing to keep
        }
        let mark = read().unwrap();
        assert_eq!(holding(&mark, &file.metadata().unwrap()), Some("facts"));
        assert_eq!(
            holding("facts", &file.metadata().unwrap()),
            None,
            "old form"
        );
        // The mtime put back as it was, as `touch -r` does: only the ctime tells.
        let mtime = file.metadata().unwrap().modified().unwrap();
        past_the_deadline();
        file.set_modified(mtime).unwrap();
        assert_eq!(file.metadata().unwrap().modified().unwrap(), mtime);
        assert_eq!(holding(&mark, &file.metadata().unwrap()), None);
    }
}
