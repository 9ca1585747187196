//! `parabyte`: the command line over the parabyte library. Parses flags, draws progress,
//! prints the summary, and turns the outcome into an exit status.
//!
//! A library as well as a binary, so the Python wheel's `parabyte` command runs this same
//! code: `main_with(argv)` is the whole program, from flags to exit status.

mod args;
mod dryrun;
mod escape;
mod progress;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};
use futures::StreamExt;
use parabyte::{
    BucketEntry, Client, CopyOptions, CopyRequest, Destination, Error, Failure, Filter, Listed,
    ObjectEntry, Reporter, S3Url, Silent, Source, StoreConfig, Summary, Timestamp, TransferConfig,
    REQUEST_EVENTS,
};

use args::{order_filters, Cli, Command, CpArgs, LsArgs};
use progress::{JsonLines, ProgressBarReporter, Tee};

/// Exit statuses, as documented in `--help`.
const SUCCESS: u8 = 0;
const SOME_FAILED: u8 = 1;
const FATAL: u8 = 2;

/// Run the command line on `args` (the program name first, as in `std::env::args_os`) and
/// return its exit status. Ctrl-C and SIGTERM end the run with 128 + the signal number, so
/// the caller must leave those signals to this function while it runs.
pub fn main_with<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match parse(args) {
        Ok(cli) => cli,
        // --help and --version land here too, with status 0.
        Err(error) => {
            let error = without_misleading_tip(error);
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(FATAL);
        }
    };
    let request_log = cli.verbose.then(request_log);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(log) = request_log.clone() {
        // Only this run's threads listen: a process may run the command more than once (the
        // Python wheel's `parabyte`). A runtime thread keeps it until it ends.
        builder.on_thread_start(move || std::mem::forget(tracing::dispatcher::set_default(&log)));
    }
    let _listening = request_log.as_ref().map(tracing::dispatcher::set_default);
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            tell(format_args!(
                "error: cannot start the async runtime: {error}"
            ));
            return FATAL;
        }
    };
    let status = runtime.block_on(async {
        tokio::select! {
            status = run(cli.command, cli.verbose) => status,
            signal = interrupted() => {
                tell(format_args!(
                    "interrupted: finished objects are in place; parts of unfinished large objects \
                     are kept hidden (.parabyte-*.tmp) and resume when the same command runs again"
                ));
                signal.map_or(FATAL, |number| 128 + number)
            }
        }
    });
    // Dropping the runtime drops unfinished downloads, which removes their temporary files.
    runtime.shutdown_timeout(Duration::from_secs(1));
    status
}

/// `-v`: the library's request events as plain lines on stderr.
fn request_log() -> tracing::Dispatch {
    use tracing_subscriber::layer::SubscriberExt;
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .without_time()
        .with_level(false)
        .with_target(false);
    let only_requests = tracing_subscriber::filter::Targets::new()
        .with_target(REQUEST_EVENTS, tracing::Level::INFO);
    tracing::Dispatch::new(
        tracing_subscriber::registry()
            .with(tracing_subscriber::Layer::with_filter(lines, only_requests)),
    )
}

/// clap answers an unknown flag (`--bwlimit` from rclone, `--sse` from the AWS CLI) with
/// "to pass '--bwlimit' as a value, use '-- --bwlimit'", which would make a source or
/// destination of it. Say instead that parabyte has no such option; a tip naming a similar
/// option that exists stays.
fn without_misleading_tip(mut error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument {
        return error;
    }
    let flag = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(flag)) => flag.clone(),
        _ => "this option".to_owned(),
    };
    let mut tips: Vec<clap::builder::StyledStr> = match error.get(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(tips)) => tips
            .iter()
            .filter(|tip| !tip.to_string().contains("as a value"))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    tips.push(format!("parabyte has no option '{flag}'; '--help' lists the options it has").into());
    error.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    error
}

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

/// The command line as clap reads it, with `--exclude`/`--include` in the order given.
fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    order_filters(&mut cli, &matches);
    Ok(cli)
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

/// Wait for Ctrl-C (SIGINT) or SIGTERM; returns the signal number, or `None` when the
/// handlers cannot be installed (the run then stops at once rather than run unstoppable).
async fn interrupted() -> Option<u8> {
    use tokio::signal::unix::{signal, SignalKind};
    let (mut interrupt, mut terminate) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(interrupt), Ok(terminate)) => (interrupt, terminate),
        (Err(error), _) | (_, Err(error)) => {
            tell(format_args!(
                "error: cannot listen for Ctrl-C and SIGTERM: {error}"
            ));
            return None;
        }
    };
    tokio::select! {
        _ = interrupt.recv() => Some(2),
        _ = terminate.recv() => Some(15),
    }
}

