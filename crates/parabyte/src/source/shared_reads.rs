//! The connector under HTTP, over TLS where the URL asks for it: each connection it opens
//! counts in the client's [`BodyBuffers`] while open, and hands HTTP at most its share of
//! their budget per read. The cap sits above TLS, on the plaintext HTTP reads: capping
//! the TCP reads under TLS leaves rustls free to hand on all it has decrypted.
//! hyper sizes a connection's read buffer by what its reads bring (twice a read that
//! filled the last one, up to its fixed cap), so capping the reads caps the buffers: 64
//! connections read 32 KiB at a time, 16 read 128 KiB, and the cap follows the
//! connections open now rather than a setting.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf, Take};
use tokio::net::TcpStream;

use crate::body_buffers::{BodyBuffers, OpenConnection};

/// The HTTP(S) connector, its connections reading by share.
#[derive(Clone, Debug)]
pub(crate) struct SharedReads {
    pub connector: HttpsConnector<HttpConnector>,
    pub buffers: Arc<BodyBuffers>,
}

/// A connection as TLS (or plain TCP) hands it on, seen through tokio's traits so that
/// [`Take`] can cap its reads.
type Plain = TokioIo<MaybeHttpsStream<TokioIo<TcpStream>>>;

/// The connector's own error, passed on untouched: how a failure to connect is described
/// (a name that does not resolve, a refusal) reads its causes.
type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<SharedStream>, BoxError>> + Send>>;

impl tower_service::Service<Uri> for SharedReads {
    type Response = TokioIo<SharedStream>;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.connector.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Connecting {
        let connecting = self.connector.call(uri);
        let buffers = self.buffers.clone();
        Box::pin(async move {
            let stream = TokioIo::new(connecting.await?);
            let open = buffers.open();
            Ok(TokioIo::new(SharedStream {
                stream: stream.take(open.share() as u64),
                open,
            }))
        })
    }
}

/// A connection whose every read is at most its share. [`Take`] does the capping
/// (its limit is set again before each read); writes go to the stream as they are.
#[derive(Debug)]
pub(crate) struct SharedStream {
    stream: Take<Plain>,
    open: OpenConnection,
}

impl AsyncRead for SharedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let share = self.open.share() as u64;
        self.stream.set_limit(share);
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for SharedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(self.stream.get_mut()).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(self.stream.get_mut()).poll_write_vectored(cx, data)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.get_ref().is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.stream.get_mut()).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.stream.get_mut()).poll_shutdown(cx)
    }
}

impl Connection for SharedStream {
    fn connected(&self) -> Connected {
        self.stream.get_ref().inner().connected()
    }
}
