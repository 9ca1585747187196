//! `parabyte uploads`: the multipart uploads begun under a prefix and never completed or
//! aborted (ListMultipartUploads), listed or aborted. What an interrupted `cp` keeps for
//! its next run stays stored, and billed, until one of these ends it.

use std::io::Write;

use parabyte::{Client, Error, S3Url, TransferConfig, UnfinishedUpload};

use crate::args::{UploadsAbortArgs, UploadsAction, UploadsArgs, UploadsListArgs};
use crate::escape;
use crate::ls::date_column;
use crate::status::{tell, SOME_FAILED, SUCCESS};

pub(crate) async fn uploads(args: UploadsArgs) -> Result<u8, Error> {
    match args.action {
        UploadsAction::Ls(args) => list(args).await,
        UploadsAction::Abort(args) => abort(args).await,
    }
}

async fn list(args: UploadsListArgs) -> Result<u8, Error> {
    let url = S3Url::parse(&args.url)?;
    let client = Client::connect(&args.store.to_config(), TransferConfig::default()).await?;
    let uploads = client.unfinished_uploads(&url).await?;
    let mut out = std::io::stdout().lock();
    for upload in &uploads {
        let line = match args.json {
            true => escape::json_line(serde_json::to_string(upload).unwrap_or_default()),
            false => format!(
                "{}  {}  {}",
                date_column(upload.initiated),
                escape::printable(&upload.url.to_string()),
                escape::printable(&upload.upload_id)
            ),
        };
        // A reader that has gone (`| head`) ends nothing.
        if writeln!(out, "{line}").is_err() {
            break;
        }
    }
    Ok(SUCCESS)
}

async fn abort(args: UploadsAbortArgs) -> Result<u8, Error> {
    let url = S3Url::parse(&args.url)?;
    let client = Client::connect(&args.store.to_config(), TransferConfig::default()).await?;
    let chosen: Vec<UnfinishedUpload> = client
        .unfinished_uploads(&url)
        .await?
        .into_iter()
        .filter(|upload| {
            args.upload_id
                .as_ref()
                .is_none_or(|id| *id == upload.upload_id)
        })
        .collect();
    if let (Some(id), true) = (&args.upload_id, chosen.is_empty()) {
        tell(format_args!(
            "error: {url}: no unfinished upload with the ID {}; `parabyte uploads ls {url}` lists them",
            escape::printable(id)
        ));
        return Ok(SOME_FAILED);
    }
    let mut failed = 0;
    for upload in &chosen {
        let named = format!(
            "{} (upload {})",
            escape::printable(&upload.url.to_string()),
            escape::printable(&upload.upload_id)
        );
        if args.dryrun {
            println!("(dryrun) abort: {named}");
            continue;
        }
        match client.abort_upload(upload).await {
            Ok(()) if !args.quiet => tell(format_args!("abort: {named}")),
            Ok(()) => {}
            Err(error) if error.is_fatal() => return Err(error),
            Err(error) => {
                failed += 1;
                tell(format_args!("error: {error}"));
            }
        }
    }
    if !args.quiet {
        let verb = if args.dryrun {
            "would be aborted"
        } else {
            "aborted"
        };
        tell(format_args!(
            "{} unfinished upload(s) {verb}{}",
            chosen.len() - failed,
            if failed > 0 {
                format!("; {failed} failed")
            } else {
                String::new()
            }
        ));
    }
    Ok(if failed > 0 { SOME_FAILED } else { SUCCESS })
}
