//! Where an object's bytes land. Parts are written at their offsets into a temporary file
//! in the destination's directory, which takes the final name only once complete. A sink
//! dropped before `commit` removes its temporary file, unless it holds finished parts of a
//! known version that a later run can resume from (see `resume.rs`); then it stays, hidden.
//! A destination that is a character device, a FIFO or stdout is never replaced: it gets
//! the bytes in order, each part waiting for the one before it.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;
use rustix::fs::{FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest as _, Sha256};
use tokio::sync::watch;

use crate::checksum::OrderedMd5;
use crate::disk::copy::copy_range;
use crate::disk::dir::{kind_name, Dir};
use crate::disk::paths::{is_reserved, reserved_reason, RESERVED_PREFIX};
use crate::disk::resume::{self, mark_complete, Journal};
use crate::error::{Error, Result};
use crate::ranges::{ByteRange, Coverage};

/// Reads written bytes back: fills the buffer from the offset, exactly.
pub(crate) type ReadAt<'a> = dyn Fn(u64, &mut [u8]) -> io::Result<()> + 'a;
/// Objects up to this size are gathered in memory and written with one system call
/// sequence (create, write, rename); larger ones stream into a preallocated file.
pub(crate) const SMALL_OBJECT: u64 = 256 * 1024;

/// Where one object's bytes are meant to end up.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// Count them, keep none (benchmark mode).
    Discard,
    /// A regular file at this path.
    File(FilePath),
    /// A character device, a FIFO or stdout, written in order and never replaced.
    Stream(StreamTarget),
    /// One buffer in memory, shared with whoever asked for the bytes.
    Memory(Arc<Mutex<Vec<u8>>>),
}

impl Target {
    /// The file this target names, if it is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Target::File(path) => Some(path),
            Target::Discard | Target::Stream(_) | Target::Memory(_) => None,
        }
    }
}

/// What a download writes into.
#[derive(Debug)]
pub(crate) enum Sink {
    Discard,
    /// Gather a small object, write it at commit.
    Buffered {
        data: Mutex<Vec<u8>>,
        path: FilePath,
        etag: Option<String>,
    },
    /// Positioned writes into a temporary file.
    File(FileSink),
    /// Writes in order into a device, a FIFO or stdout.
    Ordered(OrderedSink),
    /// Positioned writes into the caller's buffer.
    Memory(Arc<Mutex<Vec<u8>>>),
}

impl Sink {
    /// Prepare to receive `size` bytes (when known) of the version `etag` for `target`. A
    /// large file picks up the parts an earlier run left for the same version.
    pub(crate) async fn open(
        target: &Target,
        size: Option<u64>,
        etag: Option<&str>,
    ) -> Result<Sink> {
        let path = match target {
            Target::Discard => return Ok(Sink::Discard),
            Target::Memory(buffer) => {
                // A second attempt (the object changed) starts from an empty buffer.
                let mut data = buffer.lock().expect("memory sink poisoned");
                data.clear();
                data.reserve_exact(size.unwrap_or(0) as usize);
                drop(data);
                return Ok(Sink::Memory(buffer.clone()));
            }
            Target::Stream(stream) => {
                let stream = stream.clone();
                return blocking(move || OrderedSink::open(&stream))
                    .await
                    .map(Sink::Ordered);
            }
            Target::File(path) => path,
        };
        match size {
            Some(size) if size <= SMALL_OBJECT => Ok(Sink::Buffered {
                data: Mutex::new(Vec::with_capacity(size as usize)),
                path: path.to_owned(),
                etag: etag.map(str::to_owned),
            }),
            _ => {
                let path = path.to_owned();
                let version = size.zip(etag.map(str::to_owned));
                blocking(move || FileSink::create(&path, version, size))
                    .await
                    .map(Sink::File)
            }
        }
    }

    /// The piece file from byte `start` of the object bound for `path` (see
    /// `FileSink::create_piece`).
    pub(crate) async fn open_piece(
        path: &FilePath,
        start: u64,
        size: u64,
        etag: &str,
    ) -> Result<Sink> {
        let path = path.clone();
        let etag = etag.to_owned();
        blocking(move || FileSink::create_piece(&path, start, size, &etag))
            .await
            .map(Sink::File)
    }

