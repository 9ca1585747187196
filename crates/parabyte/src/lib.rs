//! # parabyte
//!
//! Fast, trustworthy downloads from S3-compatible stores. parabyte never sends a probe
//! request: a download starts with a ranged GET whose `Content-Range` gives the size and
//! whose ETag pins the version (later ranges carry `If-Match`); sizes known from a listing
//! skip even that. Large objects come as parallel ranges over pooled keep-alive
//! connections, each streamed to its offset in a temporary file that takes its final name
//! only when complete. Broken bodies resume from the byte where they stopped.
//!
//! ```no_run
//! use std::sync::Arc;
//! use parabyte::{Client, CopyRequest, Destination, Location, StoreConfig, TransferConfig};
//!
//! # async fn example() -> parabyte::Result<()> {
//! let client = Client::connect(&StoreConfig::from_env(), TransferConfig::default()).await?;
//! let Location::S3(source) = Location::parse("s3://bucket/datasets/")? else { unreachable!() };
//! let request = CopyRequest { source, destination: Destination::Path("./data".into()), recursive: true };
//! let summary = client.copy(&request, Arc::new(parabyte::Silent)).await?;
//! println!("{} objects, {} bytes, {} GET requests", summary.objects, summary.bytes, summary.requests.get);
//! # Ok(())
//! # }
//! ```

mod client;
mod config;
mod engine;
mod error;
mod http;
mod list;
mod location;
mod paths;
mod report;
mod retry;
mod s3;
mod sink;
mod source;
mod timestamp;
mod verify;

pub use client::{Client, CopyRequest, Destination, Item};
pub use config::{parse_size, Keys, StoreConfig, TransferConfig};
pub use error::{Error, Result};
pub use list::Listed;
pub use location::{Location, S3Url};
pub use report::{Failure, Reporter, RequestCounts, Silent, Summary, Verified};
pub use retry::RetryPolicy;
pub use s3::ObjectEntry;
pub use timestamp::Timestamp;
