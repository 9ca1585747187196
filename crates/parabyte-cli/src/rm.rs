//! `parabyte rm`: delete a key, or every key under a prefix (or matching a pattern) that the
//! filters keep, up to 1,000 a request. Each deleted key is printed as `aws s3 rm` prints
//! it (`delete: s3://...`), each failure as an error; exit 0, 1 (some keys failed) or 2.

use std::sync::Arc;

use parabyte::{Client, CopyOptions, Error, ObjectReport, RemoveRequest, Reporter, S3Url, Status};

use crate::args::RmArgs;
use crate::dryrun;
use crate::escape;
use crate::progress::{JsonLines, Tee};
use crate::status::{tell, SOME_FAILED, SUCCESS};
use crate::summary::{failure_line, print_json};

/// `delete: s3://bucket/key` for each key deleted, errors for those that were not.
struct Deletions {
    quiet: bool,
}

impl Reporter for Deletions {
    fn object_reported(&self, report: &ObjectReport<'_>) {
        let source = escape::printable(report.source);
        match (report.status, report.error) {
            (Status::Deleted, _) if !self.quiet => println!("delete: {source}"),
            // The key once, even where the error names only its batch.
            (Status::Failed, Some(error)) => tell(format_args!(
                "error: {}",
                failure_line(report.source, &error.to_string())
            )),
            _ => {}
        }
    }
}

pub(crate) async fn remove(args: RmArgs) -> Result<u8, Error> {
    let selection = &args.selection;
    let filters = selection.filters()?;
    let request = RemoveRequest {
        source: S3Url::parse(&args.source)?,
        recursive: args.recursive,
        options: CopyOptions {
            filters,
            raw: selection.raw,
            dry_run: selection.dryrun,
            upload: Default::default(),
        },
    };
    let mut reporters: Vec<Arc<dyn Reporter>> = Vec::new();
    match selection.dryrun {
        true => reporters.push(Arc::new(dryrun::Printer::new(args.output.json, false))),
        false if args.output.json_lines => reporters.push(Arc::new(JsonLines::default())),
        false => reporters.push(Arc::new(Deletions {
            quiet: args.output.quiet || args.output.json,
        })),
    }
    let transfer = args.transfer.to_config(&args.listing);
    let client = Client::connect(&args.store.to_config(), transfer).await?;
    let summary = client.remove(&request, Arc::new(Tee(reporters))).await?;
    if args.output.json {
        print_json(&summary);
    } else if !args.output.quiet {
        let verb = if selection.dryrun {
            "would delete"
        } else {
            "deleted"
        };
        tell(format_args!(
            "{verb} {} object(s) in {:.2}s; {} LIST, {} DELETE request(s); {} failed",
            summary.deleted,
            summary.elapsed.as_secs_f64(),
            summary.requests.list,
            summary.requests.delete,
            summary.failed
        ));
    }
    Ok(if summary.failed > 0 {
        SOME_FAILED
    } else {
        SUCCESS
    })
}
