//! What the workspace's own tests reach beyond the public API, behind the `testing` feature
//! (never on in a build for users): the store conformance suite, run against real servers.

use std::sync::Arc;

use crate::config::StoreConfig;
use crate::counters::Counters;
use crate::source::conformance::{check_store, s3_object};
pub use crate::source::conformance::{fixture_bytes, FIXTURE};
use crate::source::s3::S3Store;
use crate::source::web::WebSource;
use crate::source::Sources;

/// Runs the store conformance suite against the S3 store `config` names, which must hold
/// [`FIXTURE`] under `s3://bucket/prefix`: the names of the cases that passed, or the first
/// that failed and why.
pub async fn check_s3_store(
    config: &StoreConfig,
    bucket: &str,
    prefix: &str,
) -> Result<Vec<&'static str>, String> {
    let counters = Arc::new(Counters::default());
    let s3 = S3Store::connect(config, counters.clone())
        .await
        .map_err(|error| error.to_string())?;
    let web = WebSource::new(config, counters).map_err(|error| error.to_string())?;
    let sources = Arc::new(Sources {
        s3: Arc::new(s3),
        web,
        read_from: None,
    });
    check_store(&sources, bucket, prefix, s3_object).await
}
