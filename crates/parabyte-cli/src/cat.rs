//! `parabyte cat`: objects to standard output, printing nothing else but errors. One
//! object (`cp SOURCE -`), or every object a quoted wildcard matches
//! (`'s3://b/logs/*.txt'`), one after another in key order, as s5cmd's cat does. A reader
//! that goes away (`| head`) ends it quietly with status 141, as a shell reports a `cat`
//! that SIGPIPE ended.

use std::sync::Arc;

use futures::StreamExt;
use parabyte::{
    has_wildcard, Client, CopyOptions, CopyRequest, Destination, Error, Listed, Location, Pattern,
    S3Url, Silent, Source, Summary,
};

use crate::args::CatArgs;
use crate::status::{tell, SOME_FAILED, SUCCESS};
use crate::summary::{print_summary, Failures};

/// 128 + SIGPIPE: what a shell reports for a `cat` whose reader went away.
pub(crate) const READER_GONE: u8 = 128 + 13;

pub(crate) async fn cat(args: CatArgs) -> Result<u8, Error> {
    let source = Location::parse(&args.source)?;
    let client = Client::connect(&args.store.to_config(), args.transfer.to_config()).await?;
    match source {
        Location::S3(url) if has_wildcard(&url.key) => cat_matches(&client, &url).await,
        source => {
            let request = CopyRequest {
                source: Source::Location(source),
                destination: Destination::Stdout,
                recursive: false,
                options: CopyOptions::default(),
            };
            cat_one(&client, &request).await
        }
    }
}

/// Each object the pattern matches, in key order, the next once the one before is out. A
/// failure stops there: what follows would be read as the rest of the failed object.
async fn cat_matches(client: &Client, url: &S3Url) -> Result<u8, Error> {
    let pattern = Pattern::new(&url.key)?;
    let listed = S3Url {
        bucket: url.bucket.clone(),
        key: pattern.literal_prefix().to_owned(),
    };
    let mut entries = std::pin::pin!(client.list(&listed, true));
    let mut matched = false;
    while let Some(entry) = entries.next().await {
        let key = match entry? {
            Listed::Object(object) if pattern.matches(&object.key) => object.key,
            _ => continue,
        };
        matched = true;
        let request = CopyRequest {
            source: Source::Location(Location::S3(S3Url {
                bucket: url.bucket.clone(),
                key,
            })),
            destination: Destination::Stdout,
            recursive: false,
            // The key as listed: its '*' or '?' is part of its name.
            options: CopyOptions {
                raw: true,
                ..CopyOptions::default()
            },
        };
        let status = cat_one(client, &request).await?;
        if status != SUCCESS {
            return Ok(status);
        }
    }
    if !matched {
        tell(format_args!(
            "warning: {url}: no object matched; `parabyte ls {listed}` lists what is there"
        ));
        return Ok(SOME_FAILED);
    }
    Ok(SUCCESS)
}

/// One object to standard output; its failure printed, unless it is the reader gone.
async fn cat_one(client: &Client, request: &CopyRequest) -> Result<u8, Error> {
    let summary = client.copy(request, Arc::new(Silent)).await?;
    if summary
        .failures
        .iter()
        .any(|failure| reader_gone(&failure.error))
    {
        return Ok(READER_GONE);
    }
    Ok(ended(&summary))
}

/// The status of one object's copy, its failure (or a pattern's nothing) told.
fn ended(summary: &Summary) -> u8 {
    let (unmatched, failed): (Vec<_>, Vec<_>) = summary
        .failures
        .iter()
        .partition(|failure| matches!(failure.error, Error::NothingMatched { .. }));
    for failure in &unmatched {
        tell(format_args!("warning: {}", failure.error));
    }
    if !failed.is_empty() {
        print_summary(summary, Failures::List, true);
    }
    match summary.failures.is_empty() {
        true => SUCCESS,
        false => SOME_FAILED,
    }
}

/// Whether the error is standard output's reader gone away (EPIPE).
fn reader_gone(error: &Error) -> bool {
    match error {
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::BrokenPipe,
        Error::GaveUp { last, .. } => reader_gone(last),
        _ => false,
    }
}
