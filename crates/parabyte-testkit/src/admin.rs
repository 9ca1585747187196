//! A small SigV4-signed S3 client for *setting up* tests: make buckets, put and delete objects.
//! It is deliberately independent of the parabyte library, which is the thing under test.

use std::fmt;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest,
    SignatureLocation, SigningSettings, UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use base64::Engine as _;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http::{HeaderMap, Method, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Body, Frame, Incoming};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sha2::{Digest, Sha256};

use crate::data::payload_at;
use crate::error::{Error, Result};
use crate::names::{encode_key, encode_query};
use crate::tls;

/// How many PUTs [`AdminClient::fill`] keeps in flight.
const FILL_CONCURRENCY: usize = 16;
/// Generated objects are produced and sent in pieces of this size.
const GENERATED_CHUNK: usize = 1 << 20;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Added to [`REQUEST_TIMEOUT`] per byte of a generated upload (at a pessimistic 8 MiB/s).
const GENERATED_BYTES_PER_SECOND: u64 = 8 << 20;

type RequestBody = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// Path-style, SigV4-signed requests to one endpoint, over HTTP or HTTPS. Cheap to clone;
/// connections are pooled.
#[derive(Clone)]
pub struct AdminClient {
    endpoint: String,
    authority: String,
    access_key: String,
    secret_key: String,
    region: String,
    /// Whom HTTPS connections trust; kept so that [`AdminClient::with_endpoint`] trusts the same.
    tls: rustls::ClientConfig,
    http: Client<HttpsConnector<HttpConnector>, RequestBody>,
}

