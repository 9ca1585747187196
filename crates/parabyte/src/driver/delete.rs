//! `rm`'s deletes: the keys a listing gives, a batch of up to 1,000 of one bucket per
//! DeleteObjects request; each key ends as deleted or failed on its own, as the store
//! answered it (a request the store refused whole fails every key of its batch).

use std::sync::Arc;

use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::report::{ObjectReport, Preview, Reporter, Status};
use crate::retry::with_retries;
use crate::source::Store;
use crate::transfer::engine::Finished;

/// The most keys one DeleteObjects takes.
pub(super) const DELETE_BATCH: usize = 1000;

/// Delete `keys` (all of one bucket); in a dry run, say so of each and delete nothing.
pub(super) async fn delete_batch<S: Store>(
    store: Arc<S>,
    transfer: &TransferConfig,
    counters: &Counters,
    keys: Vec<S3Url>,
    dry_run: bool,
    reporter: &dyn Reporter,
) -> Vec<(String, Result<Finished>)> {
    let sources: Vec<String> = keys.iter().map(S3Url::to_string).collect();
    if dry_run {
        for source in &sources {
            reporter.previewed(Preview::Delete { source });
        }
        return sources
            .into_iter()
            .map(|source| (source, Ok(Finished::Deleted)))
            .collect();
    }
    let Some(bucket) = keys.first().map(|key| key.bucket.clone()) else {
        return Vec::new();
    };
    let names: Vec<String> = keys.into_iter().map(|key| key.key).collect();
    let refused = with_retries(&transfer.retry, counters, || {
        store.delete_objects(&bucket, &names)
    })
    .await;
    let mut refused = match refused {
        Ok(refused) => refused,
        Err(error) => {
            // Refused whole: the first key fails with the store's answer (a fatal one stops
            // the run), the others of the batch with what it said.
            let said = error.to_string();
            let mut failed = vec![(sources[0].clone(), Err(error))];
            failed.extend(sources.into_iter().skip(1).map(|source| {
                let error = Error::Protocol {
                    what: format!("DELETE {source}"),
                    detail: format!("the request that deleted it failed: {said}"),
                };
                (source, Err(error))
            }));
            return failed;
        }
    };
    sources
        .into_iter()
        .zip(names)
        .map(
            |(source, name)| match refused.iter().position(|(key, _)| *key == name) {
                Some(at) => (source, Err(refused.swap_remove(at).1)),
                None => {
                    report_deleted(reporter, &source);
                    (source, Ok(Finished::Deleted))
                }
            },
        )
        .collect()
}

/// One object or file deleted, as the reporter hears of it.
pub(super) fn report_deleted(reporter: &dyn Reporter, source: &str) {
    reporter.object_reported(&ObjectReport {
        source,
        destination: None,
        bytes: 0,
        status: Status::Deleted,
        verification: None,
        error: None,
    });
}
