//! A `cp`, `sync`, `mv` or `rm` meant for a Dask cluster (`--dask-scheduler`), read from
//! the same flags for the Python package to run there (`parabyte.dask`): the job, the
//! client's options, and the command's own flags as the Python function's keywords.

use std::ffi::OsString;
use std::path::PathBuf;

use parabyte::{Error, StoreConfig, TransferConfig};

use crate::args::{Cli, ClusterArgs, Command, CpArgs, SelectionArgs, SyncRuleArgs, UploadArgs};
use crate::parse::parse;
use crate::progress::ObjectLines;

/// The command a cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterCommand {
    Cp,
    Sync,
    Mv,
    Rm,
}

impl ClusterCommand {
    /// As the command line names it.
    pub fn name(self) -> &'static str {
        match self {
            ClusterCommand::Cp => "cp",
            ClusterCommand::Sync => "sync",
            ClusterCommand::Mv => "mv",
            ClusterCommand::Rm => "rm",
        }
    }
}

/// A value of one of the command's own flags, as its Python keyword takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keyword {
    Switch(bool),
    Number(u64),
    Text(String),
    Texts(Vec<String>),
    Pairs(Vec<(String, String)>),
}

/// `parabyte cp|sync|mv|rm --dask-scheduler ADDRESS ...` (or with `PARABYTE_DASK_SCHEDULER`
/// set), as parsed by the same flags.
#[derive(Debug, Clone)]
pub struct ClusterJob {
    pub command: ClusterCommand,
    /// The Dask scheduler's address.
    pub scheduler: String,
    /// The source as given (absent with `--manifest`).
    pub source: Option<String>,
    /// The destination, or `None` with `--discard` (and for `rm`).
    pub destination: Option<PathBuf>,
    /// `--manifest FILE`.
    pub manifest: Option<PathBuf>,
    /// `--recursive` (a sync takes a tree whole).
    pub recursive: bool,
    /// `--json`.
    pub json: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// The store flags, as each worker's client takes them.
    pub store: StoreConfig,
    /// The transfer flags, as each worker's client takes them.
    pub transfer: TransferConfig,
    /// `--dask-split-bytes`: objects larger than this are moved in pieces across tasks.
    pub split_bytes: Option<u64>,
    /// The command's own flags, as the Python function's keywords.
    pub keywords: Vec<(&'static str, Keyword)>,
    /// Why this command line cannot run on a cluster yet, when it cannot.
    pub refused: Option<String>,
}

impl ClusterArgs {
    /// This binary runs nothing on a cluster: the `parabyte` the Python package installs
    /// does, from the same flags.
    pub(crate) fn refuse_here(&self) -> Result<(), Error> {
        match &self.dask_scheduler {
            None => Ok(()),
            Some(scheduler) => Err(Error::InvalidInput(format!(
                "--dask-scheduler {scheduler} (or PARABYTE_DASK_SCHEDULER) runs the job on a \
                 Dask cluster, which this parabyte cannot: pip install 'parabyte[dask]' and run \
                 the `parabyte` command it installs, or unset PARABYTE_DASK_SCHEDULER to run it \
                 here"
            ))),
        }
    }
}

/// The cluster job `args` asks for, if it is one; every other command line (and every
/// usage error) is `main_with`'s to run or report.
pub fn cluster_job<I, T>(args: I) -> Option<ClusterJob>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let Ok(Cli { command, .. }) = parse(args) else {
        return None;
    };
    match command {
        Command::Cp(args) => {
            let scheduler = args.cluster.dask_scheduler.clone()?;
            Some(copy_job(ClusterCommand::Cp, scheduler, *args))
        }
        Command::Mv(args) => {
            let scheduler = args.cluster.dask_scheduler.clone()?;
            Some(copy_job(ClusterCommand::Mv, scheduler, (*args).into()))
        }
        Command::Sync(args) => {
            let scheduler = args.cluster.dask_scheduler.clone()?;
            let mut keywords = sync_keywords(&args.rules);
            let mut refused = selection_keywords(&args.selection, &mut keywords);
            upload_keywords(&args.upload, &mut keywords);
            refused = refused.or_else(|| object_lines(args.output.object_lines));
            Some(ClusterJob {
                command: ClusterCommand::Sync,
                scheduler,
                source: Some(args.source),
                destination: Some(args.destination),
                manifest: None,
                recursive: true,
                json: args.output.json,
                quiet: args.output.quiet,
                store: args.store.to_config(),
                transfer: args.transfer.to_config(&args.listing),
                split_bytes: None,
                keywords,
                refused: refused.map(cannot),
            })
        }
        Command::Rm(args) => {
            let scheduler = args.cluster.dask_scheduler.clone()?;
            let mut keywords = Vec::new();
            let mut refused = selection_keywords(&args.selection, &mut keywords);
            refused = refused.or_else(|| object_lines(args.output.object_lines));
            let store = args.store.to_config();
            let transfer = args.transfer.to_config(&args.listing);
            Some(ClusterJob {
                command: ClusterCommand::Rm,
                scheduler,
                source: Some(args.source),
                destination: None,
                manifest: None,
                recursive: args.recursive,
                json: args.output.json,
                quiet: args.output.quiet,
                store,
                transfer,
                split_bytes: None,
                keywords,
                refused: refused.map(cannot),
            })
        }
        _ => None,
    }
}

