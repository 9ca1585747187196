//! From what the user asked for to jobs for the engine: the requests and destinations of the
//! public API, batch items, and the planners that turn one object, a listing or a batch
//! into a queue of jobs (every key checked to be a safe path, collisions reported).

mod destination;
mod into_store;
mod items;
mod listing;
mod local;
mod planned;
mod request;
mod sync;

use std::path::{Path, PathBuf};

use crate::disk::sink::StreamTarget;
use crate::error::{Error, Result};
use crate::location::{local_destination, HttpUrl, Location, ObjectUrl, S3Url};
use crate::manifest::{parse_into_store, Item, Manifest, ManifestError, StoreItem};
use crate::report::Failure;
use crate::source::listing::KeyBounds;
use crate::source::WriteOptions;
pub(crate) use into_store::plan_into_store;
pub(crate) use items::{item_job, item_target, plan_items};
pub(crate) use listing::{list_prefix, plan};
pub(crate) use local::{plan_local, plan_uploads, LocalCopy, LocalDestination};
pub(crate) use planned::{Planned, WebJob};
pub(crate) use request::Landing;
pub(crate) use request::StoreCopy;
pub use request::{CopyOptions, CopyRequest, Destination, RemoveRequest, Source, UploadOptions};
pub use sync::{deletes_of_parts, PartVerdict, SyncCompare, SyncOptions};
pub(crate) use sync::{deletes_planner, sync_sides, Far, SourcePlanner, SyncPart, SyncPlan};

/// A request decided: which of the three ways it runs.
#[derive(Debug)]
pub(crate) enum Work {
    /// One S3 object, or a listing's worth.
    Store(StoreCopy),
    /// A batch; `refused` are manifest lines that are not items, failures of their own.
    Items {
        items: Vec<Item>,
        destination: Landing,
        refused: Vec<Failure>,
    },
    /// A manifest into the store: local files, objects and web files, each to its key.
    IntoStore {
        items: Vec<StoreItem>,
        options: std::sync::Arc<WriteOptions>,
        refused: Vec<Failure>,
    },
    /// A local file or tree (or the files a pattern matches) to another local path or to
    /// the store.
    Local(LocalCopy),
    /// Standard input (or the stream `named`: a FIFO, `/dev/fd/N`, a device), of a length
    /// not known ahead, to one key.
    Stdin {
        named: Option<PathBuf>,
        to: S3Url,
        options: WriteOptions,
    },
    /// Standard input (or the stream `named`) to one file, written as the store's keys are
    /// (a local directory is a store too): in parts, checked, under its name only when
    /// whole.
    StdinToFile {
        named: Option<PathBuf>,
        directory: PathBuf,
        name: String,
        options: WriteOptions,
    },
    /// A web server's file streamed to one key.
    Web {
        from: HttpUrl,
        to: S3Url,
        options: WriteOptions,
    },
}

/// Decide how a request runs: the one place that tells S3 from web from local from manifest,
/// and a download from an upload.
pub(crate) async fn decide(request: &CopyRequest) -> Result<Work> {
    if let Destination::Path(path) = &request.destination {
        local_destination(path.as_os_str())?;
    }
    let location = match &request.source {
        Source::Location(location) => location,
        Source::Items(items) => {
            return Ok(Work::Items {
                items: items.clone(),
                destination: landing(request, false)?,
                refused: Vec::new(),
            })
        }
        Source::Manifest(path) => return read_manifest(path, request).await,
        Source::ManifestLines {
            name,
            first_line,
            text,
        } => return manifest_work(text, name, *first_line, request),
        Source::KeyRange { prefix, bounds } => {
            // A key range is a part of a prefix: filters and dry runs apply as to the whole.
            return Ok(Work::Store(StoreCopy {
                source: prefix.clone(),
                destination: landing(request, true)?,
                recursive: true,
                pattern: None,
                filters: request.options.filters.clone(),
                dry_run: request.options.dry_run,
                bounds: bounds.clone(),
            }));
        }
    };
    match location {
        Location::S3(source) => Ok(Work::Store(StoreCopy {
            source: source.clone(),
            destination: landing(request, true)?,
            recursive: request.recursive,
            pattern: request.pattern(&source.key)?,
            filters: request.options.filters.clone(),
            dry_run: request.options.dry_run,
            bounds: KeyBounds::default(),
        })),
        Location::Http(url) if request.recursive => Err(Error::InvalidInput(format!(
            "a recursive copy needs an s3:// prefix; {url} is one file"
        ))),
        Location::Http(url) => match &request.destination {
            Destination::Store(to) => Ok(Work::Web {
                from: url.clone(),
                // Into a prefix under the file's name, as a download into a directory.
                to: match to.is_prefix() {
                    true => S3Url {
                        bucket: to.bucket.clone(),
                        key: format!("{}{}", to.key, url.file_name().unwrap_or_default()),
                    },
                    false => to.clone(),
                },
                options: request.options.upload.write_options()?,
            }),
            _ => {
                let (item, destination) =
                    to_path(ObjectUrl::Http(url.clone()), landing(request, false)?);
                Ok(Work::Items {
                    items: vec![item],
                    destination,
                    refused: Vec::new(),
                })
            }
        },
        Location::Local(source) => decide_local(request, source),
    }
}

