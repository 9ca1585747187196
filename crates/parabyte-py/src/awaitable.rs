//! Rust futures as asyncio awaitables. The future runs on the shared runtime; when it ends, a
//! runtime thread takes the GIL just long enough to hand the outcome to the event loop
//! (`call_soon_threadsafe`). Cancelling the asyncio future aborts the Rust task.
//!
//! A runtime thread must never hold or take the GIL while the interpreter finalizes (that
//! kills the process), so every such visit passes `GATE`, which `close_gate` shuts from an
//! `atexit` hook after the visits in progress have left.

use std::future::Future;
use std::sync::{PoisonError, RwLock};

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use tokio::task::{AbortHandle, JoinHandle};

use crate::progress::LetGo;
use crate::runtime::runtime;

/// False once Python is exiting: runtime threads then leave Python alone.
static GATE: RwLock<bool> = RwLock::new(true);

/// Run `visit` with the GIL from a runtime thread, unless the interpreter is exiting.
pub fn attach_from_runtime<R>(visit: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    let open = GATE.read().unwrap_or_else(PoisonError::into_inner);
    open.then(|| Python::attach(visit))
}

/// Called from `atexit`: wait (without the GIL) for visits in progress, then refuse new ones.
#[pyfunction]
pub fn close_gate(py: Python<'_>) {
    py.detach(|| *GATE.write().unwrap_or_else(PoisonError::into_inner) = false);
}

/// An awaitable (an asyncio future of the running loop) for `future`'s outcome.
pub fn awaitable<'py, T>(
    py: Python<'py>,
    future: impl Future<Output = PyResult<T>> + Send + 'static,
) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let (outcome, task) = settled_by(py, future)?;
    let cancel = AbortOnDone {
        task: task.abort_handle(),
    };
    outcome.call_method1("add_done_callback", (cancel,))?;
    Ok(outcome)
}

/// `awaitable`, for a transfer: cancelled, it ends only once `let_go` says the transfer let
/// go of its files too (a second cancel stops the waiting), so that the next call can take
/// up what this one left. An asyncio future cannot wait out its own cancel: a task of
/// `parabyte._stopping` awaits the outcome shielded, and on cancel stops the transfer and
/// awaits the letting go.
pub fn awaitable_until_let_go<'py, T>(
    py: Python<'py>,
    future: impl Future<Output = PyResult<T>> + Send + 'static,
    let_go: LetGo,
) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let (outcome, task) = settled_by(py, future)?;
    let stop = || AbortOnDone {
        task: task.abort_handle(),
    };
    let (cancel, abort) = (stop(), stop());
    let event_loop = outcome.call_method0("get_loop")?;
    let let_go_future = event_loop.call_method0("create_future")?;
    let (event_loop, waiting) = (event_loop.unbind(), let_go_future.clone().unbind());
    runtime().spawn(async move {
        let _ended = task.await;
        // An error only means the transfer ended without a cancel: nothing holds it either.
        let _ = let_go.await;
        attach_from_runtime(|py| {
            let settle = Settle {
                future: waiting,
                succeeded: true,
                value: py.None(),
            };
            let _ = event_loop.call_method1(py, "call_soon_threadsafe", (settle,));
        });
    });
    let awaited = py
        .import("parabyte._stopping")?
        .call_method1("until_let_go", (outcome, abort, let_go_future))?;
    // Cancelled before it first ran, the task never calls `abort`: its end does.
    awaited.call_method1("add_done_callback", (cancel,))?;
    Ok(awaited)
}

/// An asyncio future of the running loop, settled with `future`'s outcome by a task on the
/// shared runtime; and that task.
fn settled_by<'py, T>(
    py: Python<'py>,
    future: impl Future<Output = PyResult<T>> + Send + 'static,
) -> PyResult<(Bound<'py, PyAny>, JoinHandle<()>)>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = py
        .import("asyncio")?
        .call_method0("get_running_loop")?
        .unbind();
    let py_future = event_loop.bind(py).call_method0("create_future")?;
    let waiting = py_future.clone().unbind();
    let task = runtime().spawn(async move {
        let outcome = future.await;
        attach_from_runtime(|py| {
            let outcome = outcome.and_then(|value| value.into_py_any(py));
            let (succeeded, value) = match outcome {
                Ok(value) => (true, value),
                Err(error) => (false, error.into_value(py).into_any()),
            };
            let settle = Settle {
                future: waiting,
                succeeded,
                value,
            };
            // Fails only when the loop is closed: then nobody is waiting.
            let _ = event_loop.call_method1(py, "call_soon_threadsafe", (settle,));
        });
    });
    Ok((py_future, task))
}

/// Runs on the event loop: give the future its outcome, unless it was cancelled meanwhile.
#[pyclass(frozen)]
struct Settle {
    future: Py<PyAny>,
    succeeded: bool,
    value: Py<PyAny>,
}

#[pymethods]
impl Settle {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let future = self.future.bind(py);
        if future.call_method0("done")?.is_truthy()? {
            return Ok(());
        }
        let setter = if self.succeeded {
            "set_result"
        } else {
            "set_exception"
        };
        future.call_method1(setter, (self.value.clone_ref(py),))?;
        Ok(())
    }
}

/// Aborts a Rust task when called: as the asyncio future's done callback, a cancelled
/// awaitable aborts its task (a finished task ignores the abort).
#[pyclass(frozen)]
struct AbortOnDone {
    task: AbortHandle,
}

#[pymethods]
impl AbortOnDone {
    #[pyo3(signature = (*_args))]
    fn __call__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.task.abort();
    }
}
