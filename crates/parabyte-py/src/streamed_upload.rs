//! A streamed upload fed by Python, for `parabyte.fsspec`'s files open for writing: each
//! `write` hands its bytes to an upload already running in parabyte, which sends them as
//! parts (each with its CRC64NVME) while the writer goes on, so a file larger than memory
//! can be written. Only `close` stores the object; `abort`, or dropping the writer
//! unclosed, aborts the upload and nothing is stored.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use parabyte::{Chunk, S3Url, Silent, UploadOptions};
use pyo3::prelude::*;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::client::Client;
use crate::errors::{to_py, InvalidInputError};
use crate::run::wait;
use crate::runtime::runtime;
use crate::summary::Summary;

/// Writes waiting for the upload to take them: a few, so a fast writer waits for the
/// store rather than filling memory.
const QUEUED_WRITES: usize = 4;

type Upload = JoinHandle<parabyte::Result<parabyte::Summary>>;

/// One object being written: `write` its bytes, then `close` to store it.
#[pyclass(module = "parabyte")]
#[derive(Debug)]
pub struct StreamedUpload {
    sender: Mutex<Option<mpsc::Sender<Chunk>>>,
    upload: Mutex<Option<Upload>>,
}

impl StreamedUpload {
    fn sender(&self) -> PyResult<mpsc::Sender<Chunk>> {
        self.sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| InvalidInputError::new_err("this upload was closed or aborted"))
    }

    /// The upload's outcome, once it has ended (the sender dropped or the end sent).
    fn settle(&self, py: Python<'_>) -> PyResult<parabyte::Summary> {
        let upload = self
            .upload
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(upload) = upload else {
            return Err(InvalidInputError::new_err(
                "this upload was closed or aborted",
            ));
        };
        let ended = async move {
            match upload.await {
                Ok(outcome) => outcome.map_err(to_py),
                Err(joined) => Err(InvalidInputError::new_err(format!(
                    "the upload stopped: {joined}"
                ))),
            }
        };
        wait(py, ended, |_| Ok(()))
    }
}

#[pymethods]
impl StreamedUpload {
    /// Hand `data` (any bytes-like object, copied) to the upload; waits while the upload
    /// has enough queued. An upload that failed raises its error here.
    fn write(&self, py: Python<'_>, data: &[u8]) -> PyResult<usize> {
        let length = data.len();
        if length == 0 {
            return Ok(0);
        }
        let sender = self.sender()?;
        let chunk = Chunk::Data(Bytes::copy_from_slice(data));
        let sent = wait(
            py,
            async move { Ok(sender.send(chunk).await.is_ok()) },
            |_| Ok(()),
        )?;
        if !sent {
            // The upload ended early: its error says why.
            self.sender
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            self.settle(py)?;
            return Err(InvalidInputError::new_err(
                "the upload ended before the writer",
            ));
        }
        Ok(length)
    }

    /// Store the object: what was written, whole. Raises the upload's failure
    /// (`FileExistsError` is not raised here: with `no_clobber`, a key that exists shows as
    /// `summary.skipped`).
    fn close(&self, py: Python<'_>) -> PyResult<Summary> {
        let sender = self.sender()?;
        let _ = wait(
            py,
            async move { Ok(sender.send(Chunk::End).await.is_ok()) },
            |_| Ok(()),
        )?;
        self.sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.settle(py).map(Summary::from)
    }

    /// Give up: the upload is aborted and nothing is stored.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        self.sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if self
            .upload
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
        {
            let _ = self.settle(py);
        }
        Ok(())
    }
}

impl Drop for StreamedUpload {
    /// Dropped unclosed: the channel closes without its end, so the upload aborts.
    fn drop(&mut self) {
        self.sender
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// Begin a streamed upload to `s3://bucket/key`; with `no_clobber`, an object already
/// there is kept (the summary counts it as skipped).
#[pyfunction]
#[pyo3(signature = (client, destination, *, no_clobber = false))]
pub fn start_upload(
    py: Python<'_>,
    client: PyRef<'_, Client>,
    destination: &str,
    no_clobber: bool,
) -> PyResult<StreamedUpload> {
    let to = S3Url::parse(destination).map_err(to_py)?;
    let inner = client.inner(py)?;
    let options = UploadOptions {
        no_clobber,
        guess_content_type: false,
        ..UploadOptions::default()
    };
    let (sender, receiver) = mpsc::channel(QUEUED_WRITES);
    let upload = runtime().spawn(async move {
        inner
            .put_written(receiver, &to, &options, Arc::new(Silent))
            .await
    });
    Ok(StreamedUpload {
        sender: Mutex::new(Some(sender)),
        upload: Mutex::new(Some(upload)),
    })
}
