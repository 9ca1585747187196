//! One large object fetched in pieces by several tasks: each piece is written into a
//! temporary file of its own, and `adopt_pieces` moves what they hold into the object's
//! temporary file as if an interrupted run had left it there.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

use super::target::FilePath;
use super::temp_file::{temp_name, FileSink};
use crate::disk::copy::copy_range;
use crate::disk::resume::Journal;
use crate::error::{Error, Result};
use crate::ranges::ByteRange;

/// The temporary file that holds the piece from byte `start` of the object bound for
/// `name`, when one object is fetched by pieces on several hosts (`Sink::open_piece`): a
/// reserved name like `temp_name`'s, hashed from text no file name can hold (a NUL byte),
/// so neither a key nor the object's own temporary file can ever share it.
fn piece_temp_name(name: &OsStr, start: u64) -> OsString {
    let mut text = name.as_bytes().to_vec();
    text.extend_from_slice(format!("\0piece {start}").as_bytes());
    temp_name(OsStr::from_bytes(&text))
}

impl FileSink {
    /// The piece file from byte `start` of `path`'s object, of `size` bytes and ETag `etag`:
    /// created sparse at the object's length (a piece holds only its own range, so nothing
    /// is reserved) or claimed with what an earlier attempt wrote for this version. It is
    /// never renamed: `adopt_pieces` moves its bytes into the object's temporary file.
    pub(super) fn create_piece(
        path: &FilePath,
        start: u64,
        size: u64,
        etag: &str,
    ) -> Result<FileSink> {
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
        // Its bytes are in the object's journal now.
        piece
            .remove()
            .map_err(|e| Error::io("cannot remove a piece of", &path.full, e))?;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use bytes::Bytes;

    use crate::disk::sink::{Sink, Target, SMALL_OBJECT};
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
}