/// A whole response, status and all, for tests that want to look at what a server answered.
#[derive(Debug)]
pub struct S3Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl fmt::Debug for AdminClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret key, not even a test one.
        f.debug_struct("AdminClient")
            .field("endpoint", &self.endpoint)
            .field("access_key", &self.access_key)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl AdminClient {
    /// `endpoint` is `http://host:port` or `https://host:port`. Over HTTPS it trusts the
    /// system's roots only, so a test server's certificate is refused until
    /// [`AdminClient::with_ca_pem`] adds its CA ([`AdminClient::for_server`] does that).
    pub fn new(endpoint: &str, access_key: &str, secret_key: &str, region: &str) -> AdminClient {
        AdminClient::build(
            endpoint,
            access_key,
            secret_key,
            region,
            tls::system_roots(),
        )
    }

    /// The same client trusting exactly the CA certificates in `ca_pem` (one or a bundle,
    /// e.g. the contents of [`crate::TestServer::ca_pem_path`]) for HTTPS, instead of the system's.
    pub fn with_ca_pem(&self, ca_pem: &[u8]) -> Result<AdminClient> {
        Ok(AdminClient::build(
            &self.endpoint,
            &self.access_key,
            &self.secret_key,
            &self.region,
            tls::trusting(ca_pem)?,
        ))
    }

    /// The same credentials and trust against another endpoint, e.g. a
    /// [`crate::CountingProxy`] in front.
    pub fn with_endpoint(&self, endpoint: &str) -> AdminClient {
        AdminClient::build(
            endpoint,
            &self.access_key,
            &self.secret_key,
            &self.region,
            self.tls.clone(),
        )
    }

    fn build(
        endpoint: &str,
        access_key: &str,
        secret_key: &str,
        region: &str,
        tls: rustls::ClientConfig,
    ) -> AdminClient {
        let endpoint = endpoint.trim_end_matches('/').to_owned();
        let authority = endpoint
            .strip_prefix("http://")
            .or_else(|| endpoint.strip_prefix("https://"))
            .unwrap_or_else(|| {
                panic!("the admin client speaks http:// or https://, not {endpoint}")
            })
            .to_owned();
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls.clone())
            .https_or_http()
            .enable_http1()
            .build();
        let http = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(20))
            .build(connector);
        AdminClient {
            endpoint,
            authority,
            access_key: access_key.to_owned(),
            secret_key: secret_key.to_owned(),
            region: region.to_owned(),
            tls,
            http,
        }
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A signed request to `bucket` and `key` (both may be empty: `""` for the bucket itself or
    /// the service), to be completed with headers and query parameters and then sent.
    pub fn request<'a>(&'a self, method: Method, bucket: &'a str, key: &'a str) -> S3Request<'a> {
        S3Request {
            client: self,
            method,
            bucket,
            key,
            query: Vec::new(),
            headers: Vec::new(),
            body: Payload::Bytes(Bytes::new()),
        }
    }

    /// Creates `bucket`; one that this account already owns counts as created.
    pub async fn create_bucket(&self, bucket: &str) -> Result<()> {
        let response = self.request(Method::PUT, bucket, "").send().await?;
        let already_ours = response.status == StatusCode::CONFLICT
            && String::from_utf8_lossy(&response.body).contains("BucketAlreadyOwnedByYou");
        if already_ours {
            return Ok(());
        }
        self.expect_success(Method::PUT, bucket, "", response)
            .map(drop)
    }

    /// Deletes an empty bucket.
    pub async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        let response = self.request(Method::DELETE, bucket, "").send().await?;
        self.expect_success(Method::DELETE, bucket, "", response)
            .map(drop)
    }

    pub async fn put_object(&self, bucket: &str, key: &str, body: impl Into<Bytes>) -> Result<()> {
        let response = self
            .request(Method::PUT, bucket, key)
            .body(body)
            .send()
            .await?;
        self.expect_success(Method::PUT, bucket, key, response)
            .map(drop)
    }

    /// Uploads `data::payload(seed, len)` in one PUT without ever holding it in memory.
    pub async fn put_generated(&self, bucket: &str, key: &str, seed: u64, len: u64) -> Result<()> {
        let mut request = self.request(Method::PUT, bucket, key);
        request.body = Payload::Generated { seed, len };
        let response = request.send().await?;
        self.expect_success(Method::PUT, bucket, key, response)
            .map(drop)
    }

    /// Uploads `parts` as one multipart upload, each part with its CRC32, so the store keeps
    /// a COMPOSITE checksum (`CRC-of-the-parts'-CRCs-N`) as S3 SDKs upload large files.
    pub async fn put_composite_crc32(
        &self,
        bucket: &str,
        key: &str,
        parts: &[Bytes],
    ) -> Result<()> {
        self.put_crc32_parts(bucket, key, parts, true).await
    }

    /// Like [`AdminClient::put_composite_crc32`], but the upload declares the checksum type
    /// only when `declare_type` (boto3 does not: S3 then keeps COMPOSITE, and moto keeps no
    /// type at all).
    pub async fn put_crc32_parts(
        &self,
        bucket: &str,
        key: &str,
        parts: &[Bytes],
        declare_type: bool,
    ) -> Result<()> {
        let mut create = self
            .request(Method::POST, bucket, key)
            .query("uploads", "")
            .header("x-amz-checksum-algorithm", "CRC32");
        if declare_type {
            create = create.header("x-amz-checksum-type", "COMPOSITE");
        }
        let created = create.send().await?;
        let created = self.expect_success(Method::POST, bucket, key, created)?;
        let upload_id = xml_value(&created, "UploadId").unwrap_or_default();
        let mut complete = String::from("<CompleteMultipartUpload>");
        for (index, part) in parts.iter().enumerate() {
            let number = (index + 1).to_string();
            let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, part) as u32;
            let crc = base64::engine::general_purpose::STANDARD.encode(crc.to_be_bytes());
            let uploaded = self
                .request(Method::PUT, bucket, key)
                .query("partNumber", &number)
                .query("uploadId", &upload_id)
                .header("x-amz-checksum-crc32", &crc)
                .body(part.clone())
                .send()
                .await?;
            let etag = uploaded
                .headers
                .get("etag")
                .and_then(|etag| etag.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            self.expect_success(Method::PUT, bucket, key, uploaded)?;
            complete.push_str(&format!(
                "<Part><ETag>{etag}</ETag><PartNumber>{number}</PartNumber><ChecksumCRC32>{crc}</ChecksumCRC32></Part>"
            ));
        }
        complete.push_str("</CompleteMultipartUpload>");
        let completed = self
            .request(Method::POST, bucket, key)
            .query("uploadId", &upload_id)
            .body(complete)
            .send()
            .await?;
        self.expect_success(Method::POST, bucket, key, completed)
            .map(drop)
    }

    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Bytes> {
        let response = self.request(Method::GET, bucket, key).send().await?;
        self.expect_success(Method::GET, bucket, key, response)
    }

    /// Multipart uploads begun in `bucket` and neither completed nor aborted: what an
    /// upload that failed must not leave behind (ListMultipartUploads).
    pub async fn open_uploads(&self, bucket: &str) -> Result<usize> {
        let response = self
            .request(Method::GET, bucket, "")
            .query("uploads", "")
            .send()
            .await?;
        let body = self.expect_success(Method::GET, bucket, "", response)?;
        Ok(String::from_utf8_lossy(&body).matches("<UploadId>").count())
    }

    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        let response = self.request(Method::DELETE, bucket, key).send().await?;
        self.expect_success(Method::DELETE, bucket, key, response)
            .map(drop)
    }

    /// PUTs every `(key, body)` with a bounded number in flight, pulling lazily from `objects`
    /// so that memory stays flat however many there are. Returns how many were stored.
    pub async fn fill<K, V>(
        &self,
        bucket: &str,
        objects: impl IntoIterator<Item = (K, V)>,
    ) -> Result<usize>
    where
        K: AsRef<str>,
        V: Into<Bytes>,
    {
        futures::stream::iter(objects)
            .map(|(key, body)| async move { self.put_object(bucket, key.as_ref(), body).await })
            .buffer_unordered(FILL_CONCURRENCY)
            .try_fold(0, |stored, ()| async move { Ok(stored + 1) })
            .await
    }

    fn expect_success(
        &self,
        method: Method,
        bucket: &str,
        key: &str,
        response: S3Response,
    ) -> Result<Bytes> {
        if response.status.is_success() {
            return Ok(response.body);
        }
        Err(Error::Status {
            method,
            url: self.url(bucket, key, &[]),
            status: response.status,
            body: String::from_utf8_lossy(&response.body).into_owned(),
        })
    }

    fn url(&self, bucket: &str, key: &str, query: &[(String, String)]) -> String {
        let mut url = format!("{}/{bucket}", self.endpoint);
        if !key.is_empty() {
            url.push('/');
            url.push_str(&encode_key(key));
        }
        if !query.is_empty() {
            url.push('?');
            url.push_str(&encode_query(query));
        }
        url
    }

    async fn execute(&self, request: S3Request<'_>) -> Result<S3Response> {
        let (http_request, timeout) = self.prepare(request).await?;
        let (method, url) = (
            http_request.method().clone(),
            http_request.uri().to_string(),
        );
        let fail = |message: String| Error::Transport {
            method: method.clone(),
            url: url.clone(),
            message,
        };
        let exchange = async {
            let response = self
                .http
                .request(http_request)
                .await
                .map_err(|e| fail(format!("{e:?}")))?;
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| fail(e.to_string()))?
                .to_bytes();
            Ok(S3Response {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| Error::Timeout {
                method: method.clone(),
                url: url.clone(),
                after: timeout,
            })?
    }

    async fn execute_streaming(&self, request: S3Request<'_>) -> Result<http::Response<Incoming>> {
        let (http_request, timeout) = self.prepare(request).await?;
        let (method, url) = (
            http_request.method().clone(),
            http_request.uri().to_string(),
        );
        match tokio::time::timeout(timeout, self.http.request(http_request)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(Error::Transport {
                method,
                url,
                message: format!("{e:?}"),
            }),
            Err(_) => Err(Error::Timeout {
                method,
                url,
                after: timeout,
            }),
        }
    }

    /// The signed request, and how long the exchange may take.
    async fn prepare(
        &self,
        request: S3Request<'_>,
    ) -> Result<(http::Request<RequestBody>, Duration)> {
        let method = request.method.clone();
        let url = self.url(request.bucket, request.key, &request.query);
        let (body, content_sha256, timeout) = request.body.into_parts().await?;
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(&url)
            .header(http::header::HOST, &self.authority);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        if let Some(len) = body.size_hint().exact().filter(|_| method == Method::PUT) {
            // S3 wants a length on every PUT, and a streamed body has none of its own.
            builder = builder.header(http::header::CONTENT_LENGTH, len);
        }
        let mut http_request = builder.body(body).map_err(|e| Error::Transport {
            method: method.clone(),
            url: url.clone(),
            message: e.to_string(),
        })?;
        let mut settings = s3_signing_settings();
        // Requests carry the real payload hash in a header.
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        self.sign(
            &mut http_request,
            settings,
            SignableBody::Precomputed(content_sha256),
        )
        .map_err(|message| Error::Signing {
            method,
            url,
            message,
        })?;
        Ok((http_request, timeout))
    }

    /// A presigned URL that GETs `key` for `expires` with no other credentials, as
    /// `aws s3 presign` makes them: the signature is in the query string.
    pub fn presign_get(&self, bucket: &str, key: &str, expires: Duration) -> Result<String> {
        let url = self.url(bucket, key, &[]);
        let signing_error = |message: String| Error::Signing {
            method: Method::GET,
            url: url.clone(),
            message,
        };
        let mut request = http::Request::get(&url)
            .header(http::header::HOST, &self.authority)
            .body(())
            .map_err(|e| signing_error(e.to_string()))?;
        let mut settings = s3_signing_settings();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(expires);
        self.sign(&mut request, settings, SignableBody::UnsignedPayload)
            .map_err(signing_error)?;
        Ok(request.uri().to_string())
    }

    fn sign<B>(
        &self,
        request: &mut http::Request<B>,
        settings: SigningSettings,
        body: SignableBody<'_>,
    ) -> std::result::Result<(), String> {
        let identity: Identity = Credentials::new(
            &self.access_key,
            &self.secret_key,
            None,
            None,
            "parabyte-testkit",
        )
        .into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| e.to_string())?
            .into();
        let headers = request
            .headers()
            .iter()
            .map(|(name, value)| Ok((name.as_str(), value.to_str().map_err(|e| e.to_string())?)))
            .collect::<std::result::Result<Vec<_>, String>>()?;
        let uri = request.uri().to_string();
        let signable =
            SignableRequest::new(request.method().as_str(), uri, headers.into_iter(), body)
                .map_err(|e| e.to_string())?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| e.to_string())?
            .into_parts();
        instructions.apply_to_request_http1x(request);
        Ok(())
    }
}

