//! The planner of a sync. The source's own planner (a listing or a walk, each key checked
//! as `cp` checks it) and the destination's listing both come in key order, and are merged
//! as streams, so memory stays flat however many keys there are and the first difference
//! is sent as soon as it is seen: a key only the source has is sent; one both have is sent
//! when [`compare`] (or its contents) says it changed; one only the destination has is
//! deleted with `--delete`, by the one rule of [`Merge::doomed`]: only after both sides
//! were listed to the end, the source was read without one failure or refusal (rclone's
//! rule: a source that was not read whole cannot say what it lacks), the source held
//! something (or the user said an empty one empties the destination), and no more than
//! `--max-delete` would go.

mod compare;
mod contents;
mod far;
mod parts;
mod sides;

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::planned::Planned;
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::pattern::{excluded_by, Filter};
use crate::report::{Failure, Reporter};
use crate::source::Store;
use crate::transfer::engine::Job;
use crate::transfer_scope;
pub use compare::SyncCompare;
use compare::{compare, Side, Verdict};
use contents::Contents;
pub(crate) use far::Far;
use far::{FarEntry, FarListing};
pub use parts::{deletes_of_parts, PartVerdict};
pub(crate) use parts::{deletes_planner, SyncPart};
pub(crate) use sides::sync_sides;

/// Content checks running at once: each is a HEAD, or one file's CRC read once.
const CONTENT_CHECKS: usize = 32;
/// Keys sent because the destination had not listed them, remembered for `--delete`: a
/// store that lists out of key order (SeaweedFS lists `a/b` before `a-b`) may list such a
/// key after the merge passed it. Beyond this many, such a listing deletes nothing.
const SENT_REMEMBERED: usize = 1_000_000;

/// What `sync` adds to a copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncOptions {
    /// How a key both sides hold is judged unchanged.
    pub compare: SyncCompare,
    /// Delete from the destination what the source lacks: only after both sides were
    /// listed to the end without a failure.
    pub delete: bool,
    /// With `delete`: when more than this many would go, none is deleted and the run fails.
    pub max_delete: Option<u64>,
    /// With `delete`: a source that holds nothing empties the destination. Without it such
    /// a source (a mistyped path, an empty directory) deletes nothing.
    pub delete_if_source_empty: bool,
}

/// One sync: the source's planner, the destination, and the rules.
pub(crate) struct SyncPlan<S> {
    pub store: Arc<S>,
    pub counters: Arc<Counters>,
    pub transfer: TransferConfig,
    /// The source's name up to its keys (`s3://b/prefix/`, `/dir/`): a refused key's
    /// failure names it, and the name below it is the key's.
    pub source_root: String,
    pub far: Far,
    pub options: SyncOptions,
    /// Keys these leave out of the source are left alone at the destination too.
    pub filters: Vec<Filter>,
    /// Nothing is written: not even the marks a `--checksum` comparison keeps.
    pub dry_run: bool,
    /// One part of a sync spread over a cluster: its range of names, and where its
    /// deletes go (handed back, not made). `None`: the whole sync, here.
    pub part: Option<SyncPart>,
}

/// A planner that fills a queue, as the driver runs it.
pub(crate) type SourcePlanner =
    Box<dyn FnOnce(mpsc::Sender<Planned>) -> BoxFuture<'static, Result<()>> + Send>;

/// How a source item is named at the destination, and what its listing said of it.
struct Keyed {
    relative: String,
    side: Side,
}

