//! One source for a run that mixes stores: each object goes to the one its URL names.

use std::sync::Arc;

use super::s3::S3Store;
use super::web::WebSource;
use super::{Described, Fetched, RangeSource};
use crate::error::Result;
use crate::location::ObjectUrl;
use crate::ranges::ByteRange;
use crate::validator::Validator;

/// Every source a run can read from; each object goes to the one its URL names.
#[derive(Debug)]
pub(crate) struct Sources {
    pub s3: Arc<S3Store>,
    pub web: WebSource,
}

impl RangeSource for Sources {
    type Object = ObjectUrl;

    async fn fetch(
        &self,
        object: &ObjectUrl,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        match object {
            ObjectUrl::S3(url) => self.s3.fetch(url, range, pinned).await,
            ObjectUrl::Http(url) => self.web.fetch(url, range, pinned).await,
        }
    }

    async fn describe(
        &self,
        object: &ObjectUrl,
        pinned: &Validator,
        part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        match object {
            ObjectUrl::S3(url) => self.s3.describe(url, pinned, part_number).await,
            ObjectUrl::Http(url) => self.web.describe(url, pinned, part_number).await,
        }
    }
}
