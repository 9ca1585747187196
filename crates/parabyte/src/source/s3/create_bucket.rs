//! CreateBucket: a new bucket, in the region requests are signed for (S3 takes
//! `LocationConstraint` for any region but us-east-1, which is the default there).

use bytes::Bytes;

use super::errors::read_error;
use super::{Call, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};

impl S3Store {
    /// Create `bucket`. One that exists is [`Error::BucketExists`], saying whose it is.
    pub(crate) async fn create_bucket(&self, bucket: &str) -> Result<()> {
        let what = format!("CreateBucket s3://{bucket}");
        let body = location_constraint(&self.region).map(Bytes::from);
        let body = body.map(Into::into);
        let response = self
            .request(&Call {
                method: &reqwest::Method::PUT,
                kind: RequestKind::Put,
                bucket,
                key: "",
                query: "",
                headers: &[],
                what: &what,
                body: body.as_ref(),
            })
            .await?;
        if response.status().is_success() {
            return Ok(());
        }
        let status = response.status().as_u16();
        let document = read_error(response).await;
        let yours = match document.code.as_str() {
            "BucketAlreadyOwnedByYou" => true,
            "BucketAlreadyExists" => false,
            _ => {
                return Err(super::errors::classify(
                    status,
                    &document.code,
                    &document.message,
                    &what,
                    bucket,
                    self.anonymous(),
                ))
            }
        };
        Err(Error::BucketExists {
            bucket: bucket.to_owned(),
            yours,
        })
    }
}

/// The body that asks for the bucket in `region`; none for us-east-1, where S3 refuses
/// the constraint.
fn location_constraint(region: &str) -> Option<String> {
    (region != "us-east-1").then(|| {
        format!(
            "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
            quick_xml::escape::escape(region)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn us_east_1_sends_no_constraint_and_other_regions_name_themselves() {
        assert_eq!(location_constraint("us-east-1"), None);
        let body = location_constraint("eu-west-1").unwrap();
        assert!(body.contains("<LocationConstraint>eu-west-1</LocationConstraint>"));
    }
}
