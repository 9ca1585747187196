//! The record that lets the next run of the same command resume a multipart upload: one
//! small file per upload under the user's state directory, named by a hash of where the
//! upload goes from and to (the source file's path, the destination, the part size),
//! holding the file's size and modification time when it began and the upload ID. An
//! upload is only ever resumed from a file of the same size and time (a file changed since
//! gets a new upload, and the old one is aborted); the store (ListParts) confirms the
//! upload, and each kept part's CRC is checked against the file's bytes again.

use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::disk::source_file::Stamp;

/// The longest upload ID read back from a record (S3's are about 100 characters).
const MAX_UPLOAD_ID: usize = 1024;

/// Where one upload's record lives.
#[derive(Debug, Clone)]
pub(crate) struct UploadRecord {
    path: PathBuf,
}

impl UploadRecord {
    /// The record of uploading `source` to `destination` in parts of `part_size`; `None`
    /// when there is no state directory to keep it in.
    pub(crate) fn new(source: &Path, destination: &str, part_size: u64) -> Option<UploadRecord> {
        let directory = state_directory()?;
        let source = std::path::absolute(source).ok()?;
        let mut hash = Sha256::new();
        hash.update(source.as_os_str().as_encoded_bytes());
        for field in [destination.to_owned(), part_size.to_string()] {
            hash.update([0]);
            hash.update(field.as_bytes());
        }
        let name = format!("{}.upload", hex::encode(&hash.finalize()[..16]));
        Some(UploadRecord {
            path: directory.join(name),
        })
    }

    /// The upload an earlier run recorded: its ID, and whether it was of the file as
    /// `stamp` describes it now.
    pub(crate) fn read(&self, stamp: &Stamp) -> Option<(String, bool)> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let (version, id) = text.trim().split_once(' ')?;
        let plausible = !id.is_empty() && id.len() <= MAX_UPLOAD_ID;
        let id = (plausible && id.bytes().all(|b| b.is_ascii_graphic())).then(|| id.to_owned())?;
        Some((id, version == stamp.version()))
    }

    /// Record `upload_id` of the file as `stamp` describes it (written whole, then renamed,
    /// so a killed run leaves no half).
    pub(crate) fn write(&self, stamp: &Stamp, upload_id: &str) -> io::Result<()> {
        if let Some(directory) = self.path.parent() {
            std::fs::create_dir_all(directory)?;
        }
        let partial = self.path.with_extension("partial");
        std::fs::write(&partial, format!("{} {upload_id}", stamp.version()))?;
        std::fs::rename(&partial, &self.path)
    }

    /// The upload completed or was aborted: nothing to resume.
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `$PARABYTE_STATE_DIR`, else `$XDG_STATE_HOME/parabyte/uploads`, else
/// `~/.local/state/parabyte/uploads`.
fn state_directory() -> Option<PathBuf> {
    let named = |variable| std::env::var_os(variable).filter(|value| !value.is_empty());
    if let Some(directory) = named("PARABYTE_STATE_DIR") {
        return Some(PathBuf::from(directory));
    }
    let state = named("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| named("HOME").map(|home| PathBuf::from(home).join(".local/state")))?;
    Some(state.join("parabyte/uploads"))
}
