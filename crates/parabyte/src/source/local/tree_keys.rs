//! Keys and paths of a local tree: a path below the root as a key and back, and a window
//! of the key space (a prefix, a cursor, a range) a walk is held to.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

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
    pub(super) fn holds_file(&self, key: &[u8]) -> bool {
        key.starts_with(self.prefix)
            && self.after.is_none_or(|after| key > after)
            && self.until_after.is_none_or(|until| key <= until)
    }

    /// Whether a directory whose keys all start with `folder` (ending in `/`) may hold one.
    pub(super) fn may_hold_below(&self, folder: &[u8]) -> bool {
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
