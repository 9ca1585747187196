//! `parabyte rm`: delete the one key named, or with -r (or a pattern) every key under a
//! prefix that the filters keep, up to 1,000 a request. Each deleted key is named on stderr
//! (`delete: s3://...`, as aws and s5cmd name it; `--quiet` leaves it out), each failure as
//! an error; exit 0, 1 (some keys failed, or the key named is not there) or 2.

use std::sync::Arc;

use parabyte::{Client, CopyOptions, Error, ObjectReport, RemoveRequest, Reporter, S3Url, Status};

use crate::args::RmArgs;
use crate::dryrun;
use crate::progress::{JsonLines, NamedLines, ObjectLines, Tee};
use crate::status::{tell, SOME_FAILED, SUCCESS};
use crate::summary::{failure_line, print_json};

/// Each failure as an error on stderr, as it happens.
struct FailureLines;

impl Reporter for FailureLines {
    fn object_reported(&self, report: &ObjectReport<'_>) {
        if let (Status::Failed, Some(error)) = (report.status, report.error) {
            // The key once, even where the error names only its batch.
            tell(format_args!(
                "error: {}",
                failure_line(report.source, &error.to_string())
            ));
        }
    }
}

pub(crate) async fn remove(args: RmArgs) -> Result<u8, Error> {
    args.cluster.refuse_here()?;
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
            follow_symlinks: false,
        },
        bounds: Default::default(),
    };
    let mut reporters: Vec<Arc<dyn Reporter>> = Vec::new();
    match selection.dryrun {
        true => reporters.push(Arc::new(dryrun::Printer::new(args.output.json, false))),
        false if args.output.json_lines => reporters.push(Arc::new(JsonLines::default())),
        false => {
            reporters.push(Arc::new(FailureLines));
            if !args.output.quiet && args.output.object_lines != ObjectLines::Never {
                reporters.push(Arc::new(NamedLines(None)));
            }
        }
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
