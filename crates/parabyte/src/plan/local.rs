//! The planner of a local copy: the source file, or the files of a tree in key order (the
//! local store's walk), each checked and queued as a [`LocalJob`] for the driver. Links are
//! never followed: each is refused on its own, as are FIFOs, devices and names reserved for
//! temporary files. A plain tree copy mirrors every directory, empty ones included; a
//! selective one (a pattern, filters, a dry run) creates only what its files need.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::disk::dir::Dir;
use crate::disk::local::{LocalJob, LocalTarget};
use crate::disk::paths::{check_writable, is_reserved, reserved_reason};
use crate::disk::sink::{FilePath, StreamTarget};
use crate::error::{Error, Result};
use crate::pattern::{excluded_by, Filter, Pattern};
use crate::report::{Failure, Preview, Reporter};
use crate::source::local::{Kind, LocalStore, Next, Walked, Window};

use super::planned::Planned;

/// A local file or tree (or the files a pattern matches) to another local path.
#[derive(Debug, Clone)]
pub(crate) struct LocalCopy {
    pub source: PathBuf,
    pub destination: PathBuf,
    /// The source path as a wildcard pattern: walk the directory its literal prefix ends
    /// in, copy the files whose path matches, each to its path below that directory.
    pub pattern: Option<Pattern>,
    /// `--exclude` / `--include`, matched against each file's path below the source.
    pub filters: Vec<Filter>,
    pub dry_run: bool,
}

impl LocalCopy {
    fn mirrors_directories(&self) -> bool {
        self.pattern.is_none() && self.filters.is_empty() && !self.dry_run
    }

    /// The directory walked: the source, or the one a pattern's literal part ends in.
    fn walked(&self) -> PathBuf {
        match &self.pattern {
            Some(pattern) => match pattern.literal_directory() {
                "" => PathBuf::from("."),
                directory => PathBuf::from(directory),
            },
            None => self.source.clone(),
        }
    }
}

/// Queue the jobs of `copy`. An `Err` means nothing can be copied: no such source, a
/// destination inside the source or one that cannot be written, a pattern below a file.
pub(crate) async fn plan_local(
    copy: LocalCopy,
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
) -> Result<()> {
    let planned = tokio::task::spawn_blocking(move || {
        let mut queue = Queue { queue, reporter };
        plan_blocking(&copy, &mut queue)
    });
    planned
        .await
        .map_err(|e| Error::io("directory walk failed", "", io::Error::other(e)))?
}

/// Where planned entries go, and what previews a dry run's exclusions.
struct Queue {
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
}

impl Queue {
    /// Send one entry; false once the driver stopped taking them.
    fn send(&mut self, planned: Planned) -> bool {
        if let Planned::Local(job) = &planned {
            self.reporter.object_queued(Some(job.size));
        }
        self.queue.blocking_send(planned).is_ok()
    }

    fn refuse(&mut self, from: &Path, error: Error) -> bool {
        let source = from.display().to_string();
        self.send(Planned::Refused(Failure { source, error }))
    }

    fn exclude(&mut self, copy: &LocalCopy, from: &Path, filter: &Filter) {
        if copy.dry_run {
            self.reporter.previewed(Preview::Excluded {
                source: &from.display().to_string(),
                filter,
            });
        }
    }
}

fn plan_blocking(copy: &LocalCopy, queue: &mut Queue) -> Result<()> {
    let walked = copy.walked();
    let source = walked.as_path();
    let metadata = fs::symlink_metadata(source).map_err(|e| Error::io("cannot read", source, e))?;
    if metadata.is_dir() {
        refuse_copy_into_itself(source, &copy.destination)?;
        check_writable(&copy.destination, &copy.destination)?;
        plan_tree(copy, source, queue);
        return Ok(());
    }
    if let Some(pattern) = &copy.pattern {
        return Err(Error::io(
            "cannot search",
            source,
            io::Error::other(format!(
                "it is not a directory, so the pattern '{pattern}' cannot match below it"
            )),
        ));
    }
    let name = source.file_name().map(|name| name.to_string_lossy());
    if let Some(filter) = name.and_then(|name| excluded_by(&copy.filters, &name)) {
        queue.exclude(copy, source, filter);
        return Ok(());
    }
    if let Some(error) = not_copied(source, &metadata) {
        queue.refuse(source, error);
        return Ok(());
    }
    let to = single_file_target(source, &copy.destination);
    if let LocalTarget::File(to) = &to {
        let parent = to.parent().filter(|p| !p.as_os_str().is_empty());
        check_writable(parent.unwrap_or(Path::new(".")), to)?;
    }
    queue.send(Planned::Local(LocalJob {
        from: source.to_owned(),
        to,
        size: metadata.len(),
    }));
    Ok(())
}

