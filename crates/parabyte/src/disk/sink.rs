//! Where an object's bytes land. Parts are written at their offsets into a temporary file
//! beside the destination, which takes the final name only once complete. A sink dropped
//! before `commit` removes its temporary file, unless it holds finished parts of a known
//! version that a later run can resume from (see `resume.rs`); then it stays, hidden.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::disk::resume::{self, mark_complete, Journal};
use crate::error::{Error, Result};
use crate::ranges::{ByteRange, Coverage};

/// Objects up to this size are gathered in memory and written with one system call
/// sequence (create, write, rename); larger ones stream into a preallocated file.
pub(crate) const SMALL_OBJECT: u64 = 256 * 1024;

/// Reads bytes written at an offset, exactly as many as the buffer holds.
pub(crate) type ReadAt<'a> = dyn Fn(u64, &mut [u8]) -> io::Result<()> + 'a;

/// Where one object's bytes are meant to end up.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// Count them, keep none (benchmark mode).
    Discard,
    /// A file at this path.
    File(PathBuf),
    /// One buffer in memory, shared with whoever asked for the bytes.
    Memory(Arc<Mutex<Vec<u8>>>),
}

/// What a download writes into.
#[derive(Debug)]
pub(crate) enum Sink {
    Discard,
    /// Gather a small object, write it at commit.
    Buffered {
        data: Mutex<Vec<u8>>,
        path: PathBuf,
        etag: Option<String>,
    },
    /// Positioned writes into a temporary file.
    File(FileSink),
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
                blocking(move || FileSink::create(path, version, size))
                    .await
                    .map(Sink::File)
            }
        }
    }

    /// Write `data` at byte `offset` of the object.
    pub(crate) async fn write_at(&self, data: Bytes, offset: u64) -> Result<()> {
        match self {
            Sink::Discard => Ok(()),
            Sink::Buffered { data: buffer, .. } => write_into(buffer, &data, offset),
            Sink::Memory(buffer) => write_into(buffer, &data, offset),
            Sink::File(sink) => {
                let file = sink.file.clone();
                let path = sink.temp.clone();
                blocking(move || {
                    file.write_all_at(&data, offset)
                        .map_err(|e| Error::io("cannot write", &path, e))
                })
                .await
            }
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
    /// bytes are not kept (discarding).
    pub(crate) async fn read_back<T: Send + 'static>(
        &self,
        work: impl FnOnce(&ReadAt<'_>) -> io::Result<T> + Send + 'static,
    ) -> Option<Result<T>> {
        match self {
            Sink::Discard => None,
            Sink::Buffered { data, .. } => Some(read_buffer(data, work)),
            Sink::Memory(data) => Some(read_buffer(data, work)),
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

    /// Give the object its final name; after this the bytes are the user's.
    pub(crate) async fn commit(self) -> Result<()> {
        match self {
            Sink::Discard | Sink::Memory(_) => Ok(()),
            Sink::Buffered { data, path, etag } => {
                let data = data.into_inner().expect("sink buffer poisoned");
                blocking(move || write_small_file(&path, &data, etag.as_deref())).await
            }
            Sink::File(sink) => blocking(move || sink.rename_into_place()).await,
        }
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

/// A temporary file that becomes `path` on success and disappears on failure.
#[derive(Debug)]
pub(crate) struct FileSink {
    file: Arc<File>,
    temp: PathBuf,
    path: PathBuf,
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
        path: PathBuf,
        version: Option<(u64, String)>,
        size: Option<u64>,
    ) -> Result<FileSink> {
        refuse_link(&path)?;
        let temp = temp_path_for(&path);
        if let Some((size, etag)) = &version {
            if let Some(sink) = Self::resume(&path, &temp, *size, etag) {
                return Ok(sink);
            }
        }
        let file = create_with_parents(&temp)?;
        resume::clear_journal(&file).map_err(|e| Error::io("cannot reset", &temp, e))?;
        let journal = version
            .as_ref()
            .map(|(size, etag)| Mutex::new(Journal::new(etag, *size)));
        let sink = FileSink {
            file: Arc::new(file),
            temp,
            path,
            version,
            journal,
            restored: Coverage::default(),
            committed: false,
        };
        if let Some(size) = size {
            // Reserving the space up front turns a full disk into an error before any
            // byte is fetched, and keeps the file unfragmented for parallel writers.
            preallocate(&sink.file, size)
                .map_err(|e| Error::io("cannot reserve space for", &sink.path, e))?;
        }
        Ok(sink)
    }

    /// The temporary file, for writers that bring their own system calls (local copies).
    pub(crate) fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// The temporary file an earlier run left for this same version, if there is one.
    fn resume(path: &Path, temp: &Path, size: u64, etag: &str) -> Option<FileSink> {
        let file = OpenOptions::new().read(true).write(true).open(temp).ok()?;
        if file.metadata().ok()?.len() != size {
            return None;
        }
        let journal = Journal::restore(&file, etag, size)?;
        Some(FileSink {
            file: Arc::new(file),
            temp: temp.to_owned(),
            path: path.to_owned(),
            restored: journal.written().clone(),
            version: Some((size, etag.to_owned())),
            journal: Some(Mutex::new(journal)),
            committed: false,
        })
    }

    pub(crate) fn rename_into_place(mut self) -> Result<()> {
        if let Some((size, etag)) = &self.version {
            mark_complete(&self.file, etag, *size)
                .map_err(|e| Error::io("cannot mark", &self.temp, e))?;
        }
        fs::rename(&self.temp, &self.path)
            .map_err(|e| Error::io("cannot move into place", &self.path, e))?;
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
            // Best effort: the file may never have been fully created.
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Write a whole small object: temp file, write, mark, rename.
fn write_small_file(path: &Path, data: &[u8], etag: Option<&str>) -> Result<()> {
    refuse_link(path)?;
    let temp = temp_path_for(path);
    let written = create_with_parents(&temp).and_then(|file| {
        file.write_all_at(data, 0)
            .map_err(|e| Error::io("cannot write", path, e))?;
        match etag {
            Some(etag) => mark_complete(&file, etag, data.len() as u64)
                .map_err(|e| Error::io("cannot mark", path, e)),
            None => Ok(()),
        }
    });
    let result = written.and_then(|()| {
        fs::rename(&temp, path).map_err(|e| Error::io("cannot move into place", path, e))
    });
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// A destination that is a symbolic link is left alone: replacing it would surprise, and
/// writing through it could land anywhere.
fn refuse_link(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(Error::io(
            "will not replace the symbolic link",
            path,
            io::Error::other(
                "parabyte never writes through or over links; remove the link or choose another destination",
            ),
        )),
        _ => Ok(()),
    }
}

/// The version an interrupted download of `path` left a resumable temporary file for.
pub(crate) fn interrupted_version(path: &Path) -> Option<(u64, String)> {
    resume::interrupted_version(&temp_path_for(path))
}

/// `dir/.name.parabyte-part`: hidden, beside the destination so the final rename is atomic.
fn temp_path_for(path: &Path) -> PathBuf {
    const SUFFIX: &str = ".parabyte-part";
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    // Keep within the 255-byte name limit of common file systems.
    let mut cut = name.len().min(255 - SUFFIX.len() - 1);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    path.with_file_name(format!(".{}{SUFFIX}", &name[..cut]))
}

fn create_with_parents(path: &Path) -> Result<File> {
    let open = || {
        // Readable too: the MD5 check reads back what was just written.
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| Error::io("cannot create directory", parent, e))?;
            }
            open().map_err(|e| Error::io("cannot create", path, e))
        }
        other => other.map_err(|e| Error::io("cannot create", path, e)),
    }
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

    #[tokio::test]
    async fn a_file_sink_appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/deeper/object.bin");
        let sink = Sink::open(&Target::File(path.clone()), Some(SMALL_OBJECT + 4), None)
            .await
            .unwrap();
        sink.write_at(Bytes::from_static(b"tail"), SMALL_OBJECT)
            .await
            .unwrap();
        sink.write_at(Bytes::from(vec![7u8; SMALL_OBJECT as usize]), 0)
            .await
            .unwrap();
        assert!(!path.exists());
        assert!(temp_path_for(&path).exists());
        sink.commit().await.unwrap();
        let written = fs::read(&path).unwrap();
        assert_eq!(written.len() as u64, SMALL_OBJECT + 4);
        assert_eq!(&written[SMALL_OBJECT as usize..], b"tail");
        assert!(!temp_path_for(&path).exists());
    }

    #[tokio::test]
    async fn a_dropped_sink_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("object.bin");
        let sink = Sink::open(&Target::File(path.clone()), Some(10 * SMALL_OBJECT), None)
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
        let sink = Sink::open(&Target::File(path.clone()), Some(5), None)
            .await
            .unwrap();
        sink.write_at(Bytes::from_static(b"hello"), 0)
            .await
            .unwrap();
        sink.commit().await.unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello");
        assert_eq!(fs::read_dir(dir.path().join("a")).unwrap().count(), 1);
    }

    #[test]
    fn temp_names_fit_the_name_limit() {
        let long = "é".repeat(127);
        let temp = temp_path_for(Path::new(&long));
        assert!(temp.file_name().unwrap().len() <= 255);
    }
}
