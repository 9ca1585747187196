//! What `main_with` sets up around a run: how many runtime threads, the `-v` request log
//! they listen to, and the Ctrl-C and SIGTERM handlers that end it.

use parabyte::REQUEST_EVENTS;

use crate::args::Command;
use crate::status::tell;

/// Requests in flight that keep one runtime thread busy.
const REQUESTS_PER_THREAD: usize = 16;

/// Runtime threads for a command that moves objects: one for each 16 requests it may have
/// in flight, at most one a core; others keep tokio's default (one a core). Fewer streams
/// than that on more threads hand each body chunk from the thread that read it to another,
/// waking it each time: one stream of 1 GiB cost 0.40 CPU seconds on two threads and 0.27
/// on one, 1000 small objects 16 at a time 0.118 and 0.097 (docs/PROFILE.md, stop 34).
pub(crate) fn worker_threads(command: &Command) -> Option<usize> {
    let in_flight = command.requests_in_flight()?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    Some(in_flight.div_ceil(REQUESTS_PER_THREAD).clamp(1, cores))
}

/// `-v`: the library's request events as plain lines on stderr.
pub(crate) fn request_log() -> tracing::Dispatch {
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

/// Wait for Ctrl-C (SIGINT) or SIGTERM; returns the signal number, or `None` when the
/// handlers cannot be installed (the run then stops at once rather than run unstoppable).
pub(crate) async fn interrupted() -> Option<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn threads(args: &[&str]) -> Option<usize> {
        let cli = parse(std::iter::once("parabyte").chain(args.iter().copied())).unwrap();
        worker_threads(&cli.command)
    }

    #[test]
    fn threads_follow_the_requests_in_flight_up_to_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let object = "s3://b/k";
        assert_eq!(
            threads(&["cp", "--max-requests", "1", object, "out"]),
            Some(1)
        );
        assert_eq!(
            threads(&["cp", "--max-requests", "16", object, "out"]),
            Some(1)
        );
        assert_eq!(
            threads(&["cp", "--max-requests", "17", object, "out"]),
            Some(2.min(cores))
        );
        // The fewest of the three bounds counts: 2 objects of 4 ranges are 8 requests.
        assert_eq!(
            threads(&["cp", "--workers", "2", "--threads", "4", "s3://b/p/", "out"]),
            Some(1)
        );
        assert_eq!(threads(&["cp", object, "out"]), Some(8.min(cores)));
        assert_eq!(threads(&["ls", "s3://b/p/"]), None);
    }
}
