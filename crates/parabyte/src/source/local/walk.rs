//! A directory tree walked in the order S3 lists keys: each directory's entries sorted by
//! name, a directory's name compared with a `/` after it. Keys that share a folder share its
//! prefix, so sorting siblings this way orders the whole tree by key, byte for byte, with one
//! directory listing per level in memory. Links are not followed unless the window says so
//! (`--follow-symlinks`): a link is an entry of its own, as a FIFO or a device is. When
//! followed, a link is what it points to, sorted as that, and a directory reached again
//! below itself (a loop) is not entered but reported.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::stat::Stat;

/// One entry the walk found, by its path below the root.
#[derive(Debug)]
pub(crate) struct Walked {
    pub relative: PathBuf,
    pub kind: Kind,
    /// Reached through a link the window said to follow: its bytes are read from where it
    /// points.
    pub followed: bool,
}

/// What an entry is, read without following links.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A regular file.
    File(Stat),
    /// A directory; the walk goes into it after this entry unless told to pass it by.
    Directory,
    /// A link, FIFO, socket or device.
    Other(Stat),
    /// A directory that could not be read, or an entry whose metadata could not be.
    Unreadable(io::Error),
}

/// What the walk does after an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Continue,
    /// After a directory: do not go into it.
    PassBy,
    Stop,
}

/// Where a walk starts and what it leaves out, as keys: `/`-separated paths below the root.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Window<'a> {
    /// Only entries whose key starts with this (directories that could hold one).
    pub prefix: &'a [u8],
    /// Only entries whose key sorts after this (directories that could hold one).
    pub after: Option<&'a [u8]>,
    /// Only entries whose key sorts at or before this (directories that could hold one):
    /// with `after`, one range of the key space (see `KeyBounds`).
    pub until_after: Option<&'a [u8]>,
    /// Links are read as what they point to (`--follow-symlinks`), loops refused.
    pub follow_links: bool,
}

impl Window<'_> {
    /// Whether a file of this key is in the window.
    fn holds_file(&self, key: &[u8]) -> bool {
        key.starts_with(self.prefix)
            && self.after.is_none_or(|after| key > after)
            && self.until_after.is_none_or(|until| key <= until)
    }

    /// Whether a directory whose keys all start with `folder` (ending in `/`) may hold one.
    fn may_hold_below(&self, folder: &[u8]) -> bool {
        let prefix_fits = folder.starts_with(self.prefix) || self.prefix.starts_with(folder);
        // Every key below sorts before `after` when `folder` does and `after` is not below it.
        let after_fits = self
            .after
            .is_none_or(|after| after.starts_with(folder) || folder > after);
        // Every key below sorts after `folder`, so past `until_after` when it does.
        let until_fits = self.until_after.is_none_or(|until| folder <= until);
        prefix_fits && after_fits && until_fits
    }
}

