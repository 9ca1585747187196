//! What parabyte takes from a file's `stat`: its type, size, modification time and
//! identity. A walk reads it through the open folder (`statat`), so that a million files do
//! not each cost a walk of their whole path; a read of one file takes it from `std`'s
//! `Metadata`. Both give the same values, so a version listed by a walk is the version a
//! read finds.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime};

use rustix::fs::FileType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    file_type: FileType,
    size: u64,
    dev: u64,
    ino: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stat {
    pub(crate) fn file_type(&self) -> FileType {
        self.file_type
    }

    /// Its device and inode: which file it is, wherever its name.
    pub(crate) fn identity(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    pub(crate) fn len(&self) -> u64 {
        self.size
    }

    pub(crate) fn is_file(&self) -> bool {
        self.file_type == FileType::RegularFile
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.file_type == FileType::Directory
    }

    pub(crate) fn is_symlink(&self) -> bool {
        self.file_type == FileType::Symlink
    }

    /// When it was last written, as `Metadata::modified` gives it.
    pub(crate) fn modified(&self) -> Option<SystemTime> {
        let nanos = Duration::from_nanos(u64::try_from(self.mtime_nsec).ok()?);
        let seconds = Duration::from_secs(self.mtime.unsigned_abs());
        let whole = match self.mtime >= 0 {
            true => SystemTime::UNIX_EPOCH.checked_add(seconds)?,
            false => SystemTime::UNIX_EPOCH.checked_sub(seconds)?,
        };
        whole.checked_add(nanos)
    }

    /// The file as it is now: what changes when it is replaced or written.
    pub(crate) fn version(&self) -> String {
        format!(
            "\"{:x}-{:x}-{:x}-{:x}.{:x}\"",
            self.dev, self.ino, self.size, self.mtime, self.mtime_nsec
        )
    }
}

impl From<&Metadata> for Stat {
    fn from(metadata: &Metadata) -> Stat {
        Stat {
            file_type: FileType::from_raw_mode(metadata.mode()),
            size: metadata.size(),
            dev: metadata.dev(),
            ino: metadata.ino(),
            mtime: metadata.mtime(),
            mtime_nsec: metadata.mtime_nsec(),
        }
    }
}

impl From<rustix::fs::Stat> for Stat {
    // The field types differ between targets (`st_size` is signed, `st_mode` narrower on
    // some), so each is widened the one way all of them allow.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn from(stat: rustix::fs::Stat) -> Stat {
        Stat {
            file_type: FileType::from_raw_mode(stat.st_mode as rustix::fs::RawMode),
            size: u64::try_from(stat.st_size).unwrap_or(0),
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            mtime: stat.st_mtime as i64,
            mtime_nsec: stat.st_mtime_nsec as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_through_the_folder_is_the_stat_std_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"twelve bytes").unwrap();
        let folder = rustix::fs::open(
            dir.path(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let through_folder = Stat::from(
            rustix::fs::statat(&folder, "f", rustix::fs::AtFlags::SYMLINK_NOFOLLOW).unwrap(),
        );
        let metadata = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(through_folder, Stat::from(&metadata));
        assert_eq!(through_folder.modified(), metadata.modified().ok());
        assert!(through_folder.is_file() && through_folder.len() == 12);
    }

    #[test]
    fn a_time_before_1970_is_the_time_std_gives() {
        let stat = Stat {
            file_type: FileType::RegularFile,
            size: 0,
            dev: 0,
            ino: 0,
            mtime: -2,
            mtime_nsec: 250_000_000,
        };
        let expected = SystemTime::UNIX_EPOCH - Duration::from_millis(1750);
        assert_eq!(stat.modified(), Some(expected));
    }
}
