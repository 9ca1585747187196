//! Local to local: a file or a whole tree copied with files in parallel and large files in
//! parallel chunks, each chunk moved by the kernel (`copy_file_range`, which on reflinking
//! file systems shares extents instead of copying) with a read/write fallback. The same
//! safety as downloads: a temporary file beside the destination, renamed when complete.
//! Symbolic links are never followed: each one is reported as a failure and skipped.
//! A source with wildcards walks the directory its literal part ends in and copies the
//! files whose path matches; filters and dry runs apply as they do to listings.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

use futures::{StreamExt, TryStreamExt};
use tokio::sync::{mpsc, Semaphore};

use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::copy::copy_range;
use crate::disk::dir::Dir;
use crate::disk::paths::{check_writable, is_reserved, reserved_reason};
use crate::disk::sink::{FilePath, FileSink, StreamTarget};
use crate::error::{Error, Result};
use crate::pattern::{excluded_by, Filter, Pattern};
use crate::report::{Failure, ObjectReport, Preview, Reporter, Status, Summary, Verification};

/// Entries found by the walk but not yet copied; the walk pauses when this many wait.
const WALK_AHEAD: usize = 4096;

/// One thing the walk found.
#[derive(Debug)]
enum Found {
    /// A regular file to copy to `to`.
    File {
        from: PathBuf,
        to: FilePath,
        size: u64,
    },
    /// A regular file to stream, in order, into a character device or FIFO.
    Stream {
        from: PathBuf,
        to: StreamTarget,
        size: u64,
    },
    /// Something that is not copied, and why.
    Skipped { from: PathBuf, error: Error },
    /// A file a filter leaves out (reported in dry runs only).
    Excluded { from: PathBuf, filter: Filter },
    /// A pattern's walk ended without a single match.
    NothingMatched { pattern: Pattern },
}

/// Which files of a local source are copied, and whether they are.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selection {
    /// The source path as a wildcard pattern: walk the directory its literal prefix ends
    /// in, copy the files whose path matches, each to its path below that directory.
    pub pattern: Option<Pattern>,
    /// `--exclude` / `--include`, matched against each file's path below the source.
    pub filters: Vec<Filter>,
    /// Report what would be copied; create and write nothing.
    pub dry_run: bool,
}

impl Selection {
    /// A plain tree copy mirrors every directory, empty ones included; a selective one (or
    /// a dry run) creates only the directories its files need.
    fn mirrors_directories(&self) -> bool {
        self.pattern.is_none() && self.filters.is_empty() && !self.dry_run
    }
}

