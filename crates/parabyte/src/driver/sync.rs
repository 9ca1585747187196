//! `sync`: the source planned as `cp` plans it, merged with the destination's listing
//! (`plan::sync`), and run by the same driver as every copy.

use std::sync::Arc;

use futures::FutureExt;

use super::Driver;
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::plan::{
    decide, deletes_planner, list_prefix, plan, plan_local, sync_sides, CopyRequest, SourcePlanner,
    SyncOptions, SyncPart, SyncPlan, Work,
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
        let (source, source_root): (SourcePlanner, String) = match decide(&request).await? {
            Work::Store(mut copy) => {
                let prefix = list_prefix(&copy);
                if let Some(part) = &part {
                    copy.bounds = part.keys_under(&prefix);
                }
                let root = format!("s3://{}/{prefix}", copy.source.bucket);
                let planner = plan(
                    self.store.clone(),
                    self.counters.clone(),
                    self.transfer.clone(),
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
            transfer: self.transfer.clone(),
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
