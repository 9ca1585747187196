//! The store conformance suite (`src/source/conformance.rs`) against every real S3 server
//! of the test kit: the in-memory store runs the same cases in the unit tests, so it cannot
//! drift from what these servers do.

mod common;

use common::store_config;
use parabyte::testing::{check_s3_store, fixture_bytes, FIXTURE};
use parabyte_testkit::{shared, unique_bucket_name, AdminClient, ServerKind};

async fn conforms(kind: ServerKind) {
    let server = shared(kind);
    let admin = AdminClient::for_server(server);
    let bucket = unique_bucket_name("conformance");
    admin.create_bucket(&bucket).await.unwrap();
    for (key, size) in FIXTURE {
        let body = fixture_bytes(key, size);
        admin
            .put_object(&bucket, &format!("p/{key}"), body)
            .await
            .unwrap();
    }
    let passed = check_s3_store(&store_config(server), &bucket, "p/")
        .await
        .unwrap_or_else(|failure| panic!("{kind:?}: {failure}"));
    assert_eq!(passed.len(), 12, "{passed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versitygw_conforms() {
    conforms(ServerKind::Versitygw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minio_conforms() {
    conforms(ServerKind::Minio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moto_conforms() {
    conforms(ServerKind::Moto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seaweedfs_conforms() {
    conforms(ServerKind::SeaweedFs).await;
}