/// Where a store copy's objects land; an S3 destination only for an S3 source
/// (`into_store`): a batch of items (from Python) names paths, not keys.
fn landing(request: &CopyRequest, into_store: bool) -> Result<Landing> {
    match &request.destination {
        Destination::Path(path) => Ok(Landing::Path(path.clone())),
        Destination::Discard => Ok(Landing::Discard),
        Destination::Stdout => Ok(Landing::Stdout),
        Destination::Store(url) if into_store => Ok(Landing::Store {
            url: url.clone(),
            options: std::sync::Arc::new(request.options.upload.write_options()?),
        }),
        Destination::Store(url) => Err(Error::InvalidInput(format!(
            "{url}: a batch of items is copied into S3 from a manifest \
             (parabyte cp --manifest FILE {url}); give a local directory"
        ))),
    }
}

/// A local file or tree to a local path, or uploaded to the store.
fn decide_local(request: &CopyRequest, source: &Path) -> Result<Work> {
    let stdin = source == Path::new("-");
    let named = (!stdin && is_stream(request, source)).then(|| source.to_owned());
    let streamed = stdin || named.is_some();
    if let (Destination::Store(url), true) = (&request.destination, streamed) {
        let file_name = named.as_deref().and_then(Path::file_name);
        let to = match (url.is_prefix(), file_name.and_then(|name| name.to_str())) {
            (false, _) => url.clone(),
            (true, Some(name)) => S3Url {
                bucket: url.bucket.clone(),
                key: format!("{}{name}", url.key),
            },
            (true, None) => {
                return Err(Error::InvalidInput(format!(
                    "standard input has no name to put under {url}: give the key, s3://bucket/key"
                )))
            }
        };
        return Ok(Work::Stdin {
            named,
            to,
            options: request.options.upload.write_options()?,
        });
    }
    if let (Destination::Path(destination), true) = (&request.destination, streamed) {
        let (directory, name) = stdin_file(destination)?;
        return Ok(Work::StdinToFile {
            named,
            directory,
            name,
            options: request.options.upload.write_options()?,
        });
    }
    let destination =
        match &request.destination {
            Destination::Path(destination) => LocalDestination::Path(destination.clone()),
            Destination::Store(url) => LocalDestination::Store {
                url: url.clone(),
                options: std::sync::Arc::new(request.options.upload.write_options()?),
            },
            Destination::Discard => return Err(Error::InvalidInput(
                "discarding measures a store or a web server; a local source needs a destination"
                    .into(),
            )),
            Destination::Stdout => {
                return Err(Error::InvalidInput(
                    "a local source needs a destination path, not stdout".into(),
                ))
            }
        };
    Ok(Work::Local(LocalCopy {
        pattern: request.pattern(&source.to_string_lossy())?,
        source: source.to_owned(),
        destination,
        filters: request.options.filters.clone(),
        dry_run: request.options.dry_run,
        follow_links: request.options.follow_symlinks,
        bounds: KeyBounds::default(),
    }))
}

