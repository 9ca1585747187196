//! `parabyte du`: how many objects and bytes are under a prefix (or match a pattern), as
//! s5cmd's `du` prints it, optionally one line per storage class.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;

use futures::StreamExt;
use parabyte::{Client, Error, Listed, S3Url};

use crate::args::DuArgs;
use crate::escape;
use crate::ls::{aws_human_size, what_to_list};
use crate::status::{tell, SOME_FAILED, SUCCESS};

/// Objects and bytes of one group.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    objects: u64,
    bytes: u64,
}

pub(crate) async fn disk_usage(args: DuArgs) -> Result<u8, Error> {
    let url = S3Url::parse(&args.url)?;
    let (listed, pattern) = what_to_list(&url)?;
    let client = Client::connect(&args.store.to_config(), args.listing.to_config()).await?;
    let mut pages = std::pin::pin!(client.list_pages(&listed, true));
    // By storage class when grouping; one group, "", otherwise.
    let mut groups: BTreeMap<String, Usage> = BTreeMap::new();
    while let Some(page) = pages.next().await {
        let page = match page {
            // A total over part of the keys would mislead: none is printed.
            Err(error @ Error::BadListing { .. }) => {
                tell(format_args!("error: {error}"));
                return Ok(SOME_FAILED);
            }
            page => page?,
        };
        for entry in page {
            let Listed::Object(object) = entry else {
                continue;
            };
            if pattern.as_ref().is_some_and(|p| !p.matches(&object.key)) {
                continue;
            }
            let group = match args.group {
                true => object
                    .storage_class
                    .map_or_else(|| "STANDARD".to_owned(), Cow::into_owned),
                false => String::new(),
            };
            let usage = groups.entry(group).or_default();
            usage.objects += 1;
            usage.bytes += object.size;
        }
    }
    let shown_url = escape::printable(&url.to_string()).into_owned();
    if groups.is_empty() {
        groups.insert(String::new(), Usage::default());
    }
    let mut out = std::io::stdout().lock();
    for (class, usage) in &groups {
        let line = if args.json {
            let mut value = serde_json::json!({
                "url": url.to_string(),
                "objects": usage.objects,
                "bytes": usage.bytes,
            });
            if args.group {
                value["storage_class"] = class.clone().into();
            }
            value.to_string()
        } else {
            let size = match args.human_readable {
                true => aws_human_size(usage.bytes),
                false => format!("{} bytes", usage.bytes),
            };
            let class = match args.group {
                true => format!("{} ", escape::printable(class)),
                false => String::new(),
            };
            format!("{class}{size} in {} objects: {shown_url}", usage.objects)
        };
        if writeln!(out, "{line}").is_err() {
            return Ok(SUCCESS);
        }
    }
    if groups.values().all(|usage| usage.objects == 0) {
        tell(format_args!(
            "warning: {shown_url}: no object there; check the spelling of the bucket and prefix"
        ));
        return Ok(SOME_FAILED);
    }
    Ok(SUCCESS)
}
