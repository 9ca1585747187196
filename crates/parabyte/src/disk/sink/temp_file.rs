//! The temporary file a download writes into: created or claimed from an earlier run,
//! locked, preallocated, then marked and renamed into place; removed if dropped unfinished
//! with nothing a later run could resume.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustix::fs::FlockOperation;
use rustix::io::Errno;
use sha2::{Digest as _, Sha256};

use super::target::FilePath;
use crate::disk::dir::{kind_name, Dir, Renamed};
use crate::disk::paths::RESERVED_PREFIX;
use crate::disk::resume::{self, mark_complete, Journal};
use crate::error::{Error, Result};
use crate::ranges::{ByteRange, Coverage};

/// `.parabyte-<32 hex digits>.tmp`: a fixed-length name in the reserved pattern, so it fits
/// every name limit and no key or file can take it, derived from the final name's bytes so
/// a later run finds the same one to resume.
pub(super) fn temp_name(name: &OsStr) -> OsString {
    let digest = Sha256::digest(name.as_bytes());
    let hex = hex::encode(&digest[..16]);
    OsString::from(format!("{RESERVED_PREFIX}{hex}.tmp"))
}

/// How often to retry claiming a temporary file that another run removed or replaced
/// between our open and our lock.
const CLAIM_ATTEMPTS: usize = 8;

/// A temporary file that becomes `path` on success and disappears on failure. It was
/// created by this run or claimed from an earlier one, and is locked for as long as this
/// value lives: no other run writes into it meanwhile.
#[derive(Debug)]
pub(crate) struct FileSink {
    pub(super) file: Arc<File>,
    /// The directory holding both names; renames and removals happen inside it.
    pub(super) dir: Dir,
    pub(super) temp_name: OsString,
    /// The temporary file's path, for messages.
    pub(super) temp: PathBuf,
    path: FilePath,
    /// The version being written, to mark the finished file with: (size, ETag).
    version: Option<(u64, String)>,
    /// Parts written so far, kept on the file; `None` when nothing may be resumed.
    pub(super) journal: Option<Mutex<Journal>>,
    /// What an earlier run had written when this one began.
    pub(super) restored: Coverage,
    committed: bool,
}

impl FileSink {
    pub(crate) fn create(
        path: &FilePath,
        version: Option<(u64, String)>,
        size: Option<u64>,
    ) -> Result<FileSink> {
        let name = path.name()?;
        let dir = path.open_parent()?;
        // Checked before any byte is fetched, and again right before the rename.
        may_replace(&dir, name, path)?;
        let (mut sink, fresh) = FileSink::claim_in(dir, path, version.clone())?;
        if let Some((size, etag)) = &version {
            let left = if fresh {
                None
            } else {
                sink.resumable(*size, etag)
            };
            if let Some(journal) = left {
                sink.restored = journal.written().clone();
                sink.journal = Some(Mutex::new(journal));
                return Ok(sink);
            }
            sink.journal = Some(Mutex::new(Journal::new(etag, *size)));
        }
        if !fresh {
            sink.reset()?;
        }
        if let Some(size) = size {
            // Reserving the space up front turns a full disk into an error before any
            // byte is fetched, and keeps the file unfragmented for parallel writers.
            preallocate(&sink.file, size)
                .map_err(|e| Error::io("cannot reserve space for", &sink.path.full, e))?;
        }
        Ok(sink)
    }

    /// The temporary file for `path` in its directory `dir`, created or claimed (see
    /// `claim`); true when this run created it, so it is empty and carries no journal.
    fn claim_in(
        dir: Dir,
        path: &FilePath,
        version: Option<(u64, String)>,
    ) -> Result<(FileSink, bool)> {
        let temp_name = temp_name(path.name()?);
        FileSink::claim_named(dir, path, version, temp_name)
    }

