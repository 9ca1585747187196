//! The admin client for sync `#[test]` functions: it owns a small runtime and blocks on it.

use std::future::Future;

use bytes::Bytes;

use crate::admin::AdminClient;
use crate::error::Result;
use crate::server::TestServer;

/// [`AdminClient`] with blocking methods. Must not be used from inside an async runtime.
#[derive(Debug)]
pub struct BlockingAdmin {
    runtime: tokio::runtime::Runtime,
    client: AdminClient,
}

impl BlockingAdmin {
    pub fn new(client: AdminClient) -> BlockingAdmin {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build the blocking admin runtime");
        BlockingAdmin { runtime, client }
    }

    pub fn for_server(server: &TestServer) -> BlockingAdmin {
        BlockingAdmin::new(AdminClient::for_server(server))
    }

    /// The async client underneath, for requests this wrapper has no method for:
    /// `admin.block_on(admin.client().request(Method::GET, b, k).header("range", r).send())`.
    pub fn client(&self) -> &AdminClient {
        &self.client
    }

    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    pub fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.block_on(self.client.create_bucket(bucket))
    }

    pub fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.block_on(self.client.delete_bucket(bucket))
    }

    pub fn put_object(&self, bucket: &str, key: &str, body: impl Into<Bytes>) -> Result<()> {
        self.block_on(self.client.put_object(bucket, key, body))
    }

    pub fn put_generated(&self, bucket: &str, key: &str, seed: u64, len: u64) -> Result<()> {
        self.block_on(self.client.put_generated(bucket, key, seed, len))
    }

    pub fn put_composite_crc32(&self, bucket: &str, key: &str, parts: &[Bytes]) -> Result<()> {
        self.block_on(self.client.put_composite_crc32(bucket, key, parts))
    }

    pub fn put_crc32_parts(
        &self,
        bucket: &str,
        key: &str,
        parts: &[Bytes],
        declare_type: bool,
    ) -> Result<()> {
        self.block_on(
            self.client
                .put_crc32_parts(bucket, key, parts, declare_type),
        )
    }

    pub fn get_object(&self, bucket: &str, key: &str) -> Result<Bytes> {
        self.block_on(self.client.get_object(bucket, key))
    }

    pub fn open_uploads(&self, bucket: &str) -> Result<usize> {
        self.block_on(self.client.open_uploads(bucket))
    }

    pub fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        self.block_on(self.client.delete_object(bucket, key))
    }

    pub fn fill<K, V>(
        &self,
        bucket: &str,
        objects: impl IntoIterator<Item = (K, V)>,
    ) -> Result<usize>
    where
        K: AsRef<str>,
        V: Into<Bytes>,
    {
        self.block_on(self.client.fill(bucket, objects))
    }
}
