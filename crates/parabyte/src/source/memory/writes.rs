//! Writes to the in-memory store, taken as S3 takes them: a PUT's body must match the
//! CRC64NVME it came with, a multipart upload's parts theirs and the complete the whole
//! object's; `If-None-Match: *` refuses an existing key; an aborted upload leaves nothing.
//! The fault script picks writes by kind (and a part by its number).

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use md5::{Digest as _, Md5};

use super::script::{answer_for, Answer, Request};
use super::{MemoryStore, Stored};
use crate::checksum::{crc64nvme, crc64nvme_after, Crc, FullChecksum, StoreChecksum};
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::{ListedPart, StoredHeaders, UploadedPart, WriteBody, WriteOptions, Written};
use crate::validator::Validator;

/// A multipart upload begun and not yet completed or aborted.
#[derive(Debug, Clone)]
pub(super) struct Upload {
    url: String,
    /// By part number: its bytes and ETag.
    parts: BTreeMap<u32, (Bytes, String)>,
}

impl MemoryStore {
    /// The uploads begun and neither completed nor aborted: orphans, after a run.
    pub(crate) fn open_uploads(&self) -> usize {
        self.lock().uploads.len()
    }

    /// The write requests received, by kind, in order.
    pub(crate) fn writes(&self) -> Vec<Request> {
        self.lock().writes.clone()
    }

    /// The DeleteObjects requests so far: how many keys each named.
    pub(crate) fn delete_requests(&self) -> Vec<usize> {
        self.lock().delete_requests.clone()
    }

    /// The checksum the object at `url` keeps.
    pub(crate) fn checksum_of(&self, url: &str) -> Option<StoreChecksum> {
        let state = self.lock();
        state
            .objects
            .get(url)
            .and_then(|object| object.keeps.map(|(kept, _)| kept))
    }

    /// The bytes of the object at `url`, if there is one.
    pub(crate) fn data_of(&self, url: &str) -> Option<Bytes> {
        self.lock()
            .objects
            .get(url)
            .map(|object| object.data.clone())
    }

    /// The scripted answer to a write, after recording it; its failure, if scripted.
    fn receive(&self, request: Request, url: &str, number: Option<u32>) -> Result<()> {
        self.received(request, url, number).map(drop)
    }

    /// The write recorded and its scripted answer, or the failure it scripts.
    fn received(&self, request: Request, url: &str, number: Option<u32>) -> Result<Answer> {
        let mut state = self.lock();
        state.writes.push(request);
        let answer = answer_for(&mut state.script, request, url, number.map(u64::from));
        match answer.fail {
            Some(error) => Err(error()),
            None => Ok(answer),
        }
    }

    pub(super) async fn answer_put(
        &self,
        object: &S3Url,
        body: WriteBody,
        crc: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        let url = object.to_string();
        self.receive(Request::Put, &url, None)?;
        let body = body.collect().await?;
        check_body(&format!("PUT {url}"), &body, crc)?;
        let etag = format!("\"{}\"", hex::encode(Md5::digest(&body)));
        self.store_object(&url, body, etag, crc, options)
    }

    pub(super) fn answer_create(&self, object: &S3Url) -> Result<String> {
        let url = object.to_string();
        self.receive(Request::Create, &url, None)?;
        let mut state = self.lock();
        state.uploads_begun += 1;
        let id = format!("upload-{}", state.uploads_begun);
        state.uploads.insert(
            id.clone(),
            Upload {
                url,
                parts: BTreeMap::new(),
            },
        );
        Ok(id)
    }

    pub(super) async fn answer_part(
        &self,
        object: &S3Url,
        upload_id: &str,
        number: u32,
        body: WriteBody,
        crc: u64,
    ) -> Result<UploadedPart> {
        let url = object.to_string();
        let what = format!("UploadPart {url} part {number}");
        self.receive(Request::Part, &url, Some(number))?;
        let body = body.collect().await?;
        check_body(&what, &body, crc)?;
        let etag = format!("\"{}\"", hex::encode(Md5::digest(&body)));
        let mut state = self.lock();
        let upload = upload_of(&mut state.uploads, upload_id, &url, &what)?;
        upload.parts.insert(number, (body, etag.clone()));
        Ok(UploadedPart {
            number,
            etag,
            crc64nvme: crc,
        })
    }

