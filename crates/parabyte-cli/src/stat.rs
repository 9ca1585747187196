//! `parabyte stat`: what the store keeps about one object, from one HEAD.

use std::io::Write;

use futures::StreamExt;

use parabyte::{Client, Error, ObjectInfo, S3Url, TransferConfig};

use crate::args::StatArgs;
use crate::escape;
use crate::ls::date_column;
use crate::status::{tell, SOME_FAILED, SUCCESS};

pub(crate) async fn stat(args: StatArgs) -> Result<u8, Error> {
    let url = S3Url::parse(&args.url)?;
    if url.key.is_empty() {
        return Err(Error::InvalidInput(format!(
            "stat describes one object: give a key (s3://{0}/KEY); to see what the bucket \
             holds use `parabyte ls s3://{0}/` (or `parabyte du s3://{0}/` for its totals)",
            url.bucket
        )));
    }
    // A page of one key, for the one LIST that tells a "folder" from nothing.
    let transfer = TransferConfig {
        list_parallelism: 1,
        list_page_size: 1,
        ..TransferConfig::default()
    };
    let client = Client::connect(&args.store.to_config(), transfer).await?;
    let info = match client.stat(&url).await {
        Ok(info) => info,
        // As a `cp` of one object that fails: 1, and 2 only where nothing could succeed.
        Err(error) if !error.is_fatal() => {
            match prefix_with_objects(&client, &url, &error).await {
                Some(folder) => tell(format_args!(
                    "error: {url}: no such object, but {folder} is a prefix with objects \
                     under it; list them with `parabyte ls {folder}`, or total them with \
                     `parabyte du {folder}`"
                )),
                None => tell(format_args!("error: {error}")),
            }
            return Ok(SOME_FAILED);
        }
        Err(error) => return Err(error),
    };
    let text = match args.json {
        true => escape::json_line(serde_json::to_string(&info).unwrap_or_default()),
        false => lines(&info),
    };
    // A reader that has gone (`| head`) ends nothing.
    let _ = writeln!(std::io::stdout().lock(), "{text}");
    Ok(SUCCESS)
}

/// The prefix `url` names (`dir/` for `dir` or `dir/`) when `error` says it is no object
/// but objects lie under that prefix: one LIST of one key, on this failure path only.
async fn prefix_with_objects(client: &Client, url: &S3Url, error: &Error) -> Option<S3Url> {
    if !matches!(error, Error::NotFound { .. }) {
        return None;
    }
    let folder = S3Url {
        bucket: url.bucket.clone(),
        key: match url.key.ends_with('/') {
            true => url.key.clone(),
            false => format!("{}/", url.key),
        },
    };
    let mut pages = std::pin::pin!(client.list_pages(&folder, true));
    match pages.next().await {
        Some(Ok(page)) if !page.is_empty() => Some(folder),
        _ => None,
    }
}

/// One `Name: value` line per field the store gave, values escaped (they come from it).
fn lines(info: &ObjectInfo) -> String {
    let shown = |text: &str| escape::printable(text).into_owned();
    let mut lines = vec![
        format!("URL:           {}", shown(&info.url)),
        format!("Size:          {}", info.size),
    ];
    if let Some(time) = info.last_modified {
        lines.push(format!("Last-Modified: {}", date_column(Some(time))));
    }
    if let Some(etag) = &info.etag {
        lines.push(format!("ETag:          {}", shown(etag)));
    }
    if let Some(kind) = &info.content_type {
        lines.push(format!("Content-Type:  {}", shown(kind)));
    }
    lines.push(format!("Storage class: {}", shown(&info.storage_class)));
    if let Some(checksum) = &info.checksum {
        let kind = checksum
            .kind
            .as_deref()
            .map_or_else(String::new, |kind| format!(" ({})", shown(kind)));
        lines.push(format!(
            "Checksum:      {} {}{kind}",
            checksum.algorithm,
            shown(&checksum.value)
        ));
    }
    if let Some(version) = &info.version_id {
        lines.push(format!("Version:       {}", shown(version)));
    }
    for (name, value) in &info.metadata {
        lines.push(format!("Metadata:      {}={}", shown(name), shown(value)));
    }
    lines.join("\n")
}
