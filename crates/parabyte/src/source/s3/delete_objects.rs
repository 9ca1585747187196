//! DeleteObjects: up to 1,000 keys of one bucket in one request (quiet: the answer lists
//! only the keys that could not be deleted), with the Content-MD5 S3 requires of it.

use base64::Engine as _;
use bytes::Bytes;
use md5::{Digest as _, Md5};
use quick_xml::escape::escape;

use super::errors::{classify, error_from_response, read_body_up_to, status_of_code};
use super::upload_xml::delete_errors;
use super::{Call, S3Store};
use crate::counters::RequestKind;
use crate::error::{Error, Result};

/// The most of one answer read: 1,000 errors of a few hundred bytes each.
const MAX_ANSWER: usize = 4 * 1024 * 1024;

impl S3Store {
    pub(super) async fn delete_keys(
        &self,
        bucket: &str,
        keys: &[String],
    ) -> Result<Vec<(String, Error)>> {
        let what = format!("DeleteObjects s3://{bucket}/ ({} keys)", keys.len());
        let mut body = String::from("<Delete><Quiet>true</Quiet>");
        for key in keys {
            body.push_str("<Object><Key>");
            body.push_str(&escape(key.as_str()));
            body.push_str("</Key></Object>");
        }
        body.push_str("</Delete>");
        let digest = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&body));
        let body = Bytes::from(body);
        let response = self
            .request(&Call {
                method: &reqwest::Method::POST,
                kind: RequestKind::Delete,
                bucket,
                key: "",
                query: "delete=",
                headers: &[("content-md5", &digest)],
                what: &what,
                body: Some(&body.into()),
            })
            .await?;
        if !response.status().is_success() {
            return Err(error_from_response(response, &what, bucket, self.anonymous()).await);
        }
        let answer = read_body_up_to(response, MAX_ANSWER).await;
        let refused = delete_errors(&answer).map_err(|detail| Error::Protocol {
            what: what.clone(),
            detail,
        })?;
        let anonymous = self.anonymous();
        Ok(refused
            .into_iter()
            .map(|(key, code, message)| {
                let what = format!("DELETE s3://{bucket}/{key}");
                let status = status_of_code(&code);
                let error = classify(status, &code, &message, &what, bucket, anonymous);
                (key, error)
            })
            .collect())
    }
}
