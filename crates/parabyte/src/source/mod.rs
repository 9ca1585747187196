//! Talking to stores. [`Store`] (in `store.rs`) is the seam: everything above `source/`
//! reaches a store only through it, and each store lives in a file or folder of its own.

mod answer;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod conformance;
mod connection_demand;
pub(crate) mod http_client;
pub(crate) mod listing;
pub(crate) mod local;
#[cfg(test)]
pub(crate) mod memory;
pub(crate) mod s3;
mod shared_reads;
mod sources;
mod store;
mod trusted_roots;
pub(crate) mod web;
pub(crate) mod write_body;

pub(crate) use answer::{body_of, last_modified, shape_of};
#[cfg(test)]
pub(crate) use memory::{Answer, MemoryStore, Request, Seen, When};
pub(crate) use sources::Sources;
pub(crate) use store::{
    Body, Described, Fetched, ListedPart, Shape, Store, StoredHeaders, WriteOptions, Written,
};
pub use store::{Encryption, UploadedPart};
pub(crate) use write_body::WriteBody;
