//! The S3 store: signed GETs of byte ranges and ListObjectsV2 pages, and the one function
//! that turns an S3 error response into an [`Error`] kind.

mod endpoint;
mod profile;
mod sign;
mod xml;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use aws_config::meta::region::RegionProviderChain;
use aws_config::BehaviorVersion;
use futures::TryStreamExt;
use reqwest::header::{HeaderMap, ETAG};
use reqwest::StatusCode;

use crate::checksum::{Crc, StoreChecksum};
use crate::config::StoreConfig;
use crate::counters::{Counters, RequestKind};
use crate::error::{Error, Result};
use crate::location::S3Url;
use crate::ranges::ByteRange;
use crate::source::http_client::{describe, send_following, transport_error, HttpClient, Response};
use crate::source::listing::{Cursor, ListPage, ListQuery, PageSink};
use crate::source::{body_of, last_modified, shape_of, Described, Fetched, Shape, Store};
use crate::validator::Validator;
use endpoint::{encode_query_value, Endpoint};
use sign::Signer;
use xml::{ErrorDocument, ListError, PageParser};

pub use xml::BucketEntry;

/// Error bodies are small; never buffer more than this of one.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Bytes of a listing page that may be held per key asked for (a 1024-byte key
/// URL-encoded to 3 KiB plus every field stores add, with room to spare)...
const MAX_LIST_BYTES_PER_KEY: usize = 8 * 1024;
/// ...and for the document around the keys.
const MAX_LIST_OVERHEAD: usize = 64 * 1024;

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

/// One bodiless GET to the store, before it is signed.
#[derive(Debug, Clone, Copy)]
struct Get<'a> {
    /// GET, or HEAD for an object's checksum.
    method: &'a reqwest::Method,
    kind: RequestKind,
    /// Empty for the service itself (ListBuckets).
    bucket: &'a str,
    key: &'a str,
    /// Already encoded, in canonical order.
    query: &'a str,
    headers: &'a [(&'a str, &'a str)],
    /// The request as messages name it, e.g. `GET s3://bucket/key`.
    what: &'a str,
}

