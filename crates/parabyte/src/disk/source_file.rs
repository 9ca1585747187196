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
use futures::Stream;

use crate::body_buffers::LARGEST_SHARE;
use crate::checksum::Crc;
use crate::disk::blocking::blocking;
use crate::error::{Error, Result};

/// A streamed body is read in chunks of this size: a part in flight holds a chunk or two.
/// The size a fast download reads at a time, for the same reasons: few system calls per
/// GiB, and blocks glibc serves from the heap even where Dask pins its mmap threshold.
const CHUNK: usize = LARGEST_SHARE;

/// What a file is at one moment: a write or a replacement changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub size: u64,
    pub modified: SystemTime,
    device: u64,
    inode: u64,
}

impl Stamp {
    /// Its size and nanosecond modification time, as one word: what an upload is of, for
    /// the next run or another process to compare with what the file is then.
    pub(crate) fn version(&self) -> String {
        let modified = self
            .modified
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        format!("{}:{}", self.size, modified.as_nanos())
    }

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

    /// `length` bytes from `offset`, into memory; a file that ends sooner has changed. For
    /// small reads: a larger one is streamed ([`SourceFile::stream`]).
    pub(crate) async fn read_at(&self, offset: u64, length: usize) -> Result<Bytes> {
        let (file, path) = (self.file.clone(), self.path.clone());
        blocking(move || {
            let mut buffer = vec![0; length];
            read_exact_at(&file, &path, &mut buffer, offset)?;
            Ok(Bytes::from(buffer))
        })
        .await
    }

    /// The CRC64NVME of `length` bytes from `offset`, read a chunk at a time into one
    /// buffer: the pass ahead of a streamed body, whose checksum goes in its headers.
    pub(crate) async fn crc_at(&self, offset: u64, length: u64) -> Result<u64> {
        let (file, path) = (self.file.clone(), self.path.clone());
        // Allocated and freed on the runtime's threads, as a stream's chunks are.
        let mut buffer = vec![0; CHUNK.min(length as usize)];
        let (crc, _buffer) = blocking(move || {
            let mut crc = Crc::Crc64Nvme.digest();
            let mut done = 0;
            while done < length {
                let chunk = &mut buffer[..CHUNK.min((length - done) as usize)];
                read_exact_at(&file, &path, chunk, offset + done)?;
                crc.update(chunk);
                done += chunk.len() as u64;
            }
            Ok((crc.finalize(), buffer))
        })
        .await?;
        Ok(crc)
    }

    /// `length` bytes from `offset`, read a chunk at a time as they are sent. The stream
    /// fails, so the request is never completed, when the bytes read are not the ones
    /// whose CRC64NVME is `crc`: the file changed after the pass that computed it.
    pub(crate) fn stream(
        &self,
        offset: u64,
        length: u64,
        crc: u64,
    ) -> impl Stream<Item = Result<Bytes>> + Send + 'static {
        let start = Streamed {
            file: self.file.clone(),
            path: self.path.clone(),
            offset,
            left: length,
            crc: Crc::Crc64Nvme.digest(),
        };
        futures::stream::try_unfold(start, move |mut at| async move {
            if at.left == 0 {
                return match at.crc.finalize() == crc {
                    true => Ok(None),
                    false => Err(changed(&at.path, "its bytes changed while they were sent")),
                };
            }
            let length = CHUNK.min(at.left as usize);
            // Read on this task, not on the blocking pool: the checksum pass read these very
            // bytes just before, so they come from the page cache in microseconds, and
            // handing each chunk to a pool thread and back cost more than the read
            // (docs/PROFILE.md, stop 35). Allocated here too, on the runtime's few threads:
            // each thread that allocates gets an arena of its own (stop 32).
            let mut chunk = vec![0; length];
            read_exact_at(&at.file, &at.path, &mut chunk, at.offset)?;
            at.crc.update(&chunk);
            at.offset += length as u64;
            at.left -= length as u64;
            Ok(Some((Bytes::from(chunk), at)))
        })
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

/// Where a streamed body has got to.
struct Streamed {
    file: Arc<File>,
    path: PathBuf,
    offset: u64,
    left: u64,
    /// Of the bytes read so far, updated as they come: combining a CRC per chunk instead
    /// took half an upload's CPU (docs/PROFILE.md, stop 35).
    crc: crc_fast::Digest,
}

/// Fill `buffer` from `offset`; a file that ends sooner has changed since it was opened.
fn read_exact_at(file: &File, path: &Path, buffer: &mut [u8], offset: u64) -> Result<()> {
    file.read_exact_at(buffer, offset)
        .map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => changed(path, "it is shorter than when it was opened"),
            _ => Error::io("cannot read", path, e),
        })
}

pub(crate) fn changed(path: &Path, detail: &str) -> Error {
    Error::FileChanged {
        path: path.to_owned(),
        detail: detail.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use futures::TryStreamExt;

    use super::*;
    use crate::checksum::crc64nvme;

    fn bytes(length: usize) -> Vec<u8> {
        (0..length).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[tokio::test]
    async fn a_stream_gives_the_bytes_the_crc_pass_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data = bytes(3 * CHUNK + 17);
        std::fs::write(&path, &data).unwrap();
        let file = SourceFile::open(&path).await.unwrap();
        let (offset, length) = (5, (2 * CHUNK + 3) as u64);
        let crc = file.crc_at(offset, length).await.unwrap();
        assert_eq!(crc, crc64nvme(&data[5..5 + length as usize]));
        let chunks: Vec<Bytes> = file
            .stream(offset, length, crc)
            .try_collect()
            .await
            .unwrap();
        assert!(chunks.iter().all(|chunk| chunk.len() <= CHUNK));
        assert_eq!(chunks.concat(), &data[5..5 + length as usize]);
    }

    #[tokio::test]
    async fn a_stream_fails_when_its_bytes_are_not_the_ones_checksummed() {
        // Rewritten in place, same size, its time put back: only the bytes tell.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data = bytes(2 * CHUNK);
        std::fs::write(&path, &data).unwrap();
        let file = SourceFile::open(&path).await.unwrap();
        let crc = file.crc_at(0, data.len() as u64).await.unwrap();
        let mut other = data.clone();
        other[CHUNK + 1] ^= 1;
        std::fs::write(&path, &other).unwrap();
        let error = file
            .stream(0, data.len() as u64, crc)
            .try_collect::<Vec<Bytes>>()
            .await
            .unwrap_err();
        assert!(matches!(error, Error::FileChanged { .. }), "{error:?}");
    }

    #[tokio::test]
    async fn a_stream_of_a_file_cut_short_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, bytes(CHUNK * 2)).unwrap();
        let file = SourceFile::open(&path).await.unwrap();
        let crc = file.crc_at(0, (CHUNK * 2) as u64).await.unwrap();
        std::fs::write(&path, bytes(CHUNK)).unwrap();
        let error = file
            .stream(0, (CHUNK * 2) as u64, crc)
            .try_collect::<Vec<Bytes>>()
            .await
            .unwrap_err();
        assert!(matches!(error, Error::FileChanged { .. }), "{error:?}");
    }
}