/// Walk `root` in key order, calling `visit` with each entry in `window`, until the tree
/// ends or `visit` says stop. A root that cannot be read is one `Unreadable` entry.
pub(crate) fn walk(root: &Path, window: Window<'_>, mut visit: impl FnMut(Walked) -> Next) {
    // The root is opened by its path, through a link if it is one (the caller decides
    // whether a root may be a link); every folder below through the one above it.
    let open_root = rustix::fs::open(root, folder_flags(), Mode::empty());
    // The directories being walked, by device and inode: one met again below itself is a
    // loop a followed link made.
    let mut entered: Vec<Option<(u64, u64)>> = vec![open_root.as_ref().ok().and_then(identity)];
    let mut levels = vec![Level::read(open_root, PathBuf::new(), &window)];
    while let Some(level) = levels.last_mut() {
        let (sibling, name) = match &mut level.siblings {
            Err(error) => {
                let error = io::Error::new(error.kind(), error.to_string());
                let relative = level.relative.clone();
                levels.pop();
                entered.pop();
                if visit(unreadable(relative, error)) == Next::Stop {
                    return;
                }
                continue;
            }
            Ok(siblings) => match siblings.pop() {
                Some(popped) => popped,
                None => {
                    levels.pop();
                    entered.pop();
                    continue;
                }
            },
        };
        let Some(folder) = &level.folder else {
            // Entries come only from a folder that opened.
            continue;
        };
        let relative = level.relative.join(name);
        let kind = match sibling.stat(folder, name) {
            // Gone since the directory was read (another process's temporary file): not an
            // entry of the tree, not a failure of the walk.
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => Kind::Unreadable(error),
            // Sorted as a directory (or not) when read: turned into the other since, it
            // would come out of key order, so it is reported rather than guessed at.
            Ok(stat) if stat.is_dir() != sibling.directory => Kind::Unreadable(io::Error::other(
                "it changed between a file and a folder while its folder was walked; run again",
            )),
            Ok(stat) if stat.is_dir() => Kind::Directory,
            Ok(stat) if stat.is_file() => Kind::File(stat),
            Ok(stat) => Kind::Other(stat),
        };
        let is_directory = matches!(kind, Kind::Directory);
        let next = visit(Walked {
            relative: relative.clone(),
            kind,
            followed: sibling.followed,
        });
        match next {
            Next::Stop => return,
            Next::Continue if is_directory => {
                // Opened through the folder above, never through a link unless it was
                // followed as one: a folder swapped for a link since is refused.
                let flags = match sibling.followed {
                    true => folder_flags(),
                    false => folder_flags() | OFlags::NOFOLLOW,
                };
                let opened = rustix::fs::openat(folder, name, flags, Mode::empty());
                // A directory removed since it was seen holds nothing now.
                if matches!(opened, Err(Errno::NOENT)) {
                    continue;
                }
                let here = opened.as_ref().ok().and_then(identity);
                if sibling.followed && here.is_some() && entered.contains(&here) {
                    let looped = io::Error::other(
                        "a link loop: it leads back to a folder that holds it, so it is not entered",
                    );
                    if visit(unreadable(relative, looped)) == Next::Stop {
                        return;
                    }
                    continue;
                }
                levels.push(Level::read(opened, relative, &window));
                entered.push(here);
            }
            Next::Continue | Next::PassBy => {}
        }
    }
}

/// How a folder is opened to be read: for reading its entries, closed on exec.
fn folder_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC
}

fn unreadable(relative: PathBuf, error: io::Error) -> Walked {
    Walked {
        relative,
        kind: Kind::Unreadable(error),
        followed: false,
    }
}

/// One directory being walked: its entries in the window, last in key order first.
struct Level {
    relative: PathBuf,
    /// The folder, open: its entries' `stat`s are read through it (none if it did not
    /// open).
    folder: Option<OwnedFd>,
    siblings: io::Result<Siblings>,
}

/// A directory's entries, held as little as sorting them needs: a million files in one
/// folder cost their names and 8 bytes each, not a `stat` each. Each entry's `stat` is
/// read when the walk reaches it.
struct Siblings {
    /// Every entry's name one after another, a directory's with a `/` after it: siblings
    /// share their folder's key, so these sort them as their keys sort.
    names: Vec<u8>,
    /// Sorted last first, so the next in key order is popped from the end.
    entries: Vec<Sibling>,
}

#[derive(Clone, Copy)]
struct Sibling {
    /// Where its name starts in `Siblings::names`.
    start: u32,
    /// Its name's length, a directory's `/` included.
    len: u16,
    /// Sorted as a directory (its name with `/` after it).
    directory: bool,
    /// A link read as what it points to.
    followed: bool,
}

impl Sibling {
    /// Its `stat` now, read through its folder: a followed link's is its target's, any
    /// other entry's its own.
    fn stat(&self, folder: &OwnedFd, name: &OsStr) -> io::Result<Stat> {
        let flags = match self.followed {
            true => AtFlags::empty(),
            false => AtFlags::SYMLINK_NOFOLLOW,
        };
        Ok(Stat::from(rustix::fs::statat(folder, name, flags)?))
    }
}

impl Siblings {
    /// The next entry in key order, and its name.
    fn pop(&mut self) -> Option<(Sibling, &OsStr)> {
        let sibling = self.entries.pop()?;
        let name = name_in(&self.names, &sibling);
        let name = name.strip_suffix(b"/").unwrap_or(name);
        Some((sibling, OsStr::from_bytes(name)))
    }