/// What the first answer to a request says about the region it was signed for.
enum RegionCheck {
    /// Nothing about the region: the caller reads the answer.
    Answer(Box<Response>),
    /// The bucket lives in this other region: sign for it and ask again.
    Elsewhere(String),
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
        let mut loader = aws_config::defaults(BehaviorVersion::latest()).region(region_chain);
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
            (false, Some(provider)) => Some(Signer::new(provider)),
            (false, None) => {
                return Err(Error::NoCredentials("the credential chain is empty".into()));
            }
        };
        Ok(S3Store {
            http: HttpClient::new(config, counters.clone())?,
            endpoint,
            signer,
            region,
            bucket_regions: Mutex::new(HashMap::new()),
            counters,
        })
    }

    /// Send a signed (or anonymous) bodiless GET or HEAD and return the response, whatever its status.
    /// A redirect to another origin is followed without the signature or session token.
    /// An answer naming another region for the bucket (S3's 301 PermanentRedirect, a 400
    /// AuthorizationHeaderMalformed) is remembered, and the request is signed for that
    /// region and sent once more, to the same host (only AWS's own host follows the region).
    async fn get(&self, get: &Get<'_>) -> Result<Response> {
        let bucket = self.bucket_region(get.bucket);
        // Until an answer has settled the region, requests about the bucket go one at a time.
        let turn = match bucket.settled() {
            Some(_) => None,
            None => Some(bucket.finding_out.lock().await),
        };
        let region = bucket.settled().unwrap_or_else(|| self.region.clone());
        let response = self.send(get, &region).await?;
        let anonymous = self.anonymous();
        let checked = region_check(response, &region, get.what, get.bucket, anonymous).await;
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
    fn anonymous(&self) -> bool {
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
    async fn send(&self, get: &Get<'_>, region: &str) -> Result<Response> {
        let Get {
            method,
            kind,
            bucket,
            key,
            query,
            headers: extra_headers,
            what,
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
        for (name, value) in extra_headers {
            request = request.header(*name, *value);
        }
        if let Some(signer) = &self.signer {
            let credentials = signer.credentials().await?;
            let mut signed = Vec::with_capacity(extra_headers.len() + 1);
            signed.push(("host", target.host.as_str()));
            signed.extend_from_slice(extra_headers);
            let time = SystemTime::now();
            for (name, value) in signer.sign(
                &credentials,
                region,
                time,
                method.as_str(),
                &target.url,
                &signed,
            )? {
                request = request.header(name, value);
            }
        }
        let failed = |e| transport_error(what, &e, &endpoint.describe());
        let request = request.build().map_err(|e| failed(e.into()))?;
        send_following(&self.http, request, &self.counters, kind)
            .await
            .map_err(failed)
    }

    /// Every bucket the credentials can see (ListBuckets), page after page.
    pub(crate) async fn list_buckets(&self) -> Result<Vec<BucketEntry>> {
        let what = "LIST s3://";
        let mut buckets = Vec::new();
        let mut tokens_seen = std::collections::HashSet::new();
        let mut token: Option<String> = None;
        loop {
            let query = match &token {
                Some(token) => format!("continuation-token={}", encode_query_value(token)),
                None => String::new(),
            };
            let response = self
                .get(&Get {
                    method: &reqwest::Method::GET,
                    kind: RequestKind::List,
                    bucket: "",
                    key: "",
                    query: &query,
                    headers: &[],
                    what,
                })
                .await?;
            if !response.status().is_success() {
                return Err(error_from_response(response, what, "", self.anonymous()).await);
            }
            let body = response.bytes().await.map_err(|e| Error::Network {
                what: what.to_owned(),
                detail: describe(&e),
            })?;
            let (page, next) =
                xml::parse_bucket_list(&body).map_err(|detail| match xml::parse_error(&body) {
                    Some(error) => {
                        classify(200, &error.code, &error.message, what, "", self.anonymous())
                    }
                    None => Error::Protocol {
                        what: what.to_owned(),
                        detail,
                    },
                })?;
            buckets.extend(page);
            match next {
                // A token given twice would loop forever.
                Some(next) if tokens_seen.insert(next.clone()) => token = Some(next),
                Some(_) => {
                    return Err(Error::Protocol {
                        what: what.to_owned(),
                        detail: "the store gave the same continuation token twice".into(),
                    })
                }
                None => return Ok(buckets),
            }
        }
    }
}

/// A ListObjectsV2 request's parameters in the sorted order SigV4 canonicalises them in.
fn list_query_string(list: &ListQuery<'_>) -> String {
    let mut query = String::with_capacity(160);
    if let Cursor::Token(token) = list.cursor {
        query.push_str("continuation-token=");
        query.push_str(&encode_query_value(token));
        query.push('&');
    }
    if let Some(delimiter) = list.delimiter {
        query.push_str("delimiter=");
        query.push_str(&encode_query_value(delimiter));
        query.push('&');
    }
    query.push_str("encoding-type=url&list-type=2&max-keys=");
    query.push_str(&list.max_keys.to_string());
    query.push_str("&prefix=");
    query.push_str(&encode_query_value(list.prefix));
    if let Cursor::After(key) = list.cursor {
        query.push_str("&start-after=");
        query.push_str(&encode_query_value(key));
    }
    query
}

impl Store for S3Store {
    type Object = S3Url;

    fn name(&self) -> &'static str {
        "S3"
    }

    async fn get(
        &self,
        object: &S3Url,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        let range_header = range.map(|r| r.to_string());
        let what = match &range_header {
            Some(range) => format!("GET {object} {range}"),
            None => format!("GET {object}"),
        };
        // Asks for the object's checksum, which S3 sends when a GET is for the whole object.
        let mut headers: Vec<(&str, &str)> = vec![("x-amz-checksum-mode", "ENABLED")];
        if let Some(range) = &range_header {
            headers.push(("range", range));
        }
        let precondition = pinned.and_then(Validator::precondition);
        if let Some(precondition) = &precondition {
            headers.push((precondition.name, &precondition.value));
        }
        let response = self
            .get(&Get {
                method: &reqwest::Method::GET,
                kind: RequestKind::Get,
                bucket: &object.bucket,
                key: &object.key,
                query: "",
                headers: &headers,
                what: &what,
            })
            .await?;
        let Some(shape) = shape_of(response.status(), response.headers(), range, &what)? else {
            return Err(
                error_from_response(response, &what, &object.bucket, self.anonymous()).await,
            );
        };
        let validator = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(|etag| Validator::ETag(etag.to_owned()));
        let checksum = store_checksum(response.headers());
        let content_md5 = content_md5(validator.as_ref(), response.headers());
        Ok(Fetched {
            shape,
            validator,
            checksum,
            content_md5,
            modified: last_modified(response.headers()),
            moved_to: None,
            body: body_of(response, what),
        })
    }

    /// HEAD with `x-amz-checksum-mode: ENABLED`: the store's checksum, which no ranged GET
    /// carries. By part number, where that upload part lies (its Content-Range).
    async fn describe(
        &self,
        object: &S3Url,
        pinned: &Validator,
        part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        let query = part_number.map_or_else(String::new, |part| format!("partNumber={part}"));
        let what = match part_number {
            Some(part) => format!("HEAD {object} part {part}"),
            None => format!("HEAD {object}"),
        };
        let mut headers: Vec<(&str, &str)> = vec![("x-amz-checksum-mode", "ENABLED")];
        let precondition = pinned.precondition();
        if let Some(precondition) = &precondition {
            headers.push((precondition.name, &precondition.value));
        }
        let response = self
            .get(&Get {
                method: &reqwest::Method::HEAD,
                kind: RequestKind::Head,
                bucket: &object.bucket,
                key: &object.key,
                query: &query,
                headers: &headers,
                what: &what,
            })
            .await?;
        let status = response.status();
        if !status.is_success() {
            // A HEAD's answer has no body: its status is all there is to classify.
            return Err(classify(
                status.as_u16(),
                "",
                "",
                &what,
                &object.bucket,
                self.anonymous(),
            ));
        }
        let validator = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(|etag| Validator::ETag(etag.to_owned()));
        if !validator.as_ref().is_some_and(|got| pinned.matches(got)) {
            return Err(Error::Changed {
                what,
                detail: format!("{pinned} became {validator:?}"),
            });
        }
        let part = match part_number {
            None => None,
            Some(_) => {
                shape_of(status, response.headers(), None, &what)?.and_then(|shape| match shape {
                    Shape::Partial { range, .. } => Some(range),
                    Shape::Whole {
                        length: Some(length),
                    } if length > 0 => Some(ByteRange {
                        start: 0,
                        end: length - 1,
                    }),
                    _ => None,
                })
            }
        };
        Ok(Some(Described {
            checksum: store_checksum(response.headers()),
            content_md5: content_md5(validator.as_ref(), response.headers()),
            part,
        }))
    }

    /// One ListObjectsV2 page, parsed as its body arrives. Objects go out on `batches` as
    /// they are decided (recursive listings), so a page of any size is never held; the
    /// rest of the page is returned at its end. The moment the NextContinuationToken has
    /// gone by it is sent on `early_token`, so the caller can ask for the next page while
    /// this one is still arriving. A retry of a page that broke off skips the objects
    /// `handed_on` counts, after checking the store lists them the same way again.
    async fn list_page(&self, query: &ListQuery<'_>, mut sink: PageSink<'_>) -> Result<ListPage> {
        let what = format!("LIST s3://{}/{}", query.bucket, query.prefix);
        let response = self
            .get(&Get {
                method: &reqwest::Method::GET,
                kind: RequestKind::List,
                bucket: query.bucket,
                key: "",
                query: &list_query_string(query),
                headers: &[],
                what: &what,
            })
            .await?;
        if !response.status().is_success() {
            return Err(error_from_response(response, &what, query.bucket, self.anonymous()).await);
        }
        let fail = |error: ListError| {
            match error {
            ListError::Malformed(detail) => Error::Protocol {
                what: what.clone(),
                detail,
            },
            ListError::ErrorDocument { code, message } => {
                classify(200, &code, &message, &what, query.bucket, self.anonymous())
            }
            ListError::TooLarge(limit) => Error::BadListing {
                bucket: query.bucket.to_owned(),
                prefix: query.prefix.to_owned(),
                detail: format!(
                    "more than {limit} bytes of one page (of at most {} keys) would have to be held before its keys could be used; the store ignored max-keys",
                    query.max_keys
                ),
            },
        }
        };
        // Held at once: what a page of max-keys honest entries could take, with room.
        let hold_limit = query
            .max_keys
            .saturating_mul(MAX_LIST_BYTES_PER_KEY)
            .saturating_add(MAX_LIST_OVERHEAD);
        let mut parser = PageParser::new(query.delimiter.is_none(), hold_limit);
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.try_next().await.map_err(|e| Error::Network {
            what: what.clone(),
            detail: describe(&e),
        })? {
            let batch = parser.feed(&chunk).map_err(fail)?;
            if let Some(token) = parser.next_token() {
                sink.token(token);
            }
            if let Some(batch) = batch {
                if !sink.objects(batch, query).await? {
                    // Nobody reads this page any more.
                    return Ok(ListPage::default());
                }
            }
        }
        let rest = parser.finish().map_err(fail)?;
        sink.finish(rest, query)
    }
}

/// The store's checksum among a response's headers: whole-object, or composite (`-N`) when
/// `x-amz-checksum-type` says so or the value carries a part count.
fn store_checksum(headers: &HeaderMap) -> Option<StoreChecksum> {
    let composite = headers
        .get("x-amz-checksum-type")
        .is_some_and(|kind| kind.as_bytes().eq_ignore_ascii_case(b"COMPOSITE"));
    Crc::HEADERS.iter().find_map(|(name, algorithm)| {
        let checksum = StoreChecksum::parse(*algorithm, headers.get(*name)?.to_str().ok()?)?;
        // A composite type with no part count is no value we can rebuild.
        (!composite || matches!(checksum, StoreChecksum::Composite { .. })).then_some(checksum)
    })
}

/// The MD5 an ETag stands for, unless the object is encrypted by a key.
fn content_md5(validator: Option<&Validator>, headers: &HeaderMap) -> Option<[u8; 16]> {
    validator
        .filter(|_| !encrypted_by_key(headers))
        .and_then(Validator::md5)
}

/// With SSE-KMS or a customer key the ETag is not the MD5 of the content.
fn encrypted_by_key(headers: &HeaderMap) -> bool {
    let kms = headers
        .get("x-amz-server-side-encryption")
        .is_some_and(|value| value.as_bytes().starts_with(b"aws:kms"));
    kms || headers.contains_key("x-amz-server-side-encryption-customer-algorithm")
}

/// Read a failed response's body (bounded) and classify it.
async fn error_from_response(
    response: Response,
    what: &str,
    bucket: &str,
    anonymous: bool,
) -> Error {
    let status = response.status().as_u16();
    let error = read_error(response).await;
    classify(status, &error.code, &error.message, what, bucket, anonymous)
}

/// The error document of a failed response, read up to [`MAX_ERROR_BODY`] bytes.
async fn read_error(response: Response) -> ErrorDocument {
    xml::parse_error(&read_error_body(response).await).unwrap_or_default()
}

/// The body of a failed response, up to [`MAX_ERROR_BODY`] bytes.
async fn read_error_body(response: Response) -> Vec<u8> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Ok(Some(chunk)) = stream.try_next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    body
}