/// Where one named file goes: a device or FIFO the user named is streamed into; into a
/// directory (one that exists, or a path ending in '/') under the file's name; else to
/// the path named.
fn single_file_target(source: &Path, destination: &Path) -> LocalTarget {
    if let Some(device) = StreamTarget::device(destination, true) {
        return LocalTarget::Stream(device);
    }
    let into_directory =
        destination.as_os_str().to_string_lossy().ends_with('/') || destination.is_dir();
    LocalTarget::File(match source.file_name() {
        Some(name) if into_directory => FilePath::below(destination, Path::new(name)),
        _ => FilePath::at(destination),
    })
}

/// Every file of the tree at `root` that the copy keeps, in key order.
fn plan_tree(copy: &LocalCopy, root: &Path, queue: &mut Queue) {
    // A pattern is matched against the path as the user wrote it: the walked directory as
    // written (up to the last '/' of the literal prefix), then the path below it.
    let pattern_base = copy.pattern.as_ref().map(Pattern::literal_directory);
    let mut matched = false;
    let destination = &copy.destination;
    if copy.mirrors_directories() {
        if let Err(error) = Dir::open_tree(destination, Path::new("")) {
            queue.refuse(root, error);
            return;
        }
    }
    let tree = LocalStore::new(root);
    tree.walk(Window::default(), |Walked { relative, kind }| {
        let from = root.join(&relative);
        let metadata = match kind {
            Kind::Directory if copy.mirrors_directories() => {
                // Created one name at a time below the destination, never through a link.
                return match Dir::open_tree(destination, &relative) {
                    Ok(_) => Next::Continue,
                    Err(error) => match queue.refuse(&from, error) {
                        true => Next::PassBy,
                        false => Next::Stop,
                    },
                };
            }
            Kind::Directory => return Next::Continue,
            Kind::Unreadable(e) => {
                let error = Error::io("cannot read", &from, e);
                return next(queue.refuse(&from, error));
            }
            Kind::File(metadata) | Kind::Other(metadata) => metadata,
        };
        let relative_text = relative.to_string_lossy();
        if let (Some(pattern), Some(base)) = (&copy.pattern, &pattern_base) {
            if !pattern.matches(&format!("{base}{relative_text}")) {
                return Next::Continue;
            }
            matched = true;
        }
        let name = relative.file_name().unwrap_or_default();
        let sent = if let Some(filter) = excluded_by(&copy.filters, &relative_text) {
            queue.exclude(copy, &from, filter);
            true
        } else if is_reserved(name) {
            let error = Error::io("skipped", &from, io::Error::other(reserved_reason(name)));
            queue.refuse(&from, error)
        } else if let Some(error) = not_copied(&from, &metadata) {
            queue.refuse(&from, error)
        } else {
            let to = LocalTarget::File(FilePath::below(destination, &relative));
            let size = metadata.len();
            queue.send(Planned::Local(LocalJob { from, to, size }))
        };
        next(sent)
    });
    if let (Some(pattern), false) = (&copy.pattern, matched) {
        let what = pattern.to_string();
        let detail = if fs::symlink_metadata(&what).is_ok() {
            "no file matches this wildcard pattern, but a file of exactly this name exists; \
             add --raw to copy it"
                .to_owned()
        } else {
            format!(
                "no file matches this wildcard pattern (every file under '{}' was compared); \
                 --raw takes '*', '?' and '[' literally",
                root.display()
            )
        };
        let error = Error::NothingMatched {
            what: what.clone(),
            detail,
        };
        queue.send(Planned::Refused(Failure {
            source: what,
            error,
        }));
    }
}

/// Walk on while the driver takes entries.
fn next(sent: bool) -> Next {
    if sent {
        Next::Continue
    } else {
        Next::Stop
    }
}

/// Why an entry is not copied: links are never followed, and only regular files have bytes.
fn not_copied(path: &Path, metadata: &fs::Metadata) -> Option<Error> {
    let reason = if metadata.file_type().is_symlink() {
        "it is a symbolic link, and parabyte never follows links; copy its target explicitly"
    } else if !metadata.is_file() {
        "it is not a regular file (a device, socket or pipe)"
    } else {
        return None;
    };
    Some(Error::Io {
        op: "skipped",
        path: path.to_owned(),
        source: io::Error::other(reason),
    })
}

/// A tree copied into itself would find its own copies as it walks.
fn refuse_copy_into_itself(source: &Path, destination: &Path) -> Result<()> {
    let source = fs::canonicalize(source).map_err(|e| Error::io("cannot read", source, e))?;
    let absolute =
        std::path::absolute(destination).map_err(|e| Error::io("cannot use", destination, e))?;
    // The deepest part of the destination that exists says where it really is.
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while fs::symlink_metadata(existing).is_err() {
        let Some(parent) = existing.parent() else {
            break;
        };
        rest.push(existing.file_name().unwrap_or_default().to_owned());
        existing = parent;
    }
    let mut resolved = fs::canonicalize(existing).unwrap_or_else(|_| existing.to_owned());
    resolved.extend(rest.iter().rev());
    if resolved.starts_with(&source) {
        return Err(Error::InvalidInput(format!(
            "cannot copy '{}' into '{}', which is inside it; choose a destination outside the source",
            source.display(),
            destination.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
