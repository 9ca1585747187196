//! The planner of a local copy or upload: the source file, or the files of a tree in key
//! order (the local store's walk), each checked and queued as a [`LocalJob`] (to a local
//! path) or an [`UploadJob`] (to a key, the file's path below the source with `/`
//! between names, as the AWS CLI makes it) for the driver. Links inside a tree are never
//! followed: each is passed over and said, not a failure; FIFOs, devices and names reserved
//! for temporary files are refused on their own. A plain tree copy mirrors every
//! directory, empty ones included; a selective one (a pattern, filters, a dry run) creates
//! only what its files need.

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
use crate::location::S3Url;
use crate::pattern::{excluded_by, Filter, Pattern};
use crate::report::{Failure, Preview, Reporter};
use crate::source::listing::KeyBounds;
use crate::source::local::{Kind, LocalStore, Next, Stat, Walked, Window};
use crate::source::WriteOptions;
use crate::transfer::upload::UploadJob;

use super::planned::Planned;

/// A local file or tree (or the files a pattern matches) to another local path or a store.
#[derive(Debug, Clone)]
pub(crate) struct LocalCopy {
    pub source: PathBuf,
    pub destination: LocalDestination,
    /// The source path as a wildcard pattern: walk the directory its literal prefix ends
    /// in, copy the files whose path matches, each to its path below that directory.
    pub pattern: Option<Pattern>,
    /// `--exclude` / `--include`, matched against each file's path below the source.
    pub filters: Vec<Filter>,
    pub dry_run: bool,
    /// Links inside the tree are read as what they point to, loops refused.
    pub follow_links: bool,
    /// The range of the tree's keys (paths below the source, `/` between names) to plan:
    /// all of them by default; one range for a task of a sync spread over a cluster.
    pub bounds: KeyBounds,
}

/// Where a local copy goes.
#[derive(Debug, Clone)]
pub(crate) enum LocalDestination {
    /// A local file or directory.
    Path(PathBuf),
    /// A key, or a prefix for a tree (a key not ending in `/` is taken as `key/`).
    Store {
        url: S3Url,
        options: Arc<WriteOptions>,
    },
}

impl LocalDestination {
    /// The key one named file goes to: into a prefix (`s3://b/` or `s3://b/dir/`) under
    /// the file's name, else the key named; `None` for a path, or a name that is not UTF-8.
    fn single_file(&self, source: &Path) -> Option<S3Url> {
        let LocalDestination::Store { url, .. } = self else {
            return None;
        };
        let key = match source.file_name().map(|name| name.to_str()) {
            _ if !(url.key.is_empty() || url.key.ends_with('/')) => url.key.clone(),
            Some(Some(name)) => format!("{}{name}", url.key),
            _ => return None,
        };
        Some(S3Url {
            bucket: url.bucket.clone(),
            key,
        })
    }

    /// The job for the file `from`, at `relative` below the walked directory.
    fn job(&self, from: PathBuf, relative: &Path, metadata: &Stat) -> Planned {
        let size = metadata.len();
        match self {
            LocalDestination::Path(destination) => Planned::Local(LocalJob {
                to: LocalTarget::File(FilePath::below(destination, relative)),
                from,
                size,
            }),
            LocalDestination::Store { url, options } => {
                let Some(relative) = relative.to_str() else {
                    return not_a_key(from);
                };
                let prefix = match url.key.as_str() {
                    "" => String::new(),
                    key if key.ends_with('/') => key.to_owned(),
                    key => format!("{key}/"),
                };
                Planned::Upload(UploadJob {
                    to: S3Url {
                        bucket: url.bucket.clone(),
                        key: format!("{prefix}{relative}"),
                    },
                    from,
                    size,
                    modified: metadata.modified(),
                    options: options.clone(),
                })
            }
        }
    }
}

/// A file whose name is not UTF-8 cannot become a key.
fn not_a_key(from: PathBuf) -> Planned {
    let reason = "its name is not UTF-8, which S3 keys must be; rename it to upload it";
    Planned::Refused(Failure {
        source: from.display().to_string(),
        error: Error::io("skipped", from, io::Error::other(reason)),
    })
}

