//! Directories held open by descriptor, so that every name parabyte creates, claims,
//! renames or removes is looked up inside a directory it has already checked, and never
//! through a link. The directory the user named is taken as given (it may be a link the
//! user chose); every directory below it is created or entered one name at a time, and a
//! link or a non-directory there is refused.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, Stat, CWD};
use rustix::io::Errno;

use crate::error::{Error, Result};

/// An open directory and the path it was reached by (for messages).
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// The directory `below` under `root`: `root` is created if missing and may be a link;
    /// each directory under it is created if missing and must be a real directory.
    pub(crate) fn open_tree(root: &Path, below: &Path) -> Result<Dir> {
        Dir::open_below(root, below, true)
    }

    /// `below` under `root`, one name at a time and never through a link; missing
    /// directories are created when `create`, else they are `NotFound`.
    fn open_below(root: &Path, below: &Path, create: bool) -> Result<Dir> {
        let root = if root.as_os_str().is_empty() {
            Path::new(".")
        } else {
            root
        };
        let open_root = || rustix::fs::open(root, directory_flags(), Mode::empty());
        let fd = match open_root() {
            Err(Errno::NOENT) if create => {
                std::fs::create_dir_all(root)
                    .map_err(|e| Error::io("cannot create directory", root, e))?;
                open_root()
            }
            other => other,
        }
        .map_err(|e| explain_not_a_directory(root, e.into()))?;
        let mut dir = Dir {
            fd,
            path: root.to_owned(),
        };
        for component in below.components() {
            let Component::Normal(name) = component else {
                return Err(Error::io(
                    "will not use",
                    root.join(below),
                    io::Error::other("only plain names may follow the destination directory"),
                ));
            };
            dir = dir.child(name, create)?;
        }
        Ok(dir)
    }

    /// Enter the directory `name`, creating it if missing and `create`, refusing a link.
    fn child(&self, name: &OsStr, create: bool) -> Result<Dir> {
        let path = self.path.join(name);
        let flags = directory_flags() | OFlags::NOFOLLOW;
        let open = || rustix::fs::openat(&self.fd, name, flags, Mode::empty());
        let opened = match open() {
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o777)) {
                    // Another download may have made it meanwhile.
                    Ok(()) | Err(Errno::EXIST) => open(),
                    Err(e) => return Err(Error::io("cannot create directory", path, e.into())),
                }
            }
            other => other,
        };
        match opened {
            Ok(fd) => Ok(Dir { fd, path }),
            Err(e) => Err(explain_not_a_directory(&path, e.into())),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What is at `name`, without following a link; `None` when nothing is.
    pub(crate) fn stat(&self, name: &OsStr) -> io::Result<Option<Stat>> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// A new file at `name`, which must not exist (not even as a dangling link).
    pub(crate) fn create_new(&self, name: &OsStr) -> io::Result<File> {
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o666))?;
        Ok(File::from(fd))
    }

    /// The existing file at `name`, opened for reading and writing but never through a
    /// link, and without waiting (a FIFO planted there must not block the open).
    pub(crate) fn open_existing(&self, name: &OsStr) -> io::Result<File> {
        let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())?;
        Ok(File::from(fd))
    }

    /// Rename `from` to `to` only if nothing is at `to`, atomically: `Taken` when something
    /// is, `Unchecked` (nothing renamed) where the file system cannot tell (some network
    /// ones lack RENAME_NOREPLACE), so the caller looks and then uses `rename_over`.
    pub(crate) fn rename_unless_taken(&self, from: &OsStr, to: &OsStr) -> io::Result<Renamed> {
        match rustix::fs::renameat_with(&self.fd, from, &self.fd, to, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(Renamed::Done),
            Err(Errno::EXIST) => Ok(Renamed::Taken),
            Err(Errno::INVAL | Errno::NOSYS) => Ok(Renamed::Unchecked),
            Err(e) => Err(e.into()),
        }
    }

    /// Rename `from` to `to`, replacing what is there (which the caller checked).
    pub(crate) fn rename_over(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.fd, from, &self.fd, to)?)
    }

    pub(crate) fn remove(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }
}

/// What `Dir::rename_unless_taken` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renamed {
    Done,
    /// Something is under the new name; nothing was renamed.
    Taken,
    /// The file system cannot rename only into a free name; nothing was renamed.
    Unchecked,
}

fn directory_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC
}

/// Turn the error of opening `path` as a directory into what the user can act on.
fn explain_not_a_directory(path: &Path, error: io::Error) -> Error {
    let kind = rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|stat| FileType::from_raw_mode(stat.st_mode));
    let reason = match kind {
        Some(FileType::Symlink) => {
            "this directory in the destination is a symbolic link, and parabyte never writes through links"
        }
        Some(FileType::Directory) | None => return Error::io("cannot open directory", path, error),
        Some(_) => "it is a file where a directory is needed",
    };
    Error::io("cannot write into", path, io::Error::other(reason))
}

/// A short name for a kind of file that parabyte does not replace.
pub(crate) fn kind_name(stat: &Stat) -> Option<&'static str> {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => None,
        FileType::Symlink => Some("a symbolic link"),
        FileType::Directory => Some("a directory"),
        FileType::CharacterDevice | FileType::BlockDevice => Some("a device"),
        FileType::Fifo => Some("a FIFO"),
        FileType::Socket => Some("a socket"),
        FileType::Unknown => Some("not a regular file"),
    }
}

/// Delete the regular file `relative` below `root`: the one way a local file is deleted
/// (`sync --delete`, `mv`'s sources). Its directories are entered one name at a time,
/// never through a link and never created, and anything but a regular file stays. A file
/// already gone is no failure.
pub(crate) fn remove_file_below(root: &Path, relative: &Path) -> Result<()> {
    let path = root.join(relative);
    let name = relative.file_name().ok_or_else(|| {
        Error::io(
            "will not delete",
            &path,
            io::Error::other("it names no file"),
        )
    })?;
    let dir = match Dir::open_below(root, relative.parent().unwrap_or(Path::new("")), false) {
        Ok(dir) => dir,
        Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    match dir.stat(name) {
        Ok(None) => Ok(()),
        Ok(Some(stat)) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => dir
            .remove(name)
            .map_err(|e| Error::io("cannot delete", &path, e)),
        Ok(Some(_)) => Err(Error::io(
            "left in place",
            &path,
            io::Error::other("it is not a regular file, and sync deletes only files"),
        )),
        Err(e) => Err(Error::io("cannot delete", &path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_below_the_root_are_created_and_links_refused() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let dir = Dir::open_tree(root.path(), Path::new("a/b")).unwrap();
        assert_eq!(dir.path(), root.path().join("a/b"));
        assert!(root.path().join("a/b").is_dir());

        std::os::unix::fs::symlink(elsewhere.path(), root.path().join("a/link")).unwrap();
        let error = Dir::open_tree(root.path(), Path::new("a/link/c"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);

        std::fs::write(root.path().join("file"), b"x").unwrap();
        let error = Dir::open_tree(root.path(), Path::new("file/c"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("a file where a directory is needed"),
            "{error}"
        );
    }

    #[test]
    fn new_files_are_never_created_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::os::unix::fs::symlink(&outside, root.path().join("planted")).unwrap();
        let dir = Dir::open_tree(root.path(), Path::new("")).unwrap();
        assert!(dir.create_new(OsStr::new("planted")).is_err());
        assert!(dir.open_existing(OsStr::new("planted")).is_err());
        assert!(!outside.exists());
    }
}
