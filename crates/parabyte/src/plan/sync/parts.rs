//! A sync spread over a cluster, one range of the key space a task: each part lists both
//! sides within its range (`SyncPart::bounds`) and merges them as a whole sync does, but
//! hands its deletes back ([`PartVerdict`]) instead of making them. The cluster's driver
//! gathers every part's verdict and asks [`deletes_of_parts`], the same rule a sync on one
//! machine passes, whether any may go; only then are they made ([`deletes_planner`]), so
//! nothing is deleted anywhere before every range of both sides was listed to the end,
//! and nothing at all after a failure on the source's side in any range.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use tokio::sync::mpsc;

use super::far::{keys_under, Far};
use super::{whole_run_rule, Kept, SourcePlanner, SyncOptions};
use crate::plan::planned::Planned;
use crate::report::Reporter;
use crate::source::listing::KeyBounds;

/// One part of a sync: the names below both roots (`/` between names) in a range, and
/// where its verdict goes.
#[derive(Debug, Clone)]
pub(crate) struct SyncPart {
    bounds: KeyBounds,
    verdict: Arc<Mutex<Option<PartVerdict>>>,
}

/// What one part of a sync found to delete, once both of its sides were listed to the
/// end; a part whose listing broke off has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartVerdict {
    /// The source's items in the part (none in every part: the source held nothing).
    pub source_items: u64,
    /// The names below the destination whose keys the source lacks, or why none of the
    /// part's may go (the source was not read whole, or the store's order cannot tell).
    pub deletes: Result<Vec<String>, String>,
}

impl SyncPart {
    /// The part of the names after `bounds.after` up to and with `bounds.until_after`.
    pub(crate) fn new(bounds: KeyBounds) -> SyncPart {
        SyncPart {
            bounds,
            verdict: Arc::default(),
        }
    }

    /// Its range of names below the roots.
    pub(crate) fn bounds(&self) -> KeyBounds {
        self.bounds.clone()
    }

    /// The range as keys of a store's listing under `prefix`.
    pub(crate) fn keys_under(&self, prefix: &str) -> KeyBounds {
        keys_under(prefix, &self.bounds)
    }

    pub(super) fn hand_back(&self, verdict: PartVerdict) {
        *self.verdict.lock().unwrap_or_else(|e| e.into_inner()) = Some(verdict);
    }

    /// The verdict, once the part's merge reached it.
    pub(crate) fn verdict(&self) -> Option<PartVerdict> {
        self.verdict
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The delete rule over every part of one sync (`None`: a part that reached no verdict,
/// its listing broken off or its task lost): the number of deletes allowed, or why
/// nothing may be deleted, in the words a sync on one machine uses. `source_root` and
/// `far` name the two sides.
pub fn deletes_of_parts(
    verdicts: &[Option<PartVerdict>],
    options: &SyncOptions,
    source_root: &str,
    far: &str,
) -> Result<u64, String> {
    let mut source_items = 0;
    let mut doomed = 0;
    for verdict in verdicts {
        let Some(verdict) = verdict else {
            return Err(format!(
                "nothing was deleted: a range of the key space was not listed to the end on \
                 both sides (see its failure), so what {source_root} lacks is not known"
            ));
        };
        match &verdict.deletes {
            Ok(names) => doomed += names.len() as u64,
            Err(reason) => return Err(format!("nothing was deleted: {reason}")),
        }
        source_items += verdict.source_items;
    }
    whole_run_rule(source_items, doomed, options)
        .map(|()| doomed)
        .map_err(|kept: Kept| format!("nothing was deleted: {}", kept.reason(source_root, far)))
}

/// A planner that queues the delete of each name below the destination `far` (keys of a
/// prefix, 1,000 a request; files by name, while still regular files): the deletes
/// [`deletes_of_parts`] allowed.
pub(crate) fn deletes_planner(
    far: Far,
    names: Vec<String>,
    reporter: Arc<dyn Reporter>,
) -> SourcePlanner {
    Box::new(move |queue: mpsc::Sender<Planned>| {
        async move {
            for name in names {
                reporter.object_queued(None);
                if queue.send(far.delete(name)).await.is_err() {
                    break;
                }
            }
            Ok(())
        }
        .boxed()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(source_items: u64, deletes: Result<Vec<&str>, &str>) -> Option<PartVerdict> {
        Some(PartVerdict {
            source_items,
            deletes: deletes
                .map(|names| names.into_iter().map(str::to_owned).collect())
                .map_err(str::to_owned),
        })
    }

    fn delete() -> SyncOptions {
        SyncOptions {
            delete: true,
            ..SyncOptions::default()
        }
    }

    #[test]
    fn every_part_listed_whole_lets_their_deletes_go() {
        let parts = [part(2, Ok(vec!["a"])), part(0, Ok(vec!["x", "y"]))];
        assert_eq!(deletes_of_parts(&parts, &delete(), "s", "d"), Ok(3));
    }

    #[test]
    fn one_part_without_a_verdict_keeps_every_part_s_keys() {
        let parts = [part(2, Ok(vec!["a"])), None];
        let kept = deletes_of_parts(&parts, &delete(), "s3://b/src/", "d").unwrap_err();
        assert!(kept.contains("not listed to the end"), "{kept}");
    }

    #[test]
    fn a_refusal_on_the_source_side_of_any_part_keeps_everything() {
        let parts = [
            part(2, Ok(vec!["a"])),
            part(1, Err("the source was not read")),
        ];
        let kept = deletes_of_parts(&parts, &delete(), "s", "d").unwrap_err();
        assert!(kept.contains("the source was not read"), "{kept}");
    }

    #[test]
    fn a_source_empty_in_every_part_deletes_nothing_unless_told() {
        let parts = [part(0, Ok(vec!["a"])), part(0, Ok(vec!["b"]))];
        let kept = deletes_of_parts(&parts, &delete(), "s", "d").unwrap_err();
        assert!(kept.contains("holds nothing"), "{kept}");
        let told = SyncOptions {
            delete_if_source_empty: true,
            ..delete()
        };
        assert_eq!(deletes_of_parts(&parts, &told, "s", "d"), Ok(2));
    }

    #[test]
    fn max_delete_counts_the_deletes_of_every_part() {
        let parts = [part(1, Ok(vec!["a", "b"])), part(1, Ok(vec!["c"]))];
        let capped = SyncOptions {
            max_delete: Some(2),
            ..delete()
        };
        let kept = deletes_of_parts(&parts, &capped, "s", "d").unwrap_err();
        assert!(kept.contains("more than --max-delete 2"), "{kept}");
    }
}
