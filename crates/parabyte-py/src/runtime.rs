//! The one tokio runtime every call shares: the transfers run on it, and both the sync
//! waits (`run.rs`) and the asyncio awaitables (`awaitable.rs`) hand their futures to it.

use std::sync::OnceLock;

/// The runtime every call shares, sync or async, from any thread.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("parabyte")
            .enable_all()
            .build()
            .expect("cannot start the parabyte runtime")
    })
}
