//! Connections opened only where a request needs one. For a request that finds no idle
//! connection, hyper's pool starts a new one and races it against one coming free, and
//! keeps the new one whichever wins. A request sent as soon as the one before it ended
//! finds that connection not yet back in the pool (it goes back from a task of its own),
//! so a run of 1000 small GETs at 64 in flight opened 67 to 118 connections, each a TLS
//! handshake, where curl opens 64 (PROFILE.md, stop 52). Here a host's new connection
//! waits while the host already has as many connections (open or opening) as requests
//! wanting one, and is given up once its request has taken one that came free.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a new connection waits for the demand to call for it before it is opened
/// anyway. A connection counted open is either serving a request or about to be idle in
/// the pool, so the wait ends on its own within moments; this bounds it should a
/// connection ever be counted that hyper neither hands out nor closes.
const LONGEST_WAIT: Duration = Duration::from_secs(1);

tokio::task_local! {
    /// The request being sent on this task: hyper asks the connector for a connection
    /// while the request's own future is polled, and this says whose it would be.
    static ANSWERED: Option<Arc<AtomicBool>>;
}

/// Requests and connections per host (scheme and authority, hyper's pool key) of one
/// client's pool.
#[derive(Debug, Default)]
pub(crate) struct ConnectionDemand {
    hosts: Mutex<HashMap<String, Host>>,
}

#[derive(Debug, Default)]
struct Host {
    /// Requests sent and not yet done with their connection (the body read or dropped).
    requests: usize,
    /// Connections open or being opened.
    connections: usize,
    /// Told whenever either count moves in a connection's favour, or a request is answered.
    changed: Arc<Notify>,
}

impl Host {
    fn needs_connection(&self) -> bool {
        self.connections < self.requests
    }
}

/// One request's place in its host's demand, from before it asks the pool for a
/// connection until its response's body is read to the end or dropped. A connection
/// opening for it holds only its `answered` flag: one left waiting in the background
/// must not keep the request counted.
#[derive(Debug)]
pub(crate) struct Wanting {
    demand: Arc<ConnectionDemand>,
    host: String,
    answered: Arc<AtomicBool>,
}

enum Step {
    Open,
    NotNeeded,
    Wait(Pin<Box<OwnedNotified>>),
}

/// A connection's place in its host's count, given back when the connection closes.
#[derive(Debug)]
struct Opened {
    demand: Arc<ConnectionDemand>,
    host: String,
}

impl ConnectionDemand {
    fn hosts(&self) -> MutexGuard<'_, HashMap<String, Host>> {
        // A count is a plain number: one left by a panicking thread is still right.
        self.hosts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Count a request to `uri`'s host, before it asks the pool for a connection.
    pub(crate) fn want(self: &Arc<Self>, uri: &Uri) -> Option<Wanting> {
        let host = host_key(uri)?;
        let mut hosts = self.hosts();
        let counts = hosts.entry(host.clone()).or_default();
        counts.requests += 1;
        if counts.needs_connection() {
            counts.changed.notify_waiters();
        }
        Some(Wanting {
            demand: self.clone(),
            host,
            answered: Arc::default(),
        })
    }

    /// Wait until `host` needs another connection, and count it. None when the request
    /// it was started for took a connection that came free meanwhile.
    async fn opening(
        self: &Arc<Self>,
        host: String,
        answered: Option<Arc<AtomicBool>>,
    ) -> Option<Opened> {
        let deadline = Instant::now() + LONGEST_WAIT;
        loop {
            match self.step(&host, answered.as_deref(), deadline) {
                Step::Open => break,
                Step::NotNeeded => return None,
                // Past the deadline the next round opens it.
                Step::Wait(changed) => drop(tokio::time::timeout_at(deadline, changed).await),
            }
        }
        Some(Opened {
            demand: self.clone(),
            host,
        })
    }

    /// What a connection opening for a request (its `answered` flag; none when opened
    /// outside a request) does now, decided under the lock.
    fn step(&self, host: &str, answered: Option<&AtomicBool>, deadline: Instant) -> Step {
        let mut hosts = self.hosts();
        let counts = hosts.entry(host.to_owned()).or_default();
        // Registered before the counts are read, under the lock every change is told
        // under: a change after this read wakes it.
        let mut changed = Box::pin(counts.changed.clone().notified_owned());
        changed.as_mut().enable();
        match answered {
            Some(answered) if answered.load(SeqCst) => Step::NotNeeded,
            Some(_) if !counts.needs_connection() && Instant::now() < deadline => {
                Step::Wait(changed)
            }
            _ => {
                counts.connections += 1;
                Step::Open
            }
        }
    }

