//! A `cp` meant for a Dask cluster (`--dask-scheduler`), read from the same flags for the
//! Python package to run there.

use std::ffi::OsString;
use std::path::PathBuf;

use parabyte::{StoreConfig, TransferConfig};

use crate::args::{Cli, Command};
use crate::parse::parse;
use crate::progress::ObjectLines;

/// `parabyte cp --dask-scheduler ADDRESS ...` (or with `PARABYTE_DASK_SCHEDULER` set), as
/// parsed by the same flags: the Python package runs it on the cluster (`parabyte.dask`).
#[derive(Debug, Clone)]
pub struct ClusterCopy {
    /// The Dask scheduler's address.
    pub scheduler: String,
    /// The source as given (absent with `--manifest`).
    pub source: Option<String>,
    /// The destination directory, or `None` with `--discard`.
    pub destination: Option<PathBuf>,
    /// `--manifest FILE`.
    pub manifest: Option<PathBuf>,
    /// `--recursive`.
    pub recursive: bool,
    /// `--json`.
    pub json: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// The store flags, as each worker's client takes them.
    pub store: StoreConfig,
    /// The transfer flags, as each worker's client takes them.
    pub transfer: TransferConfig,
    /// `--dask-split-bytes`: objects larger than this are fetched in pieces across tasks.
    pub split_bytes: Option<u64>,
    /// Why this command line cannot run on a cluster yet, when it cannot.
    pub refused: Option<String>,
}

/// The cluster copy `args` asks for, if it is one; every other command line (and every
/// usage error) is `main_with`'s to run or report.
pub fn cluster_copy<I, T>(args: I) -> Option<ClusterCopy>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let Ok(Cli {
        command: Command::Cp(args),
        ..
    }) = parse(args)
    else {
        return None;
    };
    let scheduler = args.dask_scheduler.clone()?;
    // With --manifest the one positional argument is the destination.
    let (source, destination) = match &args.manifest {
        Some(_) => (None, args.source.as_ref().map(PathBuf::from)),
        None => (args.source.clone(), args.destination.clone()),
    };
    let selection = &args.selection;
    let wildcard = !selection.raw && source.as_deref().is_some_and(parabyte::has_wildcard);
    let refused = if !selection.filters.is_empty() {
        Some("--exclude/--include")
    } else if selection.dryrun {
        Some("--dryrun")
    } else if wildcard {
        Some("a wildcard source")
    } else if args.source_store.to_config(&Default::default()).is_some() {
        Some("a source store of its own (--source-*)")
    } else if args.output.object_lines == ObjectLines::Always {
        // The workers report counts, not each object: a line asked for is never dropped.
        Some("--object-lines always")
    } else {
        None
    }
    .map(|what| {
        format!(
            "{what} cannot be combined with --dask-scheduler yet; run it without the cluster, \
             or pass the items to parabyte.dask.copy from Python"
        )
    });
    Some(ClusterCopy {
        refused,
        scheduler,
        source,
        destination: destination.filter(|_| !args.discard),
        manifest: args.manifest.clone(),
        recursive: args.recursive,
        split_bytes: args.dask_split_bytes.map(|size| size.0),
        json: args.output.json,
        quiet: args.output.quiet,
        store: args.store.to_config(),
        transfer: args.transfer.to_config(&args.listing),
    })
}
