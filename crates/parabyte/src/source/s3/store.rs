//! The S3 store behind the [`Store`] seam: each operation is its own file.

use super::S3Store;
use crate::error::Result;
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::listing::{ListPage, ListQuery, PageSink};
use crate::source::{Described, Fetched, Store};
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
}
