//! The library API against both real servers: `Client::copy` with a reporter, and
//! `Client::list`, without the CLI in between.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use common::store_config;
use futures::TryStreamExt;
use parabyte::{
    Client, CopyRequest, Destination, Listed, Location, Reporter, S3Url, Source, TransferConfig,
};
use parabyte_testkit::{payload, shared, unique_bucket_name, AdminClient, ServerKind};

#[derive(Default)]
struct Recorder {
    queued: AtomicU64,
    discovered: AtomicU64,
    bytes: AtomicU64,
    finished: Mutex<Vec<String>>,
}

impl Reporter for Recorder {
    fn object_queued(&self, size: Option<u64>) {
        self.queued.fetch_add(1, Relaxed);
        self.discovered.fetch_add(size.unwrap_or(0), Relaxed);
    }
    fn size_discovered(&self, size: u64) {
        self.discovered.fetch_add(size, Relaxed);
    }
    fn bytes_transferred(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Relaxed);
    }
    fn object_finished(&self, key: &str, outcome: Result<u64, &parabyte::Error>) {
        assert!(outcome.is_ok(), "{key}: {outcome:?}");
        self.finished.lock().unwrap().push(key.to_owned());
    }
}

async fn copy_and_list(kind: ServerKind) {
    let server = shared(kind);
    let admin = AdminClient::for_server(server);
    let bucket = unique_bucket_name("library");
    admin.create_bucket(&bucket).await.unwrap();
    let objects: Vec<(String, Vec<u8>)> = [("set/a", 0), ("set/b/c", 70_000), ("set/d", 3 << 20)]
        .iter()
        .enumerate()
        .map(|(seed, (key, size))| (key.to_string(), payload(seed as u64, *size)))
        .collect();
    admin.fill(&bucket, objects.clone()).await.unwrap();

    let transfer = TransferConfig {
        part_size: 1 << 20,
        ..TransferConfig::default()
    };
    let client = Client::connect(&store_config(server), transfer)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let request = CopyRequest {
        source: Source::Location(Location::S3(S3Url {
            bucket: bucket.clone(),
            key: "set/".into(),
        })),
        destination: Destination::Path(dir.path().to_owned()),
        recursive: false,
        options: Default::default(),
    };
    let summary = client.copy(&request, recorder.clone()).await.unwrap();

    let total: u64 = objects.iter().map(|(_, bytes)| bytes.len() as u64).sum();
    assert_eq!(
        (summary.objects, summary.failed, summary.bytes),
        (3, 0, total)
    );
    assert_eq!(
        summary.requests.get,
        1 + 3,
        "0 B: none, 70 kB: one, 3 MiB: three parts"
    );
    assert_eq!(summary.requests.list, 1);
    assert!(
        summary
            .first_object_started
            .is_some_and(|first| first <= summary.elapsed),
        "{summary:?}"
    );
    for (key, bytes) in &objects {
        assert_eq!(
            std::fs::read(dir.path().join(&key[4..])).unwrap(),
            *bytes,
            "{key}"
        );
    }
    assert_eq!(recorder.queued.load(Relaxed), 3);
    assert_eq!(
        recorder.discovered.load(Relaxed),
        total,
        "listing gives every size up front"
    );
    assert_eq!(recorder.bytes.load(Relaxed), total);
    assert_eq!(recorder.finished.lock().unwrap().len(), 3);

    // One level: objects and the "folder"; recursive: every key, in order.
    let url = S3Url {
        bucket: bucket.clone(),
        key: "set/".into(),
    };
    let level: Vec<Listed> = client.list(&url, false).try_collect().await.unwrap();
    let names: Vec<String> = level
        .iter()
        .map(|entry| match entry {
            Listed::Object(object) => format!("{} {}", object.key, object.size),
            Listed::Prefix(prefix) => format!("{prefix} (prefix)"),
        })
        .collect();
    assert_eq!(
        names,
        vec!["set/a 0", "set/b/ (prefix)", "set/d 3145728"],
        "key order"
    );
    let all: Vec<Listed> = client.list(&url, true).try_collect().await.unwrap();
    assert_eq!(all.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_and_list_versitygw() {
    copy_and_list(ServerKind::Versitygw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_and_list_seaweedfs() {
    copy_and_list(ServerKind::SeaweedFs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_and_list_minio() {
    copy_and_list(ServerKind::Minio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_and_list_moto() {
    copy_and_list(ServerKind::Moto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_is_reused_and_each_summary_counts_its_own_requests() {
    let server = shared(ServerKind::Versitygw);
    let admin = AdminClient::for_server(server);
    let bucket = unique_bucket_name("reuse");
    admin.create_bucket(&bucket).await.unwrap();
    admin
        .put_object(&bucket, "k", payload(5, 10))
        .await
        .unwrap();
    let client = Client::connect(&store_config(server), TransferConfig::default())
        .await
        .unwrap();
    let request = CopyRequest {
        source: Source::Location(Location::S3(S3Url {
            bucket,
            key: "k".into(),
        })),
        destination: Destination::Discard,
        recursive: false,
        options: Default::default(),
    };
    for _ in 0..3 {
        let summary = client
            .copy(&request, Arc::new(parabyte::Silent))
            .await
            .unwrap();
        assert_eq!(
            (summary.objects, summary.bytes, summary.requests.get),
            (1, 10, 1)
        );
    }
}
