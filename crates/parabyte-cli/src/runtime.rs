//! What `main_with` sets up around a run: the `-v` request log its runtime threads listen
//! to, and the Ctrl-C and SIGTERM handlers that end it.

use parabyte::REQUEST_EVENTS;

use crate::status::tell;

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
