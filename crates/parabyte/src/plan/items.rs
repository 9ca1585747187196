//! The planner of a batch: each item given (by Python or a manifest) checked to be a safe
//! path of its own and queued in the order given.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::planned::{refuse, Planned};
use super::request::Landing;
use crate::disk::paths::{check_writable, linked_directory, relative_path};
use crate::disk::sink::{FilePath, StreamTarget, Target};
use crate::error::{Error, Result};
use crate::manifest::Item;
use crate::report::Reporter;
use crate::transfer::engine::{Job, Known};
use crate::validator::Validator;

/// The job that fetches `item` into `target`: planned from its size (and pinned to its
/// ETag) when the item gives them, else found by a probe.
pub(crate) fn item_job(item: &Item, target: Target) -> Job {
    Job {
        known: item.size.map(|size| Known {
            size,
            validator: item.etag.clone().map(Validator::ETag),
            modified: None,
        }),
        target,
        source: item.source.clone(),
    }
}

/// Queue a batch in the order given. Each item's path is checked as a listed key's would be,
/// and two items may not share a path: they would write into one temporary file.
pub(crate) async fn plan_items(
    items: Vec<Item>,
    destination: Landing,
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
) -> Result<()> {
    if destination == Landing::Stdout && items.len() > 1 {
        return Err(Error::InvalidInput(format!(
            "{} objects cannot all go to stdout; give a directory",
            items.len()
        )));
    }
    let mut taken = HashMap::new();
    let mut root_checked = false;
    for item in items {
        let job = item_job(&item, Target::Discard);
        let target = item_target(&item, &destination);
        if let (Ok(Target::File(_)), Landing::Path(root)) = (&target, &destination) {
            if !std::mem::replace(&mut root_checked, true) {
                // Once, before the first file is fetched: a destination that cannot be
                // written fails the whole batch, not every item in turn.
                check_writable(root, root)?;
            }
        }
        let planned = match target {
            Err(error) => refuse(&job, error),
            Ok(target) => {
                let clash = match &target {
                    Target::File(path) => taken.insert(path.clone(), item.source.clone()),
                    _ => None,
                };
                match clash {
                    Some(first) => refuse(
                        &job,
                        Error::InvalidInput(format!(
                            "{} has the same destination as {first}; give one of them another path",
                            item.source
                        )),
                    ),
                    None => {
                        reporter.object_queued(item.size);
                        Planned::Job(Job { target, ..job })
                    }
                }
            }
        };
        if queue.send(planned).await.is_err() {
            break;
        }
    }
    Ok(())
}

/// Where one item of a batch goes, or why it cannot go there.
pub(crate) fn item_target(item: &Item, destination: &Landing) -> Result<Target> {
    let root = match destination {
        Landing::Path(root) => root,
        Landing::Stdout => return Ok(Target::Stream(StreamTarget::stdout())),
        Landing::Discard => return Ok(Target::Discard),
        Landing::Store { url, .. } => {
            return Err(Error::InvalidInput(format!(
                "{url}: a batch cannot be copied into S3 yet; give a local directory"
            )))
        }
        Landing::Delete => {
            return Err(Error::InvalidInput(
                "a batch is not deleted: rm takes a key or a prefix".into(),
            ))
        }
    };
    let unsafe_path = |reason: String| Error::UnsafeKey {
        key: item.source.to_string(),
        reason,
    };
    let path = match &item.destination {
        // Absolute: the user's own choice of path, a device behind a link included.
        Some(path) if path.is_absolute() => {
            return Ok(match StreamTarget::device(path, true) {
                Some(stream) => Target::Stream(stream),
                None => Target::File(FilePath::at(path)),
            })
        }
        Some(path) => {
            let text = path
                .to_str()
                .ok_or_else(|| unsafe_path(format!("its destination {path:?} is not UTF-8")))?;
            relative_path(text)
                .map_err(|reason| unsafe_path(format!("its destination {reason}")))?
        }
        None => {
            let name = item.source.file_name().unwrap_or_default();
            relative_path(&name).map_err(unsafe_path)?
        }
    };
    if let Some(link) = linked_directory(root, &path) {
        return Err(unsafe_path(format!(
            "'{}' in the destination is a symbolic link, and parabyte never writes through links",
            link.display()
        )));
    }
    Ok(Target::File(FilePath::below(root, &path)))
}