impl<S: Store<Object = ObjectUrl>> SyncPlan<S> {
    /// Merge what `source` plans with the destination's listing into `queue`.
    pub(crate) async fn run(
        self,
        source: SourcePlanner,
        queue: mpsc::Sender<Planned>,
        reporter: Arc<dyn Reporter>,
    ) -> Result<()> {
        let (planned_tx, mut planned) = mpsc::channel(1024);
        // In a set, so that a stopped sync aborts it too.
        let mut source_task = JoinSet::new();
        source_task.spawn(transfer_scope::carry(source(planned_tx)));
        let bounds = self.part.as_ref().map(SyncPart::bounds).unwrap_or_default();
        let mut far = FarListing::open(
            &self.far,
            &self.store,
            &self.counters,
            &self.transfer,
            bounds,
        );
        let mut merge = Merge::default();
        let contents = Arc::new(Contents::new(
            self.store.clone(),
            self.counters.clone(),
            self.transfer.retry.clone(),
            self.dry_run,
        ));
        let mut checks: JoinSet<()> = JoinSet::new();
        let download = matches!(self.far, Far::Files { .. });
        while let Some(item) = planned.recv().await {
            let Some(keyed) = self.keyed(&item) else {
                match &item {
                    Planned::Refused(failure)
                        if self.options.delete_if_source_empty
                            && matches!(failure.error, Error::NothingMatched { .. }) =>
                    {
                        // Asked for: the empty source is the point, not a mistake.
                        continue;
                    }
                    Planned::Refused(failure) => merge.refused(failure),
                    Planned::PassedOver(passed) => merge.passed_over(&self.source_root, passed),
                    _ => {}
                }
                if queue.send(item).await.is_err() {
                    return Ok(());
                }
                continue;
            };
            merge.keyed += 1;
            // Out of order (a key held back and let go later): sent, and never deleted.
            if merge
                .last
                .as_ref()
                .is_some_and(|last| keyed.relative <= *last)
            {
                merge.late.insert(keyed.relative);
                if queue.send(item).await.is_err() {
                    return Ok(());
                }
                continue;
            }
            let paired = loop {
                match far.next_up_to(Some(&keyed.relative)).await {
                    Ok(Some(entry)) if entry.relative == keyed.relative => break Some(entry),
                    Ok(Some(extra)) => merge.extra(extra, &self.filters, self.options.delete),
                    Ok(None) => break None,
                    Err(error) => {
                        // The destination's keys are not known from here on: stop, delete nothing.
                        drop(planned);
                        let _ = source_task.join_next().await;
                        finish(&mut checks).await?;
                        return stop(&queue, &self.far.name(), error).await;
                    }
                }
            };
            merge.last = Some(keyed.relative.clone());
            let Some(entry) = paired else {
                if self.options.delete {
                    merge.sent(&keyed.relative);
                }
                if queue.send(item).await.is_err() {
                    return Ok(());
                }
                continue;
            };
            match compare(self.options.compare, download, keyed.side, entry.side) {
                Verdict::Same => {
                    if queue.send(unchanged(&item, entry.side.size)).await.is_err() {
                        return Ok(());
                    }
                }
                Verdict::Differs => {
                    if queue.send(item).await.is_err() {
                        return Ok(());
                    }
                }
                Verdict::CompareContents => {
                    while checks.len() >= CONTENT_CHECKS {
                        if let Some(Err(join)) = checks.join_next().await {
                            return Err(crashed(join));
                        }
                    }
                    let (contents, queue) = (contents.clone(), queue.clone());
                    let target = self.far.locate(&entry);
                    checks.spawn(async move {
                        let same = contents.same(&item, &target).await;
                        let planned = match same {
                            true => unchanged(&item, entry.side.size),
                            false => differing(item),
                        };
                        let _ = queue.send(planned).await;
                    });
                }
            }
        }
        let source_listed = match source_task.join_next().await {
            Some(Ok(listed)) => listed,
            Some(Err(join)) => Err(Error::InvalidInput(format!("sync planner crashed: {join}"))),
            None => Ok(()), // never: the one source planner was spawned above
        };
        finish(&mut checks).await?;
        if let Err(error) = source_listed {
            return stop(&queue, &self.source_root, error).await;
        }
        if !self.options.delete {
            // The destination's keys past the source's last are only for deleting.
            return Ok(());
        }
        loop {
            match far.next_up_to(None).await {
                Ok(Some(extra)) => merge.extra(extra, &self.filters, true),
                Ok(None) => break,
                Err(error) => return stop(&queue, &self.far.name(), error).await,
            }
        }
        merge.far_disordered = far.disordered();
        match &self.part {
            // The rule over every part is the cluster driver's (`deletes_of_parts`).
            Some(part) => part.hand_back(merge.verdict(&self.source_root, &self.far.name())),
            None => self.delete(merge, &queue, reporter.as_ref()).await,
        }
        Ok(())
    }

