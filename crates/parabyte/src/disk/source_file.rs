//! A local file read for an upload: opened once, never through a link, read in parts at
//! their offsets off the runtime's threads, and stamped at the start and the end so a file
//! that changed while it was read is caught before anything is stored under its key.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;

use crate::error::{Error, Result};

/// Parts at least this large are read into an anonymous map of their own.
const MAPPED_READ: usize = 1024 * 1024;

/// What a file is at one moment: a write or a replacement changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub size: u64,
    pub modified: SystemTime,
    device: u64,
    inode: u64,
}

impl Stamp {
    fn of(metadata: &Metadata) -> Stamp {
        Stamp {
            size: metadata.size(),
            modified: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            device: metadata.dev(),
            inode: metadata.ino(),
        }
    }
}

/// A regular file open for reading.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    file: Arc<File>,
    path: PathBuf,
    /// What it was when opened.
    pub opened: Stamp,
}

impl SourceFile {
    /// Open `path`, refusing a link (never followed) and anything but a regular file.
    pub(crate) async fn open(path: &Path) -> Result<SourceFile> {
        let path = path.to_owned();
        blocking(move || {
            let file = std::fs::OpenOptions::new()
                .read(true)
                // Non-blocking, so a FIFO planted under a file's name cannot hang the open.
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::ELOOP) => Error::io(
                        "skipped",
                        &path,
                        io::Error::other(
                            "it is a symbolic link, and parabyte never follows links; upload its target explicitly",
                        ),
                    ),
                    _ => Error::io("cannot open", &path, e),
                })?;
            let metadata = file.metadata().map_err(|e| Error::io("cannot read", &path, e))?;
            if !metadata.is_file() {
                return Err(Error::io(
                    "skipped",
                    &path,
                    io::Error::other("it is not a regular file (a device, socket or pipe)"),
                ));
            }
            Ok(SourceFile {
                opened: Stamp::of(&metadata),
                file: Arc::new(file),
                path,
            })
        })
        .await
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `length` bytes from `offset`; a file that ends sooner has changed. A part of
    /// [`MAPPED_READ`] or more is read into memory of its own (an anonymous map), given back
    /// to the system the moment the part has been sent: the allocator would keep such
    /// buffers in its arenas, and a run's memory would grow with every thread that read one.
    pub(crate) async fn read_at(&self, offset: u64, length: usize) -> Result<Bytes> {
        let (file, path) = (self.file.clone(), self.path.clone());
        blocking(move || {
            let failed = |e: io::Error| match e.kind() {
                io::ErrorKind::UnexpectedEof => {
                    changed(&path, "it is shorter than when it was opened")
                }
                _ => Error::io("cannot read", &path, e),
            };
            if length < MAPPED_READ {
                let mut buffer = vec![0; length];
                file.read_exact_at(&mut buffer, offset).map_err(failed)?;
                return Ok(Bytes::from(buffer));
            }
            // Populated at once: one call rather than a page fault for every 4 KiB.
            let mut map = memmap2::MmapOptions::new()
                .len(length)
                .populate()
                .map_anon()
                .map_err(|e| Error::io("cannot set memory aside to read", &path, e))?;
            file.read_exact_at(&mut map, offset).map_err(failed)?;
            let map = map
                .make_read_only()
                .map_err(|e| Error::io("cannot read", &path, e))?;
            Ok(Bytes::from_owner(map))
        })
        .await
    }

    /// Fails when the file is no longer what it was when opened: its size or modification
    /// time moved, or another file took its name.
    pub(crate) async fn unchanged(&self) -> Result<()> {
        let (file, path, opened) = (self.file.clone(), self.path.clone(), self.opened);
        blocking(move || {
            let now = file
                .metadata()
                .map_err(|e| Error::io("cannot read", &path, e))?;
            let named = std::fs::symlink_metadata(&path).ok().map(|m| Stamp::of(&m));
            let now = Stamp::of(&now);
            if now != opened {
                return Err(changed(&path, "its size or modification time moved"));
            }
            if named != Some(opened) {
                return Err(changed(&path, "another file took its name"));
            }
            Ok(())
        })
        .await
    }
}

fn changed(path: &Path, detail: &str) -> Error {
    Error::FileChanged {
        path: path.to_owned(),
        detail: detail.to_owned(),
    }
}

/// Run file work on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::io("cannot read", PathBuf::new(), io::Error::other(e)))?
}
