//! An object written into a directory by a store write (a PUT, or a multipart upload whose
//! parts arrive in any order and whose places are known only when they are joined). Each
//! lands in a hidden temporary file beside the final name, through the same gates as a
//! download's: never through a link, only a regular file replaced, never a reserved name,
//! locked against a second process. A part file is copied into the object's at the join (in
//! the kernel where it can); a staged file dropped before its commit is removed.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;

use super::target::FilePath;
use super::temp_file::{may_replace, temp_name, FileSink};
use crate::disk::copy::{copy_span, Span};
use crate::error::{Error, Result};

/// A file being written under a hidden temporary name.
#[derive(Debug)]
pub(crate) struct StagedFile {
    sink: FileSink,
}

/// The temporary name of part `number` of the object bound for `name`: reserved like
/// `temp_name`'s, hashed from text no file name can hold (a NUL byte), so neither a key nor
/// another object's temporary file can share it. The same for every upload of that name: a
/// second process writing it meets the lock, and a run after a stopped one takes its parts over.
fn part_temp_name(name: &OsStr, number: u32) -> OsString {
    let mut text = name.as_bytes().to_vec();
    text.extend_from_slice(format!("\0part {number}").as_bytes());
    temp_name(OsStr::from_bytes(&text))
}

impl StagedFile {
    /// The object bound for `path`, of `size` bytes (reserved up front).
    pub(crate) fn object(path: &FilePath, size: u64) -> Result<StagedFile> {
        let sink = FileSink::create(path, None, Some(size))?;
        Ok(StagedFile { sink })
    }

    /// Part `number` of the object bound for `path`. Whatever a stopped run left under its
    /// name is started over.
    pub(crate) fn part(path: &FilePath, number: u32) -> Result<StagedFile> {
        let dir = path.open_parent()?;
        let name = part_temp_name(path.name()?, number);
        let (sink, fresh) = FileSink::claim_named(dir, path, None, name)?;
        if !fresh {
            sink.reset()?;
        }
        Ok(StagedFile { sink })
    }

    /// Fails now, before any byte is written for it, when `path` could not take a file:
    /// a link, a directory, a FIFO or a device is there (or, `replace` false, anything).
    pub(crate) fn check_destination(path: &FilePath, replace: bool) -> Result<()> {
        let taken = may_replace(&path.open_parent()?, path.name()?, path)?;
        match taken && !replace {
            true => Err(Error::Exists {
                what: path.full.display().to_string(),
            }),
            false => Ok(()),
        }
    }

    /// Write `data` at `offset`: on the caller's thread, as a download's positioned writes
    /// into the page cache are.
    pub(crate) fn write_at(&self, data: &[u8], offset: u64) -> Result<()> {
        self.sink
            .file
            .write_all_at(data, offset)
            .map_err(|e| Error::io("cannot write", &self.sink.temp, e))
    }

    /// Give the object its final name; with `replace` false only where nothing is there
    /// ([`Error::Exists`]).
    pub(crate) fn commit(self, replace: bool) -> Result<()> {
        self.sink.move_into_place(None, replace)
    }

    /// The object bound for `path` made of `parts` in order, each with its length, then
    /// given its final name as [`StagedFile::commit`] gives it. The parts stay for the
    /// caller to drop.
    pub(crate) fn join(path: &FilePath, parts: &[(&StagedFile, u64)], replace: bool) -> Result<()> {
        let size = parts.iter().map(|(_, length)| length).sum();
        let object = StagedFile::object(path, size)?;
        let mut offset = 0;
        for (part, length) in parts {
            let span = Span {
                from: 0,
                to: offset,
                length: *length,
            };
            copy_span(&part.sink.file, &object.sink.file, span)
                .map_err(|e| Error::io("cannot join the parts of", &path.full, e))?;
            offset += length;
        }
        object.commit(replace)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn parts_written_in_any_order_join_in_number_order_and_leave_nothing_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let path = FilePath::below(dir.path(), Path::new("sub/object.bin"));
        let second = StagedFile::part(&path, 2).unwrap();
        second.write_at(b"world", 0).unwrap();
        let first = StagedFile::part(&path, 1).unwrap();
        first.write_at(b"hello ", 0).unwrap();
        assert_eq!(
            names(&dir.path().join("sub")).len(),
            2,
            "two hidden part files"
        );
        StagedFile::join(&path, &[(&first, 6), (&second, 5)], true).unwrap();
        drop((first, second));
        assert_eq!(fs::read(&*path).unwrap(), b"hello world");
        assert_eq!(names(&dir.path().join("sub")), ["object.bin"]);
    }

    #[test]
    fn without_replace_a_file_already_there_stays_and_the_write_says_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("taken"), b"theirs").unwrap();
        let path = FilePath::below(dir.path(), Path::new("taken"));
        let staged = StagedFile::object(&path, 4).unwrap();
        staged.write_at(b"ours", 0).unwrap();
        let error = staged.commit(false).unwrap_err();
        assert!(matches!(error, Error::Exists { .. }), "{error:?}");
        assert_eq!(fs::read(dir.path().join("taken")).unwrap(), b"theirs");
        assert_eq!(names(dir.path()), ["taken"], "the temporary file went");
    }

    #[test]
    fn a_staged_file_dropped_before_its_commit_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = FilePath::below(dir.path(), Path::new("gone"));
        let object = StagedFile::object(&path, 3).unwrap();
        object.write_at(b"abc", 0).unwrap();
        let part = StagedFile::part(&path, 7).unwrap();
        drop((object, part));
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn part_names_are_reserved_and_distinct_by_number_and_name() {
        let name = OsStr::new("f");
        let first = part_temp_name(name, 1);
        assert!(crate::disk::paths::is_reserved(&first));
        assert_ne!(first, part_temp_name(name, 2));
        assert_ne!(first, part_temp_name(OsStr::new("g"), 1));
        assert_ne!(
            first,
            temp_name(name),
            "never the object's own temporary name"
        );
    }

    #[test]
    fn a_second_writer_of_the_same_part_is_refused_while_the_first_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = FilePath::below(dir.path(), Path::new("shared"));
        let first = StagedFile::part(&path, 1).unwrap();
        let error = StagedFile::part(&path, 1).unwrap_err();
        assert!(
            error.to_string().contains("another parabyte process"),
            "{error}"
        );
        drop(first);
        StagedFile::part(&path, 1).expect("free once the first is gone");
    }
}
