//! Where one object's bytes are meant to end up (`Target`), and a file destination's path
//! split into the user's directory and the part below it that parabyte creates (`FilePath`).

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::stream::StreamTarget;
use crate::disk::dir::Dir;
use crate::disk::paths::{is_reserved, reserved_reason};
use crate::error::{Error, Result};

/// Where one object's bytes are meant to end up.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// Count them, keep none (benchmark mode).
    Discard,
    /// A regular file at this path.
    File(FilePath),
    /// A character device, a FIFO or stdout, written in order and never replaced.
    Stream(StreamTarget),
    /// One buffer in memory, shared with whoever asked for the bytes.
    Memory(Arc<Mutex<Vec<u8>>>),
}

impl Target {
    /// The file this target names, if it is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Target::File(path) => Some(path),
            Target::Discard | Target::Stream(_) | Target::Memory(_) => None,
        }
    }
}

/// A file destination: the directory the user named, taken as given, and the path below
/// it, whose directories parabyte creates and enters without following links.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FilePath {
    root: PathBuf,
    below: PathBuf,
    pub(super) full: PathBuf,
}

impl FilePath {
    /// `relative` (plain names only) under the destination directory `root`.
    pub(crate) fn below(root: &Path, relative: &Path) -> FilePath {
        FilePath {
            root: root.to_owned(),
            below: relative.to_owned(),
            full: root.join(relative),
        }
    }

    /// A path the user gave: its directory is theirs, only the file name is parabyte's.
    pub(crate) fn at(path: &Path) -> FilePath {
        let root = path.parent().unwrap_or(Path::new(""));
        let name = path.file_name().map(PathBuf::from).unwrap_or_default();
        FilePath {
            root: root.to_owned(),
            below: name,
            full: path.to_owned(),
        }
    }

    /// The final name, or why there is none (a path ending in `..` or `/`).
    pub(super) fn name(&self) -> Result<&OsStr> {
        let name = self.below.file_name().ok_or_else(|| {
            Error::io(
                "cannot write",
                &self.full,
                io::Error::other("the destination has no file name"),
            )
        })?;
        if is_reserved(name) {
            return Err(Error::io(
                "will not write",
                &self.full,
                io::Error::other(reserved_reason(name)),
            ));
        }
        Ok(name)
    }

    /// Open (creating as needed) the directory the file goes into.
    pub(super) fn open_parent(&self) -> Result<Dir> {
        Dir::open_tree(&self.root, self.below.parent().unwrap_or(Path::new("")))
    }
}

/// Engine code reads a file target as the path it names.
impl std::ops::Deref for FilePath {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.full
    }
}
