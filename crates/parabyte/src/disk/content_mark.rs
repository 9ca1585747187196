//! A local file's CRC64NVME for `sync --checksum`, computed once and kept in an extended
//! attribute keyed by the file's size, modification time and inode, and holding only while
//! its ctime shows no change since (`disk/mark.rs`): a second sync of an unchanged file
//! reads none of its bytes, and one edited in place with its size and mtime kept is read
//! again. A file that changes while it is read has no CRC; a file system without user
//! attributes computes it again each time.

use std::fs::{Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::mark;
use crate::checksum::Crc;

/// `CRC` in hex, then the size, mtime (ns) and inode it was computed at, one a line, then
/// the ctime span of [`mark`].
const CRC_ATTR: &str = "user.parabyte.crc64nvme";
const READ_CHUNK: usize = 1 << 20;

/// The CRC64NVME of the regular file at `path`, never through a link: from its mark when
/// the file is as it was then, else read whole (and marked when `keep`; a dry run writes
/// nothing, marks included).
pub(crate) fn crc64nvme_of(path: &Path, keep: bool) -> io::Result<u64> {
    let before = std::fs::symlink_metadata(path)?;
    if !before.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    if let Some(crc) = marked(path, &before) {
        return Ok(crc);
    }
    let stamp = stamp(&before);
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if self::stamp(&file.metadata()?) != stamp {
        return Err(io::Error::other("it changed while it was read"));
    }
    let mut digest = Crc::Crc64Nvme.digest();
    let mut chunk = vec![0; READ_CHUNK];
    loop {
        let read = file.read(&mut chunk)?;
        if read == 0 {
            break;
        }
        digest.update(&chunk[..read]);
    }
    let crc = digest.finalize();
    if self::stamp(&file.metadata()?) != stamp {
        return Err(io::Error::other("it changed while it was read"));
    }
    if !keep {
        return Ok(crc);
    }
    // A mark is a saving, not a promise: a file that cannot carry one is read next time.
    let _ = mark::set(&file, CRC_ATTR, &format!("{crc:016x}\n{stamp}"));
    Ok(crc)
}

/// What the file's CRC is kept against, besides its ctime (the ctime alone would do, but
/// these cost nothing to compare and survive a clock set back).
fn stamp(metadata: &Metadata) -> String {
    let mtime_ns = i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec());
    format!("{}\n{mtime_ns}\n{}", metadata.len(), metadata.ino())
}

/// The CRC a mark keeps, when the file (now `metadata`) is as it was when marked (read
/// without opening the file, and never through a link: `path` was just seen to be a
/// regular file).
fn marked(path: &Path, metadata: &Metadata) -> Option<u64> {
    let mark = String::from_utf8(xattr::get(path, CRC_ATTR).ok()??).ok()?;
    let (crc, marked_at) = mark::holding(&mark, metadata)?.split_once('\n')?;
    (marked_at == stamp(metadata))
        .then(|| u64::from_str_radix(crc, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::checksum::crc64nvme;

    #[test]
    fn a_files_crc_is_kept_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"first bytes").unwrap();
        assert_eq!(
            crc64nvme_of(&path, true).unwrap(),
            crc64nvme(b"first bytes")
        );
        let Ok(Some(_)) = xattr::get(&path, CRC_ATTR) else {
            // tmpfs without user attributes: nothing to keep.
            return;
        };
        // A mark of another CRC at the same stamp is believed: the second call reads nothing.
        let file = std::fs::File::open(&path).unwrap();
        let stamp = stamp(&file.metadata().unwrap());
        mark::set(&file, CRC_ATTR, &format!("{:016x}\n{stamp}", 7)).unwrap();
        assert_eq!(crc64nvme_of(&path, true).unwrap(), 7);
        // Written to: the stamp moves, the file is read again.
        let mut append = OpenOptions::new().append(true).open(&path).unwrap();
        append.write_all(b"!").unwrap();
        drop(append);
        assert_eq!(
            crc64nvme_of(&path, true).unwrap(),
            crc64nvme(b"first bytes!")
        );
    }

    #[test]
    fn a_file_edited_in_place_with_its_size_and_mtime_kept_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"first bytes").unwrap();
        assert_eq!(
            crc64nvme_of(&path, true).unwrap(),
            crc64nvme(b"first bytes")
        );
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        let before = file.metadata().unwrap();
        mark::past_the_deadline();
        std::fs::write(&path, b"other bytes").unwrap();
        file.set_modified(before.modified().unwrap()).unwrap();
        assert_eq!(stamp(&file.metadata().unwrap()), stamp(&before));
        assert_eq!(
            crc64nvme_of(&path, true).unwrap(),
            crc64nvme(b"other bytes")
        );
    }

    #[test]
    fn a_mark_without_a_ctime_span_is_not_believed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"bytes").unwrap();
        let stamp = stamp(&std::fs::metadata(&path).unwrap());
        let older_form = format!("{:016x}\n{stamp}", 7);
        if xattr::set(&path, CRC_ATTR, older_form.as_bytes()).is_err() {
            return; // no user attributes here
        }
        assert_eq!(crc64nvme_of(&path, true).unwrap(), crc64nvme(b"bytes"));
    }

    #[test]
    fn a_link_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("target"), b"x").unwrap();
        std::os::unix::fs::symlink("target", dir.path().join("link")).unwrap();
        assert!(crc64nvme_of(&dir.path().join("link"), true).is_err());
    }
}
