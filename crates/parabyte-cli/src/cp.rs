//! `parabyte cp`: the library's request from the flags, the reporters that show the run,
//! and the exit status from its summary.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parabyte::{
    Client, CopyOptions, CopyRequest, Destination, Encryption, Error, Failure, Location, Reporter,
    Silent, Source, Summary, SyncCompare, SyncOptions, UploadOptions,
};

use crate::args::{CpArgs, SyncArgs, UploadArgs};
use crate::dryrun;
use crate::progress::{CopyLines, JsonLines, NamedLines, ObjectLines, ProgressBarReporter, Tee};
use crate::status::{tell, SOME_FAILED, SUCCESS};
use crate::summary::{print_json, print_summary, Failures};

/// The library's request for one `cp`: which argument is the source and which the
/// destination. What the source is, the library decides.
fn copy_request(args: &CpArgs) -> Result<CopyRequest, Error> {
    let destination_arg =
        match &args.manifest {
            // `cp --manifest FILE DEST`: the one positional argument is the destination.
            Some(_) if args.destination.is_some() => return Err(Error::InvalidInput(
                "with --manifest give only the destination (a directory or s3://bucket/prefix/): \
             parabyte cp --manifest FILE DEST"
                    .into(),
            )),
            Some(_) => args.source.as_ref().map(PathBuf::from),
            None => args.destination.clone(),
        };
    let destination = match (destination_arg, args.discard) {
        (Some(path), false) if path.as_os_str() == "-" => Destination::Stdout,
        (Some(path), false) => match path.to_str().map(Location::parse) {
            Some(Ok(Location::S3(url))) => Destination::Store(url),
            _ => Destination::Path(path),
        },
        _ => Destination::Discard,
    };
    let json = args.output.json || args.output.json_lines;
    if json && destination == Destination::Stdout {
        return Err(Error::InvalidInput(
            "--json and --json-lines print to stdout, which '-' uses for the object's bytes; drop one"
                .into(),
        ));
    }
    if let Destination::Path(path) = &destination {
        if json && is_standard_output(path) {
            return Err(Error::InvalidInput(format!(
                "--json and --json-lines print to stdout, and '{}' is stdout too; drop one",
                path.display()
            )));
        }
    }
    let selection = &args.selection;
    let filters = selection.filters()?;
    let options = CopyOptions {
        filters,
        raw: selection.raw,
        dry_run: selection.dryrun,
        upload: upload_options(&args.upload)?,
        follow_symlinks: args.upload.follow_symlinks,
    };
    let mut request = match &args.manifest {
        Some(path) => CopyRequest {
            source: Source::Manifest(path.clone()),
            destination,
            recursive: args.recursive,
            options: CopyOptions::default(),
        },
        None => CopyRequest::parse(
            args.source.as_deref().unwrap_or_default(),
            destination,
            args.recursive,
        )?,
    };
    request.options = options;
    Ok(request)
}

/// How uploaded objects are stored, from the upload flags.
fn upload_options(upload: &UploadArgs) -> Result<UploadOptions, Error> {
    let encryption = match (upload.sse.as_deref(), &upload.sse_kms_key_id) {
        (None, None) => None,
        (Some("AES256"), None) => Some(Encryption::Aes256),
        (Some("aws:kms") | None, key_id) => Some(Encryption::Kms {
            key_id: key_id.clone(),
        }),
        (Some(_), Some(_)) => {
            return Err(Error::InvalidInput(
                "--sse-kms-key-id names a KMS key: use it with --sse aws:kms".into(),
            ))
        }
        // clap admits only the two values above.
        (Some(other), None) => {
            return Err(Error::InvalidInput(format!(
                "--sse {other}: use AES256 or aws:kms"
            )))
        }
    };
    Ok(UploadOptions {
        no_clobber: upload.no_clobber,
        content_type: upload.content_type.clone(),
        guess_content_type: !upload.no_guess_mime_type,
        cache_control: upload.cache_control.clone(),
        content_encoding: upload.content_encoding.clone(),
        storage_class: upload.storage_class.clone(),
        encryption,
        metadata: upload.metadata.clone(),
    })
}

/// Failures that say a source matched nothing: shown as warnings that name the source
/// (the exit status is still 1), not as failed objects.
fn take_unmatched(summary: &mut Summary) -> Vec<Failure> {
    let (unmatched, failures) = std::mem::take(&mut summary.failures)
        .into_iter()
        .partition(|failure| matches!(failure.error, Error::NothingMatched { .. }));
    summary.failures = failures;
    summary.failed = summary.failures.len() as u64;
    unmatched
}

/// What a run of `copy` does with what it copies.
pub(crate) enum Mode {
    Copy,
    /// `mv`: each source that arrived is deleted after.
    Move,
    /// `sync`: only what is missing or changed, and deletes with --delete.
    Sync(SyncOptions),
}

/// `sync` is `cp` of a whole tree with rules of its own.
pub(crate) fn sync_as_copy(args: SyncArgs) -> (CpArgs, Mode) {
    let rules = &args.rules;
    let compare = if rules.size_only {
        SyncCompare::SizeOnly
    } else if rules.exact_timestamps {
        SyncCompare::ExactTimestamps
    } else if rules.checksum {
        SyncCompare::Checksum
    } else {
        SyncCompare::SizeAndTime
    };
    let options = SyncOptions {
        compare,
        delete: rules.delete,
        max_delete: rules.max_delete,
        delete_if_source_empty: rules.delete_if_source_empty,
    };
    let copy = CpArgs {
        source: Some(args.source),
        destination: Some(args.destination),
        manifest: None,
        recursive: true,
        selection: args.selection,
        discard: false,
        upload: args.upload,
        transfer: args.transfer,
        listing: args.listing,
        output: args.output,
        store: args.store,
        source_store: Default::default(),
        cluster: args.cluster,
        dask_split_bytes: None,
    };
    (copy, Mode::Sync(options))
}

