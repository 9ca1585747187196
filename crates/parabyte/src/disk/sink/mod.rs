//! Where an object's bytes land. Parts are written at their offsets into a temporary file
//! in the destination's directory, which takes the final name only once complete. A sink
//! dropped before `commit` removes its temporary file, unless it holds finished parts of a
//! known version that a later run can resume from (see `resume.rs`); then it stays, hidden.
//! A destination that is a character device, a FIFO or stdout is never replaced: it gets
//! the bytes in order, each part waiting for the one before it.

mod buffer;
mod pieces;
mod staged;
mod stream;
mod target;
mod temp_file;

use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use bytes::Bytes;

use crate::checksum::OrderedMd5;
use crate::disk::blocking::blocking;
use crate::error::{Error, Result};
use crate::ranges::{ByteRange, Coverage};
pub(crate) use buffer::ReadAt;
use buffer::{read_buffer, write_into};
pub(crate) use pieces::adopt_pieces;
pub(crate) use staged::StagedFile;
pub(crate) use stream::{OrderedSink, StreamTarget};
pub(crate) use target::{FilePath, Target};
pub use temp_file::kept_for_resume;
use temp_file::write_small_file;
pub(crate) use temp_file::{interrupted_version, FileSink};

/// Objects up to this size are gathered in memory and written with one system call
/// sequence (create, write, rename); larger ones stream into a preallocated file.
pub(crate) const SMALL_OBJECT: u64 = 256 * 1024;

/// The most memory reserved before the bytes of an object fetched into memory arrive; past
/// it the buffer grows as they come.
const MEMORY_RESERVE: u64 = 64 * 1024 * 1024;

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
                // Reserved up front only up to a bound: the size came from the store.
                let reserve = size.unwrap_or(0).min(MEMORY_RESERVE);
                data.reserve_exact(usize::try_from(reserve).unwrap_or(0));
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
            Sink::File(sink) => {
                sink.file
                    .write_all_at(&data, offset)
                    .map_err(|e| Error::io("cannot write", &sink.temp, e))?;
                sink.landed(offset, data.len() as u64)
            }
        }
    }

    /// The bytes from `offset` on are the next a stream can take: everything else written
    /// to it waits for them.
    pub(crate) fn is_next_in_line(&self, offset: u64) -> bool {
        matches!(self, Sink::Ordered(sink) if sink.turn.borrow().next == offset)
    }

    /// Whether small writes are worth gathering before they are made: those into a file or
    /// a stream cost a system call each. Bytes discarded or kept in memory do not, and
    /// gathering them would only copy them once more (10 GiB discarded: 10 GiB copied).
    pub(crate) fn gathers_writes(&self) -> bool {
        matches!(self, Sink::File(_) | Sink::Ordered(_))
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
