//! A web server's file streamed into a key: one GET (pinned to the ETag a manifest gave),
//! its body cut into parts as it arrives, never more than a few parts in memory.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::plan::WebJob;
use crate::report::Reporter;
use crate::retry::with_retries;
use crate::source::{Shape, Store};
use crate::transfer::engine::Finished;
use crate::transfer::upload::{Answer, Uploader};
use crate::validator::Validator;

/// Stream `job.from` into `job.to`; an answer of another length than the size the manifest
/// gave fails it before a byte is stored.
pub(super) async fn put_web<S: Store<Object = ObjectUrl>>(
    uploader: &Uploader<S>,
    job: &WebJob,
    reporter: &dyn Reporter,
) -> Result<Finished> {
    let (store, transfer, counters) = uploader.parts();
    let from = &job.from;
    let object = ObjectUrl::Http(from.clone());
    let pinned = job.etag.clone().map(Validator::ETag);
    let fetched = with_retries(&transfer.retry, counters, || {
        store.get(&object, None, pinned.as_ref())
    })
    .await?;
    let length = match fetched.shape {
        Shape::Whole { length } => length,
        Shape::Empty => Some(0),
        Shape::Partial { .. } => {
            return Err(Error::Protocol {
                what: format!("GET {from}"),
                detail: "a part of the file answered a request for all of it".into(),
            })
        }
    };
    if let (Some(expected), Some(sent)) = (job.size, length) {
        if expected != sent {
            return Err(Error::Changed {
                what: format!("GET {from}"),
                detail: format!(
                    "the manifest says {expected} bytes, the server sends {sent}; \
                     correct the SIZE or leave it out"
                ),
            });
        }
    }
    // A chunked answer must still reach the size the manifest gave.
    let length = length.or(job.size);
    if let Some(length) = length {
        reporter.size_discovered(length);
    }
    let answer = Answer {
        name: from.to_string(),
        body: fetched.body,
        length,
        held: Bytes::new(),
        received: 0,
    };
    uploader
        .put_stream(answer, &job.to, &job.options, reporter)
        .await
}