    /// Write `data` at byte `offset` of the object.
    pub(crate) async fn write_at(&self, data: Bytes, offset: u64) -> Result<()> {
        match self {
            Sink::Discard => Ok(()),
            Sink::Buffered { data: buffer, .. } => write_into(buffer, &data, offset),
            Sink::Memory(buffer) => write_into(buffer, &data, offset),
            Sink::Ordered(sink) => sink.write(data, offset).await,
            // On this task, not the blocking pool: a positioned write of at most a write
            // buffer into the page cache takes microseconds, and handing each one to a
            // pool thread and back cost 8 futex calls per 128 KiB, a quarter of a download's
            // CPU (docs/PROFILE.md, stop 14).
            Sink::File(sink) => sink
                .file
                .write_all_at(&data, offset)
                .map_err(|e| Error::io("cannot write", &sink.temp, e)),
        }
    }

    /// The bytes from `offset` on are the next a stream can take: everything else written
    /// to it waits for them.
    pub(crate) fn is_next_in_line(&self, offset: u64) -> bool {
        matches!(self, Sink::Ordered(sink) if sink.turn.borrow().next == offset)
    }

    /// A part of the object failed for good: writes waiting for their turn behind it in an
    /// ordered sink stop instead of waiting for bytes that will not come.
    pub(crate) fn part_failed(&self) {
        if let Sink::Ordered(sink) = self {
            sink.turn.send_modify(|turn| turn.stopped = true);
        }
    }

    /// A stream cannot be read back, but its bytes go out in order: hand each write to
    /// `md5` as it goes out, so a content check can hash it then. False for other sinks,
    /// whose bytes the check reads back itself.
    pub(crate) fn hash_in_write_order(&self, md5: &Arc<OrderedMd5>) -> bool {
        match self {
            Sink::Ordered(sink) => sink.in_order.set(md5.clone()).is_ok(),
            _ => false,
        }
    }

    /// What an earlier run already wrote of this version.
    pub(crate) fn restored(&self) -> Coverage {
        match self {
            Sink::File(sink) => sink.restored.clone(),
            _ => Coverage::default(),
        }
    }

    /// `range` is written in full: a later run need not fetch it again.
    pub(crate) fn part_done(&self, range: ByteRange) -> Result<()> {
        let Sink::File(sink) = self else {
            return Ok(());
        };
        let Some(journal) = &sink.journal else {
            return Ok(());
        };
        let mut journal = journal.lock().expect("journal poisoned");
        journal
            .record(&sink.file, range)
            .map_err(|e| Error::io("cannot record progress in", &sink.temp, e))
    }

    /// The bytes written cannot be trusted by a later run (another version, bad content,
    /// no space): remove them when the sink goes.
    pub(crate) fn abandon(&mut self) {
        if let Sink::File(sink) = self {
            sink.journal = None;
        }
    }

    /// Run `work` with a reader of the bytes written so far (`read(offset, buffer)` fills
    /// `buffer` exactly), off the async threads when they are in a file. `None` when the
    /// bytes are not kept (discarding); a stream's reader fails, as its bytes are gone.
    pub(crate) async fn read_back<T: Send + 'static>(
        &self,
        work: impl FnOnce(&ReadAt<'_>) -> io::Result<T> + Send + 'static,
    ) -> Option<Result<T>> {
        match self {
            Sink::Discard => None,
            Sink::Buffered { data, .. } => Some(read_buffer(data, work)),
            Sink::Memory(data) => Some(read_buffer(data, work)),
            Sink::Ordered(sink) => {
                let gone = |_: u64, _: &mut [u8]| {
                    Err(io::Error::other(
                        "bytes written to a stream cannot be read back",
                    ))
                };
                Some(work(&gone).map_err(|e| Error::io("cannot read back", &sink.name, e)))
            }
            Sink::File(sink) => {
                let file = sink.file.clone();
                let path = sink.temp.clone();
                Some(
                    blocking(move || {
                        work(&|at, buffer| file.read_exact_at(buffer, at))
                            .map_err(|e| Error::io("cannot read back", &path, e))
                    })
                    .await,
                )
            }
        }
    }

