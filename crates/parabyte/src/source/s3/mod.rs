//! The S3 store: a connection (endpoint, credentials, the region each bucket answered
//! from) and the one path every request takes, signed and sent again when a bucket turns
//! out to live elsewhere. Each operation is a file of its own (`get_object`, `head_object`,
//! `list_objects`, `list_buckets`, `create_bucket`, `delete_bucket`, `put_object`, `multipart`, `copy_object`, `delete_objects`), `store.rs` puts them behind the [`Store`] trait, and
//! `errors.rs` holds the one function that turns an S3 error response into an [`Error`]
//! kind.
//!
//! [`Store`]: crate::source::Store
//! [`Error`]: crate::error::Error

mod checksum_fallback;
mod checksum_headers;
mod copy_object;
mod create_bucket;
mod delete_bucket;
mod delete_objects;
mod endpoint;
mod errors;
#[cfg(test)]
mod fuzz;
mod get_object;
mod head_object;
mod list_buckets;
mod list_objects;
mod list_uploads;
mod multipart;
mod profile;
mod put_object;
mod sdk_http;
mod sign;
mod stat_object;
mod store;
mod upload_xml;
mod xml;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::source::write_body::WriteBody;
use aws_config::meta::region::RegionProviderChain;
use aws_config::BehaviorVersion;

use crate::config::StoreConfig;
use crate::counters::{Counters, RequestKind};
use crate::error::{Error, Result};
use crate::source::http_client::{send_once, transport_error, HttpClient, Response};
use endpoint::Endpoint;
use errors::{region_check, RegionCheck};
use sign::{Payload, SignedCall, Signer};

pub use list_uploads::UnfinishedUpload;
pub use stat_object::{ObjectInfo, StoredChecksum};
pub use xml::BucketEntry;

/// A connection to one S3-compatible store.
#[derive(Debug)]
pub(crate) struct S3Store {
    http: HttpClient,
    endpoint: Endpoint,
    /// `None` for anonymous requests (`--no-sign-request`).
    signer: Option<Signer>,
    /// The region requests are signed for, unless the bucket was found to be elsewhere.
    region: String,
    /// What each bucket's answers showed about its region, learned once per run so later
    /// requests are signed right the first time. `""` is the service itself.
    bucket_regions: Mutex<HashMap<String, Arc<BucketRegion>>>,
    counters: Arc<Counters>,
    /// The store refused checksum headers: writes go with Content-MD5 (`checksum_fallback.rs`).
    md5_instead: AtomicBool,
    /// Every request says the requester pays (`--request-payer requester`).
    request_payer: bool,
}

/// The region requests about one bucket are signed for.
#[derive(Debug, Default)]
struct BucketRegion {
    /// Set by the first answer: the region it named, else the one it accepted.
    settled: Mutex<Option<String>>,
    /// Held by the one request that finds out, so requests that start together (a
    /// manifest's objects) are not each refused by a store in another region.
    finding_out: tokio::sync::Mutex<()>,
}

impl BucketRegion {
    fn settled(&self) -> Option<String> {
        lock(&self.settled).clone()
    }

    fn settle(&self, region: &str) {
        *lock(&self.settled) = Some(region.to_owned());
    }
}

/// A lock whose holder cannot leave its data half-changed: a panic elsewhere does not
/// poison it for everyone else.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One request to the store, before it is signed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call<'a> {
    /// GET, HEAD for an object's checksum, PUT, POST or DELETE for writes.
    pub(super) method: &'a reqwest::Method,
    pub(super) kind: RequestKind,
    /// Empty for the service itself (ListBuckets).
    pub(super) bucket: &'a str,
    pub(super) key: &'a str,
    /// Already encoded, in canonical order.
    pub(super) query: &'a str,
    pub(super) headers: &'a [(&'a str, &'a str)],
    /// The request as messages name it, e.g. `GET s3://bucket/key`.
    pub(super) what: &'a str,
    /// What a write sends; `None` for a bodiless request. Sent unsigned: its checksum
    /// header, which is signed, is what the store checks it by.
    pub(super) body: Option<&'a WriteBody>,
}

