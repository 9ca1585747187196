//! `parabyte ls`: buckets, or a prefix's objects and folders, as `aws s3 ls` prints them,
//! or as JSON lines that `cp --manifest` reads.

use std::io::Write;

use futures::StreamExt;
use parabyte::{
    has_wildcard, BucketEntry, Client, Error, Listed, ObjectEntry, Pattern, S3Url, Timestamp,
};

use crate::args::LsArgs;
use crate::escape;
use crate::status::{tell, SOME_FAILED, SUCCESS};

/// Room for about a page of listing lines before they go to stdout.
const PAGE_OUTPUT_BUFFER: usize = 128 << 10;

pub(crate) async fn list(args: LsArgs) -> Result<u8, Error> {
    let bucket_list = args
        .url
        .as_deref()
        .is_none_or(|url| matches!(url, "s3://" | "s3:"));
    if bucket_list {
        return list_buckets(&args).await;
    }
    let url = S3Url::parse(args.url.as_deref().unwrap_or_default())?;
    let (listed, pattern) = what_to_list(&url)?;
    // `*` crosses '/', so a pattern's listing is recursive and shows whole keys.
    let recursive = args.recursive || pattern.is_some();
    let client = Client::connect(&args.store.to_config(), args.listing.to_config()).await?;
    let mut pages = std::pin::pin!(client.list_pages(&listed, recursive));
    // Written a page at a time: stdout is line-buffered, a write per line cost a million
    // system calls for a million keys, and the listing waits for its reader. Not locked
    // across pages: the run is a task that may move between threads, which a lock may not.
    let mut out = std::io::BufWriter::with_capacity(PAGE_OUTPUT_BUFFER, std::io::stdout());
    // One level shows names relative to the prefix's last '/', as `aws s3 ls` does:
    // `ls s3://b/imgs` shows `PRE imgs/`, `ls s3://b/imgs/p1` shows `p1.jpg`.
    let folder = &url.key[..url.key.rfind('/').map_or(0, |slash| slash + 1)];
    let shown = |key: &str| -> String {
        let name = if recursive {
            key
        } else {
            key.strip_prefix(folder).unwrap_or(key)
        };
        escape::printable(name).into_owned()
    };
    let full_url = |key: &str| format!("s3://{}/{key}", url.bucket);
    let size_column = |size: u64| match args.human_readable {
        true => aws_human_size(size),
        false => size.to_string(),
    };
    let (mut objects, mut bytes, mut entries_listed) = (0u64, 0u64, 0u64);
    while let Some(page) = pages.next().await {
        let mut page = match page {
            // Lines already printed stay; the broken listing is a failure, not a fatal error.
            Err(error @ Error::BadListing { .. }) => {
                let _ = out.flush();
                tell(format_args!("error: {error}"));
                return Ok(SOME_FAILED);
            }
            page => page?,
        };
        if !args.json {
            // aws s3 ls prints each page's folders before its objects.
            page.sort_by_key(|entry| matches!(entry, Listed::Object(_)));
        }
        for entry in page {
            if let (Some(pattern), Listed::Object(object)) = (&pattern, &entry) {
                if !pattern.matches(&object.key) {
                    continue;
                }
            }
            entries_listed += 1;
            if let Listed::Object(object) = &entry {
                objects += 1;
                bytes += object.size;
            }
            let line = match entry {
                Listed::Object(object) if args.json => json_line(&ObjectLine {
                    url: full_url(&object.key),
                    object: &object,
                }),
                Listed::Prefix(prefix) if args.json => json_line(&PrefixLine {
                    url: full_url(&prefix),
                    prefix: &prefix,
                }),
                Listed::Object(object) => format!(
                    "{} {:>10} {}",
                    date_column(object.last_modified),
                    size_column(object.size),
                    shown(&object.key)
                ),
                Listed::Prefix(prefix) => format!("{:>30} {}", "PRE", shown(&prefix)),
            };
            if writeln!(out, "{line}").is_err() {
                return Ok(SUCCESS); // stdout closed (e.g. piped into head): stop quietly
            }
        }
        if out.flush().is_err() {
            return Ok(SUCCESS);
        }
    }
    if args.summarize {
        let line = if args.json {
            serde_json::json!({ "total_objects": objects, "total_bytes": bytes }).to_string()
        } else if args.human_readable {
            format!(
                "\nTotal Objects: {objects}\n   Total Size: {}",
                aws_human_size(bytes)
            )
        } else {
            format!("\nTotal Objects: {objects}\n   Total Size: {bytes}")
        };
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
    if entries_listed == 0 {
        // As `cp` of a prefix that holds nothing, and as `aws s3 ls`: exit 1, with a warning.
        let what = match pattern {
            Some(_) => "no key matches this pattern",
            None => "nothing listed under this prefix",
        };
        tell(format_args!(
            "warning: {url}: {what}; check the spelling of the bucket and prefix"
        ));
        return Ok(SOME_FAILED);
    }
    Ok(SUCCESS)
}

/// What to list for `url`: a wildcard (as `cp` takes it) lists its literal prefix, and the
/// pattern then keeps the keys that match.
pub(crate) fn what_to_list(url: &S3Url) -> Result<(S3Url, Option<Pattern>), Error> {
    let pattern = has_wildcard(&url.key)
        .then(|| Pattern::new(&url.key))
        .transpose()?;
    let listed = S3Url {
        bucket: url.bucket.clone(),
        key: pattern
            .as_ref()
            .map_or(url.key.as_str(), Pattern::literal_prefix)
            .to_owned(),
    };
    Ok((listed, pattern))
}

/// A size as `aws s3 ls --human-readable` prints it: "1 Byte", "10 Bytes", then in the
/// largest binary unit that shows it below 1024 after rounding, one decimal ("2.6 MiB").
pub(crate) fn aws_human_size(bytes: u64) -> String {
    const SUFFIXES: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    match bytes {
        1 => return "1 Byte".to_owned(),
        0..1024 => return format!("{bytes} Bytes"),
        _ => {}
    }
    let mut value = bytes as f64 / 1024.0;
    for suffix in &SUFFIXES[..SUFFIXES.len() - 1] {
        if value.round() < 1024.0 {
            return format!("{value:.1} {suffix}");
        }
        value /= 1024.0;
    }
    format!("{value:.1} EiB")
}

/// `ls s3://` (or `ls` alone): every bucket with its creation date, as `aws s3 ls` prints them.
async fn list_buckets(args: &LsArgs) -> Result<u8, Error> {
    let client = Client::connect(&args.store.to_config(), args.listing.to_config()).await?;
    let buckets = client.list_buckets().await?;
    let mut out = std::io::stdout().lock();
    for bucket in &buckets {
        let line = if args.json {
            json_line(&BucketLine {
                url: format!("s3://{}/", bucket.name),
                bucket,
            })
        } else {
            format!(
                "{} {}",
                date_column(bucket.creation_date),
                escape::printable(&bucket.name)
            )
        };
        if writeln!(out, "{line}").is_err() {
            return Ok(SUCCESS);
        }
    }
    Ok(SUCCESS)
}

/// `2026-11-22 18:34:48` in the local time zone, as `aws s3 ls` prints it, or blanks of the
/// same width when the store gave no time.
pub(crate) fn date_column(time: Option<Timestamp>) -> String {
    time.map(|t| Timestamp::from_unix_millis(t.unix_millis() + 1000 * utc_offset_seconds(t)))
        .and_then(|t| t.to_string().replace('T', " ").get(..19).map(str::to_owned))
        .unwrap_or_else(|| " ".repeat(19))
}

/// The local time zone's offset from UTC at `time` (TZ, else /etc/localtime), in seconds;
/// 0 when the C library cannot say.
fn utc_offset_seconds(time: Timestamp) -> i64 {
    // time_t is 64 bits wide on every target parabyte builds for.
    let seconds = time.unix_millis().div_euclid(1000) as libc::time_t;
    // SAFETY: `tm` is plain data, and localtime_r only writes into it (thread-safe).
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals for the duration of the call.
    let converted = unsafe { libc::localtime_r(&seconds, &mut tm) };
    if converted.is_null() {
        0
    } else {
        tm.tm_gmtoff
    }
}

/// One `ls --json` line; keys are data from the store, so raw controls are escaped.
fn json_line(entry: &impl serde::Serialize) -> String {
    // Plain structs of strings and numbers: serialising them cannot fail.
    escape::json_line(serde_json::to_string(entry).unwrap_or_default())
}

/// An object in `ls --json`: its full URL first (what `cp --manifest` reads), then the
/// listing's fields.
#[derive(serde::Serialize)]
struct ObjectLine<'a> {
    url: String,
    #[serde(flatten)]
    object: &'a ObjectEntry,
}

/// A "folder" in `ls --json`.
#[derive(serde::Serialize)]
struct PrefixLine<'a> {
    url: String,
    prefix: &'a str,
}

/// A bucket in `ls s3:// --json`.
#[derive(serde::Serialize)]
struct BucketLine<'a> {
    url: String,
    #[serde(flatten)]
    bucket: &'a BucketEntry,
}

#[cfg(test)]
mod tests {
    use super::aws_human_size;

    #[test]
    fn human_sizes_read_as_aws_prints_them() {
        for (bytes, shown) in [
            (0, "0 Bytes"),
            (1, "1 Byte"),
            (1023, "1023 Bytes"),
            (1024, "1.0 KiB"),
            (1536, "1.5 KiB"),
            (2_726_297, "2.6 MiB"),
            // 1023.9 KiB rounds to 1024: shown as MiB, as aws does.
            (1_048_474, "1.0 MiB"),
            (5 << 40, "5.0 TiB"),
            (u64::MAX, "16.0 EiB"),
        ] {
            assert_eq!(aws_human_size(bytes), shown, "{bytes}");
        }
    }
}