/// Copy `source` (a file, or a directory whose contents go into `destination`) to
/// `destination`. A file goes to `destination`, or into it when it is a directory (exists as
/// one or ends in `/`). Per-file failures are in the summary; an `Err` means nothing could
/// be copied (no such source, destination inside the source). `chunk_slots` bounds the
/// chunks copied at once; the client shares one set among all its calls.
pub(crate) async fn copy_local(
    source: &Path,
    destination: &Path,
    transfer: &TransferConfig,
    selection: &Selection,
    chunk_slots: Arc<Semaphore>,
    reporter: Arc<dyn Reporter>,
) -> Result<Summary> {
    transfer.validate()?;
    let started = Instant::now();
    let walked = match &selection.pattern {
        Some(pattern) => match pattern.literal_directory() {
            "" => PathBuf::from("."),
            directory => PathBuf::from(directory),
        },
        None => source.to_owned(),
    };
    let source = walked.as_path();
    let metadata = fs::symlink_metadata(source).map_err(|e| Error::io("cannot read", source, e))?;
    let (found, walk) = mpsc::channel(WALK_AHEAD);
    let walker = if metadata.is_dir() {
        refuse_copy_into_itself(source, destination)?;
        check_writable(destination, destination)?;
        let (source, destination) = (source.to_owned(), destination.to_owned());
        let selection = selection.clone();
        tokio::task::spawn_blocking(move || walk_tree(&source, &destination, &selection, &found))
    } else if let Some(pattern) = &selection.pattern {
        return Err(Error::io(
            "cannot search",
            source,
            io::Error::other(format!(
                "it is not a directory, so the pattern '{pattern}' cannot match below it"
            )),
        ));
    } else if let Some(filter) = source
        .file_name()
        .and_then(|name| excluded_by(&selection.filters, &name.to_string_lossy()))
    {
        let entry = Found::Excluded {
            from: source.to_owned(),
            filter: filter.clone(),
        };
        tokio::task::spawn_blocking(move || drop(found.blocking_send(entry)))
    } else {
        let entry = single_file(source, &metadata, destination);
        if let Found::File { to, .. } = &entry {
            let parent = to.parent().filter(|p| !p.as_os_str().is_empty());
            check_writable(parent.unwrap_or(Path::new(".")), to)?;
        }
        tokio::task::spawn_blocking(move || drop(found.blocking_send(entry)))
    };
    let first_started = OnceLock::new();
    let counters = Counters::default();
    // Only failures are kept: memory stays flat however many files there are.
    let (objects, skipped, bytes, failures) = receiver_stream(walk)
        .map(|entry| {
            let (reporter, chunk_slots) = (reporter.clone(), chunk_slots.clone());
            let first_started = &first_started;
            async move {
                match entry {
                    Found::Skipped { from, error } => {
                        Some((from.display().to_string(), None, Err(error)))
                    }
                    Found::NothingMatched { pattern } => {
                        let what = pattern.to_string();
                        let detail = if fs::symlink_metadata(&what).is_ok() {
                            "no file matches this wildcard pattern, but a file of exactly this \
                             name exists; add --raw to copy it"
                                .to_owned()
                        } else {
                            format!(
                                "no file matches this wildcard pattern (every file under '{}' \
                                 was compared); --raw takes '*', '?' and '[' literally",
                                source.display()
                            )
                        };
                        Some((
                            what.clone(),
                            None,
                            Err(Error::NothingMatched { what, detail }),
                        ))
                    }
                    Found::Excluded { from, filter } => {
                        if selection.dry_run {
                            reporter.previewed(Preview::Excluded {
                                source: &from.display().to_string(),
                                filter: &filter,
                            });
                        }
                        None
                    }
                    Found::Stream { from, to, .. } if selection.dry_run => {
                        preview(&from, &to.name(), None, false, &*reporter)
                    }
                    Found::File { from, to, size } if selection.dry_run => {
                        preview(&from, &to, Some(size), transfer.skip_unchanged, &*reporter)
                    }
                    Found::Stream { from, to, size } => {
                        first_started.get_or_init(|| started.elapsed());
                        reporter.object_queued(Some(size));
                        let result = stream_file(&from, to, &*reporter).await.map(Copied::Bytes);
                        let name = from.display().to_string();
                        reporter.object_finished(&name, result.as_ref().map(Copied::bytes));
                        Some((name, None, result))
                    }
                    Found::File { from, to, size } => {
                        first_started.get_or_init(|| started.elapsed());
                        reporter.object_queued(Some(size));
                        let result =
                            copy_file(&from, &to, size, transfer, &chunk_slots, &*reporter).await;
                        let name = from.display().to_string();
                        reporter.object_finished(&name, result.as_ref().map(Copied::bytes));
                        Some((name, Some(to.to_path_buf()), result))
                    }
                }
            }
        })
        .buffer_unordered(transfer.workers)
        .filter_map(|outcome| async move { outcome })
        .fold(
            (0, 0, 0, Vec::new()),
            |(objects, skipped, bytes, mut failures), (source, destination, result)| {
                let (status, verification) = match &result {
                    Ok(Copied::Bytes(_)) => (Status::Copied, Some(Verification::SizeOnly)),
                    Ok(Copied::Unchanged) => (Status::Skipped, Some(Verification::SizeAndTime)),
                    Err(_) => (Status::Failed, None),
                };
                // A dry run's lines are its previews: it copied and skipped nothing.
                if !selection.dry_run || result.is_err() {
                    reporter.object_reported(&ObjectReport {
                        source: &source,
                        destination: destination.as_deref(),
                        bytes: result.as_ref().map_or(0, Copied::bytes),
                        status,
                        verification,
                        error: result.as_ref().err(),
                    });
                }
                let counts = match result {
                    Ok(Copied::Bytes(size)) => (objects + 1, skipped, bytes + size, failures),
                    Ok(Copied::Unchanged) => {
                        counters.count_skipped_by_size_and_time();
                        (objects, skipped + 1, bytes, failures)
                    }
                    Err(error) => {
                        failures.push(Failure { source, error });
                        (objects, skipped, bytes, failures)
                    }
                };
                std::future::ready(counts)
            },
        )
        .await;
    walker
        .await
        .map_err(|e| Error::io("directory walk failed", source, io::Error::other(e)))?;
    Ok(Summary::new(
        objects,
        skipped,
        bytes,
        started.elapsed(),
        first_started.into_inner(),
        counters.snapshot(),
        failures,
    ))
}

