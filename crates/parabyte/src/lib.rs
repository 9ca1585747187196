//! # parabyte
//!
//! Fast, trustworthy downloads from S3-compatible stores. parabyte never sends a probe
//! request: a download starts with a ranged GET whose `Content-Range` gives the size and
//! whose ETag pins the version (later ranges carry `If-Match`); sizes known from a listing
//! skip even that. Large objects come as parallel ranges over pooled keep-alive
//! connections, each streamed to its offset in a temporary file that takes its final name
//! only when complete. Broken bodies resume from the byte where they stopped.
//!
//! The same engine reads plain web servers and presigned URLs ([`HttpUrl`], pinned with
//! `If-Match` or `If-Unmodified-Since`) and batches that mix both ([`Item`], [`Manifest`]),
//! and copies local trees the same careful way. [`Client::copy`] is the one entry point:
//! it takes a [`CopyRequest`] and decides which of these it is; the CLI and the Python
//! binding only parse arguments into one and render the [`Summary`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use parabyte::{Client, CopyRequest, Destination, StoreConfig, TransferConfig};
//!
//! # async fn example() -> parabyte::Result<()> {
//! let client = Client::connect(&StoreConfig::from_env(), TransferConfig::default()).await?;
//! let destination = Destination::Path("./data".into());
//! let request = CopyRequest::parse("s3://bucket/datasets/", destination, false)?;
//! let summary = client.copy(&request, Arc::new(parabyte::Silent)).await?;
//! println!("{} objects, {} bytes, {} GET requests", summary.objects, summary.bytes, summary.requests.get);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod body_buffers;
mod checksum;
mod client;
mod config;
mod counters;
mod disk;
mod driver;
mod error;
mod location;
mod manifest;
mod pattern;
mod plan;
#[cfg(test)]
mod property_cases;
mod ranges;
mod report;
mod retry;
mod source;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
mod timestamp;
mod transfer;
mod transfer_scope;
mod validator;

pub use client::{Client, UploadEntry};
pub use config::{
    parse_size, parse_timeout, parse_timeout_seconds, Keys, SourceStore, StoreConfig,
    TransferConfig,
};
pub use counters::{RequestCounts, NAMED_AT_MOST};
pub use disk::sink::kept_for_resume;
pub use error::{Error, Result};
pub use location::{redact, HttpUrl, Location, ObjectUrl, S3Url};
pub use manifest::{keys_into_store, Item, Manifest, ManifestError};
pub use pattern::{has_wildcard, Filter, Pattern};
pub use plan::{
    deletes_of_parts, CopyOptions, CopyRequest, Destination, PartVerdict, RemoveRequest, Source,
    SyncCompare, SyncOptions, UploadOptions,
};
pub use report::{
    Failure, ObjectReport, Preview, Reporter, Silent, Status, Summary, Verification, Verified,
};
pub use retry::RetryPolicy;
pub use source::http_client::REQUEST_EVENTS;
pub use source::listing::{KeyBounds, Listed, ObjectEntry};
pub use source::s3::{BucketEntry, ObjectInfo, StoredChecksum, UnfinishedUpload};
pub use source::{Encryption, UploadedPart};
pub use timestamp::Timestamp;
pub use transfer::upload::{uploads_aborted, uploads_kept, Chunk, SharedSource, SharedUpload};
