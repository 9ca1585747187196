//! Where bytes come from or go: `s3://bucket/key` or a local path.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// A parsed source or destination argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An object, or a prefix when the key is empty or ends in `/`.
    S3(S3Url),
    /// A file or directory on this machine.
    Local(PathBuf),
}

/// `s3://bucket/key`, with the key exactly as stored (no URL decoding, as in the AWS CLI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Url {
    pub bucket: String,
    pub key: String,
}

impl S3Url {
    /// True when the URL names a prefix rather than one object.
    pub fn is_prefix(&self) -> bool {
        self.key.is_empty() || self.key.ends_with('/')
    }
}

impl fmt::Display for S3Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

impl Location {
    /// Parse a command-line argument. Anything with a `scheme://` must be a scheme parabyte
    /// knows; everything else is a local path.
    pub fn parse(text: &str) -> Result<Location> {
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            validate_bucket(bucket, text)?;
            return Ok(Location::S3(S3Url {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
            }));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            {
                return Err(Error::InvalidInput(format!(
                    "'{text}': unsupported scheme '{scheme}://'; use s3://bucket/key or a local path"
                )));
            }
        }
        if text.is_empty() {
            return Err(Error::InvalidInput("an empty path was given".into()));
        }
        Ok(Location::Local(PathBuf::from(text)))
    }
}

/// Bucket names per the S3 rules that matter for addressing: 3-63 characters of
/// lowercase letters, digits, `.`, `-` and `_` (the last for older buckets).
fn validate_bucket(bucket: &str, url: &str) -> Result<()> {
    let ok_chars = bucket
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-_".contains(c));
    if bucket.is_empty() || !ok_chars || bucket.len() > 255 {
        return Err(Error::InvalidInput(format!(
            "'{url}' has no valid bucket name; write s3://bucket/key (bucket names use lowercase letters, digits, '.', '-')"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(bucket: &str, key: &str) -> Location {
        Location::S3(S3Url {
            bucket: bucket.into(),
            key: key.into(),
        })
    }

    #[test]
    fn s3_urls_keep_keys_verbatim() {
        assert_eq!(Location::parse("s3://b/k").unwrap(), s3("b", "k"));
        assert_eq!(Location::parse("s3://b").unwrap(), s3("b", ""));
        assert_eq!(Location::parse("s3://b/").unwrap(), s3("b", ""));
        assert_eq!(
            Location::parse("s3://b/a b/%41+c").unwrap(),
            s3("b", "a b/%41+c")
        );
        assert_eq!(Location::parse("s3://b/dir/").unwrap(), s3("b", "dir/"));
    }

    #[test]
    fn prefixes_are_recognised() {
        let Location::S3(url) = Location::parse("s3://b/dir/").unwrap() else {
            panic!()
        };
        assert!(url.is_prefix());
        let Location::S3(url) = Location::parse("s3://b/dir/file").unwrap() else {
            panic!()
        };
        assert!(!url.is_prefix());
    }

    #[test]
    fn malformed_urls_explain_themselves() {
        let err = Location::parse("s3:///key").unwrap_err().to_string();
        assert!(err.contains("no valid bucket"), "{err}");
        let err = Location::parse("s3://Bad_Bucket/key")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no valid bucket"), "{err}");
        let err = Location::parse("gs://bucket/key").unwrap_err().to_string();
        assert!(err.contains("unsupported scheme 'gs://'"), "{err}");
    }

    #[test]
    fn anything_else_is_a_local_path() {
        assert_eq!(
            Location::parse("./data").unwrap(),
            Location::Local("./data".into())
        );
    }
}
