//! `Client::copy` of `Source::Items` (a batch with sizes known up front, as a manifest or Python's
//! `download_many` gives it) and `Client::get_bytes`, against a real server.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::store_config;
use futures::{StreamExt, TryStreamExt};
use parabyte::{
    Client, CopyRequest, Destination, Item, Listed, S3Url, Silent, Source, TransferConfig,
};
use parabyte_testkit::{payload, shared, unique_bucket_name, AdminClient, ServerKind};

const PART: u64 = 1 << 20;

/// A bucket holding `objects`, and a client with 1 MiB parts.
async fn bucket_with(objects: &[(&str, usize)]) -> (Client, String, Vec<(String, Vec<u8>)>) {
    let server = shared(ServerKind::Versitygw);
    let admin = AdminClient::for_server(server);
    let bucket = unique_bucket_name("batch");
    admin.create_bucket(&bucket).await.unwrap();
    let objects: Vec<(String, Vec<u8>)> = objects
        .iter()
        .enumerate()
        .map(|(seed, (key, size))| (key.to_string(), payload(seed as u64 + 40, *size)))
        .collect();
    admin.fill(&bucket, objects.clone()).await.unwrap();
    let transfer = TransferConfig {
        part_size: PART,
        ..TransferConfig::default()
    };
    let client = Client::connect(&store_config(server), transfer)
        .await
        .unwrap();
    (client, bucket, objects)
}

fn url(bucket: &str, key: &str) -> S3Url {
    S3Url {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_sizes_cost_one_get_per_part_and_nothing_else() {
    let (client, bucket, objects) = bucket_with(&[
        ("a/empty", 0),
        ("a/small", 5_000),
        ("a/big", 3 * PART as usize + 7),
    ])
    .await;
    let listed: Vec<Listed> = client
        .list(&url(&bucket, "a/"), true)
        .try_collect()
        .await
        .unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let absolute = elsewhere.path().join("abs/big.bin");
    let items: Vec<Item> = listed
        .into_iter()
        .map(|entry| {
            let Listed::Object(object) = entry else {
                panic!("a recursive listing has no prefixes")
            };
            let destination = match object.key.as_str() {
                "a/big" => Some(absolute.clone()),
                "a/small" => Some(PathBuf::from("nested/small.bin")),
                _ => None,
            };
            Item {
                source: url(&bucket, &object.key).into(),
                destination,
                size: Some(object.size),
                etag: object.etag,
            }
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let summary = client
        .copy(
            &CopyRequest {
                source: Source::Items(items),
                destination: Destination::Path(dir.path().into()),
                recursive: false,
                options: Default::default(),
            },
            Arc::new(Silent),
        )
        .await
        .unwrap();
    assert_eq!((summary.objects, summary.failed), (3, 0), "{summary:?}");
    assert_eq!(
        (
            summary.requests.get,
            summary.requests.list,
            summary.requests.head
        ),
        (1 + 4, 0, 1),
        "empty: none, small: one, big: four parts and one HEAD for its CRC, and no probe"
    );
    let verified = summary.verified;
    assert_eq!(
        (verified.checksum, verified.md5, verified.size_only),
        (2, 0, 1),
        "small: the CRC of a whole-object response; big: the CRC its HEAD brought; empty: \
         nothing to check"
    );
    let read = |path: PathBuf| std::fs::read(path).unwrap();
    assert_eq!(read(dir.path().join("empty")), objects[0].1);
    assert_eq!(read(dir.path().join("nested/small.bin")), objects[1].1);
    assert_eq!(read(absolute), objects[2].1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_items_fail_alone() {
    let (client, bucket, objects) = bucket_with(&[("x/one", 10), ("x/two", 20)]).await;
    let item = |key: &str, destination: Option<&str>| Item {
        source: url(&bucket, key).into(),
        destination: destination.map(PathBuf::from),
        size: None,
        etag: None,
    };
    let items = vec![
        item("x/one", Some("../escape")),
        item("x/one", Some("same")),
        item("x/two", Some("same")),
        item("x/missing", None),
        item("x/two", None),
    ];
    let dir = tempfile::tempdir().unwrap();
    let summary = client
        .copy(
            &CopyRequest {
                source: Source::Items(items),
                destination: Destination::Path(dir.path().into()),
                recursive: false,
                options: Default::default(),
            },
            Arc::new(Silent),
        )
        .await
        .unwrap();
    assert_eq!((summary.objects, summary.failed), (2, 3), "{summary:?}");
    let errors: Vec<String> = summary
        .failures
        .iter()
        .map(|f| f.error.to_string())
        .collect();
    assert!(errors[0].contains("'..'"), "{errors:?}");
    assert!(
        errors[1].contains("same destination as s3://"),
        "{errors:?}"
    );
    assert!(
        summary
            .failures
            .iter()
            .any(|f| f.source.ends_with("x/missing")),
        "{errors:?}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("same")).unwrap(),
        objects[0].1
    );
    assert_eq!(std::fs::read(dir.path().join("two")).unwrap(), objects[1].1);
    assert!(!dir.path().parent().unwrap().join("escape").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_etag_fetches_the_version_that_is_there() {
    let (client, bucket, objects) = bucket_with(&[("v/obj", 2 * PART as usize)]).await;
    let items = vec![Item {
        source: url(&bucket, "v/obj").into(),
        destination: None,
        size: Some(2 * PART),
        etag: Some("\"0123456789abcdef0123456789abcdef\"".into()),
    }];
    let dir = tempfile::tempdir().unwrap();
    let summary = client
        .copy(
            &CopyRequest {
                source: Source::Items(items),
                destination: Destination::Path(dir.path().into()),
                recursive: false,
                options: Default::default(),
            },
            Arc::new(Silent),
        )
        .await
        .unwrap();
    assert_eq!((summary.objects, summary.failed), (1, 0), "{summary:?}");
    assert_eq!(std::fs::read(dir.path().join("obj")).unwrap(), objects[0].1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_bytes_gathers_parallel_ranges_in_memory() {
    let (client, bucket, objects) =
        bucket_with(&[("m/large", 5 * PART as usize + 3), ("m/empty", 0)]).await;
    let bytes = client.get_bytes(url(&bucket, "m/large")).await.unwrap();
    assert!(bytes == objects[0].1, "the bytes differ");
    assert!(client
        .get_bytes(url(&bucket, "m/empty"))
        .await
        .unwrap()
        .is_empty());
    let missing = client.get_bytes(url(&bucket, "m/nothing")).await;
    assert!(
        missing.as_ref().is_err_and(|e| e.is_not_found()),
        "{missing:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_bytes_many_answers_each_object_in_the_order_given() {
    let (client, bucket, objects) =
        bucket_with(&[("g/large", 3 * PART as usize + 9), ("g/small", 700)]).await;
    let item = |key: &str, size: Option<u64>| Item {
        source: url(&bucket, key).into(),
        destination: None,
        size,
        etag: None,
    };
    let fetched: Vec<_> = client
        .get_bytes_many(vec![
            item("g/small", Some(700)),
            item("g/nothing", None),
            item("g/large", None),
        ])
        .collect()
        .await;
    assert_eq!(fetched.len(), 3);
    assert!(fetched[0]
        .as_ref()
        .is_ok_and(|bytes| *bytes == objects[1].1));
    assert!(
        fetched[1].as_ref().is_err_and(|e| e.is_not_found()),
        "{:?}",
        fetched[1]
    );
    assert!(fetched[2]
        .as_ref()
        .is_ok_and(|bytes| *bytes == objects[0].1));
}
