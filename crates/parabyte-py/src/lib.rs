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
mod byte_range;
mod client;
mod cluster_calls;
mod download_keywords;
mod errors;
mod gathered;
mod lent;
mod listing;
mod option_rows;
mod options;
mod progress;
mod pyvalue;
mod run;
mod runtime;
mod streamed_upload;
mod summary;
mod sync_keywords;
mod upload_keywords;
mod version_reads;

use std::ffi::OsString;

use parabyte_cli::Keyword;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Run the `parabyte` command line on `argv` (program name first) and return its exit
/// status. The caller leaves SIGINT and SIGTERM at their defaults: the command line handles
/// them itself (cleanup, then 130 or 143).
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| parabyte_cli::main_with(argv))
}

/// `parabyte cp|sync|mv|rm --dask-scheduler ...` parsed by the command line's own flags,
/// as a dict for `parabyte.dask` (its `options` are `Client` keywords, its `keywords` the
/// function's own); `None` for any other command line, which `run_cli` runs.
#[pyfunction]
fn cluster_job_args(py: Python<'_>, argv: Vec<OsString>) -> PyResult<Option<Bound<'_, PyDict>>> {
    let Some(job) = parabyte_cli::cluster_job(argv) else {
        return Ok(None);
    };
    let (store, transfer) = (&job.store, &job.transfer);
    let options = PyDict::new(py);
    options.set_item("endpoint_url", &store.endpoint_url)?;
    options.set_item("region", &store.region)?;
    options.set_item("profile", &store.profile)?;
    options.set_item("path_style", store.path_style)?;
    options.set_item("no_sign_request", store.no_sign_request)?;
    options.set_item("request_payer", store.request_payer.then_some("requester"))?;
    options.set_item("ca_bundle", &store.ca_bundle)?;
    options.set_item("timeout", store.read_timeout.as_secs_f64())?;
    let bind: Vec<String> = store
        .local_addresses
        .iter()
        .map(ToString::to_string)
        .collect();
    options.set_item("bind", bind)?;
    options.set_item("workers", transfer.workers)?;
    options.set_item("ranges_per_object", transfer.ranges_per_object)?;
    options.set_item("part_size", transfer.part_size)?;
    options.set_item("max_requests", transfer.max_requests)?;
    options.set_item("retries", transfer.retry.max_retries)?;
    options.set_item("list_parallelism", transfer.list_parallelism)?;
    options.set_item("list_page_size", transfer.list_page_size)?;
    options.set_item("verify", transfer.verify_content)?;
    options.set_item("force", !transfer.skip_unchanged)?;
    options.set_item("ignore_glacier_warnings", transfer.ignore_archived)?;
    let keywords = PyDict::new(py);
    for (name, value) in &job.keywords {
        match value {
            Keyword::Switch(on) => keywords.set_item(name, on)?,
            Keyword::Number(number) => keywords.set_item(name, number)?,
            Keyword::Text(text) => keywords.set_item(name, text)?,
            Keyword::Texts(texts) => keywords.set_item(name, texts)?,
            Keyword::Pairs(pairs) => keywords.set_item(
                name,
                PyDict::from_sequence(&pairs.clone().into_pyobject(py)?)?,
            )?,
        }
    }
    let described = PyDict::new(py);
    described.set_item("command", job.command.name())?;
    described.set_item("scheduler", &job.scheduler)?;
    described.set_item("source", &job.source)?;
    // As text: a path would fold the `//` of `s3://`.
    let destination = job.destination.as_ref().map(|path| path.to_string_lossy());
    described.set_item("destination", destination)?;
    described.set_item("manifest", &job.manifest)?;
    described.set_item("recursive", job.recursive)?;
    described.set_item("split_bytes", job.split_bytes)?;
    described.set_item("json", job.json)?;
    described.set_item("quiet", job.quiet)?;
    described.set_item("refused", &job.refused)?;
    described.set_item("options", options)?;
    described.set_item("keywords", keywords)?;
    Ok(Some(described))
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("DOWNLOAD_KEYWORDS", download_keywords::DOWNLOAD_KEYWORDS)?;
    module.add("UPLOAD_KEYWORDS", upload_keywords::UPLOAD_KEYWORDS)?;
    module.add("UPLOAD_SELECTION_KEYWORDS", upload_keywords::SELECTION)?;
    module.add("SUMMARY_FIELDS", parabyte::Summary::field_names())?;
    module.add("REMOVE_KEYWORDS", download_keywords::REMOVE_KEYWORDS)?;
    module.add("SYNC_KEYWORDS", sync_keywords::SYNC_KEYWORDS)?;
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
    module.add_function(wrap_pyfunction!(cluster_job_args, module)?)?;
    module.add_function(wrap_pyfunction!(option_rows::option_table, module)?)?;
    module.add_function(wrap_pyfunction!(client::parse_manifest, module)?)?;
    module.add_function(wrap_pyfunction!(
        version_reads::get_ranges_of_version,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(
        version_reads::get_ranges_of_version_async,
        module
    )?)?;
    module.add_class::<streamed_upload::StreamedUpload>()?;
    module.add_class::<cluster_calls::TreeWalk>()?;
    for call in [
        wrap_pyfunction!(cluster_calls::sync_part, module)?,
        wrap_pyfunction!(cluster_calls::sync_deletes_allowed, module)?,
        wrap_pyfunction!(cluster_calls::sync_deletes, module)?,
        wrap_pyfunction!(cluster_calls::copy_range, module)?,
        wrap_pyfunction!(cluster_calls::remove_range, module)?,
        wrap_pyfunction!(cluster_calls::walk_upload, module)?,
        wrap_pyfunction!(cluster_calls::open_shared_upload, module)?,
        wrap_pyfunction!(cluster_calls::send_shared_parts, module)?,
        wrap_pyfunction!(cluster_calls::commit_shared_upload, module)?,
        wrap_pyfunction!(cluster_calls::abort_shared_upload, module)?,
        wrap_pyfunction!(cluster_calls::abort_uploads_left, module)?,
        wrap_pyfunction!(cluster_calls::manifest_into_store, module)?,
    ] {
        module.add_function(call)?;
    }
    module.add_function(wrap_pyfunction!(streamed_upload::start_upload, module)?)?;
    Ok(())
}