    fn push(&mut self, name: &[u8], directory: bool, followed: bool) -> io::Result<()> {
        let too_many = || {
            io::Error::other(
                "this folder's names take more than 4 GiB; split it into folders to copy it",
            )
        };
        let start = u32::try_from(self.names.len()).map_err(|_| too_many())?;
        // A name is at most 255 bytes on every file system Linux has.
        let len = u16::try_from(name.len()).map_err(|_| too_many())?;
        self.names.extend_from_slice(name);
        self.entries.push(Sibling {
            start,
            len,
            directory,
            followed,
        });
        Ok(())
    }

    /// In key order, last first, and holding no more than that needs.
    fn sort(&mut self) {
        let names = &self.names;
        self.entries
            .sort_unstable_by(|a, b| name_in(names, b).cmp(name_in(names, a)));
        self.names.shrink_to_fit();
        self.entries.shrink_to_fit();
    }
}

fn name_in<'a>(names: &'a [u8], sibling: &Sibling) -> &'a [u8] {
    let start = sibling.start as usize;
    &names[start..start + usize::from(sibling.len)]
}

impl Level {
    /// The folder `opened` (or why it did not open), its entries in `window` read.
    fn read(opened: rustix::io::Result<OwnedFd>, relative: PathBuf, window: &Window<'_>) -> Level {
        let folder = opened.map_err(io::Error::from);
        let siblings = folder
            .as_ref()
            .map_err(|error| io::Error::new(error.kind(), error.to_string()))
            .and_then(|folder| read_siblings(folder, &relative, window));
        Level {
            relative,
            folder: folder.ok(),
            siblings,
        }
    }
}

/// An open folder's device and inode.
fn identity(folder: &OwnedFd) -> Option<(u64, u64)> {
    Some(Stat::from(rustix::fs::fstat(folder).ok()?).identity())
}

/// The entries of `folder` (at `relative` below the root) in `window`, sorted.
fn read_siblings(folder: &OwnedFd, relative: &Path, window: &Window<'_>) -> io::Result<Siblings> {
    let mut siblings = Siblings {
        names: Vec::new(),
        entries: Vec::new(),
    };
    // Each entry's key, built in one buffer: the folder's key, then the name.
    let mut key = key_of(relative);
    if !key.is_empty() {
        key.push(b'/');
    }
    let folder_len = key.len();
    let mut entries = Dir::read_from(folder)?;
    while let Some(entry) = entries.read() {
        let entry = entry?;
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        // The type readdir gave, with no `stat` where the file system gives one. One whose
        // type cannot be read is sorted as a file: its `stat` when the walk reaches it
        // gives the error, for that entry alone.
        let mut file_type = entry.file_type();
        if file_type == FileType::Unknown {
            match rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => file_type = Stat::from(stat).file_type(),
                // Gone since the directory was read: not an entry of the tree.
                Err(Errno::NOENT) => continue,
                Err(_) => {}
            }
        }
        // A link followed sorts as what it points to; a dangling one stays a link.
        let mut directory = file_type == FileType::Directory;
        let mut followed = false;
        if window.follow_links && file_type == FileType::Symlink {
            if let Ok(target) = rustix::fs::statat(folder, name, AtFlags::empty()) {
                (directory, followed) = (Stat::from(target).is_dir(), true);
            }
        }
        key.truncate(folder_len);
        key.extend_from_slice(name.to_bytes());
        let kept_here = match directory {
            true => {
                key.push(b'/');
                window.may_hold_below(&key)
            }
            false => window.holds_file(&key),
        };
        if kept_here {
            siblings.push(&key[folder_len..], directory, followed)?;
        }
    }
    siblings.sort();
    Ok(siblings)
}

/// A path below the root as a key: its bytes, `/` between its parts.
pub(crate) fn key_of(relative: &Path) -> Vec<u8> {
    let mut key = Vec::new();
    for (i, part) in relative.iter().enumerate() {
        if i > 0 {
            key.push(b'/');
        }
        key.extend_from_slice(part.as_bytes());
    }
    key
}

/// A key as a path below the root. `None` for a key that is not one: empty parts, `.` or
/// `..`, which a store of files cannot hold.
pub(crate) fn path_of(key: &str) -> Option<PathBuf> {
    let mut path = PathBuf::new();
    for part in key.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return None;
        }
        path.push(OsString::from_vec(part.as_bytes().to_vec()));
    }
    Some(path)
}
