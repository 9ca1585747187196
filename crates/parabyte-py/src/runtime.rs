//! The one tokio runtime every call shares: the transfers run on it, and both the sync
//! waits (`run.rs`) and the asyncio awaitables (`awaitable.rs`) hand their futures to it.
//!
//! `os.fork()` copies the runtime's memory but none of its threads, so a child that used
//! the parent's runtime would wait forever. The runtime remembers the process it was built
//! in (as obstore does) and a child builds its own on first use.

use std::sync::{Mutex, PoisonError};

/// The runtime of this process and the process id it was built in.
static RUNTIME: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);

/// The runtime every call shares, sync or async, from any thread of this process.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    let pid = std::process::id();
    let mut current = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    match *current {
        Some((built_in, runtime)) if built_in == pid => runtime,
        // None, or the parent's: its threads did not survive the fork, so it is left
        // alone (dropping it would wait for them) and a new one takes its place.
        _ => {
            let runtime: &'static _ = Box::leak(Box::new(
                tokio::runtime::Builder::new_multi_thread()
                    .thread_name("parabyte")
                    .enable_all()
                    .build()
                    .expect("cannot start the parabyte runtime"),
            ));
            *current = Some((pid, runtime));
            runtime
        }
    }
}