    /// `claim_in` for the temporary file called `temp_name`.
    pub(super) fn claim_named(
        dir: Dir,
        path: &FilePath,
        version: Option<(u64, String)>,
        temp_name: OsString,
    ) -> Result<(FileSink, bool)> {
        let temp = dir.path().join(&temp_name);
        let (file, fresh) = claim(&dir, &temp_name, path)?;
        let sink = FileSink {
            file: Arc::new(file),
            dir,
            temp_name,
            temp,
            path: path.clone(),
            version,
            journal: None,
            restored: Coverage::default(),
            committed: false,
        };
        Ok((sink, fresh))
    }

    /// Whatever an earlier run left in a claimed file is not this version: start from nothing.
    pub(super) fn reset(&self) -> Result<()> {
        self.file
            .set_len(0)
            .map_err(|e| Error::io("cannot reset", &self.temp, e))?;
        resume::clear_journal(&self.file).map_err(|e| Error::io("cannot reset", &self.temp, e))
    }

    /// `length` bytes from `offset` reached the file: the journal, when there is one,
    /// records them, so an interrupted run resumes after them.
    pub(super) fn landed(&self, offset: u64, length: u64) -> Result<()> {
        let (Some(journal), Some(end)) = (&self.journal, (offset + length).checked_sub(1)) else {
            return Ok(());
        };
        let range = ByteRange { start: offset, end };
        journal
            .lock()
            .expect("journal poisoned")
            .landed(&self.file, range)
            .map_err(|e| Error::io("cannot record progress in", &self.temp, e))
    }

    /// Remove the temporary file now, its bytes having gone elsewhere (a piece adopted into
    /// its object's file): nothing is kept for a later run.
    pub(super) fn remove(mut self) -> io::Result<()> {
        self.committed = true;
        self.dir.remove(&self.temp_name)
    }

    /// The temporary file, for writers that bring their own system calls (local copies).
    pub(crate) fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// The parts an earlier run left in the claimed file for this same version, if any.
    pub(super) fn resumable(&self, size: u64, etag: &str) -> Option<Journal> {
        if self.file.metadata().ok()?.len() != size {
            return None;
        }
        Journal::restore(&self.file, etag, size)
    }

    /// Give the file its final name, first setting its modification time to `modified`
    /// (then marked with it, so a later run sees it unchanged).
    pub(crate) fn rename_into_place(self, modified: Option<SystemTime>) -> Result<()> {
        self.move_into_place(modified, true)
    }

    /// `rename_into_place`; with `replace` false only where nothing is under the final
    /// name, even when another writer puts something there meanwhile ([`Error::Exists`]).
    /// The version mark comes last: the time and the rename move the file's ctime, which
    /// must lie within the mark's span for the mark to hold.
    pub(super) fn move_into_place(
        mut self,
        modified: Option<SystemTime>,
        replace: bool,
    ) -> Result<()> {
        // Best effort: the time tells other tools the file is current, but a file system
        // that refuses it still gets the right bytes (and the mark records the time it has).
        if let Some(modified) = modified {
            let _ = self.file.set_modified(modified);
        }
        self.take_name(replace)?;
        if let Some((size, etag)) = &self.version {
            mark_complete(&self.file, etag, *size)
                .map_err(|e| Error::io("cannot mark", &self.path.full, e))?;
        }
        Ok(())
    }

    fn take_name(&mut self, replace: bool) -> Result<()> {
        let name = self.path.name()?;
        let cannot_move = |e| Error::io("cannot move into place", &self.path.full, e);
        // Nothing is under the final name in the common case, and a rename that replaces
        // nothing needs no look first: only when something is there is it looked at.
        match self.dir.rename_unless_taken(&self.temp_name, name) {
            Ok(Renamed::Done) => {
                self.committed = true;
                return Ok(());
            }
            Ok(Renamed::Taken | Renamed::Unchecked) => {}
            Err(e) => return Err(cannot_move(e)),
        }
        // Checked right before the rename: only a regular file (or nothing) is replaced.
        let taken = may_replace(&self.dir, name, &self.path)?;
        if taken && !replace {
            return Err(Error::Exists {
                what: self.path.full.display().to_string(),
            });
        }
        self.dir
            .rename_over(&self.temp_name, name)
            .map_err(cannot_move)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        // Stopped (a failure, Ctrl-C, SIGTERM): what landed since the last save is recorded
        // now, so the next run fetches only what is missing.
        let kept = self.journal.as_ref().is_some_and(|journal| {
            journal.lock().is_ok_and(|mut journal| {
                journal.written().bytes() > 0 && journal.save(&self.file).is_ok()
            })
        });
        if kept {
            KEPT_FOR_RESUME.fetch_add(1, Ordering::Relaxed);
        } else {
            // Still locked by us, so still ours to remove. Best effort.
            let _ = self.dir.remove(&self.temp_name);
        }
    }
}