/// How one local file ended well.
#[derive(Debug, Clone, Copy)]
enum Copied {
    /// Copied, this many bytes.
    Bytes(u64),
    /// The destination already had its size and modification time: left alone.
    Unchanged,
}

impl Copied {
    fn bytes(&self) -> u64 {
        match self {
            Copied::Bytes(bytes) => *bytes,
            Copied::Unchanged => 0,
        }
    }
}

/// A dry run's line for one file: the copy it would make, or that it would leave the
/// destination alone (`size` given: a file, judged as a real run would).
fn preview(
    from: &Path,
    to: &Path,
    size: Option<u64>,
    skip_unchanged: bool,
    reporter: &dyn Reporter,
) -> Option<(String, Option<PathBuf>, Result<Copied>)> {
    let name = from.display().to_string();
    let destination = to.display().to_string();
    let unchanged = skip_unchanged
        && size.is_some_and(|size| {
            fs::metadata(from)
                .and_then(|metadata| metadata.modified())
                .is_ok_and(|modified| same_size_and_time(to, size, modified))
        });
    if unchanged {
        reporter.previewed(Preview::Unchanged {
            source: &name,
            destination: &destination,
        });
        return Some((name, None, Ok(Copied::Unchanged)));
    }
    reporter.previewed(Preview::Copy {
        source: &name,
        destination: &destination,
    });
    Some((name, None, Ok(Copied::Bytes(0))))
}

fn receiver_stream<T>(mut receiver: mpsc::Receiver<T>) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