/// A `cp` or `mv`: a download as `parabyte.dask.copy` runs it, or (into `s3://`) an
/// upload or a copy inside the store.
fn copy_job(command: ClusterCommand, scheduler: String, args: CpArgs) -> ClusterJob {
    // With --manifest the one positional argument is the destination.
    let (source, destination) = match &args.manifest {
        Some(_) => (None, args.source.as_ref().map(PathBuf::from)),
        None => (args.source.clone(), args.destination.clone()),
    };
    let selection = &args.selection;
    let into_store = destination
        .as_ref()
        .is_some_and(|destination| destination.to_string_lossy().starts_with("s3://"));
    let mut keywords = Vec::new();
    let mut refused = match into_store {
        true => selection_keywords(selection, &mut keywords),
        // Downloads on a cluster take no filters yet: refused, never silently dropped.
        false => (!selection.filters.is_empty())
            .then(|| "--exclude/--include".to_owned())
            .or_else(|| selection.dryrun.then(|| "--dryrun".to_owned())),
    };
    if into_store {
        upload_keywords(&args.upload, &mut keywords);
    }
    let wildcard = !selection.raw && source.as_deref().is_some_and(parabyte::has_wildcard);
    refused = refused
        .or_else(|| wildcard.then(|| "a wildcard source".to_owned()))
        .or_else(|| {
            let own_store = args.source_store.to_config(&Default::default()).is_some();
            (own_store && !into_store).then(|| "a source store of its own (--source-*)".into())
        })
        .or_else(|| object_lines(args.output.object_lines));
    let store = args.store.to_config();
    ClusterJob {
        command,
        refused: refused.map(cannot),
        scheduler,
        source,
        destination: destination.filter(|_| !args.discard),
        manifest: args.manifest.clone(),
        recursive: args.recursive,
        split_bytes: args.dask_split_bytes.map(|size| size.0),
        json: args.output.json,
        quiet: args.output.quiet,
        transfer: args.transfer.to_config(&args.listing),
        store,
        keywords,
    }
}

/// The workers report counts, not each object: a line asked for is never dropped.
fn object_lines(lines: ObjectLines) -> Option<String> {
    (lines == ObjectLines::Always).then(|| "--object-lines always".to_owned())
}

fn cannot(what: String) -> String {
    format!(
        "{what} cannot be combined with --dask-scheduler yet; run it without the cluster, or \
         from Python with parabyte.dask"
    )
}

/// `--exclude`/`--include`/`--raw` as keywords; why not, when they cannot be: a dry run
/// (nothing to spread), or filters whose order Python's keywords cannot keep (they take
/// every exclude, then every include).
fn selection_keywords(
    selection: &SelectionArgs,
    keywords: &mut Vec<(&'static str, Keyword)>,
) -> Option<String> {
    if selection.dryrun {
        return Some("--dryrun".into());
    }
    let first_include = selection.filters.iter().position(|filter| filter.include);
    let exclude_after_include =
        first_include.is_some_and(|first| selection.filters[first..].iter().any(|f| !f.include));
    if exclude_after_include {
        return Some("--exclude after --include".into());
    }
    let patterns = |include: bool| {
        let chosen = selection
            .filters
            .iter()
            .filter(move |f| f.include == include);
        chosen
            .map(|filter| filter.pattern.clone())
            .collect::<Vec<_>>()
    };
    keywords.push(("exclude", Keyword::Texts(patterns(false))));
    keywords.push(("include", Keyword::Texts(patterns(true))));
    keywords.push(("raw", Keyword::Switch(selection.raw)));
    None
}

/// How uploaded objects are stored, as keywords.
fn upload_keywords(upload: &UploadArgs, keywords: &mut Vec<(&'static str, Keyword)>) {
    let text = |value: &Option<String>| value.clone().map(Keyword::Text);
    keywords.push(("follow_symlinks", Keyword::Switch(upload.follow_symlinks)));
    keywords.push(("no_clobber", Keyword::Switch(upload.no_clobber)));
    keywords.push((
        "guess_content_type",
        Keyword::Switch(!upload.no_guess_mime_type),
    ));
    let texts = [
        ("content_type", &upload.content_type),
        ("cache_control", &upload.cache_control),
        ("content_encoding", &upload.content_encoding),
        ("storage_class", &upload.storage_class),
        ("sse", &upload.sse),
        ("sse_kms_key_id", &upload.sse_kms_key_id),
    ];
    for (name, value) in texts {
        if let Some(value) = text(value) {
            keywords.push((name, value));
        }
    }
    if !upload.metadata.is_empty() {
        keywords.push(("metadata", Keyword::Pairs(upload.metadata.clone())));
    }
}

/// A sync's rules, as keywords.
fn sync_keywords(rules: &SyncRuleArgs) -> Vec<(&'static str, Keyword)> {
    let compare = if rules.size_only {
        "size_only"
    } else if rules.exact_timestamps {
        "exact_timestamps"
    } else if rules.checksum {
        "checksum"
    } else {
        "size_and_time"
    };
    let mut keywords = vec![
        ("delete", Keyword::Switch(rules.delete)),
        ("compare", Keyword::Text(compare.into())),
    ];
    if let Some(max) = rules.max_delete {
        keywords.push(("max_delete", Keyword::Number(max)));
    }
    if rules.delete_if_source_empty {
        keywords.push(("delete_if_source_empty", Keyword::Switch(true)));
    }
    keywords
}