    pub(super) fn answer_complete(
        &self,
        object: &S3Url,
        upload_id: &str,
        parts: &[UploadedPart],
        crc: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        let url = object.to_string();
        let what = format!("CompleteMultipartUpload {url}");
        let answer = self.received(Request::Complete, &url, None)?;
        let mut data = BytesMut::new();
        let mut whole = 0;
        {
            let mut state = self.lock();
            let upload = upload_of(&mut state.uploads, upload_id, &url, &what)?;
            for (index, part) in parts.iter().enumerate() {
                let Some((bytes, etag)) = upload.parts.get(&part.number) else {
                    return Err(invalid_part(&what, part.number, "was never uploaded"));
                };
                let crc_named = options.without_checksum || crc64nvme(bytes) == part.crc64nvme;
                if *etag != part.etag || !crc_named {
                    return Err(invalid_part(&what, part.number, "is not the one named"));
                }
                whole = match index {
                    0 => part.crc64nvme,
                    _ => crc64nvme_after(whole, part.crc64nvme, bytes.len() as u64),
                };
                data.extend_from_slice(bytes);
            }
        }
        if whole != crc && !options.without_checksum {
            return Err(Error::Corrupt {
                what,
                detail: "400 BadDigest: the parts' CRC64NVME is not the one sent".into(),
            });
        }
        let etag = format!("\"{}-{}\"", hex::encode(Md5::digest(&data)), parts.len());
        // Asked for none, the store keeps one of its own, as S3 does (CRC64NVME).
        let crc = match options.without_checksum {
            true => crc64nvme(&data),
            false => crc,
        };
        let written = self.store_object(&url, data.freeze(), etag, crc, options)?;
        self.lock().uploads.remove(upload_id);
        if answer.break_after.is_some() {
            return Err(Error::Network {
                what,
                detail: "the connection closed before the answer".into(),
            });
        }
        Ok(written)
    }

    pub(super) fn answer_copy(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        to: &S3Url,
        options: &WriteOptions,
    ) -> Result<Written> {
        let url = to.to_string();
        let what = format!("CopyObject {from}");
        let answer = self.received(Request::Copy, &url, None)?;
        let (mut data, headers) = self.copy_source(from, pinned, &what)?;
        if let Some((copied, _)) = answer.replace {
            // A store that copies other bytes than the source's, and says so in its answer.
            data = copied;
        }
        let etag = format!("\"{}\"", hex::encode(Md5::digest(&data)));
        let crc = crc64nvme(&data);
        // As S3's `x-amz-metadata-directive: COPY`: the source's headers are kept.
        let options = WriteOptions {
            metadata: headers.metadata.clone(),
            ..options.keeping(&headers)
        };
        self.store_object(&url, data, etag, crc, &options)
    }

    /// A copy's source as it is now, or what S3 answers instead: 404 when it is not there,
    /// 412 when it is not the version `pinned` names.
    fn copy_source(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        what: &str,
    ) -> Result<(Bytes, StoredHeaders)> {
        let state = self.lock();
        let source = state
            .objects
            .get(&from.to_string())
            .ok_or_else(|| Error::NotFound {
                what: what.to_owned(),
                detail: "404 NoSuchKey".into(),
            })?;
        let now = source.validator.as_ref();
        if pinned.is_some_and(|pinned| !now.is_some_and(|now| pinned.matches(now))) {
            return Err(Error::Changed {
                what: what.to_owned(),
                detail: "412 PreconditionFailed".into(),
            });
        }
        Ok((source.data.clone(), source.headers.clone()))
    }

    pub(super) fn answer_part_copy(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        range: ByteRange,
        to: &S3Url,
        upload_id: &str,
        number: u32,
    ) -> Result<UploadedPart> {
        let url = to.to_string();
        let what = format!("UploadPartCopy {from} {range} part {number}");
        self.receive(Request::PartCopy, &url, Some(number))?;
        let (data, _) = self.copy_source(from, pinned, &what)?;
        if range.end >= data.len() as u64 {
            return Err(invalid_part(
                &what,
                number,
                "asks for bytes past the source's end",
            ));
        }
        let bytes = data.slice(range.start as usize..=range.end as usize);
        let etag = format!("\"{}\"", hex::encode(Md5::digest(&bytes)));
        let crc = crc64nvme(&bytes);
        let mut state = self.lock();
        let upload = upload_of(&mut state.uploads, upload_id, &url, &what)?;
        upload.parts.insert(number, (bytes, etag.clone()));
        Ok(UploadedPart {
            number,
            etag,
            crc64nvme: crc,
        })
    }