/// The one entry of a single-file copy.
fn single_file(source: &Path, metadata: &fs::Metadata, destination: &Path) -> Found {
    if let Some(error) = not_copied(source, metadata) {
        return Found::Skipped {
            from: source.to_owned(),
            error,
        };
    }
    if let Some(to) = StreamTarget::device(destination, true) {
        return Found::Stream {
            from: source.to_owned(),
            to,
            size: metadata.len(),
        };
    }
    let into_directory =
        destination.as_os_str().to_string_lossy().ends_with('/') || destination.is_dir();
    let to = match source.file_name() {
        Some(name) if into_directory => FilePath::below(destination, Path::new(name)),
        _ => FilePath::at(destination),
    };
    Found::File {
        from: source.to_owned(),
        to,
        size: metadata.len(),
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

/// Walk `root` depth first without following links, sending every file the selection
/// keeps (and every entry that is skipped) on `found`, in bounded memory: one directory
/// listing at a time.
fn walk_tree(root: &Path, destination: &Path, selection: &Selection, found: &mpsc::Sender<Found>) {
    // A pattern is matched against the path as the user wrote it: the walked directory as
    // written (up to the last '/' of the literal prefix), then the path below it.
    let pattern_base = selection.pattern.as_ref().map(Pattern::literal_directory);
    let mut matched = false;
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let directory = root.join(&relative);
        // Created one name at a time below the destination, never through a link.
        let created = match selection.mirrors_directories() {
            true => Dir::open_tree(destination, &relative).map(drop),
            false => Ok(()),
        };
        if let Err(error) = created {
            let _ = found.blocking_send(Found::Skipped {
                from: directory,
                error,
            });
            continue;
        }
        let entries = match fs::read_dir(&directory) {
            Ok(entries) => entries,
            Err(e) => {
                let error = Error::io("cannot read directory", &directory, e);
                let _ = found.blocking_send(Found::Skipped {
                    from: directory,
                    error,
                });
                continue;
            }
        };
        for entry in entries {
            let entry = match entry.and_then(|e| Ok((e.file_name(), e.metadata()?))) {
                Ok(entry) => entry,
                Err(e) => {
                    let error = Error::io("cannot read directory", &directory, e);
                    let _ = found.blocking_send(Found::Skipped {
                        from: directory.clone(),
                        error,
                    });
                    continue;
                }
            };
            let (name, metadata) = entry;
            let relative = relative.join(&name);
            let from = root.join(&relative);
            if metadata.is_dir() {
                pending.push(relative);
                continue;
            }
            let relative_text = relative.to_string_lossy();
            if let (Some(pattern), Some(base)) = (&selection.pattern, &pattern_base) {
                if !pattern.matches(&format!("{base}{relative_text}")) {
                    continue;
                }
                matched = true;
            }
            // DirEntry::metadata does not follow links, so a link to a directory is a link.
            let item = if let Some(filter) = excluded_by(&selection.filters, &relative_text) {
                Found::Excluded {
                    from,
                    filter: filter.clone(),
                }
            } else if is_reserved(&name) {
                let error = Error::io("skipped", &from, io::Error::other(reserved_reason(&name)));
                Found::Skipped { from, error }
            } else if let Some(error) = not_copied(&from, &metadata) {
                Found::Skipped { from, error }
            } else {
                Found::File {
                    from,
                    to: FilePath::below(destination, &relative),
                    size: metadata.len(),
                }
            };
            if found.blocking_send(item).is_err() {
                return;
            }
        }
    }
    if let (Some(pattern), false) = (&selection.pattern, matched) {
        let pattern = pattern.clone();
        let _ = found.blocking_send(Found::NothingMatched { pattern });
    }
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

/// Copy one file: a temporary file beside `to`, chunks of `part_size` copied up to
/// `threads` at a time, permissions and modification time carried over, then the rename.
/// A regular file (not through a link) of this size and modification time, to the
/// nanosecond: what a local copy that kept the time left.
fn same_size_and_time(path: &Path, size: u64, modified: SystemTime) -> bool {
    fs::symlink_metadata(path).is_ok_and(|there| {
        there.is_file() && there.len() == size && there.modified().ok() == Some(modified)
    })
}

/// A destination with the source's size and modification time is left alone (unless
/// skipping is off): an earlier run, or another tool that keeps times, copied it.
async fn copy_file(
    from: &Path,
    to: &FilePath,
    size: u64,
    transfer: &TransferConfig,
    chunk_slots: &Arc<Semaphore>,
    reporter: &dyn Reporter,
) -> Result<Copied> {
    let (from_path, to_path) = (from.to_owned(), to.to_owned());
    let skip_unchanged = transfer.skip_unchanged;
    let opened = tokio::task::spawn_blocking(move || -> Result<_> {
        let source = File::open(&from_path).map_err(|e| Error::io("cannot open", &from_path, e))?;
        let metadata = source
            .metadata()
            .map_err(|e| Error::io("cannot read", &from_path, e))?;
        let modified = metadata.modified().ok();
        let unchanged =
            modified.is_some_and(|modified| same_size_and_time(&to_path, size, modified));
        if skip_unchanged && unchanged {
            return Ok(None);
        }
        // No version: a local copy is never resumed, a failed one leaves nothing.
        let sink = FileSink::create(&to_path, None, Some(size))?;
        sink.file()
            .set_permissions(metadata.permissions())
            .map_err(|e| Error::io("cannot set permissions of", to_path.to_path_buf(), e))?;
        Ok(Some((Arc::new(source), sink, modified)))
    })
    .await
    .map_err(|e| Error::io("copy task failed", from, io::Error::other(e)))??;
    let Some((source, sink, modified)) = opened else {
        reporter.bytes_skipped(size);
        return Ok(Copied::Unchanged);
    };
    let chunks = (0..size)
        .step_by(transfer.part_size as usize)
        .map(|start| (start, transfer.part_size.min(size - start)));
    futures::stream::iter(chunks.map(Ok))
        .try_for_each_concurrent(transfer.ranges_per_object, |(offset, length)| {
            let (source, target) = (source.clone(), sink.file().clone());
            let from = from.to_owned();
            async move {
                let _slot = chunk_slots
                    .acquire()
                    .await
                    .expect("chunk slots are never closed");
                tokio::task::spawn_blocking(move || {
                    copy_range(&source, &target, offset, length)
                        .map_err(|e| Error::io("cannot copy", &from, e))
                })
                .await
                .map_err(|e| {
                    Error::io("copy task failed", PathBuf::new(), io::Error::other(e))
                })??;
                reporter.bytes_transferred(length);
                Ok(())
            }
        })
        .await?;
    tokio::task::spawn_blocking(move || sink.rename_into_place(modified))
        .await
        .map_err(|e| Error::io("copy task failed", to.to_path_buf(), io::Error::other(e)))??;
    Ok(Copied::Bytes(size))
}

/// Copy one file, in order, into a device or FIFO (which stays what it is).
async fn stream_file(from: &Path, to: StreamTarget, reporter: &dyn Reporter) -> Result<u64> {
    let from = from.to_owned();
    let copied = tokio::task::spawn_blocking(move || -> Result<u64> {
        let mut source = File::open(&from).map_err(|e| Error::io("cannot open", &from, e))?;
        let mut out = to.open()?;
        io::copy(&mut source, &mut out).map_err(|e| Error::io("cannot copy", &from, e))
    })
    .await
    .map_err(|e| Error::io("copy task failed", PathBuf::new(), io::Error::other(e)))??;
    reporter.bytes_transferred(copied);
    Ok(copied)
}

#[cfg(test)]
mod tests;