    /// Give the object its final name, with `modified` (the object's Last-Modified) as its
    /// modification time; after this the bytes are the user's.
    pub(crate) async fn commit(self, modified: Option<SystemTime>) -> Result<()> {
        match self {
            Sink::Discard | Sink::Memory(_) => Ok(()),
            Sink::Ordered(sink) => blocking(move || sink.flush()).await,
            // On this task: for a file this small the hand-off to the blocking pool and back
            // cost more CPU than the dozen system calls that write it (docs/PROFILE.md, stop 13).
            Sink::Buffered { data, path, etag } => {
                let data = data.into_inner().expect("sink buffer poisoned");
                write_small_file(&path, &data, etag.as_deref(), modified)
            }
            Sink::File(sink) => blocking(move || sink.rename_into_place(modified)).await,
        }
    }
}

/// Where a stream destination's bytes go.
#[derive(Debug, Clone)]
pub(crate) struct StreamTarget {
    /// `None` for stdout.
    path: Option<PathBuf>,
    /// The user named this path and may have chosen a link to a device (`/dev/stdout`).
    follow: bool,
    /// Bytes went out already: they cannot be taken back if the object must start again.
    started: Arc<AtomicBool>,
}

impl StreamTarget {
    pub(crate) fn stdout() -> StreamTarget {
        StreamTarget {
            path: None,
            follow: false,
            started: Arc::default(),
        }
    }

    /// `path` when it is a character device or a FIFO; through a link only when `follow`.
    pub(crate) fn device(path: &Path, follow: bool) -> Option<StreamTarget> {
        let stat = if follow {
            rustix::fs::stat(path)
        } else {
            rustix::fs::lstat(path)
        }
        .ok()?;
        let streams = matches!(
            FileType::from_raw_mode(stat.st_mode),
            FileType::CharacterDevice | FileType::Fifo
        );
        streams.then(|| StreamTarget {
            path: Some(path.to_owned()),
            follow,
            started: Arc::default(),
        })
    }

    pub(crate) fn name(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(|| PathBuf::from("-"))
    }

    /// Open for writing: no O_CREAT, no O_TRUNC, so the device or FIFO is written, never
    /// replaced; and it must still be one once open.
    pub(crate) fn open(&self) -> Result<File> {
        let name = self.name();
        let fd = match &self.path {
            None => rustix::io::dup(io::stdout()),
            Some(path) => {
                let follow = if self.follow {
                    OFlags::empty()
                } else {
                    OFlags::NOFOLLOW
                };
                rustix::fs::open(
                    path,
                    OFlags::WRONLY | OFlags::CLOEXEC | follow,
                    Mode::empty(),
                )
            }
        }
        .map_err(|e| Error::io("cannot open", &name, e.into()))?;
        let out = File::from(fd);
        if self.path.is_some() {
            let stat =
                rustix::fs::fstat(&out).map_err(|e| Error::io("cannot check", &name, e.into()))?;
            let kind = FileType::from_raw_mode(stat.st_mode);
            if !matches!(kind, FileType::CharacterDevice | FileType::Fifo) {
                return Err(Error::io(
                    "will not write",
                    name,
                    io::Error::other("it is no longer a character device or FIFO"),
                ));
            }
        }
        Ok(out)
    }
}

/// Writes in object order: a write ahead of the next expected offset waits its turn, so
/// nothing is buffered beyond the writers' own buffers.
#[derive(Debug)]
pub(crate) struct OrderedSink {
    out: Arc<File>,
    name: PathBuf,
    turn: watch::Sender<Turn>,
    /// The content check's MD5, fed each write in order (set before the first write).
    in_order: OnceLock<Arc<OrderedMd5>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Turn {
    /// The offset the next write must start at.
    next: u64,
    /// A part failed for good: the bytes after it will never get their turn.
    stopped: bool,
}

impl OrderedSink {
    fn open(target: &StreamTarget) -> Result<OrderedSink> {
        let name = target.name();
        if target.started.load(Ordering::Acquire) {
            return Err(Error::io(
                "cannot start again into",
                name,
                io::Error::other(
                    "the object changed after its first bytes were written, which cannot be taken back; run the command again",
                ),
            ));
        }
        let out = target.open()?;
        target.started.store(true, Ordering::Release);
        Ok(OrderedSink::over(out, name))
    }

