//! Where one planned object lands: the target a key, a batch item or the user's own path
//! names, with the checks that refuse what may not be written before any byte is fetched.

use std::path::{Path, PathBuf};

use crate::disk::paths::{check_writable, relative_path};
use crate::disk::sink::{FilePath, StreamTarget, Target};
use crate::error::{Error, Result};

/// The path the user named for one object: a character device or FIFO (even behind a link
/// the user chose, such as /dev/stdout) gets the bytes streamed; a regular file or nothing
/// becomes the file; anything else is refused, and so is a directory that cannot be
/// written, before any byte is fetched.
pub(super) fn user_file_target(path: &Path) -> Result<Target> {
    if let Some(stream) = StreamTarget::device(path, true) {
        return Ok(Target::Stream(stream));
    }
    if let Ok(metadata) = std::fs::symlink_metadata(path) {
        if !metadata.is_file() {
            let kind = if metadata.is_symlink() {
                "a symbolic link"
            } else if metadata.is_dir() {
                "a directory"
            } else {
                "neither a regular file, a character device nor a FIFO"
            };
            return Err(Error::io(
                "will not replace",
                path,
                std::io::Error::other(format!(
                    "it is {kind}; parabyte writes regular files, devices and FIFOs, never through links"
                )),
            ));
        }
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    check_writable(parent.unwrap_or(Path::new(".")), path)?;
    Ok(Target::File(FilePath::at(path)))
}

/// `cp s3://b/dir/file DEST`: DEST itself, or DEST/file when DEST is a directory, where the
/// key's last segment must be a plain file name (not `..`, which would leave DEST).
pub(super) fn single_object_path(
    destination: &Path,
    key: &str,
) -> std::result::Result<PathBuf, String> {
    let is_directory =
        destination.as_os_str().to_string_lossy().ends_with('/') || destination.is_dir();
    if is_directory {
        let name = key.rsplit('/').next().unwrap_or(key);
        relative_path(name).map(|name| destination.join(name))
    } else {
        Ok(destination.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_object_lands_in_a_directory_or_at_a_path() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            single_object_path(dir.path(), "x/y/model.bin"),
            Ok(dir.path().join("model.bin"))
        );
        assert_eq!(
            single_object_path(Path::new("new/"), "x/model.bin"),
            Ok(PathBuf::from("new/model.bin"))
        );
        assert_eq!(
            single_object_path(Path::new("out.bin"), "x/model.bin"),
            Ok(PathBuf::from("out.bin"))
        );
        for key in ["x/..", "x/."] {
            assert!(single_object_path(dir.path(), key).is_err(), "{key}");
        }
    }
}
