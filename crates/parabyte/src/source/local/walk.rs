//! A directory tree walked in the order S3 lists keys: each directory's entries sorted by
//! name, a directory's name compared with a `/` after it. Keys that share a folder share its
//! prefix, so sorting siblings this way orders the whole tree by key, byte for byte, with one
//! directory listing per level in memory. Links are not followed unless the window says so
//! (`--follow-symlinks`): a link is an entry of its own, as a FIFO or a device is. When
//! followed, a link is what it points to, sorted as that, and a directory reached again
//! below itself (a loop) is not entered but reported.

use std::ffi::{OsStr, OsString};
use std::fs::{self, Metadata};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

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
    File(Metadata),
    /// A directory; the walk goes into it after this entry unless told to pass it by.
    Directory,
    /// A link, FIFO, socket or device.
    Other(Metadata),
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
    let mut levels = vec![Level::read(root, PathBuf::new(), &window)];
    // The directories being walked, by device and inode: one met again below itself is a
    // loop a followed link made.
    let mut entered: Vec<Option<(u64, u64)>> = vec![identity(root)];
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
        let relative = level.relative.join(name);
        let path = root.join(&relative);
        let kind = match sibling.metadata(&path) {
            // Gone since the directory was read (another process's temporary file): not an
            // entry of the tree, not a failure of the walk.
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => Kind::Unreadable(error),
            // Sorted as a directory (or not) when read: turned into the other since, it
            // would come out of key order, so it is reported rather than guessed at.
            Ok(metadata) if metadata.is_dir() != sibling.directory => {
                Kind::Unreadable(io::Error::other(
                    "it changed between a file and a folder while its folder was walked; run again",
                ))
            }
            Ok(metadata) if metadata.is_dir() => Kind::Directory,
            Ok(metadata) if metadata.is_file() => Kind::File(metadata),
            Ok(metadata) => Kind::Other(metadata),
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
                let here = identity(&path);
                if sibling.followed && here.is_some() && entered.contains(&here) {
                    let looped = io::Error::other(
                        "a link loop: it leads back to a folder that holds it, so it is not entered",
                    );
                    if visit(unreadable(relative, looped)) == Next::Stop {
                        return;
                    }
                    continue;
                }
                let below = Level::read(&path, relative, &window);
                // A directory removed since it was seen holds nothing now.
                let gone = below
                    .siblings
                    .as_ref()
                    .is_err_and(|e| e.kind() == io::ErrorKind::NotFound);
                if !gone {
                    levels.push(below);
                    entered.push(here);
                }
            }
            Next::Continue | Next::PassBy => {}
        }
    }
}

fn unreadable(relative: PathBuf, error: io::Error) -> Walked {
    Walked {
        relative,
        kind: Kind::Unreadable(error),
        followed: false,
    }
}

/// A directory's device and inode, read through links.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// One directory being walked: its entries in the window, last in key order first.
struct Level {
    relative: PathBuf,
    siblings: io::Result<Siblings>,
}

/// A directory's entries, held as little as sorting them needs: a million files in one
/// folder cost their names and 8 bytes each, not a `stat` each. Each entry's metadata is
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
    /// Its metadata now: a followed link's is its target's, any other entry's its own.
    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        match self.followed {
            true => fs::metadata(path),
            false => fs::symlink_metadata(path),
        }
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
    fn read(directory: &Path, relative: PathBuf, window: &Window<'_>) -> Level {
        let siblings = fs::read_dir(directory).and_then(|entries| {
            let mut siblings = Siblings {
                names: Vec::new(),
                entries: Vec::new(),
            };
            // Each entry's key, built in one buffer: the folder's key, then the name.
            let mut key = key_of(&relative);
            if !key.is_empty() {
                key.push(b'/');
            }
            let folder_len = key.len();
            for entry in entries {
                let entry = entry?;
                // The type readdir gave (no `stat`, where the file system gives one). A link
                // followed sorts as what it points to; a dangling one stays a link.
                // One whose type cannot be read is sorted as a file: reading its metadata
                // when the walk reaches it gives the error, for that entry alone.
                let file_type = match entry.file_type() {
                    Ok(file_type) => Some(file_type),
                    // Gone since the directory was read: not an entry of the tree.
                    Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                    Err(_) => None,
                };
                let mut directory = file_type.is_some_and(|t| t.is_dir());
                let mut followed = false;
                if window.follow_links && file_type.is_some_and(|t| t.is_symlink()) {
                    if let Ok(target) = fs::metadata(entry.path()) {
                        (directory, followed) = (target.is_dir(), true);
                    }
                }
                key.truncate(folder_len);
                key.extend_from_slice(entry.file_name().as_bytes());
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
        });
        Level { relative, siblings }
    }
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
