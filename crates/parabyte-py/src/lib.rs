//! `import parabyte`: the Python face of the parabyte engine, built by maturin as
//! `parabyte._native` and wrapped by the small pure-Python package in `python/parabyte`.
//!
//! The binding is thin on purpose. Keyword arguments fill the core's `StoreConfig` and
//! `TransferConfig` (the same structs the CLI's flags fill), every call runs on one shared
//! tokio runtime, and results come back as plain Python objects:
//!
//! - sync calls wait with the GIL released, waking every 100 ms to let Python handle
//!   Ctrl-C (which cancels the transfer) and to call the progress callback (`run.rs`);
//! - `*_async` calls return asyncio awaitables whose cancellation cancels the transfer
//!   (`awaitable.rs`);
//! - core errors become the `parabyte.Error` tree defined in `parabyte/exceptions.py`
//!   (`errors.rs`).
//!
//! It also carries the command line: `run_cli` is the wheel's `parabyte` command
//! (`parabyte._cli:main`), so one `pip install` gives both, from one copy of the engine.

mod awaitable;
mod buffer;
mod client;
mod errors;
mod listing;
mod options;
mod progress;
mod pyvalue;
mod run;
mod runtime;
mod summary;

use std::ffi::OsString;

use pyo3::prelude::*;

/// Run the `parabyte` command line on `argv` (program name first) and return its exit
/// status. The caller leaves SIGINT and SIGTERM at their defaults: the command line handles
/// them itself (cleanup, then 130 or 143).
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| parabyte_cli::main_with(argv))
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_class::<buffer::Buffer>()?;
    module.add_class::<client::Client>()?;
    module.add_class::<client::Item>()?;
    module.add_class::<listing::ObjectInfo>()?;
    module.add_class::<listing::ListIterator>()?;
    module.add_class::<progress::Progress>()?;
    module.add_class::<summary::Summary>()?;
    module.add_class::<summary::Requests>()?;
    module.add_class::<summary::Failure>()?;
    module.add_class::<summary::Verified>()?;
    module.add_function(wrap_pyfunction!(awaitable::close_gate, module)?)?;
    module.add_function(wrap_pyfunction!(pyvalue::restore, module)?)?;
    module.add_function(wrap_pyfunction!(run_cli, module)?)?;
    Ok(())
}
