//! The proxy's side of one client connection, wrapped so that a body fault can see whether
//! everything written so far has left for the client, and can make the close a reset.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// What body faults may ask of a connection, shared between its stream and its responses.
#[derive(Debug, Default)]
pub(super) struct Connection {
    reset_on_close: AtomicBool,
    /// Whether the last write found the socket full, so hyper still holds bytes for it.
    write_blocked: AtomicBool,
}

impl Connection {
    /// Close with SO_LINGER 0 when the connection ends, which sends RST instead of FIN.
    pub(super) fn reset_on_close(&self) {
        self.reset_on_close.store(true, Ordering::SeqCst);
    }

    /// Whether bytes already handed to hyper may still be waiting to be written. Only
    /// meaningful after hyper has had a chance to flush (a body that returned `Pending`).
    pub(super) fn write_blocked(&self) -> bool {
        self.write_blocked.load(Ordering::SeqCst)
    }
}

/// A TCP stream that reports its writes to its [`Connection`].
#[derive(Debug)]
pub(super) struct WatchedStream {
    stream: TcpStream,
    connection: Arc<Connection>,
}

impl WatchedStream {
    pub(super) fn new(stream: TcpStream, connection: Arc<Connection>) -> WatchedStream {
        WatchedStream { stream, connection }
    }

    fn note<T>(&self, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        self.connection
            .write_blocked
            .store(poll.is_pending(), Ordering::SeqCst);
        poll
    }
}

impl AsyncRead for WatchedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.note(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.note(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Drop for WatchedStream {
    fn drop(&mut self) {
        if self.connection.reset_on_close.load(Ordering::SeqCst) {
            // A zero linger never blocks, which is what the deprecation warns about;
            // `set_zero_linger` would say so but needs a newer tokio than the workspace asks.
            #[allow(deprecated)]
            let _ = self.stream.set_linger(Some(Duration::ZERO));
        }
    }
}
