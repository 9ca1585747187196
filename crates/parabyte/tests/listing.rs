//! Parallel listing returns exactly the sequential listing — no key missing, none twice,
//! same order — on many key shapes, against the three real servers; so do the key ranges a
//! job spread over machines cuts a prefix into, listed one after another.

use futures::TryStreamExt;
mod common;

use common::store_config;
use parabyte::{Client, KeyBounds, Listed, S3Url, TransferConfig};
use parabyte_testkit::{shared, unique_bucket_name, AdminClient, ServerKind, TestServer};

/// About 21,000 keys in six shapes, each under its own prefix.
fn shapes() -> Vec<(&'static str, Vec<String>)> {
    // A small deterministic generator: the same "random" names on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let flat = (0..4000).map(|_| format!("flat/{:016x}", next())).collect();
    let deep = (0..4000)
        .map(|i| {
            let r = next();
            format!(
                "deep/{}/{}/{}/leaf-{i}",
                r % 7,
                (r >> 8) % 11,
                (r >> 16) % 5
            )
        })
        .collect();
    let mut huge: Vec<String> = (0..4000)
        .map(|_| format!("tree/b/huge/{:x}.dat", next()))
        .collect();
    huge.extend(["tree/a/one", "tree/b/hugf", "tree/c/two"].map(String::from));
    let sequential = (0..4000).map(|i| format!("seq/{i:06}")).collect();
    let unicode = (0..2000)
        .map(|i| {
            format!(
                "uni/{}-{i}",
                ["ü", "中文", "🎉", "é/ø", "Ω", "a b+c"][i % 6]
            )
        })
        .collect();
    let slashes = (0..500)
        .flat_map(|i| {
            [
                format!("sl/{i}/a"),
                format!("sl/{i}/b"),
                format!("sl/{i}-x"),
                format!("sl/{i}.y"),
            ]
        })
        .collect();
    vec![
        ("flat/", flat),
        ("deep/", deep),
        ("tree/", huge),
        ("seq/", sequential),
        ("uni/", unicode),
        ("sl/", slashes),
    ]
}

async fn client(server: &TestServer, parallelism: usize, page_size: usize) -> Client {
    let store = store_config(server);
    let transfer = TransferConfig {
        list_parallelism: parallelism,
        list_page_size: page_size,
        ..TransferConfig::default()
    };
    Client::connect(&store, transfer).await.unwrap()
}

async fn keys(client: &Client, bucket: &str, prefix: &str) -> Vec<String> {
    let url = S3Url {
        bucket: bucket.to_owned(),
        key: prefix.to_owned(),
    };
    let entries: Vec<Listed> = client.list(&url, true).try_collect().await.unwrap();
    entries
        .into_iter()
        .map(|entry| match entry {
            Listed::Object(object) => object.key,
            Listed::Prefix(prefix) => panic!("recursive listings have no prefixes: {prefix}"),
        })
        .collect()
}

/// The prefix cut into up to `parts` key ranges (as a job spread over machines cuts it),
/// each listed on its own, concatenated; every range held keys when it was found.
async fn keys_in_ranges(client: &Client, bucket: &str, prefix: &str, parts: usize) -> Vec<String> {
    let url = S3Url {
        bucket: bucket.to_owned(),
        key: prefix.to_owned(),
    };
    // SeaweedFS answers a guessed start-after by skipping whole "directories", so a guess
    // may find nothing and a shape may stay one range there: fewer ranges, never wrong ones.
    let boundaries = client.split_key_space(&url, parts).await.unwrap();
    assert!(boundaries.len() < parts, "{prefix}: {boundaries:?}");
    let lows = std::iter::once(None).chain(boundaries.iter().cloned().map(Some));
    let highs = boundaries
        .iter()
        .cloned()
        .map(Some)
        .chain(std::iter::once(None));
    let mut all = Vec::new();
    for (after, until_after) in lows.zip(highs) {
        let bounds = KeyBounds { after, until_after };
        let entries: Vec<Listed> = client
            .list_range(&url, bounds.clone())
            .try_collect()
            .await
            .unwrap();
        assert!(!entries.is_empty(), "{prefix}: {bounds:?} is empty");
        all.extend(entries.into_iter().map(|entry| match entry {
            Listed::Object(object) => object.key,
            Listed::Prefix(prefix) => panic!("recursive listings have no prefixes: {prefix}"),
        }));
    }
    all
}

async fn parallel_equals_sequential(kind: ServerKind) {
    let server = shared(kind);
    let admin = AdminClient::for_server(server);
    let bucket = unique_bucket_name("listing");
    admin.create_bucket(&bucket).await.unwrap();
    let shapes = shapes();
    let all: Vec<String> = shapes
        .iter()
        .flat_map(|(_, keys)| keys.iter().cloned())
        .collect();
    admin
        .fill(&bucket, all.iter().map(|key| (key.clone(), b"x".to_vec())))
        .await
        .unwrap();

    // Small pages make every shape span many pages, so ranges really are split.
    let sequential = client(server, 1, 100).await;
    let parallel = client(server, 8, 100).await;
    let default = client(server, 16, 1000).await;
    for (prefix, written) in &shapes {
        let one_by_one = keys(&sequential, &bucket, prefix).await;
        assert_same_keys(
            &one_by_one,
            written,
            &format!("{kind}: sequential listing of {prefix}"),
        );
        let in_parallel = keys(&parallel, &bucket, prefix).await;
        assert_eq!(
            in_parallel.len(),
            one_by_one.len(),
            "{kind}: parallel listing of {prefix}"
        );
        assert!(
            in_parallel == one_by_one,
            "{kind}: parallel listing of {prefix} differs from the sequential one"
        );
        let in_ranges = keys_in_ranges(&parallel, &bucket, prefix, 6).await;
        assert!(
            in_ranges == one_by_one,
            "{kind}: the key ranges of {prefix}, one after another, differ from the sequential listing"
        );
    }
    let one_by_one = keys(&sequential, &bucket, "").await;
    assert_same_keys(&one_by_one, &all, &format!("{kind}: whole bucket"));
    assert!(
        keys(&parallel, &bucket, "").await == one_by_one,
        "{kind}: whole bucket, parallel"
    );
    assert!(
        keys(&default, &bucket, "").await == one_by_one,
        "{kind}: whole bucket, defaults"
    );
}

/// Every written key exactly once (the order is the store's: SeaweedFS lists "directories"
/// before names that sort below '/', unlike S3).
fn assert_same_keys(listed: &[String], written: &[String], what: &str) {
    let mut listed = listed.to_vec();
    let mut written = written.to_vec();
    listed.sort();
    written.sort();
    assert_eq!(listed.len(), written.len(), "{what}: count");
    assert!(listed == written, "{what}: keys differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_equals_sequential_versitygw() {
    parallel_equals_sequential(ServerKind::Versitygw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_equals_sequential_seaweedfs() {
    parallel_equals_sequential(ServerKind::SeaweedFs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_equals_sequential_minio() {
    parallel_equals_sequential(ServerKind::Minio).await;
}
