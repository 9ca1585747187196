//! A local directory as a destination: the write side of [`LocalStore`]. A key becomes a
//! path below the root only through `disk/`'s gates: a key that is not plain names joined by
//! `/` is refused, directories are entered without following links, and only a regular
//! file is ever replaced, by a rename. A body's bytes are checked against the CRC64NVME sent
//! with them before anything takes the final name, as S3 checks them; a failed or aborted
//! write leaves nothing behind.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;

use super::LocalStore;
use crate::checksum::{self, crc64nvme_after, Crc};
use crate::disk::blocking::blocking;
use crate::disk::paths::relative_path;
use crate::disk::sink::{FilePath, StagedFile};
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::source::store::{ListedPart, UploadedPart, WriteOptions, Written};
use crate::source::write_body::WriteBody;

/// The multipart uploads a directory store has open, by upload ID.
pub(super) type Uploads = Arc<Mutex<BTreeMap<String, Upload>>>;

/// One multipart upload into a file: the parts it holds so far, each in a hidden file.
#[derive(Debug)]
pub(super) struct Upload {
    path: FilePath,
    /// `--no-clobber`'s: never over a file already there.
    replace: bool,
    parts: BTreeMap<u32, Part>,
}

#[derive(Debug)]
struct Part {
    file: Arc<StagedFile>,
    length: u64,
    crc64nvme: u64,
}

/// Upload IDs given by this process; with its ID, no two runs give the same one.
static UPLOADS_OPENED: AtomicU64 = AtomicU64::new(0);

impl LocalStore {
    /// How messages name the file `object`'s key stands for.
    pub(super) fn file_name_of(&self, object: &S3Url) -> String {
        self.root.join(&object.key).display().to_string()
    }

    /// Where `object`'s key lands, or why it cannot.
    fn file_of(&self, object: &S3Url) -> Result<FilePath> {
        let relative = relative_path(&object.key).map_err(|why| {
            Error::InvalidInput(format!(
                "{}: cannot be written below {} because {why}",
                object.key,
                self.root.display()
            ))
        })?;
        Ok(FilePath::below(&self.root, &relative))
    }

    pub(super) async fn put_file(
        &self,
        object: &S3Url,
        body: WriteBody,
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        let path = self.file_of(object)?;
        let length = body.length();
        let opened = path.clone();
        let staged = blocking(move || StagedFile::object(&opened, length)).await?;
        let crc = receive(&staged, &body, &path).await?;
        check_crc(&path, crc, crc64nvme)?;
        let replace = !options.no_clobber;
        blocking(move || staged.commit(replace)).await?;
        Ok(written(crc))
    }

    pub(super) async fn open_upload(
        &self,
        object: &S3Url,
        options: &WriteOptions,
    ) -> Result<String> {
        let path = self.file_of(object)?;
        // Refused now rather than after every part: a name that is a link, a FIFO or a
        // directory, or one that `--no-clobber` keeps.
        let (checked, replace) = (path.clone(), !options.no_clobber);
        blocking(move || StagedFile::check_destination(&checked, replace)).await?;
        let id = format!(
            "{}-{}",
            std::process::id(),
            UPLOADS_OPENED.fetch_add(1, Ordering::Relaxed)
        );
        let upload = Upload {
            path,
            replace,
            parts: BTreeMap::new(),
        };
        self.uploads().insert(id.clone(), upload);
        Ok(id)
    }

    pub(super) async fn write_part(
        &self,
        upload_id: &str,
        number: u32,
        body: WriteBody,
        crc64nvme: u64,
    ) -> Result<UploadedPart> {
        // A part sent again replaces the one before it, as S3's does: that one goes first,
        // since it holds the lock on the part's file.
        let (path, earlier) = self.upload(upload_id, |upload| {
            (upload.path.clone(), upload.parts.remove(&number))
        })?;
        let opened = path.clone();
        let staged = blocking(move || {
            drop(earlier);
            StagedFile::part(&opened, number)
        })
        .await?;
        let crc = receive(&staged, &body, &path).await?;
        check_crc(&path, crc, crc64nvme)?;
        let part = Part {
            file: Arc::new(staged),
            length: body.length(),
            crc64nvme: crc,
        };
        self.upload(upload_id, |upload| upload.parts.insert(number, part))?;
        Ok(UploadedPart {
            number,
            etag: part_etag(crc),
            crc64nvme: crc,
        })
    }

