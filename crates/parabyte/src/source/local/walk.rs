//! A directory tree walked in the order S3 lists keys: each directory's entries sorted by
//! name, a directory's name compared with a `/` after it. Keys that share a folder share its
//! prefix, so sorting siblings this way orders the whole tree by key, byte for byte, with one
//! directory listing per level in memory. Links are not followed unless the window says so
//! (`--follow-symlinks`): a link is an entry of its own, as a FIFO or a device is. When
//! followed, a link is what it points to, sorted as that, and a directory reached again
//! below itself (a loop) is not entered but reported.

use std::ffi::OsString;
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
        let entry = match &mut level.entries {
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
            Ok(entries) => match entries.pop() {
                Some(entry) => entry,
                None => {
                    levels.pop();
                    entered.pop();
                    continue;
                }
            },
        };
        let relative = level.relative.join(&entry.name);
        let kind = match entry.metadata {
            Err(error) => Kind::Unreadable(error),
            Ok(metadata) if metadata.is_dir() => Kind::Directory,
            Ok(metadata) if metadata.is_file() => Kind::File(metadata),
            Ok(metadata) => Kind::Other(metadata),
        };
        let is_directory = matches!(kind, Kind::Directory);
        let next = visit(Walked {
            relative: relative.clone(),
            kind,
            followed: entry.followed,
        });
        match next {
            Next::Stop => return,
            Next::Continue if is_directory => {
                let path = root.join(&relative);
                let here = identity(&path);
                if entry.followed && here.is_some() && entered.contains(&here) {
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
                    .entries
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
    entries: io::Result<Vec<Entry>>,
}

struct Entry {
    name: OsString,
    /// Its key with a `/` after a directory's: what siblings are sorted by.
    sort_key: Vec<u8>,
    metadata: io::Result<Metadata>,
    /// A link read as what it points to.
    followed: bool,
}

impl Level {
    fn read(directory: &Path, relative: PathBuf, window: &Window<'_>) -> Level {
        let entries = fs::read_dir(directory).and_then(|entries| {
            let mut kept = Vec::new();
            for entry in entries {
                let entry = entry?;
                // `DirEntry::metadata` does not follow links; a link followed is what it
                // points to, and a dangling one stays a link.
                let mut metadata = entry.metadata();
                let mut followed = false;
                if window.follow_links && metadata.as_ref().is_ok_and(|m| m.is_symlink()) {
                    if let Ok(target) = fs::metadata(entry.path()) {
                        (metadata, followed) = (Ok(target), true);
                    }
                }
                // Gone since the directory was read (another process's temporary file):
                // not an entry of the tree, not a failure of the walk.
                if metadata
                    .as_ref()
                    .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
                {
                    continue;
                }
                let name = entry.file_name();
                let mut sort_key = key_of(&relative.join(&name));
                let kept_here = match &metadata {
                    Ok(metadata) if metadata.is_dir() => {
                        sort_key.push(b'/');
                        window.may_hold_below(&sort_key)
                    }
                    _ => window.holds_file(&sort_key),
                };
                if kept_here {
                    kept.push(Entry {
                        name,
                        sort_key,
                        metadata,
                        followed,
                    });
                }
            }
            kept.sort_unstable_by(|a, b| b.sort_key.cmp(&a.sort_key));
            Ok(kept)
        });
        Level { relative, entries }
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