/// `parabyte completions SHELL`: the completion script on stdout.
fn print_completions(shell: clap_complete::Shell) -> u8 {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "parabyte", &mut script);
    let mut out = std::io::stdout().lock();
    match out.write_all(&script).and_then(|()| out.flush()) {
        Ok(()) => SUCCESS,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => SUCCESS,
        Err(error) => {
            tell(format_args!(
                "error: cannot write the completions to stdout: {error}"
            ));
            FATAL
        }
    }
}

async fn run(command: Command, verbose: bool) -> u8 {
    let result = match command {
        Command::Cp(args) => copy(*args, verbose).await,
        Command::Ls(args) => list(args).await,
        Command::Completions { shell } => Ok(print_completions(shell)),
    };
    result.unwrap_or_else(|error| {
        tell(format_args!("error: {error}"));
        FATAL
    })
}

/// One line on stderr. `eprintln!` panics when stderr is a pipe nobody reads; a message
/// nobody can read is no reason to end with a panic.
fn tell(line: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The library's request for one `cp`: which argument is the source and which the
/// destination. What the source is, the library decides.
fn copy_request(args: &CpArgs) -> Result<CopyRequest, Error> {
    let destination_arg = match &args.manifest {
        // `cp --manifest FILE DEST`: the one positional argument is the destination.
        Some(_) if args.destination.is_some() => return Err(Error::InvalidInput(
            "with --manifest give only the destination directory: parabyte cp --manifest FILE DEST"
                .into(),
        )),
        Some(_) => args.source.as_ref().map(PathBuf::from),
        None => args.destination.clone(),
    };
    let destination = match (destination_arg, args.discard) {
        (Some(path), false) if path.as_os_str() == "-" => Destination::Stdout,
        (Some(path), false) => Destination::Path(path),
        _ => Destination::Discard,
    };
    if (args.output.json || args.output.json_lines) && destination == Destination::Stdout {
        return Err(Error::InvalidInput(
            "--json and --json-lines print to stdout, which '-' uses for the object's bytes; drop one"
                .into(),
        ));
    }
    let selection = &args.selection;
    let filters = selection
        .filters
        .iter()
        .map(|filter| match filter.include {
            true => Filter::include(&filter.pattern),
            false => Filter::exclude(&filter.pattern),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options = CopyOptions {
        filters,
        raw: selection.raw,
        dry_run: selection.dryrun,
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

async fn copy(args: CpArgs, verbose: bool) -> Result<u8, Error> {
    if let Some(scheduler) = &args.dask_scheduler {
        return Err(Error::InvalidInput(format!(
            "--dask-scheduler {scheduler} (or PARABYTE_DASK_SCHEDULER) runs the copy on a Dask \
             cluster, which this parabyte cannot: pip install 'parabyte[dask]' and run the \
             `parabyte` command it installs, or unset PARABYTE_DASK_SCHEDULER to copy here"
        )));
    }
    let request = copy_request(&args)?;
    let transfer = args.transfer.to_config(&args.listing);
    // The bar and request lines would garble each other: -v is a log, not a display. A dry
    // run prints its own lines instead.
    let dry_run = args.selection.dryrun;
    let show_progress =
        !args.output.quiet && !verbose && !dry_run && std::io::stderr().is_terminal();
    let progress = show_progress.then(|| Arc::new(ProgressBarReporter::new()));
    let mut reporters: Vec<Arc<dyn Reporter>> = Vec::new();
    if let Some(bar) = &progress {
        reporters.push(bar.clone());
    }
    if dry_run {
        reporters.push(Arc::new(dryrun::Printer::new(args.output.json)));
    }
    if args.output.json_lines {
        reporters.push(Arc::new(JsonLines::default()));
    }
    let reporter: Arc<dyn Reporter> = match reporters.len() {
        0 => Arc::new(Silent),
        _ => Arc::new(Tee(reporters)),
    };
    let client = Client::connect(&args.store.to_config(), transfer).await?;
    let summary = client.copy(&request, reporter).await;
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
    if dry_run && !args.output.quiet {
        tell(format_args!(
            "(dryrun) {} object(s) would be copied, {} left as they are; {} LIST and no GET request sent",
            summary.objects, summary.skipped, summary.requests.list
        ));
    }
    Ok(if summary.failed > 0 || !unmatched.is_empty() {
        SOME_FAILED
    } else {
        SUCCESS
    })
}

/// How the summary shows failures: each is printed once, live or at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failures {
    List,
    ShownAbove,
}

/// The `--json` summary on stdout. A reader that has gone away (`| head -0`, a closed
/// pipe) loses it quietly: the objects are in place and the exit status still says so.
fn print_json(summary: &Summary) {
    let written = serde_json::to_writer(std::io::stdout().lock(), summary)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(std::io::stdout().lock()))
        .and_then(|()| std::io::stdout().flush());
    match written {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            tell(format_args!(
                "warning: the --json summary could not be written to stdout: {error}"
            ));
        }
        _ => {}
    }
}

/// One failure: the object, then what went wrong; the object once, since most errors
/// name it themselves.
pub(crate) fn failure_line(source: &str, error: &str) -> String {
    if error.contains(source) {
        error.to_owned()
    } else {
        format!("{source}: {error}")
    }
}

fn print_summary(summary: &Summary, failures: Failures, only_failures: bool) {
    let mut err = std::io::stderr().lock();
    if !summary.failures.is_empty() {
        match failures {
            Failures::ShownAbove => {
                let _ = writeln!(
                    err,
                    "failed {} object(s), each shown above as it failed",
                    summary.failures.len()
                );
            }
            Failures::List => {
                let _ = writeln!(err, "failed {} object(s):", summary.failures.len());
                for failure in &summary.failures {
                    let source = escape::printable(&failure.source);
                    let _ = writeln!(
                        err,
                        "  {}",
                        failure_line(&source, &failure.error.to_string())
                    );
                }
            }
        }
    }
    if only_failures {
        return;
    }
    for line in summary_lines(summary) {
        let _ = writeln!(err, "{line}");
    }
}

/// The summary as text: only the lines that say something about this run.
fn summary_lines(summary: &Summary) -> Vec<String> {
    let seconds = summary.elapsed.as_secs_f64();
    let by_time = match summary.skipped_by_size_and_time {
        0 => String::new(),
        n => format!(" ({n} of them by size and modification time alone)"),
    };
    let mut lines = vec![format!(
        "{} object(s), {} in {seconds:.2}s ({}/s); {} already complete and skipped{by_time}",
        summary.objects,
        human_bytes(summary.bytes as f64),
        human_bytes(summary.bytes_per_second),
        summary.skipped,
    )];
    if summary.resumed > 0 {
        lines.push(format!(
            "resumed {} object(s) where an earlier run stopped: {} already on disk, not fetched again",
            summary.resumed,
            human_bytes(summary.resumed_bytes as f64),
        ));
    }
    let requests = summary.requests;
    // A local copy sends nothing: no line of zeros.
    if requests.get + requests.list + requests.head + summary.connections + summary.retries > 0 {
        lines.push(format!(
            "requests: {} GET, {} LIST, {} HEAD; {} connection(s) opened; {} retr{}",
            requests.get,
            requests.list,
            requests.head,
            summary.connections,
            summary.retries,
            if summary.retries == 1 { "y" } else { "ies" },
        ));
    }
    let verified = summary.verified;
    if verified.checksum + verified.md5 + verified.size_only > 0 {
        lines.push(format!(
            "verified: {} by the store's checksum, {} by the MD5 in the ETag, {} by size only",
            verified.checksum, verified.md5, verified.size_only,
        ));
    }
    lines
}

fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

async fn list(args: LsArgs) -> Result<u8, Error> {
    let bucket_list = args
        .url
        .as_deref()
        .is_none_or(|url| matches!(url, "s3://" | "s3:"));
    if bucket_list {
        return list_buckets(&args).await;
    }
    let url = S3Url::parse(args.url.as_deref().unwrap_or_default())?;
    let client = Client::connect(&args.store.to_config(), args.listing.to_config()).await?;
    let mut pages = std::pin::pin!(client.list_pages(&url, args.recursive));
    let mut out = std::io::stdout().lock();
    // One level shows names relative to the prefix's last '/', as `aws s3 ls` does:
    // `ls s3://b/imgs` shows `PRE imgs/`, `ls s3://b/imgs/p1` shows `p1.jpg`.
    let folder = &url.key[..url.key.rfind('/').map_or(0, |slash| slash + 1)];
    let shown = |key: &str| -> String {
        let name = if args.recursive {
            key
        } else {
            key.strip_prefix(folder).unwrap_or(key)
        };
        escape::printable(name).into_owned()
    };
    let full_url = |key: &str| format!("s3://{}/{key}", url.bucket);
    let (mut objects, mut bytes, mut entries_listed) = (0u64, 0u64, 0u64);
    while let Some(page) = pages.next().await {
        let mut page = match page {
            // Lines already printed stay; the broken listing is a failure, not a fatal error.
            Err(error @ Error::BadListing { .. }) => {
                tell(format_args!("error: {error}"));
                return Ok(SOME_FAILED);
            }
            page => page?,
        };
        if !args.json {
            // aws s3 ls prints each page's folders before its objects.
            page.sort_by_key(|entry| matches!(entry, Listed::Object(_)));
        }
        for entry in page {
            entries_listed += 1;
            if let Listed::Object(object) = &entry {
                objects += 1;
                bytes += object.size;
            }
            let line = match entry {
                Listed::Object(object) if args.json => json_line(&ObjectLine {
                    url: full_url(&object.key),
                    object: &object,
                }),
                Listed::Prefix(prefix) if args.json => json_line(&PrefixLine {
                    url: full_url(&prefix),
                    prefix: &prefix,
                }),
                Listed::Object(object) => format!(
                    "{} {:>10} {}",
                    date_column(object.last_modified),
                    object.size,
                    shown(&object.key)
                ),
                Listed::Prefix(prefix) => format!("{:>30} {}", "PRE", shown(&prefix)),
            };
            if writeln!(out, "{line}").is_err() {
                return Ok(SUCCESS); // stdout closed (e.g. piped into head): stop quietly
            }
        }
    }
    if args.summarize {
        let line = if args.json {
            serde_json::json!({ "total_objects": objects, "total_bytes": bytes }).to_string()
        } else {
            format!(
                "\nTotal Objects: {objects}\n   Total Size: {bytes} ({})",
                human_bytes(bytes as f64)
            )
        };
        let _ = writeln!(out, "{line}");
    }
    if entries_listed == 0 {
        // As `cp` of a prefix that holds nothing, and as `aws s3 ls`: exit 1, with a warning.
        tell(format_args!(
            "warning: {}: nothing listed under this prefix; check the spelling of the bucket and prefix",
            url
        ));
        return Ok(SOME_FAILED);
    }
    Ok(SUCCESS)
}

/// `ls s3://` (or `ls` alone): every bucket with its creation date, as `aws s3 ls` prints them.
async fn list_buckets(args: &LsArgs) -> Result<u8, Error> {
    let client = Client::connect(&args.store.to_config(), args.listing.to_config()).await?;
    let buckets = client.list_buckets().await?;
    let mut out = std::io::stdout().lock();
    for bucket in &buckets {
        let line = if args.json {
            json_line(&BucketLine {
                url: format!("s3://{}/", bucket.name),
                bucket,
            })
        } else {
            format!(
                "{} {}",
                date_column(bucket.creation_date),
                escape::printable(&bucket.name)
            )
        };
        if writeln!(out, "{line}").is_err() {
            return Ok(SUCCESS);
        }
    }
    Ok(SUCCESS)
}

/// `2026-11-22 18:34:48` in the local time zone, as `aws s3 ls` prints it, or blanks of the
/// same width when the store gave no time.
fn date_column(time: Option<Timestamp>) -> String {
    time.map(|t| Timestamp::from_unix_millis(t.unix_millis() + 1000 * utc_offset_seconds(t)))
        .and_then(|t| t.to_string().replace('T', " ").get(..19).map(str::to_owned))
        .unwrap_or_else(|| " ".repeat(19))
}

/// The local time zone's offset from UTC at `time` (TZ, else /etc/localtime), in seconds;
/// 0 when the C library cannot say.
fn utc_offset_seconds(time: Timestamp) -> i64 {
    // time_t is 64 bits wide on every target parabyte builds for.
    let seconds = time.unix_millis().div_euclid(1000) as libc::time_t;
    // SAFETY: `tm` is plain data, and localtime_r only writes into it (thread-safe).
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals for the duration of the call.
    let converted = unsafe { libc::localtime_r(&seconds, &mut tm) };
    if converted.is_null() {
        0
    } else {
        tm.tm_gmtoff
    }
}

/// One `ls --json` line; keys are data from the store, so raw controls are escaped.
fn json_line(entry: &impl serde::Serialize) -> String {
    // Plain structs of strings and numbers: serialising them cannot fail.
    escape::json_line(serde_json::to_string(entry).unwrap_or_default())
}

/// An object in `ls --json`: its full URL first (what `cp --manifest` reads), then the
/// listing's fields.
#[derive(serde::Serialize)]
struct ObjectLine<'a> {
    url: String,
    #[serde(flatten)]
    object: &'a ObjectEntry,
}

/// A "folder" in `ls --json`.
#[derive(serde::Serialize)]
struct PrefixLine<'a> {
    url: String,
    prefix: &'a str,
}

/// A bucket in `ls s3:// --json`.
#[derive(serde::Serialize)]
struct BucketLine<'a> {
    url: String,
    #[serde(flatten)]
    bucket: &'a BucketEntry,
}