    pub(super) async fn join_upload(
        &self,
        upload_id: &str,
        parts: &[UploadedPart],
        crc64nvme: u64,
    ) -> Result<Written> {
        // The parts asked for, in their order, as this upload holds them.
        let (path, replace, chosen) = self.upload(upload_id, |upload| {
            let chosen: Vec<Option<(Arc<StagedFile>, u64, u64)>> = parts
                .iter()
                .map(|asked| {
                    let held = upload.parts.get(&asked.number);
                    held.filter(|part| part_etag(part.crc64nvme) == asked.etag)
                        .map(|part| (part.file.clone(), part.length, part.crc64nvme))
                })
                .collect();
            (upload.path.clone(), upload.replace, chosen)
        })?;
        let mut joined = Vec::with_capacity(parts.len());
        let mut whole = None;
        for (asked, held) in parts.iter().zip(chosen) {
            let (file, length, crc) = held.ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{}: the upload holds no part {} with ETag {}",
                    path.display(),
                    asked.number,
                    asked.etag
                ))
            })?;
            whole = Some(match whole {
                None => crc,
                Some(before) => crc64nvme_after(before, crc, length),
            });
            joined.push((file, length));
        }
        let whole = whole.unwrap_or_else(|| checksum::crc64nvme(&[]));
        check_crc(&path, whole, crc64nvme)?;
        let target = path.clone();
        blocking(move || {
            let parts: Vec<(&StagedFile, u64)> = joined
                .iter()
                .map(|(file, length)| (&**file, *length))
                .collect();
            StagedFile::join(&target, &parts, replace)
        })
        .await?;
        // The part files go with the upload.
        self.uploads().remove(upload_id);
        Ok(written(whole))
    }

    pub(super) fn held_parts(&self, upload_id: &str) -> Option<Vec<ListedPart>> {
        let uploads = self.uploads();
        let upload = uploads.get(upload_id)?;
        let listed = upload
            .parts
            .iter()
            .map(|(number, part)| ListedPart {
                number: *number,
                etag: part_etag(part.crc64nvme),
                size: part.length,
                crc64nvme: Some(part.crc64nvme),
            })
            .collect();
        Some(listed)
    }

    /// Drop an upload and the files of its parts.
    pub(super) fn drop_upload(&self, upload_id: &str) {
        let gone = self.uploads().remove(upload_id);
        if let Some(upload) = gone {
            // Removing files is work for the blocking pool, not the runtime's threads.
            tokio::task::spawn_blocking(move || drop(upload));
        }
    }

    fn uploads(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Upload>> {
        self.uploads.lock().expect("uploads poisoned")
    }

    /// `look` at the open upload `upload_id`, or the error for one there is not.
    fn upload<T>(&self, upload_id: &str, look: impl FnOnce(&mut Upload) -> T) -> Result<T> {
        let mut uploads = self.uploads();
        let upload = uploads.get_mut(upload_id).ok_or_else(|| Error::NotFound {
            what: format!("upload {upload_id} into {}", self.root.display()),
            detail: "no such upload: it was completed or aborted".into(),
        })?;
        Ok(look(upload))
    }
}

/// Write `body` into `staged` as it arrives; the CRC64NVME of what came. A body longer or
/// shorter than it said is refused.
async fn receive(staged: &StagedFile, body: &WriteBody, path: &FilePath) -> Result<u64> {
    let length = body.length();
    let mut chunks = body.open();
    let (mut offset, mut crc) = (0u64, Crc::Crc64Nvme.digest());
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if offset + chunk.len() as u64 > length {
            return Err(short_or_long(path, length, "more"));
        }
        staged.write_at(&chunk, offset)?;
        crc.update(&chunk);
        offset += chunk.len() as u64;
    }
    if offset < length {
        return Err(short_or_long(path, length, "fewer"));
    }
    Ok(crc.finalize())
}

fn short_or_long(path: &FilePath, length: u64, which: &str) -> Error {
    Error::Protocol {
        what: path.display().to_string(),
        detail: format!("its body gave {which} than the {length} bytes it announced"),
    }
}

/// The bytes that arrived must be the ones whose CRC64NVME was sent with them.
fn check_crc(path: &FilePath, received: u64, sent: u64) -> Result<()> {
    match received == sent {
        true => Ok(()),
        false => Err(Error::Corrupt {
            what: path.display().to_string(),
            detail: format!(
                "the bytes received have CRC64NVME {received:016x}, the writer sent {sent:016x}"
            ),
        }),
    }
}

fn written(crc64nvme: u64) -> Written {
    Written {
        etag: Some(format!("\"{crc64nvme:016x}\"")),
        crc64nvme: Some(crc64nvme),
        md5_checked: false,
    }
}

fn part_etag(crc64nvme: u64) -> String {
    format!("\"{crc64nvme:016x}\"")
}

#[cfg(test)]
mod tests;
