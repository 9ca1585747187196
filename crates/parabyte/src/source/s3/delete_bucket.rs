//! DeleteBucket: remove a bucket that holds nothing.

use super::errors::read_error;
use super::{Call, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};

impl S3Store {
    /// Remove `bucket`. One that still holds objects is [`Error::BucketNotEmpty`]: the
    /// store keeps it and everything in it.
    pub(crate) async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        let what = format!("DeleteBucket s3://{bucket}");
        let response = self
            .request(&Call {
                method: &reqwest::Method::DELETE,
                kind: RequestKind::Delete,
                bucket,
                key: "",
                query: "",
                headers: &[],
                what: &what,
                body: None,
            })
            .await?;
        if response.status().is_success() {
            return Ok(());
        }
        let status = response.status().as_u16();
        let document = read_error(response).await;
        Err(match document.code.as_str() {
            "BucketNotEmpty" => Error::BucketNotEmpty {
                bucket: bucket.to_owned(),
            },
            code => super::errors::classify(
                status,
                code,
                &document.message,
                &what,
                bucket,
                self.anonymous(),
            ),
        })
    }
}
