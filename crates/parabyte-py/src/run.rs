//! Running core futures for Python on the one shared tokio runtime: from a sync call (wait
//! without the GIL, wake to handle Ctrl-C and progress) or as an asyncio awaitable with
//! progress.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use parabyte::Reporter;
use pyo3::prelude::*;

use crate::awaitable::{attach_from_runtime, awaitable_until_let_go};
use crate::errors::task_failed;
use crate::progress::{Callback, LetGo, Tally};
use crate::runtime::runtime;

/// How often a waiting sync call looks at Python's signals and calls the progress callback.
const TICK: Duration = Duration::from_millis(100);

/// A transfer not yet started: given the reporter to use, the future that runs it.
pub type Transfer<T> = Box<dyn FnOnce(Arc<dyn Reporter>) -> BoxFuture<'static, PyResult<T>> + Send>;

/// The transfer that runs `call` with `client` and the reporter the transfer is given.
pub fn calling<T, Fut>(
    client: Arc<parabyte::Client>,
    call: impl FnOnce(Arc<parabyte::Client>, Arc<dyn Reporter>) -> Fut + Send + 'static,
) -> Transfer<T>
where
    Fut: Future<Output = PyResult<T>> + Send + 'static,
{
    Box::new(move |reporter| call(client, reporter).boxed())
}

/// Run `future` to completion from a sync call. The GIL is released while it runs; every
/// `TICK`, and once more at the end, the thread takes the GIL back to run Python's signal
/// handlers and `on_tick`. If
/// either raises (Ctrl-C raises KeyboardInterrupt), the future is cancelled, and dropped
/// before this returns, so no partial file stays behind.
pub fn wait<T, F>(
    py: Python<'_>,
    future: F,
    on_tick: impl FnMut(Python<'_>) -> PyResult<()>,
) -> PyResult<T>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: Send + 'static,
{
    wait_until_let_go(py, future, None, on_tick)
}

/// `wait`, and when cancelled, drop `on_tick` (it may hold the tally) and return only once
/// `let_go` says the transfer let go of its files too (or on a second Ctrl-C, which stops
/// the waiting).
fn wait_until_let_go<T, F>(
    py: Python<'_>,
    future: F,
    let_go: Option<LetGo>,
    mut on_tick: impl FnMut(Python<'_>) -> PyResult<()>,
) -> PyResult<T>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: Send + 'static,
{
    let runtime = runtime();
    let mut task = runtime.spawn(future);
    loop {
        let finished = py.detach(|| {
            runtime.block_on(async { tokio::time::timeout(TICK, &mut task).await.ok() })
        });
        if let Some(joined) = finished {
            let outcome = joined.map_err(task_failed)??;
            on_tick(py)?;
            return Ok(outcome);
        }
        if let Err(stop) = py.check_signals().and_then(|()| on_tick(py)) {
            task.abort();
            let _cancelled = py.detach(|| runtime.block_on(task));
            drop(on_tick);
            if let Some(mut let_go) = let_go {
                let waited = |let_go: &mut LetGo| {
                    runtime.block_on(async { tokio::time::timeout(TICK, let_go).await.is_ok() })
                };
                while !py.detach(|| waited(&mut let_go)) {
                    py.check_signals()?;
                }
            }
            return Err(stop);
        }
    }
}

/// A transfer from a sync call, with an optional progress callback.
pub fn transfer_sync<T: Send + 'static>(
    py: Python<'_>,
    transfer: Transfer<T>,
    progress: Option<Py<PyAny>>,
) -> PyResult<T> {
    let (tally, let_go) = Tally::watched();
    let callback = progress.map(|function| Callback::new(function, tally.clone()));
    let running = transfer(tally);
    // Called once more at the end, so a progress bar ends at the final figures.
    let notify = move |py: Python<'_>| callback.as_ref().map_or(Ok(()), |c| c.notify(py));
    wait_until_let_go(py, running, Some(let_go), notify)
}

/// A transfer as an asyncio awaitable; cancelling the awaitable cancels the transfer. The
/// progress callback runs on a runtime thread, not the event loop's.
pub fn transfer_async<'py, T>(
    py: Python<'py>,
    transfer: Transfer<T>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let (tally, let_go) = Tally::watched();
    let callback = progress.map(|function| Callback::new(function, tally.clone()));
    let running = transfer(tally);
    let stoppable = async move {
        let Some(callback) = callback else {
            return running.await;
        };
        let ticking = async {
            loop {
                tokio::time::sleep(TICK).await;
                if let Some(Err(error)) = attach_from_runtime(|py| callback.notify(py)) {
                    return error;
                }
            }
        };
        let outcome = tokio::select! {
            outcome = running => outcome?,
            error = ticking => return Err(error),
        };
        attach_from_runtime(|py| callback.notify(py)).transpose()?;
        Ok(outcome)
    };
    awaitable_until_let_go(py, stoppable, let_go)
}
