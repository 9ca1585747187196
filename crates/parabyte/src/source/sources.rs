//! One source for a run that mixes stores: each object goes to the one its URL names, and
//! with a source store of its own (`--source-endpoint-url`, another account or region)
//! S3 objects are read there and written here.

use std::sync::Arc;

use super::listing::{ListPage, ListQuery, PageSink};
use super::s3::S3Store;
use super::web::WebSource;
use super::{
    Described, Fetched, ListedPart, Store, UploadedPart, WriteBody, WriteOptions, Written,
};
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::ranges::ByteRange;
use crate::validator::Validator;

/// Every source a run can read from; each object goes to the one its URL names.
#[derive(Debug)]
pub(crate) struct Sources {
    /// Where objects are written, and read unless `read_from` is another store.
    pub s3: Arc<S3Store>,
    pub web: WebSource,
    /// Where S3 objects are listed and read, when not `s3`: nothing can be copied inside
    /// the store then, so copies stream through parabyte.
    pub read_from: Option<Arc<S3Store>>,
}

impl Sources {
    fn reads(&self) -> &S3Store {
        self.read_from.as_deref().unwrap_or(&self.s3)
    }
}

impl Store for Sources {
    type Object = ObjectUrl;

    fn name(&self) -> &'static str {
        "S3 or a web server"
    }

    fn copies_inside(&self) -> bool {
        self.read_from.is_none()
    }

    /// Only S3 lists: a listing names a bucket.
    async fn list_page(&self, query: &ListQuery<'_>, sink: PageSink<'_>) -> Result<ListPage> {
        self.reads().list_page(query, sink).await
    }

    async fn get(
        &self,
        object: &ObjectUrl,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        match object {
            ObjectUrl::S3(url) => self.reads().get(url, range, pinned).await,
            ObjectUrl::Http(url) => self.web.get(url, range, pinned).await,
        }
    }

    async fn describe(
        &self,
        object: &ObjectUrl,
        pinned: Option<&Validator>,
        part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        match object {
            ObjectUrl::S3(url) => self.reads().describe(url, pinned, part_number).await,
            ObjectUrl::Http(url) => self.web.describe(url, pinned, part_number).await,
        }
    }

    // Writes go to S3: a web server takes none.

    async fn put(
        &self,
        object: &S3Url,
        body: WriteBody,
        crc64nvme: u64,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.s3.put(object, body, crc64nvme, options).await
    }

    async fn create_upload(&self, object: &S3Url, options: &WriteOptions) -> Result<String> {
        self.s3.create_upload(object, options).await
    }

    async fn upload_part(
        &self,
        object: &S3Url,
        upload_id: &str,
        number: u32,
        body: WriteBody,
        crc64nvme: u64,
    ) -> Result<UploadedPart> {
        self.s3
            .upload_part(object, upload_id, number, body, crc64nvme)
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
        self.s3
            .complete_upload(object, upload_id, parts, crc64nvme, options)
            .await
    }

    async fn copy_object(
        &self,
        from: &S3Url,
        pinned: Option<&Validator>,
        to: &S3Url,
        options: &WriteOptions,
    ) -> Result<Written> {
        self.s3.copy_object(from, pinned, to, options).await
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
        self.s3
            .upload_part_copy(from, pinned, range, to, upload_id, number)
            .await
    }

    async fn list_parts(&self, object: &S3Url, upload_id: &str) -> Result<Option<Vec<ListedPart>>> {
        self.s3.list_parts(object, upload_id).await
    }

    async fn abort_upload(&self, object: &S3Url, upload_id: &str) -> Result<()> {
        self.s3.abort_upload(object, upload_id).await
    }

    async fn look(&self, object: &S3Url) -> Result<Option<Described>> {
        self.s3.look(object).await
    }

    async fn delete_objects(&self, bucket: &str, keys: &[String]) -> Result<Vec<(String, Error)>> {
        self.s3.delete_objects(bucket, keys).await
    }
}
