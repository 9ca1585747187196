//! `parabyte`: the command line over the parabyte library. Parses flags, draws progress,
//! prints the summary, and turns the outcome into an exit status.
//!
//! A library as well as a binary, so the Python wheel's `parabyte` command runs this same
//! code: `main_with(argv)` is the whole program, from flags to exit status.

mod args;
mod escape;
mod progress;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use futures::StreamExt;
use parabyte::{
    Client, CopyRequest, Destination, Error, Listed, Reporter, S3Url, Silent, Source, Summary,
};

use args::{Cli, Command, CpArgs, LsArgs};
use progress::ProgressBarReporter;

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
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        // --help and --version land here too, with status 0.
        Err(error) => {
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(FATAL);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
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
            status = run(cli.command) => status,
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

async fn run(command: Command) -> u8 {
    let result = match command {
        Command::Cp(args) => copy(args).await,
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
    if args.output.json && destination == Destination::Stdout {
        return Err(Error::InvalidInput(
            "--json prints to stdout, which '-' uses for the object's bytes; drop one".into(),
        ));
    }
    match &args.manifest {
        Some(path) => Ok(CopyRequest {
            source: Source::Manifest(path.clone()),
            destination,
            recursive: args.recursive,
        }),
        None => CopyRequest::parse(
            args.source.as_deref().unwrap_or_default(),
            destination,
            args.recursive,
        ),
    }
}

async fn copy(args: CpArgs) -> Result<u8, Error> {
    let request = copy_request(&args)?;
    let transfer = args.transfer.to_config(&args.listing);
    let show_progress = !args.output.quiet && std::io::stderr().is_terminal();
    let progress = show_progress.then(|| Arc::new(ProgressBarReporter::new()));
    let reporter: Arc<dyn Reporter> = match &progress {
        Some(bar) => bar.clone(),
        None => Arc::new(Silent),
    };
    let client = Client::connect(&args.store.to_config(), transfer).await?;
    let summary = client.copy(&request, reporter).await;
    if let Some(bar) = &progress {
        bar.finish();
    }
    let summary = summary?;
    if args.output.json {
        print_json(&summary);
    }
    if !args.output.quiet || summary.failed > 0 {
        print_summary(&summary, args.output.quiet);
    }
    Ok(if summary.failed > 0 {
        SOME_FAILED
    } else {
        SUCCESS
    })
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

fn print_summary(summary: &Summary, only_failures: bool) {
    let mut err = std::io::stderr().lock();
    if !summary.failures.is_empty() {
        let _ = writeln!(err, "failed {} object(s):", summary.failures.len());
        for failure in &summary.failures {
            let _ = writeln!(err, "  {}: {}", failure.source, failure.error);
        }
    }
    if only_failures {
        return;
    }
    let seconds = summary.elapsed.as_secs_f64();
    let _ = writeln!(
        err,
        "{} object(s), {} in {seconds:.2}s ({}/s); {} already complete and skipped",
        summary.objects,
        human_bytes(summary.bytes as f64),
        human_bytes(summary.bytes_per_second),
        summary.skipped,
    );
    let requests = summary.requests;
    let _ = writeln!(
        err,
        "requests: {} GET, {} LIST, {} HEAD; {} connection(s) opened; {} retr{}",
        requests.get,
        requests.list,
        requests.head,
        summary.connections,
        summary.retries,
        if summary.retries == 1 { "y" } else { "ies" },
    );
    let verified = summary.verified;
    let _ = writeln!(
        err,
        "verified: {} by the store's checksum, {} by the MD5 in the ETag, {} by size only",
        verified.checksum, verified.md5, verified.size_only,
    );
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
    let url = S3Url::parse(&args.url)?;
    let client = Client::connect(&args.store.to_config(), args.listing.to_config()).await?;
    let mut entries = std::pin::pin!(client.list(&url, args.recursive));
    let mut out = std::io::stdout().lock();
    // Non-recursive listings show names relative to the prefix, as `aws s3 ls` does.
    let shown = |key: &str| -> String {
        let name = if args.recursive {
            key
        } else {
            key.strip_prefix(url.key.as_str()).unwrap_or(key)
        };
        escape::printable(name).into_owned()
    };
    let (mut objects, mut bytes) = (0u64, 0u64);
    while let Some(entry) = entries.next().await {
        let entry = match entry {
            // Lines already printed stay; the broken listing is a failure, not a fatal error.
            Err(error @ Error::BadListing { .. }) => {
                eprintln!("error: {error}");
                return Ok(SOME_FAILED);
            }
            entry => entry?,
        };
        if let Listed::Object(object) = &entry {
            objects += 1;
            bytes += object.size;
        }
        let line = match entry {
            Listed::Object(object) if args.json => {
                escape::json_line(serde_json::to_string(&object).expect("entries serialise"))
            }
            Listed::Prefix(prefix) if args.json => {
                escape::json_line(serde_json::json!({ "prefix": prefix }).to_string())
            }
            Listed::Object(object) => {
                let when = object
                    .last_modified
                    .and_then(|t| t.to_string().replace('T', " ").get(..19).map(str::to_owned))
                    .unwrap_or_else(|| " ".repeat(19));
                format!("{when} {:>12} {}", object.size, shown(&object.key))
            }
            Listed::Prefix(prefix) => format!("{:>19} {:>12} {}", "", "PRE", shown(&prefix)),
        };
        if writeln!(out, "{line}").is_err() {
            return Ok(SUCCESS); // stdout closed (e.g. piped into head): stop quietly
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
    Ok(SUCCESS)
}
