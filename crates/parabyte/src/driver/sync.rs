//! `sync`: the source planned as `cp` plans it, merged with the destination's listing
//! (`plan::sync`), and run by the same driver as every copy.

use std::sync::Arc;

use futures::FutureExt;

use super::Driver;
use crate::config::TransferConfig;
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::plan::{
    decide, deletes_planner, list_prefix, plan, plan_local, sync_sides, CopyRequest, Far,
    SourcePlanner, SyncOptions, SyncPart, SyncPlan, Work,
};
use crate::report::{Reporter, Summary};
use crate::source::Store;

impl<S: Store<Object = ObjectUrl>> Driver<S> {
    /// Make the destination hold what the source holds: send what is missing or changed
    /// there, and with `delete` remove what the source lacks. With `part`, only the names
    /// of its range, and its deletes are handed back to it rather than made.
    pub(crate) async fn sync(
        &self,
        request: &CopyRequest,
        options: &SyncOptions,
        part: Option<SyncPart>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let (request, far) = sync_sides(request)?;
        let work = decide(&request).await?;
        let transfer = listings_share(&self.transfer, &work, &far);
        let (source, source_root): (SourcePlanner, String) = match work {
            Work::Store(mut copy) => {
                let prefix = list_prefix(&copy);
                if let Some(part) = &part {
                    copy.bounds = part.keys_under(&prefix);
                }
                let root = format!("s3://{}/{prefix}", copy.source.bucket);
                let planner = plan(
                    self.store.clone(),
                    self.counters.clone(),
                    transfer.clone(),
                    copy,
                    reporter.clone(),
                );
                (Box::new(planner), root)
            }
            Work::Local(mut copy) => {
                if let Some(part) = &part {
                    copy.bounds = part.bounds();
                }
                let root = match copy.source.display().to_string() {
                    root if root.ends_with('/') => root,
                    root => format!("{root}/"),
                };
                let planner_reporter = reporter.clone();
                let planner = move |queue| plan_local(copy, queue, planner_reporter).boxed();
                (Box::new(planner), root)
            }
            _ => {
                return Err(Error::InvalidInput(
                    "sync takes an s3:// prefix or a local directory as its source".into(),
                ))
            }
        };
        let plan = SyncPlan {
            store: self.store.clone(),
            counters: self.counters.clone(),
            transfer,
            source_root: source_root.clone(),
            far,
            options: options.clone(),
            filters: request.options.filters.clone(),
            dry_run: request.options.dry_run,
            part,
        };
        let planner_reporter = reporter.clone();
        let planner = move |queue| plan.run(source, queue, planner_reporter);
        let dry_run = request.options.dry_run;
        self.run(planner, source_root, dry_run, reporter).await
    }
}

/// S3 to S3 lists both sides at once: each gets half the listing workers, and so half the
/// room for pages ahead, so that the two hold no more than one listing (docs/PROFILE.md,
/// stop 45: 80 MiB at a million keys with each at the full 16, flat in the keys).
fn listings_share(transfer: &TransferConfig, work: &Work, far: &Far) -> TransferConfig {
    let mut shared = transfer.clone();
    if matches!((work, far), (Work::Store(_), Far::Store { .. })) {
        shared.list_parallelism = transfer.list_parallelism.div_ceil(2);
    }
    shared
}

impl<S: Store<Object = ObjectUrl>> Driver<S> {
    /// Delete the names below the sync's destination that [`crate::deletes_of_parts`]
    /// allowed, as a sync on one machine deletes them (previewed in a dry run).
    pub(crate) async fn sync_deletes(
        &self,
        request: &CopyRequest,
        names: Vec<String>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let (request, far) = sync_sides(request)?;
        let name = far.name();
        let planner = deletes_planner(far, names, reporter.clone());
        self.run(planner, name, request.options.dry_run, reporter)
            .await
    }
}