/// What Go's HTTP server (MinIO's) answers a plain HTTP request on its TLS port.
const HTTP_TO_HTTPS: &[u8] = b"Client sent an HTTP request to an HTTPS server";

/// Whether an answer says the bucket lives in another region than `signed_for`, as S3
/// (301 PermanentRedirect, 400 AuthorizationHeaderMalformed, both with the
/// `x-amz-bucket-region` header), MinIO (400 with the header and `<Region>`) and versitygw
/// (400 with `<Region>`) say it. Another failure whose body had to be read is classified
/// here.
async fn region_check(
    response: Response,
    signed_for: &str,
    what: &str,
    bucket: &str,
    anonymous: bool,
) -> Result<RegionCheck> {
    let endpoint = format!(
        "{}://{}",
        response.url().scheme(),
        response.url().authority()
    );
    let status = response.status().as_u16();
    if !matches!(status, 301 | 307 | 400) {
        return Ok(RegionCheck::Answer(Box::new(response)));
    }
    let header = response
        .headers()
        .get("x-amz-bucket-region")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body = read_error_body(response).await;
    if status == 400 && body.starts_with(HTTP_TO_HTTPS) {
        return Err(Error::CannotConnect {
            what: what.to_owned(),
            detail: format!(
                "the server at {endpoint} speaks HTTPS: use {}",
                endpoint.replacen("http://", "https://", 1)
            ),
        });
    }
    let error = xml::parse_error(&body).unwrap_or_default();
    let about_region = matches!(
        error.code.as_str(),
        "AuthorizationHeaderMalformed" | "PermanentRedirect"
    ) || (status != 400 && error.code.is_empty());
    let named = header.or(error.region.clone());
    match named {
        Some(region) if about_region && region != signed_for && is_region_name(&region) => {
            Ok(RegionCheck::Elsewhere(region))
        }
        _ => Err(classify(
            status,
            &error.code,
            &error.message,
            what,
            bucket,
            anonymous,
        )),
    }
}

