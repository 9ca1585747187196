//! A directory tree walked in the order S3 lists keys: each directory's entries sorted by
//! name, a directory's name compared with a `/` after it. Keys that share a folder share its
//! prefix, so sorting siblings this way orders the whole tree by key, byte for byte, with one
//! directory listing per level in memory (at most `FOLDER_BYTES_HELD` of it: a folder of
//! more is read in passes, `folder_entries.rs`). Links are not followed unless the window says so
//! (`--follow-symlinks`): a link is an entry of its own, as a FIFO or a device is. When
//! followed, a link is what it points to, sorted as that, and a directory reached again
//! below itself (a loop) is not entered but reported.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::folder_entries::Siblings;
use super::stat::Stat;
use super::tree_keys::Window;

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

/// How many bytes of a folder's entries (their names and 8 bytes each) the walk sorts at
/// once: a million files in one folder (15 MB with W4's names) in one read. A folder of more
/// is read in passes, each holding the first entries in key order after where the last
/// ended, so memory is flat in the size of a folder; each pass reads the folder again
/// (ten million names: about 3 seconds of `getdents` a pass).
const FOLDER_BYTES_HELD: usize = 16 << 20;

/// Walk `root` in key order, calling `visit` with each entry in `window`, until the tree
/// ends or `visit` says stop. A root that cannot be read is one `Unreadable` entry.
pub(crate) fn walk(root: &Path, window: Window<'_>, visit: impl FnMut(Walked) -> Next) {
    walk_holding(root, window, FOLDER_BYTES_HELD, visit);
}

/// `walk`, holding at most `held` bytes of a folder's entries at once (a test's few).
pub(crate) fn walk_holding(
    root: &Path,
    window: Window<'_>,
    held: usize,
    mut visit: impl FnMut(Walked) -> Next,
) {
    // The root is opened by its path, through a link if it is one (the caller decides
    // whether a root may be a link); every folder below through the one above it.
    let open_root = rustix::fs::open(root, folder_flags(), Mode::empty());
    // The directories being walked, by device and inode: one met again below itself is a
    // loop a followed link made.
    let mut entered: Vec<Option<(u64, u64)>> = vec![open_root.as_ref().ok().and_then(identity)];
    let mut levels = vec![Level::read(open_root, PathBuf::new(), &window, held)];
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
                    if !level.read_next_pass(&window, held) {
                        levels.pop();
                        entered.pop();
                    }
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
                levels.push(Level::read(opened, relative, &window, held));
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

impl Level {
    /// The folder `opened` (or why it did not open), its first entries in `window` read.
    fn read(
        opened: rustix::io::Result<OwnedFd>,
        relative: PathBuf,
        window: &Window<'_>,
        held: usize,
    ) -> Level {
        let folder = opened.map_err(io::Error::from);
        let siblings = folder
            .as_ref()
            .map_err(|error| io::Error::new(error.kind(), error.to_string()))
            .and_then(|folder| {
                let mut siblings = Siblings::default();
                siblings.read(folder, &relative, window, None, held)?;
                Ok(siblings)
            });
        Level {
            relative,
            folder: folder.ok(),
            siblings,
        }
    }

    /// After its last sibling: whether the folder held more, now read (or why it could not
    /// be, reported as the folder's).
    fn read_next_pass(&mut self, window: &Window<'_>, held: usize) -> bool {
        let (Some(folder), Ok(siblings)) = (&self.folder, &mut self.siblings) else {
            return false;
        };
        match siblings.read_next_pass(folder, &self.relative, window, held) {
            None => false,
            Some(Ok(())) => true,
            Some(Err(error)) => {
                self.siblings = Err(error);
                true
            }
        }
    }
}

/// An open folder's device and inode.
fn identity(folder: &OwnedFd) -> Option<(u64, u64)> {
    Some(Stat::from(rustix::fs::fstat(folder).ok()?).identity())
}