impl Call<'_> {
    /// Whether the call carries the checksum headers of a write (not a read's
    /// `x-amz-checksum-mode`). Writes sent before the first refusal came back still carry
    /// them, and are refused after it: each is sent again with Content-MD5.
    fn carries_checksums(&self) -> bool {
        self.headers
            .iter()
            .any(|(name, _)| name.starts_with("x-amz-checksum-") && *name != "x-amz-checksum-mode")
    }
}

impl S3Store {
    /// Resolve region, endpoint and credentials the way the AWS CLI does.
    pub(crate) async fn connect(config: &StoreConfig, counters: Arc<Counters>) -> Result<S3Store> {
        let profile = config
            .profile
            .clone()
            .or_else(|| std::env::var("AWS_PROFILE").ok());
        // Region: flag, environment, profile, then us-east-1. Never the instance metadata
        // service: a download tool should not stall on a link-local probe to learn a name.
        let mut profile_region = aws_config::profile::ProfileFileRegionProvider::builder();
        if let Some(name) = &profile {
            profile_region = profile_region.profile_name(name);
        }
        let region_chain =
            RegionProviderChain::first_try(config.region.clone().map(aws_config::Region::new))
                .or_else(aws_config::environment::EnvironmentVariableRegionProvider::new())
                .or_else(profile_region.build())
                .or_else("us-east-1");
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .region(region_chain)
            .http_client(sdk_http::OnFirstRequest::default());
        if let Some(name) = &profile {
            profile::check_profile_exists(name).await?;
            loader = loader.profile_name(name);
        }
        if config.no_sign_request {
            loader = loader.no_credentials();
        } else if let Some(keys) = &config.credentials {
            loader = loader.credentials_provider(aws_credential_types::Credentials::new(
                &keys.access_key_id,
                &keys.secret_access_key,
                keys.session_token.clone(),
                None,
                "parabyte-explicit",
            ));
        }
        let sdk = loader.load().await;
        let region = sdk
            .region()
            .map_or_else(|| "us-east-1".to_owned(), |r| r.to_string());
        let endpoint_url = config
            .endpoint_url
            .clone()
            .or_else(|| std::env::var("AWS_ENDPOINT_URL_S3").ok())
            .or_else(|| sdk.endpoint_url().map(str::to_owned));
        let endpoint = match endpoint_url {
            Some(url) => Endpoint::custom(&url)?,
            None => Endpoint::aws(&region, config.path_style),
        };
        let signer = match (config.no_sign_request, sdk.credentials_provider()) {
            (true, _) => None,
            (false, Some(provider)) => Some(Signer::new(provider, profile.clone())),
            (false, None) => {
                return Err(Error::NoCredentials("the credential chain is empty".into()));
            }
        };
        let http = HttpClient::new(config, counters.clone())?;
        if endpoint.is_https() {
            http.expect_https();
        }
        Ok(S3Store {
            http,
            endpoint,
            signer,
            region,
            bucket_regions: Mutex::new(HashMap::new()),
            counters,
            md5_instead: AtomicBool::new(false),
            request_payer: config.request_payer,
        })
    }