    pub(super) fn answer_list_parts(
        &self,
        object: &S3Url,
        upload_id: &str,
    ) -> Result<Option<Vec<ListedPart>>> {
        let url = object.to_string();
        self.receive(Request::ListParts, &url, None)?;
        let state = self.lock();
        let Some(upload) = state.uploads.get(upload_id).filter(|u| u.url == url) else {
            return Ok(None);
        };
        let parts = upload
            .parts
            .iter()
            .map(|(number, (bytes, etag))| ListedPart {
                number: *number,
                etag: etag.clone(),
                size: bytes.len() as u64,
                crc64nvme: Some(crc64nvme(bytes)),
            });
        Ok(Some(parts.collect()))
    }

    pub(super) fn answer_delete(
        &self,
        bucket: &str,
        keys: &[String],
    ) -> Result<Vec<(String, Error)>> {
        self.lock().delete_requests.push(keys.len());
        let mut refused = Vec::new();
        for key in keys {
            let url = format!("s3://{bucket}/{key}");
            // Scripted per key: a failure is that key's, as S3 lists it in the answer.
            match self.receive(Request::Delete, &url, None) {
                Err(error) => refused.push((key.clone(), error)),
                Ok(()) => {
                    self.lock().objects.remove(&url);
                }
            }
        }
        Ok(refused)
    }

    pub(super) fn answer_abort(&self, object: &S3Url, upload_id: &str) -> Result<()> {
        let url = object.to_string();
        self.receive(Request::Abort, &url, None)?;
        self.lock().uploads.remove(upload_id);
        Ok(())
    }

    /// Store an object, unless `no_clobber` and one is there.
    fn store_object(
        &self,
        url: &str,
        data: Bytes,
        etag: String,
        crc: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        let mut state = self.lock();
        if options.no_clobber && state.objects.contains_key(url) {
            return Err(Error::Exists {
                what: url.to_owned(),
            });
        }
        let checksum = FullChecksum {
            algorithm: Crc::Crc64Nvme,
            value: crc,
        };
        let size = data.len() as u64;
        state.objects.insert(
            url.to_owned(),
            Stored {
                data,
                validator: Some(Validator::ETag(etag.clone())),
                modified: None,
                // What S3 sends back as `x-amz-meta-mtime`.
                file_time: options
                    .metadata
                    .iter()
                    .find(|(name, _)| name == "mtime")
                    .and_then(|(_, value)| crate::timestamp::parse_file_time(value)),
                keeps: Some((StoreChecksum::Full(checksum), size)),
                own_part_etags: false,
                headers: stored_headers(options),
            },
        );
        Ok(Written {
            etag: Some(etag),
            crc64nvme: Some(crc),
            md5_checked: false,
        })
    }
}

/// S3 refuses a body whose CRC is not the one in its header (400 BadDigest).
fn check_body(what: &str, body: &[u8], crc: u64) -> Result<()> {
    match crc64nvme(body) == crc {
        true => Ok(()),
        false => Err(Error::Corrupt {
            what: what.to_owned(),
            detail: "400 BadDigest: the body is not the CRC64NVME sent".into(),
        }),
    }
}

/// The headers `options` store an object with.
fn stored_headers(options: &WriteOptions) -> StoredHeaders {
    StoredHeaders {
        content_type: options.content_type.clone(),
        cache_control: options.cache_control.clone(),
        content_disposition: options.content_disposition.clone(),
        content_encoding: options.content_encoding.clone(),
        content_language: options.content_language.clone(),
        metadata: options.metadata.clone(),
    }
}

fn upload_of<'a>(
    uploads: &'a mut BTreeMap<String, Upload>,
    id: &str,
    url: &str,
    what: &str,
) -> Result<&'a mut Upload> {
    uploads
        .get_mut(id)
        .filter(|upload| upload.url == url)
        .ok_or_else(|| Error::NotFound {
            what: what.to_owned(),
            detail: "404 NoSuchUpload".into(),
        })
}

fn invalid_part(what: &str, number: u32, why: &str) -> Error {
    Error::Http {
        what: what.to_owned(),
        status: 400,
        detail: format!("400 InvalidPart: part {number} {why}"),
    }
}