/// S3 signs the path exactly as sent.
fn s3_signing_settings() -> SigningSettings {
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings
}

/// A request being put together by [`AdminClient::request`].
#[derive(Debug)]
pub struct S3Request<'a> {
    client: &'a AdminClient,
    method: Method,
    bucket: &'a str,
    key: &'a str,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    body: Payload,
}

impl S3Request<'_> {
    /// A header to send and sign, such as `range` or `if-match`.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// A query parameter, URI-encoded here.
    pub fn query(mut self, name: &str, value: &str) -> Self {
        self.query.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = Payload::Bytes(body.into());
        self
    }

    /// Sends the request and returns the response whatever its status.
    pub async fn send(self) -> Result<S3Response> {
        self.client.execute(self).await
    }

    /// Sends the request and returns the response as soon as its headers are in, with the
    /// body still to be read, for tests that watch a body arrive (or break off).
    pub async fn send_streaming(self) -> Result<http::Response<Incoming>> {
        self.client.execute_streaming(self).await
    }
}

#[derive(Debug)]
enum Payload {
    Bytes(Bytes),
    /// `data::payload(seed, len)`, produced piece by piece as it is sent.
    Generated {
        seed: u64,
        len: u64,
    },
}

impl Payload {
    /// The body, its SHA-256 for `x-amz-content-sha256`, and how long the exchange may take.
    async fn into_parts(self) -> Result<(RequestBody, String, Duration)> {
        match self {
            Payload::Bytes(bytes) => {
                let sha256 = hex::encode(Sha256::digest(&bytes));
                let body = Full::new(bytes).map_err(|never| match never {}).boxed();
                Ok((body, sha256, REQUEST_TIMEOUT))
            }
            Payload::Generated { seed, len } => {
                // A first pass over the generated bytes to hash them; a second one sends them.
                let sha256 = tokio::task::spawn_blocking(move || {
                    let mut hasher = Sha256::new();
                    for (offset, size) in chunks(len) {
                        hasher.update(payload_at(seed, offset, size));
                    }
                    hex::encode(hasher.finalize())
                })
                .await
                .map_err(std::io::Error::other)?;
                let frames = futures::stream::iter(chunks(len)).map(move |(offset, size)| {
                    Ok(Frame::data(Bytes::from(payload_at(seed, offset, size))))
                });
                let body = LengthKnown {
                    inner: StreamBody::new(frames),
                    len,
                }
                .boxed();
                let timeout =
                    REQUEST_TIMEOUT + Duration::from_secs(len / GENERATED_BYTES_PER_SECOND);
                Ok((body, sha256, timeout))
            }
        }
    }
}

fn chunks(len: u64) -> impl Iterator<Item = (u64, usize)> {
    (0..len)
        .step_by(GENERATED_CHUNK)
        .map(move |offset| (offset, (len - offset).min(GENERATED_CHUNK as u64) as usize))
}

/// A body that reports its exact length, so that hyper sends Content-Length, not chunks.
struct LengthKnown<B> {
    inner: B,
    len: u64,
}

impl<B> Body for LengthKnown<B>
where
    B: Body + Unpin,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<std::result::Result<Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.len)
    }
}

/// The text of the first `<name>` element of a small XML answer.
fn xml_value(body: &[u8], name: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let (_, rest) = text.split_once(&format!("<{name}>"))?;
    let (value, _) = rest.split_once(&format!("</{name}>"))?;
    Some(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_length_exactly() {
        let len = 3 * GENERATED_CHUNK as u64 + 5;
        let pieces: Vec<_> = chunks(len).collect();
        assert_eq!(pieces.len(), 4);
        assert_eq!(pieces[3], (3 * GENERATED_CHUNK as u64, 5));
        assert_eq!(chunks(0).count(), 0);
    }
}
