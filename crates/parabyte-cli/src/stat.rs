//! `parabyte stat`: what the store keeps about one object, from one HEAD.

use std::io::Write;

use parabyte::{Client, Error, ObjectInfo, S3Url, TransferConfig};

use crate::args::StatArgs;
use crate::escape;
use crate::ls::date_column;
use crate::status::{tell, SOME_FAILED, SUCCESS};

pub(crate) async fn stat(args: StatArgs) -> Result<u8, Error> {
    let url = S3Url::parse(&args.url)?;
    let client = Client::connect(&args.store.to_config(), TransferConfig::default()).await?;
    let info = match client.stat(&url).await {
        Ok(info) => info,
        // As a `cp` of one object that fails: 1, and 2 only where nothing could succeed.
        Err(error) if !error.is_fatal() => {
            tell(format_args!("error: {error}"));
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