impl LocalCopy {
    /// A plain tree copy to a local path makes every directory, empty ones too; a store has
    /// no directories to make.
    fn mirrors_directories(&self) -> bool {
        matches!(self.destination, LocalDestination::Path(_))
            && self.pattern.is_none()
            && self.filters.is_empty()
            && !self.dry_run
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

/// Queue an upload of each `(file, destination)`: a key, or under a prefix (`s3://b/p/`)
/// with the file's name. A link, a FIFO, a device or a file that cannot be read is refused
/// by name; the others go on.
pub(crate) async fn plan_uploads(
    items: Vec<(PathBuf, S3Url)>,
    options: Arc<WriteOptions>,
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
) -> Result<()> {
    let planned = tokio::task::spawn_blocking(move || {
        let mut queue = Queue { queue, reporter };
        for (from, to) in items {
            if !queue.send(upload_of(from, to, &options)) {
                break;
            }
        }
    });
    planned
        .await
        .map_err(|e| Error::io("planning uploads failed", "", io::Error::other(e)))
}

/// The upload of one named file to `to` (under its name when `to` is a prefix), or why
/// not: a link, a FIFO, a device, a directory or a file that cannot be read is refused by
/// name. Blocking: one `lstat`.
pub(super) fn upload_of(from: PathBuf, to: S3Url, options: &Arc<WriteOptions>) -> Planned {
    let metadata = match fs::symlink_metadata(&from) {
        Ok(metadata) => metadata,
        Err(e) => return refused(&from, Error::io("cannot read", &from, e)),
    };
    if let Some(error) = not_copied(&from, &Stat::from(&metadata)) {
        return refused(&from, error);
    }
    let destination = LocalDestination::Store {
        url: to,
        options: options.clone(),
    };
    match destination.single_file(&from) {
        Some(to) => Planned::Upload(UploadJob {
            from,
            to,
            size: metadata.len(),
            modified: metadata.modified().ok(),
            options: options.clone(),
        }),
        None => not_a_key(from),
    }
}

fn refused(from: &Path, error: Error) -> Planned {
    let source = from.display().to_string();
    Planned::Refused(Failure { source, error })
}

/// Where planned entries go, and what previews a dry run's exclusions.
struct Queue {
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
}

impl Queue {
    /// Send one entry; false once the driver stopped taking them.
    fn send(&mut self, planned: Planned) -> bool {
        match &planned {
            Planned::Local(LocalJob { size, .. }) | Planned::Upload(UploadJob { size, .. }) => {
                self.reporter.object_queued(Some(*size))
            }
            _ => {}
        }
        self.queue.blocking_send(planned).is_ok()
    }

    fn refuse(&mut self, from: &Path, error: Error) -> bool {
        self.send(refused(from, error))
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
    let (metadata, read_from) = named_metadata(source)?;
    if metadata.is_dir() {
        if let LocalDestination::Path(destination) = &copy.destination {
            refuse_copy_into_itself(source, destination)?;
            check_writable(destination, destination)?;
        }
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
    if let Some(error) = not_copied(source, &Stat::from(&metadata)) {
        queue.refuse(source, error);
        return Ok(());
    }
    let planned = match &copy.destination {
        LocalDestination::Path(destination) => {
            let to = single_file_target(source, destination);
            if let LocalTarget::File(to) = &to {
                let parent = to.parent().filter(|p| !p.as_os_str().is_empty());
                check_writable(parent.unwrap_or(Path::new(".")), to)?;
            }
            Planned::Local(LocalJob {
                from: read_from,
                to,
                size: metadata.len(),
            })
        }
        LocalDestination::Store { options, .. } => match copy.destination.single_file(source) {
            Some(to) => Planned::Upload(UploadJob {
                from: read_from,
                to,
                size: metadata.len(),
                modified: metadata.modified().ok(),
                options: options.clone(),
            }),
            None => not_a_key(source.to_owned()),
        },
    };
    queue.send(planned);
    Ok(())
}

/// What the user named, as every peer reads it, and the path its bytes are read from: a
/// link to a directory is that directory, a link to a regular file is that file (read
/// from its real path, since files are opened without following links; it keeps the
/// link's name). Links met inside a tree are never followed; a link to anything else
/// (dangling, a loop) stays a link, which is refused.
fn named_metadata(source: &Path) -> Result<(fs::Metadata, PathBuf)> {
    let metadata = fs::symlink_metadata(source).map_err(|e| Error::io("cannot read", source, e))?;
    if metadata.is_symlink() {
        match fs::metadata(source) {
            Ok(target) if target.is_dir() => return Ok((target, source.to_owned())),
            Ok(target) if target.is_file() => {
                let real =
                    fs::canonicalize(source).map_err(|e| Error::io("cannot read", source, e))?;
                return Ok((target, real));
            }
            _ => {}
        }
    }
    Ok((metadata, source.to_owned()))
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
    if let (true, LocalDestination::Path(destination)) =
        (copy.mirrors_directories(), &copy.destination)
    {
        if let Err(error) = Dir::open_tree(destination, Path::new("")) {
            queue.refuse(root, error);
            return;
        }
    }
    let tree = LocalStore::new(root);
    let window = Window {
        follow_links: copy.follow_links,
        after: copy.bounds.after.as_deref().map(str::as_bytes),
        until_after: copy.bounds.until_after.as_deref().map(str::as_bytes),
        ..Window::default()
    };
    tree.walk(
        window,
        |Walked {
             relative,
             kind,
             followed,
         }| {
            let from = root.join(&relative);
            let metadata = match (kind, &copy.destination) {
                (Kind::Directory, LocalDestination::Path(destination))
                    if copy.mirrors_directories() =>
                {
                    // Created one name at a time below the destination, never through a link.
                    return match Dir::open_tree(destination, &relative) {
                        Ok(_) => Next::Continue,
                        Err(error) => match queue.refuse(&from, error) {
                            true => Next::PassBy,
                            false => Next::Stop,
                        },
                    };
                }
                (Kind::Directory, _) => return Next::Continue,
                (Kind::Unreadable(e), _) => {
                    let error = Error::io("cannot read", &from, e);
                    return next(queue.refuse(&from, error));
                }
                (Kind::File(metadata) | Kind::Other(metadata), _) => metadata,
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
            } else if metadata.is_symlink() {
                // Not followed, by rule: passed over and said why, not a failure.
                let why =
                    "a symbolic link inside the tree, not followed (copy its target by naming it)";
                let error = Error::io("skipped", &from, io::Error::other(why));
                queue.send(Planned::PassedOver(Failure {
                    source: from.display().to_string(),
                    error,
                }))
            } else if let Some(error) = not_copied(&from, &metadata) {
                queue.refuse(&from, error)
            } else {
                // A followed link's file is read from where it points (files are opened
                // without following a link), under the link's name.
                let from = match followed {
                    true => fs::canonicalize(&from).unwrap_or(from),
                    false => from,
                };
                let job = copy.destination.job(from, &relative, &metadata);
                queue.send(job)
            };
            next(sent)
        },
    );
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
fn not_copied(path: &Path, metadata: &Stat) -> Option<Error> {
    let reason = if metadata.is_symlink() {
        "it is a symbolic link, and parabyte never follows links; copy its target explicitly"
    } else if metadata.is_dir() {
        "it is a directory; copy a tree with cp -r DIR DEST"
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
