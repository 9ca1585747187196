//! The seam between "talk to a store" and "move bytes": [`Store`], the operations of an
//! object store as parabyte uses them. The engine, the listing workers and the planners see
//! a store only through it, so each runs against S3, a web server or the in-memory fake
//! alike. Writes (put with conditions, multipart, server-side copy, batch delete) join the
//! trait with their first caller; a store that lacks an operation answers it with
//! [`Error::Unsupported`], never a panic.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use bytes::Bytes;
use futures::Stream;

use crate::checksum::StoreChecksum;
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::ranges::ByteRange;
use crate::source::listing::page::{ListPage, ListQuery, PageSink};
use crate::source::write_body::WriteBody;
use crate::validator::Validator;

/// An operation a store may lack, as [`Error::Unsupported`] names it. Every store reads
/// objects; the others are the trait's default methods, which answer with that error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// One page of the keys under a prefix (ListObjectsV2).
    List,
    /// What the store keeps about one version of an object (a HEAD).
    Describe,
    /// Objects written: PutObject and the multipart upload requests.
    Write,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::List => "list keys",
            Operation::Describe => "describe objects",
            Operation::Write => "store objects",
        })
    }
}

/// A response body, chunk by chunk.
pub(crate) type Body = Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>;

/// What a GET answered about the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// 206, or a 200 whose Content-Range names a part (`rclone serve s3` answers so): this
    /// range of an object of `total` bytes.
    Partial { range: ByteRange, total: u64 },
    /// 200 without a Content-Range, or with one that names the whole object: the whole
    /// object (the server ignored Range, or none was sent). No length when it is chunked.
    Whole { length: Option<u64> },
    /// 416 to a range starting at 0: the object is empty.
    Empty,
}

/// A response whose headers have arrived; the body is still on the wire.
pub(crate) struct Fetched {
    pub shape: Shape,
    /// The version this response is of. Later ranges are pinned to it.
    pub validator: Option<Validator>,
    /// The object answered from another address (a redirect): later ranges go there.
    pub moved_to: Option<ObjectUrl>,
    /// The object's checksum, when the store sent one with this response (S3 does with a GET
    /// of the whole object).
    pub checksum: Option<StoreChecksum>,
    /// The MD5 of the whole object, when the ETag is one.
    pub content_md5: Option<[u8; 16]>,
    /// Its Last-Modified date: the downloaded file's modification time, unless
    /// `file_time` gives one.
    pub modified: Option<SystemTime>,
    /// The modification time of the file it was uploaded from, as the upload stored it
    /// (`x-amz-meta-mtime`, parabyte's and rclone's key): the downloaded file gets it back.
    pub file_time: Option<SystemTime>,
    pub body: Body,
}

/// What a HEAD said about one version of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Described {
    /// The checksum the store keeps for the object, whole or composite.
    pub checksum: Option<StoreChecksum>,
    /// The MD5 of the whole object, when the ETag is one.
    pub content_md5: Option<[u8; 16]>,
    /// For a HEAD of one upload part: where that part lies in the object.
    pub part: Option<ByteRange>,
    /// What the object is stored and served with besides its bytes.
    pub headers: StoredHeaders,
}

/// The headers an object is stored and served with: what a copy in parts must give its
/// copy, since only a one-request copy keeps them by itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StoredHeaders {
    pub content_type: Option<String>,
    pub cache_control: Option<String>,
    pub content_disposition: Option<String>,
    pub content_encoding: Option<String>,
    pub content_language: Option<String>,
    /// `x-amz-meta-NAME`, names in lower case.
    pub metadata: Vec<(String, String)>,
}

/// What an object is stored with, beyond its bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WriteOptions {
    /// Write only where no object is (`If-None-Match: *`): an existing key answers
    /// [`Error::Exists`], even when another writer got there first.
    pub no_clobber: bool,
    /// `Content-Type`; the store's default when `None`.
    pub content_type: Option<String>,
    /// Without a `content_type`, the uploader names one from each file's extension.
    pub guess_content_type: bool,
    /// `Cache-Control`, `Content-Encoding`, `Content-Disposition`, `Content-Language`:
    /// kept and served back with the object.
    pub cache_control: Option<String>,
    pub content_encoding: Option<String>,
    pub content_disposition: Option<String>,
    pub content_language: Option<String>,
    /// `x-amz-storage-class` (STANDARD, STANDARD_IA, GLACIER_IR, ...).
    pub storage_class: Option<String>,
    /// Server-side encryption, when asked for.
    pub encryption: Option<Encryption>,
    /// User metadata (`x-amz-meta-NAME`), names in lower case.
    pub metadata: Vec<(String, String)>,
    /// A multipart upload that asks for no checksum: a copy in parts, whose parts stores
    /// cannot all checksum (MinIO refuses such a part, moto names no CRC for it, versitygw
    /// wrong ones), so the store's own checksum, if any, stands for the object.
    pub without_checksum: bool,
}

