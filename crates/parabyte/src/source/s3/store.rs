//! The S3 store behind the [`Store`] seam: each operation is its own file.

use super::S3Store;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::listing::{ListPage, ListQuery, PageSink};
use crate::source::{
    Described, Fetched, ListedPart, Store, UploadedPart, WriteBody, WriteOptions, Written,
};
use crate::validator::Validator;

impl Store for S3Store {
    type Object = S3Url;

    fn name(&self) -> &'static str {
        "S3"
    }

    async fn get(
        &self,
        object: &S3Url,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        self.get_object(object, range, pinned).await
    }

    async fn describe(
        &self,
        object: &S3Url,
        pinned: Option<&Validator>,
        part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        self.head_object(object, pinned, part_number).await
    }

    async fn list_page(&self, query: &ListQuery<'_>, sink: PageSink<'_>) -> Result<ListPage> {
        self.list_objects_page(query, sink).await
    }

    async fn put(
        &self,
        object: &S3Url,
        body: WriteBody,
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.falling_back(|| self.put_object(object, body.clone(), crc64nvme, options))
            .await
    }

    async fn create_upload(&self, object: &S3Url, options: &WriteOptions) -> Result<String> {
        self.falling_back(|| self.create_multipart_upload(object, options))
            .await
    }

    async fn upload_part(
        &self,
        object: &S3Url,
        upload_id: &str,
        number: u32,
        body: WriteBody,
        crc64nvme: u64,
    ) -> Result<UploadedPart> {
        self.falling_back(|| {
            self.upload_part_of(object, upload_id, number, body.clone(), crc64nvme)
        })
        .await
    }

    async fn complete_upload(
        &self,
        object: &S3Url,
        upload_id: &str,
        parts: &[UploadedPart],
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.falling_back(|| {
            self.complete_multipart_upload(object, upload_id, parts, crc64nvme, options)
        })
        .await
    }

    async fn copy_object(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        to: &S3Url,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.falling_back(|| self.copy_object_to(from, pinned, to, options))
            .await
    }

    async fn upload_part_copy(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        range: ByteRange,
        to: &S3Url,
        upload_id: &str,
        number: u32,
    ) -> Result<UploadedPart> {
        self.upload_part_copy_of(from, pinned, range, to, upload_id, number)
            .await
    }

    async fn list_parts(&self, object: &S3Url, upload_id: &str) -> Result<Option<Vec<ListedPart>>> {
        self.list_parts_of(object, upload_id).await
    }

    async fn abort_upload(&self, object: &S3Url, upload_id: &str) -> Result<()> {
        self.abort_multipart_upload(object, upload_id).await
    }

    async fn look(&self, object: &S3Url) -> Result<Option<Described>> {
        match self.head_object(object, None, None).await {
            Ok(described) => Ok(Some(described.unwrap_or_default())),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    async fn delete_objects(&self, bucket: &str, keys: &[String]) -> Result<Vec<(String, Error)>> {
        self.delete_keys(bucket, keys).await
    }
}