/// Unfinished downloads whose temporary file was kept with a journal to resume from.
static KEPT_FOR_RESUME: AtomicU64 = AtomicU64::new(0);

/// How many unfinished downloads of this process kept what they had fetched, hidden under a
/// temporary name, for the same command to resume: what an interrupted run can promise.
pub fn kept_for_resume() -> u64 {
    KEPT_FOR_RESUME.load(Ordering::Relaxed)
}

/// The final name may only be replaced when nothing or a regular file is there: never a
/// link, a directory, a device or a FIFO. True when a regular file is there.
pub(super) fn may_replace(dir: &Dir, name: &OsStr, path: &Path) -> Result<bool> {
    let stat = dir
        .stat(name)
        .map_err(|e| Error::io("cannot check", path, e))?;
    match stat.as_ref().and_then(kind_name) {
        None => Ok(stat.is_some()),
        Some(kind) => Err(Error::io(
            "will not replace",
            path,
            io::Error::other(format!(
                "it is {kind}; parabyte only replaces regular files and never writes through links"
            )),
        )),
    }
}

/// The gate every file parabyte writes passes: create the temporary file `temp`, or claim
/// the one an earlier run left: never through a link, only a regular file with no other
/// name, locked so no other run writes into it, and still the file
/// under that name once locked (else whoever held it removed it meanwhile: try again).
/// True with the file when this call created it.
fn claim(dir: &Dir, temp: &OsStr, path: &Path) -> Result<(File, bool)> {
    for _ in 0..CLAIM_ATTEMPTS {
        let (file, fresh) = match dir.create_new(temp) {
            Ok(file) => (file, true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match dir.open_existing(temp) {
                Ok(file) => (file, false),
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                    return Err(not_ours(path, temp, "a symbolic link"))
                }
                Err(e) => return Err(Error::io("cannot open the temporary file of", path, e)),
            },
            Err(e) => return Err(Error::io("cannot create", path, e)),
        };
        let opened = rustix::fs::fstat(&file)
            .map_err(|e| Error::io("cannot check the temporary file of", path, e.into()))?;
        if let Some(kind) = kind_name(&opened) {
            return Err(not_ours(path, temp, kind));
        }
        // A second name for the file (a hard link, perhaps to a file outside the
        // destination) would see every byte written here: only a file with one is written.
        if opened.st_nlink != 1 {
            return Err(not_ours(
                path,
                temp,
                "a file with another name (a hard link)",
            ));
        }
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            // File systems without locks (some FUSE ones): exclusive creation still keeps
            // two new downloads apart; only claiming a leftover goes unguarded.
            Ok(()) | Err(Errno::NOLCK | Errno::OPNOTSUPP | Errno::NOSYS) => {}
            Err(Errno::WOULDBLOCK) => {
                return Err(Error::io(
                    "another parabyte process is writing",
                    path,
                    io::Error::other(
                        "it holds the lock on the temporary file; let it finish, or stop it and run again",
                    ),
                ))
            }
            Err(e) => return Err(Error::io("cannot lock the temporary file of", path, e.into())),
        }
        let now = dir
            .stat(temp)
            .map_err(|e| Error::io("cannot check the temporary file of", path, e))?;
        if now.is_some_and(|now| now.st_ino == opened.st_ino && now.st_dev == opened.st_dev) {
            return Ok((file, fresh));
        }
    }
    Err(Error::io(
        "another parabyte process is writing",
        path,
        io::Error::other("its temporary file keeps being replaced; let it finish and run again"),
    ))
}