impl WriteOptions {
    /// These options, with what `kept` stores for each header they leave unset: a copy
    /// keeps its source's headers unless told otherwise.
    pub(crate) fn keeping(&self, kept: &StoredHeaders) -> WriteOptions {
        let or = |mine: &Option<String>, theirs: &Option<String>| mine.clone().or(theirs.clone());
        WriteOptions {
            content_type: or(&self.content_type, &kept.content_type),
            cache_control: or(&self.cache_control, &kept.cache_control),
            content_disposition: or(&self.content_disposition, &kept.content_disposition),
            content_encoding: or(&self.content_encoding, &kept.content_encoding),
            content_language: or(&self.content_language, &kept.content_language),
            metadata: match self.metadata.is_empty() {
                true => kept.metadata.clone(),
                false => self.metadata.clone(),
            },
            ..self.clone()
        }
    }
}

/// Server-side encryption of a stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encryption {
    /// SSE-S3: the store's own keys (`AES256`).
    Aes256,
    /// SSE-KMS.
    Kms {
        /// The KMS key (ID, ARN or alias); the store's default one when `None`.
        key_id: Option<String>,
    },
}

/// What a store said of an object it stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Written {
    /// The new version's ETag.
    pub etag: Option<String>,
    /// The whole-object CRC64NVME the store computed, when it says (it must equal the one sent).
    pub crc64nvme: Option<u64>,
    /// Sent with Content-MD5 (the store refused checksum headers), which the store checked.
    pub md5_checked: bool,
}

/// One part of a multipart upload, as the store took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadedPart {
    /// From 1.
    pub number: u32,
    /// The ETag the store gave it, which the complete names it by.
    pub etag: String,
    /// The CRC64NVME of its bytes, sent with it and given back on completion.
    pub crc64nvme: u64,
}

/// One part an unfinished multipart upload holds, as ListParts tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListedPart {
    pub number: u32,
    pub etag: String,
    pub size: u64,
    /// Its CRC64NVME, when the store keeps one.
    pub crc64nvme: Option<u64>,
}

