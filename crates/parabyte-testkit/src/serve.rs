//! What the kit's own servers (the fault proxy, the hostile server) share: the accept loop
//! and a lock that outlives a panicking test thread.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// Accept connections on `listener` until `stop` fires, handing each to `each`.
pub(crate) async fn accept_until(
    listener: std::net::TcpListener,
    mut stop: oneshot::Receiver<()>,
    mut each: impl FnMut(TcpStream),
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("register the listener");
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of file descriptors, say: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        each(stream);
    }
}

/// A poisoned lock still holds good data here: a test that panicked mid-request must not
/// take the server down for the tests after it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
