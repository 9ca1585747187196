//! A folder's entries in the order the walk gives them: sorted by name, a directory's with
//! a `/` after it, holding a bounded number of bytes. A folder of more is read in passes,
//! each holding the first entries after where the last pass ended.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType};
use rustix::io::Errno;

use super::stat::Stat;
use super::tree_keys::{key_of, Window};

/// A directory's entries, held as little as sorting them needs: a million files in one
/// folder cost their names and 8 bytes each, not a `stat` each. Each entry's `stat` is
/// read when the walk reaches it.
#[derive(Default)]
pub(super) struct Siblings {
    /// Every entry's name one after another, a directory's with a `/` after it: siblings
    /// share their folder's key, so these sort them as their keys sort.
    names: Vec<u8>,
    /// Sorted last first, so the next in key order is popped from the end.
    entries: Vec<Sibling>,
    /// The folder held more than one pass sorts: the name (as sorted) of the last entry
    /// this pass holds, where the next pass starts.
    more_after: Option<Vec<u8>>,
}

/// The bytes one entry holds besides its name.
const ENTRY_BYTES: usize = std::mem::size_of::<Sibling>();

#[derive(Clone, Copy)]
pub(super) struct Sibling {
    /// Where its name starts in `Siblings::names`.
    start: u32,
    /// Its name's length, a directory's `/` included.
    len: u16,
    /// Sorted as a directory (its name with `/` after it).
    pub(super) directory: bool,
    /// A link read as what it points to.
    pub(super) followed: bool,
}

impl Sibling {
    /// Its `stat` now, read through its folder: a followed link's is its target's, any
    /// other entry's its own.
    pub(super) fn stat(&self, folder: &OwnedFd, name: &OsStr) -> io::Result<Stat> {
        let flags = match self.followed {
            true => AtFlags::empty(),
            false => AtFlags::SYMLINK_NOFOLLOW,
        };
        Ok(Stat::from(rustix::fs::statat(folder, name, flags)?))
    }
}

impl Siblings {
    /// The next entry in key order, and its name.
    pub(super) fn pop(&mut self) -> Option<(Sibling, &OsStr)> {
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

    /// The bytes held.
    fn bytes(&self) -> usize {
        self.names.len() + self.entries.len() * ENTRY_BYTES
    }

    /// Only the first four fifths in key order, their names moved down in their buffer (no
    /// second buffer, and one that is reused pass after pass): the name of the last kept.
    fn keep_first_part(&mut self) -> Vec<u8> {
        let kept = (self.entries.len() * 4 / 5).max(1);
        let names = &self.names;
        let (_, last, _) = self
            .entries
            .select_nth_unstable_by(kept - 1, |a, b| name_in(names, a).cmp(name_in(names, b)));
        let last = name_in(names, last).to_vec();
        self.entries.truncate(kept);
        // In the order they lie, each name moves down to where the last one moved ends.
        self.entries.sort_unstable_by_key(|entry| entry.start);
        let mut end = 0;
        for entry in &mut self.entries {
            let start = entry.start as usize;
            self.names
                .copy_within(start..start + usize::from(entry.len), end);
            // No further than it was, so it fits a `u32` as its start did.
            entry.start = end as u32;
            end += usize::from(entry.len);
        }
        self.names.truncate(end);
        last
    }

    /// In key order, last first.
    fn sort(&mut self) {
        let names = &self.names;
        self.entries
            .sort_unstable_by(|a, b| name_in(names, b).cmp(name_in(names, a)));
    }

    /// After the last entry of a pass: whether the folder held more, read now from where
    /// the pass ended (or why it could not be). Entries there throughout come once each, in
    /// key order; one added after that point since comes too, one added before it does not
    /// (as in one read).
    pub(super) fn read_next_pass(
        &mut self,
        folder: &OwnedFd,
        relative: &Path,
        window: &Window<'_>,
        held: usize,
    ) -> Option<io::Result<()>> {
        let after = self.more_after.take()?;
        Some(self.read(folder, relative, window, Some(&after), held))
    }

    /// Hold the first entries of `folder` (at `relative` below the root) in `window` whose
    /// names sort after `after`, as many as `held` bytes take, sorted; the buffers of a pass
    /// before are reused.
    pub(super) fn read(
        &mut self,
        folder: &OwnedFd,
        relative: &Path,
        window: &Window<'_>,
        after: Option<&[u8]>,
        held: usize,
    ) -> io::Result<()> {
        self.names.clear();
        self.entries.clear();
        self.more_after = None;
        // Once more than `held` bytes of entries were met, the last name kept: those after it
        // wait for the next pass.
        let mut ceiling: Option<Vec<u8>> = None;
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
            let name = &key[folder_len..];
            let this_pass = after.is_none_or(|after| name > after)
                && ceiling.as_deref().is_none_or(|ceiling| name <= ceiling);
            if kept_here && this_pass {
                self.push(name, directory, followed)?;
                // A select keeps the first four fifths: its cost is spread over the fifth of
                // entries met before the next.
                if self.bytes() >= held {
                    ceiling = Some(self.keep_first_part());
                }
            }
        }
        self.sort();
        match ceiling {
            // Every entry after the last held waits for the next pass.
            Some(_) => {
                let last = self.entries.first().map(|last| name_in(&self.names, last));
                self.more_after = last.map(<[u8]>::to_vec);
            }
            // A folder read at once holds no more than its entries need while it is walked.
            None => {
                self.names.shrink_to_fit();
                self.entries.shrink_to_fit();
            }
        }
        Ok(())
    }
}

fn name_in<'a>(names: &'a [u8], sibling: &Sibling) -> &'a [u8] {
    let start = sibling.start as usize;
    &names[start..start + usize::from(sibling.len)]
}
