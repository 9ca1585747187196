//! `parabyte`: the command line over the parabyte library. Parses flags, draws progress,
//! prints the summary, and turns the outcome into an exit status.
//!
//! A library as well as a binary, so the Python wheel's `parabyte` command runs this same
//! code: `main_with(argv)` is the whole program, from flags to exit status.

mod args;
mod buckets;
mod cat;
mod cluster;
mod completions;
mod cp;
mod dryrun;
mod du;
mod escape;
mod ls;
mod options_table;
mod parse;
mod progress;
mod rm;
mod runtime;
mod stat;
mod status;
mod summary;
mod uploads;

use std::ffi::OsString;
use std::time::Duration;

use args::Command;
use cat::cat;
use completions::print_completions;
use cp::{copy, sync_as_copy, Mode};
use du::disk_usage;
use ls::list;
use parabyte::Error;
use parse::{parse, without_misleading_tip};
use rm::remove;
use runtime::{interrupted, request_log, worker_threads};
use stat::stat;
use status::{tell, FATAL, SOME_FAILED};

pub use cluster::{cluster_job, ClusterCommand, ClusterJob, Keyword};
pub use options_table::{
    markdown, option_table, python_argument, python_keyword, python_markdown, OptionRow, Reach,
};

/// How long an interrupted run waits for the aborts of its unfinished uploads.
const ABORT_WAIT: Duration = Duration::from_secs(10);

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
    if let Some(threads) = worker_threads(&cli.command) {
        builder.worker_threads(threads);
    }
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
    // The run is a task on the runtime's threads, not the future `block_on` polls on this
    // one: each object that ends wakes the loop that starts the next, and across threads
    // every such wake is a futex call and a context switch.
    let command = runtime.spawn(async move {
        let (status, interrupted) = tokio::select! {
            status = run(cli.command, cli.verbose) => (status, false),
            signal = interrupted() => (signal.map_or(FATAL, |number| 128 + number), true),
        };
        // The run is dropped by now: each upload it left unfinished sent its abort; wait
        // for the answers, so no parts stay behind in the store.
        let unaborted = parabyte::uploads_aborted(ABORT_WAIT).await;
        (status, interrupted, unaborted)
    });
    let (status, interrupted, unaborted) = match runtime.block_on(command) {
        Ok(ended) => ended,
        Err(crashed) => {
            tell(format_args!("error: the run crashed: {crashed}"));
            (FATAL, false, 0)
        }
    };
    // Dropping the runtime drops unfinished downloads: each records what reached its
    // temporary file and keeps it to resume from, or removes it when nothing did.
    runtime.shutdown_timeout(Duration::from_secs(1));
    let kept_uploads = parabyte::uploads_kept();
    if kept_uploads > 0 {
        tell(format_args!(
            "{kept_uploads} unfinished upload(s) are kept in the store: run the same command \
             again and only their missing parts are sent; `parabyte uploads ls s3://BUCKET/` \
             lists them and `parabyte uploads abort` drops them (their parts are stored, and \
             billed, until then)"
        ));
    }
    if unaborted > 0 {
        tell(format_args!(
            "interrupted: {unaborted} unfinished multipart upload(s) could not be aborted in \
             time; their parts stay in the store until aborted (aws s3api list-multipart-uploads \
             lists them) or removed by a lifecycle rule"
        ));
    }
    if interrupted {
        // Downloads and uploads both: "nothing was kept" only when neither kept anything.
        match parabyte::kept_for_resume() {
            0 if kept_uploads == 0 => tell(format_args!(
                "interrupted: finished objects are in place; nothing unfinished was kept"
            )),
            0 => tell(format_args!("interrupted: finished objects are in place")),
            kept => tell(format_args!(
                "interrupted: finished objects are in place; {kept} unfinished download(s) \
                 keep what they fetched, hidden (.parabyte-*.tmp), and resume from there when \
                 the same command runs again"
            )),
        }
    }
    status
}

async fn run(command: Command, verbose: bool) -> u8 {
    let result = match command {
        Command::Cp(args) => copy(*args, verbose, Mode::Copy).await,
        Command::Mv(args) => copy((*args).into(), verbose, Mode::Move).await,
        Command::Sync(args) => {
            let (args, mode) = sync_as_copy(*args);
            copy(args, verbose, mode).await
        }
        Command::Cat(args) => cat(*args).await,
        Command::Du(args) => disk_usage(args).await,
        Command::Stat(args) => stat(args).await,
        Command::Rm(args) => remove(args).await,
        Command::Mb(args) => buckets::make_bucket(args).await,
        Command::Rb(args) => buckets::remove_bucket(args).await,
        Command::Ls(args) => list(args).await,
        Command::Completions { shell } => Ok(print_completions(shell)),
        Command::Uploads(args) => uploads::uploads(args).await,
    };
    result.unwrap_or_else(|error| {
        tell(format_args!("error: {error}"));
        status_of(&error)
    })
}

/// A store that could not be reached or answered with failures until the retries ran out
/// (a refused connection, 5xx, throttling) failed this run, as an object that meets them
/// fails a `cp`: 1 for `cp`, `ls` and the rest alike. Anything else that ends a command
/// (usage, credentials, a bucket that does not exist, an unwritable destination) is 2.
fn status_of(error: &Error) -> u8 {
    let unreachable_for_now = matches!(
        error,
        Error::GaveUp { .. } | Error::Network { .. } | Error::Throttled { .. }
    );
    if unreachable_for_now && !error.is_fatal() {
        SOME_FAILED
    } else {
        FATAL
    }
}