/// The directory and the file name standard input is written to: a path to a file, not
/// to a directory (standard input has no name to put into one).
fn stdin_file(destination: &Path) -> Result<(PathBuf, String)> {
    let no_name = || {
        Error::InvalidInput(format!(
            "standard input has no name to put into the directory {}: give the file's path",
            destination.display()
        ))
    };
    let ends_in_slash = destination.as_os_str().as_encoded_bytes().ends_with(b"/");
    if ends_in_slash || destination.is_dir() {
        return Err(no_name());
    }
    let name = destination.file_name().ok_or_else(no_name)?;
    let name = name.to_str().ok_or_else(|| {
        Error::InvalidInput(format!(
            "{}: parabyte writes standard input only to a file whose name is UTF-8",
            destination.display()
        ))
    })?;
    let directory = match destination.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    Ok((directory, name.to_owned()))
}

/// Whether the source the user named is a stream rather than a file: a FIFO, a process
/// substitution's `/dev/fd/N` (a link to a pipe), `/dev/stdin`, a character device such as
/// `/dev/null`. Read as it comes, as `-` is; what the user names is read as what it points
/// to. A pattern, or a FIFO met inside a tree, is never opened.
fn is_stream(request: &CopyRequest, source: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    if request.recursive || request.is_pattern(&source.to_string_lossy()) {
        return false;
    }
    std::fs::metadata(source).is_ok_and(|metadata| {
        let kind = metadata.file_type();
        kind.is_fifo() || kind.is_char_device()
    })
}

/// A manifest's items, and its bad lines as failures named `FILE:LINE`; `-` is standard
/// input (`parabyte ls -r --json ... | jq ... | parabyte cp --manifest - DEST`). Into a
/// directory its sources are objects; into `s3://` they may be local files too.
async fn read_manifest(path: &Path, request: &CopyRequest) -> Result<Work> {
    let (text, name) = if path == Path::new("-") {
        let read = tokio::task::spawn_blocking(|| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text).map(|_| text)
        });
        let text = read
            .await
            .map_err(std::io::Error::other)
            .and_then(|read| read)
            .map_err(|e| Error::io("cannot read the manifest from", "standard input", e))?;
        (text, "stdin".to_owned())
    } else {
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|e| Error::io("cannot read manifest", path, e))?;
        (text, path.display().to_string())
    };
    manifest_work(&text, &name, 1, request)
}

/// The work of a manifest's `text` named `name`, its first line the manifest's line
/// `first_line`: each bad line a failure named `NAME:LINE`.
fn manifest_work(text: &str, name: &str, first_line: usize, request: &CopyRequest) -> Result<Work> {
    let refusals = |errors: Vec<ManifestError>| {
        errors
            .into_iter()
            .map(|error| Failure {
                source: format!("{name}:{}", error.line + first_line - 1),
                error: Error::InvalidInput(error.message),
            })
            .collect()
    };
    if let Destination::Store(prefix) = &request.destination {
        let (items, errors) = parse_into_store(text, prefix);
        return Ok(Work::IntoStore {
            items,
            options: std::sync::Arc::new(request.options.upload.write_options()?),
            refused: refusals(errors),
        });
    }
    let manifest = Manifest::parse(text);
    Ok(Work::Items {
        items: manifest.items,
        destination: landing(request, false)?,
        refused: refusals(manifest.errors),
    })
}

/// One source to `destination` as `cp` reads it: into the directory when it is one (exists
/// as one or ends in '/'), else to that file name. Returns the item and the directory the
/// batch goes into.
fn to_path(source: ObjectUrl, destination: Landing) -> (Item, Landing) {
    let mut item = Item {
        source,
        destination: None,
        size: None,
        etag: None,
    };
    let destination = match destination {
        Landing::Path(path) if StreamTarget::device(&path, true).is_some() => {
            // A device or FIFO is written as it is, not as a name in its directory.
            item.destination = Some(std::path::absolute(&path).unwrap_or(path));
            Landing::Path(PathBuf::from("."))
        }
        Landing::Path(path) if !(path.is_dir() || path.to_string_lossy().ends_with('/')) => {
            item.destination = path.file_name().map(PathBuf::from);
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            Landing::Path(parent.unwrap_or(Path::new(".")).to_owned())
        }
        other => other,
    };
    (item, destination)
}
