//! `parabyte mb` and `parabyte rb`: make a bucket, remove one (with --force, every object
//! in it first). `rb --force` deletes nothing when the bucket could not be listed to the
//! end, and keeps the bucket when any delete failed. Exit 0, 1 (the bucket exists already,
//! holds objects, or could not be emptied) or 2.

use std::sync::Arc;

use parabyte::{Client, Error, ObjectReport, Reporter, S3Url, Status, TransferConfig};

use crate::args::{MakeBucketArgs, RemoveBucketArgs};
use crate::status::{tell, SOME_FAILED, SUCCESS};
use crate::summary::failure_line;

/// The bucket `text` names: `s3://bucket` (a trailing '/' is fine), with no key.
fn bucket_of(text: &str, command: &str) -> Result<String, Error> {
    let url = S3Url::parse(text)?;
    match url.key.is_empty() {
        true => Ok(url.bucket),
        false => Err(Error::InvalidInput(format!(
            "{command} takes a bucket, s3://{} with no key; '{text}' names a key",
            url.bucket
        ))),
    }
}

pub(crate) async fn make_bucket(args: MakeBucketArgs) -> Result<u8, Error> {
    let bucket = bucket_of(&args.url, "mb")?;
    let client = Client::connect(&args.store.to_config(), TransferConfig::default()).await?;
    match client.create_bucket(&bucket).await {
        Ok(()) => {
            tell(format_args!("make_bucket: s3://{bucket}"));
            Ok(SUCCESS)
        }
        Err(error @ Error::BucketExists { .. }) => {
            tell(format_args!("error: {error}"));
            Ok(SOME_FAILED)
        }
        Err(error) => Err(error),
    }
}

pub(crate) async fn remove_bucket(args: RemoveBucketArgs) -> Result<u8, Error> {
    let bucket = bucket_of(&args.url, "rb")?;
    let client = Client::connect(&args.store.to_config(), TransferConfig::default()).await?;
    if args.force {
        let reporter = Arc::new(DeleteLines { quiet: args.quiet });
        let summary = match client.empty_bucket(&bucket, reporter).await {
            Ok(summary) => summary,
            Err(error) if !error.is_fatal() => {
                tell(format_args!(
                    "error: {error}; nothing was deleted and the bucket s3://{bucket} is kept"
                ));
                return Ok(SOME_FAILED);
            }
            Err(error) => return Err(error),
        };
        if summary.failed > 0 {
            tell(format_args!(
                "error: {} object(s) could not be deleted (named above), so the bucket \
                 s3://{bucket} is kept; {} deleted",
                summary.failed, summary.deleted
            ));
            return Ok(SOME_FAILED);
        }
    }
    match client.delete_bucket(&bucket).await {
        Ok(()) => {
            tell(format_args!("remove_bucket: s3://{bucket}"));
            Ok(SUCCESS)
        }
        Err(error @ Error::BucketNotEmpty { .. }) => {
            tell(format_args!("error: {error}"));
            Ok(SOME_FAILED)
        }
        Err(error) => Err(error),
    }
}

/// `delete: s3://bucket/key` for each object deleted (unless --quiet), each failure as an
/// error, as they happen.
struct DeleteLines {
    quiet: bool,
}

impl Reporter for DeleteLines {
    fn object_reported(&self, report: &ObjectReport<'_>) {
        match (report.status, report.error) {
            (Status::Failed, Some(error)) => tell(format_args!(
                "error: {}",
                failure_line(report.source, &error.to_string())
            )),
            (Status::Deleted, _) if !self.quiet => tell(format_args!(
                "delete: {}",
                crate::escape::printable(report.source)
            )),
            _ => {}
        }
    }
}