/// Something that holds objects: S3, a web server, the in-memory fake.
pub(crate) trait Store: Send + Sync + 'static {
    /// How this store names an object.
    type Object: Sync;

    /// What the store is, for messages: "S3", "a web server".
    fn name(&self) -> &'static str;

    /// The error for an operation this store lacks.
    fn unsupported(&self, operation: Operation) -> Error {
        Error::Unsupported {
            store: self.name(),
            operation: operation.to_string(),
        }
    }

    /// How reports and messages name `object` as a destination: its URL, or for a
    /// directory the file it is written to.
    fn destination_name(&self, object: &S3Url) -> String {
        object.to_string()
    }

    /// Whether an object it reads can be copied to a key it writes without the bytes
    /// passing through parabyte (CopyObject, UploadPartCopy): not when reads go to another
    /// endpoint or account than writes.
    fn copies_inside(&self) -> bool {
        true
    }

    /// GET `range` of `object` (the whole object when `None`), pinned to the version
    /// `pinned` names (with its [`Validator::precondition`]) when given.
    fn get(
        &self,
        object: &Self::Object,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> impl Future<Output = Result<Fetched>> + Send;

    /// What the store keeps about `object` (or one part of its multipart upload,
    /// `part_number` from 1), pinned to `pinned` when given: the checksum a ranged GET never
    /// carries. Unpinned, the answer's validator is not compared (moto answers a part HEAD
    /// with the part's own ETag).
    /// `None` when the store keeps nothing a GET did not already say, as web servers do,
    /// which costs no request.
    fn describe(
        &self,
        _object: &Self::Object,
        _pinned: Option<&Validator>,
        _part_number: Option<u32>,
    ) -> impl Future<Output = Result<Option<Described>>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Describe)))
    }

    /// One page of the keys `query` asks for, streamed through `sink` as it arrives; the
    /// rest of the page (prefixes, the token, objects not yet handed on) is returned.
    fn list_page(
        &self,
        _query: &ListQuery<'_>,
        _sink: PageSink<'_>,
    ) -> impl Future<Output = Result<ListPage>> + Send {
        std::future::ready(Err(self.unsupported(Operation::List)))
    }

    /// Store `body` as `object` in one request, with its CRC64NVME for the store to check.
    fn put(
        &self,
        _object: &S3Url,
        _body: WriteBody,
        _crc64nvme: u64,
        _options: &WriteOptions,
    ) -> impl Future<Output = Result<Written>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }

    /// Begin a multipart upload whose parts carry CRC64NVMEs and whose object keeps a
    /// whole-object (FULL_OBJECT) CRC64NVME; returns its upload ID.
    fn create_upload(
        &self,
        _object: &S3Url,
        _options: &WriteOptions,
    ) -> impl Future<Output = Result<String>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }

    /// Send part `number` (from 1) of an upload, with its CRC64NVME.
    fn upload_part(
        &self,
        _object: &S3Url,
        _upload_id: &str,
        _number: u32,
        _body: WriteBody,
        _crc64nvme: u64,
    ) -> impl Future<Output = Result<UploadedPart>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }

    /// Join `parts` (in order) into the object, whose whole CRC64NVME is `crc64nvme`. A
    /// store that answers success with an error inside fails here.
    fn complete_upload(
        &self,
        _object: &S3Url,
        _upload_id: &str,
        _parts: &[UploadedPart],
        _crc64nvme: u64,
        _options: &WriteOptions,
    ) -> impl Future<Output = Result<Written>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }

    /// Copy `from` (a whole object of up to 5 GiB, the version `pinned` names) to `to`
    /// inside the store, with a new FULL_OBJECT CRC64NVME the store computes: no byte
    /// passes through parabyte.
    fn copy_object(
        &self,
        _from: &S3Url,
        _pinned: Option<&Validator>,
        _to: &S3Url,
        _options: &WriteOptions,
    ) -> impl Future<Output = Result<Written>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }

    /// Part `number` of an upload to `to`, copied inside the store from `range` of `from`
    /// (pinned to the version `pinned` names); the store gives its CRC64NVME.
    fn upload_part_copy(
        &self,
        _from: &S3Url,
        _pinned: Option<&Validator>,
        _range: ByteRange,
        _to: &S3Url,
        _upload_id: &str,
        _number: u32,
    ) -> impl Future<Output = Result<UploadedPart>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }

    /// The parts an unfinished upload holds so far, in order (`None`: the store knows no
    /// such upload, it was completed or aborted).
    fn list_parts(
        &self,
        _object: &S3Url,
        _upload_id: &str,
    ) -> impl Future<Output = Result<Option<Vec<ListedPart>>>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }

    /// What is stored under a key the store writes (one HEAD), `None` when nothing is:
    /// what `--no-clobber` looks at before writing (stores that ignore `If-None-Match`
    /// replace what is there), and what a commit whose answer was lost looks at. A store
    /// whose writes refuse to replace by themselves and commit without an answer to lose
    /// (a directory: a rename that never replaces) need not look, and answers
    /// `Unsupported` as stores that cannot write do.
    fn look(&self, _object: &S3Url) -> impl Future<Output = Result<Option<Described>>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Describe)))
    }

    /// Delete `keys` of `bucket` (at most 1,000) in one request; the keys the store could
    /// not delete, each with why. A key that is not there counts as deleted, as in S3.
    fn delete_objects(
        &self,
        _bucket: &str,
        _keys: &[String],
    ) -> impl Future<Output = Result<Vec<(String, Error)>>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }

    /// Throw an upload's parts away: nothing of it stays in the store.
    fn abort_upload(
        &self,
        _object: &S3Url,
        _upload_id: &str,
    ) -> impl Future<Output = Result<()>> + Send {
        std::future::ready(Err(self.unsupported(Operation::Write)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that can only read: what every operation beyond `get` answers by default.
    struct ReadOnly;

    impl Store for ReadOnly {
        type Object = ();

        fn name(&self) -> &'static str {
            "a read-only store"
        }

        async fn get(
            &self,
            _: &(),
            _: Option<ByteRange>,
            _: Option<&Validator>,
        ) -> Result<Fetched> {
            Err(Error::InvalidInput("not in this test".into()))
        }
    }

    #[tokio::test]
    async fn an_operation_a_store_lacks_is_a_typed_error_naming_both() {
        let pinned = Validator::ETag("\"e\"".into());
        let error = ReadOnly
            .describe(&(), Some(&pinned), None)
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Unsupported { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            "a read-only store cannot describe objects; use a store that can, or leave out what needs it"
        );
        assert!(error.is_fatal(), "every object would meet it alike");
        assert!(!error.is_retryable());
    }
}