    fn over(out: File, name: PathBuf) -> OrderedSink {
        OrderedSink {
            out: Arc::new(out),
            name,
            turn: watch::Sender::new(Turn::default()),
            in_order: OnceLock::new(),
        }
    }

    async fn write(&self, data: Bytes, offset: u64) -> Result<()> {
        let mut turn = self.turn.subscribe();
        let now = *turn
            .wait_for(|turn| turn.stopped || turn.next >= offset)
            .await
            .map_err(|e| Error::io("cannot write", &self.name, io::Error::other(e)))?;
        if now.stopped {
            return Err(Error::io(
                "stopped writing",
                &self.name,
                io::Error::other("an earlier part of the object failed"),
            ));
        }
        if now.next != offset {
            return Err(Error::io(
                "cannot write",
                &self.name,
                io::Error::other(format!(
                    "bytes at {offset} arrived after byte {} was written",
                    now.next
                )),
            ));
        }
        let length = data.len() as u64;
        let (out, md5, name) = (
            self.out.clone(),
            self.in_order.get().cloned(),
            self.name.clone(),
        );
        let written = blocking(move || {
            (&*out)
                .write_all(&data)
                .map_err(|e| Error::io("cannot write", &name, e))?;
            if let Some(md5) = md5 {
                // Our turn: these bytes directly follow everything hashed so far.
                md5.written(offset, length);
                md5.hash_in_order(offset, &data);
            }
            Ok(())
        })
        .await;
        self.turn.send_modify(|turn| match written {
            Ok(()) => turn.next += length,
            Err(_) => turn.stopped = true,
        });
        written
    }

    fn flush(self) -> Result<()> {
        (&*self.out)
            .flush()
            .map_err(|e| Error::io("cannot write", &self.name, e))
    }
}

fn read_buffer<T>(
    buffer: &Mutex<Vec<u8>>,
    work: impl FnOnce(&ReadAt<'_>) -> io::Result<T>,
) -> Result<T> {
    let data = buffer.lock().expect("sink buffer poisoned");
    let read = |at: u64, into: &mut [u8]| {
        let bytes = usize::try_from(at)
            .ok()
            .and_then(|start| data.get(start..start.checked_add(into.len())?))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        into.copy_from_slice(bytes);
        Ok(())
    };
    work(&read).map_err(|e| Error::io("cannot read back", "the memory buffer", e))
}

fn write_into(buffer: &Mutex<Vec<u8>>, data: &[u8], offset: u64) -> Result<()> {
    let mut buffer = buffer.lock().expect("sink buffer poisoned");
    let end = offset as usize + data.len();
    if buffer.len() < end {
        buffer.resize(end, 0);
    }
    buffer[offset as usize..end].copy_from_slice(data);
    Ok(())
}

/// A file destination: the directory the user named, taken as given, and the path below
/// it, whose directories parabyte creates and enters without following links.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FilePath {
    root: PathBuf,
    below: PathBuf,
    full: PathBuf,
}

impl FilePath {
    /// `relative` (plain names only) under the destination directory `root`.
    pub(crate) fn below(root: &Path, relative: &Path) -> FilePath {
        FilePath {
            root: root.to_owned(),
            below: relative.to_owned(),
            full: root.join(relative),
        }
    }

    /// A path the user gave: its directory is theirs, only the file name is parabyte's.
    pub(crate) fn at(path: &Path) -> FilePath {
        let root = path.parent().unwrap_or(Path::new(""));
        let name = path.file_name().map(PathBuf::from).unwrap_or_default();
        FilePath {
            root: root.to_owned(),
            below: name,
            full: path.to_owned(),
        }
    }

