//! The calls `parabyte.dask` cuts a job into, one a task: a range of a sync, of a copy
//! inside the store or of a delete; a tree walked for an upload; and the steps of one
//! multipart upload whose parts several workers send. Functions of `_native` taking the
//! worker's `Client`, since they are the cluster driver's, not the public API's.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use parabyte::{
    deletes_of_parts, keys_into_store, CopyOptions, CopyRequest, Destination, KeyBounds,
    PartVerdict, Reporter, S3Url, SharedSource, SharedUpload, Source, UploadEntry, UploadedPart,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::client::Client;
use crate::download_keywords::remove_request;
use crate::errors::to_py;
use crate::run::{calling, transfer_sync, wait};
use crate::summary::Summary;
use crate::sync_keywords::SyncKeywords;
use crate::upload_keywords::{store_url, UploadKeywords};

/// `SharedUpload` as a tuple of plain values, which pickles: `(to, upload_id, size,
/// part_size, parts, version)`.
type UploadTuple = (String, String, u64, u64, u32, String);

/// A part's verdict as Python takes it: its source's items, and the names to delete (a
/// list) or why none may go (a string).
type VerdictTuple = (u64, Py<PyAny>);

/// A part as `(number, etag, crc64nvme)`.
type PartTuple = (u32, String, u64);

fn bounds(after: Option<String>, until_after: Option<String>) -> KeyBounds {
    KeyBounds { after, until_after }
}

/// Run `call` on the worker's `client` from a task, its progress going to `progress`: what
/// every cluster call that moves bytes does around its own engine call.
fn run_on<T, Fut>(
    py: Python<'_>,
    client: &Client,
    progress: Option<Py<PyAny>>,
    call: impl FnOnce(Arc<parabyte::Client>, Arc<dyn Reporter>) -> Fut + Send + 'static,
) -> PyResult<T>
where
    T: Send + 'static,
    Fut: Future<Output = parabyte::Result<T>> + Send + 'static,
{
    let transfer = calling(client.inner(py)?, move |inner, reporter| {
        call(inner, reporter).map(|outcome| outcome.map_err(to_py))
    });
    transfer_sync(py, transfer, progress)
}

/// One range of a sync, `after`/`until_after` being names below both sides: its summary,
/// and (with `delete=True`) its verdict, its deletes not made.
#[pyfunction]
#[pyo3(signature = (client, source, destination, after, until_after, **keywords))]
pub fn sync_part(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    source: PathBuf,
    destination: PathBuf,
    after: Option<String>,
    until_after: Option<String>,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Summary, Option<VerdictTuple>)> {
    let (sync, rest) = SyncKeywords::take("sync", keywords)?;
    let mut keywords = UploadKeywords::parse("sync", rest.as_ref())?;
    let request = keywords.tree_request(&source, &destination)?;
    let range = bounds(after, until_after);
    let progress = keywords.progress.take();
    let (summary, verdict) = run_on(py, &client, progress, move |inner, reporter| async move {
        inner
            .sync_part(&request, &sync.options, range, reporter)
            .await
    })?;
    let verdict = match verdict {
        None => None,
        Some(PartVerdict {
            source_items,
            deletes,
        }) => {
            let deletes = match deletes {
                Ok(names) => names.into_pyobject(py)?.into_any().unbind(),
                Err(reason) => reason.into_pyobject(py)?.into_any().unbind(),
            };
            Some((source_items, deletes))
        }
    };
    Ok((Summary::from(summary), verdict))
}