    /// Take one off a count, and forget a host with nothing left.
    fn release(&self, host: &str, count: fn(&mut Host) -> &mut usize) {
        let mut hosts = self.hosts();
        let Some(counts) = hosts.get_mut(host) else {
            return;
        };
        let left = count(counts);
        *left = left.saturating_sub(1);
        if counts.needs_connection() {
            counts.changed.notify_waiters();
        }
        if counts.requests == 0 && counts.connections == 0 {
            hosts.remove(host);
        }
    }
}

impl Wanting {
    /// The request has its response, or failed: a connection still opening for it is no
    /// longer needed by it.
    pub(crate) fn answered(&self) {
        self.answered.store(true, SeqCst);
        if let Some(counts) = self.demand.hosts().get(&self.host) {
            counts.changed.notify_waiters();
        }
    }

    /// Run `sending` (the pool's request future) as the request of `wanting`.
    pub(crate) async fn scope<F: Future>(wanting: Option<&Wanting>, sending: F) -> F::Output {
        let answered = wanting.map(|wanting| wanting.answered.clone());
        ANSWERED.scope(answered, sending).await
    }
}

impl Drop for Wanting {
    fn drop(&mut self) {
        self.demand
            .release(&self.host, |counts| &mut counts.requests);
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        self.demand
            .release(&self.host, |counts| &mut counts.connections);
    }
}

/// hyper's pool key, as the request's URI and the connector's both spell it.
fn host_key(uri: &Uri) -> Option<String> {
    Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?))
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The connector, opening a connection only once its host's demand calls for it.
#[derive(Clone, Debug)]
pub(crate) struct OnDemand<C> {
    pub inner: C,
    pub demand: Arc<ConnectionDemand>,
}

impl<C> tower_service::Service<Uri> for OnDemand<C>
where
    C: tower_service::Service<Uri> + Clone + Send + 'static,
    C::Future: Send,
    C::Error: Into<BoxError>,
{
    type Response = Demanded<C::Response>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // The inner connector is asked once the connection is to be opened.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let answered = ANSWERED.try_with(Clone::clone).ok().flatten();
        let demand = self.demand.clone();
        let mut inner = self.inner.clone();
        Box::pin(async move {
            let host = host_key(&uri).unwrap_or_default();
            let opened = demand
                .opening(host, answered)
                .await
                .ok_or("not needed: the request took a connection that came free")?;
            futures::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(Into::into)?;
            let io = inner.call(uri).await.map_err(Into::into)?;
            Ok(Demanded {
                io,
                _opened: opened,
            })
        })
    }
}

/// A connection that counts in its host's demand until it closes.
#[derive(Debug)]
pub(crate) struct Demanded<T> {
    io: T,
    _opened: Opened,
}

impl<T: Read + Unpin> Read for Demanded<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for Demanded<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, data)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<T: Connection> Connection for Demanded<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use futures::TryStreamExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::config::StoreConfig;
    use crate::counters::{Counters, RequestKind};
    use crate::source::http_client::{send_following, HttpClient};

    use super::*;

    /// A keep-alive server answering every GET with a small body; counts the connections
    /// it accepted.
    async fn small_bodies() -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counted.fetch_add(1, SeqCst);
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut buffer = [0; 4096];
                    while let Ok(read @ 1..) = socket.read(&mut buffer).await {
                        seen.extend_from_slice(&buffer[..read]);
                        while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                            seen.drain(..end + 4);
                            let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
                            if socket.write_all(answer).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        (format!("http://{address}/object"), accepted)
    }

    /// `count` GETs of `url`, one after another, each body read to its end before the
    /// next is sent.
    async fn get_one_after_another(http: &HttpClient, url: &str, count: usize) {
        let counters = Counters::default();
        for _ in 0..count {
            let request = http.get(url).build().unwrap();
            let response = send_following(http, request, &counters, RequestKind::Get)
                .await
                .unwrap();
            let body: Vec<_> = response.bytes_stream().try_collect().await.unwrap();
            assert_eq!(body.concat(), b"hello");
        }
    }

    /// Each request sent as soon as the one before it ended: hyper's pool gets the
    /// connection back only after the next request asked for one, and used to open a
    /// new connection for it each time, kept beside the old one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_one_after_another_keep_one_connection() {
        let (url, accepted) = small_bodies().await;
        let counters = Arc::new(Counters::default());
        let http = HttpClient::new(&StoreConfig::default(), counters.clone()).unwrap();
        get_one_after_another(&http, &url, 200).await;
        assert_eq!(accepted.load(SeqCst), 1, "connections accepted");
        assert_eq!(counters.connections.load(SeqCst), 1, "connections counted");
    }
}