    /// The final name, or why there is none (a path ending in `..` or `/`).
    fn name(&self) -> Result<&OsStr> {
        let name = self.below.file_name().ok_or_else(|| {
            Error::io(
                "cannot write",
                &self.full,
                io::Error::other("the destination has no file name"),
            )
        })?;
        if is_reserved(name) {
            return Err(Error::io(
                "will not write",
                &self.full,
                io::Error::other(reserved_reason(name)),
            ));
        }
        Ok(name)
    }

    /// Open (creating as needed) the directory the file goes into.
    fn open_parent(&self) -> Result<Dir> {
        Dir::open_tree(&self.root, self.below.parent().unwrap_or(Path::new("")))
    }
}

/// Engine code reads a file target as the path it names.
impl std::ops::Deref for FilePath {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.full
    }
}

/// `.parabyte-<32 hex digits>.tmp`: a fixed-length name in the reserved pattern, so it fits
/// every name limit and no key or file can take it, derived from the final name's bytes so
/// a later run finds the same one to resume.
fn temp_name(name: &OsStr) -> OsString {
    let digest = Sha256::digest(name.as_bytes());
    let hex = hex::encode(&digest[..16]);
    OsString::from(format!("{RESERVED_PREFIX}{hex}.tmp"))
}

/// The temporary file that holds the piece from byte `start` of the object bound for
/// `name`, when one object is fetched by pieces on several hosts (`Sink::open_piece`): a
/// reserved name like `temp_name`'s, hashed from text no file name can hold (a NUL byte),
/// so neither a key nor the object's own temporary file can ever share it.
fn piece_temp_name(name: &OsStr, start: u64) -> OsString {
    let mut text = name.as_bytes().to_vec();
    text.extend_from_slice(format!("\0piece {start}").as_bytes());
    temp_name(OsStr::from_bytes(&text))
}

/// How often to retry claiming a temporary file that another run removed or replaced
/// between our open and our lock.
const CLAIM_ATTEMPTS: usize = 8;

/// A temporary file that becomes `path` on success and disappears on failure. It was
/// created by this run or claimed from an earlier one, and is locked for as long as this
/// value lives: no other run writes into it meanwhile.
#[derive(Debug)]
pub(crate) struct FileSink {
    file: Arc<File>,
    /// The directory holding both names; renames and removals happen inside it.
    dir: Dir,
    temp_name: OsString,
    /// The temporary file's path, for messages.
    temp: PathBuf,
    path: FilePath,
    /// The version being written, to mark the finished file with: (size, ETag).
    version: Option<(u64, String)>,
    /// Parts written so far, kept on the file; `None` when nothing may be resumed.
    journal: Option<Mutex<Journal>>,
    /// What an earlier run had written when this one began.
    restored: Coverage,
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