/// The delete rule over every part's verdict (`None`: its listing broke off; `(items,
/// names)`; or `(items, reason)`): `(count, None)` with the number of deletes allowed, or
/// `(None, reason)` when none may go.
#[pyfunction]
#[pyo3(signature = (verdicts, source, destination, **keywords))]
pub fn sync_deletes_allowed(
    verdicts: Vec<Option<(u64, Bound<'_, PyAny>)>>,
    source: &str,
    destination: &str,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Option<u64>, Option<String>)> {
    let (sync, _) = SyncKeywords::take("sync", keywords)?;
    let verdicts = verdicts
        .into_iter()
        .map(|verdict| {
            let Some((source_items, deletes)) = verdict else {
                return Ok(None);
            };
            let deletes = match deletes.is_instance_of::<PyString>() {
                true => Err(deletes.extract::<String>()?),
                false => Ok(deletes.extract::<Vec<String>>()?),
            };
            Ok(Some(PartVerdict {
                source_items,
                deletes,
            }))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(
        match deletes_of_parts(&verdicts, &sync.options, source, destination) {
            Ok(count) => (Some(count), None),
            Err(reason) => (None, Some(reason)),
        },
    )
}

/// Delete `names` below the sync's destination, as the sync itself deletes them.
#[pyfunction]
#[pyo3(signature = (client, source, destination, names, **keywords))]
pub fn sync_deletes(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    source: PathBuf,
    destination: PathBuf,
    names: Vec<String>,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<Summary> {
    let (_, rest) = SyncKeywords::take("sync", keywords)?;
    let mut keywords = UploadKeywords::parse("sync", rest.as_ref())?;
    let request = keywords.tree_request(&source, &destination)?;
    let progress = keywords.progress.take();
    let deletes = run_on(py, &client, progress, move |inner, reporter| async move {
        inner.sync_deletes(&request, names, reporter).await
    });
    deletes.map(Summary::from)
}

/// One range of a prefix copied inside the store (or streamed from a source store of its
/// own, or downloaded into a directory), or moved with `moving`: the keys of `prefix`
/// after `after` up to `until_after`.
#[pyfunction]
#[pyo3(signature = (client, prefix, destination, after, until_after, moving = false, **keywords))]
#[allow(clippy::too_many_arguments)] // a range of a copy is all of these
pub fn copy_range(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    prefix: &str,
    destination: &str,
    after: Option<String>,
    until_after: Option<String>,
    moving: bool,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<Summary> {
    let method = if moving { "move" } else { "copy" };
    let mut keywords = UploadKeywords::parse(method, keywords)?;
    let mut request = keywords.tree_request(Path::new(prefix), Path::new(destination))?;
    request.source = Source::KeyRange {
        prefix: S3Url::parse(prefix).map_err(to_py)?,
        bounds: bounds(after, until_after),
    };
    request.recursive = true;
    let progress = keywords.progress.take();
    let copy = run_on(py, &client, progress, move |inner, reporter| async move {
        match moving {
            true => inner.move_objects(&request, reporter).await,
            false => inner.copy(&request, reporter).await,
        }
    });
    copy.map(Summary::from)
}

/// One range of a prefix deleted: its keys after `after` up to `until_after`.
#[pyfunction]
#[pyo3(signature = (client, prefix, after, until_after, **keywords))]
pub fn remove_range(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    prefix: &str,
    after: Option<String>,
    until_after: Option<String>,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<Summary> {
    let mut request = remove_request("remove", prefix, keywords)?;
    request.recursive = true;
    request.bounds = bounds(after, until_after);
    let removal = run_on(py, &client, None, move |inner, reporter| async move {
        inner.remove(&request, reporter).await
    });
    removal.map(Summary::from)
}

/// The tree `source` walked for an upload to `destination`, as the upload walks it:
/// tuples `("file", path, url, size)`, `("passed_over", name, why)`, `("refused", name,
/// why)`.
#[pyfunction]
#[pyo3(signature = (client, source, destination, **keywords))]
pub fn walk_upload(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    source: PathBuf,
    destination: &str,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<TreeWalk> {
    let keywords = UploadKeywords::parse("upload", keywords)?;
    let request = keywords.request(&source, destination)?;
    let inner = client.inner(py)?;
    let entries = wait(
        py,
        async move { inner.walk_upload(&request).await.map_err(to_py) },
        |_| Ok(()),
    )?;
    Ok(TreeWalk {
        entries: Arc::new(tokio::sync::Mutex::new(Walking {
            entries,
            ready: VecDeque::new(),
        })),
    })
}

/// Entries taken from the walk in one go.
const BATCH: usize = 1000;

struct Walking {
    entries: BoxStream<'static, UploadEntry>,
    ready: VecDeque<UploadEntry>,
}

/// The entries of a tree walked for an upload, as an iterator.
#[pyclass(frozen, module = "parabyte")]
pub struct TreeWalk {
    entries: Arc<tokio::sync::Mutex<Walking>>,
}

impl std::fmt::Debug for TreeWalk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeWalk").finish_non_exhaustive()
    }
}

#[pymethods]
impl TreeWalk {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        // Entries already taken need no trip through the runtime (the lock is let go
        // before the trip, which takes it again).
        let ready = match self.entries.try_lock() {
            Ok(mut walking) => walking.ready.pop_front(),
            Err(_) => None,
        };
        let entry = match ready {
            Some(entry) => Some(entry),
            None => {
                let entries = self.entries.clone();
                let next = async move {
                    let mut walking = entries.lock().await;
                    if walking.ready.is_empty() {
                        let batch = walking.entries.as_mut().ready_chunks(BATCH).next().await;
                        walking.ready.extend(batch.into_iter().flatten());
                    }
                    Ok(walking.ready.pop_front())
                };
                wait(py, next, |_| Ok(()))?
            }
        };
        let Some(entry) = entry else {
            return Ok(None);
        };
        let tuple = match entry {
            UploadEntry::File { path, to, size } => ("file", path, to.to_string(), size)
                .into_pyobject(py)?
                .into_any(),
            UploadEntry::PassedOver(failure) => {
                ("passed_over", failure.source, failure.error.to_string())
                    .into_pyobject(py)?
                    .into_any()
            }
            UploadEntry::Refused(failure) => ("refused", failure.source, failure.error.to_string())
                .into_pyobject(py)?
                .into_any(),
        };
        Ok(Some(tuple.unbind()))
    }
}

fn upload_of(upload: UploadTuple) -> PyResult<SharedUpload> {
    let (to, upload_id, size, part_size, parts, version) = upload;
    Ok(SharedUpload {
        to: S3Url::parse(&to).map_err(to_py)?,
        upload_id,
        size,
        part_size,
        parts,
        version,
    })
}

fn tuple_of(upload: SharedUpload) -> UploadTuple {
    (
        upload.to.to_string(),
        upload.upload_id,
        upload.size,
        upload.part_size,
        upload.parts,
        upload.version,
    )
}

fn parts_of(parts: Vec<PartTuple>) -> Vec<UploadedPart> {
    parts
        .into_iter()
        .map(|(number, etag, crc64nvme)| UploadedPart {
            number,
            etag,
            crc64nvme,
        })
        .collect()
}

fn tuples_of(parts: Vec<UploadedPart>) -> Vec<PartTuple> {
    parts
        .into_iter()
        .map(|part| (part.number, part.etag, part.crc64nvme))
        .collect()
}

/// The source of a shared upload: `kind` "upload" (the file at the path `source`) or "copy"
/// (the object at the URL `source`, `listed` its size and ETag when a listing gave them).
fn shared_source(
    kind: &str,
    source: &Bound<'_, PyAny>,
    listed: Option<(u64, String)>,
) -> PyResult<SharedSource> {
    match kind {
        "upload" => Ok(SharedSource::File(source.extract()?)),
        "copy" => Ok(SharedSource::Copy {
            object: S3Url::parse(&source.extract::<String>()?).map_err(to_py)?,
            listed,
        }),
        other => Err(PyValueError::new_err(format!(
            "a shared upload is of a file (\"upload\") or an object (\"copy\"), not {other:?}"
        ))),
    }
}

/// Open the upload of `source` (of `kind`; `size` and `etag` as a listing gave them, for
/// a copy) to `destination` in parts, for workers to send.
#[pyfunction]
#[pyo3(signature = (client, kind, source, destination, size = None, etag = None, **keywords))]
#[allow(clippy::too_many_arguments)] // what is sent, where to, and what a listing knew of it
pub fn open_shared_upload(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    kind: &str,
    source: &Bound<'_, PyAny>,
    destination: &str,
    size: Option<u64>,
    etag: Option<String>,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<UploadTuple> {
    let options = UploadKeywords::parse("upload_many", keywords)?.options;
    let from = shared_source(kind, source, size.zip(etag))?;
    let to = store_url(destination)?;
    let inner = client.inner(py)?;
    let open = async move {
        let upload = inner.open_shared_upload(&from, &to, &options).await;
        upload.map(tuple_of).map_err(|error| to_py(&error))
    };
    wait(py, open, |_| Ok(()))
}

/// Send the parts `first..=last` of the upload of `source` (of `kind`): the parts and a
/// summary.
#[pyfunction]
#[pyo3(signature = (client, kind, source, upload, first, last, *, progress = None))]
#[allow(clippy::too_many_arguments)] // the upload, its source, and the range of its parts
pub fn send_shared_parts(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    kind: &str,
    source: &Bound<'_, PyAny>,
    upload: UploadTuple,
    first: u32,
    last: u32,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Vec<PartTuple>, Summary)> {
    let from = shared_source(kind, source, None)?;
    let upload = upload_of(upload)?;
    let (parts, summary) = run_on(py, &client, progress, move |inner, reporter| async move {
        inner
            .send_shared_parts(&from, &upload, first..=last, reporter)
            .await
    })?;
    Ok((tuples_of(parts), Summary::from(summary)))
}

/// Complete the upload of `source` (of `kind`) with every one of its parts.
#[pyfunction]
#[pyo3(signature = (client, kind, source, upload, parts, **keywords))]
pub fn commit_shared_upload(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    kind: &str,
    source: &Bound<'_, PyAny>,
    upload: UploadTuple,
    parts: Vec<PartTuple>,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<Summary> {
    let options = UploadKeywords::parse("upload_many", keywords)?.options;
    let from = shared_source(kind, source, None)?;
    let upload = upload_of(upload)?;
    let commit = run_on(py, &client, None, move |inner, reporter| async move {
        let parts = parts_of(parts);
        inner
            .commit_shared_upload(&from, &upload, parts, &options, reporter)
            .await
    });
    commit.map(Summary::from)
}

/// Abort `upload`, so that a job ending without it leaves nothing open.
#[pyfunction]
pub fn abort_shared_upload(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    upload: UploadTuple,
) -> PyResult<()> {
    let upload = upload_of(upload)?;
    let inner = client.inner(py)?;
    let abort = async move {
        inner
            .abort_shared_upload(&upload)
            .await
            .map_err(|error| to_py(&error))
    };
    wait(py, abort, |_| Ok(()))
}

/// Abort the multipart uploads begun under `prefix` since `since_ms` (Unix milliseconds)
/// and still open, of the keys `keys` or (without them) of the range after `after` up to
/// `until_after`: what an attempt of a task left when its worker was lost, found by the
/// attempt that ran again (or by the driver, for a task that failed for good), since tasks
/// partition the job's keys. Returns how many were aborted.
#[pyfunction]
#[pyo3(signature = (client, prefix, since_ms, *, keys = None, after = None, until_after = None))]
pub fn abort_uploads_left(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    prefix: &str,
    since_ms: i64,
    keys: Option<Vec<String>>,
    after: Option<String>,
    until_after: Option<String>,
) -> PyResult<u64> {
    let prefix = S3Url::parse(prefix).map_err(to_py)?;
    let keys: Option<HashSet<String>> = keys.map(|keys| {
        keys.into_iter()
            .map(|key| S3Url::parse(&key).map(|url| url.key).unwrap_or(key))
            .collect()
    });
    let ours = move |key: &str| match &keys {
        Some(keys) => keys.contains(key),
        None => {
            after.as_deref().is_none_or(|after| key > after)
                && until_after.as_deref().is_none_or(|until| key <= until)
        }
    };
    let inner = client.inner(py)?;
    let abort = async move {
        let aborted = aborted_left(&inner, &prefix, since_ms, ours).await;
        aborted.map_err(to_py)
    };
    wait(py, abort, |_| Ok(()))
}

/// Abort the uploads under `prefix` begun since `since_ms` whose keys are `ours`.
async fn aborted_left(
    client: &parabyte::Client,
    prefix: &S3Url,
    since_ms: i64,
    ours: impl Fn(&str) -> bool,
) -> parabyte::Result<u64> {
    let unfinished = client.unfinished_uploads(prefix).await?;
    let mut aborted = 0;
    for upload in unfinished {
        let begun = upload.initiated.map(|time| time.unix_millis());
        if begun.is_some_and(|begun| begun >= since_ms) && ours(&upload.url.key) {
            client.abort_upload(&upload).await?;
            aborted += 1;
        }
    }
    Ok(aborted)
}

/// Some lines of a manifest (its line `first_line` first, named `name` in failures) into
/// `destination`, as `cp --manifest FILE s3://...` runs them: local files, objects and web
/// files each to its key. When it sent in parts, the uploads of its keys begun since
/// `since_ms` and still open (an earlier attempt's) are aborted after it.
#[pyfunction]
#[pyo3(signature = (client, name, first_line, text, destination, since_ms, **keywords))]
#[allow(clippy::too_many_arguments)] // the lines, where they are from, where they go
pub fn manifest_into_store(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    name: String,
    first_line: usize,
    text: String,
    destination: &str,
    since_ms: i64,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<Summary> {
    let mut keywords = UploadKeywords::parse("upload_many", keywords)?;
    let to = store_url(destination)?;
    let keys: HashSet<String> = keys_into_store(&text, &to)
        .into_iter()
        .map(|url| url.key)
        .collect();
    let request = CopyRequest {
        source: Source::ManifestLines {
            name,
            first_line,
            text,
        },
        destination: Destination::Store(to.clone()),
        recursive: false,
        options: CopyOptions {
            upload: keywords.options.clone(),
            ..CopyOptions::default()
        },
    };
    let progress = keywords.progress.take();
    let lines = run_on(py, &client, progress, move |inner, reporter| async move {
        let summary = inner.copy(&request, reporter).await?;
        if summary.requests.multipart > 0 {
            let ours = |key: &str| keys.contains(key);
            aborted_left(&inner, &to, since_ms, ours).await?;
        }
        Ok(summary)
    });
    lines.map(Summary::from)
}