/// A plausible region name (`eu-west-1`, a MinIO site's own name): nothing that could
/// change a host name or a header when signed or sent.
fn is_region_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// The one place an HTTP status and S3 error code become an [`Error`] kind.
/// `anonymous`: the request was sent unsigned (`--no-sign-request`), which a refusal's
/// hint must not suggest again.
fn classify(
    status: u16,
    code: &str,
    message: &str,
    what: &str,
    bucket: &str,
    anonymous: bool,
) -> Error {
    let reason = StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let detail = match (code.is_empty(), message.is_empty()) {
        (true, _) => format!("{status} {reason}"),
        (false, true) => format!("{status} {code}"),
        (false, false) => format!("{status} {code}: {message}"),
    };
    let what = what.to_owned();
    match (status, code) {
        (_, "NoSuchBucket") => Error::NoSuchBucket {
            bucket: bucket.to_owned(),
            detail,
        },
        // versitygw answers an unknown access key with 404 XAdminUserNotFound.
        (
            _,
            "InvalidAccessKeyId"
            | "SignatureDoesNotMatch"
            | "ExpiredToken"
            | "InvalidToken"
            | "TokenRefreshRequired"
            | "XAdminUserNotFound",
        ) => Error::BadCredentials { what, detail },
        // How S3, MinIO and versitygw refuse a signature made for another region: every request
        // would be refused alike, so it stops the run like any other wrong option.
        // Only when the answer did not say which region (else the request was signed again).
        (_, "AuthorizationHeaderMalformed" | "PermanentRedirect") | (301, "") => {
            Error::InvalidInput(format!(
                "{what}: the store is in another region ({detail}); set its region with --region or AWS_REGION"
            ))
        }
        (_, "PreconditionFailed") | (412, _) => Error::Changed { what, detail },
        (_, "SlowDown" | "Throttling" | "RequestLimitExceeded") | (429 | 503, _) => {
            Error::Throttled { what, detail }
        }
        (404, _) | (_, "NoSuchKey") => Error::NotFound { what, detail },
        (401 | 403, _) => Error::PermissionDenied {
            what,
            detail,
            anonymous,
        },
        _ => Error::Http {
            what,
            status,
            detail,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_queries_are_in_canonical_order() {
        let after = Cursor::After("k/1".into());
        let query = ListQuery {
            bucket: "b",
            prefix: "p/",
            delimiter: Some("/"),
            cursor: &after,
            max_keys: 1000,
        };
        assert_eq!(
            list_query_string(&query),
            "delimiter=%2F&encoding-type=url&list-type=2&max-keys=1000&prefix=p%2F&start-after=k%2F1"
        );
        let token = Cursor::Token("t+=".into());
        let query = ListQuery {
            bucket: "b",
            prefix: "",
            delimiter: None,
            cursor: &token,
            max_keys: 10,
        };
        assert_eq!(
            list_query_string(&query),
            "continuation-token=t%2B%3D&encoding-type=url&list-type=2&max-keys=10&prefix="
        );
    }

    #[test]
    fn statuses_and_codes_become_kinds() {
        let kind = |status, code| classify(status, code, "m", "GET s3://b/k", "b", false);
        assert!(matches!(
            kind(404, "NoSuchBucket"),
            Error::NoSuchBucket { .. }
        ));
        assert!(matches!(kind(404, "NoSuchKey"), Error::NotFound { .. }));
        assert!(matches!(
            kind(403, "SignatureDoesNotMatch"),
            Error::BadCredentials { .. }
        ));
        assert!(matches!(
            kind(403, "AccessDenied"),
            Error::PermissionDenied { .. }
        ));
        let wrong_region = kind(400, "AuthorizationHeaderMalformed");
        assert!(wrong_region.is_fatal());
        assert!(
            wrong_region.to_string().contains("--region"),
            "{wrong_region}"
        );
        assert!(matches!(kind(412, ""), Error::Changed { .. }));
        assert!(matches!(kind(503, "SlowDown"), Error::Throttled { .. }));
        assert!(matches!(
            kind(500, "InternalError"),
            Error::Http { status: 500, .. }
        ));
        assert!(kind(500, "").is_retryable());
        assert!(!kind(403, "AccessDenied").is_retryable());
        let message = kind(404, "NoSuchKey").to_string();
        assert!(
            message.starts_with("GET s3://b/k: not found (404 NoSuchKey: m)"),
            "{message}"
        );
    }
}
