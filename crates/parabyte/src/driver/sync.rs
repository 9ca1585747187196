//! `sync`: the source planned as `cp` plans it, merged with the destination's listing
//! (`plan::sync`), and run by the same driver as every copy.

use std::sync::Arc;

use futures::FutureExt;

use super::Driver;
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::plan::{
    decide, list_prefix, plan, plan_local, sync_sides, CopyRequest, SourcePlanner, SyncOptions,
    SyncPlan, Work,
};
use crate::report::{Reporter, Summary};
use crate::source::Store;

impl<S: Store<Object = ObjectUrl>> Driver<S> {
    /// Make the destination hold what the source holds: send what is missing or changed
    /// there, and with `delete` remove what the source lacks.
    pub(crate) async fn sync(
        &self,
        request: &CopyRequest,
        options: &SyncOptions,
        reporter: Arc<dyn Reporter>,
    ) -> Result<Summary> {
        let (request, far) = sync_sides(request)?;
        let (source, source_root): (SourcePlanner, String) = match decide(&request).await? {
            Work::Store(copy) => {
                let root = format!("s3://{}/{}", copy.source.bucket, list_prefix(&copy));
                let planner = plan(
                    self.store.clone(),
                    self.counters.clone(),
                    self.transfer.clone(),
                    copy,
                    reporter.clone(),
                );
                (Box::new(planner), root)
            }
            Work::Local(copy) => {
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
        };
        let planner_reporter = reporter.clone();
        let planner = move |queue| plan.run(source, queue, planner_reporter);
        let dry_run = request.options.dry_run;
        self.run(planner, source_root, dry_run, reporter).await
    }
}