/// `cp`, `mv` or `sync`, as `mode` says.
pub(crate) async fn copy(args: CpArgs, verbose: bool, mode: Mode) -> Result<u8, Error> {
    args.cluster.refuse_here()?;
    let request = copy_request(&args)?;
    let transfer = args.transfer.to_config(&args.listing);
    // The bar and request lines would garble each other: -v is a log, not a display. A dry
    // run prints its own lines instead.
    let dry_run = args.selection.dryrun;
    let show_progress = !args.output.quiet
        && !args.output.no_progress
        && !verbose
        && !dry_run
        && std::io::stderr().is_terminal();
    let progress = show_progress.then(|| Arc::new(ProgressBarReporter::new()));
    let mut reporters: Vec<Arc<dyn Reporter>> = Vec::new();
    if let Some(bar) = &progress {
        reporters.push(bar.clone());
    }
    let printer = dry_run.then(|| {
        let printer = dryrun::Printer::new(args.output.json, verbose);
        Arc::new(match mode {
            Mode::Move => printer.moving(),
            _ => printer,
        })
    });
    if let Some(printer) = &printer {
        reporters.push(printer.clone());
    }
    if args.output.json_lines {
        reporters.push(Arc::new(JsonLines::default()));
    }
    // Each delete and move is named (sync --delete, mv), and each copy where no bar is
    // drawn, or always if asked: a dry run names them in its own lines, --json-lines in its.
    let lines = args.output.object_lines;
    if !(args.output.quiet || args.output.json_lines || dry_run || lines == ObjectLines::Never) {
        reporters.push(Arc::new(NamedLines(progress.clone())));
        // A move is named once its source is deleted; bytes on stdout need no line.
        let each_copy = match lines {
            ObjectLines::Auto => progress.is_none(),
            ObjectLines::Always => true,
            ObjectLines::Never => false,
        };
        if each_copy && !matches!(mode, Mode::Move) && request.destination != Destination::Stdout {
            reporters.push(Arc::new(CopyLines(progress.clone())));
        }
    }
    let reporter: Arc<dyn Reporter> = match reporters.len() {
        0 => Arc::new(Silent),
        _ => Arc::new(Tee(reporters)),
    };
    let store = args.store.to_config();
    let source = args.source_store.to_config(&store);
    let client = Client::connect_reading_from(&store, source.as_ref(), transfer).await?;
    let summary = match &mode {
        Mode::Move => client.move_objects(&request, reporter).await,
        Mode::Copy => client.copy(&request, reporter).await,
        Mode::Sync(options) => client.sync(&request, options, reporter).await,
    };
    if let Some(bar) = &progress {
        bar.finish();
    }
    let mut summary = summary?;
    if args.output.json {
        print_json(&summary);
    }
    let unmatched = take_unmatched(&mut summary);
    for failure in &unmatched {
        tell(format_args!("warning: {}", failure.error));
    }
    if !args.output.quiet || summary.failed > 0 {
        // Each failure is printed once: as it happened, under the bar, or else in the list.
        // Should one not have been shown, the list has them all. A dry run moved no bytes:
        // its totals are what would be copied.
        let shown = progress.as_ref().map_or(0, |bar| bar.failures_shown());
        let failures = if shown == summary.failed {
            Failures::ShownAbove
        } else {
            Failures::List
        };
        print_summary(&summary, failures, args.output.quiet || dry_run);
    }
    if let (Some(printer), false) = (&printer, args.output.quiet) {
        let excluded = match printer.excluded() {
            0 => String::new(),
            count if verbose || args.output.json => format!(", {count} excluded by filters"),
            count => format!(", {count} excluded by filters (-v lists them)"),
        };
        let deleted = match summary.deleted {
            0 => String::new(),
            count => format!(", {count} deleted"),
        };
        let copied = match mode {
            Mode::Move => "moved",
            _ => "copied",
        };
        // One key is looked at (a HEAD), as aws's dry run looks.
        let head = match summary.requests.head {
            0 => String::new(),
            count => format!(", {count} HEAD"),
        };
        tell(format_args!(
            "(dryrun) {} object(s) would be {copied}, {} left as they are{deleted}{excluded}; {} LIST{head} and no GET request sent",
            summary.objects, summary.skipped, summary.requests.list
        ));
    }
    Ok(if summary.failed > 0 || !unmatched.is_empty() {
        SOME_FAILED
    } else {
        SUCCESS
    })
}

/// Whether `path` is the very file standard output writes to (`/dev/stdout`,
/// `/proc/self/fd/1`, or the file stdout was redirected to), where the summary would land
/// among the object's bytes. The null device keeps neither, so both may go there.
fn is_standard_output(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let identity = |path: &Path| std::fs::metadata(path).map(|m| (m.dev(), m.ino(), m.rdev()));
    let (Ok(named), Ok(stdout)) = (identity(path), identity(Path::new("/proc/self/fd/1"))) else {
        return false;
    };
    named == stdout && identity(Path::new("/dev/null")).ok() != Some(named)
}