    /// Queue the deletes [`Merge::doomed`] allows, or say why there are none.
    async fn delete(&self, merge: Merge, queue: &mpsc::Sender<Planned>, reporter: &dyn Reporter) {
        let doomed = match merge.doomed(&self.options) {
            Ok(doomed) => doomed,
            Err(kept) => {
                let failure = Failure {
                    source: self.far.name(),
                    error: Error::InvalidInput(format!(
                        "nothing was deleted: {}",
                        kept.reason(&self.source_root, &self.far.name())
                    )),
                };
                let _ = queue.send(Planned::Refused(failure)).await;
                return;
            }
        };
        for relative in doomed {
            reporter.object_queued(None);
            if queue.send(self.far.delete(relative)).await.is_err() {
                return;
            }
        }
    }

    /// The destination name of a source item and what its listing said, or `None` for an
    /// item not merged (a refusal).
    fn keyed(&self, item: &Planned) -> Option<Keyed> {
        let (relative, size, modified) = match item {
            Planned::Job(Job {
                known: Some(known),
                target,
                ..
            }) => (
                self.far.relative_path(target.path()?)?,
                known.size,
                known.modified,
            ),
            Planned::Upload(job) => (self.far.relative_key(&job.to)?, job.size, job.modified),
            Planned::Copy(job) => {
                let (size, _) = job.known.as_ref()?;
                (self.far.relative_key(&job.to)?, *size, job.modified)
            }
            _ => return None,
        };
        Some(Keyed {
            relative,
            side: Side { size, modified },
        })
    }
}

/// What the merge has seen: the last key, what the source could not give, and the
/// destination keys only the destination holds.
#[derive(Default)]
struct Merge {
    last: Option<String>,
    /// Source items merged: none means the source holds nothing.
    keyed: u64,
    /// The first source entry that was refused or could not be read: after one, the source
    /// was not read whole, so nothing it seems to lack is deleted.
    incomplete: Option<String>,
    /// Names the source passed over by rule (a link inside a tree): what they stand for was
    /// not read, so destination keys at and below each are kept.
    passed_over: Vec<String>,
    /// Keys only the destination holds, in key order.
    doomed: Vec<String>,
    /// Source keys that came out of order: sent, so never deleted.
    late: HashSet<String>,
    /// Source keys sent because the destination had not listed them (up to
    /// [`SENT_REMEMBERED`]): never deleted, should a disordered listing show them later.
    sent: HashSet<String>,
    sent_overflow: bool,
    /// The destination was listed out of key order.
    far_disordered: bool,
}

/// Why a sync deleted nothing.
#[derive(Debug, PartialEq, Eq)]
enum Kept {
    /// The source was not read whole: the first entry refused or unreadable.
    SourceIncomplete(String),
    /// The source held nothing, and the user did not say that empties the destination.
    SourceEmpty,
    /// The store listed out of key order and too many keys were sent to tell.
    Disordered,
    /// More would go than `--max-delete` allows.
    TooMany { doomed: usize, max: u64 },
}

impl Kept {
    fn reason(&self, source_root: &str, far: &str) -> String {
        match self {
            Kept::SourceIncomplete(what) => format!(
                "the source was not read completely ({what} was refused or could not be read, \
                 see above), so what it lacks is not known; fix or --exclude it to delete"
            ),
            Kept::SourceEmpty => format!(
                "the source {source_root} holds nothing, so --delete would remove everything; \
                 check its spelling, or add --delete-if-source-empty to empty the destination"
            ),
            Kept::Disordered => format!(
                "the store listed {far} out of key order, and more than {SENT_REMEMBERED} keys \
                 were sent, too many to tell which of its keys the source lacks; sync a smaller \
                 prefix at a time to delete"
            ),
            Kept::TooMany { doomed, max } => format!(
                "{doomed} object(s) are missing from the source, more than --max-delete {max}; \
                 check the source, or raise the limit"
            ),
        }
    }
}

impl Merge {
    /// A source entry refused or unreadable (a link, a FIFO, an unsafe or colliding key, a
    /// directory that cannot be read): the source is not known whole any more.
    fn refused(&mut self, failure: &Failure) {
        if self.incomplete.is_none() {
            self.incomplete = Some(failure.source.clone());
        }
    }

    /// A source entry passed over by rule: its part of the key space was not read.
    fn passed_over(&mut self, source_root: &str, passed: &Failure) {
        if let Some(relative) = passed.source.strip_prefix(source_root) {
            self.passed_over.push(relative.to_owned());
        } else {
            // Not below the root as named: where it stands is not known, so nothing goes.
            self.refused(passed);
        }
    }