    /// Send a signed (or anonymous) request and return the response, whatever its status.
    /// A redirect to another origin is followed without the signature or session token.
    /// An answer naming another region for the bucket (S3's 301 PermanentRedirect, a 400
    /// AuthorizationHeaderMalformed) is remembered, and the request is signed for that
    /// region and sent once more, to the same host (only AWS's own host follows the region).
    pub(super) async fn request(&self, get: &Call<'_>) -> Result<Response> {
        let bucket = self.bucket_region(get.bucket);
        // Until an answer has settled the region, requests about the bucket go one at a time.
        // One that waited its turn while another settled it goes at once: holding the turn
        // for its own round trip would send every object of a manifest one after another.
        let turn = match bucket.settled() {
            Some(_) => None,
            None => {
                let turn = bucket.finding_out.lock().await;
                bucket.settled().is_none().then_some(turn)
            }
        };
        let region = bucket.settled().unwrap_or_else(|| self.region.clone());
        let response = self.send(get, &region).await?;
        let anonymous = self.anonymous();
        let carried = get.carries_checksums();
        let checked = region_check(
            response,
            &region,
            (get.what, get.bucket),
            anonymous,
            carried,
        )
        .await;
        match &checked {
            Ok(RegionCheck::Elsewhere(learned)) => bucket.settle(learned),
            // Any other answer: the store took the region (or did not care).
            _ => bucket.settle(&region),
        }
        drop(turn);
        match checked? {
            RegionCheck::Answer(response) => Ok(*response),
            RegionCheck::Elsewhere(learned) => self.send(get, &learned).await,
        }
    }

    /// Requests go unsigned (`--no-sign-request`).
    pub(super) fn anonymous(&self) -> bool {
        self.signer.is_none()
    }

    /// What is known of `bucket`'s region (made on first use).
    fn bucket_region(&self, bucket: &str) -> Arc<BucketRegion> {
        let mut buckets = lock(&self.bucket_regions);
        match buckets.get(bucket) {
            Some(known) => known.clone(),
            None => {
                let fresh = Arc::new(BucketRegion::default());
                buckets.insert(bucket.to_owned(), fresh.clone());
                fresh
            }
        }
    }

    /// One GET signed for `region`; an empty bucket addresses the service (ListBuckets).
    async fn send(&self, get: &Call<'_>, region: &str) -> Result<Response> {
        let Call {
            method,
            kind,
            bucket,
            key,
            query,
            headers: extra_headers,
            what,
            body,
        } = *get;
        let endpoint = if region == self.region {
            std::borrow::Cow::Borrowed(&self.endpoint)
        } else {
            std::borrow::Cow::Owned(self.endpoint.for_region(region))
        };
        let target = if bucket.is_empty() {
            endpoint.service_target(query)
        } else {
            endpoint.target(bucket, key, query)?
        };
        let mut request = self
            .http
            .request(method.clone(), &target.url)
            .header("host", &target.host);
        // Every kind of request to a requester-pays bucket must say who pays, signed.
        let payer = [("x-amz-request-payer", "requester")];
        let extra_headers: std::borrow::Cow<'_, [(&str, &str)]> = match self.request_payer {
            true => [extra_headers, &payer[..]].concat().into(),
            false => extra_headers.into(),
        };
        let extra_headers = &*extra_headers;
        for (name, value) in extra_headers {
            request = request.header(*name, *value);
        }
        if let Some(signer) = &self.signer {
            let credentials = signer.credentials().await?;
            let mut signed = Vec::with_capacity(extra_headers.len() + 1);
            signed.push(("host", target.host.as_str()));
            signed.extend_from_slice(extra_headers);
            let time = SystemTime::now();
            let payload = match body {
                None => Payload::Empty,
                Some(_) => Payload::Unsigned,
            };
            let call = SignedCall {
                method: method.as_str(),
                url: &target.url,
                headers: &signed,
                payload,
            };
            for (name, value) in signer.sign(&credentials, region, time, &call)? {
                request = request.header(name, value);
            }
        }
        let failed = |e| transport_error(what, &e, &endpoint.describe());
        let request = request.build().map_err(|e| failed(e.into()))?;
        // Never a redirect: only the endpoint the user gave receives S3 requests, and a
        // region answer changes the signature, nothing else (`errors::region_check`).
        let body = body.cloned().unwrap_or_default();
        send_once(&self.http, request, body, &self.counters, kind)
            .await
            .map_err(failed)
    }
}