fn not_ours(path: &Path, temp: &OsStr, kind: &str) -> Error {
    Error::io(
        "will not write",
        path,
        io::Error::other(format!(
            "{kind} sits at its temporary name '{}', which parabyte did not create; remove it and run again",
            temp.to_string_lossy()
        )),
    )
}

/// Write a whole small object: claim the temporary file, write, mark, rename. Its bytes are
/// all in memory, so the final name is checked once, right before the rename.
pub(super) fn write_small_file(
    path: &FilePath,
    data: &[u8],
    etag: Option<&str>,
    modified: Option<SystemTime>,
) -> Result<()> {
    let version = etag.map(|etag| (data.len() as u64, etag.to_owned()));
    let (sink, fresh) = FileSink::claim_in(path.open_parent()?, path, version)?;
    if !fresh {
        sink.reset()?;
    }
    sink.file
        .write_all_at(data, 0)
        .map_err(|e| Error::io("cannot write", &path.full, e))?;
    sink.rename_into_place(modified)
}

/// The version an interrupted download of `path` left a resumable temporary file for.
pub(crate) fn interrupted_version(path: &Path) -> Option<(u64, String)> {
    let temp = path.with_file_name(temp_name(path.file_name()?));
    resume::interrupted_version(&temp)
}

fn preallocate(file: &File, size: u64) -> io::Result<()> {
    if size == 0 {
        return Ok(());
    }
    let length =
        libc::off_t::try_from(size).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: fallocate only reads its integer arguments; the descriptor is owned by `file`.
    let status = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, length) };
    if status == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        // File systems without fallocate still get the right length.
        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => file.set_len(size),
        _ => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use bytes::Bytes;

    use crate::disk::paths::is_reserved;
    use crate::disk::sink::{Sink, Target, SMALL_OBJECT};
    use crate::ranges::ByteRange;
    #[tokio::test]
    async fn a_file_sink_appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/deeper/object.bin");
        let target = Target::File(FilePath::below(
            dir.path(),
            Path::new("nested/deeper/object.bin"),
        ));
        let sink = Sink::open(&target, Some(SMALL_OBJECT + 4), None)
            .await
            .unwrap();
        sink.write_at(Bytes::from_static(b"tail"), SMALL_OBJECT)
            .await
            .unwrap();
        sink.write_at(Bytes::from(vec![7u8; SMALL_OBJECT as usize]), 0)
            .await
            .unwrap();
        assert!(!path.exists());
        let temp = path.with_file_name(temp_name(OsStr::new("object.bin")));
        assert!(temp.exists());
        sink.commit(None).await.unwrap();
        let written = fs::read(&path).unwrap();
        assert_eq!(written.len() as u64, SMALL_OBJECT + 4);
        assert_eq!(&written[SMALL_OBJECT as usize..], b"tail");
        assert!(!temp.exists());
    }

    #[tokio::test]
    async fn a_dropped_sink_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("object.bin");
        let sink = Sink::open(
            &Target::File(FilePath::at(&path)),
            Some(10 * SMALL_OBJECT),
            None,
        )
        .await
        .unwrap();
        sink.write_at(Bytes::from_static(b"partial"), 0)
            .await
            .unwrap();
        drop(sink);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn small_objects_are_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.txt");
        let target = Target::File(FilePath::below(dir.path(), Path::new("a/b.txt")));
        let sink = Sink::open(&target, Some(5), None).await.unwrap();
        sink.write_at(Bytes::from_static(b"hello"), 0)
            .await
            .unwrap();
        sink.commit(None).await.unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello");
        assert_eq!(fs::read_dir(dir.path().join("a")).unwrap().count(), 1);
    }

    #[tokio::test]
    async fn a_small_object_empties_the_temporary_file_an_earlier_run_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("object.bin");
        // A longer version's parts, left by an interrupted run.
        let version = Some((SMALL_OBJECT * 2, "\"old\"".to_owned()));
        let left = Sink::File(
            FileSink::create(&FilePath::at(&path), version, Some(SMALL_OBJECT * 2)).unwrap(),
        );
        left.write_at(Bytes::from_static(b"old bytes"), 0)
            .await
            .unwrap();
        left.part_done(ByteRange { start: 0, end: 8 }).unwrap();
        drop(left);
        let temp = path.with_file_name(temp_name(OsStr::new("object.bin")));
        assert!(
            resume::interrupted_version(&temp).is_some(),
            "left to resume"
        );

        let sink = Sink::open(&Target::File(FilePath::at(&path)), Some(3), Some("\"new\""))
            .await
            .unwrap();
        sink.write_at(Bytes::from_static(b"new"), 0).await.unwrap();
        sink.commit(None).await.unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert!(resume::interrupted_version(&path).is_none(), "no journal");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[tokio::test]
    async fn a_small_object_is_never_written_through_a_link_planted_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::write(&outside, b"keep").unwrap();
        let path = dir.path().join("x");
        let sink = Sink::open(&Target::File(FilePath::at(&path)), Some(3), None)
            .await
            .unwrap();
        sink.write_at(Bytes::from_static(b"new"), 0).await.unwrap();
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        let error = sink.commit(None).await.unwrap_err().to_string();
        assert!(error.contains("symbolic link"), "{error}");
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
        assert!(fs_is_link(&path));
        // Only the link and the file it points to: no temporary file left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn temp_names_are_reserved_fixed_length_and_distinct() {
        let long_a = [b'a'; 250];
        let mut long_b = long_a;
        long_b[245] = b'b';
        let names = [
            OsStr::from_bytes(&long_a),
            OsStr::from_bytes(&long_b),
            OsStr::from_bytes(b"n\xff"),
            OsStr::from_bytes(b"n\xfe"),
            OsStr::new("x"),
            OsStr::new(".x.parabyte-part"),
        ];
        let temps: std::collections::HashSet<_> = names.iter().map(|n| temp_name(n)).collect();
        assert_eq!(
            temps.len(),
            names.len(),
            "one temporary name per final name"
        );
        for temp in &temps {
            assert!(is_reserved(temp), "{temp:?}");
            assert_eq!(temp.len(), ".parabyte-.tmp".len() + 32);
        }
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = FilePath::at(&dir.path().join("big"));
        let version = Some((10, "\"e\"".to_owned()));
        let first = FileSink::create(&path, version.clone(), Some(10)).unwrap();
        let error = FileSink::create(&path, version.clone(), Some(10))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("another parabyte process is writing"),
            "{error}"
        );
        drop(first);
        assert!(
            FileSink::create(&path, version, Some(10)).is_ok(),
            "free again"
        );
    }

    #[test]
    fn the_final_rename_never_replaces_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        let final_path = dir.path().join("x");
        let sink = FileSink::create(&FilePath::at(&final_path), None, Some(4)).unwrap();
        // Planted after the sink was opened: found at the rename.
        std::os::unix::fs::symlink(&outside, &final_path).unwrap();
        let error = sink.rename_into_place(None).unwrap_err().to_string();
        assert!(error.contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert!(fs_is_link(&final_path));
    }

    #[test]
    fn a_hard_link_at_the_temporary_name_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        let final_path = dir.path().join("dest/x");
        std::fs::create_dir(dir.path().join("dest")).unwrap();
        let temp = final_path.with_file_name(temp_name(OsStr::new("x")));
        std::fs::hard_link(&outside, &temp).unwrap();
        for version in [None, Some((4, "\"e\"".to_owned()))] {
            let error = FileSink::create(&FilePath::at(&final_path), version, Some(4))
                .unwrap_err()
                .to_string();
            assert!(error.contains("hard link"), "{error}");
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert!(!final_path.exists());
    }

    fn fs_is_link(path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }
}