    fn sent(&mut self, relative: &str) {
        match self.sent.len() < SENT_REMEMBERED {
            true => {
                self.sent.insert(relative.to_owned());
            }
            false => self.sent_overflow = true,
        }
    }

    /// A key only the destination holds: deleted later, unless the filters leave it out.
    fn extra(&mut self, entry: FarEntry, filters: &[Filter], delete: bool) {
        if delete && excluded_by(filters, &entry.relative).is_none() {
            self.doomed.push(entry.relative);
        }
    }

    /// The delete rule, the one gate every direction's deletes pass, called once both
    /// sides were listed to the end: a destination key goes only when the whole source was
    /// read and positively lacks it.
    fn doomed(self, options: &SyncOptions) -> std::result::Result<Vec<String>, Kept> {
        let source_items = self.keyed;
        let doomed = self.lacked()?;
        whole_run_rule(source_items, doomed.len() as u64, options)?;
        Ok(doomed)
    }

    /// What one part of a sync found: the rules that hold within the part are applied
    /// here, those of the whole run by [`deletes_of_parts`] over every part.
    fn verdict(self, source_root: &str, far: &str) -> PartVerdict {
        let source_items = self.keyed;
        PartVerdict {
            source_items,
            deletes: self.lacked().map_err(|kept| kept.reason(source_root, far)),
        }
    }

    /// The destination keys the source positively lacks, when the source was read whole
    /// and the destination's order can tell: the part of the rule each range of the key
    /// space holds on its own.
    fn lacked(self) -> std::result::Result<Vec<String>, Kept> {
        if let Some(what) = self.incomplete {
            return Err(Kept::SourceIncomplete(what));
        }
        if self.far_disordered && self.sent_overflow {
            return Err(Kept::Disordered);
        }
        Ok(self
            .doomed
            .into_iter()
            .filter(|relative| !(self.late.contains(relative) || self.sent.contains(relative)))
            .filter(|relative| {
                !self
                    .passed_over
                    .iter()
                    .any(|name| is_at_or_below(relative, name))
            })
            .collect())
    }
}

/// The part of the delete rule that holds for a run as a whole: a source that held
/// nothing deletes nothing (unless told to), and no more than `max_delete` go.
fn whole_run_rule(
    source_items: u64,
    doomed: u64,
    options: &SyncOptions,
) -> std::result::Result<(), Kept> {
    if source_items == 0 && !options.delete_if_source_empty {
        return Err(Kept::SourceEmpty);
    }
    match options.max_delete {
        Some(max) if doomed > max => Err(Kept::TooMany {
            doomed: doomed as usize,
            max,
        }),
        _ => Ok(()),
    }
}

/// Whether the key `relative` is `name` or lies below it as a folder.
fn is_at_or_below(relative: &str, name: &str) -> bool {
    relative
        .strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// An item the destination already holds as it is.
fn unchanged(item: &Planned, size: u64) -> Planned {
    let source = match item {
        Planned::Job(job) => job.source.to_string(),
        Planned::Upload(job) => job.from.display().to_string(),
        Planned::Copy(job) => job.from.to_string(),
        _ => String::new(),
    };
    Planned::Unchanged { source, size }
}

/// An item whose contents were compared and differ: sent, whatever its size and time say
/// (a download's file of the object's size and time would be skipped by them).
fn differing(item: Planned) -> Planned {
    match item {
        Planned::Job(mut job) => {
            if let Some(known) = &mut job.known {
                known.modified = None;
            }
            Planned::Job(job)
        }
        other => other,
    }
}

/// Wait for the content checks still running; each sends its item itself.
async fn finish(checks: &mut JoinSet<()>) -> Result<()> {
    while let Some(done) = checks.join_next().await {
        done.map_err(crashed)?;
    }
    Ok(())
}

/// A content check that panicked: its key was neither sent nor reported, so the run fails.
fn crashed(join: tokio::task::JoinError) -> Error {
    Error::InvalidInput(format!("a sync content check crashed: {join}"))
}

/// A listing broke off: what was decided goes on, nothing is deleted, the run fails.
async fn stop(queue: &mpsc::Sender<Planned>, listed: &str, error: Error) -> Result<()> {
    if error.is_fatal() {
        return Err(error);
    }
    let failure = Failure {
        source: format!(
            "{listed} (listing broke off: later keys were not synced, nothing was deleted)"
        ),
        error,
    };
    let _ = queue.send(Planned::Refused(failure)).await;
    Ok(())
}
