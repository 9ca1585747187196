//! A response body with a cut in it: the first N bytes pass, then a pause, then the rest, a
//! clean close or a reset, as a [`BodyFault`] says.
//!
//! Before pausing or ending, the body waits until hyper has written everything it was given,
//! so the client receives exactly N bytes, not fewer stuck in a buffer when the socket closes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::fault::{AfterStall, Armed, BodyFault};
use super::socket::Connection;
use super::{BoxError, ProxyBody};

/// How often a cut body checks whether its bytes have left.
const DRAIN_CHECK: Duration = Duration::from_millis(5);
/// How long a cut body waits for a client that does not read before going on anyway.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

pub(super) struct CutBody {
    inner: ProxyBody,
    cut: BodyFault,
    armed: Arc<Armed>,
    connection: Arc<Connection>,
    sent: u64,
    /// Bytes past the cut, sent if the body continues after its pause.
    held: Option<Bytes>,
    state: State,
}

enum State {
    Passing,
    /// Waiting for hyper to write what it has; gives up at the deadline.
    Draining {
        check: Pin<Box<Sleep>>,
        deadline: Instant,
    },
    Pausing(Pin<Box<Sleep>>),
    Ending,
    /// After the pause, the rest of the body as it comes.
    Continuing,
    Ended,
}

impl CutBody {
    pub(super) fn new(
        inner: ProxyBody,
        cut: BodyFault,
        armed: Arc<Armed>,
        connection: Arc<Connection>,
    ) -> CutBody {
        CutBody {
            inner,
            cut,
            armed,
            connection,
            sent: 0,
            held: None,
            state: State::Passing,
        }
    }

    fn fail(&mut self) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.cut.then == AfterStall::Reset {
            self.connection.reset_on_close();
        }
        self.state = State::Ended;
        let message = format!("fault proxy: body cut after {} bytes", self.cut.after);
        Poll::Ready(Some(Err(message.into())))
    }
}

impl Body for CutBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Passing => {
                    let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                        Some(Ok(frame)) => frame,
                        // A body that ends at or before the cut passes unharmed.
                        other => return Poll::Ready(other),
                    };
                    let mut data = match frame.into_data() {
                        Ok(data) => data,
                        Err(trailers) => return Poll::Ready(Some(Ok(trailers))),
                    };
                    let room = this.cut.after - this.sent;
                    if data.len() as u64 > room {
                        this.held = Some(data.split_off(room as usize));
                        this.armed.fire();
                        this.state = State::Draining {
                            check: Box::pin(tokio::time::sleep(DRAIN_CHECK)),
                            deadline: Instant::now() + DRAIN_LIMIT,
                        };
                    }
                    this.sent += data.len() as u64;
                    if !data.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                }
                State::Draining { check, deadline } => {
                    // Returning Pending made hyper flush; a write that did not block emptied it.
                    ready!(check.as_mut().poll(cx));
                    if this.connection.write_blocked() && Instant::now() < *deadline {
                        check.as_mut().reset(Instant::now() + DRAIN_CHECK);
                        continue;
                    }
                    this.state = State::Pausing(Box::pin(tokio::time::sleep(this.cut.pause)));
                }
                State::Pausing(pause) => {
                    ready!(pause.as_mut().poll(cx));
                    this.state = State::Ending;
                }
                State::Ending => match this.cut.then {
                    AfterStall::Continue => {
                        this.state = State::Continuing;
                        if let Some(held) = this.held.take() {
                            return Poll::Ready(Some(Ok(Frame::data(held))));
                        }
                    }
                    // An error, not an early end: hyper then closes without finishing the
                    // message, also for a chunked body, whose end would otherwise look whole.
                    AfterStall::Close | AfterStall::Reset => return this.fail(),
                },
                State::Continuing => return Pin::new(&mut this.inner).poll_frame(cx),
                State::Ended => return Poll::Ready(None),
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        // The full length, so that the client expects the bytes it will not get.
        self.inner.size_hint()
    }
}