    /// The piece file from byte `start` of `path`'s object, of `size` bytes and ETag `etag`:
    /// created sparse at the object's length (a piece holds only its own range, so nothing
    /// is reserved) or claimed with what an earlier attempt wrote for this version. It is
    /// never renamed: `adopt_pieces` moves its bytes into the object's temporary file.
    fn create_piece(path: &FilePath, start: u64, size: u64, etag: &str) -> Result<FileSink> {
        let dir = path.open_parent()?;
        let temp_name = piece_temp_name(path.name()?, start);
        let version = Some((size, etag.to_owned()));
        let (mut sink, fresh) = FileSink::claim_named(dir, path, version, temp_name)?;
        let left = if fresh {
            None
        } else {
            sink.resumable(size, etag)
        };
        match left {
            Some(journal) => {
                sink.restored = journal.written().clone();
                sink.journal = Some(Mutex::new(journal));
            }
            None => {
                if !fresh {
                    sink.reset()?;
                }
                sink.file
                    .set_len(size)
                    .map_err(|e| Error::io("cannot size the piece file of", &path.full, e))?;
                sink.journal = Some(Mutex::new(Journal::new(etag, size)));
            }
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
    fn claim_named(
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
    fn reset(&self) -> Result<()> {
        self.file
            .set_len(0)
            .map_err(|e| Error::io("cannot reset", &self.temp, e))?;
        resume::clear_journal(&self.file).map_err(|e| Error::io("cannot reset", &self.temp, e))
    }

    /// The temporary file, for writers that bring their own system calls (local copies).
    pub(crate) fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// The parts an earlier run left in the claimed file for this same version, if any.
    fn resumable(&self, size: u64, etag: &str) -> Option<Journal> {
        if self.file.metadata().ok()?.len() != size {
            return None;
        }
        Journal::restore(&self.file, etag, size)
    }

    /// Give the file its final name, first setting its modification time to `modified`
    /// (then marked with it, so a later run sees it unchanged).
    pub(crate) fn rename_into_place(mut self, modified: Option<SystemTime>) -> Result<()> {
        if let Some(modified) = modified {
            // Best effort: the time tells other tools the file is current, but a file system
            // that refuses it still gets the right bytes (and the mark records the time it has).
            let _ = self.file.set_modified(modified);
        }
        if let Some((size, etag)) = &self.version {
            mark_complete(&self.file, etag, *size)
                .map_err(|e| Error::io("cannot mark", &self.temp, e))?;
        }
        let name = self.path.name()?;
        // Checked again right before the rename: only a regular file (or nothing) is replaced.
        let replaces = may_replace(&self.dir, name, &self.path)?;
        self.dir
            .rename(&self.temp_name, name, replaces)
            .map_err(|e| Error::io("cannot move into place", &self.path.full, e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        let resumable = self
            .journal
            .as_ref()
            .is_some_and(|journal| journal.lock().is_ok_and(|j| j.written().bytes() > 0));
        if !self.committed && !resumable {
            // Still locked by us, so still ours to remove. Best effort.
            let _ = self.dir.remove(&self.temp_name);
        }
    }
}

/// The final name may only be replaced when nothing or a regular file is there: never a
/// link, a directory, a device or a FIFO. True when a regular file is there.
fn may_replace(dir: &Dir, name: &OsStr, path: &Path) -> Result<bool> {
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

/// Create the temporary file `temp`, or claim the one an earlier run left: never through
/// a link, only a regular file, locked so no other run writes into it, and still the file
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
fn write_small_file(
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

/// Move what the piece files from `starts` hold of `path`'s object (`size` bytes, ETag
/// `etag`) into its temporary file, as if an interrupted run had written it there, then
/// remove them; a piece of another version, or one that is missing, brings nothing, and the
/// download that follows fetches whatever no piece brought. A piece still being written
/// (its lock held) is an error. Returns the bytes moved.
pub(crate) fn adopt_pieces(path: &FilePath, size: u64, etag: &str, starts: &[u64]) -> Result<u64> {
    let version = Some((size, etag.to_owned()));
    let object = FileSink::create(path, version, Some(size))?;
    let journal = object
        .journal
        .as_ref()
        .expect("a sink of a known version keeps a journal");
    let mut moved = 0;
    for &start in starts {
        let name = piece_temp_name(path.name()?, start);
        if object
            .dir
            .stat(&name)
            .map_err(|e| Error::io("cannot check a piece of", &path.full, e))?
            .is_none()
        {
            continue;
        }
        let piece = FileSink::create_piece(path, start, size, etag)?;
        let missing: Vec<(u64, u64)> = piece
            .restored
            .stretches()
            .flat_map(|(from, to)| {
                let whole = ByteRange {
                    start: from,
                    end: to - 1,
                };
                object.restored.gaps(whole)
            })
            .map(|gap| (gap.start, gap.end + 1))
            .collect();
        for (from, to) in missing {
            copy_range(&piece.file, &object.file, from, to - from)
                .map_err(|e| Error::io("cannot move a piece into", &object.temp, e))?;
            journal
                .lock()
                .expect("journal poisoned")
                .record(
                    &object.file,
                    ByteRange {
                        start: from,
                        end: to - 1,
                    },
                )
                .map_err(|e| Error::io("cannot record progress in", &object.temp, e))?;
            moved += to - from;
        }
        // Its bytes are in the object's journal now; dropping it after this removes nothing twice.
        piece
            .dir
            .remove(&piece.temp_name)
            .map_err(|e| Error::io("cannot remove a piece of", &path.full, e))?;
    }
    Ok(moved)
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

/// Run file-system work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|join| {
            Err(Error::io(
                "file task failed",
                PathBuf::new(),
                io::Error::other(join),
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::Md5;
    use std::fs;

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
    async fn pieces_give_the_object_only_what_they_wrote_of_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = FilePath::at(&dir.path().join("big.bin"));
        let (piece, size) = (SMALL_OBJECT, 3 * SMALL_OBJECT);
        let write_piece = |start: u64, etag: &'static str, fill: u8| {
            let path = path.clone();
            async move {
                let sink = Sink::open_piece(&path, start, size, etag).await.unwrap();
                let bytes = Bytes::from(vec![fill; piece as usize]);
                sink.write_at(bytes, start).await.unwrap();
                let range = ByteRange {
                    start,
                    end: start + piece - 1,
                };
                sink.part_done(range).unwrap();
            }
        };
        write_piece(0, "v1", 1).await;
        // Another version's piece, and a third piece that never ran.
        write_piece(piece, "v0", 2).await;
        let moved = adopt_pieces(&path, size, "v1", &[0, piece, 2 * piece]).unwrap();
        assert_eq!(moved, piece);
        // The object resumes from exactly that piece; no piece file is left beside it.
        let object = Sink::open(&Target::File(path.clone()), Some(size), Some("v1"))
            .await
            .unwrap();
        let restored: Vec<_> = object.restored().stretches().collect();
        assert_eq!(restored, [(0, piece)]);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        let mut first = vec![0; piece as usize];
        object
            .read_back(move |read| read(0, &mut first).map(|()| first))
            .await
            .unwrap()
            .map(|first| assert!(first.iter().all(|&byte| byte == 1)))
            .unwrap();
    }

    #[tokio::test]
    async fn a_piece_still_being_written_is_not_adopted() {
        let dir = tempfile::tempdir().unwrap();
        let path = FilePath::at(&dir.path().join("big.bin"));
        let size = 2 * SMALL_OBJECT;
        // Another process's piece task still holds its piece (and its lock).
        let writing = Sink::open_piece(&path, 0, size, "v1").await.unwrap();
        writing
            .write_at(Bytes::from(vec![1; SMALL_OBJECT as usize]), 0)
            .await
            .unwrap();
        let error = adopt_pieces(&path, size, "v1", &[0])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("another parabyte process is writing"),
            "{error}"
        );
        // The piece is left to its writer, and the object's file holds nothing of it.
        drop(writing);
        let object = Sink::open(&Target::File(path.clone()), Some(size), Some("v1"))
            .await
            .unwrap();
        assert_eq!(object.restored().bytes(), 0);
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

    #[tokio::test(flavor = "multi_thread")]
    async fn an_ordered_sink_writes_in_order_and_stops_when_a_part_fails() {
        let (mut reader, writer) = io::pipe().unwrap();
        let out = File::from(std::os::fd::OwnedFd::from(writer));
        let sink = Sink::Ordered(OrderedSink::over(out, PathBuf::from("pipe")));
        let md5 = Arc::new(OrderedMd5::default());
        sink.hash_in_write_order(&md5);
        let (later, first) = tokio::join!(
            sink.write_at(Bytes::from_static(b"world"), 6),
            sink.write_at(Bytes::from_static(b"hello "), 0),
        );
        later.unwrap();
        first.unwrap();
        let mut received = [0u8; 11];
        io::Read::read_exact(&mut reader, &mut received).unwrap();
        assert_eq!(&received, b"hello world");
        // Hashed as the bytes went out: nothing needs reading back from the pipe.
        let digest = sink
            .read_back(move |read| md5.finish(11, read))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(digest, <[u8; 16]>::from(Md5::digest(b"hello world")));

        // Bytes after a part that failed for good never get their turn: they stop waiting.
        let (waiting, ()) = tokio::join!(sink.write_at(Bytes::from_static(b"!"), 100), async {
            tokio::task::yield_now().await;
            sink.part_failed();
        });
        let error = waiting.unwrap_err().to_string();
        assert!(
            error.contains("an earlier part of the object failed"),
            "{error}"
        );
    }

    fn fs_is_link(path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }
}
