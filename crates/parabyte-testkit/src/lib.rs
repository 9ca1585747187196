//! The parabyte test kit: everything tests and benchmarks need to run parabyte against *real*
//! S3-compatible servers on loopback, never against a fake.
//!
//! - [`TestServer`] starts versitygw, SeaweedFS or MinIO (installed by
//!   `scripts/install-test-servers.sh`) on free 127.0.0.1 ports in a temporary directory, and
//!   kills it on drop or when the test process dies; [`shared`] gives one per process.
//!   [`TestServer::start_tls`] and [`shared_tls`] serve HTTPS instead, with a certificate from
//!   a private CA of the server's own: hand [`TestServer::ca_pem_path`] to the client under test
//!   (`--ca-bundle`, `AWS_CA_BUNDLE`); a client without it is refused, as it should be.
//! - [`AdminClient`] (async) and [`BlockingAdmin`] (sync) set up buckets and objects with their
//!   own small signed S3 client, independent of the library under test; `for_server` trusts
//!   the server's CA by itself.
//! - [`CountingProxy`] sits between the client under test and the server and counts requests
//!   by kind and connections, and remembers the Range and If-Match headers it saw. It is also
//!   the fault proxy: [`CountingProxy::inject`] applies a [`Fault`] (an S3 error reply, an
//!   error inside a 200, a body reset, truncated or stalled after N bytes, a rewritten
//!   Content-Range or ETag, a late first byte, a hook that replaces the object) to the
//!   requests a [`Rule`] picks, such as "the 2nd GET of big.bin", and counts how often it fired.
//! - [`WebServer`] runs nginx (Debian's package) on loopback over a directory of files, served
//!   with Range, ETag and Last-Modified, without an ETag, without Range support, or chunked
//!   ([`Serving`]), with optional redirects (to a presigned URL, say).
//! - [`HostileServer`] is a scripted misbehaving S3 endpoint (path-style, no signature check) or
//!   web server: a closure turns each [`Received`] request into a [`Reply`] (any status and
//!   headers, true or lying; [`Reply::object`] serves Range requests; [`Reply::redirect`] to
//!   another instance shows what a redirect target receives). It records every request as it
//!   came on the wire (method, raw target, all headers). [`ListPage`] writes ListObjectsV2
//!   pages, truncated with or without a token, and [`ListPage::generated`] streams a page of
//!   any size without holding it.
//! - [`ListingServer`] lists a [`KeySpace`] (sorted keys in memory, or W4's names generated
//!   from their place) by ListObjectsV2's rules at a cost per page that does not grow with the
//!   bucket, as S3's does not: for listing at millions of keys, where every real server here
//!   would be the limit. Twin buckets over the same keys differ in a chosen share of them
//!   ([`Change`]), and the writes of a `sync` or `rm` are taken and counted ([`Tally`]).
//! - [`payload`] makes deterministic data, so tests regenerate instead of storing it.
//!
//! ```no_run
//! use parabyte_testkit::{
//!     payload, shared, unique_bucket_name, BlockingAdmin, CountingProxy, Fault, HostileServer,
//!     ListPage, Reply, Rule, ServerKind,
//! };
//!
//! let server = shared(ServerKind::Versitygw);
//! let admin = BlockingAdmin::for_server(server);
//! let bucket = unique_bucket_name("example");
//! admin.create_bucket(&bucket).unwrap();
//! admin.fill(&bucket, (0..100).map(|i| (format!("small/{i:05}.bin"), payload(i, 1024)))).unwrap();
//!
//! let proxy = CountingProxy::start(&server.endpoint());
//! let throttled = proxy.inject(Rule::get().first(2), Fault::error(503, "SlowDown"));
//! // ... run the client under test against proxy.endpoint() with server.access_key() ...
//! assert_eq!(throttled.fired(), 2);
//! assert_eq!(proxy.counts().get, 102);
//!
//! // A store whose listing says "more pages" but gives no token to ask for them:
//! let store = HostileServer::start(|request| {
//!     if request.is_listing() {
//!         ListPage::new("p/").object("p/a", 3).truncated(None).reply(request)
//!     } else {
//!         Reply::object(request, b"abc", Some("\"e\""))
//!     }
//! });
//! // ... run the client under test against store.endpoint() ...
//! assert!(store.requests().iter().all(|seen| seen.target.starts_with("/bucket")));
//! ```

mod admin;
mod blocking;
mod data;
mod error;
mod hostile;
mod kind;
mod listing_names;
mod listing_server;
mod names;
mod nginx;
mod process;
mod proxy;
mod refusing_store;
mod serve;
mod server;
mod tls;

pub use admin::{AdminClient, S3Request, S3Response};
pub use blocking::BlockingAdmin;
pub use data::{payload, payload_at};
pub use error::{Error, Result};
pub use hostile::{HostileServer, ListPage, Received, Reply};
pub use kind::ServerKind;
pub use listing_server::{keys_to_delete, operation, Change, KeySpace, ListingServer, Tally};
pub use names::{encode_key, unique_bucket_name};
pub use nginx::{Serving, WebServer};
pub use proxy::{
    AfterStall, CountingProxy, Fault, FaultHandle, ProxyCounts, RequestKind, Rule, SeenRequest,
    MAX_FAULT_PAUSE,
};
pub use refusing_store::{Refusal, RefusingStore};
pub use server::{
    shared, shared_tls, TestServer, ACCESS_KEY, MINIO_KMS_KEY_ID, REGION, SECRET_KEY,
};
