//! The planner of a manifest into the store: each line a local file to upload, an object to
//! copy inside the store or a web file to stream in, queued in the order given; two lines
//! may not write one key.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::local::upload_of;
use super::planned::{Planned, WebJob};
use crate::error::{Error, Result};
use crate::manifest::{StoreItem, StoreSource};
use crate::report::{Failure, Reporter};
use crate::source::WriteOptions;
use crate::transfer::upload::{CopyJob, UploadJob};
use crate::validator::Validator;

/// Queue the items of a manifest into the store, each refused on its own when it cannot go.
pub(crate) async fn plan_into_store(
    items: Vec<StoreItem>,
    options: Arc<WriteOptions>,
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
) -> Result<()> {
    // Blocking: each local file is looked at (lstat) before it is queued.
    let planned = tokio::task::spawn_blocking(move || {
        let mut taken: HashMap<String, String> = HashMap::new();
        for item in items {
            let source = match &item.source {
                StoreSource::File(path) => path.display().to_string(),
                StoreSource::Object(url) => url.to_string(),
                StoreSource::Web(url) => url.to_string(),
            };
            let planned = match taken.insert(item.to.to_string(), source.clone()) {
                Some(first) => Planned::Refused(Failure {
                    error: Error::InvalidInput(format!(
                        "{source} has the same destination ({}) as {first}; give one of them another key",
                        item.to
                    )),
                    source,
                }),
                None => planned(item, &options),
            };
            match &planned {
                Planned::Upload(UploadJob { size, .. }) => reporter.object_queued(Some(*size)),
                Planned::Copy(CopyJob { known, .. }) => {
                    reporter.object_queued(known.as_ref().map(|(size, _)| *size))
                }
                Planned::Web(WebJob { size, .. }) => reporter.object_queued(*size),
                _ => {}
            }
            if queue.blocking_send(planned).is_err() {
                break;
            }
        }
    });
    planned
        .await
        .map_err(|e| Error::InvalidInput(format!("planning the manifest failed: {e}")))
}

fn planned(item: StoreItem, options: &Arc<WriteOptions>) -> Planned {
    match item.source {
        StoreSource::File(from) => upload_of(from, item.to, options),
        // An ETag pins the version only with the size, as for a download.
        StoreSource::Object(from) => Planned::Copy(CopyJob {
            from,
            to: item.to,
            known: item.size.map(|size| (size, item.etag.map(Validator::ETag))),
            modified: None,
            options: options.clone(),
        }),
        StoreSource::Web(from) => Planned::Web(WebJob {
            from,
            to: item.to,
            size: item.size,
            etag: item.etag,
            options: options.clone(),
        }),
    }
}
