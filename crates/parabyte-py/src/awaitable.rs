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
use tokio::task::AbortHandle;

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
    let cancel = AbortOnDone {
        task: task.abort_handle(),
    };
    py_future.call_method1("add_done_callback", (cancel,))?;
    Ok(py_future)
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

/// The asyncio future's done callback: a cancelled awaitable aborts its Rust task (a
/// finished task ignores the abort).
#[pyclass(frozen)]
struct AbortOnDone {
    task: AbortHandle,
}

#[pymethods]
impl AbortOnDone {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        self.task.abort();
    }
}
